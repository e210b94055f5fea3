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

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from controller.config import (
    BrokerConfigFile,
    BrokerSettings,
    HostNames,
    Strict,
    TopicLevel,
    allowed_hosts_field,
    read_config_file,
    require_tls_pair,
)


class ConsoleSettings(Strict):
    """The web side of the console."""

    studio_id: TopicLevel = "studio"
    host: str = Field(default="127.0.0.1", description="the address to serve the page on")
    port: int = Field(default=8090, ge=1, le=65535)
    allowed_hosts: HostNames = allowed_hosts_field(
        "host names the page may be reached by (the Host header); any other is refused (DNS rebinding)"
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

    @model_validator(mode="after")
    def _tls_pair(self) -> ConsoleSettings:
        require_tls_pair(
            self.tls_cert_file,
            self.tls_key_file,
            "HTTPS needs both console.tls_cert_file and console.tls_key_file",
        )
        return self

    @property
    def scheme(self) -> str:
        return "https" if self.tls_cert_file is not None else "http"


class ConsoleConfig(BrokerConfigFile):
    console: ConsoleSettings = ConsoleSettings()
    broker: BrokerSettings = BrokerSettings()

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
    return ConsoleConfig.from_dict(raw, environ=environ, source=source)


def load_console_config(
    path: str | Path | None, *, environ: Mapping[str, str] | None = None
) -> ConsoleConfig:
    raw = read_config_file(path) if path is not None else {}
    return console_config_from_dict(raw, environ=environ, source=str(path or "console"))
