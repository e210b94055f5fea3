"""The reader at the table: wait until the dice are still, then read the frame (the one the flow calls).

    reader = DiceReader(load_calibration("dice-calibration.json"))
    result = await read_at_rest(camera_runner.grab, reader, expect=3)     # the service (asyncio)
    result = read_still(frames, reader, expect=3)                         # any iterable of frames
    if isinstance(result, AcceptedDice): result.values, result.dice, result.frame
    else: result.reason ("moving", "count", "cocked", ...), result.detail -> re-shake

Both feed each frame to a `Stillness` (by default `Stillness.for_calibration`), read the first frame that
ends a still run with `DiceReader.read`, and return that reading or refusal. Frames that never come to rest
within `max_frames` give `DiceRefusal("moving", ...)`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from drivers.dice.reader import AcceptedDice, DiceReader, DiceRefusal
from drivers.dice.stillness import Stillness

DEFAULT_MAX_FRAMES = 50  # 2 s at 25 fps: dice still rocking after that are a re-shake


def read_still(
    frames: Iterable[Any],
    reader: DiceReader,
    *,
    expect: int | None = 3,
    stillness: Stillness | None = None,
    max_frames: int = DEFAULT_MAX_FRAMES,
) -> AcceptedDice | DiceRefusal:
    """Read the first frame of `frames` (images or `Frame`s) at which the dice have been still."""
    still = stillness or Stillness.for_calibration(reader.calibration)
    seen = 0
    for frame in frames:
        seen += 1
        if still.update(frame).still:
            return reader.read(frame, expect=expect)
        if seen >= max_frames:
            break
    return _moving(seen, still)


async def read_at_rest(
    grab: Callable[[], Awaitable[Any]],
    reader: DiceReader,
    *,
    expect: int | None = 3,
    stillness: Stillness | None = None,
    max_frames: int = DEFAULT_MAX_FRAMES,
) -> AcceptedDice | DiceRefusal:
    """`read_still` over frames from `grab` (e.g. `CameraRunner.grab`); the reading runs in a worker thread
    so the event loop is not held for its milliseconds. A camera error from `grab` propagates."""
    still = stillness or Stillness.for_calibration(reader.calibration)
    for _ in range(max_frames):
        frame = await grab()
        if still.update(frame).still:
            return await asyncio.to_thread(reader.read, frame, expect)
    return _moving(max_frames, still)


def _moving(seen: int, still: Stillness) -> DiceRefusal:
    return DiceRefusal("moving", f"the dice were not still over {still.frames} frames within {seen} frames")
