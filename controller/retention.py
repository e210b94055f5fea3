"""Housekeeping: the table's disk must not fill up, and the studio hears of it well before it does.

A busy table journals 6-7 MB of events a day and its captures grow by megabytes a day of heartbeats alone;
a full disk makes the journal unwritable, and the service then stops (fail-stop) and restarts in a loop.
`Housekeeping` runs beside the service (its own task, `retention` settings) and does three things:

- **Old events leave the journal.** Acknowledged events (no longer in the outbox) recorded more than
  `event_days` ago are archived, oldest first, in batches of `prune_batch`: appended as gzip JSON Lines (the
  envelopes exactly as published) to `archive/<journal>-<YYYYMMDD>.jsonl.gz` beside the journal, one file per
  UTC day of `recordedtime`, written to a temporary file, synced and renamed into place *before* the rows are
  deleted. With `event_archive = "drop"` they are deleted without an archive. An event still in the outbox,
  and everything after it, stays. The sequence continues (`last_sequence` is in the journal's `meta`);
  `replay_events` for a pruned range says it was archived.
- **Captures rotate.** Every UTC day and beyond `capture_max_bytes` (see `drivers.capture`); rotated files are
  compressed here and deleted once they began more than `capture_days` UTC days before today.
  All rotated captures together are kept under `capture_total_bytes`, oldest first.
- **The archive is bounded.** A day's archive file goes once its day is more than `archive_days` UTC days
  before today, and the oldest go while the archive is over `archive_max_bytes`; the newest file (the one
  the next batch appends to) is never deleted. Archived events were acknowledged by the broker long before.
- **Camera frames are bounded.** A camera's capture rotates every UTC day and every
  `camera_frames_per_file` frames (`drivers.camera.capture`); a rotated file and the frames it names are
  one unit, deleted together (frames first: an interrupted deletion leaves a file whose frames are gone,
  which is the oldest and goes next time) once it began more than `frame_days` UTC days ago, or oldest
  first while frames and camera captures are over `frame_max_bytes`. A frame no file names (a crash between
  the frame and its record) goes once it is an hour old. Only files inside the frames folder are ever
  deleted, whatever a capture names.
- **Nothing still needed goes.** The file being written never goes; neither does a rotated file (nor its
  frames) that may hold evidence of the round open now or of an event not yet delivered to the broker: one
  that ended after `evidence_since` (the service's: the open round's opening, the oldest event in the
  outbox). A bound can then be exceeded for a while; the disk check says so.
- **Free space is watched.** Every `disk_check_seconds` the smallest free space of the file systems the
  table writes to (journal, archive, captures, frames) goes into the retained status:
  `"disk": {"free_bytes": ..., "status": "low", "used_bytes": ...}`, `low` while it is under
  `disk_low_bytes`; `used_bytes` is what the table's own files take (`table_files`: the metrics show it by
  kind, with the number of files, and say which bounds are exceeded).

Every file the service writes is one of those kinds: the journal (with its WAL and shared memory: bounded
by `event_days` once the broker acknowledged the events), the archive, the devices' byte captures, the
cameras' captures and their frames. (`drivers.dice.camera`, which saves JPEG frames by hand, is not used
by the service.)

Everything that touches files (archives, compression, free space) runs in a thread (`asyncio.to_thread`); the
journal itself is used on the event loop, one short batch at a time. A failure is logged and retried at the
next round: housekeeping never stops the table.
"""

from __future__ import annotations

import asyncio
import calendar
import gzip
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from controller.config import RetentionSettings
from controller.events import iso_ms
from controller.journal import Journal, StoredEvent
from drivers.capture import (
    CaptureError,
    CaptureWriter,
    compress_capture,
    first_record_time,
    rotated_captures,
    sync_dir,
)

if TYPE_CHECKING:
    # only for types: a table without a camera never loads the camera code (nor OpenCV)
    from drivers.camera.capture import CameraCaptureWriter

log = logging.getLogger(__name__)

ARCHIVE_DIR = "archive"
DAY_SECONDS = 86400.0
#: a frame that no camera capture names is an orphan once this old (younger, its record may be on its way)
ORPHAN_SECONDS = 3600.0
#: the kinds of file the table writes (`table_files`), in the order the metrics list them
FILE_KINDS = ("journal", "archive", "captures", "camera", "frames")
_ARCHIVE_DAY = re.compile(r"-(\d{8})\.jsonl\.gz$")
_FRAME_TIME = re.compile(r"^\d+-(\d{8}T\d{6})\.(\d{3})Z\.png$")


# --- the event archive --------------------------------------------------------------------------------------


def archive_path(journal_path: Path, day: str) -> Path:
    """Where the events recorded on UTC `day` (YYYYMMDD) are archived."""
    return journal_path.parent / ARCHIVE_DIR / f"{journal_path.stem}-{day}.jsonl.gz"


def archive_day(recordedtime: str) -> str:
    """`2026-12-01T13:45:00.000Z` -> `20261201`."""
    return recordedtime[:10].replace("-", "")


def read_archive(path: str | Path) -> list[dict[str, object]]:
    """The envelopes in an archive file, in order."""
    with gzip.open(path, "rt", encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def write_archive(journal_path: Path, events: Sequence[StoredEvent]) -> list[Path]:
    """Append `events` to their days' archive files, each replaced atomically (temporary file, fsync, rename,
    directory fsync). Events an earlier, interrupted round already archived are not written twice. Blocking:
    run it in a thread. Returns the files written."""
    by_day: dict[str, list[StoredEvent]] = {}
    for event in events:
        by_day.setdefault(archive_day(event.recordedtime), []).append(event)
    directory = journal_path.parent / ARCHIVE_DIR
    directory.mkdir(mode=0o700, exist_ok=True)
    written = []
    for day, day_events in by_day.items():
        target = archive_path(journal_path, day)
        existing = target.read_bytes() if target.exists() else b""
        archived = _last_sequence(existing)
        fresh = [event for event in day_events if event.sequence > archived]
        if not fresh:
            continue
        # A gzip file may hold several members: the new events are one more, after the bytes already there.
        member = gzip.compress("".join(event.envelope + "\n" for event in fresh).encode("utf-8"), mtime=0)
        temporary = target.with_name(f".{target.name}.tmp")
        with temporary.open("wb") as file:
            file.write(existing)
            file.write(member)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
        written.append(target)
    if written:
        sync_dir(directory)
    return written


def _last_sequence(archive: bytes) -> int:
    if not archive:
        return 0
    lines = gzip.decompress(archive).rstrip(b"\n").rsplit(b"\n", 1)
    return int(json.loads(lines[-1])["sequence"])


async def prune_events(
    journal: Journal,
    journal_path: Path,
    settings: RetentionSettings,
    clock: Callable[[], float],
    *,
    pause: float = 0.0,
) -> int:
    """Archive (or drop) and delete the acknowledged events older than `settings.event_days`, batch by batch.
    Returns how many left the journal."""
    total = 0
    while True:
        cutoff = iso_ms(clock() - settings.event_days * DAY_SECONDS)
        batch = journal.prunable(cutoff, settings.prune_batch)
        if not batch:
            return total
        if settings.event_archive == "gzip":
            await asyncio.to_thread(write_archive, journal_path, batch)
        # The rows are read again by nobody meanwhile: appends only add later sequences, and an event that was
        # acknowledged never returns to the outbox; prune_through refuses if one somehow did.
        journal.prune_through(batch[-1].sequence)
        total += len(batch)
        if len(batch) < settings.prune_batch:
            return total
        await asyncio.sleep(pause)  # let readings and commands in between two batches


def archive_files(journal_path: Path) -> list[tuple[Path, int]]:
    """This journal's archive files, each with its UTC day (days since the epoch), oldest first."""
    directory = journal_path.parent / ARCHIVE_DIR
    prefix = f"{journal_path.stem}-"
    found = []
    for entry in _entries(directory):
        match = _ARCHIVE_DAY.search(entry.name)
        if match and entry.name.startswith(prefix) and entry.name == f"{prefix}{match.group(1)}.jsonl.gz":
            day = calendar.timegm(time.strptime(match.group(1), "%Y%m%d")) // int(DAY_SECONDS)
            found.append((entry, day))
    return sorted(found, key=lambda item: item[1])


def tidy_archive(journal_path: Path, keep_days: int, max_bytes: int, now: float) -> int:
    """Delete the archive files of days more than `keep_days` UTC days before today, then the oldest while
    the archive is over `max_bytes`; never the newest file (the next batch appends to it). Blocking: run it
    in a thread. Returns how many were deleted."""
    files = archive_files(journal_path)
    if len(files) < 2:
        return 0
    *older, newest = files
    today = int(now // DAY_SECONDS)
    deleted = 0
    kept = []
    for path, day in older:
        if today - day > keep_days:
            path.unlink(missing_ok=True)
            deleted += 1
        else:
            kept.append(path)
    total = sum(_size(path) for path in kept) + _size(newest[0])
    for path in kept:
        if total <= max_bytes:
            break
        total -= _size(path)
        path.unlink(missing_ok=True)
        deleted += 1
    return deleted


# --- captures -----------------------------------------------------------------------------------------------


def _needed(ended: float | None, evidence_since: float | None) -> bool:
    """Whether a file that ended at `ended` (None: unknown) may hold evidence still needed: anything from
    `evidence_since` on (None: nothing is)."""
    return evidence_since is not None and (ended is None or ended > evidence_since)


def _rotated_spans(path: Path) -> list[tuple[Path, float, float | None]]:
    """The rotated files of the capture at `path`, oldest first, each with when it began and ended (when the
    next one began; for the last, the live file's first record; None if unknown)."""
    rotated = rotated_captures(path)
    live = first_record_time(path) if _size(path) else None
    spans = []
    for i, (file, began) in enumerate(rotated):
        ended = rotated[i + 1][1] if i + 1 < len(rotated) else live
        spans.append((file, began, ended))
    return spans


def tidy_captures(
    paths: Iterable[Path],
    keep_days: int,
    now: float,
    *,
    total_bytes: int | None = None,
    evidence_since: float | None = None,
) -> tuple[int, int]:
    """Compress the rotated files of these captures, and delete those begun more than `keep_days` UTC days
    before today (with 1, yesterday's file stays, the day before's goes), then the oldest (of all these
    captures) while they are over `total_bytes` together; never one still needed (`_needed`). Blocking: run
    it in a thread. Returns (compressed, deleted)."""
    today = int(now // DAY_SECONDS)
    compressed = deleted = 0
    kept: list[tuple[float, Path]] = []
    for path in paths:
        for rotated, began, ended in _rotated_spans(Path(path)):
            if _needed(ended, evidence_since):
                if rotated.suffix != ".gz":
                    compress_capture(rotated)
                    compressed += 1
                continue  # never deleted, nor counted against the bytes it cannot free
            if today - int(began // DAY_SECONDS) > keep_days:
                rotated.unlink(missing_ok=True)
                deleted += 1
                continue
            if rotated.suffix != ".gz":
                rotated = compress_capture(rotated)
                compressed += 1
            kept.append((began, rotated))
    if total_bytes is not None:
        needed_bytes = sum(
            _size(file)
            for path in paths
            for file, _, ended in _rotated_spans(Path(path))
            if _needed(ended, evidence_since)
        )
        total = needed_bytes + sum(_size(file) for _, file in kept)
        for _, file in sorted(kept, key=lambda item: (item[0], item[1].name)):
            if total <= total_bytes:
                break
            total -= _size(file)
            file.unlink(missing_ok=True)
            deleted += 1
    return compressed, deleted


# --- camera frames ------------------------------------------------------------------------------------------


def frames_dir(camera_path: Path) -> Path:
    """Where the camera capture at `camera_path` keeps its frames (`drivers.camera.capture`)."""
    return camera_path.parent / f"{camera_path.stem}-frames"


def frame_time(frame: Path) -> float:
    """When a frame was taken: from its name (`<seq>-<UTC time>.png`), else its modification time."""
    match = _FRAME_TIME.match(frame.name)
    if match is None:
        try:
            return frame.stat().st_mtime
        except OSError:
            return 0.0
    return calendar.timegm(time.strptime(match.group(1), "%Y%m%dT%H%M%S")) + int(match.group(2)) / 1000


@dataclass
class _Unit:
    """A rotated camera capture and the frames it names (only those inside its frames folder)."""

    file: Path
    began: float
    ended: float | None
    frames: list[Path] = field(default_factory=list)

    def size(self) -> int:
        return _size(self.file) + sum(_size(frame) for frame in self.frames)

    def delete(self) -> int:
        # frames first: interrupted, what stays is a file whose frames are gone, the oldest, deleted next time
        for frame in self.frames:
            frame.unlink(missing_ok=True)
        self.file.unlink(missing_ok=True)
        return len(self.frames)


def _named_frames(capture: Path, folder: Path) -> list[Path] | None:
    """The frames a camera capture names that lie directly in `folder` (None if it cannot be read): a
    capture is read, not trusted, and retention deletes nothing outside the frames folder whatever a record
    says."""
    from drivers.camera.capture import FrameRecord, read_camera_capture

    try:
        records = read_camera_capture(capture, verify=False)
    except (CaptureError, OSError) as exc:
        log.warning("camera capture %s cannot be read (%s): no orphan frame is deleted", capture, exc)
        return None
    return [
        record.path
        for record in records
        if isinstance(record, FrameRecord) and record.path.parent == folder and record.path.suffix == ".png"
    ]


def tidy_camera(
    paths: Iterable[Path],
    keep_days: int,
    max_bytes: int,
    now: float,
    *,
    evidence_since: float | None = None,
) -> tuple[int, int]:
    """Bound these cameras' captures and frames (see the module docstring): units begun more than `keep_days`
    UTC days ago go, orphan frames an hour old go, then the oldest units while frames and captures are over
    `max_bytes` in all; never the live file, never what is still needed. Blocking: run it in a thread.
    Returns (capture files deleted, frames deleted)."""
    today = int(now // DAY_SECONDS)
    files_deleted = frames_deleted = 0
    units: list[_Unit] = []
    live: dict[Path, set[Path]] = {}
    cameras = [Path(path) for path in paths]
    unreadable: set[Path] = set()  # folders with a capture that cannot be read: no frame there is an orphan
    for path in cameras:
        folder = frames_dir(path)
        for file, began, ended in _rotated_spans(path):
            named = _named_frames(file, folder)
            if named is None:
                unreadable.add(folder)
            units.append(_Unit(file, began, ended, named or []))
        named = _named_frames(path, folder) if _size(path) else []
        if named is None:
            unreadable.add(folder)
        live[folder] = set(named or [])
    units.sort(key=lambda unit: (unit.began, unit.file.name))
    remaining = []
    for unit in units:
        if not _needed(unit.ended, evidence_since) and today - int(unit.began // DAY_SECONDS) > keep_days:
            frames_deleted += unit.delete()
            files_deleted += 1
        else:
            remaining.append(unit)
    kept = {frame for unit in remaining for frame in unit.frames}
    for folder, named_live in live.items():
        if folder in unreadable:
            continue
        for frame in _entries(folder):
            if frame in kept or frame in named_live or frame.suffix != ".png":
                continue
            taken = frame_time(frame)
            if taken < now - ORPHAN_SECONDS and not _needed(taken, evidence_since):
                frame.unlink(missing_ok=True)
                frames_deleted += 1
    # everything the cameras wrote: live files, rotated files, every frame (named or not yet)
    total = (
        sum(_size(path) for path in cameras)
        + sum(_size(unit.file) for unit in remaining)
        + sum(_size(entry) for folder in live for entry in _entries(folder))
    )
    for unit in remaining:
        if total <= max_bytes:
            break
        if _needed(unit.ended, evidence_since):
            continue
        total -= unit.size()
        frames_deleted += unit.delete()
        files_deleted += 1
    return files_deleted, frames_deleted


# --- what the table has written -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """How many files of a kind the table has written, and their bytes."""

    files: int = 0
    bytes: int = 0


def table_files(
    journal_path: Path, captures: Iterable[Path] = (), cameras: Iterable[Path] = ()
) -> dict[str, list[Path]]:
    """Every file the table service writes, by kind (`FILE_KINDS`)."""
    journal = [Path(f"{journal_path}{suffix}") for suffix in ("", "-wal", "-shm")]
    prefix = f"{journal_path.stem}-"
    files: dict[str, list[Path]] = {
        "journal": [path for path in journal if path.exists()],
        # an archive file, and the temporary file an interrupted write left beside it
        "archive": [
            entry
            for entry in _entries(journal_path.parent / ARCHIVE_DIR)
            if entry.name.lstrip(".").startswith(prefix)
        ],
        "captures": [],
        "camera": [],
        "frames": [],
    }
    for path in map(Path, captures):
        files["captures"] += [p for p in [path] if p.exists()] + [p for p, _ in rotated_captures(path)]
    for path in map(Path, cameras):
        files["camera"] += [p for p in [path] if p.exists()] + [p for p, _ in rotated_captures(path)]
        files["frames"] += _entries(frames_dir(path))
    return files


def usage(files: dict[str, list[Path]]) -> dict[str, Usage]:
    return {kind: Usage(len(paths), sum(_size(path) for path in paths)) for kind, paths in files.items()}


def _entries(directory: Path) -> list[Path]:
    try:
        return [entry for entry in directory.iterdir() if entry.is_file()]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def evidence_since(journal: Journal, round_open: bool) -> float | None:
    """From when on a table's files may hold evidence still needed: the opening of the round open now (if
    one is) and the oldest event not yet delivered to the broker (its recording), the earlier of the two.
    None: nothing is needed beyond the files being written."""
    times = []
    if round_open:
        opened = journal.last_event("round.opened")
        # opened before the journal's own records? then everything is kept until the round ends
        times.append(_epoch(opened.time) if opened is not None else 0.0)
    _, oldest = journal.outbox_summary()
    if oldest is not None:
        times.append(_epoch(oldest))
    return min(times, default=None)


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


# --- free space ---------------------------------------------------------------------------------------------


def free_bytes(directories: Iterable[Path]) -> int:
    """The smallest free space (for this unprivileged process) of the file systems holding `directories`."""
    return min(shutil.disk_usage(directory).free for directory in directories)


class Housekeeping:
    """The retention task of one table service (see the module docstring)."""

    def __init__(
        self,
        settings: RetentionSettings,
        *,
        journal: Journal,
        journal_path: Path,
        report_disk: Callable[[int, str, int], None],
        captures: Sequence[CaptureWriter],
        cameras: Sequence[CameraCaptureWriter] = (),
        evidence_since: Callable[[], float | None] = lambda: None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.journal = journal
        self.journal_path = journal_path
        #: where the free space, its status and the table's own bytes go (`TableBus.set_disk`)
        self.report_disk = report_disk
        self.captures = list(captures)
        self.cameras = list(cameras)
        #: from when on evidence may still be needed (the service's: open round, undelivered events)
        self.evidence_since = evidence_since
        self.clock = clock
        self.disk_status: str | None = None
        #: what the table's files took at the last disk check, by kind; and the bounds they exceeded
        self.usage: dict[str, Usage] = {}
        self.exceeded: list[str] = []
        if settings.enabled:  # disabled, the captures grow as before: nothing would compress or prune them
            for capture in self.captures:
                capture.max_bytes = settings.capture_max_bytes
                capture.daily = True
            for camera in self.cameras:
                camera.max_frames = settings.camera_frames_per_file
                camera.daily = True

    async def run(self) -> None:
        if not self.settings.enabled:
            return
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(
                self._every(self.settings.disk_check_seconds, self.check_disk), name="disk-check"
            )
            tasks.create_task(self._every(self.settings.interval_seconds, self.tidy), name="retention")

    async def _every(self, seconds: float, job: Callable[[], Awaitable[object]]) -> None:
        while True:
            try:
                await job()
            except Exception:
                # Housekeeping must never stop the table: say so, try again next time.
                log.exception("housekeeping failed; trying again in %.0f s", seconds)
            await asyncio.sleep(seconds)

    def files(self) -> dict[str, list[Path]]:
        """Every file the table has written now, by kind (blocking: a directory scan)."""
        return table_files(
            self.journal_path,
            [capture.path for capture in self.captures],
            [camera.path for camera in self.cameras],
        )

    def directories(self) -> set[Path]:
        """Every directory the table writes to (those that exist): their file systems' free space counts."""
        candidates = {self.journal_path.parent, self.journal_path.parent / ARCHIVE_DIR}
        candidates |= {capture.path.parent for capture in self.captures}
        for camera in self.cameras:
            candidates |= {camera.path.parent, frames_dir(camera.path)}
        return {directory for directory in candidates if directory.is_dir()}

    def bounds_exceeded(self, found: dict[str, Usage]) -> list[str]:
        """The kinds over their bound (what is still needed may hold one over it for a while)."""
        settings, exceeded = self.settings, []
        if found.get("archive", Usage()).bytes > settings.archive_max_bytes:
            exceeded.append("archive")
        # the live files are bounded by their own rotation, the rotated ones together
        live_captures = len(self.captures) * settings.capture_max_bytes
        if found.get("captures", Usage()).bytes > settings.capture_total_bytes + live_captures:
            exceeded.append("captures")
        camera = found.get("camera", Usage()).bytes + found.get("frames", Usage()).bytes
        if camera > settings.frame_max_bytes:
            exceeded.append("frames")
        return exceeded

    async def check_disk(self) -> str:
        """Measure the free space and the table's own files, and put them in the retained status. Returns
        "ok" or "low"."""

        def measure() -> tuple[int, dict[str, Usage]]:
            return free_bytes(self.directories()), usage(self.files())

        free, found = await asyncio.to_thread(measure)
        self.usage, self.exceeded = found, self.bounds_exceeded(found)
        used = sum(item.bytes for item in found.values())
        status = "low" if free < self.settings.disk_low_bytes else "ok"
        if status != self.disk_status:
            if status == "low":
                log.warning(
                    "free disk space is low: %d bytes (under %d), the table's own files take %d bytes (%s): "
                    "the journal stops when the disk is full",
                    free,
                    self.settings.disk_low_bytes,
                    used,
                    ", ".join(f"{kind} {item.bytes}" for kind, item in found.items() if item.files),
                )
            elif self.disk_status is not None:
                log.info("free disk space is back above the threshold: %d bytes", free)
        self.disk_status = status
        self.report_disk(free, status, used)
        return status

    async def tidy(self) -> None:
        """One round: old events out of the journal, the archive bounded, rotated captures compressed and
        the oldest deleted, the cameras' frames bounded."""
        pruned = await prune_events(self.journal, self.journal_path, self.settings, self.clock)
        if pruned:
            how = "archived" if self.settings.event_archive == "gzip" else "dropped"
            log.info(
                "%d events %s; the journal now starts at %d", pruned, how, self.journal.pruned_through + 1
            )
        settings, now = self.settings, self.clock()
        # read on the loop (the journal's connection lives there), before the files are looked at
        since = self.evidence_since()
        archived = await asyncio.to_thread(
            tidy_archive, self.journal_path, settings.archive_days, settings.archive_max_bytes, now
        )
        if archived:
            log.info("event archive: %d old day file(s) deleted", archived)
        compressed, deleted = await asyncio.to_thread(
            partial(
                tidy_captures,
                [capture.path for capture in self.captures],
                settings.capture_days,
                now,
                total_bytes=settings.capture_total_bytes,
                evidence_since=since,
            )
        )
        if compressed or deleted:
            log.info("captures: %d rotated file(s) compressed, %d old one(s) deleted", compressed, deleted)
        if self.cameras:
            files, frames = await asyncio.to_thread(
                partial(
                    tidy_camera,
                    [camera.path for camera in self.cameras],
                    settings.frame_days,
                    settings.frame_max_bytes,
                    now,
                    evidence_since=since,
                )
            )
            if files or frames:
                log.info("camera captures: %d old file(s) and %d frame(s) deleted", files, frames)


__all__ = [
    "ARCHIVE_DIR",
    "FILE_KINDS",
    "Housekeeping",
    "Usage",
    "archive_files",
    "archive_path",
    "evidence_since",
    "frames_dir",
    "free_bytes",
    "prune_events",
    "read_archive",
    "table_files",
    "tidy_archive",
    "tidy_camera",
    "tidy_captures",
    "usage",
    "write_archive",
]
