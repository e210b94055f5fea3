"""Configuration: valid examples load; every kind of mistake gives one clear line naming the key."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from controller import config as config_module
from controller.checks import check_config, port_problem
from controller.config import ConfigError, ConfigLoader, TableConfig
from controller.table_build import TABLE_CONFIGS
from drivers.registry import CAMERA_PROTOCOLS, PROTOCOLS, options_model, session_class
from drivers.session import SessionOptions
from tests.helpers.paths import REPO

pytestmark = pytest.mark.unit

EXAMPLES = REPO / "examples"


def base() -> dict:
    return {
        "table": {"studio_id": "s1", "table_id": "bac-01", "game": "baccarat", "data_dir": "/tmp/x"},
        "devices": {"shoe": {"protocol": "shoe-line", "port": "/dev/ttyACM0"}},
        "game": {"decks": 8},
    }


@pytest.mark.parametrize("name", ["baccarat.toml", "roulette.toml"])
def test_examples_load(name: str) -> None:
    config = TABLE_CONFIGS.load(EXAMPLES / name, environ={})
    assert config.topic_root.startswith("studio/lisbon-1/table/")
    config.game_settings()


def test_environment_overrides_file() -> None:
    config = TABLE_CONFIGS.from_dict(
        base(), environ={"TABLECTL__BROKER__URL": "mqtts://b:8883", "TABLECTL__GAME__DECKS": "6"}
    )
    assert config.broker.url == "mqtts://b:8883"
    assert config.game_settings().decks == 6  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda c: c["devices"]["shoe"].update(protocol="shoe-xml"),
            "devices.shoe.protocol: unknown protocol",
        ),
        (lambda c: c["table"].update(game="poker"), "table.game: unknown game 'poker'"),
        (lambda c: c["table"].update(table_id="bac/01"), "table.table_id"),
        (lambda c: c["devices"].pop("shoe"), "devices.shoe is missing"),
        (lambda c: c["devices"]["shoe"].update(protocol="cammegh-ss2"), "cannot serve baccarat"),
        (lambda c: c["game"].update(decks="many"), "decks"),
        (lambda c: c["game"].update(deks=8), "deks"),
        (lambda c: c.update(brokr={}), "brokr"),
        (lambda c: c["devices"]["shoe"].update(baudrate=-1), "devices.shoe.baudrate"),
    ],
)
def test_bad_config_names_the_key(mutate, expected: str) -> None:
    raw = base()
    mutate(raw)
    with pytest.raises(ConfigError) as info:
        TABLE_CONFIGS.from_dict(raw, environ={}, source="table.toml")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("table.toml: ")
    assert expected in message


class ScaleSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    grams: int = 100


@dataclass(frozen=True)
class ScaleGame:
    """A game of this test's own: the config checks a table against the games it is handed, whatever they
    are."""

    devices: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {"scale": ("shoe-line",)})
    captured_devices: tuple[str, ...] = ()
    optional_devices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cards_entered_by_hand: bool = False
    settings: type[BaseModel] = ScaleSettings

    def optional_device_setting(self, role: str) -> str:
        return f"{role}_device"

    def optional_devices_in_use(self, settings: BaseModel) -> dict[str, str]:
        return {}


def test_a_table_is_checked_against_the_games_its_loader_is_given() -> None:
    loader = ConfigLoader({"weighing": ScaleGame()})
    raw = {
        "table": {"table_id": "w-01", "game": "weighing"},
        "devices": {"scale": {"protocol": "shoe-line", "port": "/dev/null"}},
        "game": {"grams": "250"},
    }
    assert loader.from_dict(raw, environ={}).game_settings() == ScaleSettings(grams=250)
    with pytest.raises(ConfigError, match=r"^config: game\.gram: Extra inputs are not permitted"):
        loader.from_dict({**raw, "game": {"gram": 1}}, environ={})
    with pytest.raises(ConfigError, match=r"^config: table\.game: unknown game 'baccarat'; known: weighing$"):
        loader.from_dict(base(), environ={})
    with pytest.raises(
        ConfigError, match=r"^config: table\.game: unknown game 'weighing'; known: andar_bahar, "
    ):
        TABLE_CONFIGS.from_dict(raw, environ={})


def test_a_table_config_is_never_validated_without_its_games() -> None:
    with pytest.raises(TypeError, match=r"use ConfigLoader\(games\)"):
        TableConfig.model_validate(base())


def test_the_config_module_names_no_game_nor_web_app() -> None:
    """The games come in from whoever loads a file (`controller.table_build.TABLE_CONFIGS`): the settings
    module imports neither the games' registry nor the panel or the console, not even inside a function."""
    tree = ast.parse(Path(inspect.getfile(config_module)).read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported, "no imports read"
    assert not {
        name
        for name in imported
        if name.startswith(("controller.games", "controller.panel", "controller.console"))
    }


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        TABLE_CONFIGS.load(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[table\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        TABLE_CONFIGS.load(bad)


# --- device options: each protocol's model, checked at load --------------------------------------------


def roulette() -> dict:
    return {
        "table": {"studio_id": "s1", "table_id": "rou-01", "game": "roulette", "data_dir": "/tmp/x"},
        "devices": {"wheel": {"protocol": "cammegh-ss2", "port": "/dev/ttyS0", "options": {}}},
    }


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"pol_interval": 1}, "devices.wheel.options.pol_interval: Extra inputs are not permitted"),
        (
            {"poll_interval": 0.01},
            "devices.wheel.options.poll_interval: Input should be greater than or equal",
        ),
        ({"link_timeout": "soon"}, "devices.wheel.options.link_timeout: Input should be a valid number"),
        ({"user_start": "maybe"}, "devices.wheel.options.user_start"),
    ],
)
def test_bad_device_option_names_its_key(options: dict, expected: str) -> None:
    raw = roulette()
    raw["devices"]["wheel"]["options"] = options
    with pytest.raises(ConfigError) as info:
        TABLE_CONFIGS.from_dict(raw, environ={}, source="table.toml")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"table.toml: {expected}")


def test_a_protocol_without_options_refuses_any() -> None:
    raw = base()
    raw["devices"]["shoe"]["options"] = {"watchdog": 5}
    with pytest.raises(ConfigError, match=r"^config: devices\.shoe\.options\.watchdog: Extra inputs"):
        TABLE_CONFIGS.from_dict(raw, environ={})


def test_options_are_kept_as_read_and_build_the_session() -> None:
    raw = roulette()
    raw["devices"]["wheel"]["options"] = {"single_line": False}
    environ = {"TABLECTL__DEVICES__WHEEL__OPTIONS__POLL_INTERVAL": "1"}
    config = TABLE_CONFIGS.from_dict(raw, environ=environ)
    options = config.devices["wheel"].options
    assert options == {"single_line": False, "poll_interval": 1.0}  # defaults stay the session's
    session = session_class("cammegh-ss2")("wheel", **options)
    assert session.poll_interval == 1.0 and session.single_line is False


@pytest.mark.parametrize("protocol", sorted(set(PROTOCOLS) - CAMERA_PROTOCOLS))
def test_every_protocol_declares_its_constructor_options(protocol: str) -> None:
    """The options model is the session constructor's keywords, defaults included (they cannot drift)."""
    model = options_model(protocol)
    assert issubclass(model, SessionOptions) and model.model_config.get("extra") == "forbid"
    parameters = inspect.signature(session_class(protocol).__init__).parameters
    keywords = {n: p.default for n, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert {name: field.default for name, field in model.model_fields.items()} == keywords


def test_a_camera_declares_its_options_and_has_no_byte_session() -> None:
    model = options_model("camera")
    assert model.model_config.get("extra") == "forbid" and "frame_timeout_s" in model.model_fields
    with pytest.raises(ValueError, match="no byte session"):
        session_class("camera")


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    raw = roulette()
    raw["devices"]["wheel"]["options"] = {"pol_interval": 1, "link_timeout": 0}
    raw["devices"]["ball-camera"] = {"protocol": "shoe-line", "port": "/dev/null", "options": {"x": 1}}
    raw["game"] = {"round_gap_seconds": "long"}
    path = tmp_path / "table.toml"
    path.write_text(toml(raw))
    config, problems = TABLE_CONFIGS.problems(path, environ={})
    assert config is None
    assert {line.split(": ")[1] for line in problems} == {
        "devices.wheel.options.pol_interval",
        "devices.wheel.options.link_timeout",
        "devices.ball-camera.options.x",
        "game.round_gap_seconds",
    }
    assert all(line.startswith(f"{path}: ") and "\n" not in line for line in problems)


def test_option_problems_are_listed_even_when_the_file_has_others(tmp_path: Path) -> None:
    raw = roulette()
    raw["devices"]["wheel"]["options"] = {"pol_interval": 1}
    raw["table"]["table_id"] = "rou/01"  # fails the table section: the game check does not even run
    path = tmp_path / "table.toml"
    path.write_text(toml(raw))
    _, problems = TABLE_CONFIGS.problems(path, environ={})
    keys = [line.split(": ")[1] for line in problems]
    assert keys == ["table.table_id", "devices.wheel.options.pol_interval"]


# --- check-config: what a valid file still needs to start ------------------------------------------------


def test_check_config_clean(tmp_path: Path) -> None:
    raw = roulette()
    raw["table"]["data_dir"] = str(tmp_path / "data" / "new")  # created at start: fine
    raw["devices"]["wheel"]["port"] = "/dev/null"
    raw["devices"]["wheel"]["capture"] = str(tmp_path / "captures" / "wheel.jsonl")
    path = tmp_path / "table.toml"
    path.write_text(toml(raw))
    assert check_config(path, environ={}) == []


def test_check_config_lists_ports_and_paths(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    raw = base()
    raw["table"]["data_dir"] = str(blocker)
    raw["devices"]["shoe"]["port"] = str(tmp_path / "no-such-tty")
    raw["devices"]["shoe"]["capture"] = str(blocker / "shoe.jsonl")
    path = tmp_path / "table.toml"
    path.write_text(toml(raw))
    problems = check_config(path, environ={})
    assert [line.split(": ")[1] for line in problems] == [
        "devices.shoe.port",
        "devices.shoe.capture",
        "table.data_dir",
    ]
    assert f"serial port {tmp_path / 'no-such-tty'} not found" in problems[0]


@pytest.mark.parametrize(
    ("port", "problem"),
    [
        ("socket://10.0.0.5:4001", None),
        ("rfc2217://shoe-server:2217", None),
        ("loop://", None),
        ("socket://10.0.0.5", "needs a host and a port"),
        ("rfc2217://:2217", "needs a host and a port"),
        ("socket://host:port", "needs a host and a port"),
        ("tcp://10.0.0.5:4001", "unknown URL scheme 'tcp://'"),
        ("/dev/null", None),
        ("/dev/tablectl-no-such-port", "not found"),
    ],
)
def test_port_problems(port: str, problem: str | None) -> None:
    found = port_problem(port)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


@pytest.mark.parametrize(
    "port",
    [
        "socket://shoe:S3cr3tPW@shoe-server",
        "tcp://shoe:S3cr3tPW@10.0.0.5:4001",
        "socket://[shoe:S3cr3tPW]:4001",  # urllib's own error would quote the bracketed part
    ],
)
def test_a_port_problem_never_quotes_a_password_in_the_url(port: str) -> None:
    found = port_problem(port)
    assert found is not None and "S3cr3tPW" not in found


def test_check_config_show_names_no_pin_hash_nor_a_cameras_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from controller.cli import main
    from controller.pins import hash_pin

    pin_hash = hash_pin("246810", log2_n=10)
    raw = roulette()
    raw["table"]["data_dir"] = str(tmp_path / "data")
    raw["devices"]["wheel"]["port"] = "/dev/null"
    raw["devices"]["camera"] = {"protocol": "camera", "port": "rtsp://admin:CamPassw0rd@cam.lan/stream1"}
    raw["panel"] = {"dealers": {"d104": pin_hash}}
    path = tmp_path / "table.toml"
    path.write_text(toml(raw))
    assert main(["check-config", str(path), "--show"]) == 0
    shown = capsys.readouterr().out
    assert '"d104": "**********"' in shown and pin_hash.rpartition("$")[2] not in shown
    assert '"port": "rtsp://***@cam.lan/***"' in shown and "CamPassw0rd" not in shown


def toml(raw: dict) -> str:
    """Just enough TOML for these configs: tables of strings, numbers, booleans and inline tables."""

    def value(v: object) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + "}"
        return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines: list[str] = []
    for section, table in raw.items():
        if section == "devices":
            for name, device in table.items():
                lines.append(f'[devices."{name}"]')
                lines += [f"{k} = {value(v)}" for k, v in device.items()]
        else:
            lines.append(f"[{section}]")
            lines += [f"{k} = {value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"
