"""Camera devices: a second device kind next to byte streams (the sic bo camera looking at the dice).

- `sources`: where frames come from (OpenCV `VideoCapture`, a folder of images, synthetic frames);
- `monitor`: the health rules, sans-IO (online, offline, frozen / black / covered faults);
- `runner`: the I/O shell: worker thread, reconnection, readings in order, `grab()` for stills;
- `capture`: the frames used, as PNG files with their sha256 next to a JSON Lines file, and the reader.

Wiring a camera: `CameraOptions.model_validate(options)`, then
`CameraRunner(name, partial(make_source, source, options), options=options, on_readings=..., capture=...)`.
OpenCV is imported only when a source or capture needs it, never by importing this package.
"""

from drivers.camera.capture import (
    CameraCaptureWriter,
    CaptureSource,
    FrameIntegrityError,
    FrameRecord,
    HealthRecord,
    ReadingRecord,
    captured_frames,
    read_camera_capture,
)
from drivers.camera.frame import CameraError, Frame, FrameSource, FrameStats, SourceEnded, measure
from drivers.camera.monitor import BLACK, COVERED, FROZEN, CameraHealth, CameraMonitor
from drivers.camera.options import CameraOptions
from drivers.camera.runner import CameraRunner, SourceFactory
from drivers.camera.sources import (
    FolderSource,
    Renderer,
    SyntheticSource,
    TrayRenderer,
    VideoSource,
    make_source,
)

__all__ = [
    "BLACK",
    "COVERED",
    "FROZEN",
    "CameraCaptureWriter",
    "CameraError",
    "CameraHealth",
    "CameraMonitor",
    "CameraOptions",
    "CameraRunner",
    "CaptureSource",
    "FolderSource",
    "Frame",
    "FrameIntegrityError",
    "FrameRecord",
    "FrameSource",
    "FrameStats",
    "HealthRecord",
    "ReadingRecord",
    "Renderer",
    "SourceEnded",
    "SourceFactory",
    "SyntheticSource",
    "TrayRenderer",
    "VideoSource",
    "captured_frames",
    "make_source",
    "measure",
    "read_camera_capture",
]
