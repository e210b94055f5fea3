"""Configuration: valid examples load; every kind of mistake gives one clear line naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import ConfigError, config_from_dict, load_config

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def base() -> dict:
    return {
        "table": {"studio_id": "s1", "table_id": "bac-01", "game": "baccarat", "data_dir": "/tmp/x"},
        "devices": {"shoe": {"protocol": "shoe-line", "port": "/dev/ttyACM0"}},
        "game": {"decks": 8},
    }


@pytest.mark.parametrize("name", ["baccarat.toml", "roulette.toml"])
def test_examples_load(name: str) -> None:
    config = load_config(EXAMPLES / name, environ={})
    assert config.topic_root.startswith("studio/lisbon-1/table/")
    config.game_settings()


def test_environment_overrides_file() -> None:
    config = config_from_dict(
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
        config_from_dict(raw, environ={}, source="table.toml")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("table.toml: ")
    assert expected in message


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[table\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
