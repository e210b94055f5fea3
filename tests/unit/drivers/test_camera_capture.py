"""Camera captures (drivers.camera.capture): the frames used, as PNGs with their sha256, read back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from drivers.camera import (
    CameraCaptureWriter,
    CameraError,
    CaptureSource,
    FrameIntegrityError,
    FrameRecord,
    HealthRecord,
    SourceEnded,
    captured_frames,
    make_source,
    read_camera_capture,
)
from drivers.capture import CaptureError
from drivers.readings import DeviceFault, DeviceOnline

pytestmark = pytest.mark.unit

T0 = 1_764_567_890.125


def tray(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (24, 32, 3), dtype=np.uint8)


def write_sample(path: Path) -> list[np.ndarray]:
    images = [tray(1), tray(2)]
    with CameraCaptureWriter(path) as capture:
        capture.write_health(DeviceOnline(device="cam", time=T0, detail="camera 32x24"))
        capture.write_frame(images[0], T0 + 1, 7)
        capture.write_health(DeviceFault(device="cam", time=T0 + 2, code="COVERED", reason="covered"))
        capture.write_frame(images[1], T0 + 3, 8)
    return images


def test_frames_are_kept_losslessly_and_read_back_verified(tmp_path: Path) -> None:
    path = tmp_path / "captures" / "camera.jsonl"
    images = write_sample(path)
    records = read_camera_capture(path)
    assert [type(r).__name__ for r in records] == [
        "HealthRecord",
        "FrameRecord",
        "HealthRecord",
        "FrameRecord",
    ]
    frames = captured_frames(records)
    assert frames[0].file == "camera-frames/00000007-20251201T054451.125Z.png"
    assert frames[0].path == tmp_path / "captures" / "camera-frames" / "00000007-20251201T054451.125Z.png"
    assert (frames[0].t, frames[0].width, frames[0].height, frames[0].seq) == (T0 + 1, 32, 24, 7)
    for record, image in zip(frames, images, strict=True):
        assert np.array_equal(record.load(), image)  # PNG: the pixels exactly
    online, fault = records[0], records[2]
    assert isinstance(online, HealthRecord) and online.kind == "DeviceOnline"
    assert online.fields == {"detail": "camera 32x24"}
    assert isinstance(fault, HealthRecord) and fault.fields == {"code": "COVERED", "reason": "covered"}


def test_records_share_the_byte_capture_envelope(tmp_path: Path) -> None:
    path = tmp_path / "camera.jsonl"
    write_sample(path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(set(line) >= {"t", "dir"} for line in lines)
    frame = lines[1]
    assert frame["dir"] == "frame"
    assert set(frame) == {"t", "dir", "file", "sha256", "width", "height", "seq"}
    assert len(frame["sha256"]) == 64


def test_a_changed_frame_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "camera.jsonl"
    write_sample(path)
    frame = captured_frames(read_camera_capture(path))[1]
    import cv2

    assert cv2.imwrite(str(frame.path), tray(99))  # someone replaced the frame of a result
    with pytest.raises(FrameIntegrityError, match=rf"{frame.path.name} does not match the capture: sha256"):
        read_camera_capture(path)
    with pytest.raises(FrameIntegrityError, match=frame.path.name):
        frame.load()
    unverified = read_camera_capture(path, verify=False)  # the records can still be listed
    assert len(captured_frames(unverified)) == 2


def test_a_missing_frame_is_an_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "camera.jsonl"
    write_sample(path)
    frame = captured_frames(read_camera_capture(path))[0]
    frame.path.unlink()
    with pytest.raises(FrameIntegrityError, match=rf"{frame.path.name} is missing"):
        read_camera_capture(path)


def test_a_capture_moved_as_a_whole_still_verifies(tmp_path: Path) -> None:
    path = tmp_path / "a" / "camera.jsonl"
    write_sample(path)
    (tmp_path / "a").rename(tmp_path / "archive")
    assert len(captured_frames(read_camera_capture(tmp_path / "archive" / "camera.jsonl"))) == 2


def test_a_frame_file_is_never_replaced(tmp_path: Path) -> None:
    with CameraCaptureWriter(tmp_path / "camera.jsonl") as capture:
        capture.write_frame(tray(1), T0, 1)
        with pytest.raises(FileExistsError):
            capture.write_frame(tray(2), T0, 1)
    [record] = captured_frames(read_camera_capture(tmp_path / "camera.jsonl"))
    assert np.array_equal(record.load(), tray(1))


def test_writing_after_close_is_an_error(tmp_path: Path) -> None:
    capture = CameraCaptureWriter(tmp_path / "camera.jsonl")
    capture.close()
    capture.close()
    with pytest.raises(ValueError, match="closed"):
        capture.write_frame(tray(1), T0, 1)
    with pytest.raises(ValueError, match="closed"):
        capture.write_health(DeviceOnline(device="cam", time=T0))


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ('{"t": 1, "dir": "rx", "data": "x"}', "'dir' must be 'frame', 'health' or 'reading'"),
        ("not json", "not a JSON record"),
        ("[1]", "expected a JSON object"),
        (
            '{"t": 1, "dir": "frame", "file": "/etc/passwd", "sha256": "' + "a" * 64 + '", "width": 1, '
            '"height": 1}',
            "must stay inside the capture's folder",
        ),
        (
            '{"t": 1, "dir": "frame", "file": "../x.png", "sha256": "' + "a" * 64 + '", "width": 1, '
            '"height": 1}',
            "must stay inside the capture's folder",
        ),
        (
            '{"t": 1, "dir": "frame", "file": "x.png", "sha256": "abc", "width": 1, "height": 1}',
            "64 lowercase",
        ),
        (
            '{"t": "x", "dir": "frame", "file": "x.png", "sha256": "'
            + "a" * 64
            + '", "width": 1, "height": 1}',
            "'t' must be a number",
        ),
        (
            '{"t": 1, "dir": "frame", "file": "x.png", "sha256": "'
            + "a" * 64
            + '", "width": -1, "height": 1}',
            "'width' must be a whole number",
        ),
        ('{"t": 1, "dir": "health"}', "'kind' must name"),
    ],
)
def test_a_bad_record_is_an_error_naming_the_line(tmp_path: Path, record: str, message: str) -> None:
    path = tmp_path / "camera.jsonl"
    path.write_text('{"t": 1, "dir": "health", "kind": "DeviceOnline"}\n\n' + record + "\n")
    with pytest.raises(CaptureError, match=rf"camera\.jsonl:3: .*{message}"):
        read_camera_capture(path, verify=False)


def test_frame_record_is_exported_for_replays(tmp_path: Path) -> None:
    path = tmp_path / "camera.jsonl"
    write_sample(path)
    assert all(isinstance(r, FrameRecord) for r in captured_frames(read_camera_capture(path)))


def test_a_capture_is_a_frame_source_for_replays(tmp_path: Path) -> None:
    path = tmp_path / "camera.jsonl"
    images = write_sample(path)
    source = make_source(f"capture:{path}")
    assert isinstance(source, CaptureSource)
    with source:
        assert np.array_equal(source.read(), images[0]) and np.array_equal(source.read(), images[1])
        assert [record.seq for record in source.frames] == [7, 8]
        with pytest.raises(SourceEnded, match="no more frames after 2"):
            source.read()
    with pytest.raises(CameraError, match="cannot be opened"):
        CaptureSource(tmp_path / "missing.jsonl").open()
    with pytest.raises(CameraError, match="not open"):
        CaptureSource(path).read()
    captured_frames(read_camera_capture(path))[0].path.write_bytes(b"tampered")
    with pytest.raises(FrameIntegrityError, match="does not match"):
        CaptureSource(path).open()  # a replay never runs on a changed frame
