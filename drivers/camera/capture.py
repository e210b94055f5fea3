"""A camera device's capture: the frames that were used, kept as lossless files, and its health, for audit.

Next to the JSON Lines file `<name>.jsonl` a folder `<name>-frames/` holds one PNG per frame used (grabbed for
a result). The JSON Lines records share the envelope of byte captures (`drivers.capture`: `t` and `dir`):

    {"t": 1764567890.12, "dir": "frame", "file": "camera-frames/00000042-20261201T053130.120Z.png",
     "sha256": "<hex of the file>", "width": 1280, "height": 720, "seq": 42}
    {"t": 1764567891.50, "dir": "health", "kind": "DeviceFault", "code": "COVERED", "reason": "..."}
    {"t": 1764567890.31, "dir": "reading", "kind": "DiceRead", "cycle_id": "12.1", "values": [2, 5, 5], ...}

A `reading` record is a reading the camera side delivered to the table besides its health (sic bo: the dice
read from a frame, with the frame's file and sha256): a replay feeds it back as it was delivered.

`file` is relative to the JSON Lines file's folder, so a capture can be moved or archived as a whole.

Rotation (`daily`, `max_frames`, set by `controller.retention`): `camera.jsonl` is renamed
`camera-20261201T000000Z.jsonl` (the UTC time of its first record, as byte captures are) and a new one begins
with the latest health record again, so that every file replays on its own. The frames stay in
`camera-frames/`: a rotated file and the frames its records name are one unit, which retention deletes
together (frames first). A rotated file may be gzipped (`.jsonl.gz`); `read_camera_capture` reads either.
`read_camera_capture` loads it back and checks every frame's sha256: a frame that was changed, replaced or
lost is an error naming the file, so a sic bo round can be replayed and audited like a card round.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

import numpy as np
from numpy.typing import NDArray

from drivers.camera.frame import CameraError, FrameSource, SourceEnded
from drivers.capture import (
    CaptureError,
    capture_bytes,
    first_record_time,
    json_record,
    rotated_name,
    utc_day,
)
from drivers.readings import Reading, reading_fields

FRAME_DIR = "frame"
HEALTH_DIR = "health"
READING_DIR = "reading"


class FrameIntegrityError(CaptureError):
    """A captured frame is missing or is not the file that was recorded (its sha256 differs)."""


@dataclass(frozen=True, slots=True)
class FrameRecord:
    t: float
    file: str  # as recorded: relative to the capture's folder, with '/'
    sha256: str
    width: int
    height: int
    seq: int | None
    path: Path  # where the file is now

    def load(self) -> NDArray[np.uint8]:
        """The frame's pixels (BGR), after checking the file is the one recorded."""
        import cv2

        data = _verified_bytes(self)
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
        if image is None:
            raise FrameIntegrityError(f"frame {self.path} cannot be decoded as an image")
        return np.ascontiguousarray(image)


@dataclass(frozen=True, slots=True)
class HealthRecord:
    t: float
    kind: str  # the reading's type: DeviceOnline, DeviceOffline, DeviceFault, DeviceFaultCleared
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ReadingRecord:
    t: float
    kind: str  # the reading's type in drivers.readings, e.g. DiceRead
    fields: dict[str, Any] = field(default_factory=dict)  # every field but device and time


CameraCaptureRecord = FrameRecord | HealthRecord | ReadingRecord


def _frame_name(seq: int, t: float) -> str:
    """`<seq>-<UTC time to the millisecond>.png`: sorts by sequence, reads as a time."""
    milliseconds = round(t * 1000)
    stamp = datetime.fromtimestamp(milliseconds // 1000, UTC).strftime("%Y%m%dT%H%M%S")
    return f"{seq:08d}-{stamp}.{milliseconds % 1000:03d}Z.png"


class CameraCaptureWriter:
    """Write a camera capture: `write_frame` for a frame used, `write_health` for health readings.

    Safe to call from several threads (the runner encodes PNGs off the event loop). Each record is flushed,
    and a frame file is written completely before its record: a crash never leaves a record without a frame.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        png_compression: int = 1,
        max_frames: int | None = None,
        daily: bool = False,
    ) -> None:
        self.path = Path(path)
        self.frames_dir = self.path.parent / f"{self.path.stem}-frames"
        self.png_compression = png_compression
        #: rotate before the frame that would make the current file name more than this many frames
        self.max_frames = max_frames
        #: rotate before the first record of a new UTC day (by the record's time)
        self.daily = daily
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")
        size = self.path.stat().st_size
        #: when the current file began (its first record's time), None while it is empty
        self._started: float | None = first_record_time(self.path) if size else None
        # a file continued after a restart keeps counting its frames: the bound is the file's, not the run's
        self._frames = _count_frames(self.path) if size else 0
        self._last_health: dict[str, Any] | None = None  # repeated at the top of a rotated-in file

    def write_frame(self, image: NDArray[Any], t: float, seq: int) -> FrameRecord:
        """Keep `image` as a PNG and record it; the record's `file` and `sha256` are what readings carry."""
        import cv2

        ok, encoded = cv2.imencode(".png", image, [cv2.IMWRITE_PNG_COMPRESSION, self.png_compression])
        if not ok:
            raise CaptureError(f"frame {seq} could not be encoded as PNG")
        data = encoded.tobytes()
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            self._check_open()
            # rotated before the frame is written: the frame belongs to the file its record goes into
            if self._due(t, frame=True):
                self._rotate(t)
            self.frames_dir.mkdir(parents=True, exist_ok=True)
            path = self.frames_dir / _frame_name(seq, t)
            with path.open("xb") as handle:  # "x": a recorded frame is never replaced
                handle.write(data)
            relative = path.relative_to(self.path.parent).as_posix()
            record = FrameRecord(t, relative, digest, int(image.shape[1]), int(image.shape[0]), seq, path)
            self._write(
                {
                    "t": t,
                    "dir": FRAME_DIR,
                    "file": relative,
                    "sha256": digest,
                    "width": record.width,
                    "height": record.height,
                    "seq": seq,
                }
            )
        return record

    def write_health(self, reading: Reading) -> None:
        """Record a health reading (online, offline, fault, fault cleared) with its fields."""
        fields = {k: v for k, v in reading_fields(reading).items() if k not in ("device", "time", "raw")}
        with self._lock:
            self._check_open()
            record = {"t": reading.time, "dir": HEALTH_DIR, "kind": type(reading).__name__, **fields}
            if self._due(reading.time, frame=False):
                self._rotate(reading.time, header=False)  # this record says the camera's health itself
            self._write(record)
            self._last_health = record

    def write_reading(self, reading: Reading) -> None:
        """Record a reading delivered besides health (e.g. `DiceRead`), every field but device and time."""
        fields = {k: v for k, v in reading_fields(reading).items() if k not in ("device", "time")}
        with self._lock:
            self._check_open()
            if self._due(reading.time, frame=False):
                self._rotate(reading.time)
            self._write({"t": reading.time, "dir": READING_DIR, "kind": type(reading).__name__, **fields})

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> CameraCaptureWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._file is None:
            raise ValueError(f"capture {self.path} is closed")

    def _write(self, record: dict[str, Any]) -> None:
        assert self._file is not None
        self._file.write(json.dumps(record, ensure_ascii=True) + "\n")
        self._file.flush()
        if self._started is None:
            self._started = float(record["t"])
        if record["dir"] == FRAME_DIR:
            self._frames += 1

    def _due(self, t: float, *, frame: bool) -> bool:
        if self._started is None:
            return False
        if self.daily and utc_day(t) != utc_day(self._started):
            return True
        return frame and self.max_frames is not None and self._frames >= self.max_frames

    def _rotate(self, t: float, *, header: bool = True) -> Path | None:
        """Rename the current file aside and begin a new one at `t`, headed by the latest health record
        (with the time `t`) unless `header` is false. Called with the lock held. Returns the rotated file."""
        if self._file is None or self._started is None:
            return None
        self._file.close()
        rotated = rotated_name(self.path, self._started)
        os.replace(self.path, rotated)
        self._file = self.path.open("a", encoding="utf-8")
        self._started, self._frames = None, 0
        if header and self._last_health is not None:
            self._write({**self._last_health, "t": t})
        return rotated

    def rotate(self, t: float) -> Path | None:
        """Rotate now (see the module docstring); None if the current file is empty."""
        with self._lock:
            self._check_open()
            return self._rotate(t)


def _count_frames(path: Path) -> int:
    with path.open("rb") as file:
        return sum(1 for line in file if b'"dir": "frame"' in line)


# --- reading back ------------------------------------------------------------------------------------------


def _verified_bytes(record: FrameRecord) -> bytes:
    try:
        data = record.path.read_bytes()
    except OSError as exc:
        raise FrameIntegrityError(f"frame {record.path} is missing or unreadable: {exc.strerror}") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != record.sha256:
        raise FrameIntegrityError(
            f"frame {record.path} does not match the capture: sha256 {actual}, recorded {record.sha256}"
        )
    return data


def _number(where: str, obj: dict[str, Any], key: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CaptureError(f"{where}: {key!r} must be a number, got {value!r}")
    return float(value)


def _integer(where: str, obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CaptureError(f"{where}: {key!r} must be a whole number, got {value!r}")
    return value


def _frame_record(where: str, base: Path, obj: dict[str, Any]) -> FrameRecord:
    file, digest = obj.get("file"), obj.get("sha256")
    if not isinstance(file, str) or not file:
        raise CaptureError(f"{where}: 'file' must be the frame's relative path, got {file!r}")
    relative = PurePosixPath(file)
    if relative.is_absolute() or ".." in relative.parts:
        raise CaptureError(f"{where}: frame file {file!r} must stay inside the capture's folder")
    if not isinstance(digest, str) or len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
        raise CaptureError(f"{where}: 'sha256' must be 64 lowercase hex digits, got {digest!r}")
    seq = obj.get("seq")
    return FrameRecord(
        t=_number(where, obj, "t"),
        file=file,
        sha256=digest,
        width=_integer(where, obj, "width"),
        height=_integer(where, obj, "height"),
        seq=_integer(where, obj, "seq") if seq is not None else None,
        path=base.joinpath(*relative.parts),
    )


def read_camera_capture(path: str | Path, *, verify: bool = True) -> list[CameraCaptureRecord]:
    """The records of a camera capture, in order.

    With `verify`, every frame file is checked against its sha256 (FrameIntegrityError names the first file
    that is missing or changed).
    """
    path = Path(path)
    content = capture_bytes(path)
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        raise CaptureError(f"{path}: not UTF-8 text, so not a JSONL capture") from None
    records: list[CameraCaptureRecord] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        obj = json_record(where, line)
        direction = obj.get("dir")
        if direction == FRAME_DIR:
            record = _frame_record(where, path.parent, obj)
            if verify:
                _verified_bytes(record)
            records.append(record)
        elif direction == HEALTH_DIR:
            records.append(HealthRecord(*_reading_record(where, obj, "the health reading")))
        elif direction == READING_DIR:
            records.append(ReadingRecord(*_reading_record(where, obj, "the reading")))
        else:
            raise CaptureError(
                f"{where}: 'dir' must be 'frame', 'health' or 'reading' in a camera capture, "
                f"got {direction!r}"
            )
    return records


def _reading_record(where: str, obj: dict[str, Any], what: str) -> tuple[float, str, dict[str, Any]]:
    """The time, kind and other fields of a health or reading record."""
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        raise CaptureError(f"{where}: 'kind' must name {what}, got {kind!r}")
    extra = {k: v for k, v in obj.items() if k not in ("t", "dir", "kind")}
    return _number(where, obj, "t"), kind, extra


def captured_frames(records: list[CameraCaptureRecord]) -> list[FrameRecord]:
    return [record for record in records if isinstance(record, FrameRecord)]


class CaptureSource(FrameSource):
    """The frames of a camera capture, in order, each checked against its sha256: a round replayed.

    `frames[i]` is the record of the frame `read()` returned i-th, for a replay to compare its results
    with what was journaled. The capture is read (and verified) when the source opens.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.description = f"camera capture {str(self.path)!r}"
        self.frames: list[FrameRecord] = []
        self._index = 0
        self._open = False

    def open(self) -> None:
        try:
            self.frames = captured_frames(read_camera_capture(self.path))
        except OSError as exc:
            raise CameraError(f"{self.description} cannot be opened: {exc.strerror}") from None
        self._index, self._open = 0, True

    def read(self) -> NDArray[np.uint8]:
        if not self._open:
            raise CameraError(f"{self.description} is not open")
        if self._index >= len(self.frames):
            raise SourceEnded(f"{self.description}: no more frames after {len(self.frames)}")
        record = self.frames[self._index]
        self._index += 1
        return record.load()

    def close(self) -> None:
        self._open = False
