"""Sic bo dice: the reader (pure image processing), the table's wait-until-still loop, a synthetic renderer.

The API (the table's camera device reads through `drivers.dice.station.DiceStation`, which calls `read`
on the first fresh frame after the shaker's AT_REST):

    from drivers.dice import DiceReader, AcceptedDice, DiceRefusal, load_calibration, read_at_rest

    reader = DiceReader(load_calibration("dice-calibration.json"))   # CalibrationFileError: why not
    result = await read_at_rest(camera_runner.grab, reader, expect=3)   # waits for still dice (unused
                                                                         # by the service today)
    result = reader.read(frame, expect=3)                  # one frame (a camera Frame or a BGR image)
    if isinstance(result, AcceptedDice):
        result.values        # (2, 5, 6) left to right; result.total; result.confidence (the least die's)
        result.dice          # DieReading per die: value, confidence, box (x, y, w, h), pip_centres
        result.frame         # the captured frame's file, when read from a captured Frame
    else:                    # DiceRefusal: re-shake, never a guess
        result.reason        # "image" | "moving" | "touching" | "stacked" | "cocked" | "edge" | "count" |
                             # "blurred" | "unclear" (the most basic one found)
        result.detail        # what was seen, for the log and the dealer; result.dice: what was found

`read_still(frames, reader, expect=3)` is the same over any iterable of frames; `Stillness` is the pure check
both use. `DiceCamera.capture(name)` grabs and saves one frame without a running camera device (by hand;
nothing in the product calls it). `drivers.dice.synthetic` renders dice scenes with their truth (tests,
demo, benchmark).
"""

from drivers.dice.calibration_file import CalibrationFileError, load_calibration
from drivers.dice.camera import CameraError, CapturedFrame, DiceCamera
from drivers.dice.reader import (
    AcceptedDice,
    DiceCalibration,
    DiceReader,
    DiceRefusal,
    DiceResult,
    DieReading,
    RefusalReason,
)
from drivers.dice.stillness import Stillness
from drivers.dice.table import read_at_rest, read_still

__all__ = [
    "AcceptedDice",
    "CalibrationFileError",
    "CameraError",
    "CapturedFrame",
    "DiceCalibration",
    "DiceCamera",
    "DiceReader",
    "DiceRefusal",
    "DiceResult",
    "DieReading",
    "RefusalReason",
    "Stillness",
    "load_calibration",
    "read_at_rest",
    "read_still",
]
