"""The broker password never shows: credentials in the broker URL are refused (they would be printed and
logged with it) with an error that does not repeat them, and a password sent in clear text over the network
(mqtt:// to another host) is warned of when the service starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pydantic
import pytest

from controller.bus import BrokerSettings
from controller.config import ConfigError, plain_password_warning, redact_url
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import free_port
from tests.helpers.paths import REPO

SECRET = "s3cr3t-Pa55"
BASE = {
    "table": {"table_id": "t1", "game": "roulette"},
    "devices": {"wheel": {"protocol": "cammegh-ss2", "port": "/dev/null"}},
}


def tablectl(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.unit
@pytest.mark.parametrize(
    "url",
    [
        f"mqtt://table:{SECRET}@broker:1883",
        f"mqtts://table:{SECRET}@broker",
        f"mqtt://{SECRET}@broker:99999/x",
    ],
)
def test_credentials_in_the_broker_url_are_refused_without_repeating_them(url: str) -> None:
    with pytest.raises(ConfigError) as refused:
        TABLE_CONFIGS.from_dict({**BASE, "broker": {"url": url}}, environ={})
    message = str(refused.value)
    assert SECRET not in message and "***@broker" in message
    assert "TABLECTL__BROKER__PASSWORD" in message


@pytest.mark.e2e
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


@pytest.mark.unit
@pytest.mark.parametrize(
    "url",
    [
        # a password holding `/`, `?` or `#` ends the URL's authority early: parsed, the `@` is past it
        f"mqtt://u:1/{SECRET}@broker",
        f"mqtt://u:pa/{SECRET}@broker:1883",
        f"mqtts://u:{SECRET}?x@broker",
        f"mqtt://u:{SECRET}#x@broker",
        f"mqtt://u:{SECRET}@",
    ],
)
def test_credentials_hidden_past_the_authority_are_refused_too(url: str) -> None:
    with pytest.raises(ConfigError) as refused:
        TABLE_CONFIGS.from_dict({**BASE, "broker": {"url": url}}, environ={})
    message = str(refused.value)
    assert SECRET not in message and "credentials do not go in the URL" in message, message
    # and BrokerSettings itself (the console's, a bench's) refuses them without repeating them
    with pytest.raises(pydantic.ValidationError) as invalid:
        BrokerSettings(url=url)
    assert SECRET not in str(invalid.value)
    assert SECRET not in redact_url(url)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("mqtt://broker/some/path", "nothing after it"),
        ("mqtt://broker?x=1", "nothing after it"),
        (f"mqtt://broker:{SECRET}", "the port must be a number"),
        (f"mqtt://user:{SECRET}", "the port must be a number"),
        (f"mqtt://u:{SECRET}\t@broker", "printable, without spaces"),
        (f"http://u:{SECRET}@broker", "must start with mqtt:// or mqtts://"),
    ],
)
def test_a_broker_url_is_scheme_host_and_port_only(url: str, problem: str) -> None:
    with pytest.raises(pydantic.ValidationError) as invalid:
        BrokerSettings(url=url)
    assert problem in str(invalid.value) and SECRET not in str(invalid.value)


@pytest.mark.unit
def test_redact_url_keeps_only_scheme_host_and_port() -> None:
    assert redact_url("mqtt://u:p@host:1883/path") == "mqtt://***@host:1883/***"
    assert redact_url("mqtt://host:1883") == "mqtt://host:1883"
    assert redact_url("mqtt://host:1883/") == "mqtt://host:1883"
    # an `@` past the authority is taken for spilled user info: what precedes it is never shown
    assert redact_url("mqtt://host/a@b") == "mqtt://***@b"
    assert redact_url("mqtt://[::1]:1883") == "mqtt://[::1]:1883"
    assert redact_url("mqtt://[::1]") == "mqtt://[::1]"
    assert redact_url(f"mqtt://u:1/{SECRET}@broker:1883/x") == "mqtt://***@broker:1883/***"
    assert redact_url(f"mqtt://u:{SECRET}") == "mqtt://u:***"
    assert BrokerSettings(url="mqtt://[::1]:1883").port == 1883


@pytest.mark.unit
def test_a_clear_text_password_to_another_host_is_warned_of() -> None:
    def warning(url: str, password: str | None = SECRET) -> str | None:
        return plain_password_warning(BrokerSettings.model_validate({"url": url, "password": password}))

    assert warning("mqtt://127.0.0.1:1883") is None
    assert warning("mqtt://localhost") is None
    assert warning("mqtt://[::1]:1883") is None
    assert warning("mqtts://broker.studio.lan") is None
    assert warning("mqtt://broker.studio.lan", password=None) is None
    text = warning("mqtt://broker.studio.lan:1884")
    assert text is not None and "clear text to broker.studio.lan:1884" in text and "mqtts://" in text
    assert SECRET not in text


@pytest.mark.e2e
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


@pytest.mark.e2e
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
