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
what the broker's ACL gives that user. Only the users `[console] sign_in_users` names may sign in (by
default `supervisor-*`). Those passwords open every table of the studio, so the console refuses to start
where they would cross the network in clear — a broker on another host over mqtt://, or the page served
over plain HTTP on an address other than the loopback — unless `allow_cleartext_broker_passwords` or
`allow_http_sign_in` says so (and then it warns at every start). Environment overrides work as for a table
(`TABLECTL__BROKER__PASSWORD`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from controller.config import (
    BrokerConfigFile,
    BrokerSettings,
    HostNames,
    Strict,
    TopicLevel,
    allowed_hosts_field,
    is_loopback,
    read_config_file,
    require_tls_pair,
)

#: a `sign_in_users` entry: one MQTT topic level (a user name), where * and ? are wildcards
USER_PATTERN_TEXT = re.compile(r"[^/+#\s]{1,64}")


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
    page_gone_seconds: float = Field(
        default=90.0,
        ge=5,
        le=3600,
        description="a sign-in with no console page open for this long ends, and its broker connection "
        "with it (a closed tab must not hold a supervisor's place until session_hours)",
    )
    max_sessions: int = Field(
        default=16, ge=1, le=256, description="supervisors signed in at once (one broker connection each)"
    )
    max_streams: int = Field(default=32, ge=1, le=1000, description="open console pages at once")
    sign_in_users: list[str] = Field(
        default_factory=lambda: ["supervisor-*"],
        min_length=1,
        description="the broker users who may sign in (names, or patterns with * and ?); any other is "
        "refused before the broker is asked: the console is for supervisors, not for the tables' or the "
        "rules engine's users",
    )
    # One by default: a broker that ties client ids to users (the example's `use_username_as_clientid`, which
    # stops anyone taking over a table's session) lets each user hold one connection at a time, so a second
    # session of the same user would push the first off the broker, and back, for as long as both lived.
    max_sessions_per_user: int = Field(
        default=1,
        ge=1,
        le=64,
        description="sign-ins of one user at once; one more ends that user's oldest (its broker connection)",
    )
    sign_in_attempts: int = Field(
        default=5,
        ge=1,
        le=100,
        description="refused sign-ins per user name, and 4x that per client address, before a pause",
    )
    sign_in_lockout_seconds: float = Field(default=60.0, gt=0)
    allow_cleartext_broker_passwords: bool = Field(
        default=False,
        description="let supervisors sign in although their broker passwords go in clear to a broker on "
        "another host (mqtt://, not mqtts://); refused unless set",
    )
    allow_http_sign_in: bool = Field(
        default=False,
        description="let supervisors sign in over plain HTTP on an address other than the loopback "
        "(no tls_cert_file); refused unless set",
    )
    reply_timeout_seconds: float = Field(
        default=10.0, gt=0, le=300, description="how long a command waits for the table's reply"
    )

    @field_validator("sign_in_users")
    @classmethod
    def _user_patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            if not USER_PATTERN_TEXT.fullmatch(pattern):
                raise ValueError(
                    f"{pattern!r} is not a broker user name or pattern (no /, + or #, no spaces)"
                )
        return patterns

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

    def may_sign_in(self, user: str) -> bool:
        return any(fnmatch.fnmatchcase(user, pattern) for pattern in self.sign_in_users)

    def names_user(self, user: str) -> bool:
        """Whether the allow-list names `user`: matched by an entry that is more than wildcards. Only such a
        name is repeated when a sign-in is refused; any other may be a password typed in the name field."""
        return any(
            pattern.strip("*?") and fnmatch.fnmatchcase(user, pattern) for pattern in self.sign_in_users
        )


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

    def exposures(self) -> list[Exposure]:
        """Where the supervisors' passwords would cross the network in clear, with sign-in (the default)."""
        if self.fixed_user is not None:
            return []
        found = []
        broker = self.broker
        if not broker.tls and not is_loopback(broker.host):
            found.append(
                Exposure(
                    allowed=self.console.allow_cleartext_broker_passwords,
                    setting="console.allow_cleartext_broker_passwords (--allow-cleartext-broker-passwords)",
                    what=f"every supervisor's broker password goes in clear to {broker.host}:{broker.port} "
                    "(mqtt://): anyone on that network can read it, and sign in as that supervisor",
                    fix="use mqtts:// (the broker's TLS listener, [broker] tls_ca_file)",
                )
            )
        settings = self.console
        if settings.tls_cert_file is None and not is_loopback(settings.host):
            found.append(
                Exposure(
                    allowed=settings.allow_http_sign_in,
                    setting="console.allow_http_sign_in (--allow-http-sign-in)",
                    what=f"the page is served over plain HTTP on {settings.host}: every supervisor's "
                    "sign-in (broker password) crosses the network in clear",
                    fix="serve it over HTTPS (console.tls_cert_file and console.tls_key_file), or keep it "
                    "on 127.0.0.1 behind a TLS-terminating reverse proxy on the same host",
                )
            )
        return found


@dataclass(frozen=True)
class Exposure:
    """A way the console would send passwords in clear: refused at start unless `allowed` (its setting),
    and then warned about at every start."""

    allowed: bool
    setting: str
    what: str
    fix: str

    @property
    def refusal(self) -> str:
        fix = self.fix[0].upper() + self.fix[1:]
        return f"refusing to start: {self.what}. {fix}; or, to accept that, set {self.setting}"

    @property
    def warning(self) -> str:
        return f"{self.what} (allowed by {self.setting}); {self.fix}"


def console_config_from_dict(
    raw: Mapping[str, Any], *, environ: Mapping[str, str] | None = None, source: str = "console config"
) -> ConsoleConfig:
    return ConsoleConfig.from_dict(raw, environ=environ, source=source)


def load_console_config(
    path: str | Path | None, *, environ: Mapping[str, str] | None = None
) -> ConsoleConfig:
    raw = read_config_file(path) if path is not None else {}
    return console_config_from_dict(raw, environ=environ, source=str(path or "console"))
