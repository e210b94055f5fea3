"""Retention: old events leave the journal (archived first, never one still in the outbox, the sequence never
going back), captures rotate and are compressed yet still replay file by file, and a low disk shows in the
retained status on a real broker.

Its integration tests; the unit ones are in `tests/unit/core/test_retention.py`."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from controller.events import Event, RoundOpened, make_event
from controller.journal import Journal, JournalError
from controller.retention import (
    ARCHIVE_DIR,
    Housekeeping,
    archive_path,
    prune_events,
    read_archive,
    write_archive,
)
from controller.schema import StatusMessage
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until
from controller.testing.table_process import running_service
from drivers.capture import CaptureWriter, rotated_captures
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers.retention import DAY, base_config, capture_meta, settings

pytestmark = pytest.mark.integration

SOURCE = "studio/s1/table/t1"
T0 = 1_790_000_000.0  # 2026-09-21T...Z


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def opened(n: int) -> Event:
    data = RoundOpened(
        game="baccarat", round_id=f"t1-{n:07d}", round_number_in_shoe=n, betting_closes_at=None
    )
    return make_event("round.opened", data, time=T0)


def stored(journal: Journal) -> list[dict[str, Any]]:
    """Every event the journal holds, as the JSON that is published."""
    return [json.loads(envelope.model_dump_json()) for envelope in journal.read(1)]


# --- events -------------------------------------------------------------------------------------------------


async def test_old_acknowledged_events_are_archived_then_deleted_never_one_in_the_outbox(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t1-journal.sqlite3"
    clock = FakeClock(T0)
    journal = Journal(path, SOURCE, clock=clock)
    journal.append([opened(n) for n in range(1, 5)])  # 1-4 on day one
    clock.now += DAY
    journal.append([opened(n) for n in range(5, 11)])  # 5-10 on day two
    for sequence in (1, 2, 3, 4, 6, 7, 8, 9, 10):  # 5 is still waiting for the broker
        journal.acknowledge(sequence)
    before = stored(journal)
    clock.now += 40 * DAY
    journal.append([opened(11)])  # recent: stays
    journal.acknowledge(11)

    keep = settings(event_days=30, prune_batch=3)
    assert await prune_events(journal, path, keep, clock) == 4
    assert journal.pruned_through == 4
    assert [int(e.sequence) for e in journal.read(1)] == list(range(5, 12))
    day_one = archive_path(path, before[0]["recordedtime"][:10].replace("-", ""))
    assert day_one.parent == tmp_path / ARCHIVE_DIR
    assert read_archive(day_one) == before[:4]  # what left the journal is exactly what the archive holds

    journal.acknowledge(5)  # the broker took it: now it may go, and everything old after it
    assert await prune_events(journal, path, keep, clock) == 6
    assert [int(e.sequence) for e in journal.read(1)] == [11]
    day_two = archive_path(path, before[4]["recordedtime"][:10].replace("-", ""))
    assert read_archive(day_two) == before[4:]
    assert sorted(p.name for p in (tmp_path / ARCHIVE_DIR).iterdir()) == sorted([day_one.name, day_two.name])
    assert await prune_events(journal, path, keep, clock) == 0
    # the latest round.opened is still known (round numbering after --discard-state), from meta
    latest = journal.last_event("round.opened")
    assert latest is not None and latest.sequence == "000000000011"
    journal.close()

    # after a restart the sequence continues where it was, and the pruned range is still known
    again = Journal(path, SOURCE, clock=clock)
    assert (again.last_sequence, again.pruned_through) == (11, 10)
    (envelope,) = again.append([opened(12)])
    assert envelope.sequence == "000000000012"
    journal_rows = again.read(1)
    assert [int(e.sequence) for e in journal_rows] == [11, 12]
    again.close()


async def test_everything_acknowledged_pruned_then_the_sequence_still_continues(tmp_path: Path) -> None:
    path = tmp_path / "t1-journal.sqlite3"
    clock = FakeClock(T0)
    journal = Journal(path, SOURCE, clock=clock)
    for envelope in journal.append([opened(n) for n in range(1, 8)]):
        journal.acknowledge(int(envelope.sequence))
    clock.now += 31 * DAY
    assert await prune_events(journal, path, settings(event_archive="drop", prune_batch=2), clock) == 7
    assert journal.read(1) == [] and not (tmp_path / ARCHIVE_DIR).exists()  # dropped: no archive
    journal.close()
    again = Journal(path, SOURCE, clock=clock)
    assert again.append([opened(8)])[0].sequence == "000000000008"  # not 1: the counter is in meta
    again.close()


def test_prune_refuses_to_delete_an_event_still_in_the_outbox(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3", SOURCE)
    journal.append([opened(1), opened(2)])
    journal.acknowledge(1)
    with pytest.raises(JournalError, match="event 2 is still in the outbox"):
        journal.prune_through(2)
    assert len(journal.read(1)) == 2 and journal.pruned_through == 0
    assert journal.prune_through(1) == 1
    assert journal.outbox()[0].sequence == "000000000002"
    journal.close()


async def test_an_archive_interrupted_before_the_delete_is_not_written_twice(tmp_path: Path) -> None:
    path = tmp_path / "t1-journal.sqlite3"
    clock = FakeClock(T0)
    journal = Journal(path, SOURCE, clock=clock)
    for envelope in journal.append([opened(n) for n in range(1, 6)]):
        journal.acknowledge(int(envelope.sequence))
    before = stored(journal)
    clock.now += 31 * DAY
    # a crash after the archive was renamed into place, before the rows were deleted
    write_archive(path, journal.prunable("9999", 3))
    assert await prune_events(journal, path, settings(), clock) == 5
    (archive,) = (tmp_path / ARCHIVE_DIR).iterdir()
    assert read_archive(archive) == before
    with gzip.open(archive, "rt") as text:  # two gzip members, one JSON envelope per line
        assert len(text.read().splitlines()) == 5
    assert [p.name for p in archive.parent.iterdir() if p.name.startswith(".")] == []  # no temporary left
    journal.close()


# --- the replay of a pruned range, on a real broker --------------------------------------------------------


async def test_replay_events_of_an_archived_range_says_so(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    from controller.bus import TableBus
    from controller.config import BrokerSettings

    clock = FakeClock(T0)
    path = tmp_path / "j.sqlite3"
    journal = Journal(path, SOURCE, clock=clock)
    for envelope in journal.append([opened(n) for n in range(1, 6)]):
        journal.acknowledge(int(envelope.sequence))
    clock.now += 31 * DAY
    journal.append([opened(6)])
    await prune_events(journal, path, settings(), clock)

    async def handler(command: object) -> dict[str, Any]:
        return {}

    bus = TableBus(BrokerSettings(url=mosquitto.url), root=SOURCE, journal=journal, handle_command=handler)
    task = asyncio.create_task(bus.run())
    try:
        async with MqttRecorder(mosquitto, [f"{SOURCE}/replies/#", f"{SOURCE}/events/#"]) as desk:
            await wait_until(lambda: bus.connected)
            await desk.wait_for_count(f"{SOURCE}/events/#", 1)  # the one recent event
            desk.publish(f"{SOURCE}/commands/replay_events/sup", {"transaction": "old", "from_sequence": 2})
            desk.publish(f"{SOURCE}/commands/replay_events/sup", {"transaction": "new", "from_sequence": 6})
            old, new = await desk.wait_for_count(f"{SOURCE}/replies/#", 2)
    finally:
        await asyncio.wait_for(bus.close(), 10)
        await asyncio.wait_for(task, 10)
        journal.close()
    assert old.json() == {
        "transaction": "old",
        "status": "error",
        "error": "events up to 5 were archived and are no longer in the journal; replay from 6",
    }
    assert new.json()["data"] == {"count": 1}


# --- the service: a low disk in the retained status, on a real broker --------------------------------------


async def test_a_low_disk_shows_in_the_retained_status(mosquitto: MosquittoBroker, tmp_path: Path) -> None:
    shoe = ShoeSimulator(cards=["9S", "8D"] * 8, cut_position=None)
    port = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    raw = base_config(tmp_path, disk_low_bytes=2**62, disk_check_seconds=1)  # no disk has that much free
    raw["broker"] = {"url": mosquitto.url, "reconnect_min_seconds": 0.05, "reconnect_max_seconds": 0.2}
    raw["devices"]["shoe"] |= {"port": port, "capture": str(tmp_path / "captures" / "shoe.jsonl")}
    os.makedirs(tmp_path / "captures")
    config = TABLE_CONFIGS.from_dict(raw, environ={})
    status_topic = f"{SOURCE}/status"
    try:
        async with running_service(config) as service:
            async with MqttRecorder(mosquitto, [status_topic]) as auditor:  # a late subscriber: retained
                low = await auditor.wait_for_message(
                    status_topic, lambda m: m.json().get("disk", {}).get("status") == "low"
                )
            disk = low.json()["disk"]
            assert disk["free_bytes"] > 0 and set(disk) == {"free_bytes", "status", "used_bytes"}
            # what the table's own files took at the check: its journal and the shoe's capture (which only
            # grew since)
            journal = sum(os.path.getsize(p) for p in tmp_path.glob("t1-journal.sqlite3*"))
            capture = os.path.getsize(tmp_path / "captures" / "shoe.jsonl")
            assert 0 < disk["used_bytes"] <= journal + capture
            assert low.json()["status"] == "online"
            link = service.links["shoe"]
            assert link.capture is not None and link.capture.daily  # the captures rotate
            assert link.capture.max_bytes == config.retention.capture_max_bytes
            StatusMessage.model_validate(low.json())  # the contract names the field
    finally:
        await shoe.stop()


# --- the housekeeping task ----------------------------------------------------------------------------------


class StatusBoard:
    """Stands in for the bus: what the housekeeping put in the status."""

    def __init__(self) -> None:
        self.disk: list[tuple[int, str, int]] = []

    def set_disk(self, free_bytes: int, status: str, used_bytes: int) -> None:
        self.disk.append((free_bytes, status, used_bytes))


async def test_one_round_of_housekeeping_and_a_failure_that_does_not_stop_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock(T0)
    path = tmp_path / "t1-journal.sqlite3"
    journal = Journal(path, SOURCE, clock=clock)
    for envelope in journal.append([opened(n) for n in range(1, 4)]):
        journal.acknowledge(int(envelope.sequence))
    capture = CaptureWriter(tmp_path / "shoe.jsonl")
    capture.story("meta", capture_meta(), T0)
    board = StatusBoard()
    keeping = Housekeeping(
        settings(disk_low_bytes=0, capture_max_bytes=64 * 1024, capture_days=60),
        journal=journal,
        journal_path=path,
        report_disk=board.set_disk,
        captures=[capture],
        clock=clock,
    )
    assert capture.daily and capture.max_bytes == 64 * 1024
    capture.rx(b"STATUS READY\r\n", T0 + DAY)  # the next day: the capture rotates
    clock.now += 31 * DAY
    await keeping.tidy()
    assert journal.pruned_through == 3 and len(list((tmp_path / ARCHIVE_DIR).iterdir())) == 1
    assert [f.name.endswith(".gz") for f, _ in rotated_captures(capture.path)] == [True]
    assert await keeping.check_disk() == "ok" and board.disk[-1][1] == "ok"

    calls = 0

    async def flaky() -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise OSError("No space left on device")

    task = asyncio.create_task(keeping._every(0.01, flaky))
    await wait_until(lambda: calls >= 3)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert "housekeeping failed" in caplog.text
    capture.close()
    journal.close()
