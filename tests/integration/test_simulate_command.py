"""`tablectl simulate`: a simulated device served by the command, read by the table's own driver session."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controller.testing.mosquitto import wait_until
from drivers.readings import CardSeen, DeviceOnline, Reading
from drivers.runner import DeviceRunner
from drivers.shoe.session import ShoeSession
from drivers.shoe.simulator import shuffled_shoe
from drivers.simulate import parse_faults
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration


@contextlib.asynccontextmanager
async def simulate(
    *args: str, stdin: Any = asyncio.subprocess.PIPE
) -> AsyncIterator[tuple[asyncio.subprocess.Process, str]]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "controller.cli",
        "simulate",
        *args,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    try:
        assert process.stdout is not None
        url = (await asyncio.wait_for(process.stdout.readline(), 15)).decode().strip()
        yield process, url
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


@contextlib.asynccontextmanager
async def shoe_session(url: str) -> AsyncIterator[list[Reading]]:
    readings: list[Reading] = []

    async def keep(batch: list[Reading]) -> None:
        readings.extend(batch)

    runner = DeviceRunner(ShoeSession("shoe"), url, on_readings=keep)
    task = asyncio.create_task(runner.run())
    try:
        yield readings
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def cards(readings: list[Reading]) -> list[str]:
    return [r.code for r in readings if isinstance(r, CardSeen)]


@pytest.mark.parametrize("where", ["pty", "tcp"])
async def test_a_simulated_shoe_deals_to_the_tables_driver(where: str, tmp_path: Path) -> None:
    link = tmp_path / "shoe"
    place = ["--pty", str(link)] if where == "pty" else ["--tcp", "0"]
    async with simulate("shoe", *place, "--seed", "5", "--deal-every", "0.02") as (process, url):
        if where == "pty":
            assert url == str(link) and os.path.realpath(link).startswith("/dev/pts/")
        else:
            assert url.startswith("socket://127.0.0.1:")
        async with shoe_session(url) as readings:
            await wait_until(lambda: len(cards(readings)) >= 10, timeout=15, what="ten cards")
        assert any(isinstance(r, DeviceOnline) for r in readings)
        # the shoe's own shuffle, in order, each card once (acknowledged by the session as the table does)
        assert cards(readings)[:10] == shuffled_shoe(8, 5)[:10]
        assert process.returncode is None


async def test_a_simulator_in_the_background_reads_no_stdin_and_says_nothing_alarming() -> None:
    # under nohup or systemd standard input is /dev/null, which the event loop cannot wait on: before, the
    # simulator logged an asyncio PermissionError traceback at start
    with open(os.devnull, "rb") as nothing:
        async with simulate("shoe", "--tcp", "0", "--deal-every", "0.02", stdin=nothing) as (process, url):
            async with shoe_session(url) as readings:
                await wait_until(lambda: len(cards(readings)) >= 5, timeout=15, what="five cards")
            assert process.returncode is None
    assert process.stderr is not None
    err = (await process.stderr.read()).decode()
    assert "Traceback" not in err and "PermissionError" not in err, err


async def test_fault_switches_reach_the_simulator_and_unknown_ones_are_listed() -> None:
    faults = parse_faults("shoe", "noread_rate=1,duplicate_rate=0.5", seed=9)
    assert (faults.noread_rate, faults.duplicate_rate, faults.seed) == (1.0, 0.5, 9)
    # every drawn card is a no-read: the session sees no card, only what asks for a re-scan
    async with (
        simulate("shoe", "--faults", "noread_rate=1", "--deal-every", "0.05") as (_process, url),
        shoe_session(url) as readings,
    ):
        await wait_until(lambda: len(readings) >= 3, timeout=15, what="readings")
        await asyncio.sleep(0.3)
        assert not cards(readings)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "controller.cli",
        "simulate",
        "wheel",
        "--faults",
        "jam_rate=0.1",
        stderr=asyncio.subprocess.PIPE,
        cwd=REPO,
    )
    _, err = await asyncio.wait_for(process.communicate(), 15)
    assert process.returncode == 2
    assert b"tablectl: error:" in err and b"miss_spin_rate" in err
