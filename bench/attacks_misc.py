"""Disk exhaustion by the table's own files: is every file the service wrote under a data directory within
its retention bound?

A table that writes without bound fills its disk, and a full disk stops the journal (the service fails
stop). This looks at what is there, not at what the code says: every file under `--data-dir` is put in one
of the kinds the service writes (`controller.retention`: the journal with its WAL, the event archive, the
devices' byte captures, the cameras' captures and frames) and checked against that kind's bound from the
table's `[retention]` settings (`--config`, else the defaults):

- journal: the oldest acknowledged event is no older than `event_days` (plus one housekeeping interval);
- archive: each day's file is no older than `archive_days`, all of them within `archive_max_bytes` (or only
  the newest is left);
- byte captures: the live file within `capture_max_bytes`, each rotated one begun within `capture_days`,
  all rotated ones within `capture_total_bytes`;
- camera captures and frames: each rotated file begun within `frame_days`, live and rotated files and the
  frames within `frame_max_bytes`, no frame older than `frame_days` (frames are one line per folder);
- anything else: NOT held (no bound covers it).

One day of slack is allowed on ages (housekeeping runs every `interval_seconds`; a file rotated at midnight
is a day old at once). With `--broker`, the retained status of every table on that broker is read too: the
disk warning must count the table's files (`disk.used_bytes`).

Run: `python bench/attacks_misc.py --data-dir /var/lib/tablectl [--config table.toml] [--broker URL]`.
Prints one line per outcome (held / NOT held, detail) and exits 1 if any is not held. The lead's umbrella
script calls `run_attacks(args)`.
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import json
import re
import sqlite3
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from controller.config import RetentionSettings
from controller.journal import read_outbox
from controller.retention import DAY_SECONDS, frame_time
from controller.table_build import TABLE_CONFIGS

Outcome = tuple[str, bool, str]

_ROTATED = re.compile(r"^(?P<stem>.+)-(?P<stamp>\d{8}T\d{6}Z)(?:-\d+)?\.jsonl(?:\.gz)?$")
_ARCHIVE = re.compile(r"^(?P<stem>.+)-(?P<day>\d{8})\.jsonl\.gz$")
_JOURNAL = re.compile(r"^.+-journal\.sqlite3(?:-wal|-shm)?$")
#: how much older than its bound a file may be before it counts as not held (one housekeeping round late)
SLACK_SECONDS = DAY_SECONDS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="the table's data directory")
    parser.add_argument("--config", type=Path, help="the table's config (its [retention]); default: defaults")
    parser.add_argument(
        "--broker", help="also read the tables' retained status here, e.g. mqtt://127.0.0.1:1883"
    )
    parser.add_argument("--now", type=float, help=argparse.SUPPRESS)  # tests: the time to judge ages at
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _stamp(stamp: str) -> float:
    return float(calendar.timegm(time.strptime(stamp, "%Y%m%dT%H%M%SZ")))


def _age_days(seconds: float) -> str:
    return f"{seconds / DAY_SECONDS:.1f} days"


def _journal(path: Path, settings: RetentionSettings, now: float) -> Outcome:
    name = f"journal {path.name}"
    if not path.name.endswith(".sqlite3"):
        return name, True, "WAL / shared memory of the journal: bounded with it (checkpointed by SQLite)"
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            _last, acked_through, acked_ahead = read_outbox(db)
            row = db.execute(
                "SELECT json_extract(envelope, '$.recordedtime') FROM events "
                "WHERE sequence <= ? OR sequence = ? ORDER BY sequence LIMIT 1",
                (acked_through, min(acked_ahead, default=-1)),
            ).fetchone()
        finally:
            db.close()
    except sqlite3.Error as exc:
        return name, False, f"cannot be read to check its bound: {exc}"
    if row is None or row[0] is None:
        return name, True, "no acknowledged event kept: bounded by event_days"
    oldest = datetime.fromisoformat(str(row[0]).replace("Z", "+00:00")).timestamp()
    age = now - oldest
    limit = settings.event_days * DAY_SECONDS + settings.interval_seconds + SLACK_SECONDS
    return (
        name,
        age <= limit,
        f"oldest acknowledged event {_age_days(age)} old (event_days {settings.event_days})",
    )


def _archive(files: list[Path], settings: RetentionSettings, now: float) -> list[Outcome]:
    outcomes = []
    dated = sorted(((f, _ARCHIVE.match(f.name)) for f in files), key=lambda item: item[0].name)
    total = sum(_size(f) for f in files)
    over = total > settings.archive_max_bytes and len(files) > 1
    for file, match in dated:
        if match is None:
            outcomes.append((f"archive {file.name}", False, "not an archive day file: no bound covers it"))
            continue
        day = _stamp(match.group("day") + "T000000Z")
        age = now - day
        fresh = age <= (settings.archive_days + 1) * DAY_SECONDS + SLACK_SECONDS
        held = fresh and not over
        detail = f"day {match.group('day')}, {_age_days(age)} old (archive_days {settings.archive_days})"
        if over:
            detail += (
                f"; the archive holds {total} bytes, over archive_max_bytes {settings.archive_max_bytes}"
            )
        outcomes.append((f"archive {file.name}", held, detail))
    return outcomes


def _captures(live: Path, rotated: list[Path], settings: RetentionSettings, now: float) -> list[Outcome]:
    outcomes = []
    size = _size(live)
    if live.exists():
        # one record over the size may be in the file: the writer rotates before the record that would exceed
        held = size <= settings.capture_max_bytes + 64 * 1024
        outcomes.append((f"capture {live.name}", held, f"live, {size} bytes (capture_max_bytes)"))
    total = sum(_size(f) for f in rotated)
    for file in rotated:
        match = _ROTATED.match(file.name)
        assert match is not None
        age = now - _stamp(match.group("stamp"))
        fresh = age <= (settings.capture_days + 1) * DAY_SECONDS + SLACK_SECONDS
        over = total > settings.capture_total_bytes
        detail = f"rotated, begun {_age_days(age)} ago (capture_days {settings.capture_days})"
        if over:
            detail += f"; rotated captures hold {total} bytes, over capture_total_bytes"
        outcomes.append((f"capture {file.name}", fresh and not over, detail))
    return outcomes


def _camera(
    live: Path, rotated: list[Path], frames: list[Path], settings: RetentionSettings, now: float
) -> list[Outcome]:
    outcomes = []
    total = _size(live) + sum(_size(f) for f in rotated) + sum(_size(f) for f in frames)
    over = total > settings.frame_max_bytes
    bound = f"{total} bytes with its frames (frame_max_bytes {settings.frame_max_bytes})"
    if live.exists():
        outcomes.append((f"camera {live.name}", not over, f"live; the camera's files: {bound}"))
    limit = (settings.frame_days + 1) * DAY_SECONDS + SLACK_SECONDS
    for file in rotated:
        match = _ROTATED.match(file.name)
        assert match is not None
        age = now - _stamp(match.group("stamp"))
        detail = f"rotated, begun {_age_days(age)} ago (frame_days {settings.frame_days}); {bound}"
        outcomes.append((f"camera {file.name}", age <= limit and not over, detail))
    if frames:
        old = [f for f in frames if now - frame_time(f) > limit]
        folder = frames[0].parent.name
        detail = f"{len(frames)} frames, {sum(_size(f) for f in frames)} bytes; {bound}"
        if old:
            detail += f"; {len(old)} older than frame_days, the oldest {old[0].name}"
        outcomes.append((f"frames {folder}/", not old and not over, detail))
    return outcomes


def scan(data_dir: Path, settings: RetentionSettings, now: float) -> list[Outcome]:
    """Every file under `data_dir`, by kind, against its bound."""
    files = sorted(path for path in data_dir.rglob("*") if path.is_file())
    claimed: set[Path] = set()
    outcomes: list[Outcome] = []
    for path in files:
        if _JOURNAL.match(path.name) and path.parent == data_dir:
            outcomes.append(_journal(path, settings, now))
            claimed.add(path)
    archives = [path for path in files if path.parent.name == "archive" and path.parent.parent == data_dir]
    outcomes += _archive(archives, settings, now)
    claimed |= set(archives)
    # captures: a live `<stem>.jsonl` and its rotated files; a camera's has a `<stem>-frames/` beside it
    stems: dict[tuple[Path, str], list[Path]] = {}
    for path in files:
        if path in claimed:
            continue
        match = _ROTATED.match(path.name)
        if match is not None:
            stems.setdefault((path.parent, match.group("stem")), []).append(path)
        elif path.suffix == ".jsonl":
            stems.setdefault((path.parent, path.stem), [])
    for (folder, stem), rotated in sorted(stems.items()):
        live = folder / f"{stem}.jsonl"
        frames_dir = folder / f"{stem}-frames"
        claimed |= {live, *rotated}
        if frames_dir.is_dir():
            frames = sorted(f for f in frames_dir.iterdir() if f.is_file())
            claimed |= set(frames)
            outcomes += _camera(live, sorted(rotated), frames, settings, now)
        else:
            outcomes += _captures(live, sorted(rotated), settings, now)
    for path in files:
        if path not in claimed:
            where = path.relative_to(data_dir)
            outcomes.append((f"file {where}", False, "not a kind the service writes: no retention bound"))
    return outcomes


async def _status_checks(broker: str) -> list[Outcome]:
    """The retained status of every table on `broker`: its disk warning must count the table's files."""
    from urllib.parse import urlsplit

    import aiomqtt

    url = urlsplit(broker)
    found: dict[str, Any] = {}
    try:
        async with aiomqtt.Client(url.hostname or "127.0.0.1", port=url.port or 1883) as client:
            await client.subscribe("studio/+/table/+/status")
            try:
                async with asyncio.timeout(2.0):
                    async for message in client.messages:
                        payload = message.payload
                        if isinstance(payload, bytes | bytearray):
                            found[str(message.topic)] = json.loads(payload)
            except TimeoutError:
                pass
    except (aiomqtt.MqttError, OSError) as exc:
        return [("broker status", False, f"cannot read the retained status: {exc}")]
    if not found:
        return [("broker status", False, "no table's retained status found")]
    outcomes = []
    for topic, status in sorted(found.items()):
        disk = status.get("disk") if isinstance(status, dict) else None
        counted = isinstance(disk, dict) and isinstance(disk.get("used_bytes"), int)
        detail = f"disk {disk}" if counted else f"the disk status does not count the table's files: {disk}"
        outcomes.append((f"status {topic}", counted, detail))
    return outcomes


async def run_attacks(args: argparse.Namespace) -> list[Outcome]:
    """The checks as (name, held, detail); `args` as `parse_args` makes them."""
    settings = (
        TABLE_CONFIGS.load(args.config).retention if getattr(args, "config", None) else RetentionSettings()
    )
    now = args.now if getattr(args, "now", None) is not None else time.time()
    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        return [("data dir", False, f"{data_dir} is not a directory")]
    outcomes = await asyncio.to_thread(scan, data_dir, settings, now)
    if getattr(args, "broker", None):
        outcomes += await _status_checks(args.broker)
    return outcomes


def main(argv: list[str] | None = None) -> int:
    outcomes = asyncio.run(run_attacks(parse_args(argv)))
    for name, held, detail in outcomes:
        print(f"{'held    ' if held else 'NOT held'}  {name}: {detail}")
    failed = sum(1 for _, held, _ in outcomes if not held)
    print(f"{len(outcomes) - failed} held, {failed} not held")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
