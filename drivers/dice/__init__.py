"""Sic bo dice: the camera (I/O: `camera`) and the reader (pure image processing: `reader`).

At the table: when the shaker reports the dice at rest, `DiceCamera.capture(round_id)` grabs and saves
the frame, `DiceReader.read(frame.image)` reads it; a result that is not `readable` means a re-shake, never
a guess.
"""

from drivers.dice.camera import CameraError, CapturedFrame, DiceCamera
from drivers.dice.reader import DiceCalibration, DiceReader, DiceResult, DieReading

__all__ = [
    "CameraError",
    "CapturedFrame",
    "DiceCalibration",
    "DiceCamera",
    "DiceReader",
    "DiceResult",
    "DieReading",
]
