"""Table configuration: one TOML file per table, overridable from the environment, validated with pydantic.

Environment overrides use `TABLECTL__<SECTION>__<KEY>=value` (double underscores separate levels), e.g.
`TABLECTL__BROKER__URL=mqtts://broker:8883` or `TABLECTL__BROKER__PASSWORD=...`
(keep secrets out of the file).
An invalid file gives one `ConfigError` line naming the bad key; the CLI prints it and exits non-zero.
Each device's `options` are checked against its protocol's options model (`drivers.registry.options_model`)
when the file is loaded: `[devices.wheel.options] pol_interval = 1` is `devices.wheel.options.pol_interval`.
A table's file names its game, and the game's settings and devices are checked against the game's own
rules: this module knows no game. Whoever loads a table's file hands it the games the controller runs, as a
`ConfigLoader(games)` (the one built with `controller.games.GAMES` is `controller.table_build.TABLE_CONFIGS`);
`ConfigLoader.problems` lists every problem instead of the first (`tablectl check-config`). The device kinds
(`drivers.registry`: protocol names, their options models) are the layer below, read here directly.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, Self
from urllib.parse import urlsplit

import pydantic
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails

from controller.pins import DEALER_ID_PATTERN, PinHash
from drivers.registry import PROTOCOLS, MissingExtra, options_model
from drivers.url_redaction import redact_url, split_authority

ENV_PREFIX = "TABLECTL__"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class ConfigError(ValueError):
    """A configuration problem, worded for the operator (one line)."""


class GameRules(Protocol):
    """What a table's configuration needs to know of a game (`controller.games.spec.GameSpec` is one)."""

    @property
    def devices(self) -> Mapping[str, tuple[str, ...]]:
        """device name -> the protocols that can serve it"""

    @property
    def captured_devices(self) -> tuple[str, ...]:
        """the devices whose capture the game's results point at: the config must set it"""

    @property
    def optional_devices(self) -> Mapping[str, tuple[str, ...]]:
        """role -> the protocols that can play it, for a device the game can use but does not need"""

    @property
    def cards_entered_by_hand(self) -> bool:
        """whether its dealer may enter a card by hand (`[table] manual_card_confirmation` applies)"""

    @property
    def settings(self) -> type[BaseModel]:
        """the model of its `[game]` section"""

    def optional_device_setting(self, role: str) -> str: ...

    def optional_devices_in_use(self, settings: BaseModel) -> dict[str, str]: ...


#: the key of pydantic's validation context under which a table's file gets the games it may name
_GAMES_CONTEXT = "games"


def _games_of(info: ValidationInfo) -> Mapping[str, GameRules]:
    """The games a `TableConfig` is validated against (`ConfigLoader`); never validated without them."""
    games = info.context.get(_GAMES_CONTEXT) if isinstance(info.context, Mapping) else None
    if games is None:
        raise TypeError("a table's config is validated with the games it may name: use ConfigLoader(games)")
    rules: Mapping[str, GameRules] = games
    return rules


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _topic_level(value: str) -> str:
    # ids become MQTT topic levels: no '/', '+', '#', spaces
    if not _ID.match(value):
        raise ValueError("use letters, digits, '-' or '_' (max 64), starting with a letter or digit")
    return value


#: a studio's or a table's id
TopicLevel = Annotated[str, AfterValidator(_topic_level)]


def _host_names(hosts: list[str]) -> list[str]:
    names = []
    for host in hosts:
        name = host.strip().lower()
        if not re.fullmatch(r"[a-z0-9.-]+|\[[0-9a-f:.]+\]", name):
            # an entry with user info (`user:secret@host`) is not repeated: it may hold a password
            shown = "an entry with user info (user@host)" if "@" in host else repr(host)
            raise ValueError(
                f"{shown} is not a host name (no scheme, no port; an IPv6 address in brackets: [::1])"
            )
        names.append(name)
    return names


#: the names a web page of the table (the panel) or of the studio (the console) may be reached by: what its
#: `Host` header must say, so that a DNS-rebinding page cannot reach it under a name of its own
HostNames = Annotated[list[str], AfterValidator(_host_names)]


def allowed_hosts_field(description: str) -> Any:
    """The `allowed_hosts` of a web page: by default only its loopback names; never none."""
    return Field(
        default_factory=lambda: ["127.0.0.1", "localhost", "[::1]"], min_length=1, description=description
    )


def require_tls_pair(cert_file: Path | None, key_file: Path | None, message: str) -> None:
    """A certificate is of no use without its private key, nor a key without its certificate."""
    if (cert_file is None) != (key_file is None):
        raise ValueError(message)


class TableSettings(Strict):
    studio_id: TopicLevel = "studio"
    table_id: TopicLevel
    game: str
    data_dir: Path = Path("/var/lib/tablectl")
    manual_card_confirmation: Literal["dealer", "supervisor"] = Field(
        default="dealer",
        description="who decides a card entered by hand after a no-read: the dealer alone (dealt at once), "
        "or a supervisor too (held until a supervisor's confirm_manual_card names the same card)",
    )

    @field_validator("game")
    @classmethod
    def _known_game(cls, value: str, info: ValidationInfo) -> str:
        games = _games_of(info)
        if value not in games:
            raise ValueError(f"unknown game {value!r}; known: {', '.join(sorted(games))}")
        return value


class DeviceSettings(Strict):
    protocol: str
    port: str = Field(
        description="serial device path, or a pyserial URL: socket://host:port, rfc2217://host:port; "
        "a USB barcode scanner (hid-barcode): usb:<vendor>:<product>[:<serial>]"
    )
    baudrate: int | None = Field(
        None, gt=0, description="default: the protocol's (115200 line devices, 9600 SS2)"
    )
    capture: Path | None = Field(None, description="record the raw traffic to this JSON Lines file")
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="protocol-specific session options, checked against the protocol's options model",
    )

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, value: str) -> str:
        if value not in PROTOCOLS:
            raise ValueError(f"unknown protocol {value!r}; known: {', '.join(sorted(PROTOCOLS))}")
        return value


class PanelSettings(Strict):
    """The dealer's touch panel (a web page the table PC's kiosk browser shows)."""

    enabled: bool = False
    host: str = Field(default="127.0.0.1", description="the address to listen on; keep it on the loopback")
    port: int = Field(default=8080, ge=1, le=65535)
    allowed_hosts: HostNames = allowed_hosts_field(
        "host names the kiosk's URL may use (the Host header); any other is refused, "
        "which defeats DNS rebinding"
    )
    dealers: dict[str, str] = Field(
        default_factory=dict,
        description="dealer id -> PIN hash (`tablectl panel-hash-pin`); nobody can act on the panel without",
    )
    session_hours: float = Field(default=12.0, gt=0, le=24 * 7, description="a sign-in lasts this long")
    pin_attempts: int = Field(
        default=5, ge=1, le=100, description="wrong PINs per dealer id (4x in all) before sign-in pauses"
    )
    pin_lockout_seconds: float = Field(default=300.0, gt=0, description="...for this long")
    max_streams: int = Field(default=16, ge=1, le=1000, description="live screens at once; more get 503")

    @property
    def scheme(self) -> str:
        """The panel is served over plain HTTP, to the kiosk browser on the table PC itself."""
        return "http"

    @field_validator("dealers")
    @classmethod
    def _dealers(cls, dealers: dict[str, str]) -> dict[str, str]:
        for dealer, encoded in dealers.items():
            if not DEALER_ID_PATTERN.match(dealer):
                raise ValueError(f"dealer id {dealer!r}: use letters, digits, '-' or '_' (max 32)")
            try:
                PinHash.parse(encoded)
            except ValueError as exc:
                raise ValueError(f"dealer {dealer}: {exc}") from None
        return dealers


class RetentionSettings(Strict):
    """What the table keeps on its disk, and when it warns that the disk fills up (`controller.retention`).

    Acknowledged events older than `event_days` leave the journal in batches: archived first (gzip JSON Lines,
    one file per UTC day in `archive/` beside the journal) unless `event_archive = "drop"`. Device captures
    start a new file every UTC day and when one exceeds `capture_max_bytes`; the rotated files are compressed
    and kept `capture_days` days, and all of them together at most `capture_total_bytes`. Archive files are
    kept `archive_days` days and `archive_max_bytes` in all. A camera's capture starts a new file every UTC
    day and every `camera_frames_per_file` frames; a rotated file and its frames are kept `frame_days` days,
    and the frames of all of them at most `frame_max_bytes` in all. Oldest first, and never the file being
    written, nor what an open round or an event not yet delivered may still need. The retained status says
    `"disk": {"status": "low"}` while the free space of a file system the table writes to is under
    `disk_low_bytes`, and how much the table's own files take (`used_bytes`).
    """

    enabled: bool = Field(default=True, description="run the housekeeping at all (the disk check included)")
    event_days: float = Field(
        default=30.0, gt=0, le=36500, description="acknowledged events older than this leave the journal"
    )
    event_archive: Literal["gzip", "drop"] = Field(
        default="gzip", description="gzip: written to archive/<journal>-<day>.jsonl.gz first; drop: deleted"
    )
    prune_batch: int = Field(
        default=500, ge=1, le=10_000, description="events per batch (one short transaction each)"
    )
    interval_seconds: float = Field(
        default=3600.0, ge=1, le=7 * 86400, description="time between two rounds of housekeeping"
    )
    capture_max_bytes: int = Field(
        default=64 * 1024 * 1024, ge=64 * 1024, description="a capture file larger than this is rotated"
    )
    capture_days: int = Field(
        default=14, ge=1, le=3650, description="rotated captures are kept this many days"
    )
    capture_total_bytes: int = Field(
        default=4 * 1024**3,
        ge=1024 * 1024,
        description="the rotated captures of all devices together; beyond it the oldest are deleted",
    )
    archive_days: int = Field(
        default=365, ge=1, le=36500, description="archived events of a UTC day are kept this many days"
    )
    archive_max_bytes: int = Field(
        default=1024**3,
        ge=1024 * 1024,
        description="the event archive in all; beyond it the oldest days are deleted (never the newest)",
    )
    camera_frames_per_file: int = Field(
        default=500,
        ge=1,
        le=100_000,
        description="a camera's capture starts a new file after this many frames (about 0.5 MB each)",
    )
    frame_days: int = Field(
        default=7, ge=1, le=3650, description="rotated camera files and their frames are kept so many days"
    )
    frame_max_bytes: int = Field(
        default=8 * 1024**3,
        ge=16 * 1024 * 1024,
        description="camera frames and captures in all; beyond it the oldest rotated files and their frames "
        "are deleted",
    )
    disk_low_bytes: int = Field(
        default=1024 * 1024 * 1024,
        ge=0,
        description="free space under this is reported as low (0: never); leave room for days of events",
    )
    disk_check_seconds: float = Field(
        default=60.0, ge=1, le=86400, description="how often free space is checked"
    )


class MetricsSettings(Strict):
    """`/metrics` in the Prometheus text format (`controller.metrics`), for the studio's Prometheus."""

    enabled: bool = False
    host: str = Field(
        default="127.0.0.1",
        description="the address to listen on; a Prometheus on another host needs this PC's address",
    )
    port: int = Field(default=9464, ge=1, le=65535)
    allowed_hosts: HostNames | None = Field(
        default=None,
        description="host names a scrape may name (the Host header); any other is refused with 421. "
        "Default: the loopback names when `host` is a loopback address, else any (then say which)",
    )
    loop_lag_interval_seconds: float = Field(
        default=0.5, gt=0, le=60, description="how often the event loop's lag is sampled"
    )
    render_interval_seconds: float = Field(
        default=1.0,
        ge=0,
        le=60,
        description="scrapes within this long of a render get that render: a flood of scrapes costs the "
        "table one render per interval (Prometheus scrapes every 15 s or so)",
    )


def url_has_credentials(url: str) -> bool:
    """Whether `url` holds user info (`user:secret@host`), or an `@` past its authority: a password holding
    `/`, `?` or `#` ends the authority early (`mqtt://u:1/pw@host`) and must be caught as well."""
    _scheme, authority, rest = split_authority(url)
    try:
        parts = urlsplit(url)
    except ValueError:
        return "@" in authority or "@" in rest  # not a URL at all: the URL check says so, redacted
    return "@" in authority or "@" in rest or parts.username is not None or parts.password is not None


def is_loopback(host: str) -> bool:
    """Whether `host` (an address, an IPv6 one in brackets or not, or a name) is this machine's loopback."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host.lower() == "localhost"


def plain_password_warning(broker: BrokerSettings) -> str | None:
    """A warning if the broker password would cross the network in clear text (mqtt:// to another host)."""
    if broker.password is None or broker.tls:
        return None
    try:
        loopback = ipaddress.ip_address(broker.host).is_loopback
    except ValueError:
        loopback = broker.host.lower() == "localhost"
    if loopback:
        return None
    return (
        f"the MQTT password is sent in clear text to {broker.host}:{broker.port} (mqtt://): "
        "anyone on the network can read it; use mqtts://"
    )


def tls_insecure_warning(broker: BrokerSettings) -> str | None:
    """A warning while the broker's certificate is not checked against its host name (`tls_insecure`)."""
    if not (broker.tls and broker.tls_insecure):
        return None
    return (
        f"broker.tls_insecure is on: the certificate of {broker.host}:{broker.port} is not checked against "
        "its host name, so any host with a certificate from the CA can pose as the broker (and read the "
        "password); for testing only, turn it off in production"
    )


class BrokerSettings(pydantic.BaseModel):
    """How to reach the broker. Embedded in the controller's config file."""

    # hide_input_in_errors: a refused URL may hold a password, and a ValidationError would repeat it
    model_config = pydantic.ConfigDict(extra="forbid", hide_input_in_errors=True)

    url: str = pydantic.Field(
        default="mqtt://127.0.0.1:1883", description="mqtt://host:port, or mqtts:// for TLS"
    )
    username: str | None = None
    password: pydantic.SecretStr | None = None
    tls_ca_file: Path | None = pydantic.Field(
        default=None, description="CA bundle; default: the system's CAs"
    )
    tls_cert_file: Path | None = pydantic.Field(default=None, description="client certificate (mutual TLS)")
    tls_key_file: Path | None = pydantic.Field(default=None, description="client certificate's private key")
    tls_insecure: bool = pydantic.Field(
        default=False, description="skip the broker host name check (testing only)"
    )
    protocol: Literal["5", "3.1.1"] = "5"
    client_id: str | None = pydantic.Field(
        default=None, description="default: derived from the table's topic root"
    )
    keepalive: int = pydantic.Field(default=15, ge=1, le=65535)
    reconnect_min_seconds: float = pydantic.Field(
        default=0.5, gt=0, description="also the first pause before retrying an event the broker refused"
    )
    reconnect_max_seconds: float = pydantic.Field(default=10.0, gt=0)
    max_inflight: int = pydantic.Field(
        default=100,
        ge=1,
        le=65535,
        description="events published and not yet acknowledged by the broker at most (the in-flight window; "
        "the broker's MQTT 5 Receive Maximum lowers it)",
    )
    max_payload_bytes: int = pydantic.Field(
        default=64 * 1024,
        ge=1024,
        le=16 * 1024 * 1024,
        description="largest command/input payload accepted; a larger one gets an error reply, unparsed",
    )

    @pydantic.field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        # Every message names the URL redacted: it may hold a password (refused here, never echoed).
        shown = redact_url(url)
        try:
            parts = urlsplit(url)
        except ValueError:
            # never urllib's own text: it quotes the authority, password and all
            raise ValueError(f"broker url {shown} is not a valid URL") from None
        if parts.scheme not in ("mqtt", "mqtts"):
            raise ValueError(f"broker url must start with mqtt:// or mqtts://, not {shown}")
        if not url.isprintable() or any(c.isspace() for c in url):
            # urlsplit drops tabs and line ends silently: what it parsed is not what was written
            raise ValueError("broker url must be printable, without spaces")
        if url_has_credentials(url):
            raise ValueError(
                f"broker url {shown}: credentials do not go in the URL; set username, and the password in "
                "the environment"
            )
        _scheme, _authority, rest = split_authority(url)
        if rest not in ("", "/"):
            raise ValueError(
                f"broker url {shown}: a broker URL is mqtt[s]://host[:port], with nothing after it"
            )
        if not parts.hostname:
            raise ValueError(f"broker url {shown} names no host")
        try:
            parts.port  # noqa: B018 - urlsplit checks the port lazily, on access
        except ValueError:
            raise ValueError(f"broker url {shown}: the port must be a number from 0 to 65535") from None
        return url

    @pydantic.model_validator(mode="after")
    def _check_tls(self) -> BrokerSettings:
        tls_files = (self.tls_ca_file, self.tls_cert_file, self.tls_key_file)
        if not self.tls and (any(tls_files) or self.tls_insecure):
            raise ValueError("TLS options need an mqtts:// broker url")
        require_tls_pair(
            self.tls_cert_file,
            self.tls_key_file,
            "a client certificate needs both tls_cert_file and tls_key_file",
        )
        if self.reconnect_max_seconds < self.reconnect_min_seconds:
            raise ValueError("reconnect_max_seconds must be >= reconnect_min_seconds")
        return self

    @property
    def tls(self) -> bool:
        return urlsplit(self.url).scheme == "mqtts"

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or (8883 if self.tls else 1883)


class BrokerConfigFile(Strict):
    """A config file with a `[broker]` table (a table's, the console's). Each subclass declares its
    `broker: BrokerSettings` among its own keys, in the order they are shown."""

    @model_validator(mode="before")
    @classmethod
    def _no_credentials_in_broker_url(cls, data: Any) -> Any:
        # Refused rather than used: a URL is printed and logged in many places, a password must not be.
        broker = data.get("broker") if isinstance(data, dict) else None
        url = broker.get("url") if isinstance(broker, dict) else None
        if isinstance(url, str) and url_has_credentials(url):
            raise ValueError(
                f"broker.url {redact_url(url)}: credentials do not go in the URL; set broker.username, and "
                "the password in the environment (TABLECTL__BROKER__PASSWORD=...)"
            )
        return data

    @classmethod
    def from_dict(
        cls,
        raw: Mapping[str, Any],
        *,
        environ: Mapping[str, str] | None,
        source: str,
        context: Mapping[str, Any] | None = None,
    ) -> Self:
        """The file's table with the environment's overrides, validated (with pydantic's validation
        `context`); ConfigError (one line) if not."""
        try:
            return cls.model_validate(_merged(raw, environ), context=context)
        except ValidationError as exc:
            raise ConfigError(f"{source}: {_describe(exc)}") from None


class TableConfig(BrokerConfigFile):
    table: TableSettings
    broker: BrokerSettings = BrokerSettings()
    devices: dict[str, DeviceSettings]
    game: dict[str, Any] = Field(
        default_factory=dict, description="the game's own settings (validated by the game)"
    )
    panel: PanelSettings = PanelSettings()
    retention: RetentionSettings = RetentionSettings()
    metrics: MetricsSettings = MetricsSettings()
    #: the game's settings model (its rules', given when the file was validated)
    _game_settings_model: type[BaseModel] = PrivateAttr()

    @model_validator(mode="after")
    def _devices_fit_the_game(self, info: ValidationInfo) -> TableConfig:
        # Every problem at once (`tablectl check-config` lists them), each named by its full key.
        problems = device_option_problems(self.devices)
        spec = _games_of(info)[self.table.game]
        self._game_settings_model = spec.settings
        for name, protocols in spec.devices.items():
            device = self.devices.get(name)
            if device is None:
                problems.append(_problem(f"devices.{name} is missing: a {self.table.game} table needs it"))
            elif device.protocol not in protocols:
                problems.append(
                    _problem(
                        f"devices.{name}.protocol {device.protocol!r} cannot serve {self.table.game}; "
                        f"use one of: {', '.join(protocols)}"
                    )
                )
        for name in spec.captured_devices:
            device = self.devices.get(name)
            if device is not None and device.capture is None:
                problems.append(
                    _problem(
                        f"devices.{name}.capture is missing: a {self.table.game} table keeps what its "
                        f'results are read from (e.g. capture = "/var/lib/tablectl/captures/{name}.jsonl")'
                    )
                )
        if self.table.manual_card_confirmation == "supervisor" and not spec.cards_entered_by_hand:
            problems.append(
                _problem(
                    f"table.manual_card_confirmation: a {self.table.game} table has no cards entered by "
                    'hand; leave it "dealer"'
                )
            )
        # validate the game section now, so a typo fails at start-up, not mid-shoe
        try:
            settings = self._game_settings_model.model_validate(self.game)
        except ValidationError as exc:
            problems += _located(("game",), exc)
        else:
            problems += self._optional_device_problems(spec, settings)
        if problems:
            raise ValidationError.from_exception_data(type(self).__name__, problems)
        return self

    def _optional_device_problems(self, spec: GameRules, settings: BaseModel) -> list[InitErrorDetails]:
        """An optional device (a card game's shuffler) is used when its game setting names it: the device
        must then be configured with a protocol that can play the role, and a device configured under the
        role's name must not be left unused (it would be waited for, yet never asked for anything)."""
        in_use = spec.optional_devices_in_use(settings)
        problems = []
        for role, protocols in spec.optional_devices.items():
            setting = spec.optional_device_setting(role)
            name = in_use.get(role)
            if name is None:
                if role in self.devices:
                    problems.append(
                        _problem(
                            f"devices.{role} is configured but game.{setting} is not set: "
                            f'set game.{setting} = "{role}" to use it, or remove the device'
                        )
                    )
                continue
            device = self.devices.get(name)
            if device is None:
                problems.append(_problem(f"game.{setting} names devices.{name}, which is not configured"))
            elif device.protocol not in protocols:
                problems.append(
                    _problem(
                        f"devices.{name}.protocol {device.protocol!r} cannot be the {role} of a "
                        f"{self.table.game} table; use one of: {', '.join(protocols)}"
                    )
                )
        return problems

    @property
    def topic_root(self) -> str:
        return f"studio/{self.table.studio_id}/table/{self.table.table_id}"

    def game_settings(self) -> BaseModel:
        """The `[game]` section read by the game's settings model."""
        return self._game_settings_model.model_validate(self.game)


def _problem(message: str) -> InitErrorDetails:
    return {"type": "value_error", "loc": (), "input": None, "ctx": {"error": ValueError(message)}}


def _located(prefix: tuple[str, ...], exc: ValidationError) -> list[InitErrorDetails]:
    """The errors of a nested model, named from the top of the file (`devices.wheel.options.<key>`)."""
    located: list[InitErrorDetails] = []
    for err in exc.errors():
        detail: InitErrorDetails = {"type": err["type"], "loc": (*prefix, *err["loc"]), "input": err["input"]}
        if "ctx" in err:
            detail["ctx"] = err["ctx"]
        located.append(detail)
    return located


def device_option_problems(devices: Mapping[str, Any]) -> list[InitErrorDetails]:
    """Check each device's `options` against its protocol's model, and keep them as the model read them.

    `devices` maps names to `DeviceSettings`, or to the raw tables of a file that did not validate as a
    whole (then only the devices whose protocol is known and options a table are checked)."""
    problems: list[InitErrorDetails] = []
    for name, device in devices.items():
        protocol: Any
        options: Any
        if isinstance(device, DeviceSettings):
            protocol, options = device.protocol, device.options
        elif isinstance(device, Mapping) and isinstance(device.get("options", {}), Mapping):
            protocol, options = device.get("protocol"), device.get("options", {})
        else:
            continue
        if protocol not in PROTOCOLS:
            continue
        try:
            model = options_model(protocol)
        except MissingExtra as exc:  # a camera without OpenCV installed
            problems.append(
                {"type": "value_error", "loc": ("devices", name), "input": None, "ctx": {"error": exc}}
            )
            continue
        try:
            read = model.model_validate(options)
        except ValidationError as exc:
            problems += _located(("devices", name, "options"), exc)
            continue
        if isinstance(device, DeviceSettings):
            # As read (`"1"` from the environment is 1.0 now); what is left out keeps the session's default.
            device.options = read.model_dump(exclude_unset=True)
    return problems


def _env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX):
            continue
        path = [part.lower() for part in key[len(ENV_PREFIX) :].split("__") if part]
        if not path:
            continue
        node = overrides
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return overrides


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def describe_each(exc: ValidationError) -> list[str]:
    """One line per problem, each naming its key."""
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {msg}" if where else msg)
    return lines


def _describe(exc: ValidationError) -> str:
    first, *rest = describe_each(exc)
    return f"{first} (and {len(rest)} more problem(s))" if rest else first


def _merged(raw: Mapping[str, Any], environ: Mapping[str, str] | None) -> dict[str, Any]:
    return _merge(dict(raw), _env_overrides(os.environ if environ is None else environ))


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The TOML table of a config file; ConfigError if it cannot be read or parsed."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def merged_config_file(path: str | Path, *, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The file's table with the environment's overrides, not validated (ConfigError if unreadable)."""
    return _merged(read_config_file(path), environ)


@dataclass(frozen=True, slots=True)
class ConfigLoader:
    """The one way a table's file is read: validated against `games`, the games the controller runs (name ->
    its rules), which whoever loads it hands in (`controller.table_build.TABLE_CONFIGS`)."""

    games: Mapping[str, GameRules]

    def from_dict(
        self, raw: Mapping[str, Any], *, environ: Mapping[str, str] | None = None, source: str = "config"
    ) -> TableConfig:
        """A table's config from its TOML table (and the environment's overrides); ConfigError if invalid."""
        return TableConfig.from_dict(raw, environ=environ, source=source, context=self._context)

    def load(self, path: str | Path, *, environ: Mapping[str, str] | None = None) -> TableConfig:
        """A table's config from its file; ConfigError (one line) if it cannot be read or is invalid."""
        return self.from_dict(read_config_file(path), environ=environ, source=str(path))

    def problems(
        self, path: str | Path, *, environ: Mapping[str, str] | None = None
    ) -> tuple[TableConfig | None, list[str]]:
        """The config of a file and every problem of it (not only the first), each `<file>: <key>: <what>`.

        The config is None when it does not validate; its device options are checked even then."""
        try:
            raw = read_config_file(path)
        except ConfigError as exc:
            return None, [str(exc)]
        merged = _merged(raw, environ)
        try:
            return TableConfig.model_validate(merged, context=self._context), []
        except ValidationError as exc:
            lines = describe_each(exc)
        # A section's own errors hide nothing of another's: pydantic checks the whole file's cross-section
        # rules (the devices a game needs, the game's own settings) only once every field is valid, so the
        # sections that can be checked alone are checked here too, each once.
        devices = merged.get("devices")
        if isinstance(devices, Mapping):
            option_problems = device_option_problems(devices)
            if option_problems:
                extra = describe_each(ValidationError.from_exception_data("TableConfig", option_problems))
                lines += [line for line in extra if line not in lines]
        lines += [line for line in self._game_section_problems(merged) if line not in lines]
        return None, [f"{path}: {line}" for line in lines]

    @property
    def _context(self) -> dict[str, Any]:
        return {_GAMES_CONTEXT: self.games}

    def _game_section_problems(self, merged: Mapping[str, Any]) -> list[str]:
        """The `[game]` section checked against the game `[table] game` names, if it names one."""
        table = merged.get("table")
        game = table.get("game") if isinstance(table, Mapping) else None
        section = merged.get("game", {})
        if not isinstance(game, str) or game not in self.games or not isinstance(section, Mapping):
            return []
        try:
            self.games[game].settings.model_validate(section)
        except ValidationError as exc:
            located = _located(("game",), exc)
            return describe_each(ValidationError.from_exception_data("TableConfig", located))
        return []
