"""The one place the table knows the dice reader's API: a frame in, the values or a refusal out.

Everything else (the camera side of sic bo, replay's re-reading of saved frames, the demo) calls
`CalibratedDiceReader.read(image, expected)` and gets a `Readout`: plain values, the refusal's reason and the
per-die evidence (value, confidence, box, reason) as JSON-ready dicts. A new reader (or a new reader API)
changes this module only. Pure: no camera, no clock; reading is CPU work, so callers run it in a worker
thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from numpy.typing import NDArray


@dataclass(frozen=True, slots=True)
class Readout:
    """What the reader said about one frame. `values` is None when it refused (then `reason` says why)."""

    values: tuple[int, ...] | None
    reason: str
    dice: tuple[dict[str, Any], ...]


class CalibratedDiceReader:
    """A dice reader set up with the table's calibration."""

    def __init__(self, calibration: Any) -> None:
        from drivers.dice.reader import DiceCalibration, DiceReader

        if not isinstance(calibration, DiceCalibration):
            calibration = DiceCalibration.model_validate(calibration)
        self.calibration = calibration
        self._reader = DiceReader(calibration)

    @classmethod
    def from_file(cls, path: str | Path) -> CalibratedDiceReader:
        """The reader with the calibration file `path` (`tablectl calibrate dice`). ValueError if unusable."""
        from drivers.dice.calibration_file import load_calibration

        return cls(load_calibration(path))  # CalibrationFileError is a ValueError

    def read(self, image: NDArray[Any], expected: int = 3) -> Readout:
        result = self._reader.read(image, expect=expected)
        dice = tuple(
            {
                "value": die.value,
                "confidence": round(float(die.confidence), 4),
                "box": [int(v) for v in die.box],
                "reason": die.reason,
            }
            for die in result.dice
        )
        if not result.readable or result.values is None:
            return Readout(None, result.reason or "the dice could not be read", dice)
        return Readout(tuple(int(v) for v in result.values), "", dice)
