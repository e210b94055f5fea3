"""systemd notifications, pure: no watchdog for another process's WATCHDOG_PID, nor without systemd.

Its unit tests; the integration ones are in `tests/integration/test_sd_notify.py`, the e2e ones in
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
