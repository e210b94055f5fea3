"""systemd notifications against a real AF_UNIX datagram socket standing in for systemd: READY, STATUS and
watchdog pings arrive, the pings stop while the event loop is blocked; and `tablectl run` in its own process
says READY once it runs, pings, says STOPPING on SIGTERM, and keeps its files to itself (0600 in 0700).

Its unit tests; the integration ones are in `tests/integration/test_sd_notify.py`, e2e ones are in
`tests/e2e/test_sd_notify.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.sd_notify import Notifier

pytestmark = pytest.mark.unit


def test_no_watchdog_for_another_process_nor_without_systemd(tmp_path: Path) -> None:
    other = Notifier({"NOTIFY_SOCKET": str(tmp_path / "x"), "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"})
    assert other.watchdog_interval is None
    outside = Notifier({})
    assert not outside.enabled and not outside.ready("up") and outside.watchdog_interval is None
    gone = Notifier({"NOTIFY_SOCKET": str(tmp_path / "no-such.sock")})
    assert gone.enabled and not gone.ready("up")  # systemd gone: a warning, never an exception
