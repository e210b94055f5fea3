"""The `shaker-line` driver on a real pty: the simulated shaker served on it, read by the host session
through the real runner (retransmissions, a fault and its recovery, an unplug mid-cycle).

Its integration tests; the unit ones are in `tests/unit/drivers/test_shaker.py`."""

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
    DiceAtRest,
)
from drivers.shaker.session import ShakerSession
from drivers.shaker.simulator import ShakerFaults, ShakerSimulator

pytestmark = pytest.mark.integration


# --- end to end on a real pty, through DeviceRunner --------------------------------------------------------


@contextlib.asynccontextmanager
async def shaker_on_pty(
    tmp_path: Path, **options: Any
) -> AsyncIterator[tuple[ShakerSimulator, RecordingLink]]:
    simulator = ShakerSimulator(**options)
    async with served_on_pty(simulator, ShakerSession("shaker1"), str(tmp_path / "ttySHAKE")) as table:
        yield simulator, table


async def test_pty_shake_cycle_is_at_rest_exactly_once_despite_retransmissions(tmp_path: Path) -> None:
    async with shaker_on_pty(tmp_path, speed=5.0) as (simulator, table):
        # spoil lines only from now on: what went out before the host opened the port was never read
        simulator.faults = ShakerFaults(duplicate_rate=1.0, bad_checksum_rate=0.4, seed=2)
        await table.send("light", on=True)
        await table.send("shake", cycle_id="S1")
        await table.wait_for(DiceAtRest)
        await table.wait_until(lambda: table.session.state == "AT_REST", "STATE AT_REST")
        await asyncio.sleep(0.6)  # more than two retransmission periods: any late copy has arrived
    [at_rest] = table.of(DiceAtRest)
    assert (at_rest.cycle_id, at_rest.raw) == ("S1", raw("AT_REST 0001 S1"))
    assert simulator.device.light_on
    intact_copies = [
        line for line in simulator.sent if line.kind in ("line", "duplicate") and "AT_REST 0001" in line.text
    ]
    assert len(intact_copies) >= 2  # it was retransmitted or duplicated, yet read once
    assert acked(simulator) == ["ACK 0001"] * len(intact_copies)
    assert table.session.stats.duplicates == len(intact_copies) - 1
    assert table.session.stats.rejected == {"bad checksum": simulator.device.injected["bad_checksum"]}
    # STATE lines carry no seq: a spoiled one is simply lost, a duplicate is reported again (harmless)
    states = [s.state for s in table.of(DeviceStatus)]
    assert states[-1] == "AT_REST"
    assert set(states) <= {"IDLE", "SHAKING", "SETTLING", "AT_REST"}
    assert [line.text for line in simulator.received if not line.text.startswith("ACK ")] == [
        "STATUS?",
        "LIGHT ON",
        "SHAKE S1 3",
    ]


async def test_pty_fault_and_recovery(tmp_path: Path) -> None:
    async with shaker_on_pty(tmp_path, speed=10.0) as (simulator, table):
        simulator.motor_fault_next()
        await table.send("shake", cycle_id="S2")
        await table.wait_for(DeviceFault)
        await table.wait_until(lambda: table.session.state == "FAULT", "STATE FAULT")
        simulator.clear_fault()
        await table.wait_for(DeviceFaultCleared)
        await table.send("shake", cycle_id="S3")
        await table.wait_for(DiceAtRest)
    assert [(f.code, f.reason) for f in table.of(DeviceFault)] == [("M01", "MOTOR")]
    assert [r.cycle_id for r in table.of(DiceAtRest)] == ["S3"]
    assert acked(simulator) == ["ACK 0001", "ACK 0002"]


async def test_pty_unplug_during_cycle_delivers_at_rest_once_after_replug(tmp_path: Path) -> None:
    async with shaker_on_pty(tmp_path, speed=5.0) as (simulator, table):
        await table.send("shake", cycle_id="S4")
        await table.wait_until(lambda: table.session.state == "SHAKING", "STATE SHAKING")
        await simulator.unplug()
        await table.wait_for(DeviceOffline)
        await asyncio.sleep(simulator.device.cycle_seconds(3) + 0.2)  # the dice come to rest, unseen
        assert simulator.cycles[0].outcome == "at_rest"
        assert table.of(DiceAtRest) == []
        await simulator.replug()
        await table.wait_for(DeviceOnline, 2)
        await table.wait_for(DiceAtRest)
        await asyncio.sleep(0.6)
    assert [r.cycle_id for r in table.of(DiceAtRest)] == ["S4"]
    assert len(table.of(DeviceOffline)) == 1
    kinds = [
        type(r).__name__ for r in table.readings if isinstance(r, DeviceOffline | DeviceOnline | DiceAtRest)
    ]
    assert kinds == ["DeviceOnline", "DeviceOffline", "DeviceOnline", "DiceAtRest"]
    assert acked(simulator) == ["ACK 0001"]
