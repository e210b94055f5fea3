"""systemd notifications against a real AF_UNIX datagram socket standing in for systemd: READY, STATUS and
watchdog pings arrive, the pings stop while the event loop is blocked; and `tablectl run` in its own process
says READY once it runs, pings, says STOPPING on SIGTERM, and keeps its files to itself (0600 in 0700).

Its integration tests; the unit ones are in `tests/unit/core/test_sd_notify.py`, the e2e ones in
`tests/e2e/test_sd_notify.py`."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from pathlib import Path

import pytest

from controller.sd_notify import Notifier
from controller.testing.mosquitto import wait_until
from tests.helpers import sd_notify as shared
from tests.helpers.sd_notify import FakeSystemd

pytestmark = pytest.mark.integration
systemd = shared.systemd  # a fixture (tests/helpers/sd_notify.py)


async def test_ready_status_and_stopping_arrive_as_datagrams(systemd: FakeSystemd, tmp_path: Path) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": str(tmp_path / "notify.sock")})
    assert notifier.enabled and notifier.watchdog_interval is None
    assert notifier.status("opening the journal")
    assert notifier.ready("running")
    assert notifier.stopping()
    await wait_until(lambda: len(systemd.received) == 3, timeout=5)
    assert systemd.messages() == [
        "STATUS=opening the journal",
        "READY=1\nSTATUS=running",
        "STOPPING=1\nSTATUS=stopping",
    ]
    await notifier.watchdog()  # no WATCHDOG_USEC: returns at once
    notifier.close()


async def test_abstract_socket_names_start_with_an_at_sign() -> None:
    name = f"tablectl-test-{os.getpid()}-{time.monotonic_ns()}"
    fake = FakeSystemd("\0" + name)
    try:
        notifier = Notifier({"NOTIFY_SOCKET": "@" + name})
        assert notifier.ready("up")
        await wait_until(lambda: fake.messages() == ["READY=1\nSTATUS=up"], timeout=5)
        notifier.close()
    finally:
        fake.close()


async def test_watchdog_pings_at_half_the_interval_and_stop_while_the_loop_is_blocked(
    systemd: FakeSystemd, tmp_path: Path
) -> None:
    notifier = Notifier(
        {
            "NOTIFY_SOCKET": str(tmp_path / "notify.sock"),
            "WATCHDOG_USEC": "200000",
            "WATCHDOG_PID": str(os.getpid()),
        }
    )
    assert notifier.watchdog_interval == pytest.approx(0.1)
    pinging = asyncio.create_task(notifier.watchdog())
    try:
        await asyncio.sleep(0.55)
        assert 4 <= len(systemd.pings()) <= 7, systemd.pings()
        time.sleep(0.8)  # the point: the event loop is blocked
        blocked_until = time.monotonic()
        await asyncio.sleep(0.35)
    finally:
        pinging.cancel()
        await asyncio.gather(pinging, return_exceptions=True)
    pings = systemd.pings()
    gaps = [later - earlier for earlier, later in itertools.pairwise(pings)]
    # one gap spans the blocked time (no ping from a stuck loop), and pinging resumed after it
    assert max(gaps) >= 0.75, gaps
    assert sum(1 for gap in gaps if gap > 0.3) == 1, gaps
    assert any(at > blocked_until for at in pings)
    notifier.close()
