"""Framing shared by the line devices (shoe, shuffler, shaker): `<BODY>*<CK>\\r\\n`, NMEA-style XOR checksum.

Also the messages every line device speaks (`HELLO`, `HB`, `STATE`, host `ACK` and `STATUS?`), so each
device protocol only adds its own table (`drivers.line.protocol.LineProtocol`). Everything here is pure:
bytes in, lines/messages out; bad input is returned as a value, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from drivers.line.fields import parse_number, parse_seq, seq_text, split_fields

#: A real message is a few dozen bytes; anything this long without a line end is garbage, not a message.
MAX_LINE_BYTES = 256
#: `HB <uptime_s>`: ten digits are over 300 years of uptime. Bounded here, not only by MAX_LINE_BYTES: a
#: longer field is a malformed line, never an int() that Python refuses past 4,300 digits (a ValueError).
MAX_UPTIME_DIGITS = 10

_PRINTABLE = frozenset(range(0x20, 0x7F))
_HEX_UPPER = frozenset(b"0123456789ABCDEF")


def checksum(body: bytes) -> str:
    """XOR of every byte of BODY as two upper-case hex digits (the NMEA 0183 checksum)."""
    value = 0
    for byte in body:
        value ^= byte
    return f"{value:02X}"


def encode_line(body: str) -> bytes:
    """`BODY*CK\\r\\n` for a body of printable ASCII (a `*` would make the frame ambiguous)."""
    raw = body.encode("ascii")
    if not raw or any(byte not in _PRINTABLE for byte in raw) or b"*" in raw:
        raise ValueError(f"a line body must be non-empty printable ASCII without '*': {body!r}")
    return raw + b"*" + checksum(raw).encode("ascii") + b"\r\n"


@dataclass(frozen=True, slots=True)
class FrameError:
    """Why a line was discarded. `reason` is the operator-facing counter name (SessionStats.reject)."""

    reason: str
    line: bytes


def parse_frame(line: bytes) -> str | FrameError:
    """Check one line (without its line end) and return its BODY, or why it is not a frame."""
    if not line:
        return FrameError("noise", line)
    if any(byte not in _PRINTABLE for byte in line):
        # Control or 8-bit bytes do not occur in a frame: electrical noise or a baud-rate mismatch.
        return FrameError("noise", line)
    body, star, ck = line.rpartition(b"*")
    if not star:
        return FrameError("missing checksum", line)
    if len(ck) != 2 or any(byte not in _HEX_UPPER for byte in ck):
        return FrameError("bad checksum", line)
    if checksum(body) != ck.decode("ascii"):
        return FrameError("bad checksum", line)
    return body.decode("ascii")


class LineFramer:
    """Split a byte stream into lines at `\\n` (a trailing `\\r` is dropped), whatever the chunking.

    A line longer than `max_line` is discarded up to the next line end and counted in `too_long`: the
    framer then resynchronises on the next line, so one burst of garbage costs at most one message.
    """

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self.max_line = max_line
        self.too_long = 0
        self._buffer = bytearray()
        self._discarding = False

    def reset(self) -> None:
        """Forget a partial line (the link dropped: its first half will never be completed)."""
        self._buffer.clear()
        self._discarding = False

    def feed(self, data: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while start < len(data):
            end = data.find(b"\n", start)
            if end < 0:
                self._append(data[start:])
                break
            self._append(data[start:end])
            if self._discarding:
                self._discarding = False
            else:
                line = bytes(self._buffer)
                line = line[:-1] if line.endswith(b"\r") else line
                if len(line) > self.max_line:
                    self.too_long += 1
                else:
                    lines.append(line)
            self._buffer.clear()
            start = end + 1
        return lines

    def _append(self, chunk: bytes) -> None:
        if self._discarding:
            return
        self._buffer += chunk
        # +1 leaves room for the `\r` of a line exactly max_line long.
        if len(self._buffer) > self.max_line + 1:
            self._buffer.clear()
            self._discarding = True
            self.too_long += 1


# --- messages common to every line device ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LineMessage:
    """A message whose line body is its `wire` template filled in with its fields (`{seq}` as four digits)."""

    wire: ClassVar[str]

    def encode(self) -> bytes:
        values = {field.name: getattr(self, field.name) for field in fields(self)}
        if "seq" in values:
            values["seq"] = seq_text(values["seq"])
        return encode_line(self.wire.format(**values))


@dataclass(frozen=True, slots=True)
class Hello(LineMessage):
    """`HELLO <model> <firmware> <serial>`: sent on power-up and on every reconnect."""

    wire = "HELLO {model} {firmware} {serial}"
    model: str
    firmware: str
    serial: str


@dataclass(frozen=True, slots=True)
class Heartbeat(LineMessage):
    """`HB <uptime_s>`: sent every second so a silent link is noticed even when the OS sees no error."""

    wire = "HB {uptime_s}"
    uptime_s: int


@dataclass(frozen=True, slots=True)
class Ack(LineMessage):
    """Host `ACK <seq>`: stops the device retransmitting the message with that seq."""

    wire = "ACK {seq}"
    seq: int


@dataclass(frozen=True, slots=True)
class State(LineMessage):
    """`STATE <s>`: the device's state; which states exist is each device protocol's own table."""

    wire = "STATE {state}"
    state: str


@dataclass(frozen=True, slots=True)
class StatusQuery(LineMessage):
    """Host `STATUS?`: the device answers with `STATE`."""

    wire = "STATUS?"


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """A well-framed line that is not a valid message; `reason` is the rejection counter name."""

    reason: str


UNKNOWN_MESSAGE = ParseFailure("unknown message")
MALFORMED_FIELDS = ParseFailure("malformed fields")


def parse_common(body: str) -> Hello | Heartbeat | ParseFailure | None:
    """Parse HELLO/HB; None when the body is some other message (the device protocol's business)."""
    fields = split_fields(body)
    if fields is None:
        return MALFORMED_FIELDS
    name, args = fields[0], fields[1:]
    if name == "HELLO":
        if len(args) != 3:
            return MALFORMED_FIELDS
        return Hello(*args)
    if name == "HB":
        uptime = parse_number(args[0], MAX_UPTIME_DIGITS) if len(args) == 1 else None
        if uptime is None:
            return MALFORMED_FIELDS
        return Heartbeat(uptime)
    return None


def parse_ack(body: str) -> Ack | ParseFailure | None:
    """Parse a host `ACK <seq>` (used by simulators); None when the body is another message."""
    fields = split_fields(body)
    if fields is None:
        return MALFORMED_FIELDS
    if fields[0] != "ACK":
        return None
    seq = parse_seq(fields[1]) if len(fields) == 2 else None
    if seq is None:
        return MALFORMED_FIELDS
    return Ack(seq)
