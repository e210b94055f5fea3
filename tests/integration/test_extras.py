"""A plain `pip install .` runs a card or roulette table: OpenCV, numpy (the `camera` extra) and amqtt (the
`demo` extra) are never imported on those paths. What needs one says so in one line.

Its integration tests; the unit ones are in `tests/unit/core/test_extras.py`, the e2e ones in
`tests/e2e/test_extras.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.extras import tablectl_without_extras, without_extras

pytestmark = pytest.mark.integration

BACCARAT = """
[table]
table_id = "bac-01"
game = "baccarat"
data_dir = "{data}"
[devices.shoe]
protocol = "shoe-line"
port = "socket://127.0.0.1:9"
"""
ROULETTE = """
[table]
table_id = "rou-01"
game = "roulette"
data_dir = "{data}"
[devices.wheel]
protocol = "cammegh-ss2"
port = "socket://127.0.0.1:9"
"""
SICBO = """
[table]
table_id = "sic-01"
game = "sicbo"
data_dir = "{data}"
[devices.shaker]
protocol = "shaker-line"
port = "socket://127.0.0.1:9"
[devices.camera]
protocol = "camera"
port = "synthetic"
capture = "{data}/camera.jsonl"
"""


def test_the_service_modules_import_without_the_extras() -> None:
    modules = "controller.service controller.cli controller.runtime controller.bus controller.machine "
    modules += "controller.replay controller.panel.app controller.metrics controller.checks drivers.registry"
    result = without_extras(f"for m in {modules.split()!r}: __import__(m)\nprint('ok')")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize("table", [BACCARAT, ROULETTE], ids=["baccarat", "roulette"])
def test_check_config_of_a_card_or_roulette_table_needs_no_extra(tmp_path: Path, table: str) -> None:
    config = tmp_path / "table.toml"
    config.write_text(table.format(data=tmp_path))
    result = tablectl_without_extras("check-config", str(config))
    assert result.returncode == 0, result.stderr
    assert "OpenCV" not in result.stderr and "Traceback" not in result.stderr


def test_a_configured_camera_without_opencv_is_one_clear_line(tmp_path: Path) -> None:
    config = tmp_path / "table.toml"
    config.write_text(SICBO.format(data=tmp_path))
    result = tablectl_without_extras("check-config", str(config))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"{config}: devices.camera: the camera needs OpenCV: pip install 'tablectl[camera]'" in (
        result.stdout + result.stderr
    )
    # the service's own load says it too, in one line
    result = tablectl_without_extras("run", "--config", str(config))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"tablectl: error: {config}: devices.camera: the camera needs OpenCV: pip install 'tablectl[camera]'"
    ]


def test_the_demo_without_its_extra_says_what_to_install() -> None:
    result = tablectl_without_extras("demo", "--game", "baccarat", "--rounds", "1")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "tablectl: error: the demo's broker needs amqtt: pip install 'tablectl[demo]' (or give --mqtt-url)"
    ]
    result = tablectl_without_extras(
        "demo", "--game", "sicbo", "--rounds", "1", "--mqtt-url", "mqtt://127.0.0.1:9"
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "tablectl: error: the camera needs OpenCV: pip install 'tablectl[camera]'"
    ]


def test_the_dice_tools_without_opencv_say_what_to_install(tmp_path: Path) -> None:
    for tool in (["dice", "read", "--calibration"], ["calibrate", "dice-check", "--calibration"]):
        result = tablectl_without_extras(*tool, str(tmp_path / "cal.json"), str(tmp_path / "x.png"))
        assert result.returncode == 2
        assert (result.stdout + result.stderr).strip().splitlines() == [
            "tablectl: error: the dice reader needs OpenCV: pip install 'tablectl[camera]'"
        ]


def test_the_help_lists_every_command_and_calibration_tool_without_opencv() -> None:
    """Building the whole parser imports each tool's CLI module, never the libraries behind its commands."""
    result = tablectl_without_extras("--help")
    assert result.returncode == 0, result.stderr
    for command in ("run", "demo", "check-config", "schema", "dice", "calibrate"):
        assert command in result.stdout
    result = tablectl_without_extras("calibrate", "--help")
    assert result.returncode == 0, result.stderr
    for tool in ("wheel-sensors", "wheel-bias", "dice", "dice-check"):
        assert tool in result.stdout
