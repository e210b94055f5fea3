"""Frames and their statistics: what a camera source gives, and the few numbers health is judged on; and
`FrameSource`, what every source is (cameras and recordings in `sources`, a capture replayed in `capture`).

`measure` is the only per-frame work besides reading: it looks at a grid of about `columns` x `rows` pixels
taken with a stride (not averaged), so a 1080p frame costs well under a millisecond and the sensor's own
noise is kept: a live camera filming a still tray still changes from frame to frame, a frozen stream does not.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from drivers.readings import FrameCaptured


class CameraError(Exception):
    """A camera source cannot be opened or gave no frame; the message says which and what to check."""


class SourceEnded(CameraError):
    """A finite source (a video file, a folder of images) has no more frames."""


class FrameSource(ABC):
    """One camera stream. Not thread-safe: open, read and close it from one thread."""

    #: what the operator sees in messages ("camera 'rtsp://...'", "folder ...")
    description: str = ""
    #: a live camera (frames queued in the driver are stale) rather than a recording
    live: bool = False

    @abstractmethod
    def open(self) -> None:
        """Open the stream; raise CameraError saying what to check."""

    @abstractmethod
    def read(self) -> NDArray[np.uint8]:
        """The next frame (blocks until it comes). CameraError: the stream failed; SourceEnded: it ended."""

    @abstractmethod
    def close(self) -> None:
        """Release the stream; harmless when not open. The source may be opened again."""

    def __enter__(self) -> FrameSource:
        self.open()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


@dataclass(frozen=True, slots=True, eq=False)
class Frame:
    """One frame as the host received it. `image` is BGR (or grey) uint8, as OpenCV reads it.

    `seq` counts the frames a runner received, across reconnects. `file`/`sha256` are set once the frame was
    written to a capture (`drivers.camera.capture`); the pixels never go into a reading, the reference does.
    """

    image: NDArray[Any]
    time: float
    seq: int
    file: str = ""
    sha256: str = ""

    @property
    def width(self) -> int:
        return int(self.image.shape[1])

    @property
    def height(self) -> int:
        return int(self.image.shape[0])

    def reading(self, device: str) -> FrameCaptured:
        """The reference to journal for this frame (file and sha256 are empty when nothing was captured)."""
        return FrameCaptured(
            device=device,
            time=self.time,
            file=self.file,
            sha256=self.sha256,
            width=self.width,
            height=self.height,
            seq=self.seq,
        )


@dataclass(frozen=True, slots=True, eq=False)
class FrameStats:
    """What the health monitor needs of a frame: brightness, contrast and a small grey sample grid."""

    brightness: float  # mean grey level of the grid, 0-255
    contrast: float  # standard deviation of the grid's grey levels
    grid: NDArray[np.float32]  # grey levels of the strided sample, compared between frames
    width: int
    height: int

    def difference(self, other: FrameStats) -> float | None:
        """Mean absolute grey difference to another frame's grid; None when the grids do not match."""
        if self.grid.shape != other.grid.shape:
            return None
        return float(np.abs(self.grid - other.grid).mean())


def measure(image: NDArray[Any], columns: int = 80) -> FrameStats:
    """Statistics of one frame. Raises CameraError for something that is not an image."""
    if image.ndim not in (2, 3) or image.size == 0:
        raise CameraError(f"not an image: an array of shape {image.shape}")
    height, width = int(image.shape[0]), int(image.shape[1])
    step = max(1, width // columns)
    sample = image[::step, ::step]
    grid = sample.mean(axis=2, dtype=np.float32) if sample.ndim == 3 else sample.astype(np.float32)
    return FrameStats(
        brightness=float(grid.mean()),
        contrast=float(grid.std()),
        grid=grid,
        width=width,
        height=height,
    )
