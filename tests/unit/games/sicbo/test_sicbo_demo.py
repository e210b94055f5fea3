"""`tablectl demo --game sicbo`: the simulated shaker, a synthetic camera drawing its dice, whole rounds as
published; and the panel's frame route, which shows the dealer the frame the dice were read from.

Its unit tests; the e2e ones are in `tests/e2e/test_sicbo_demo.py`."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from controller.panel.app import _camera_frame

pytestmark = pytest.mark.unit


def test_the_panel_serves_a_kept_frame_and_nothing_else(tmp_path: Path) -> None:
    frames = tmp_path / "camera-frames"
    frames.mkdir()
    name = "00000042-20270115T080000.000Z.png"
    (frames / name).write_bytes(b"\x89PNG fake")
    (tmp_path / "secret.png").write_bytes(b"no")
    service: Any = SimpleNamespace(
        cameras={"camera": SimpleNamespace(capture=SimpleNamespace(frames_dir=frames))}
    )
    served = _camera_frame(service, "camera", name)
    assert served.status_code == 200 and served.media_type == "image/png"
    for device, wanted in (
        ("camera", "../secret.png"),
        ("camera", "secret.png"),
        ("camera", "00000043-20270115T080000.000Z.png"),  # not kept
        ("shaker", name),
    ):
        assert _camera_frame(service, device, wanted).status_code == 404, wanted


@pytest.mark.slow
def test_the_demo_cameras_calibration_is_what_the_code_fits(tmp_path: Path) -> None:
    """The committed calibration of the demo's synthetic camera is refitted whenever the calibration's code
    changes (`python -m calibration.shaker_scene`): a refit agrees with it to floating-point noise."""
    from calibration.shaker_scene import write_calibration
    from drivers.dice.shaker_scene import CALIBRATION_FILE

    fitted = json.loads(write_calibration(tmp_path / "calibration.json").read_text(encoding="utf-8"))
    committed = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))
    assert_close(fitted, committed, "")


def assert_close(fitted: Any, committed: Any, where: str) -> None:
    if isinstance(committed, dict):
        assert isinstance(fitted, dict) and fitted.keys() == committed.keys(), where
        for key in committed:
            assert_close(fitted[key], committed[key], f"{where}.{key}")
    elif isinstance(committed, list):
        assert isinstance(fitted, list) and len(fitted) == len(committed), where
        for index, (mine, theirs) in enumerate(zip(fitted, committed, strict=True)):
            assert_close(mine, theirs, f"{where}[{index}]")
    elif isinstance(committed, float) and not isinstance(committed, bool):
        assert abs(fitted - committed) <= 1e-6 * max(1.0, abs(committed)), (where, fitted, committed)
    else:
        assert fitted == committed, (where, fitted, committed)
