"""The `shuffler-line` driver on a real pty: the simulated shuffler served on it, read by the host session
through the real runner (a shuffle, an error and its reset, a count mismatch, an unplug mid-shuffle).

Its integration tests; the unit ones are in `tests/unit/drivers/test_shuffler.py`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controller.testing.line_link import RecordingLink, acked, served_on_pty
from controller.testing.line_wire import raw
from drivers.readings import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceOffline,
    DeviceOnline,
    DeviceStatus,
    ShuffleDone,
    ShuffleFailed,
)
from drivers.shuffler.session import ShufflerSession
from drivers.shuffler.simulator import ShufflerSimulator

pytestmark = pytest.mark.integration


# --- end to end on a real pty, through DeviceRunner --------------------------------------------------------


@contextlib.asynccontextmanager
async def shuffler_on_pty(
    tmp_path: Path, **options: Any
) -> AsyncIterator[tuple[ShufflerSimulator, RecordingLink]]:
    simulator = ShufflerSimulator(speed=50.0, **options)
    async with served_on_pty(simulator, ShufflerSession("shuffler1"), str(tmp_path / "ttySHUF")) as table:
        yield simulator, table


async def test_pty_shuffle_done(tmp_path: Path) -> None:
    async with shuffler_on_pty(tmp_path) as (simulator, table):
        assert simulator.load_decks(8)
        await table.send("shuffle", shuffle_id="P1", decks=8)
        await table.wait_for(ShuffleDone)
        await table.wait_until(lambda: table.session.state == "READY", "STATE READY")
        assert simulator.take_output() == 416
        await table.wait_until(lambda: table.session.state == "IDLE", "STATE IDLE")
    [done] = table.of(ShuffleDone)
    assert (done.shuffle_id, done.decks, done.cards, done.raw) == ("P1", 8, 416, raw("DONE 0001 P1 8 416"))
    assert table.of(ShuffleFailed) == [] and table.of(DeviceFault) == []
    assert acked(simulator) == ["ACK 0001"]
    assert [line.text for line in simulator.received][:2] == ["STATUS?", "SHUFFLE P1 8"]
    assert [s.state for s in table.of(DeviceStatus)] == ["IDLE", "LOADING", "SHUFFLING", "READY", "IDLE"]


async def test_pty_error_then_reset(tmp_path: Path) -> None:
    async with shuffler_on_pty(tmp_path) as (simulator, table):
        simulator.load_decks(1)
        simulator.jam_next()
        await table.send("shuffle", shuffle_id="P2", decks=1)
        await table.wait_for(ShuffleFailed)
        await table.wait_until(lambda: table.session.state == "ERROR", "STATE ERROR")
        await table.send("reset")
        await table.wait_for(DeviceFaultCleared)
        await table.send("shuffle", shuffle_id="P3", decks=1)
        await table.wait_for(ShuffleDone)
    [failed] = table.of(ShuffleFailed)
    assert (failed.code, failed.reason, failed.shuffle_id) == ("E01", "JAM", "P2")
    assert [(f.code, f.reason) for f in table.of(DeviceFault)] == [("E01", "JAM")]
    assert [d.shuffle_id for d in table.of(ShuffleDone)] == ["P3"]
    assert acked(simulator) == ["ACK 0001", "ACK 0002"]


async def test_pty_count_mismatch_is_a_fault(tmp_path: Path) -> None:
    async with shuffler_on_pty(tmp_path) as (simulator, table):
        simulator.load(8 * 52 - 1)
        await table.send("shuffle", shuffle_id="P4", decks=8)
        await table.wait_for(ShuffleFailed)
        await table.wait_until(lambda: table.session.state == "READY", "STATE READY")
        await asyncio.sleep(0.3)  # retransmissions, if any, have been de-duplicated by now
    assert table.of(ShuffleDone) == []
    [failed] = table.of(ShuffleFailed)
    assert (failed.code, failed.expected, failed.actual) == ("COUNT_MISMATCH", 416, 415)
    assert [f.code for f in table.of(DeviceFault)] == ["COUNT_MISMATCH"]
    assert table.of(DeviceFaultCleared) == []


async def test_pty_unplug_during_shuffle_delivers_done_once_after_replug(tmp_path: Path) -> None:
    async with shuffler_on_pty(tmp_path) as (simulator, table):
        simulator.load_decks(8)
        await table.send("shuffle", shuffle_id="P5", decks=8)
        await table.wait_until(lambda: table.session.state == "SHUFFLING", "STATE SHUFFLING")
        await simulator.unplug()
        await table.wait_for(DeviceOffline)
        # the shuffle ends while the cable is out: DONE goes into the void and is retransmitted
        await asyncio.sleep(simulator.device.shuffle_seconds(8) + 0.3)
        assert simulator.device.shuffles[0].outcome == "done"
        assert table.of(ShuffleDone) == []
        await simulator.replug()
        await table.wait_for(DeviceOnline, 2)
        await table.wait_for(ShuffleDone)
        await asyncio.sleep(0.6)
    assert [d.shuffle_id for d in table.of(ShuffleDone)] == ["P5"]
    assert len(table.of(DeviceOffline)) == 1
    kinds = [type(r) for r in table.readings if isinstance(r, DeviceOffline | DeviceOnline | ShuffleDone)]
    assert kinds == [DeviceOnline, DeviceOffline, DeviceOnline, ShuffleDone]
    assert acked(simulator) == ["ACK 0001"]  # the copies sent while unplugged reached nobody
