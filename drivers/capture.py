"""Raw device traffic, recorded as JSON Lines so a session can be replayed exactly as it was lived.

One record per read or write: `{"t": <epoch seconds>, "dir": "rx"|"tx", "data": "<text>"}`. Bytes are
stored as latin-1 text, so every byte value round-trips and ASCII protocols stay readable in the file.
`read_capture` also accepts a plain dump of device bytes (e.g. from a terminal program): one rx record
without times.

A capture written by `tablectl run` also tells the rest of the story, so that a replay reproduces the
table's events exactly:
- `{"t", "dir": "meta", "info": {"game", "table_id", "settings"}}` first: what table recorded it;
- `{"t", "dir": "link", "info": {"event": "open"|"lost", "reason"}}` when the link opened or broke;
- `{"t", "dir": "cmd", "info": {"kind": "commands"|"inputs", "name", "payload", "by"}}` for every command
  and input the table accepted (supervisors, the rules engine, the dealer's panel).

A full disk. A record is written whole or not at all: one write of the whole line, and if the file system
refuses it (ENOSPC, EIO) the file is cut back to the end of the last whole record, so no torn line stays and
the next record never lands on one. The writer does not give up: it counts what it could not write and tries
again (at most once a second); the first record it writes again is preceded by a gap record,
`{"t", "dir": "gap", "info": {"since", "until", "lost", "reason"}}`, so a reader knows what is missing and
when. It logs once when it stops and once when it resumes. `read_capture` reads past a damaged line (not
JSON, torn, of an unknown kind), counting it, and counts the gap records (`read_capture_counted`); only a
file in which no line is a record is refused.

A writer may rotate its file (`max_bytes`, `daily`): `shoe.jsonl` is renamed `shoe-20261201T000000Z.jsonl`
(the UTC time of its first record) and a new `shoe.jsonl` begins. The new file starts with the latest `meta`
record again, and with the link's `open` if the link was up, so that every file replays on its own.
`compress_capture` gzips a rotated file (`.jsonl.gz`); `read_capture` reads either.
"""

from __future__ import annotations

import calendar
import gzip
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

DIRECTIONS = ("rx", "tx")
#: records that carry no device bytes but the story around them
STORY = ("meta", "link", "cmd")
#: the record of what could not be written (a full disk): `info` = since, until, lost, reason
GAP = "gap"
#: after a refused write, the next attempt is made no sooner than this (records meanwhile are counted lost)
RETRY_SECONDS = 1.0


class CaptureError(ValueError):
    """A capture file that cannot be read; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class CaptureRecord:
    t: float | None
    direction: str  # "rx" (device -> host) | "tx" (host -> device) | one of STORY
    data: bytes
    info: dict[str, Any] | None = None  # the content of a STORY record


class CaptureWriter:
    """Append records to a JSONL capture, flushed per record so a crash loses at most the last one.

    With `max_bytes` the file is rotated before a record would make it larger; with `daily`, before the first
    record of a new UTC day (by the record's time). See the module docstring."""

    def __init__(self, path: str | Path, *, max_bytes: int | None = None, daily: bool = False) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.daily = daily
        # unbuffered: one record is one write(2), so what the file system refuses is the whole record or the
        # part it took, which is cut off again (no buffer keeps half a record to write later)
        self._file: IO[bytes] | None = self.path.open("ab", buffering=0)
        self._size = self.path.stat().st_size
        #: when the current file began (its first record's time), None while it is empty
        self._started: float | None = first_record_time(self.path) if self._size else None
        self._header_size = 0  # what a rotation wrote at the top of the current file
        self._meta: dict[str, Any] | None = None  # the latest meta record
        self._link_open: dict[str, Any] | None = None  # the latest link record, while the link is up
        #: while writes are refused: since when, how many records were lost, why (None: writing)
        self._gap: dict[str, Any] | None = None
        self._retry_at = 0.0
        #: records lost to refused writes since the writer was made
        self.lost = 0

    def write(self, direction: str, data: bytes, t: float) -> None:
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be 'rx' or 'tx', not {direction!r}")
        self._write({"t": t, "dir": direction, "data": data.decode("latin-1")})

    def story(self, direction: str, info: dict[str, Any], t: float) -> None:
        """A meta, link or cmd record (see the module docstring)."""
        if direction not in STORY:
            raise ValueError(f"a story record is one of {STORY}, not {direction!r}")
        self._write({"t": t, "dir": direction, "info": info})

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            raise ValueError(f"capture {self.path} is closed")
        line = json.dumps(record, ensure_ascii=True) + "\n"
        t = float(record["t"])
        if record["dir"] == "meta":
            self._meta = record  # kept for the next file's header even if this write is refused
        if self._gap is not None and not self._resume(t):
            self._lose(t, None)
            return
        if self._due(t, len(line)):
            self.rotate(t, header=record["dir"] != "meta")
        try:
            self._append(line, t)
        except OSError as exc:
            self._lose(t, exc)
            return
        if record["dir"] == "meta":
            self._meta = record
        elif record["dir"] == "link":
            self._link_open = record if record["info"].get("event") == "open" else None

    def _append(self, line: str, t: float) -> None:
        """Write one whole record, or nothing: on OSError the file is cut back to where it was."""
        assert self._file is not None
        data = line.encode("ascii")  # ensure_ascii: one byte per character
        written = 0
        try:
            while written < len(data):
                n = self._file.write(data[written:])
                if not n:
                    raise OSError(f"capture {self.path}: nothing written")
                written += n
        except OSError:
            if written:
                # the part the file system took is cut off again: no torn line for the next record to join
                os.ftruncate(self._file.fileno(), self._size)
            raise
        self._size += len(data)
        if self._started is None:
            self._started = t

    def _lose(self, t: float, exc: OSError | None) -> None:
        """A record could not be written (or was not tried, waiting to retry): count it in the gap."""
        self.lost += 1
        if self._gap is None:
            self._gap = {"since": t, "lost": 0, "reason": str(exc) if exc else "write refused"}
            log.error("capture %s: cannot write (%s); counting the records lost until it can", self.path, exc)
        self._gap["lost"] += 1
        if exc is not None:
            self._retry_at = time.monotonic() + RETRY_SECONDS

    def _resume(self, t: float) -> bool:
        """Try to write the gap record that ends a gap; True when it is written (writing goes on)."""
        assert self._gap is not None
        if time.monotonic() < self._retry_at:
            return False
        gap = {**self._gap, "until": t}
        line = json.dumps({"t": t, "dir": GAP, "info": gap}, ensure_ascii=True) + "\n"
        try:
            self._append(line, t)
        except OSError as exc:
            self._retry_at = time.monotonic() + RETRY_SECONDS
            self._gap["reason"] = str(exc)
            return False
        log.warning(
            "capture %s: writing again; %d records since %s were lost (a gap record says so)",
            self.path,
            gap["lost"],
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(gap["since"])),
        )
        self._gap = None
        return True

    def _due(self, t: float, size: int) -> bool:
        if self._started is None or self._size <= self._header_size:
            return False  # nothing but a header: a new file would hold the same
        if self.daily and utc_day(t) != utc_day(self._started):
            return True
        return self.max_bytes is not None and self._size + size > self.max_bytes

    def rotate(self, t: float, *, header: bool = True) -> Path | None:
        """Rename the current file aside (`<stem>-<start>.jsonl`) and begin a new one at time `t`, headed by
        the latest meta record and the link's open (unless `header` is false). Returns the rotated file."""
        if self._file is None:
            raise ValueError(f"capture {self.path} is closed")
        if self._started is None:
            return None
        self._file.close()
        self._file = None
        rotated = rotated_name(self.path, self._started)
        os.replace(self.path, rotated)
        self._file = self.path.open("ab", buffering=0)
        self._size = 0
        self._started = None
        if header:
            for record in (self._meta, self._link_open):
                if record is not None:
                    try:
                        self._append(json.dumps({**record, "t": t}, ensure_ascii=True) + "\n", t)
                    except OSError as exc:
                        self._lose(t, exc)
                        break
        self._header_size = self._size
        return rotated

    def rx(self, data: bytes, t: float) -> None:
        self.write("rx", data, t)

    def tx(self, data: bytes, t: float) -> None:
        self.write("tx", data, t)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def utc_day(t: float) -> str:
    return time.strftime("%Y%m%d", time.gmtime(t))


def first_record_time(path: Path) -> float | None:
    """The time of a capture's first record (its modification time if that has none): when the file began."""
    with path.open("rb") as file:
        first = file.readline()
    try:
        t = json.loads(first).get("t")
    except (ValueError, AttributeError):
        t = None
    if isinstance(t, int | float) and not isinstance(t, bool):
        return float(t)
    return path.stat().st_mtime


def _rotated_pattern(path: Path) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(path.stem)}-(\d{{8}}T\d{{6}}Z)(?:-\d+)?{re.escape(path.suffix)}(\.gz)?$")


def rotated_name(path: Path, started: float) -> Path:
    """The name a rotated file of the capture at `path` gets: `<stem>-<UTC start>[-n]<suffix>`, one that no
    rotated file (compressed or not) has yet."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    rotated = path.with_name(f"{path.stem}-{stamp}{path.suffix}")
    number = 0
    while rotated.exists() or rotated.with_name(rotated.name + ".gz").exists():
        number += 1
        rotated = path.with_name(f"{path.stem}-{stamp}-{number}{path.suffix}")
    return rotated


def rotated_captures(path: str | Path) -> list[tuple[Path, float]]:
    """The rotated files of the capture at `path` (compressed or not), each with the UTC time it began,
    oldest first."""
    path = Path(path)
    pattern = _rotated_pattern(path)
    found = []
    try:
        entries = list(path.parent.iterdir())
    except FileNotFoundError:
        return []
    for entry in entries:
        match = pattern.match(entry.name)
        if match:
            began = calendar.timegm(time.strptime(match.group(1), "%Y%m%dT%H%M%SZ"))
            found.append((entry, began))
    return sorted(found, key=lambda item: (item[1], item[0].name))


def compress_capture(path: str | Path) -> Path:
    """Gzip a rotated capture to `<name>.gz` (written aside, synced, then renamed) and remove the original.
    Blocking: run it in a thread."""
    path = Path(path)
    target = path.with_name(path.name + ".gz")
    temporary = path.with_name(f".{target.name}.tmp")
    with path.open("rb") as source, temporary.open("wb") as raw:
        with gzip.GzipFile(filename=path.name, mode="wb", fileobj=raw) as compressed:
            while chunk := source.read(1 << 20):
                compressed.write(chunk)
        raw.flush()
        os.fsync(raw.fileno())
    os.replace(temporary, target)
    sync_dir(path.parent)
    path.unlink()
    return target


def sync_dir(directory: Path) -> None:
    """Make a rename or a new file in `directory` durable (fsync the directory itself)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _looks_like_jsonl(content: bytes) -> bool:
    # A device never starts a line with '{' in our protocols; a JSONL capture always does.
    return content.lstrip().startswith(b"{")


@dataclass(frozen=True, slots=True)
class CaptureContents:
    """What `read_capture_counted` found: the records, the damaged lines skipped ("<file>:<line>: why") and
    the gap records (what a full disk kept the writer from recording: `info` since, until, lost, reason)."""

    records: list[CaptureRecord]
    damaged: list[str]
    gaps: list[dict[str, Any]]


def capture_bytes(path: Path) -> bytes:
    """The content of a capture file, decompressed if it is a rotated file gzipped by retention."""
    content = path.read_bytes()
    if content.startswith(b"\x1f\x8b"):
        try:
            content = gzip.decompress(content)
        except (OSError, EOFError) as exc:
            raise CaptureError(f"{path}: a damaged gzip file ({exc})") from None
    return content


def json_record(where: str, line: str) -> dict[str, Any]:
    """One line of a JSON Lines capture as its object; CaptureError saying `where` when it is not one."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CaptureError(f"{where}: not a JSON record ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise CaptureError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _parse_record(path: Path, number: int, line: str) -> CaptureRecord:
    where = f"{path}:{number}"
    obj = json_record(where, line)
    t, direction, data = obj.get("t"), obj.get("dir"), obj.get("data")
    if t is not None and (isinstance(t, bool) or not isinstance(t, int | float)):
        raise CaptureError(f"{where}: 't' must be a number of seconds, got {t!r}")
    if direction in STORY:
        info = obj.get("info")
        if not isinstance(info, dict):
            raise CaptureError(f"{where}: a {direction} record needs an 'info' object")
        if t is None:
            raise CaptureError(f"{where}: a {direction} record needs its time 't'")
        return CaptureRecord(float(t), direction, b"", info)
    if direction == GAP:
        info = obj.get("info")
        if not isinstance(info, dict) or t is None:
            raise CaptureError(f"{where}: a gap record needs its time 't' and an 'info' object")
        return CaptureRecord(float(t), GAP, b"", info)
    if direction not in DIRECTIONS:
        raise CaptureError(f"{where}: 'dir' must be 'rx' or 'tx' (or meta, link, cmd), got {direction!r}")
    if not isinstance(data, str):
        raise CaptureError(f"{where}: 'data' must be a string, got {data!r}")
    try:
        raw = data.encode("latin-1")
    except UnicodeEncodeError:
        raise CaptureError(f"{where}: 'data' holds characters that are not bytes (above U+00FF)") from None
    return CaptureRecord(float(t) if t is not None else None, direction, raw)


def read_capture(path: str | Path) -> list[CaptureRecord]:
    """Records of a JSONL capture (gzipped or not), or the whole file as one rx record if it is a raw dump.

    Damaged lines are skipped and gap records left out (`read_capture_counted` lists both); each is logged
    as a warning with its count."""
    contents = read_capture_counted(path)
    if contents.damaged:
        log.warning(
            "capture %s: %d damaged line(s) skipped, the first %s",
            path,
            len(contents.damaged),
            contents.damaged[0],
        )
    for gap in contents.gaps:
        log.warning(
            "capture %s: %s record(s) were not written from %s to %s (%s)",
            path,
            gap.get("lost"),
            gap.get("since"),
            gap.get("until"),
            gap.get("reason"),
        )
    return [record for record in contents.records if record.direction != GAP]


def read_capture_counted(path: str | Path) -> CaptureContents:
    """`read_capture`'s records with the gap records, and the damaged lines it skipped. CaptureError for a
    file that cannot be read at all, or in which no line is a record."""
    path = Path(path)
    content = capture_bytes(path)
    if not content:
        return CaptureContents([], [], [])
    if not _looks_like_jsonl(content):
        return CaptureContents([CaptureRecord(None, "rx", content)], [], [])
    records: list[CaptureRecord] = []
    damaged: list[str] = []
    gaps: list[dict[str, Any]] = []
    for number, raw_line in enumerate(content.split(b"\n"), start=1):
        if not raw_line.strip():
            continue
        try:
            line = raw_line.decode("utf-8")
        except UnicodeDecodeError:
            damaged.append(f"{path}:{number}: not UTF-8 text")
            continue
        try:
            record = _parse_record(path, number, line)
        except CaptureError as exc:
            damaged.append(str(exc))
            continue
        records.append(record)
        if record.direction == GAP and record.info is not None:
            gaps.append(record.info)
    if not records and damaged:
        first = damaged[0]
        raise CaptureError(
            f"{path}: no line is a capture record ({len(damaged)} damaged; the first: {first})"
        )
    return CaptureContents(records, damaged, gaps)
