"""The dice camera: grab one frame when the shaker reports the dice at rest, and keep it as a JPEG.

A one-shot use of a camera source (`drivers.camera.sources.VideoSource`: a device index, a device path, a
video file or a stream URL), for the calibration tools and benches. It does I/O only; reading the dice is
`drivers.dice.reader`'s job. Every captured frame is written to disk before it is returned, so that a result
can always be traced back to the exact frame it was read from (docs/games/sicbo.md: the sic bo result carries
its camera frame). A frame file is never replaced: a second capture with the same name gets a numbered suffix.

A live camera queues a few frames inside the driver; they were taken before the dice came to rest. Those are
dropped first (`discard_frames`, by default 4 for a device, 0 for a file). At the table, the camera device
(`drivers.camera.CameraRunner`) reads continuously instead and its `grab()` gives the next fresh frame.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from numpy.typing import NDArray

from drivers.camera.frame import CameraError
from drivers.camera.sources import VideoSource

LIVE_CAMERA_STALE_FRAMES = 4
JPEG_QUALITY = 95

__all__ = ["JPEG_QUALITY", "LIVE_CAMERA_STALE_FRAMES", "CameraError", "CapturedFrame", "DiceCamera"]


@dataclass(frozen=True)
class CapturedFrame:
    image: NDArray[Any]  # BGR, as OpenCV reads it
    path: Path  # the JPEG it was saved as

    @property
    def reference(self) -> str:
        """What a result records to point at its frame (the file name)."""
        return self.path.name


class DiceCamera:
    def __init__(
        self,
        source: int | str,
        frames_dir: str | Path,
        *,
        discard_frames: int | None = None,
        jpeg_quality: int = JPEG_QUALITY,
    ) -> None:
        self.source = source
        self.frames_dir = Path(frames_dir)
        self._video = VideoSource(source)
        is_device = self._video.kind == "device"
        self.discard_frames = (
            discard_frames if discard_frames is not None else (LIVE_CAMERA_STALE_FRAMES if is_device else 0)
        )
        self.jpeg_quality = jpeg_quality

    def open(self) -> None:
        self._video.open()

    def close(self) -> None:
        self._video.close()

    def __enter__(self) -> DiceCamera:
        self.open()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def capture(self, name: str) -> CapturedFrame:
        """The first fresh frame, saved as `<frames_dir>/<name>.jpg` (call it when the dice are at rest)."""
        self._video.skip(self.discard_frames)
        image = self._video.read()
        return CapturedFrame(image, self._save(image, name))

    def _save(self, image: NDArray[Any], name: str) -> Path:
        import cv2

        stem = _safe_name(name)
        self.frames_dir.mkdir(parents=True, exist_ok=True)
        ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, self.jpeg_quality])
        if not ok:
            raise CameraError(f"frame {stem} could not be encoded as JPEG")
        data = encoded.tobytes()
        for attempt in range(1, 1000):
            path = self.frames_dir / (f"{stem}.jpg" if attempt == 1 else f"{stem}-{attempt}.jpg")
            try:
                with path.open("xb") as handle:  # "x": never replace the frame of an earlier result
                    handle.write(data)
            except FileExistsError:
                continue
            return path
        raise CameraError(f"no free file name for frame {stem} in {self.frames_dir}")


def _safe_name(name: str) -> str:
    """A file name from a round id or similar: letters, digits, dot, dash and underscore only."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    return cleaned or "frame"
