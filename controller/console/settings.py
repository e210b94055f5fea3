"""The console's configuration: one TOML file (`tablectl console --config console.toml`), or none at all.

```toml
[console]
studio_id = "lisbon-1"          # which studio's tables: studio/<studio_id>/table/+/...
host = "127.0.0.1"              # where the web page is served
port = 8090

[broker]                        # the same keys as a table's [broker] (url, TLS files, protocol, ...)
url = "mqtts://studio-broker:8883"
tls_ca_file = "/etc/tablectl/ca.pem"
# username = "supervisor-desk-1"  # with TABLECTL__BROKER__PASSWORD: no sign-in, the console is this user
```

Without `[broker] username` every supervisor signs in on the page with their own broker user name and
password; the console opens a broker connection in that name, so what they see and what they may send is
what the broker's ACL gives that user. Environment overrides work as for a table
(`TABLECTL__BROKER__PASSWORD`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator, model_validator

from controller.config import (
    BrokerSettings,
    ConfigError,
    Strict,
    _describe,
    _merged,
    read_config_file,
    redact_url,
)

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class ConsoleSettings(Strict):
    """The web side of the console."""

    studio_id: str = "studio"
    host: str = Field(default="127.0.0.1", description="the address to serve the page on")
    port: int = Field(default=8090, ge=1, le=65535)
    allowed_hosts: list[str] = Field(
        default_factory=lambda: ["127.0.0.1", "localhost", "[::1]"],
        min_length=1,
        description="host names the page may be reached by (the Host header); any other is refused "
        "(DNS rebinding)",
    )
    tls_cert_file: Path | None = Field(default=None, description="serve the page over HTTPS with this")
    tls_key_file: Path | None = None
    session_hours: float = Field(default=12.0, gt=0, le=24 * 7, description="a sign-in lasts this long")
    max_sessions: int = Field(
        default=16, ge=1, le=256, description="supervisors signed in at once (one broker connection each)"
    )
    max_streams: int = Field(default=32, ge=1, le=1000, description="open console pages at once")
    sign_in_attempts: int = Field(
        default=5, ge=1, le=100, description="refused sign-ins per user name (4x in all) before a pause"
    )
    sign_in_lockout_seconds: float = Field(default=60.0, gt=0)
    reply_timeout_seconds: float = Field(
        default=10.0, gt=0, le=300, description="how long a command waits for the table's reply"
    )

    @field_validator("studio_id")
    @classmethod
    def _topic_safe(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError("use letters, digits, '-' or '_' (max 64), starting with a letter or digit")
        return value

    @field_validator("allowed_hosts")
    @classmethod
    def _host_names(cls, hosts: list[str]) -> list[str]:
        names = []
        for host in hosts:
            name = host.strip().lower()
            if not re.fullmatch(r"[a-z0-9.-]+|\[[0-9a-f:.]+\]", name):
                raise ValueError(
                    f"{host!r} is not a host name (no scheme, no port; an IPv6 address in brackets: [::1])"
                )
            names.append(name)
        return names

    @model_validator(mode="after")
    def _tls_pair(self) -> ConsoleSettings:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("HTTPS needs both console.tls_cert_file and console.tls_key_file")
        return self

    @property
    def scheme(self) -> str:
        return "https" if self.tls_cert_file is not None else "http"


class ConsoleConfig(Strict):
    console: ConsoleSettings = ConsoleSettings()
    broker: BrokerSettings = BrokerSettings()

    @model_validator(mode="before")
    @classmethod
    def _no_credentials_in_broker_url(cls, data: Any) -> Any:
        broker = data.get("broker") if isinstance(data, dict) else None
        url = broker.get("url") if isinstance(broker, dict) else None
        if isinstance(url, str) and redact_url(url) != url:
            raise ValueError(
                f"broker.url {redact_url(url)}: credentials do not go in the URL; set broker.username, and "
                "the password in the environment (TABLECTL__BROKER__PASSWORD=...)"
            )
        return data

    @model_validator(mode="after")
    def _password_needs_user(self) -> ConsoleConfig:
        if self.broker.password is not None and self.broker.username is None:
            raise ValueError("broker.password without broker.username")
        return self

    @property
    def fixed_user(self) -> str | None:
        """The broker user the console acts as for everyone (from the file), or None: each signs in."""
        return self.broker.username


def console_config_from_dict(
    raw: Mapping[str, Any], *, environ: Mapping[str, str] | None = None, source: str = "console config"
) -> ConsoleConfig:
    try:
        return ConsoleConfig.model_validate(_merged(raw, environ))
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_describe(exc)}") from None


def load_console_config(
    path: str | Path | None, *, environ: Mapping[str, str] | None = None
) -> ConsoleConfig:
    raw = read_config_file(path) if path is not None else {}
    return console_config_from_dict(raw, environ=environ, source=str(path or "console"))
