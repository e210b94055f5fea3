"""The simulated SS2 wheel served on a real pty, read with pyserial, end to end.

Its integration tests; the unit ones are in `tests/unit/drivers/test_wheel_simulator.py`."""

from __future__ import annotations

import asyncio
import time

import pytest
import serial

from drivers.readings import (
    DeviceFault,
    Reading,
    WheelGameStarted,
    WheelResult,
)
from drivers.session import DeviceCommand
from drivers.wheel.session import WheelSession
from drivers.wheel.simulator import WheelSimulator

pytestmark = pytest.mark.integration


# --- end to end on a real pseudo-terminal -------------------------------------------------------------------


async def test_end_to_end_on_a_pty_with_pyserial() -> None:
    simulator = WheelSimulator(seed=5, speed=20.0, boot_seconds=0.3, numbers=["17", "0", "32"])
    url = await simulator.start_pty()
    port = serial.Serial(url, 9600, timeout=0)
    session = WheelSession("wheel")
    readings: list[Reading] = session.connection_made(time.time())
    start_at: float | None = None
    try:
        deadline = time.monotonic() + 25
        while sum(isinstance(r, WheelResult) for r in readings) < 3 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
            now = time.time()
            data = port.read(4096)
            new = (session.data_received(data, now) if data else []) + session.tick(now)
            if any(isinstance(r, WheelGameStarted) for r in new):
                start_at = now + 0.1
            readings += new
            if start_at is not None and now >= start_at:
                session.command(DeviceCommand("start_game", {"direction": "clockwise"}), now)
                start_at = None
            sent = session.data_to_send()
            if sent:
                port.write(sent)
    finally:
        port.close()
        await simulator.stop()
    results = [r for r in readings if isinstance(r, WheelResult)]
    assert [r.number for r in results] == ["17", "0", "32"]
    assert [(g.number, g.spin) for g in simulator.device.games[:3]] == [(r.number, r.spin) for r in results]
    assert results[1].raw.startswith(" 0\n*X;5;")
    assert not any(isinstance(r, DeviceFault) for r in readings)
    assert session.reported_mode == 1415
