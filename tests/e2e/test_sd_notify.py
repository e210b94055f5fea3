"""systemd notifications from `tablectl run` in its own process, against a real AF_UNIX datagram socket
standing in for systemd: READY once it runs, pings, STOPPING on SIGTERM, and its files kept to itself
(0600 in 0700).

Its e2e tests; the unit ones are in `tests/unit/core/test_sd_notify.py`, the integration ones in
`tests/integration/test_sd_notify.py`."""

from __future__ import annotations

import itertools
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from controller.testing.mosquitto import MosquittoBroker, wait_until
from controller.testing.table_process import write_table_config
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers import sd_notify as shared
from tests.helpers.paths import REPO
from tests.helpers.sd_notify import FakeSystemd

pytestmark = pytest.mark.e2e
systemd = shared.systemd  # a fixture (tests/helpers/sd_notify.py)


def write_config(tmp_path: Path, broker: MosquittoBroker, port: str) -> Path:
    return write_table_config(
        tmp_path,
        broker,
        table_id="bac-notify",
        game="baccarat",
        device="shoe",
        protocol="shoe-line",
        port=port,
        capture=tmp_path / "data" / "new-captures" / "shoe.jsonl",
        keepalive=None,
    )


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
