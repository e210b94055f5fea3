"""systemd notifications against a real AF_UNIX datagram socket standing in for systemd: READY, STATUS and
watchdog pings arrive, the pings stop while the event loop is blocked; and `tablectl run` in its own process
says READY once it runs, pings, says STOPPING on SIGTERM, and keeps its files to itself (0600 in 0700)."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.sd_notify import Notifier
from controller.testing.mosquitto import MosquittoBroker, wait_until
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers.paths import REPO


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


@pytest.mark.integration
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


@pytest.mark.integration
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


@pytest.mark.integration
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


@pytest.mark.unit
def test_no_watchdog_for_another_process_nor_without_systemd(tmp_path: Path) -> None:
    other = Notifier({"NOTIFY_SOCKET": str(tmp_path / "x"), "WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"})
    assert other.watchdog_interval is None
    outside = Notifier({})
    assert not outside.enabled and not outside.ready("up") and outside.watchdog_interval is None
    gone = Notifier({"NOTIFY_SOCKET": str(tmp_path / "no-such.sock")})
    assert gone.enabled and not gone.ready("up")  # systemd gone: a warning, never an exception


def write_config(tmp_path: Path, broker: MosquittoBroker, port: str) -> Path:
    path = tmp_path / "table.toml"
    data = tmp_path / "data"
    path.write_text(
        f"""
[table]
studio_id = "s1"
table_id = "bac-notify"
game = "baccarat"
data_dir = "{data}"

[broker]
url = "{broker.url}"

[devices.shoe]
protocol = "shoe-line"
port = "{port}"
capture = "{data / "new-captures" / "shoe.jsonl"}"
"""
    )
    return path


@pytest.mark.e2e
async def test_tablectl_run_notifies_systemd_and_keeps_its_files_private(
    systemd: FakeSystemd, tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    shoe = ShoeSimulator(cards=["9S", "8D", "KC", "5H"] * 4)
    port = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    # an older install left the data directory and its journal readable by everyone
    data = tmp_path / "data"
    (data / "captures").mkdir(parents=True)
    data.chmod(0o755)
    (data / "captures").chmod(0o755)
    old = data / "old-notes.txt"
    old.write_text("x")
    old.chmod(0o644)
    env = {
        **os.environ,
        "NOTIFY_SOCKET": str(tmp_path / "notify.sock"),
        "WATCHDOG_USEC": "1000000",
    }
    env.pop("WATCHDOG_PID", None)
    log = tmp_path / "service.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "controller.cli",
                "-v",
                "run",
                "--config",
                str(write_config(tmp_path, mosquitto, port)),
            ],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        await wait_until(
            lambda: any(m.startswith("READY=1") for m in systemd.messages()),
            timeout=20,
            what=lambda: f"READY=1 (got {systemd.messages()}; log: {log.read_text()})",
        )
        ready = next(m for m in systemd.messages() if m.startswith("READY=1"))
        assert ready == f"READY=1\nSTATUS=table bac-notify: running; broker {mosquitto.url} connected"
        assert systemd.messages()[0] == "STATUS=opening the journal"
        await wait_until(lambda: len(systemd.pings()) >= 3, timeout=5, what="watchdog pings")
        pings = systemd.pings()
        assert all(0.3 < b - a < 1.0 for a, b in itertools.pairwise(pings)), pings

        # the journal, its WAL and the capture are the service's alone, and so is the old file now
        # (the capture's directory did not exist: the service made it)
        capture = data / "new-captures" / "shoe.jsonl"
        await wait_until(capture.exists, timeout=10, what="the capture")
        for directory in (data, data / "captures", capture.parent):
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
        assert stat.S_IMODE(old.stat().st_mode) == 0o600
        journal = data / "bac-notify-journal.sqlite3"
        for path in (journal, Path(f"{journal}-wal"), capture):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    finally:
        process.send_signal(signal.SIGTERM)
        returncode = process.wait(15)
        await shoe.stop()
    assert returncode == 0, log.read_text()
    assert systemd.messages()[-1] == "STOPPING=1\nSTATUS=stopping"
