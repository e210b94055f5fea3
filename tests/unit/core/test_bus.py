"""The bus's settings (`BusSettings`), pure: host, port and TLS read from the broker URL, what cannot work
refused, the password kept out of reprs.

Its unit tests; the integration ones are in `tests/integration/test_bus.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest

from controller.config import BrokerSettings

pytestmark = pytest.mark.unit


# --- settings ----------------------------------------------------------------------------------------


def test_settings_read_host_port_and_tls_from_the_url() -> None:
    plain = BrokerSettings()
    assert (plain.host, plain.port, plain.tls) == ("127.0.0.1", 1883, False)
    secure = BrokerSettings(url="mqtts://broker.example", tls_ca_file=Path("ca.pem"))
    assert (secure.host, secure.port, secure.tls) == ("broker.example", 8883, True)
    assert BrokerSettings(url="mqtt://broker.studio.example:1884").port == 1884


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"url": "http://broker:1883"}, "mqtt:// or mqtts://"),
        ({"url": "mqtt://"}, "names no host"),
        ({"url": "mqtt://broker:99999"}, "the port must be a number from 0 to 65535"),
        ({"url": "mqtt://broker", "tls_ca_file": "ca.pem"}, "need an mqtts://"),
        ({"url": "mqtts://broker", "tls_cert_file": "c.pem"}, "both tls_cert_file and tls_key_file"),
        ({"reconnect_min_seconds": 5, "reconnect_max_seconds": 1}, "reconnect_max_seconds"),
        ({"hostname": "broker"}, "Extra inputs are not permitted"),
    ],
)
def test_settings_reject_what_cannot_work(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=problem):
        BrokerSettings(**fields)


def test_settings_keep_the_password_out_of_reprs() -> None:
    settings = BrokerSettings(username="table", password=pydantic.SecretStr("hunter2"))
    assert "hunter2" not in repr(settings)
    assert "hunter2" not in settings.model_dump_json()
