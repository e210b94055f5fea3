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

A writer may rotate its file (`max_bytes`, `daily`): `shoe.jsonl` is renamed `shoe-20261201T000000Z.jsonl`
(the UTC time of its first record) and a new `shoe.jsonl` begins. The new file starts with the latest `meta`
record again, and with the link's `open` if the link was up, so that every file replays on its own.
`compress_capture` gzips a rotated file (`.jsonl.gz`); `read_capture` reads either.
"""

from __future__ import annotations

import calendar
import gzip
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

DIRECTIONS = ("rx", "tx")
#: records that carry no device bytes but the story around them
STORY = ("meta", "link", "cmd")


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
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")
        self._size = self.path.stat().st_size
        #: when the current file began (its first record's time), None while it is empty
        self._started: float | None = _first_time(self.path) if self._size else None
        self._header_size = 0  # what a rotation wrote at the top of the current file
        self._meta: dict[str, Any] | None = None  # the latest meta record
        self._link_open: dict[str, Any] | None = None  # the latest link record, while the link is up

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
        if self._due(t, len(line)):
            self.rotate(t, header=record["dir"] != "meta")
        self._append(line, t)
        if record["dir"] == "meta":
            self._meta = record
        elif record["dir"] == "link":
            self._link_open = record if record["info"].get("event") == "open" else None

    def _append(self, line: str, t: float) -> None:
        assert self._file is not None
        self._file.write(line)
        self._file.flush()
        self._size += len(line)  # ASCII only (ensure_ascii)
        if self._started is None:
            self._started = t

    def _due(self, t: float, size: int) -> bool:
        if self._started is None or self._size <= self._header_size:
            return False  # nothing but a header: a new file would hold the same
        if self.daily and _utc_day(t) != _utc_day(self._started):
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
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self._started))
        rotated = self.path.with_name(f"{self.path.stem}-{stamp}{self.path.suffix}")
        number = 0
        while rotated.exists() or rotated.with_name(rotated.name + ".gz").exists():
            number += 1
            rotated = self.path.with_name(f"{self.path.stem}-{stamp}-{number}{self.path.suffix}")
        os.replace(self.path, rotated)
        self._file = self.path.open("a", encoding="utf-8")
        self._size = 0
        self._started = None
        if header:
            for record in (self._meta, self._link_open):
                if record is not None:
                    self._append(json.dumps({**record, "t": t}, ensure_ascii=True) + "\n", t)
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


def _utc_day(t: float) -> str:
    return time.strftime("%Y%m%d", time.gmtime(t))


def _first_time(path: Path) -> float | None:
    """The time of a capture's first record (None if it has none): when the file began."""
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
    _sync_dir(path.parent)
    path.unlink()
    return target


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _looks_like_jsonl(content: bytes) -> bool:
    # A device never starts a line with '{' in our protocols; a JSONL capture always does.
    return content.lstrip().startswith(b"{")


def _parse_record(path: Path, number: int, line: str) -> CaptureRecord:
    where = f"{path}:{number}"
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise CaptureError(f"{where}: not a JSON record ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise CaptureError(f"{where}: expected a JSON object, got {type(obj).__name__}")
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
    """Records of a JSONL capture (gzipped or not), or the whole file as one rx record if it is a raw dump."""
    path = Path(path)
    content = path.read_bytes()
    if content.startswith(b"\x1f\x8b"):
        try:
            content = gzip.decompress(content)
        except (OSError, EOFError) as exc:
            raise CaptureError(f"{path}: a damaged gzip file ({exc})") from None
    if not content:
        return []
    if not _looks_like_jsonl(content):
        return [CaptureRecord(None, "rx", content)]
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        number = content[: exc.start].count(b"\n") + 1
        raise CaptureError(f"{path}:{number}: not UTF-8 text, so not a JSONL capture") from None
    records = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            records.append(_parse_record(path, number, line))
    return records
