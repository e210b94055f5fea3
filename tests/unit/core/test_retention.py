"""Retention, its pure parts: captures rotate by size and at UTC midnight, are compressed and still replay
file by file; a damaged gzip capture is a clear error; the settings have safe defaults and are validated.

Its unit tests; the integration ones are in `tests/integration/test_retention.py`."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from controller.config import ConfigError, RetentionSettings
from controller.replay import replay_file
from controller.retention import (
    tidy_captures,
)
from controller.table_build import TABLE_CONFIGS
from controller.testing.shoe_capture import record_shoes
from drivers.capture import CaptureWriter, read_capture, rotated_captures
from drivers.shoe.simulator import ShoeFaults
from tests.helpers.retention import DAY, base_config, capture_meta

pytestmark = pytest.mark.unit


def test_captures_rotate_by_size_compress_and_each_file_replays_on_its_own(tmp_path: Path) -> None:
    records, _ = record_shoes(1, seed=7, faults=ShoeFaults(noread_rate=0.05))
    path = tmp_path / "shoe.jsonl"
    writer = CaptureWriter(path, max_bytes=8_000)
    start = records[0].t
    assert start is not None
    writer.story("meta", capture_meta(), start)
    writer.story("link", {"event": "open"}, start)
    for record in records:
        assert record.t is not None
        writer.write(record.direction, record.data, record.t)
    writer.close()

    rotated = rotated_captures(path)
    assert len(rotated) >= 3
    assert all(file.stat().st_size <= 8_000 for file, _ in rotated)
    assert tidy_captures([path], keep_days=14, now=start) == (len(rotated), 0)
    files = [file for file, _ in rotated_captures(path)] + [path]
    assert all(file.name.endswith(".jsonl.gz") for file in files[:-1])
    assert files[0].name == f"shoe-{_stamp(start)}.jsonl.gz"
    device_records = []
    for file in files:
        back = read_capture(file)  # gz or not
        assert [r.direction for r in back[:2]] == ["meta", "link"], file
        assert back[0].info == capture_meta() and back[1].info == {"event": "open"}
        device_records += [r for r in back if r.direction in ("rx", "tx")]
        envelopes = list(replay_file("baccarat", "shoe-line", file))
        assert envelopes, f"{file.name} replays nothing"
    assert device_records == records  # nothing lost or repeated across the files


def test_captures_rotate_at_utc_midnight_and_old_ones_are_deleted(tmp_path: Path) -> None:
    path = tmp_path / "shoe.jsonl"
    midnight = 1_790_035_200.0  # 2026-09-22T00:00:00Z
    writer = CaptureWriter(path, daily=True)
    writer.story("meta", capture_meta(), midnight - 60)
    writer.rx(b"STATUS READY\r\n", midnight - 1)
    writer.rx(b"STATUS READY\r\n", midnight)  # a new day: a new file
    writer.close()
    ((first, began),) = rotated_captures(path)
    assert first.name == "shoe-20260921T235900Z.jsonl" and began == midnight - 60
    assert [r.direction for r in read_capture(first)] == ["meta", "rx"]
    assert [(r.direction, r.t) for r in read_capture(path)] == [("meta", midnight), ("rx", midnight)]

    # a restart the next day: the old file rotates at its first record; the service's meta heads the new one
    again = CaptureWriter(path, daily=True)
    again.story("meta", capture_meta(), midnight + DAY + 5)
    again.rx(b"STATUS READY\r\n", midnight + DAY + 6)
    again.close()
    assert [r.direction for r in read_capture(path)] == ["meta", "rx"]
    assert len(rotated_captures(path)) == 2
    # kept 1 day: the file begun the day before yesterday goes, yesterday's is compressed
    assert tidy_captures([path], keep_days=1, now=midnight + DAY + 10) == (1, 1)
    assert [f.name for f, _ in rotated_captures(path)] == ["shoe-20260922T000000Z.jsonl.gz"]
    # another device's capture with a similar name is none of this capture's rotated files
    (tmp_path / "shoe-2.jsonl").write_text("")
    assert len(rotated_captures(path)) == 1


def test_a_damaged_gzip_capture_is_a_clear_error(tmp_path: Path) -> None:
    from drivers.capture import CaptureError

    path = tmp_path / "shoe-20260101T000000Z.jsonl.gz"
    path.write_bytes(gzip.compress(b'{"t": 1, "dir": "rx", "data": "x"}\n')[:-6])
    with pytest.raises(CaptureError, match="damaged gzip"):
        read_capture(path)


def _stamp(t: float) -> str:
    import time

    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(t))


def test_retention_settings_have_safe_defaults_and_are_validated(tmp_path: Path) -> None:
    config = TABLE_CONFIGS.from_dict(base_config(tmp_path), environ={})
    assert config.retention == RetentionSettings()
    assert (config.retention.event_days, config.retention.event_archive) == (30.0, "gzip")
    env = {"TABLECTL__RETENTION__EVENT_DAYS": "7", "TABLECTL__RETENTION__EVENT_ARCHIVE": "drop"}
    overridden = TABLE_CONFIGS.from_dict(base_config(tmp_path), environ=env)
    assert (overridden.retention.event_days, overridden.retention.event_archive) == (7.0, "drop")
    for bad, where in (
        ({"event_days": 0}, "retention.event_days"),
        ({"event_archive": "zip"}, "retention.event_archive"),
        ({"prune_batch": 0}, "retention.prune_batch"),
        ({"capture_max_bytes": 100}, "retention.capture_max_bytes"),
        ({"disk_low_bytes": -1}, "retention.disk_low_bytes"),
        ({"keep_days": 3}, "retention.keep_days"),
    ):
        with pytest.raises(ConfigError, match=where):
            TABLE_CONFIGS.from_dict(base_config(tmp_path, **bad), environ={})
