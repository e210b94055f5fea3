"""The CLI's operator errors: one line on stderr, non-zero exit, never a traceback."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from drivers.line.framing import encode_line
from tests.helpers.paths import REPO


def tablectl(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "table.toml"
    path.write_text(text)
    return str(path)


GOOD = """
[table]
table_id = "bac-01"
game = "baccarat"
data_dir = "{data}"
[devices.shoe]
protocol = "{protocol}"
port = "{port}"
"""


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("protocol", "port", "expected"),
    [
        ("shoe-xml", "/dev/null", "devices.shoe.protocol: unknown protocol 'shoe-xml'"),
        ("shoe-line", "/dev/tablectl-no-such-shoe", "serial port /dev/tablectl-no-such-shoe not found"),
    ],
)
def test_run_fails_with_one_clear_line(tmp_path: Path, protocol: str, port: str, expected: str) -> None:
    config = write(tmp_path, GOOD.format(data=tmp_path, protocol=protocol, port=port))
    result = tablectl("run", "--config", config)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tablectl: error: ")
    assert expected in lines[0]
    assert "Traceback" not in result.stderr


@pytest.mark.e2e
def test_invalid_toml_and_missing_file(tmp_path: Path) -> None:
    result = tablectl("run", "--config", write(tmp_path, "[table\n"))
    assert result.returncode == 2 and "not valid TOML" in result.stderr and "Traceback" not in result.stderr
    result = tablectl("run", "--config", str(tmp_path / "nope.toml"))
    assert result.returncode == 2 and "no such config file" in result.stderr


@pytest.mark.integration
def test_replay_missing_capture(tmp_path: Path) -> None:
    result = tablectl("replay", "--game", "baccarat", "--protocol", "shoe-line", str(tmp_path / "none.jsonl"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"tablectl: error: capture {tmp_path / 'none.jsonl'} not found"


@pytest.mark.integration
def test_unknown_protocol_on_replay_is_a_usage_error() -> None:
    result = tablectl("replay", "--game", "baccarat", "--protocol", "nope", "x")
    assert result.returncode == 2 and "invalid choice" in result.stderr


@pytest.mark.integration
def test_replay_takes_the_table_settings_from_a_config(tmp_path: Path) -> None:
    capture = tmp_path / "shoe.bin"
    capture.write_bytes(b"HELLO SIM 1 1*00\r\n")  # a bad checksum: counted, nothing else happens
    result = tablectl(
        "replay",
        "--game",
        "baccarat",
        "--protocol",
        "shoe-line",
        "--config",
        str(REPO / "examples" / "baccarat.toml"),
        str(capture),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    capture.write_bytes(b"CARD 0001 AS*07\r\n")
    result = tablectl(
        "replay",
        "--game",
        "baccarat",
        "--protocol",
        "shoe-line",
        "--config",
        str(REPO / "examples" / "baccarat.toml"),
        str(capture),
    )
    sources = {line.split('"source":"')[1].split('"')[0] for line in result.stdout.splitlines()}
    assert sources == {"studio/lisbon-1/table/bac-01"}


@pytest.mark.e2e
def test_unusable_data_dir_is_one_clear_line(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the data directory should be")
    config = write(tmp_path, GOOD.format(data=blocker, protocol="shoe-line", port="/dev/null"))
    result = tablectl("run", "--config", config)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("tablectl: error: table.data_dir ")
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.unit
def test_replay_of_a_game_without_replay_rules_is_refused(monkeypatch) -> None:
    from controller.config import ConfigError
    from controller.games import GAMES
    from controller.replay import replay_config

    monkeypatch.setitem(
        GAMES, "andar_bahar", dataclasses.replace(GAMES["andar_bahar"], replay_overrides=None)
    )
    with pytest.raises(ConfigError, match="andar_bahar captures cannot be replayed yet"):
        replay_config("andar_bahar", "shoe-line")
    # a table's own capture (with its `meta` record) needs no replay policy
    assert replay_config("andar_bahar", "shoe-line", meta={"table_id": "ab-1", "settings": {}})


@pytest.mark.integration
def test_andar_bahar_device_traffic_replays_with_its_replay_policy(tmp_path: Path) -> None:
    capture = tmp_path / "ab.bin"
    # the game card, then Andar and Bahar in turn until a card of its rank (a raw dump: no times)
    lines = ["HELLO SIM 1.0 1", "CARD 0001 7H", "CARD 0002 2C", "CARD 0003 9D", "CARD 0004 7S"]
    capture.write_bytes(b"".join(encode_line(line) for line in lines))
    result = tablectl("replay", "--game", "andar_bahar", "--protocol", "shoe-line", str(capture))
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    results = [e["data"] for e in events if e["type"] == "round.result"]
    assert results and results[0]["winner"] == "andar" and results[0]["game_card"] == "7H"


@pytest.mark.e2e
def test_run_with_a_mistyped_option_is_one_clear_line(tmp_path: Path) -> None:
    config = write(
        tmp_path,
        GOOD.format(data=tmp_path, protocol="shoe-line", port="/dev/null")
        + "[devices.shoe.options]\nwatchdg = 5\n",
    )
    result = tablectl("run", "--config", config)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"tablectl: error: {config}: devices.shoe.options.watchdg: Extra inputs are not permitted"
    ]


@pytest.mark.integration
def test_check_config_clean_file(tmp_path: Path) -> None:
    config = write(tmp_path, GOOD.format(data=tmp_path / "data", protocol="shoe-line", port="/dev/null"))
    result = tablectl("check-config", config)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"{config}: OK\n"
    shown = tablectl("check-config", "--config", config, "--show")  # the former spelling still works
    assert shown.returncode == 0 and '"table_id": "bac-01"' in shown.stdout


@pytest.mark.integration
def test_check_config_lists_every_problem(tmp_path: Path) -> None:
    text = GOOD.format(data=tmp_path, protocol="shoe-line", port="/dev/tablectl-no-such-shoe")
    text += f'capture = "{tmp_path / "config-is-not-a-dir" / "shoe.jsonl"}"\n'
    (tmp_path / "config-is-not-a-dir").write_text("")
    config = write(tmp_path, text)
    result = tablectl("check-config", config)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert [line.split(": ")[:2] for line in lines] == [
        [config, "devices.shoe.port"],
        [config, "devices.shoe.capture"],
    ]
    assert "Traceback" not in result.stderr

    config = write(
        tmp_path,
        GOOD.format(data=tmp_path, protocol="shoe-line", port="/dev/null")
        + "[devices.shoe.options]\nwatchdg = 5\n[game]\ndecks = 0\nseed = 1\n",
    )
    result = tablectl("check-config", config)
    assert result.returncode == 1
    assert {line.split(": ")[1] for line in result.stdout.splitlines()} == {
        "devices.shoe.options.watchdg",
        "game.decks",
        "game.seed",
    }


@pytest.mark.integration
def test_check_config_lists_a_schema_error_a_missing_port_and_a_bad_game_setting_in_one_run(
    tmp_path: Path,
) -> None:
    # three sections wrong at once: [broker] (a schema error), the shoe's port (a file check), [game] (the
    # game's own settings); before, the first hid the others until it was fixed
    text = GOOD.format(data=tmp_path, protocol="shoe-line", port="/dev/tablectl-no-such-shoe")
    text += '[broker]\nmax_payload_bytes = "lots"\n[game]\nbetting_seconds = "x"\nround_gap_seconds = -1\n'
    config = write(tmp_path, text)
    result = tablectl("check-config", config)
    assert result.returncode == 1, result.stdout + result.stderr
    keys = [line.split(": ")[1] for line in result.stdout.splitlines()]
    assert sorted(keys) == sorted(
        ["broker.max_payload_bytes", "devices.shoe.port", "game.betting_seconds", "game.round_gap_seconds"]
    ), result.stdout
    assert "serial port /dev/tablectl-no-such-shoe not found" in result.stdout
    assert "Traceback" not in result.stderr
    # a type error in [game] alone does not hide the missing port either
    text = GOOD.format(data=tmp_path, protocol="shoe-line", port="/dev/tablectl-no-such-shoe")
    config = write(tmp_path, text + '[game]\nbetting_seconds = "x"\n')
    keys = [line.split(": ")[1] for line in tablectl("check-config", config).stdout.splitlines()]
    assert sorted(keys) == ["devices.shoe.port", "game.betting_seconds"]


@pytest.mark.integration
def test_building_the_parser_does_not_import_opencv() -> None:
    """OpenCV is only for the dice tools: every other command starts without it."""
    code = (
        "import sys, controller.cli; controller.cli.build_parser(); "
        "print(sorted(m for m in ('cv2', 'numpy') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.integration
def test_an_error_raised_by_a_command_module_is_one_line_under_python_m() -> None:
    # the PIN tool lives in the panel's module and raises `controller.cli.OperatorError`: `python -m` runs
    # cli.py as `__main__`, which must still catch it (one line, usage exit code, no traceback)
    result = subprocess.run(
        [sys.executable, "-m", "controller.cli", "panel-hash-pin"],
        input="12\n",
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == "tablectl: error: a PIN is 4 to 12 digits"
