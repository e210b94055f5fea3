"""Host rules shared by every line device (shoe, shuffler, shaker), on top of `drivers.line.framing`.

- heartbeat watchdog: no byte for 3 s means the link is down, whatever the OS says;
- `HELLO` (or, after an outage, the first valid line) means the device is online;
- every copy of a message that carries a seq is acknowledged, and copies after the first are dropped;
- bad lines are counted by reason in `stats`, never interpreted.

A device protocol subclasses `LineDeviceSession` and supplies `parse_message` (its message table),
`message_seq` and `handle_message` (message -> readings).
"""

from __future__ import annotations

from abc import abstractmethod
from collections import deque
from typing import Generic, TypeVar

from drivers.line.framing import (
    Ack,
    FrameError,
    Heartbeat,
    Hello,
    LineFramer,
    ParseFailure,
    parse_common,
    parse_frame,
)
from drivers.readings import DeviceOffline, DeviceOnline, Reading
from drivers.session import DeviceSession

#: Heartbeats come every second; three missed in a row is a dead link, not a slow one.
WATCHDOG_S = 3.0
#: Recent (seq, body) pairs remembered for de-duplication. Seqs wrap only after 10 000 messages, so a window
#: of this size never mistakes a new message for an old one, yet it easily covers retransmissions after a
#: replug. The body is part of the key because a re-read (`RESCAN`) reuses its `NOREAD`'s seq.
DEDUP_WINDOW = 256

MessageT = TypeVar("MessageT")


class LineDeviceSession(DeviceSession, Generic[MessageT]):
    """Host side of a line-protocol device; subclasses add the device's messages."""

    watchdog_s: float = WATCHDOG_S

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.framer = LineFramer()
        self.hello: Hello | None = None
        self.uptime_s: int | None = None
        self._connected = False
        # None until we know: a device silent from the very start is reported offline once, too.
        self._online: bool | None = None
        self._last_byte_at: float | None = None
        self._seen: deque[tuple[int, str]] = deque(maxlen=DEDUP_WINDOW)
        self._seen_set: set[tuple[int, str]] = set()

    @property
    def online(self) -> bool:
        return bool(self._online)

    # -- subclass interface ------------------------------------------------------------------------
    @abstractmethod
    def parse_message(self, body: str) -> MessageT | ParseFailure:
        """Parse a device-specific message body (HELLO and HB are handled here already)."""

    @abstractmethod
    def message_seq(self, message: MessageT) -> int | None:
        """The seq the device expects an ACK for, or None for messages sent only once."""

    @abstractmethod
    def handle_message(self, message: MessageT, raw: str, now: float) -> list[Reading]:
        """Readings for a new (not duplicate) message; `raw` is the line text as received."""

    # -- DeviceSession -----------------------------------------------------------------------------
    def connection_made(self, now: float) -> list[Reading]:
        self._connected = True
        self._last_byte_at = now
        self.framer.reset()
        return []

    def connection_lost(self, now: float, reason: str) -> list[Reading]:
        self._connected = False
        self._online = False
        self.framer.reset()
        return [DeviceOffline(device=self.name, time=now, reason=reason)]

    def data_received(self, data: bytes, now: float) -> list[Reading]:
        if not data:
            return []
        self.stats.bytes_received += len(data)
        self._last_byte_at = now
        too_long_before = self.framer.too_long
        lines = self.framer.feed(data)
        for _ in range(self.framer.too_long - too_long_before):
            self.stats.reject("line too long")
        readings: list[Reading] = []
        for line in lines:
            readings += self._line_received(line, now)
        return readings

    def tick(self, now: float) -> list[Reading]:
        if not self._connected or self._online is False or self._last_byte_at is None:
            return []
        silent_for = now - self._last_byte_at
        if silent_for < self.watchdog_s:
            return []
        self._online = False
        reason = f"no data from device for {self.watchdog_s:g} s"
        return [DeviceOffline(device=self.name, time=now, reason=reason)]

    # -- internals ---------------------------------------------------------------------------------
    def _line_received(self, line: bytes, now: float) -> list[Reading]:
        self.stats.lines_received += 1
        body = parse_frame(line)
        if isinstance(body, FrameError):
            self.stats.reject(body.reason)
            return []
        raw = line.decode("ascii")  # parse_frame guaranteed printable ASCII
        common = parse_common(body)
        message: Hello | Heartbeat | MessageT | ParseFailure = (
            self.parse_message(body) if common is None else common
        )
        if isinstance(message, ParseFailure):
            self.stats.reject(message.reason)
            return []

        readings: list[Reading] = []
        if isinstance(message, Hello):
            self.hello = message
            self._online = True
            detail = f"{message.model} {message.firmware} {message.serial}"
            return [DeviceOnline(device=self.name, time=now, raw=raw, detail=detail)]
        if not self._online:
            # Any valid line proves the device is talking again (its HELLO may have been lost in noise).
            self._online = True
            readings.append(DeviceOnline(device=self.name, time=now, raw=raw))
        if isinstance(message, Heartbeat):
            self.uptime_s = message.uptime_s
            return readings

        seq = self.message_seq(message)
        if seq is not None:
            # Every copy is acknowledged: the ACK of an earlier copy may have been lost on the line.
            self._send(Ack(seq).encode())
            if self._already_seen(seq, body):
                self.stats.duplicates += 1
                return readings
        readings += self.handle_message(message, raw, now)
        return readings

    def acknowledges(self, raw: str) -> bool:
        return self._seq_message(raw) is not None

    def delivered_before(self, raw: str) -> None:
        key = self._seq_message(raw)
        if key is not None:
            self._already_seen(*key)

    def _seq_message(self, raw: str) -> tuple[int, str] | None:
        """(seq, body) of a line that carries a seq, else None."""
        body = parse_frame(raw.encode("ascii", "replace"))
        if isinstance(body, FrameError) or parse_common(body) is not None:
            return None
        message = self.parse_message(body)
        if isinstance(message, ParseFailure):
            return None
        seq = self.message_seq(message)
        return None if seq is None else (seq, body)

    def _already_seen(self, seq: int, body: str) -> bool:
        key = (seq, body)
        if key in self._seen_set:
            return True
        if len(self._seen) == self._seen.maxlen:
            self._seen_set.discard(self._seen[0])
        self._seen.append(key)
        self._seen_set.add(key)
        return False
