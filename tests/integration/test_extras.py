"""A plain `pip install .` runs a card or roulette table: OpenCV, numpy (the `camera` extra) and amqtt (the
`demo` extra) are never imported on those paths. What needs one says so in one line."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

#: the packages of the extras: blocked in the child, as if not installed
EXTRA_MODULES = ("cv2", "numpy", "amqtt")

#: what runs first in the child: the packages named in BLOCKED cannot be imported, as if not installed
PRELUDE = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Block())
"""

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


def without_extras(
    code: str, *args: str, blocked: tuple[str, ...] = EXTRA_MODULES
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", f"BLOCKED = {blocked!r}\n" + PRELUDE + code, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def tablectl_without_extras(
    *args: str, blocked: tuple[str, ...] = EXTRA_MODULES
) -> subprocess.CompletedProcess[str]:
    code = "from controller.cli import main\nsys.exit(main(sys.argv[1:]))"
    return without_extras(code, *args, blocked=blocked)


@pytest.mark.integration
def test_the_service_modules_import_without_the_extras() -> None:
    modules = "controller.service controller.cli controller.runtime controller.bus controller.machine "
    modules += "controller.replay controller.panel.app controller.metrics controller.checks drivers.registry"
    result = without_extras(f"for m in {modules.split()!r}: __import__(m)\nprint('ok')")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


@pytest.mark.integration
@pytest.mark.parametrize("table", [BACCARAT, ROULETTE], ids=["baccarat", "roulette"])
def test_check_config_of_a_card_or_roulette_table_needs_no_extra(tmp_path: Path, table: str) -> None:
    config = tmp_path / "table.toml"
    config.write_text(table.format(data=tmp_path))
    result = tablectl_without_extras("check-config", str(config))
    assert result.returncode == 0, result.stderr
    assert "OpenCV" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.integration
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


@pytest.mark.integration
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


@pytest.mark.e2e
def test_a_card_demo_needs_amqtt_but_not_opencv() -> None:
    result = tablectl_without_extras("demo", "--game", "baccarat", "--rounds", "1", blocked=("cv2", "numpy"))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.unit
def test_the_extras_hold_what_only_some_tables_need() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = " ".join(project["dependencies"])
    for package in ("opencv", "numpy", "amqtt"):
        assert package not in runtime
    extras = project["optional-dependencies"]
    assert any(d.startswith("opencv-python-headless") for d in extras["camera"])
    assert any(d.startswith("numpy") for d in extras["camera"])
    assert any(d.startswith("amqtt") for d in extras["demo"])
    assert "tablectl[camera]" in extras["demo"]  # the sic bo demo reads dice from its camera
    assert "tablectl[camera,demo]" in extras["test"]


@pytest.mark.integration
def test_the_dice_tools_without_opencv_say_what_to_install(tmp_path: Path) -> None:
    for tool in (["dice", "read", "--calibration"], ["calibrate", "dice-check", "--calibration"]):
        result = tablectl_without_extras(*tool, str(tmp_path / "cal.json"), str(tmp_path / "x.png"))
        assert result.returncode == 2
        assert (result.stdout + result.stderr).strip().splitlines() == [
            "tablectl: error: the dice reader needs OpenCV: pip install 'tablectl[camera]'"
        ]


@pytest.mark.integration
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
