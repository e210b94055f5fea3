"""Host rules shared by every line device (shoe, shuffler, shaker), on top of `drivers.line.framing`.

- heartbeat watchdog: no byte for 3 s means the link is down, whatever the OS says;
- `HELLO` (or, after an outage, the first valid line) means the device is online;
- every copy of a message that carries a seq is acknowledged, and copies after the first are dropped;
- bad lines are counted by reason in `stats`, never interpreted;
- on every (re)connect the host asks `STATUS?` (the device may have changed while we were away);
- `STATE <s>` -> `DeviceStatus`, and fault latching: a fault state (or a fault message) is reported once as
  `DeviceFault`, not once per line, and `DeviceFaultCleared` follows when the device is operational again;
- commands (`DeviceCommand`) come from one table of name -> host message (`status` -> `STATUS?` for all).

A device protocol subclasses `LineDeviceSession` with its `line_protocol` (message table), its fault and
operational states, its `commands`, and `handle_message` for its own messages (message -> readings).
"""

from __future__ import annotations

from abc import abstractmethod
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from drivers.line.fields import is_token
from drivers.line.framing import FrameError, LineFramer, parse_common, parse_frame
from drivers.line.protocol import Ack, Heartbeat, Hello, LineProtocol, ParseFailure, State, StatusQuery
from drivers.readings import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceOffline,
    DeviceOnline,
    DeviceStatus,
    Reading,
)
from drivers.session import DeviceCommand, DeviceSession, UnknownDeviceCommand

#: Heartbeats come every second; three missed in a row is a dead link, not a slow one.
WATCHDOG_S = 3.0
#: Recent (seq, body) pairs remembered for de-duplication. Seqs wrap only after 10 000 messages, so a window
#: of this size never mistakes a new message for an old one, yet it easily covers retransmissions after a
#: replug. The body is part of the key because a re-read (`RESCAN`) reuses its `NOREAD`'s seq.
DEDUP_WINDOW = 256

MessageT = TypeVar("MessageT")


class HostCommand(Protocol):
    """A host -> device message."""

    def encode(self) -> bytes: ...


#: Builds a command's host message from the command's arguments and time; raises UnknownDeviceCommand for
#: arguments it cannot use.
CommandBuilder = Callable[[Mapping[str, Any], float], HostCommand]


def fixed(message: HostCommand) -> CommandBuilder:
    """A command that takes no arguments: always the same host message."""
    return lambda _args, _now: message


def wire_id(args: Mapping[str, Any], key: str, now: float, *, command: str) -> str:
    """The id argument `key` of a command (a shuffle id, a cycle id) as one token for the wire.

    Without one the id is the command's time in epoch milliseconds: unique in practice, and the same again
    when a capture is replayed (time is passed in), so the device's answer still names what it belongs to.
    """
    value = args.get(key)
    if value is None:
        value = round(now * 1000)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        value = str(value)
    if not isinstance(value, str) or not is_token(value):
        raise UnknownDeviceCommand(
            f"{command} needs a {key!r} of one word (printable ASCII, no '*'), not {value!r}"
        )
    return value


class LineDeviceSession(DeviceSession, Generic[MessageT]):
    """Host side of a line-protocol device; subclasses add the device's messages."""

    watchdog_s: float = WATCHDOG_S
    #: the device's message table
    line_protocol: ClassVar[LineProtocol[Any, Any]]
    #: command name -> its host message (`status` is `STATUS?` on every line device)
    commands: ClassVar[Mapping[str, CommandBuilder]] = {"status": fixed(StatusQuery())}
    #: states that are faults in themselves, with the reason an operator reads
    fault_states: ClassVar[Mapping[str, str]] = {}
    #: fault states reported even while another fault is latched (a door opened on top of a jam)
    overriding_fault_states: ClassVar[frozenset[str]] = frozenset()
    #: states that mean the device works again after a fault
    operational_states: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.framer = LineFramer()
        self.hello: Hello | None = None
        self.uptime_s: int | None = None
        #: the last `STATE` the device reported
        self.state: str | None = None
        #: the latched fault (a fault state or code) while the device reports one; None when it works
        self.active_fault: str | None = None
        self._connected = False
        # None until we know: a device silent from the very start is reported offline once, too.
        self._online: bool | None = None
        self._last_byte_at: float | None = None
        self._seen: deque[tuple[int, str]] = deque(maxlen=DEDUP_WINDOW)
        self._seen_set: set[tuple[int, str]] = set()

    @property
    def online(self) -> bool:
        return bool(self._online)

    @property
    def faulted(self) -> bool:
        return self.active_fault is not None

    # -- subclass interface ------------------------------------------------------------------------
    def parse_message(self, body: str) -> MessageT | ParseFailure:
        """Parse a device-specific message body (HELLO and HB are handled here already)."""
        message: MessageT | ParseFailure = self.line_protocol.parse_device_message(body)
        return message

    def message_seq(self, message: MessageT) -> int | None:
        """The seq the device expects an ACK for, or None for messages sent only once."""
        return self.line_protocol.message_seq(message)

    @abstractmethod
    def handle_message(self, message: MessageT, raw: str, now: float) -> list[Reading]:
        """Readings for a new (not duplicate) device message other than the common HELLO, HB and STATE;
        `raw` is the line text as received."""

    def command_sent(self, message: HostCommand, now: float) -> None:
        """Called with every command's host message just before it is sent (for what the session tracks)."""

    def state_operational(self, state: str) -> None:
        """Called when the device reports an operational state (after the latched fault is released)."""

    # -- DeviceSession -----------------------------------------------------------------------------
    def connection_made(self, now: float) -> list[Reading]:
        self._connected = True
        self._last_byte_at = now
        self.framer.reset()
        # Ask at once: the device's state (locked, door open, fault cleared...) may have changed meanwhile.
        self._send(StatusQuery().encode())
        return []

    def command(self, command: DeviceCommand, now: float) -> list[Reading]:
        build = self.commands.get(command.name)
        if build is None:
            known = ", ".join(sorted(self.commands))
            raise UnknownDeviceCommand(
                f"{self.protocol} device {self.name!r} has no command {command.name!r} (known: {known})"
            )
        message = build(command.args, now)
        self.command_sent(message, now)
        self._send(message.encode())
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
        deadline = self.next_deadline()
        if deadline is None or now < deadline:
            return []
        self._online = False
        reason = f"no data from device for {self.watchdog_s:g} s"
        return [DeviceOffline(device=self.name, time=now, reason=reason)]

    def next_deadline(self) -> float | None:
        """When the heartbeat watchdog expires: the only timer a line session has."""
        if not self._connected or self._online is False or self._last_byte_at is None:
            return None
        return self._last_byte_at + self.watchdog_s

    # -- fault latching ------------------------------------------------------------------------------
    def _state_changed(self, state: str, raw: str, now: float) -> list[Reading]:
        was_faulted = self.faulted
        self.state = state
        readings: list[Reading] = [DeviceStatus(device=self.name, time=now, raw=raw, state=state)]
        reason = self.fault_states.get(state)
        if reason is not None:
            # A fault message usually precedes its STATE line; report the fault once, not once per line.
            latched = self.active_fault
            if latched is None or (state in self.overriding_fault_states and latched != state):
                self.active_fault = state
                readings.append(DeviceFault(device=self.name, time=now, raw=raw, code=state, reason=reason))
            return readings
        if state in self.operational_states:
            self.active_fault = None
            self.state_operational(state)
        if was_faulted and not self.faulted:
            readings.append(DeviceFaultCleared(device=self.name, time=now, raw=raw, detail=state))
        return readings

    def _fault_reported(
        self, code: str, text: str, raw: str, now: float, *, latch: str | None = None
    ) -> DeviceFault:
        """A fault the device reported in a message: latched (as `latch`, default the code) and read out."""
        self.active_fault = code if latch is None else latch
        return DeviceFault(device=self.name, time=now, raw=raw, code=code, reason=text)

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
        if seq is None:
            return readings + self._message_received(message, raw, now)
        # Every copy is acknowledged: the ACK of an earlier copy may have been lost on the line.
        self._send(Ack(seq).encode())
        if not self._already_seen(seq, body):
            readings += self._message_received(message, raw, now)
        else:
            self.stats.duplicates += 1
        # what this line gave carries its acknowledgement key: the table journals the line as delivered
        return [replace(r, ack=raw) if r.raw == raw else r for r in readings]

    def _message_received(self, message: MessageT, raw: str, now: float) -> list[Reading]:
        if isinstance(message, State):
            return self._state_changed(message.state, raw, now)
        return self.handle_message(message, raw, now)

    def delivered_before(self, raw: str) -> None:
        key = self._seq_message(raw)
        if key is not None:
            self._already_seen(*key)

    def _seq_message(self, raw: str) -> tuple[int, str] | None:
        """(seq, body) of a journaled line that carries a seq, else None (a restart reads its last lines)."""
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
