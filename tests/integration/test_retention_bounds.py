"""Every file the table writes has a bound, held by the housekeeping with real files on disk: the event
archive (age, then bytes, never the newest file), the cameras' captures and their frames, and every kind of
file the table writes found.

Its integration tests; the unit ones are in `tests/unit/core/test_retention_bounds.py`."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from controller.config import RetentionSettings
from controller.events import RoundOpened, make_event
from controller.journal import Journal
from controller.retention import (
    ARCHIVE_DIR,
    Housekeeping,
    Usage,
    archive_files,
    archive_path,
    table_files,
    tidy_archive,
)
from drivers.camera import CameraCaptureWriter
from tests.helpers.retention_bounds import DAY, MIB, T0, noise

pytestmark = pytest.mark.integration

SOURCE = "studio/s1/table/t1"


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class StatusBoard:
    def __init__(self) -> None:
        self.disk: list[tuple[int, str, int]] = []

    def set_disk(self, free_bytes: int, status: str, used_bytes: int) -> None:
        self.disk.append((free_bytes, status, used_bytes))


def settings(**fields: Any) -> RetentionSettings:
    return RetentionSettings.model_validate(fields)


def keeper(tmp_path: Path, clock: FakeClock, **fields: Any) -> tuple[Housekeeping, Journal, StatusBoard]:
    path = tmp_path / "t1-journal.sqlite3"
    journal = Journal(path, SOURCE, clock=clock)
    board = StatusBoard()
    keeping = Housekeeping(
        settings(disk_low_bytes=0, **fields),
        journal=journal,
        journal_path=path,
        report_disk=board.set_disk,
        captures=[],
        clock=clock,
    )
    return keeping, journal, board


# --- the event archive --------------------------------------------------------------------------------------


async def test_the_event_archive_is_bounded_by_age_then_bytes_oldest_first_never_the_newest(
    tmp_path: Path,
) -> None:
    clock = FakeClock(T0)
    keeping, journal, board = keeper(tmp_path, clock, event_days=1, archive_days=5)
    # 12 days of events, about half a megabyte of archive a day (random hex: gzip halves it, no more)
    rng = np.random.default_rng(3)
    for day in range(12):
        clock.now = T0 + day * DAY
        events = []
        for n in range(40):
            data = RoundOpened(
                game="baccarat",
                round_id=rng.bytes(12_000).hex(),
                round_number_in_shoe=n,
                betting_closes_at=None,
            )
            events.append(make_event("round.opened", data, time=clock.now))
        for envelope in journal.append(events):
            journal.acknowledge(int(envelope.sequence))
    clock.now = T0 + 13 * DAY
    await keeping.tidy()
    today = int(clock.now // DAY)
    days = [day for _, day in archive_files(keeping.journal_path)]
    assert days == [today - 5, today - 4, today - 3, today - 2]  # older than archive_days: gone

    # a bytes bound: the oldest days go first until the archive fits; the newest stays whatever its size
    newest = archive_files(keeping.journal_path)[-1][0]
    keeping.settings = keeping.settings.model_copy(update={"archive_max_bytes": MIB})
    await keeping.tidy()
    left = [path for path, _ in archive_files(keeping.journal_path)]
    assert left[-1] == newest and len(left) < 4
    assert sum(path.stat().st_size for path in left) <= MIB or left == [newest]
    # the disk check counts them: the archive's bytes are in what the table's files take
    await keeping.check_disk()
    assert keeping.usage["archive"] == Usage(len(left), sum(path.stat().st_size for path in left))
    assert board.disk[-1][2] == sum(item.bytes for item in keeping.usage.values())
    assert keeping.usage["journal"].bytes > 0
    journal.close()


def test_the_newest_archive_file_is_never_deleted_even_past_its_days(tmp_path: Path) -> None:
    journal_path = tmp_path / "t1-journal.sqlite3"
    only = archive_path(journal_path, "20260922")
    only.parent.mkdir()
    only.write_bytes(gzip.compress(b'{"sequence": "000000000001"}\n'))
    assert tidy_archive(journal_path, keep_days=1, max_bytes=MIB, now=T0 + 400 * DAY) == 0
    assert only.exists()


async def test_housekeeping_rotates_the_cameras_bounds_their_frames_and_counts_them(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    path = tmp_path / "t1-journal.sqlite3"
    journal = Journal(path, SOURCE, clock=clock)
    camera = CameraCaptureWriter(tmp_path / "captures" / "camera.jsonl")
    board = StatusBoard()
    keeping = Housekeeping(
        settings(disk_low_bytes=0, camera_frames_per_file=4, frame_max_bytes=16 * MIB),
        journal=journal,
        journal_path=path,
        report_disk=board.set_disk,
        captures=[],
        cameras=[camera],
        clock=clock,
    )
    assert camera.daily and camera.max_frames == 4  # set from [retention]
    t = T0
    for seq in range(1, 201):  # 200 frames of 120 kB: 24 MB, over the 16 MiB bound
        t += 20.0
        camera.write_frame(noise(seq), t, seq)
    clock.now = t
    await keeping.check_disk()
    before = keeping.usage["frames"]
    assert before.files == 200 and "frames" in keeping.exceeded
    await keeping.tidy()
    await keeping.check_disk()
    after = keeping.usage["camera"].bytes + keeping.usage["frames"].bytes
    assert after <= 16 * MIB and keeping.exceeded == []
    assert board.disk[-1][2] == sum(item.bytes for item in keeping.usage.values())
    camera.close()
    journal.close()


def test_table_files_finds_every_kind(tmp_path: Path) -> None:
    journal_path = tmp_path / "t1-journal.sqlite3"
    Journal(journal_path, SOURCE).close()
    (tmp_path / ARCHIVE_DIR).mkdir()
    (tmp_path / ARCHIVE_DIR / "t1-journal-20260101.jsonl.gz").write_bytes(b"x")
    found = table_files(journal_path)
    assert [p.name for p in found["archive"]] == ["t1-journal-20260101.jsonl.gz"]
    assert journal_path in found["journal"]
