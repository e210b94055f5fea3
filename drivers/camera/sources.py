"""Frame sources: where a camera device's frames come from. I/O only; health and timing rules live elsewhere.

- `VideoSource`: OpenCV `VideoCapture` on a device index ("0"), a device path ("/dev/video0"), a stream URL
  ("rtsp://...", "http://..."), a GStreamer pipeline (anything with "!", ending in `appsink`) or a video file.
- `FolderSource`: the images of a folder in name order, optionally looping: tests, replays, calibration.
- `SyntheticSource`: rendered frames (a tray by default, any renderer callable) with sensor noise and the
  failures a real camera has (frozen, black, covered, unplugged) on demand: tests and the demo.

`make_source(source, options, renderers=...)` picks one from the `source` string of the config; the renderers
a `synthetic:<name>` source may name are handed in by whoever builds it (the service hands the camera
record's, `drivers.registry`). A source is opened, read and closed by one thread (the runner's worker):
`read()` blocks until the next frame. OpenCV is imported only when a source that needs it is opened.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from drivers.camera.capture import CaptureSource
from drivers.camera.frame import CameraError, FrameSource, SourceEnded
from drivers.camera.options import CameraOptions
from drivers.url_redaction import redact_urls_in

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")
#: frames per second of a synthetic or folder source made from the config, unless `fps` says otherwise
REPLAY_FPS = 25.0

#: A renderer draws frame number `index` (0, 1, ...) at source time `t` (seconds since the source opened)
#: as a BGR uint8 image. The synthetic source adds the sensor noise.
Renderer = Callable[[int, float], NDArray[np.uint8]]


class RendererFactory(Protocol):
    """Makes a renderer of frames of a size: a renderer class (`drivers.dice.synthetic.DiceRenderer`)."""

    def __call__(self, *, width: int, height: int) -> Renderer: ...


class _Pacer:
    """Sleeps so that frames come at `fps` (a recording replayed at camera speed); no pacing when None."""

    def __init__(self, fps: float | None) -> None:
        self.interval = 1.0 / fps if fps else 0.0
        self._due: float | None = None

    def restart(self) -> None:
        self._due = None

    def wait(self) -> None:
        if not self.interval:
            return
        now = time.monotonic()
        if self._due is None or self._due < now - self.interval:
            self._due = now  # first frame, or we fell behind: do not burst to catch up
        delay = self._due - now
        if delay > 0:
            time.sleep(delay)
        self._due += self.interval


# --- OpenCV VideoCapture ------------------------------------------------------------------------------


def _capture_target(source: int | str) -> tuple[int | str, str]:
    """What to hand VideoCapture, and the kind of source: device, stream, pipeline or file."""
    if isinstance(source, int):
        return source, "device"
    text = source.strip()
    if text.isdigit():
        return int(text), "device"
    if "!" in text:
        return text, "pipeline"
    if "://" in text:
        return text, "stream"
    if text.startswith("/dev/"):
        return text, "device"
    return text, "file"


class VideoSource(FrameSource):
    """OpenCV `VideoCapture`. Streams and pipelines get open/read timeouts so a dead camera cannot hang us."""

    def __init__(
        self,
        source: int | str,
        *,
        open_timeout_s: float = 10.0,
        read_timeout_s: float = 5.0,
        fps: float | None = None,
    ) -> None:
        self.source = source
        self.target, self.kind = _capture_target(source)
        self.live = self.kind != "file"
        # the description is logged and published (a device's status): a stream URL's password must not be
        shown = redact_urls_in(source) if isinstance(source, str) else source
        self.description = f"camera {shown!r}"
        self.open_timeout_s = open_timeout_s
        self.read_timeout_s = read_timeout_s
        self._pacer = _Pacer(fps if self.kind == "file" else None)  # a camera sets its own pace
        self._capture: Any = None

    @property
    def is_open(self) -> bool:
        return self._capture is not None

    def open(self) -> None:
        import cv2

        self.close()
        api, params = cv2.CAP_ANY, []
        if self.kind in ("stream", "pipeline"):
            api = cv2.CAP_FFMPEG if self.kind == "stream" else cv2.CAP_GSTREAMER
            params = [
                cv2.CAP_PROP_OPEN_TIMEOUT_MSEC,
                round(self.open_timeout_s * 1000),
                cv2.CAP_PROP_READ_TIMEOUT_MSEC,
                round(self.read_timeout_s * 1000),
            ]
        elif self.kind == "device" and isinstance(self.target, str):
            api = cv2.CAP_V4L2
        capture = cv2.VideoCapture(self.target, api, params)
        if not capture.isOpened():
            capture.release()
            raise CameraError(f"{self.description} cannot be opened ({self._hint()})")
        self._capture = capture
        self._pacer.restart()

    def read(self) -> NDArray[np.uint8]:
        if self._capture is None:
            raise CameraError(f"{self.description} is not open")
        self._pacer.wait()
        ok, frame = self._capture.read()
        if not ok or frame is None or frame.size == 0:
            error = SourceEnded if self.kind == "file" else CameraError
            raise error(f"{self.description} gave no frame (disconnected, or the end of the video)")
        return np.ascontiguousarray(frame)

    def skip(self, count: int) -> None:
        """Drop `count` frames without decoding them (the stale ones a live driver queued)."""
        if self._capture is None:
            raise CameraError(f"{self.description} is not open")
        for _ in range(count):
            if not self._capture.grab():
                break

    def close(self) -> None:
        if self._capture is not None:
            self._capture.release()
            self._capture = None

    def _hint(self) -> str:
        if self.kind == "device":
            return "plugged in? right index or path? used by another program?"
        if self.kind == "stream":
            return (
                f"camera on the network? URL and credentials right? (gave up after {self.open_timeout_s:g} s)"
            )
        if self.kind == "pipeline":
            return "is OpenCV built with GStreamer, and does the pipeline end in appsink?"
        return "does the file exist, and is it a video OpenCV can decode?"


# --- a folder of images ---------------------------------------------------------------------------------


class FolderSource(FrameSource):
    """The images of `folder` in name order; at the end, start again (`loop`) or raise SourceEnded."""

    def __init__(self, folder: str | Path, *, loop: bool = False, fps: float | None = None) -> None:
        self.folder = Path(folder)
        self.loop = loop
        self.description = f"folder {str(self.folder)!r}"
        self._pacer = _Pacer(fps)
        self._files: list[Path] = []
        self._index = 0
        self._open = False

    @property
    def files(self) -> list[Path]:
        return list(self._files)

    def open(self) -> None:
        if not self.folder.is_dir():
            raise CameraError(f"{self.description} cannot be opened: not a folder")
        files = sorted(p for p in self.folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise CameraError(f"{self.description} has no images ({', '.join(IMAGE_SUFFIXES)})")
        self._files, self._index, self._open = files, 0, True
        self._pacer.restart()

    def read(self) -> NDArray[np.uint8]:
        import cv2

        if not self._open:
            raise CameraError(f"{self.description} is not open")
        if self._index >= len(self._files):
            if not self.loop:
                raise SourceEnded(f"{self.description}: no more images after {len(self._files)}")
            self._index = 0
        path = self._files[self._index]
        self._index += 1
        self._pacer.wait()
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise CameraError(f"{path} is not an image OpenCV can read")
        return np.ascontiguousarray(image)

    def close(self) -> None:
        self._open = False


# --- synthetic frames ------------------------------------------------------------------------------------


class TrayRenderer:
    """An empty dice tray seen from above: felt, a rim and a little shading (so it has contrast)."""

    def __init__(self, width: int = 640, height: int = 480) -> None:
        self.width, self.height = width, height
        self._image = self._draw()

    def _draw(self) -> NDArray[np.uint8]:
        h, w = self.height, self.width
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
        # felt: green, lit from the middle
        falloff = 1.0 - 0.35 * (((xs - w / 2) / w) ** 2 + ((ys - h / 2) / h) ** 2) * 4
        image = np.empty((h, w, 3), np.float32)
        image[..., 0], image[..., 1], image[..., 2] = 40 * falloff, 120 * falloff, 50 * falloff
        # rim: a wooden border, an eighth of the short side
        rim = max(2, min(h, w) // 8)
        border = (xs < rim) | (xs >= w - rim) | (ys < rim) | (ys >= h - rim)
        image[border] = (70, 120, 180)  # light wood, brighter than the felt
        return np.clip(image, 0, 255).astype(np.uint8)

    def __call__(self, index: int, t: float) -> NDArray[np.uint8]:
        return self._image


class SyntheticSource(FrameSource):
    """Rendered frames at `fps` with sensor noise, and a real camera's failures when asked for.

    `mode` (set from any thread): "normal", "frozen" (the last frame again and again), "black", "covered"
    (flat grey). `unplugged = True` makes `open` and `read` fail until it is set back, like a pulled cable.
    The source can be reopened, so a runner's source factory may return the same object every time.
    """

    MODES = ("normal", "frozen", "black", "covered")

    def __init__(
        self,
        renderer: Renderer | None = None,
        *,
        width: int = 640,
        height: int = 480,
        fps: float | None = REPLAY_FPS,
        noise: int = 2,
        seed: int = 0,
    ) -> None:
        self.renderer: Renderer = renderer or TrayRenderer(width, height)
        self.description = "synthetic camera"
        self.noise = noise
        self.mode = "normal"
        self.unplugged = False
        self.opened = 0  # how many times it was opened (tests look at reconnects)
        self._pacer = _Pacer(fps)
        self._rng = np.random.default_rng(seed)
        self._index = 0
        self._started = 0.0
        self._last: NDArray[np.uint8] | None = None
        self._open = False

    def open(self) -> None:
        if self.unplugged:
            raise CameraError(f"{self.description} cannot be opened (unplugged)")
        self._open, self._started = True, time.monotonic()
        self.opened += 1
        self._pacer.restart()

    def read(self) -> NDArray[np.uint8]:
        if not self._open:
            raise CameraError(f"{self.description} is not open")
        self._pacer.wait()
        if self.unplugged:
            self._open = False
            raise CameraError(f"{self.description} gave no frame (unplugged)")
        mode = self.mode
        if mode not in self.MODES:
            raise CameraError(f"{self.description}: unknown mode {mode!r}; known: {', '.join(self.MODES)}")
        if mode == "frozen" and self._last is not None:
            return self._last
        index, self._index = self._index, self._index + 1
        if mode == "black":
            base = np.zeros_like(self._shape_like())
        elif mode == "covered":
            base = np.full_like(self._shape_like(), 90)
        else:
            base = self.renderer(index, time.monotonic() - self._started)
        frame = self._noisy(base)
        self._last = frame
        return frame

    def close(self) -> None:
        self._open = False

    def _shape_like(self) -> NDArray[np.uint8]:
        return self._last if self._last is not None else self.renderer(0, 0.0)

    def _noisy(self, image: NDArray[np.uint8]) -> NDArray[np.uint8]:
        if not self.noise:
            return image.copy()
        noise = self._rng.integers(-self.noise, self.noise + 1, size=image.shape, dtype=np.int16)
        return np.clip(image.astype(np.int16) + noise, 0, 255).astype(np.uint8)


# --- from the config -------------------------------------------------------------------------------------


def make_source(
    source: str,
    options: CameraOptions | None = None,
    *,
    renderers: Mapping[str, RendererFactory] | None = None,
) -> FrameSource:
    """The source a config's `source` string names (not opened yet: opening blocks, the runner does it).

    - "synthetic": an empty tray; "synthetic:<name>": the frames of the renderer `renderers` names
      (made with the options' width and height), e.g. "synthetic:dice";
    - "folder:<path>", or the path of an existing folder: its images;
    - "capture:<path of a camera capture's .jsonl>": the frames it kept, verified (a replay);
    - anything else goes to OpenCV: "0" (device index), "/dev/video0", "rtsp://...", "http://...",
      a GStreamer pipeline ("... ! appsink") or a video file.
    """
    options = options or CameraOptions()
    fps = options.fps or REPLAY_FPS  # unpaced, a recording would flood the runner
    text = source.strip()
    if not text:
        raise CameraError("camera source is empty: give a device index, a path, a URL or a pipeline")
    if text == "synthetic" or text.startswith("synthetic:"):
        name = text.partition(":")[2]
        renderer = _named_renderer(text, name, renderers or {}, options) if name else None
        return SyntheticSource(renderer, width=options.width, height=options.height, fps=fps)
    if text.startswith("capture:"):
        return CaptureSource(text.removeprefix("capture:"))
    if text.startswith("folder:"):
        return FolderSource(text.removeprefix("folder:"), loop=options.loop, fps=fps)
    if "!" not in text and "://" not in text and Path(text).is_dir():
        return FolderSource(text, loop=options.loop, fps=fps)
    return VideoSource(
        text, open_timeout_s=options.open_timeout_s, read_timeout_s=options.read_timeout_s, fps=options.fps
    )


def _named_renderer(
    source: str, name: str, renderers: Mapping[str, RendererFactory], options: CameraOptions
) -> Renderer:
    factory = renderers.get(name)
    if factory is None:
        known = ", ".join(sorted(renderers)) or "none"
        raise CameraError(
            f"camera source {source!r}: unknown renderer {name!r}; known: {known} "
            "(or 'synthetic' alone: an empty tray)"
        )
    return factory(width=options.width, height=options.height)
