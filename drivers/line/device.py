"""The device side every simulated line device shares (shoe, shuffler, shaker). Pure: time is passed in.

`LineDeviceCore` is a `drivers.sim_port.SimulatedDevice` that already behaves like line equipment does:

- `HELLO <model> <firmware> <serial>` on power-up and on every (re)plug, `HB <uptime_s>` every second;
- one ordered outgoing queue: a message that carries a seq blocks the line behind it and is retransmitted
  every 250 ms with the same seq until the host's `ACK <seq>` arrives (stop-and-wait, so the host sees a
  device's messages in the order they happened); lines without a seq wait their turn behind it;
- host bytes are framed and checksum-checked; bad host lines are counted in `host_rejects`; `STATUS?` is
  answered with `STATE <s>` (the device's `state`);
- timers (`_at`) for behaviour that takes time (a shuffle, a shake cycle), run at the start of every `poll`;
- every line emitted or received is logged (`sent`, `received`) and whole lines can be spoiled on their way
  out by a `LineFaultInjector` (noise bursts, bad checksums, duplicates), counted in `injected`.

A device subclasses it with its message table (`line_protocol`), its `state` and its behaviour
(`host_message`, dealer actions), queueing what it says with `_queue_seq_message` / `_say` / `_say_state`.
Its fault settings (`faults`, changeable mid-run) carry the line fault rates and its machine's own; the
machine's faults draw from `_rng`, seeded from them.
"""

from __future__ import annotations

import heapq
import itertools
import random
import time
from abc import ABC, abstractmethod
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from drivers.line.fields import SEQ_MODULO
from drivers.line.framing import FrameError, LineFramer, checksum, parse_frame
from drivers.line.protocol import Ack, Heartbeat, Hello, LineProtocol, ParseFailure, State, StatusQuery
from drivers.sim_port import PortedSimulator, SimulatedPort

RETRANSMIT_S = 0.25
HEARTBEAT_S = 1.0
# Bytes that never occur in a frame, so injected noise is always recognisable as noise (not a bad frame).
NOISE_BYTES = bytes([*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0x100)])


@dataclass(frozen=True, slots=True)
class LineFaults:
    """Rates (0..1) at which whole lines are spoiled on the wire; a device's own fault settings subclass it
    and add its machine's faults."""

    bad_checksum_rate: float = 0.0  # a line goes out with a wrong checksum (a seq line is then retransmitted)
    noise_rate: float = 0.0  # a burst of garbage bytes, ended by a line end, precedes a line
    duplicate_rate: float = 0.0  # a line goes out twice in a row
    seed: int = 0


@dataclass(frozen=True, slots=True)
class LoggedLine:
    """A line a device emitted (`kind`: line, bad_checksum, noise, duplicate), received from the host, or
    whose ACK it received (`acknowledged`)."""

    time: float
    text: str
    kind: str = "line"


class LineFaultInjector:
    """Spoils complete lines on their way out at the given rates (reusable by any line device or relay).

    `injected` counts what reached the wire: `noise` bursts, `bad_checksum` line copies, `duplicate` extra
    copies; so a test can check that the host rejected exactly what was spoiled.
    """

    def __init__(self, faults: LineFaults) -> None:
        self.faults = faults
        self.injected: Counter[str] = Counter()
        # Its own generator: how many lines get spoiled depends on timing, the machine's own faults must not.
        self._rng = random.Random(faults.seed + 1)

    def apply(self, line: bytes) -> list[tuple[bytes, str]]:
        """The pieces to send for `line` (a complete `BODY*CK\\r\\n`), each with its kind."""
        rng, faults = self._rng, self.faults
        pieces: list[tuple[bytes, str]] = []
        if faults.noise_rate and rng.random() < faults.noise_rate:
            noise = bytes(rng.choice(NOISE_BYTES) for _ in range(rng.randint(1, 24))) + b"\r\n"
            pieces.append((noise, "noise"))
        kind = "line"
        if faults.bad_checksum_rate and rng.random() < faults.bad_checksum_rate and line.endswith(b"\r\n"):
            body = line[:-5]
            wrong = int(checksum(body), 16) ^ rng.randint(1, 0xFF)
            line = body + f"*{wrong:02X}\r\n".encode("ascii")
            kind = "bad_checksum"
        pieces.append((line, kind))
        if faults.duplicate_rate and rng.random() < faults.duplicate_rate:
            pieces.append((line, "bad_checksum" if kind == "bad_checksum" else "duplicate"))
        for _piece, piece_kind in pieces:
            if piece_kind != "line":
                self.injected[piece_kind] += 1
        return pieces


HostMessageT = TypeVar("HostMessageT")
FaultsT = TypeVar("FaultsT", bound=LineFaults)


class LineDeviceCore(ABC, Generic[HostMessageT, FaultsT]):
    """The pure core of a simulated line device; subclasses add the device's messages and behaviour."""

    #: the device's message table (what it understands of the host)
    line_protocol: ClassVar[LineProtocol[Any, Any]]

    def __init__(self, *, hello: Hello, faults: FaultsT, first_seq: int = 1) -> None:
        self.hello = hello
        self.sent: list[LoggedLine] = []
        self.received: list[LoggedLine] = []
        #: the seq messages the host acknowledged, as sent (`text`), at the time their ACK arrived
        self.acknowledged: list[LoggedLine] = []
        #: called at once with each entry added to `acknowledged` (tests act at the instant of an ACK)
        self.on_acknowledged: Callable[[LoggedLine], None] | None = None
        self.host_rejects: Counter[str] = Counter()
        self._faults = faults
        # The machine's own faults draw from this; the line faults have their own generator.
        self._rng = random.Random(faults.seed)
        self._line_faults = LineFaultInjector(faults)
        self._next_seq = first_seq % SEQ_MODULO
        # Everything the device says, in order; (seq, line), seq None for a line that needs no ACK.
        self._queue: deque[tuple[int | None, bytes]] = deque()
        self._retransmit_at = 0.0
        self._hello_pending = False
        self._framer = LineFramer()
        self._boot_time: float | None = None
        self._last_heartbeat = 0.0
        self._timers: list[tuple[float, int, Callable[[float], None]]] = []
        self._timer_order = itertools.count()
        # the machine fault a `*_next()` switch armed for the next activity (one shot)
        self._armed_failure: str | None = None

    # -- subclass interface ------------------------------------------------------------------------------
    @property
    @abstractmethod
    def state(self) -> str:
        """What the device answers to `STATUS?` (`STATE <s>`)."""

    @abstractmethod
    def host_message(self, message: HostMessageT, now: float) -> None:
        """React to a host command other than ACK and STATUS? (which the core handles)."""

    def parse_host_message(self, body: str) -> HostMessageT | Ack | ParseFailure:
        """A host command from its (checksum-verified) line body."""
        message: HostMessageT | Ack | ParseFailure = self.line_protocol.parse_host_message(body)
        return message

    # -- misbehaviour ------------------------------------------------------------------------------------
    @property
    def faults(self) -> FaultsT:
        return self._faults

    @faults.setter
    def faults(self, faults: FaultsT) -> None:
        """Change the fault rates mid-run (counters in `injected` restart, so tests can count exactly)."""
        self._faults = faults
        self._rng = random.Random(faults.seed)
        self._line_faults = LineFaultInjector(faults)

    def _arm_failure(self, code: str) -> None:
        """The next activity (a shuffle, a shake cycle) fails with the machine fault `code` (one shot)."""
        self._armed_failure = code

    def _take_failure(self, *rates: tuple[str, float]) -> str | None:
        """How the activity starting now fails: the armed one-shot fault, else the first `(code, rate)`
        whose roll hits; None when it does not fail. Every rate is rolled each time, so changing one rate
        does not shift the random sequence of the others."""
        failure, self._armed_failure = self._armed_failure, None
        rolls = [self._rng.random() for _ in rates]
        if failure is None:
            hits = (code for (code, rate), roll in zip(rates, rolls, strict=True) if roll < rate)
            failure = next(hits, None)
        return failure

    # -- observation -------------------------------------------------------------------------------------
    @property
    def powered(self) -> bool:
        return self._boot_time is not None

    @property
    def injected(self) -> Counter[str]:
        """Lines put on the wire on purpose: noise bursts, bad-checksum copies, extra (duplicate) copies."""
        return self._line_faults.injected

    @property
    def awaiting_ack(self) -> int | None:
        """The seq the device is retransmitting until it is acknowledged, if any."""
        if self._queue and self._queue[0][0] is not None:
            return self._queue[0][0]
        return None

    @property
    def queued(self) -> int:
        """Lines not yet sent (or sent but not yet acknowledged)."""
        return len(self._queue)

    # -- SimulatedDevice ---------------------------------------------------------------------------------
    def connected(self, now: float) -> None:
        if self._boot_time is None:
            self._boot_time = now
        self._framer.reset()
        self._last_heartbeat = now
        self._hello_pending = True
        # An unacknowledged message goes out again right after the HELLO.
        self._retransmit_at = now

    def receive(self, data: bytes, now: float) -> None:
        for line in self._framer.feed(data):
            self._host_line(line, now)

    def poll(self, now: float) -> bytes:
        if self._boot_time is None:
            return b""  # not powered up yet
        self._run_timers(now)
        lines: list[bytes] = []
        if self._hello_pending:
            self._hello_pending = False
            lines.append(self.hello.encode())
        if now - self._last_heartbeat >= HEARTBEAT_S:
            self._last_heartbeat = now
            lines.append(Heartbeat(int(now - self._boot_time)).encode())
        while self._queue:
            seq, line = self._queue[0]
            if seq is None:
                lines.append(line)
                self._queue.popleft()
                self._retransmit_at = now  # a seq message that reaches the head goes out at once
                continue
            if now >= self._retransmit_at:
                lines.append(line)
                self._retransmit_at = now + RETRANSMIT_S
            break
        return b"".join(self._emit(line, now) for line in lines)

    def next_deadline(self) -> float | None:
        """The earliest time at which `poll` has something to do if no bytes arrive meanwhile (a HELLO or a
        line waiting to go: at once; a retransmission, a timed action, the next heartbeat); None before
        power-up. The port that serves the device sleeps until then instead of polling on a fixed period."""
        if self._boot_time is None:
            return None
        if self._hello_pending:
            return 0.0
        due = self._last_heartbeat + HEARTBEAT_S
        if self._timers:
            due = min(due, self._timers[0][0])
        if self._queue:
            due = min(due, self._retransmit_at if self._queue[0][0] is not None else 0.0)
        return due

    # -- for subclasses ------------------------------------------------------------------------------------
    def _say_state(self) -> None:
        """Queue `STATE <s>` with the device's state now (an answer, or news of a change)."""
        self._say(State(self.state).encode())

    def _queue_seq_message(self, encode: Callable[[int], bytes], now: float) -> int:
        """Queue a message that is retransmitted until ACKed; `encode` gets the seq. Returns the seq."""
        seq = self._next_seq
        self._next_seq = (seq + 1) % SEQ_MODULO
        self._queue_with_seq(seq, encode(seq), now)
        return seq

    def _queue_with_seq(self, seq: int, line: bytes, now: float) -> None:
        if not self._queue:
            self._retransmit_at = now  # nothing outstanding: send at the next poll
        self._queue.append((seq, line))

    def _say(self, line: bytes) -> None:
        """Queue a line that needs no ACK (it still waits behind an unacknowledged message)."""
        self._queue.append((None, line))

    def _at(self, when: float, action: Callable[[float], None]) -> None:
        """Run `action(when)` at the first poll at or after `when` (timed behaviour: a shuffle ending...)."""
        heapq.heappush(self._timers, (when, next(self._timer_order), action))

    def _cancel_timers(self) -> None:
        """Forget every pending timed action (the activity they belonged to was interrupted)."""
        self._timers.clear()

    # -- internals -----------------------------------------------------------------------------------------
    def _run_timers(self, now: float) -> None:
        while self._timers and self._timers[0][0] <= now:
            when, _order, action = heapq.heappop(self._timers)
            # The scheduled time, not the poll's: a chain of phases does not drift with the poll interval.
            action(when)

    def _host_line(self, line: bytes, now: float) -> None:
        body = parse_frame(line)
        if isinstance(body, FrameError):
            self.host_rejects[body.reason] += 1
            return
        self.received.append(LoggedLine(now, body))
        message = self.parse_host_message(body)
        if isinstance(message, ParseFailure):
            self.host_rejects[message.reason] += 1
        elif isinstance(message, Ack):
            # Stop-and-wait: only the outstanding message can be acknowledged; a late ACK is ignored.
            if self._queue and self._queue[0][0] == message.seq:
                _seq, line = self._queue.popleft()
                self._retransmit_at = now
                acked = LoggedLine(now, line.rstrip(b"\r\n").decode("latin-1"), "acknowledged")
                self.acknowledged.append(acked)
                if self.on_acknowledged is not None:
                    self.on_acknowledged(acked)
        elif isinstance(message, StatusQuery):
            self._say_state()
        else:
            self.host_message(message, now)

    def _emit(self, line: bytes, now: float) -> bytes:
        out = bytearray()
        for piece, kind in self._line_faults.apply(line):
            self.sent.append(LoggedLine(now, piece.rstrip(b"\r\n").decode("latin-1"), kind))
            out += piece
        return bytes(out)


CoreT = TypeVar("CoreT", bound=LineDeviceCore[Any, Any])
ResultT = TypeVar("ResultT")


class LineSimulator(PortedSimulator, Generic[CoreT]):
    """A line device's core served on a port: what every line-device simulator shows of its device.

    A subclass names its `device_class`; its keyword arguments (seed, faults, model...) are the ones the
    simulator takes besides `clock` and `poll_interval`. The dealer's or operator's actions of a subclass
    take their time from `clock` (the port's clock)."""

    device_class: ClassVar[type[Any]]
    device: CoreT

    def __init__(
        self, *, clock: Callable[[], float] = time.time, poll_interval: float = 0.01, **device_options: Any
    ) -> None:
        self.device = self.device_class(**device_options)
        self.clock = clock
        self.port = SimulatedPort(self.device, clock=clock, poll_interval=poll_interval)

    def _act(self, action: Callable[[float], ResultT]) -> ResultT:
        """Someone acts on the device now (by the port's clock); what the device says goes out at once."""
        result = action(self.clock())
        self.port.pump()
        return result

    @property
    def state(self) -> str:
        return self.device.state

    @property
    def faults(self) -> Any:
        return self.device.faults

    @faults.setter
    def faults(self, faults: Any) -> None:
        self.device.faults = faults

    @property
    def sent(self) -> list[LoggedLine]:
        return self.device.sent

    @property
    def received(self) -> list[LoggedLine]:
        return self.device.received
