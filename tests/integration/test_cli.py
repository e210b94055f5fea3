"""The CLI's operator errors: one line on stderr, non-zero exit, never a traceback.

Its integration tests; the unit ones are in `tests/unit/core/test_cli.py`, the e2e ones in
`tests/e2e/test_cli.py`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from drivers.line.framing import encode_line
from tests.helpers.cli import GOOD, tablectl, write
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration


def test_replay_missing_capture(tmp_path: Path) -> None:
    result = tablectl("replay", "--game", "baccarat", "--protocol", "shoe-line", str(tmp_path / "none.jsonl"))
    assert result.returncode == 2
    assert result.stderr.strip() == f"tablectl: error: capture {tmp_path / 'none.jsonl'} not found"


def test_unknown_protocol_on_replay_is_a_usage_error() -> None:
    result = tablectl("replay", "--game", "baccarat", "--protocol", "nope", "x")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_replay_takes_the_table_settings_from_a_config(tmp_path: Path) -> None:
    replay_with_config = ["replay", "--game", "baccarat", "--protocol", "shoe-line"]
    replay_with_config += ["--config", str(REPO / "examples" / "baccarat.toml")]
    capture = tmp_path / "shoe.bin"
    capture.write_bytes(b"HELLO SIM 1 1*00\r\n")  # a bad checksum: counted, nothing else happens
    result = tablectl(*replay_with_config, str(capture))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    capture.write_bytes(b"CARD 0001 AS*07\r\n")
    result = tablectl(*replay_with_config, str(capture))
    sources = {line.split('"source":"')[1].split('"')[0] for line in result.stdout.splitlines()}
    assert sources == {"studio/lisbon-1/table/bac-01"}


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


def test_check_config_clean_file(tmp_path: Path) -> None:
    config = write(tmp_path, GOOD.format(data=tmp_path / "data", protocol="shoe-line", port="/dev/null"))
    result = tablectl("check-config", config)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == f"{config}: OK\n"
    shown = tablectl("check-config", "--config", config, "--show")  # the former spelling still works
    assert shown.returncode == 0 and '"table_id": "bac-01"' in shown.stdout


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
