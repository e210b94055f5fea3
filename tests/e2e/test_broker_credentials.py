"""The broker password never shows, through `tablectl check-config` and `tablectl run` in their own
processes: credentials in the broker URL are refused from the file or the environment, a password sent in
clear text is warned of at start and never logged, and `tls_insecure` is warned of on every start.

Its e2e tests; the unit ones are in `tests/unit/core/test_broker_credentials.py`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from controller.testing.mosquitto import free_port
from tests.helpers.broker_credentials import SECRET
from tests.helpers.paths import REPO

pytestmark = pytest.mark.e2e


def tablectl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def test_check_config_and_run_refuse_them_from_the_file_or_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "table.toml"
    config.write_text(
        f'[table]\ntable_id = "t1"\ngame = "roulette"\n[broker]\nurl = "mqtt://table:{SECRET}@broker"\n'
        '[devices.wheel]\nprotocol = "cammegh-ss2"\nport = "/dev/null"\n'
    )
    problem = f"{config}: broker.url mqtt://***@broker: credentials"
    result = tablectl("run", "--config", str(config))
    assert result.returncode == 2, result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert result.stderr.startswith(f"tablectl: error: {problem}")
    # check-config lists every problem on stdout, one a line, and exits 1
    checked = tablectl("check-config", "--config", str(config))
    assert checked.returncode == 1 and checked.stdout.startswith(problem), checked.stdout
    assert SECRET not in checked.stdout + checked.stderr
    config.write_text(config.read_text().replace(f"table:{SECRET}@", ""))
    from_env = tablectl(
        "check-config", "--config", str(config), env={"TABLECTL__BROKER__URL": f"mqtt://u:{SECRET}@broker"}
    )
    assert from_env.returncode == 1 and SECRET not in from_env.stdout + from_env.stderr


def test_tablectl_run_warns_at_start_and_never_logs_the_password(tmp_path: Path) -> None:
    config = tmp_path / "table.toml"
    # 192.0.2.1 (TEST-NET-1) is never reached; the wheel is a TCP port nobody listens on
    config.write_text(
        f'[table]\ntable_id = "t1"\ngame = "roulette"\ndata_dir = "{tmp_path / "data"}"\n'
        '[broker]\nurl = "mqtt://192.0.2.1:1883"\nusername = "table"\n'
        f'[devices.wheel]\nprotocol = "cammegh-ss2"\nport = "socket://127.0.0.1:{free_port()}"\n'
    )
    log = tmp_path / "service.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "-vv", "run", "--config", str(config)],
            cwd=REPO,
            env={**os.environ, "TABLECTL__BROKER__PASSWORD": SECRET},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 20
        while "clear text" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # let it try the broker (and log about it) for a moment
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(15)
    text = log.read_text()
    assert "WARNING" in text and "the MQTT password is sent in clear text to 192.0.2.1:1883" in text, text
    assert SECRET not in text


def test_tablectl_run_warns_of_tls_insecure_on_every_start(tmp_path: Path) -> None:
    config = tmp_path / "table.toml"
    # nobody listens on the broker's port: the warning must not wait for a connection
    config.write_text(
        f'[table]\ntable_id = "t1"\ngame = "roulette"\ndata_dir = "{tmp_path / "data"}"\n'
        f'[broker]\nurl = "mqtts://127.0.0.1:{free_port()}"\ntls_insecure = true\n'
        f'[devices.wheel]\nprotocol = "cammegh-ss2"\nport = "socket://127.0.0.1:{free_port()}"\n'
    )
    for start in range(2):
        log = tmp_path / f"service-{start}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "controller.cli", "run", "--config", str(config)],
                cwd=REPO,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + 20
            while "tls_insecure" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(15)
        text = log.read_text()
        assert "WARNING" in text and "broker.tls_insecure is on" in text, text
        assert "not checked against its host name" in text
