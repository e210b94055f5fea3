"""What the tests of `test_sd_notify`, split by kind, share: `tests/unit/core/test_sd_notify.py`,
`tests/integration/test_sd_notify.py`, `tests/e2e/test_sd_notify.py`."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


class FakeSystemd:
    """A bound datagram socket, read by a thread: (arrival time, message) for each notification."""

    def __init__(self, address: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.settimeout(0.05)
        self.received: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            self.received.append((time.monotonic(), data.decode()))

    def messages(self) -> list[str]:
        return [message for _, message in self.received]

    def pings(self) -> list[float]:
        return [at for at, message in self.received if message == "WATCHDOG=1"]

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def systemd(tmp_path: Path) -> Iterator[FakeSystemd]:
    fake = FakeSystemd(str(tmp_path / "notify.sock"))
    yield fake
    fake.close()
