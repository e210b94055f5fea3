"""The broker password never shows: credentials in the broker URL are refused (they would be printed and
logged with it) with an error that does not repeat them, and a password sent in clear text over the network
(mqtt:// to another host) is warned of when the service starts.

Its unit tests; the e2e ones are in `tests/e2e/test_broker_credentials.py`."""

from __future__ import annotations

import pydantic
import pytest

from controller.bus import BrokerSettings
from controller.config import ConfigError, plain_password_warning, redact_url
from controller.table_build import TABLE_CONFIGS
from tests.helpers.broker_credentials import SECRET

pytestmark = pytest.mark.unit
BASE = {
    "table": {"table_id": "t1", "game": "roulette"},
    "devices": {"wheel": {"protocol": "cammegh-ss2", "port": "/dev/null"}},
}


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


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        # without an `@`, user:password:port reads as host `user:password` and a port
        (f"mqtt://user:{SECRET}:1883", SECRET),
        # an all-digit password reads as a port: one too large for a port is not shown
        ("mqtt://user:98765432", "98765432"),
        # urllib's own errors quote the netloc: a bracketed part of a password, a full-width `@`
        (f"mqtt://u:x7[{SECRET}]Lk@broker:1883", SECRET),
        (f"mqtt://[u:{SECRET}]", SECRET),
        (f"mqtt://u:{SECRET}\uff20broker", SECRET),
    ],
)
def test_no_broker_url_error_quotes_what_may_be_a_password(url: str, secret: str) -> None:
    for raw, environ in (({**BASE, "broker": {"url": url}}, {}), (BASE, {"TABLECTL__BROKER__URL": url})):
        with pytest.raises(ConfigError) as refused:
            TABLE_CONFIGS.from_dict(raw, environ=environ)
        assert "broker" in str(refused.value) and secret not in str(refused.value)
    with pytest.raises(pydantic.ValidationError) as invalid:
        BrokerSettings(url=url)
    assert secret not in str(invalid.value)
    assert secret not in redact_url(url)


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
    assert redact_url("mqtt://broker:65535") == "mqtt://broker:65535"
    assert redact_url("mqtt://[fe80::1%eth0]:1883") == "mqtt://[fe80::1%eth0]:1883"
    assert redact_url(f"mqtt://u:{SECRET}:1883") == "mqtt://***"
    assert redact_url(f"u:{SECRET}@broker://x") == "***"  # not a scheme
    assert BrokerSettings(url="mqtt://[::1]:1883").port == 1883


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
