"""Camera frame sources (drivers.camera.sources): a real OpenCV VideoCapture on a video file, image folders,
synthetic frames, and picking one from the config's `source` string.

Its unit tests; the integration ones are in `tests/integration/test_camera_sources.py`."""

from __future__ import annotations

import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from drivers.camera import (
    CameraError,
    CameraMonitor,
    CameraOptions,
    FolderSource,
    SourceEnded,
    SyntheticSource,
    VideoSource,
    make_source,
    measure,
)
from tests.helpers.dice_scenes import DATA as DICE_PHOTOS

pytestmark = pytest.mark.unit


def write_video(path: Path, frames: list[np.ndarray], fps: float = 10.0) -> None:
    height, width = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, (width, height))
    assert writer.isOpened(), "OpenCV cannot write an MJPG video here"
    for frame in frames:
        writer.write(frame)
    writer.release()


def levels(count: int, step: int = 40) -> list[np.ndarray]:
    return [np.full((48, 64, 3), step * n, np.uint8) for n in range(count)]


class StripeRenderer:
    """A renderer as a sic bo engineer would plug in: built with the size, called per frame."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.calls: list[int] = []

    def __call__(self, index: int, t: float) -> np.ndarray:
        self.calls.append(index)
        image = np.zeros((self.height, self.width, 3), np.uint8)
        image[:, : self.width // 2] = 200
        return image


# --- OpenCV VideoCapture ------------------------------------------------------------------------------


def test_video_source_reads_a_real_video_file_to_its_end(tmp_path: Path) -> None:
    video = tmp_path / "tray.avi"
    write_video(video, levels(5))
    source = VideoSource(str(video))
    assert source.kind == "file" and not source.live
    with source:
        means = [source.read().mean() for _ in range(5)]
        with pytest.raises(SourceEnded, match="gave no frame"):
            source.read()
    assert means == pytest.approx([0, 40, 80, 120, 160], abs=3)  # through MJPG and back
    assert not source.is_open


def test_video_source_skips_frames_and_can_be_reopened(tmp_path: Path) -> None:
    video = tmp_path / "tray.avi"
    write_video(video, levels(6))
    source = VideoSource(str(video))
    source.open()
    source.skip(2)
    assert source.read().mean() == pytest.approx(80, abs=3)
    source.open()  # reopening starts again
    assert source.read().mean() == pytest.approx(0, abs=3)
    source.close()
    source.close()  # harmless


def test_video_source_errors_say_what_to_check(tmp_path: Path) -> None:
    missing = VideoSource(str(tmp_path / "no-such.avi"))
    with pytest.raises(CameraError, match=r"cannot be opened \(does the file exist"):
        missing.open()
    with pytest.raises(CameraError, match="not open"):
        missing.read()
    with pytest.raises(CameraError, match="not open"):
        missing.skip(1)
    refused = VideoSource("http://127.0.0.1:9/stream.mjpg", open_timeout_s=2)  # nothing listens on port 9
    start = time.monotonic()
    with pytest.raises(CameraError, match="camera on the network"):
        refused.open()
    assert time.monotonic() - start < 30


@pytest.mark.parametrize(
    "source",
    [
        "rtsp://admin:CamPassw0rd@cam.lan:554/stream1",
        "rtspsrc location=rtsp://admin:CamPassw0rd@cam.lan/stream1 ! decodebin ! videoconvert ! appsink",
    ],
)
def test_a_stream_sources_description_names_its_host_but_not_its_password(source: str) -> None:
    # the description is what the runner logs and what a device's status says
    description = VideoSource(source).description
    assert "cam.lan" in description and "CamPassw0rd" not in description


def test_a_video_file_can_be_replayed_at_camera_speed(tmp_path: Path) -> None:
    video = tmp_path / "tray.avi"
    write_video(video, levels(6))
    with make_source(str(video), CameraOptions(fps=50)) as source:
        start = time.monotonic()
        for _ in range(6):
            source.read()
        assert time.monotonic() - start >= 5 / 50 * 0.9


@pytest.mark.parametrize(
    ("text", "target", "kind"),
    [
        ("0", 0, "device"),
        (" 2 ", 2, "device"),
        ("/dev/video0", "/dev/video0", "device"),
        ("rtsp://10.0.0.5:554/stream1", "rtsp://10.0.0.5:554/stream1", "stream"),
        ("http://cam.local/video.mjpg", "http://cam.local/video.mjpg", "stream"),
        ("v4l2src device=/dev/video0 ! videoconvert ! appsink", None, "pipeline"),
        ("recordings/round.avi", "recordings/round.avi", "file"),
    ],
)
def test_make_source_reads_the_kind_of_camera_from_the_string(text: str, target: object, kind: str) -> None:
    source = make_source(text, CameraOptions(open_timeout_s=3, read_timeout_s=4))
    assert isinstance(source, VideoSource)
    assert source.kind == kind
    assert source.target == (text.strip() if target is None else target)
    assert source.live == (kind != "file")
    assert (source.open_timeout_s, source.read_timeout_s) == (3, 4)


def test_make_source_folders_and_synthetic(tmp_path: Path) -> None:
    options = CameraOptions(loop=True, fps=12, width=64, height=48)
    by_prefix = make_source(f"folder:{tmp_path}", options)
    assert isinstance(by_prefix, FolderSource) and by_prefix.folder == tmp_path and by_prefix.loop
    assert isinstance(make_source(str(tmp_path), options), FolderSource)  # an existing folder
    synthetic = make_source("synthetic", options)
    assert isinstance(synthetic, SyntheticSource)
    with synthetic:
        assert synthetic.read().shape == (48, 64, 3)
    renderers = {"stripes": StripeRenderer}
    plugged = make_source("synthetic:stripes", options, renderers=renderers)
    assert isinstance(plugged, SyntheticSource) and isinstance(plugged.renderer, StripeRenderer)
    assert (plugged.renderer.width, plugged.renderer.height) == (64, 48)
    with plugged:
        assert plugged.read()[0, 0, 0] >= 190 and plugged.renderer.calls == [0]
    with pytest.raises(CameraError, match=r"unknown renderer 'dots'; known: stripes \(or 'synthetic' alone"):
        make_source("synthetic:dots", options, renderers=renderers)
    with pytest.raises(CameraError, match="unknown renderer 'stripes'; known: none"):
        make_source("synthetic:stripes", options)  # a renderer is named only by whoever builds the source
    with pytest.raises(CameraError, match="empty"):
        make_source("  ", options)


# --- a folder of images -------------------------------------------------------------------------------


def write_images(folder: Path, names: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for n, name in enumerate(names):
        assert cv2.imwrite(str(folder / name), np.full((24, 32, 3), 10 * (n + 1), np.uint8))


def test_folder_source_reads_images_in_name_order_then_ends(tmp_path: Path) -> None:
    write_images(tmp_path, ["b.png", "a.png", "c.jpg"])  # written 10, 20, 30
    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "sub.png").mkdir()  # not a file
    source = FolderSource(tmp_path)
    with source:
        assert [p.name for p in source.files] == ["a.png", "b.png", "c.jpg"]
        assert [round(source.read().mean()) for _ in range(3)] == [20, 10, 30]
        with pytest.raises(SourceEnded, match="no more images after 3"):
            source.read()
    source.open()  # reopening starts again
    assert round(source.read().mean()) == 20


def test_folder_source_loops_when_asked(tmp_path: Path) -> None:
    write_images(tmp_path, ["1.png", "2.png"])
    with FolderSource(tmp_path, loop=True) as source:
        assert [round(source.read().mean()) for _ in range(5)] == [10, 20, 10, 20, 10]


def test_folder_source_paces_frames_at_fps(tmp_path: Path) -> None:
    write_images(tmp_path, ["1.png"])
    with FolderSource(tmp_path, loop=True, fps=50) as source:
        start = time.monotonic()
        for _ in range(6):
            source.read()
        assert time.monotonic() - start >= 5 / 50 * 0.9  # 6 frames: 5 intervals


def test_folder_source_errors_name_the_folder_or_file(tmp_path: Path) -> None:
    with pytest.raises(CameraError, match="not a folder"):
        FolderSource(tmp_path / "missing").open()
    with pytest.raises(CameraError, match="has no images"):
        FolderSource(tmp_path).open()
    (tmp_path / "broken.png").write_bytes(b"not a png")
    with FolderSource(tmp_path) as source, pytest.raises(CameraError, match=r"broken\.png is not an image"):
        source.read()
    with pytest.raises(CameraError, match="not open"):
        FolderSource(tmp_path).read()


def test_folder_source_replays_real_dice_photos() -> None:
    photos = DICE_PHOTOS / "byler" / "images"
    if not photos.is_dir():
        pytest.skip(f"the real dice photos are not at {photos}")
    source = FolderSource(photos)
    monitor = CameraMonitor("cam", CameraOptions())
    monitor.connection_made(0.0)
    with source:
        readings = []
        for n in range(20):
            readings += monitor.frame_received(measure(source.read()), n / 25)
    assert [type(r).__name__ for r in readings] == ["DeviceOnline"]  # real photos are healthy frames


# --- synthetic frames ---------------------------------------------------------------------------------


def test_synthetic_source_renders_a_healthy_tray_with_sensor_noise() -> None:
    source = SyntheticSource(width=64, height=48, fps=None)
    monitor = CameraMonitor("cam", CameraOptions())
    monitor.connection_made(0.0)
    with source:
        frames = [source.read() for _ in range(100)]
    readings = []
    for n, frame in enumerate(frames):
        readings += monitor.frame_received(measure(frame), n / 25)
    assert [type(r).__name__ for r in readings] == ["DeviceOnline"]
    assert not np.array_equal(frames[0], frames[1])  # noise: a live sensor never repeats a frame exactly
    assert np.abs(frames[0].astype(int) - frames[1].astype(int)).max() <= 4  # ...but shows the same tray


def test_synthetic_source_fails_like_a_real_camera_on_demand() -> None:
    source = SyntheticSource(width=64, height=48, fps=None)
    source.open()
    first = source.read()
    source.mode = "frozen"
    assert source.read() is first and source.read() is first
    source.mode = "black"
    assert source.read().mean() < 2
    source.mode = "covered"
    covered = measure(source.read())
    assert covered.contrast < CameraOptions().covered_max_contrast
    source.mode = "sideways"
    with pytest.raises(CameraError, match="unknown mode"):
        source.read()
    source.mode = "normal"
    source.unplugged = True
    with pytest.raises(CameraError, match="unplugged"):
        source.read()
    with pytest.raises(CameraError, match="cannot be opened"):
        source.open()
    source.unplugged = False
    source.open()
    assert source.opened == 2
    assert measure(source.read()).contrast > 10


def test_synthetic_source_draws_with_a_plugged_in_renderer() -> None:
    renderer = StripeRenderer(32, 24)
    with SyntheticSource(renderer, fps=None, noise=0) as source:
        images = [source.read() for _ in range(3)]
    assert renderer.calls == [0, 1, 2]
    assert (
        images[0].shape == (24, 32, 3) and images[0][:, :16].mean() == 200 and images[0][:, 16:].mean() == 0
    )


def test_synthetic_source_runs_at_its_frame_rate() -> None:
    with SyntheticSource(width=32, height=24, fps=40) as source:
        start = time.monotonic()
        for _ in range(9):
            source.read()
        assert time.monotonic() - start >= 8 / 40 * 0.9
