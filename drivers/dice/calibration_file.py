"""A dice calibration file as the reader takes it (`tablectl calibrate dice` writes them): read, its kind and
version checked. Apart from `reader`, which does image processing only."""

from __future__ import annotations

import json
from pathlib import Path

from drivers.dice.reader import CALIBRATION_KIND, CALIBRATION_VERSION, DiceCalibration


class CalibrationFileError(ValueError):
    """A dice calibration file that cannot be used: unreadable, another kind of file, another version."""


def load_calibration(path: str | Path) -> DiceCalibration:
    """Read a calibration file (`tablectl calibrate dice` writes them); refuse another kind of file or a
    version this code does not read, saying which."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CalibrationFileError(f"{path}: cannot read a dice calibration: {exc}") from None
    if not isinstance(data, dict) or data.get("kind") != CALIBRATION_KIND:
        kind = data.get("kind") if isinstance(data, dict) else None
        raise CalibrationFileError(f"{path}: not a dice calibration (kind {kind!r})")
    if data.get("version") != CALIBRATION_VERSION:
        raise CalibrationFileError(
            f"{path}: dice calibration version {data.get('version')!r}; "
            f"this tablectl reads version {CALIBRATION_VERSION}"
        )
    try:
        return DiceCalibration.model_validate(data)
    except ValueError as exc:
        raise CalibrationFileError(f"{path}: invalid dice calibration: {exc}") from None
