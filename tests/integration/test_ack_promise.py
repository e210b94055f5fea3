"""The ACK a card shoe receives is a promise: the card is in the journal. Here, in process on a real
journal file: a journal whose disk is full (SQLite fails with SQLITE_FULL) fail-stops the service without
ACKing the card it could not journal, and the failure is reported as a full disk.

Its integration tests; the unit ones are in `tests/unit/core/test_ack_promise.py`, the e2e ones in
`tests/e2e/test_ack_promise.py`."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from controller.events import CardDealt
from controller.journal import Journal
from controller.runtime import make_event
from controller.service import ServiceFailure, TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until
from controller.testing.table_process import (
    BASE,
    TABLE,
    draw,
    events,
    wait_event,
)
from drivers.line.fields import seq_text
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers import ack_promise as shared
from tests.helpers.ack_promise import acked_cards, journal_rows

pytestmark = pytest.mark.integration
shoe = shared.shoe  # a fixture (tests/helpers/ack_promise.py)


def fill_database(db: sqlite3.Connection) -> None:
    """The database file may not grow any more, and what free space it had is used: SQLITE_FULL from now."""
    db.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")
    for size in (4096, 512, 64, 8):
        with pytest.raises(sqlite3.OperationalError, match="full"):
            for _ in range(100_000):
                db.execute("INSERT INTO filler VALUES (randomblob(?))", (size,))


async def test_a_full_disk_fail_stops_without_acknowledging_the_card_it_could_not_journal(
    tmp_path: Path, mosquitto: MosquittoBroker, shoe: ShoeSimulator
) -> None:
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": "s1", "table_id": TABLE, "game": "baccarat", "data_dir": str(tmp_path)},
            "broker": {"url": mosquitto.url},
            "devices": {"shoe": {"protocol": "shoe-line", "port": str(tmp_path / "shoe.pty")}},
            "game": {"betting_seconds": 0.5, "round_gap_seconds": 0.2},
        },
        environ={},
    )
    service = TableService(config)
    async with MqttRecorder(mosquitto, [f"{BASE}/#"], client_id="full-watch") as watch:
        running = asyncio.create_task(service.run())
        await wait_event(watch, "round.betting_closed")
        await draw(shoe, watch, 1)
        assert len(acked_cards(shoe)) == 1
        fill_database(service.journal._db)
        # The card that needs a page more is refused by SQLite: a few cards at most (each is a ~1 kB row, the
        # last one's step adds the result), and only cards write to the journal while the round is dealt.
        for _ in range(3):
            await wait_until(
                lambda: shoe.draw() or running.done(), timeout=10, what="the gate open for the next card"
            )
            await wait_until(
                lambda: shoe.device.awaiting_ack is None or running.done(), timeout=10, what="ACK or stop"
            )
            if running.done():
                break
        with pytest.raises(ServiceFailure, match=r"cannot write the journal.*full"):
            await asyncio.wait_for(running, 15)
        waiting = shoe.device.awaiting_ack
        assert waiting is not None, "the card that could not be journaled was acknowledged"
        acked = acked_cards(shoe)
        assert f"CARD {seq_text(waiting)} " not in "\n".join(acked)
        await asyncio.sleep(1.0)  # the shoe keeps repeating it; nobody answers any more
        assert acked_cards(shoe) == acked
        assert shoe.device.awaiting_ack == waiting

    journaled = [e["data"]["raw"] for e in journal_rows(service.journal_path, "card.dealt")]
    assert journaled == acked
    assert [
        e["data"]["raw"] for e in events(watch, "card.dealt")
    ] == journaled  # nothing unjournaled published


def test_a_full_disk_is_reported_as_such_even_when_sqlite_rolled_the_transaction_back_itself(
    tmp_path: Path,
) -> None:
    """SQLITE_FULL can end the transaction by itself; the journal's own ROLLBACK must not then replace the
    reason (the operator reads "database or disk is full", not "cannot rollback")."""
    journal = Journal(tmp_path / "journal.sqlite3", "s1/t1")
    dealt = CardDealt(
        round_id="r1", card="9S", position="player", index=0, rescan=False, raw="CARD 0001 9S*7F"
    )
    for _ in range(30):
        journal.append([make_event("card.dealt", dealt, 0.0)], snapshot=b"x" * 3000)
    pages = journal._db.execute("PRAGMA page_count").fetchone()[0]
    journal._db.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        for _ in range(20):
            journal.append([make_event("card.dealt", dealt, 0.0)], snapshot=b"y" * 3001)
    assert journal.last_sequence == 30
    assert len(journal.read(1)) == 30
    journal.close()
