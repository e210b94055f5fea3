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
"""

from __future__ import annotations

import json
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
    """Append records to a JSONL capture, flushed per record so a crash loses at most the last one."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")

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
        self._file.write(json.dumps(record, ensure_ascii=True) + "\n")
        self._file.flush()

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
    """Records of a JSONL capture, or the whole file as one rx record if it is a raw byte dump."""
    path = Path(path)
    content = path.read_bytes()
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
