"""Are the dice at rest? A pure check over consecutive frames (no camera, no clock).

The shaker says when it stopped; the dice may still roll or rock for a moment after. `Stillness` is fed one
frame at a time and says when the tray has not changed over the last `frames` frames. Each frame is compared
with the FIRST frame of the current still run, not with the one before: a die creeping a pixel per frame
changes little between neighbours but a lot over a run.

What counts as a change: a strided grey sample of the tray (`drivers.camera.frame.measure`: the sensor's own
noise is kept, nothing is averaged) and the share of its points that moved by more than `level` grey levels.
Sensor noise moves almost none by that much; a die moving over the felt moves the points it covers. The
tray is still while that share stays under `max_changed` (by default a quarter of one die's area).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from drivers.camera.frame import FrameStats, measure

Box = tuple[int, int, int, int]

DEFAULT_FRAMES = 3  # frames that must agree (with the run's first): 120 ms at 25 fps
DEFAULT_LEVEL = 20.0  # grey levels: ~6 standard deviations of the difference of two frames' sensor noise
SAMPLE_COLUMNS = 160  # points across the tray


@dataclass(frozen=True)
class StillnessCheck:
    still: bool
    run: int  # frames in the current still run (1 = this frame changed from the run's first)
    changed: float  # share of the sample that changed against the run's first frame (0 for the first)


class Stillness:
    """Feed frames with `update(image)`; `still` once `frames` consecutive frames show the same tray."""

    def __init__(
        self,
        *,
        frames: int = DEFAULT_FRAMES,
        level: float = DEFAULT_LEVEL,
        max_changed: float = 0.002,
        roi: Box | None = None,
        columns: int = SAMPLE_COLUMNS,
    ) -> None:
        if frames < 1:
            raise ValueError("stillness needs at least one frame")
        self.frames = frames
        self.level = level
        self.max_changed = max_changed
        self.roi = roi
        self.columns = columns
        self._reference: FrameStats | None = None
        self._run = 0

    @classmethod
    def for_calibration(
        cls, calibration: Any, *, frames: int = DEFAULT_FRAMES, frame_size: tuple[int, int] = (1280, 720)
    ) -> Stillness:
        """Limits for a `DiceCalibration`: its tray, and a quarter of one of its dice as the most that may
        change (`frame_size`, width and height, counts only when the calibration has no tray region)."""
        roi = calibration.roi
        side = calibration.die_side_median / calibration.scale  # in frame pixels
        area = roi[2] * roi[3] if roi is not None else frame_size[0] * frame_size[1]
        return cls(frames=frames, max_changed=max(1e-4, 0.25 * side * side / area), roi=roi)

    @property
    def still(self) -> bool:
        return self._run >= self.frames

    def reset(self) -> None:
        """Forget the frames seen (the shaker ran again)."""
        self._reference, self._run = None, 0

    def update(self, image: Any) -> StillnessCheck:
        """One more frame (a BGR/grey image, or anything with `.image`)."""
        stats = measure(self._tray(getattr(image, "image", image)), self.columns)
        changed = changed_share(self._reference, stats, self.level)
        if changed is None or changed > self.max_changed:
            self._reference, self._run = stats, 1
        else:
            self._run += 1
        return StillnessCheck(self.still, self._run, changed or 0.0)

    def _tray(self, image: Any) -> Any:
        if self.roi is None:
            return image
        x, y, w, h = self.roi
        return image[y : y + h, x : x + w]


def changed_share(before: FrameStats | None, after: FrameStats, level: float) -> float | None:
    """The share of sample points whose grey level moved by more than `level`; None when not comparable
    (no earlier frame, or another size)."""
    if before is None or before.grid.shape != after.grid.shape:
        return None
    return float(np.count_nonzero(np.abs(before.grid - after.grid) > level)) / max(1, after.grid.size)
