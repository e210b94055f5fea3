"""Every file the table writes has a bound, held with real files on disk: the event archive (age and bytes,
never the newest file), the rotated captures of all devices together (bytes), the cameras' captures and
their frames (rotation every N frames, age and bytes, deleted as units), and nothing still needed by an open
round or an undelivered event; the disk check counts what the table's files take.

Its unit tests; the integration ones are in `tests/integration/test_retention_bounds.py`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from controller.config import ConfigError
from controller.retention import (
    frames_dir,
    table_files,
    tidy_camera,
    tidy_captures,
    usage,
)
from controller.table_build import TABLE_CONFIGS
from drivers.camera import CameraCaptureWriter, FrameRecord, read_camera_capture
from drivers.capture import CaptureWriter, rotated_captures
from drivers.readings import DeviceOnline
from tests.helpers.retention_bounds import DAY, MIB, T0, noise

pytestmark = pytest.mark.unit


# --- device captures ----------------------------------------------------------------------------------------


def test_rotated_captures_of_all_devices_stay_under_their_total_bytes_oldest_first(tmp_path: Path) -> None:
    paths = [tmp_path / "shoe.jsonl", tmp_path / "shuffler.jsonl"]
    writers = [CaptureWriter(path, max_bytes=64 * 1024) for path in paths]
    rng = np.random.default_rng(5)
    t = T0
    for _ in range(300):  # 2.4 MB each: 30-odd rotated files per device
        t += 1.0
        for writer in writers:
            writer.rx(rng.bytes(4000).hex().encode(), t)
    before = sorted((began, file.name) for path in paths for file, began in rotated_captures(path))
    assert len(before) > 40
    bound = MIB
    compressed, deleted = tidy_captures(paths, keep_days=14, now=t, total_bytes=bound)
    kept = [(file, began) for path in paths for file, began in rotated_captures(path)]
    assert compressed == len(before) and deleted == len(before) - len(kept) > 0
    assert sum(file.stat().st_size for file, _ in kept) <= bound
    after = sorted((began, file.name.removesuffix(".gz")) for file, began in kept)
    assert after == before[-len(after) :]  # the oldest went first
    assert all(path.exists() for path in paths)  # the files being written are never touched
    for writer in writers:
        writer.close()


def test_a_rotated_capture_an_open_round_may_need_is_kept_over_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "shoe.jsonl"
    writer = CaptureWriter(path, max_bytes=64 * 1024)
    rng = np.random.default_rng(6)
    for i in range(200):
        writer.rx(rng.bytes(4000).hex().encode(), T0 + i)
    writer.close()
    spans = rotated_captures(path)
    middle = len(spans) // 2
    since = spans[middle][1]  # the round opened as this file began
    bound = 200_000  # less than the needed files take, compressed
    tidy_captures([path], keep_days=14, now=T0 + 300, total_bytes=bound, evidence_since=since)
    left = rotated_captures(path)
    # the files from the round's opening on stay though they exceed the bound; the older ones go
    assert [began for _, began in left] == [began for _, began in spans[middle:]]
    assert sum(f.stat().st_size for f, _ in left) > bound


# --- cameras ------------------------------------------------------------------------------------------------


def write_frames(writer: CameraCaptureWriter, count: int, t: float) -> float:
    for seq in range(count):
        t += 30.0
        writer.write_frame(noise(seq), t, seq + 1)
    return t


def camera_bytes(path: Path) -> int:
    files = table_files(path.parent / "t1-journal.sqlite3", cameras=[path])
    found = usage(files)
    return found["camera"].bytes + found["frames"].bytes


def test_camera_frames_are_bounded_by_bytes_and_age_deleted_with_their_capture_file(tmp_path: Path) -> None:
    path = tmp_path / "captures" / "camera.jsonl"
    writer = CameraCaptureWriter(path, max_frames=5, daily=True)
    writer.write_health(DeviceOnline(device="camera", time=T0, detail="camera 200x200"))
    t = write_frames(writer, 42, T0)  # 8 rotated files of 5 frames, 2 frames in the live file
    units = rotated_captures(path)
    assert len(units) == 8
    # every rotated file begins with the camera's health again: it replays on its own
    for file, _ in units:
        assert type(read_camera_capture(file)[0]).__name__ == "HealthRecord"
    frames = sorted(frames_dir(path).iterdir())
    assert len(frames) == 42
    frame_size = frames[0].stat().st_size
    assert frame_size > 100_000

    bound = 20 * frame_size  # room for 4 files of 5 frames: the oldest go
    files_deleted, frames_deleted = tidy_camera([path], keep_days=7, max_bytes=bound, now=t)
    assert camera_bytes(path) <= bound
    left = rotated_captures(path)
    assert [began for _, began in left] == [began for _, began in units[-len(left) :]]  # oldest went first
    assert files_deleted == len(units) - len(left) and frames_deleted == 5 * files_deleted
    for file, _ in left:
        read_camera_capture(file)  # verified: every frame a kept file names is still there, unchanged
    live = [r for r in read_camera_capture(path) if isinstance(r, FrameRecord)]
    assert len(live) == 2  # the live file's frames are never touched
    # what no kept file names is gone: the folder holds exactly the kept files' frames
    named = {r.path for file, _ in left for r in read_camera_capture(file) if isinstance(r, FrameRecord)}
    assert set(frames_dir(path).iterdir()) == named | {r.path for r in live}

    # 8 days later (a new file that day), every rotated file is past frame_days: each goes with its frames
    writer.write_health(DeviceOnline(device="camera", time=t + 8 * DAY, detail="camera 200x200"))
    tidy_camera([path], keep_days=7, max_bytes=bound, now=t + 8 * DAY + 1)
    assert rotated_captures(path) == [] and list(frames_dir(path).iterdir()) == []
    assert [type(r).__name__ for r in read_camera_capture(path)] == ["HealthRecord"]  # the live file
    writer.close()


def test_frames_an_open_round_needs_stay_and_a_capture_cannot_make_retention_delete_other_files(
    tmp_path: Path,
) -> None:
    path = tmp_path / "camera.jsonl"
    writer = CameraCaptureWriter(path, max_frames=2)
    t = write_frames(writer, 10, T0)
    writer.close()
    units = rotated_captures(path)
    # a round opened at the third file: it and every later one stay, however tight the bound
    since = units[2][1]
    tidy_camera([path], keep_days=7, max_bytes=16 * MIB // 1000, now=t, evidence_since=since)
    # (the second file ended as the round opened: nothing of the round is in it)
    assert [began for _, began in rotated_captures(path)] == [began for _, began in units[2:]]

    # a rotated capture that names a file outside the frames folder: the file is never deleted
    victim = tmp_path / "t1-journal.sqlite3"
    victim.write_bytes(b"the journal")
    forged = tmp_path / "camera-20200101T000000Z.jsonl"
    record = {
        "t": 1_577_836_800.0,
        "dir": "frame",
        "file": victim.name,
        "sha256": hashlib.sha256(b"the journal").hexdigest(),
        "width": 1,
        "height": 1,
        "seq": 1,
    }
    forged.write_text(json.dumps(record) + "\n")
    # an orphan frame (its record never written), older than an hour: it goes
    orphan = frames_dir(path) / "00000099-20200101T000000.000Z.png"
    orphan.write_bytes(b"\x89PNG orphan")
    tidy_camera([path], keep_days=7, max_bytes=1024**3, now=t)
    assert not forged.exists()  # it was old: deleted as a unit...
    assert victim.read_bytes() == b"the journal"  # ...but never what it named outside the frames folder
    assert not orphan.exists()


def test_the_new_bounds_are_configurable_and_validated(tmp_path: Path) -> None:
    raw: dict[str, Any] = {
        "table": {"studio_id": "s1", "table_id": "t1", "game": "baccarat", "data_dir": str(tmp_path)},
        "devices": {"shoe": {"protocol": "shoe-line", "port": "/dev/null"}},
    }
    defaults = TABLE_CONFIGS.from_dict(raw, environ={}).retention
    assert defaults.archive_days == 365 and defaults.frame_days == 7
    assert defaults.frame_max_bytes == 8 * 1024**3 and defaults.camera_frames_per_file == 500
    for bad, where in (
        ({"archive_days": 0}, "retention.archive_days"),
        ({"archive_max_bytes": 10}, "retention.archive_max_bytes"),
        ({"capture_total_bytes": -1}, "retention.capture_total_bytes"),
        ({"camera_frames_per_file": 0}, "retention.camera_frames_per_file"),
        ({"frame_max_bytes": 1000}, "retention.frame_max_bytes"),
    ):
        with pytest.raises(ConfigError, match=where):
            TABLE_CONFIGS.from_dict({**raw, "retention": bad}, environ={})
