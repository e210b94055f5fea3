"""The journal: gap-free sequences across restarts, stable ids, outbox semantics, atomic snapshot, WAL."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller import journal as journal_module
from controller.events import (
    CardDealt,
    Envelope,
    Event,
    RoundOpened,
    RoundPaused,
    format_sequence,
    iso_ms,
    make_event,
)
from controller.journal import CommandReply, Journal, JournalError

pytestmark = pytest.mark.integration

SOURCE = "studio/s1/table/t1"


class FakeClock:
    def __init__(self, start: float = 1_700_000_100.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def opened(n: int, time: float = 1_700_000_000.0) -> Event:
    data = RoundOpened(game="baccarat", round_id=f"r{n}", round_number_in_shoe=n, betting_closes_at=None)
    return make_event("round.opened", data, time=time)


def dealt(card: str) -> Event:
    data = CardDealt(round_id="r1", card=card, position="player", index=0, rescan=False, raw=f"CARD 1 {card}")
    return make_event("card.dealt", data, time=1_700_000_000.123456)


def sequences(envelopes: list[Envelope]) -> list[int]:
    return [int(e.sequence) for e in envelopes]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal.sqlite"


@pytest.fixture
def journal(path: Path) -> Iterator[Journal]:
    journal = Journal(path, SOURCE, clock=FakeClock())
    yield journal
    journal.close()


def test_append_builds_the_envelope_the_contract_names(path: Path) -> None:
    clock = FakeClock(1_700_000_100.5)
    journal = Journal(path, SOURCE, clock=clock)
    (envelope,) = journal.append([dealt("TD")])
    assert envelope.specversion == "1.0"
    assert envelope.source == SOURCE
    assert envelope.type == "card.dealt"
    assert envelope.time == "2023-11-14T22:13:20.123Z"  # the device's time, ms
    assert envelope.recordedtime == iso_ms(1_700_000_100.5) == "2023-11-14T22:15:00.500Z"
    assert envelope.sequence == format_sequence(1) == "000000000001"
    assert envelope.subject == "r1"
    assert envelope.historical is False
    expected = {
        "round_id": "r1",
        "card": "TD",
        "position": "player",
        "index": 0,
        "rescan": False,
        "manual": False,
    }
    assert envelope.data == {**expected, "raw": "CARD 1 TD"}
    assert len(envelope.id) == 32 and int(envelope.id, 16) >= 0
    journal.close()


def test_sequences_are_gap_free_and_continue_after_reopening(path: Path) -> None:
    first = Journal(path, SOURCE)
    assert first.last_sequence == 0
    batch_a = first.append([opened(1), opened(2), opened(3)])
    batch_b = first.append([opened(4)])
    assert first.append([]) == []  # an empty batch takes no number
    assert sequences(batch_a + batch_b) == [1, 2, 3, 4]
    first.close()

    second = Journal(path, SOURCE)
    assert second.last_sequence == 4
    assert sequences(second.append([opened(5), opened(6)])) == [5, 6]
    assert sequences(second.read(1)) == [1, 2, 3, 4, 5, 6]
    second.close()


def test_ids_are_unique_and_stable_across_reopening(path: Path) -> None:
    journal = Journal(path, SOURCE)
    written = journal.append([opened(n) for n in range(1, 51)])
    journal.close()
    assert len({e.id for e in written}) == 50

    reopened = Journal(path, SOURCE)
    stored = reopened.read(1)
    # Byte-identical envelopes: a re-send after a restart carries the same id and content.
    assert [e.model_dump_json() for e in stored] == [e.model_dump_json() for e in written]
    assert [e.model_dump_json() for e in reopened.outbox(limit=1000)] == [
        e.model_dump_json() for e in written
    ]
    reopened.close()


def test_boot_counts_every_opening(path: Path) -> None:
    boots = []
    for _ in range(3):
        journal = Journal(path, SOURCE)
        boots.append(journal.boot)
        journal.close()
    assert boots == [1, 2, 3]


def test_outbox_keeps_events_until_acknowledged(path: Path) -> None:
    journal = Journal(path, SOURCE)
    journal.append([opened(n) for n in range(1, 6)])
    assert sequences(journal.outbox()) == [1, 2, 3, 4, 5]
    assert sequences(journal.outbox(limit=2)) == [1, 2]
    journal.acknowledge(1)
    journal.acknowledge(3)
    journal.acknowledge(3)  # a duplicate PUBACK changes nothing
    assert sequences(journal.outbox()) == [2, 4, 5]
    journal.close()

    # Unacknowledged events survive a restart; acknowledged ones stay in the journal for replay.
    reopened = Journal(path, SOURCE)
    assert sequences(reopened.outbox()) == [2, 4, 5]
    assert sequences(reopened.read(1)) == [1, 2, 3, 4, 5]
    reopened.close()


def test_read_takes_an_inclusive_range_and_a_limit(journal: Journal) -> None:
    journal.append([opened(n) for n in range(1, 11)])
    assert sequences(journal.read(3, 5)) == [3, 4, 5]
    assert sequences(journal.read(8)) == [8, 9, 10]
    assert sequences(journal.read(2, limit=3)) == [2, 3, 4]
    assert journal.read(11) == []
    assert journal.read(5, 4) == []


def test_snapshot_is_the_latest_and_committed_with_its_events(path: Path) -> None:
    journal = Journal(path, SOURCE)
    assert journal.snapshot() is None
    journal.append([opened(1)], snapshot=b'{"phase":"betting"}')
    journal.append([opened(2)])  # no snapshot: the previous one stays
    assert journal.snapshot() == b'{"phase":"betting"}'
    journal.append([opened(3)], snapshot=b'{"phase":"dealing"}')
    assert journal.snapshot() == b'{"phase":"dealing"}'

    # A batch that fails part-way (here: an unstorable snapshot) leaves nothing behind, and takes no number.
    with pytest.raises(sqlite3.Error):
        journal.append([opened(4), opened(5)], snapshot=object())  # type: ignore[arg-type]
    assert journal.last_sequence == 3
    assert sequences(journal.read(1)) == [1, 2, 3]
    assert sequences(journal.outbox()) == [1, 2, 3]
    assert journal.snapshot() == b'{"phase":"dealing"}'
    assert sequences(journal.append([opened(4)])) == [4]
    journal.close()

    reopened = Journal(path, SOURCE)
    assert reopened.snapshot() == b'{"phase":"dealing"}'
    assert reopened.last_sequence == 4
    reopened.close()


def test_snapshot_can_be_stored_without_events(journal: Journal) -> None:
    assert journal.append([], snapshot=b"state") == []
    assert journal.snapshot() == b"state"
    assert journal.last_sequence == 0


def test_a_command_reply_is_kept_with_its_events_and_survives_reopening(path: Path) -> None:
    journal = Journal(path, SOURCE)
    first = CommandReply("desk-2", "m1", "manual_card", {"status": "ok", "data": {"card": "QS"}})
    journal.append([dealt("QS")], reply=first)
    assert journal.command_reply("desk-2", "m1") == first
    assert journal.command_reply("desk-1", "m1") is None  # per sender
    assert journal.command_reply("desk-2", "m2") is None

    # All or nothing: a batch that fails takes its reply with it, so the command may be applied again.
    second = CommandReply("desk-2", "m2", "manual_card", {"status": "ok", "data": {}})
    with pytest.raises(sqlite3.Error):
        journal.append([dealt("KD")], snapshot=object(), reply=second)  # type: ignore[arg-type]
    assert journal.command_reply("desk-2", "m2") is None

    # The reply as finally sent replaces the one journaled with the events.
    journal.record_reply(CommandReply("desk-2", "m1", "manual_card", {"status": "error", "error": "jammed"}))
    journal.close()
    reopened = Journal(path, SOURCE)
    kept = reopened.command_reply("desk-2", "m1")
    assert kept is not None and kept.reply == {"status": "error", "error": "jammed"}
    reopened.close()


def test_transactions_keep_their_json_type(journal: Journal) -> None:
    journal.record_reply(CommandReply("desk-2", 5, "pause", {"status": "ok", "data": {"n": 5}}))
    journal.record_reply(CommandReply("desk-2", "5", "resume", {"status": "ok", "data": {"n": "5"}}))
    number, text = journal.command_reply("desk-2", 5), journal.command_reply("desk-2", "5")
    assert number is not None and number.name == "pause" and number.transaction == 5
    assert text is not None and text.name == "resume" and text.transaction == "5"


def test_a_command_reply_counts_for_a_day(path: Path) -> None:
    clock = FakeClock()
    journal = Journal(path, SOURCE, clock=clock)
    journal.record_reply(CommandReply("desk-2", 1, "pause", {"status": "ok", "data": {}}))
    clock.now += 24 * 3600
    assert journal.command_reply("desk-2", 1) is not None
    clock.now += 1
    assert journal.command_reply("desk-2", 1) is None  # a sender whose counter restarted is not answered
    journal.close()


def test_only_the_latest_command_replies_are_kept(journal: Journal, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journal_module, "KEEP_COMMAND_REPLIES", 3)
    for n in range(5):
        journal.record_reply(CommandReply("desk-2", n, "pause", {"status": "ok", "data": {}}))
    assert [journal.command_reply("desk-2", n) is not None for n in range(5)] == [
        False,
        False,
        True,
        True,
        True,
    ]


def test_the_file_is_in_wal_mode_with_full_sync(path: Path, journal: Journal) -> None:
    journal.append([opened(1)])
    with sqlite3.connect(path) as other:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert Path(f"{path}-wal").exists()
    # synchronous is per connection: ask the journal's own (FULL = 2).
    assert journal._db.execute("PRAGMA synchronous").fetchone()[0] == 2


def test_a_journal_file_belongs_to_one_table(path: Path) -> None:
    Journal(path, SOURCE).close()
    with pytest.raises(JournalError, match="belongs to 'studio/s1/table/t1'"):
        Journal(path, "studio/s1/table/t2")
    # The refused opening did not count as a boot.
    journal = Journal(path, SOURCE)
    assert journal.boot == 2
    journal.close()


def test_in_memory_journal_for_replays() -> None:
    journal = Journal(":memory:", SOURCE)
    assert journal.boot == 1
    paused = RoundPaused(round_id=None, reason="shoe offline", device="shoe", by="device", cause="device")
    (envelope,) = journal.append([make_event("round.paused", paused, time=1_700_000_000.0)])
    assert envelope.subject is None
    assert sequences(journal.outbox()) == [1]
    journal.close()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 4), st.booleans(), st.integers(0, 3)),
        min_size=1,
        max_size=8,
    )
)
def test_any_mix_of_batches_restarts_and_acks_keeps_the_contract(steps: list[tuple[int, bool, int]]) -> None:
    """(batch size, reopen afterwards, how many of the oldest unacknowledged to acknowledge)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "journal.sqlite"
        journal = Journal(path, SOURCE)
        expected_unacked: list[int] = []
        total = 0
        opens = 1
        for size, reopen, acks in steps:
            written = journal.append([opened(total + i + 1) for i in range(size)])
            assert sequences(written) == list(range(total + 1, total + size + 1))
            total += size
            expected_unacked += sequences(written)
            for sequence in expected_unacked[:acks]:
                journal.acknowledge(sequence)
            expected_unacked = expected_unacked[acks:]
            if reopen:
                journal.close()
                journal = Journal(path, SOURCE)
                opens += 1
            assert journal.last_sequence == total
            assert sequences(journal.outbox(limit=1000)) == expected_unacked
        stored = journal.read(1)
        assert sequences(stored) == list(range(1, total + 1))
        assert [e.data["round_id"] for e in stored] == [f"r{n}" for n in range(1, total + 1)]
        assert len({e.id for e in stored}) == total
        assert journal.boot == opens
        journal.close()


def test_delivered_messages_are_kept_per_device_in_the_state_row(path: Path) -> None:
    journal = Journal(path, SOURCE)
    journal.append([dealt("As")], b"s1", delivered=("shoe", "CARD 1 As*00"))
    journal.append([], b"s2", delivered=("shuffler", "DONE 7*00"))
    journal.append([dealt("Kd")], b"s3", delivered=("shoe", "CARD 2 Kd*00\nCARD 3 2c*00"))
    journal.append([dealt("Qh")], b"s4")  # a step without a device message keeps what was delivered
    journal.close()
    reopened = Journal(path, SOURCE)
    assert reopened.delivered("shoe") == ["CARD 2 Kd*00", "CARD 3 2c*00"]
    assert reopened.delivered("shuffler") == ["DONE 7*00"]
    assert reopened.delivered("wheel") == []
    # no `meta` row per step: the state's row holds them
    keys = [row[0] for row in reopened._db.execute("SELECT key FROM meta")]
    assert not [key for key in keys if key.startswith("delivered:") or key == "last_sequence"]
    reopened.close()


def test_delivered_messages_without_a_state_row(path: Path) -> None:
    journal = Journal(path, SOURCE)
    journal.append([dealt("As")], delivered=("shoe", "CARD 1 As*00"))
    assert journal.delivered("shoe") == ["CARD 1 As*00"]
    journal.close()
    reopened = Journal(path, SOURCE)
    assert reopened.delivered("shoe") == ["CARD 1 As*00"]
    reopened.append([dealt("Kd")], b"state", delivered=("shuffler", "DONE 1*00"))
    reopened.append([], None, delivered=("shuffler", "DONE 2*00"))
    reopened.close()
    again = Journal(path, SOURCE)
    assert again.delivered("shoe") == ["CARD 1 As*00"]
    assert again.delivered("shuffler") == ["DONE 2*00"]
    again.close()


_SCHEMA_BEFORE_2026_12 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (sequence INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, type TEXT NOT NULL,
                     envelope TEXT NOT NULL);
CREATE TABLE outbox (sequence INTEGER PRIMARY KEY REFERENCES events(sequence));
CREATE TABLE snapshot (slot INTEGER PRIMARY KEY CHECK (slot = 1), sequence INTEGER NOT NULL,
                       data BLOB NOT NULL);
"""


def test_a_file_written_before_the_state_row_held_the_deliveries_goes_on(path: Path) -> None:
    """Files of before 2026-12 kept `last_sequence` and `delivered:<device>` in `meta` and an index on the
    event ids: they open with their sequence, deliveries and state, and go on."""
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA_BEFORE_2026_12)
    envelope = Envelope(
        id="a" * 32,
        source=SOURCE,
        type="card.dealt",
        time=iso_ms(1_700_000_000.0),
        recordedtime=iso_ms(1_700_000_000.0),
        sequence=format_sequence(7),
        subject="r1",
        historical=False,
        data=dealt("As").data,
    )
    db.execute("INSERT INTO events VALUES (7, ?, 'card.dealt', ?)", (envelope.id, envelope.model_dump_json()))
    db.execute("INSERT INTO outbox VALUES (7)")
    db.execute("INSERT INTO snapshot VALUES (1, 7, ?)", (b"old state",))
    db.executemany(
        "INSERT INTO meta VALUES (?, ?)",
        [("source", SOURCE), ("boot", "3"), ("last_sequence", "9"), ("pruned_through", "6"),
         ("delivered:shoe", "CARD 5 As*00")],
    )  # fmt: skip
    db.commit()
    db.close()
    journal = Journal(path, SOURCE)
    assert (journal.boot, journal.last_sequence, journal.snapshot()) == (4, 9, b"old state")
    assert journal.delivered("shoe") == ["CARD 5 As*00"]
    assert sequences(journal.outbox()) == [7]
    written = journal.append([dealt("Kd")], b"new state", delivered=("shuffler", "DONE 1*00"))
    assert sequences(written) == [10]
    journal.close()
    reopened = Journal(path, SOURCE)
    assert reopened.last_sequence == 10
    assert reopened.delivered("shoe") == ["CARD 5 As*00"]
    assert reopened.delivered("shuffler") == ["DONE 1*00"]
    assert sequences(reopened.outbox()) == [7, 10]
    reopened.close()


def test_the_outbox_of_a_file_written_before_the_cursor_keeps_its_events_and_order(path: Path) -> None:
    """A file of before 2026-12 listed its waiting events (here 2, 4 and 5 of 5: 3 was acknowledged out of
    order): it gets a cursor at its opening, and the same events wait; `read_outbox` reads both kinds."""
    db = sqlite3.connect(path)
    db.executescript(_SCHEMA_BEFORE_2026_12)
    db.executemany("INSERT INTO meta VALUES (?, ?)", [("source", SOURCE), ("last_sequence", "5")])
    for n in range(1, 6):
        envelope = json.dumps({"recordedtime": "2026-12-01T00:00:00.000Z", "n": n})
        db.execute("INSERT INTO events VALUES (?, ?, 'round.opened', ?)", (n, f"id{n}", envelope))
    db.executemany("INSERT INTO outbox VALUES (?)", [(2,), (4,), (5,)])
    db.commit()
    assert journal_module.read_outbox(db) == (5, 1, frozenset({3}))
    db.close()
    journal = Journal(path, SOURCE)
    assert [p.sequence for p in journal.pending(0, 10)] == [2, 4, 5]
    assert journal.outbox_size() == 3
    journal.acknowledge(2)
    assert [p.sequence for p in journal.pending(0, 10)] == [4, 5]
    assert journal.outbox_summary()[0] == 2
    journal.close()
    db = sqlite3.connect(path)
    assert journal_module.read_outbox(db) == (5, 3, frozenset())
    db.close()
    reopened = Journal(path, SOURCE)
    assert [p.sequence for p in reopened.pending(0, 10)] == [4, 5]
    reopened.acknowledge(5)
    assert [p.sequence for p in reopened.pending(0, 10)] == [4]
    reopened.close()
    again = Journal(path, SOURCE)
    assert [p.sequence for p in again.pending(0, 10)] == [4]
    again.acknowledge(4)
    assert again.outbox_size() == 0 and again.pending(0, 10) == []
    again.close()
