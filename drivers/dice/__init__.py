"""Sic bo dice: a one-shot camera (I/O: `camera`) and the reader (pure image processing: `reader`).

At the table: when the shaker reports the dice at rest, the camera device (`drivers.camera.CameraRunner`)
`grab()`s the next fresh frame and keeps it in its capture, `DiceReader.read(frame.image)` reads it; a result
that is not `readable` means a re-shake, never a guess. `DiceCamera.capture(name)` grabs and saves one frame
without a running camera device (calibration, benches).
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
