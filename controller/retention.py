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
- **Free space is watched.** Every `disk_check_seconds` the smallest free space of the file systems holding
  the journal and the captures goes into the retained status: `"disk": {"free_bytes": ..., "status": "low"}`
  while it is under `disk_low_bytes`.

Everything that touches files (archives, compression, free space) runs in a thread (`asyncio.to_thread`); the
journal itself is used on the event loop, one short batch at a time. A failure is logged and retried at the
next round: housekeeping never stops the table.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path

from controller.config import RetentionSettings
from controller.events import iso_ms
from controller.journal import Journal, StoredEvent
from drivers.capture import CaptureWriter, compress_capture, rotated_captures

log = logging.getLogger(__name__)

ARCHIVE_DIR = "archive"
DAY_SECONDS = 86400.0


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
        _sync_dir(directory)
    return written


def _last_sequence(archive: bytes) -> int:
    if not archive:
        return 0
    lines = gzip.decompress(archive).rstrip(b"\n").rsplit(b"\n", 1)
    return int(json.loads(lines[-1])["sequence"])


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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


# --- captures -----------------------------------------------------------------------------------------------


def tidy_captures(paths: Iterable[Path], keep_days: int, now: float) -> tuple[int, int]:
    """Compress the rotated files of these captures, and delete those begun more than `keep_days` UTC days
    before today (with 1, yesterday's file stays, the day before's goes). Blocking: run it in a thread.
    Returns (compressed, deleted)."""
    today = int(now // DAY_SECONDS)
    compressed = deleted = 0
    for path in paths:
        for rotated, began in rotated_captures(path):
            if today - int(began // DAY_SECONDS) > keep_days:
                rotated.unlink(missing_ok=True)
                deleted += 1
            elif rotated.suffix != ".gz":
                compress_capture(rotated)
                compressed += 1
    return compressed, deleted


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
        report_disk: Callable[[int, str], None],
        captures: Sequence[CaptureWriter],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.journal = journal
        self.journal_path = journal_path
        #: where the free space and its status go (the bus's retained status: `TableBus.set_disk`)
        self.report_disk = report_disk
        self.captures = list(captures)
        self.clock = clock
        self.disk_status: str | None = None
        if settings.enabled:  # disabled, the captures grow as before: nothing would compress or prune them
            for capture in self.captures:
                capture.max_bytes = settings.capture_max_bytes
                capture.daily = True

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

    async def check_disk(self) -> str:
        """Measure the free space and put it in the retained status. Returns "ok" or "low"."""
        directories = {self.journal_path.parent, *(capture.path.parent for capture in self.captures)}
        free = await asyncio.to_thread(free_bytes, directories)
        status = "low" if free < self.settings.disk_low_bytes else "ok"
        if status != self.disk_status:
            if status == "low":
                log.warning(
                    "free disk space is low: %d bytes (under %d): the journal stops when the disk is full",
                    free,
                    self.settings.disk_low_bytes,
                )
            elif self.disk_status is not None:
                log.info("free disk space is back above the threshold: %d bytes", free)
        self.disk_status = status
        self.report_disk(free, status)
        return status

    async def tidy(self) -> None:
        """One round: old events out of the journal, rotated captures compressed and the oldest deleted."""
        pruned = await prune_events(self.journal, self.journal_path, self.settings, self.clock)
        if pruned:
            how = "archived" if self.settings.event_archive == "gzip" else "dropped"
            log.info(
                "%d events %s; the journal now starts at %d", pruned, how, self.journal.pruned_through + 1
            )
        paths = [capture.path for capture in self.captures]
        compressed, deleted = await asyncio.to_thread(
            tidy_captures, paths, self.settings.capture_days, self.clock()
        )
        if compressed or deleted:
            log.info("captures: %d rotated file(s) compressed, %d old one(s) deleted", compressed, deleted)


__all__ = [
    "ARCHIVE_DIR",
    "Housekeeping",
    "archive_path",
    "free_bytes",
    "prune_events",
    "read_archive",
    "tidy_captures",
    "write_archive",
]
