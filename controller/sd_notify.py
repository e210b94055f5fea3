"""systemd's service notifications (sd_notify(3)) in a few lines, without libsystemd.

With `Type=notify` systemd passes `$NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace) and,
with `WatchdogSec=`, `$WATCHDOG_USEC` (and `$WATCHDOG_PID`, the process meant). Each notification is one
datagram of newline-separated `KEY=value` lines: `READY=1` when the service is up, `STATUS=...` for
`systemctl status`, `WATCHDOG=1` at least once per watchdog interval (we ping at half of it), `STOPPING=1`.

The watchdog pings come from a task on the service's own event loop: if the loop blocks, the pings stop and
systemd restarts the service (which recovers from its journal). Outside systemd every call does nothing.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger(__name__)


class Notifier:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        raw = environ.get("NOTIFY_SOCKET", "")
        #: where notifications go; None outside systemd (or with an address kind this module does not speak)
        self.address: str | None = None
        if raw.startswith("@"):
            self.address = "\0" + raw[1:]  # Linux abstract namespace
        elif raw.startswith("/"):
            self.address = raw
        elif raw:
            log.warning("NOTIFY_SOCKET=%r is not a path nor an abstract socket: not notifying systemd", raw)
        #: seconds between pings (half systemd's timeout), or None without a watchdog for this process
        self.watchdog_interval: float | None = None
        usec, pid = environ.get("WATCHDOG_USEC", ""), environ.get("WATCHDOG_PID", "")
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            self.watchdog_interval = int(usec) / 2 / 1_000_000
        self._socket: socket.socket | None = None
        self._warned = False

    @property
    def enabled(self) -> bool:
        return self.address is not None

    @property
    def watching(self) -> bool:
        """Whether systemd watches this process: `watchdog()` then pings until cancelled."""
        return self.watchdog_interval is not None and self.address is not None

    def notify(self, *lines: str) -> bool:
        """Send one notification; True if it was sent. Never raises: systemd going away must not stop us."""
        if self.address is None:
            return False
        message = "\n".join(lines).encode("utf-8")
        try:
            if self._socket is None:
                self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._socket.sendto(message, self.address)
        except OSError as exc:
            if not self._warned:  # once: a watchdog ping every few seconds would flood the log
                log.warning("cannot notify systemd at %r: %s", self.address, exc)
                self._warned = True
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.notify(f"STATUS={status}")

    def stopping(self, status: str = "stopping") -> bool:
        return self.notify("STOPPING=1", f"STATUS={status}")

    async def watchdog(self) -> None:
        """Ping until cancelled (returns at once without a watchdog). Run it on the loop it vouches for."""
        if self.watchdog_interval is None or self.address is None:
            return
        while True:
            self.notify("WATCHDOG=1")
            await asyncio.sleep(self.watchdog_interval)

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
