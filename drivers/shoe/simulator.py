"""A simulated `shoe-line` card shoe that behaves like the machine, byte for byte.

`ShoeDevice` is the pure core (a `drivers.sim_port.SimulatedDevice`): it says HELLO when plugged in, sends
`HB <uptime>` every second, retransmits every seq message every 250 ms until it is ACKed (one outstanding
message at a time, so the host sees the shoe's messages in order), honours LOCK/UNLOCK/STATUS?, deals a
shuffled shoe with a cut card, and can misbehave on purpose (`ShoeFaults`: no-reads, bad checksums, line
noise, duplicated lines). `ShoeSimulator` serves it on a pty or TCP port and is what tests and the
`simulate` mode drive: `draw()`, `rescan()`, `fault()`, `unplug()`...
"""

from __future__ import annotations

import random
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from drivers.line.framing import (
    SEQ_MODULO,
    FrameError,
    Heartbeat,
    Hello,
    LineFramer,
    ParseFailure,
    checksum,
    parse_frame,
)
from drivers.shoe.protocol import (
    FAULT_TEXTS,
    RANKS,
    SUITS,
    Ack,
    Card,
    Cut,
    Fault,
    Lock,
    NoRead,
    Rescan,
    State,
    StatusQuery,
    Unlock,
    parse_host_message,
)
from drivers.sim_port import PortedSimulator, SimulatedPort

RETRANSMIT_S = 0.25
HEARTBEAT_S = 1.0
#: Where a dealer usually places the cut card: this many cards before the end of the shoe.
DEFAULT_CUT_POSITION = 16
# Bytes that never occur in a frame, so injected noise is always recognisable as noise (not a bad frame).
_NOISE_BYTES = bytes([*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0x100)])


@dataclass(frozen=True, slots=True)
class ShoeFaults:
    """Misbehaviour rates (0..1) applied to what the shoe emits; `seed` makes a run repeatable."""

    noread_rate: float = 0.0  # a drawn card is announced NOREAD (needs a rescan)
    bad_checksum_rate: float = 0.0  # a line goes out with a wrong checksum (the shoe will retransmit)
    noise_rate: float = 0.0  # a burst of garbage bytes, ended by a line end, precedes a line
    duplicate_rate: float = 0.0  # a line goes out twice in a row
    seed: int = 0


@dataclass(frozen=True, slots=True)
class LoggedLine:
    """A line the shoe emitted (`kind`: line, bad_checksum, noise, duplicate) or received from the host."""

    time: float
    text: str
    kind: str = "line"


def shuffled_shoe(decks: int, seed: int) -> list[str]:
    cards = [rank + suit for _ in range(decks) for suit in SUITS for rank in RANKS]
    random.Random(seed).shuffle(cards)
    return cards


class ShoeDevice:
    """The pure core of the simulated shoe. All times are passed in."""

    def __init__(
        self,
        *,
        decks: int = 8,
        seed: int = 0,
        cards: Sequence[str] | None = None,
        cut_position: int | None = DEFAULT_CUT_POSITION,
        faults: ShoeFaults | None = None,
        model: str = "SIMSHOE",
        firmware: str = "1.0.0",
        serial: str = "SIM0001",
        first_seq: int = 1,
    ) -> None:
        if cards is None:
            self.cards = shuffled_shoe(decks, seed)
        else:
            # Explicit lists may hold impossible codes on purpose (to test how the host handles misreads).
            for code in cards:
                if not code or " " in code or "*" in code or not code.isascii() or not code.isprintable():
                    raise ValueError(f"a card code must be one printable ASCII word: {code!r}")
            self.cards = list(cards)
        # No cut card when the shoe is too small to hold it that far from the end.
        cut_index = len(self.cards) - cut_position if cut_position is not None else 0
        self.cut_index: int | None = cut_index if cut_index > 0 else None
        self.hello = Hello(model, firmware, serial)
        self.position = 0
        self.locked = False
        self.fault_state: str | None = None  # "COVER_OPEN" | "FAULT"
        self.cut_sent = False
        self.sent: list[LoggedLine] = []
        self.received: list[LoggedLine] = []
        self.host_rejects: Counter[str] = Counter()
        self._faults = faults or ShoeFaults()
        self._noread_rng = random.Random(self._faults.seed)
        self._line_faults = LineFaultInjector(self._faults)
        self._force_noread = False
        self._next_seq = first_seq % SEQ_MODULO
        # Everything the shoe says, in order. A seq message blocks the line behind it until it is ACKed
        # (stop-and-wait), so the host never sees `STATE EMPTY` before the last card or a card before CUT.
        self._queue: deque[tuple[int | None, bytes]] = deque()
        self._retransmit_at = 0.0
        self._hello_pending = False
        self._unread: dict[int, str] = {}  # NOREAD seq -> the card, waiting for a rescan
        self._framer = LineFramer()
        self._boot_time: float | None = None
        self._last_heartbeat = 0.0

    # -- misbehaviour --------------------------------------------------------------------------------
    @property
    def faults(self) -> ShoeFaults:
        return self._faults

    @faults.setter
    def faults(self, faults: ShoeFaults) -> None:
        """Change the fault rates mid-run (counters in `injected` restart, so tests can count exactly)."""
        self._faults = faults
        self._noread_rng = random.Random(faults.seed)
        self._line_faults = LineFaultInjector(faults)

    def force_noread(self) -> None:
        """The next drawn card is not read (one shot)."""
        self._force_noread = True

    # -- dealer actions --------------------------------------------------------------------------------
    @property
    def remaining(self) -> int:
        return len(self.cards) - self.position

    @property
    def state(self) -> str:
        if self.fault_state is not None:
            return self.fault_state
        if self.locked:
            return "LOCKED"
        if self.remaining == 0:
            return "EMPTY"
        return "READY"

    @property
    def unread(self) -> list[int]:
        """Seqs of cards announced NOREAD and not yet re-scanned."""
        return list(self._unread)

    def draw(self, now: float) -> bool:
        """The dealer pulls the next card. False when the gate is locked, the shoe faulted or empty."""
        if self.locked or self.fault_state is not None or self.remaining == 0:
            return False
        if self.cut_index is not None and self.position == self.cut_index and not self.cut_sent:
            self.cut_sent = True
            self._queue_seq_message(lambda seq: Cut(seq).encode(), now)
        code = self.cards[self.position]
        self.position += 1
        noread = self._force_noread or self._noread_rng.random() < self._faults.noread_rate
        self._force_noread = False
        if noread:
            seq = self._queue_seq_message(lambda seq: NoRead(seq).encode(), now)
            self._unread[seq] = code
        else:
            self._queue_seq_message(lambda seq: Card(seq, code).encode(), now)
        if self.remaining == 0:
            self._say(State(self.state).encode())
        return True

    def rescan(self, now: float, seq: int | None = None) -> bool:
        """The dealer passes an unread card over the reader again (the oldest one unless `seq` is given)."""
        if not self._unread:
            return False
        if seq is None:
            seq = next(iter(self._unread))
        code = self._unread.pop(seq, None)
        if code is None:
            return False
        self._queue_with_seq(seq, Rescan(seq, code).encode(), now)
        return True

    def fault(self, code: str, text: str | None = None) -> None:
        """`COVER_OPEN`, `FAULT`, or a fault code like `F03` (sent as `FAULT F03 JAM` then `STATE FAULT`)."""
        if code == "COVER_OPEN":
            self.fault_state = "COVER_OPEN"
        else:
            if code != "FAULT":
                self._say(Fault(code, text or FAULT_TEXTS.get(code, "UNKNOWN")).encode())
            self.fault_state = "FAULT"
        self._say(State(self.state).encode())

    def clear_fault(self) -> None:
        self.fault_state = None
        self._say(State(self.state).encode())

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

    # -- internals -----------------------------------------------------------------------------------------
    def _queue_seq_message(self, encode: Callable[[int], bytes], now: float) -> int:
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

    def _host_line(self, line: bytes, now: float) -> None:
        body = parse_frame(line)
        if isinstance(body, FrameError):
            self.host_rejects[body.reason] += 1
            return
        self.received.append(LoggedLine(now, body))
        message = parse_host_message(body)
        if isinstance(message, ParseFailure):
            self.host_rejects[message.reason] += 1
        elif isinstance(message, Ack):
            # Stop-and-wait: only the outstanding message can be acknowledged; a late ACK is ignored.
            if self._queue and self._queue[0][0] == message.seq:
                self._queue.popleft()
                self._retransmit_at = now
        elif isinstance(message, Lock | Unlock):
            self.locked = isinstance(message, Lock)
            self._say(State(self.state).encode())
        elif isinstance(message, StatusQuery):
            self._say(State(self.state).encode())

    def _emit(self, line: bytes, now: float) -> bytes:
        out = bytearray()
        for piece, kind in self._line_faults.apply(line):
            self.sent.append(LoggedLine(now, piece.rstrip(b"\r\n").decode("latin-1"), kind))
            out += piece
        return bytes(out)

    @property
    def injected(self) -> Counter[str]:
        """Lines put on the wire on purpose: noise bursts, bad-checksum copies, extra (duplicate) copies."""
        return self._line_faults.injected


class LineFaultInjector:
    """Spoils complete lines on their way out, at the rates of a `ShoeFaults` (reusable by any line device).

    `injected` counts what reached the wire: `noise` bursts, `bad_checksum` line copies, `duplicate` extra
    copies; so a test can check that the host rejected exactly what was spoiled.
    """

    def __init__(self, faults: ShoeFaults) -> None:
        self.faults = faults
        self.injected: Counter[str] = Counter()
        # Its own generator: how many lines get spoiled depends on timing, card no-reads must not.
        self._rng = random.Random(faults.seed + 1)

    def apply(self, line: bytes) -> list[tuple[bytes, str]]:
        """The pieces to send for `line` (a complete `BODY*CK\\r\\n`), each with its kind."""
        rng, faults = self._rng, self.faults
        pieces: list[tuple[bytes, str]] = []
        if faults.noise_rate and rng.random() < faults.noise_rate:
            noise = bytes(rng.choice(_NOISE_BYTES) for _ in range(rng.randint(1, 24))) + b"\r\n"
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


class ShoeSimulator(PortedSimulator):
    """A `ShoeDevice` served on a pty or TCP port; dealer actions use the port's clock."""

    def __init__(
        self,
        *,
        decks: int = 8,
        seed: int = 0,
        cards: Sequence[str] | None = None,
        cut_position: int | None = DEFAULT_CUT_POSITION,
        faults: ShoeFaults | None = None,
        model: str = "SIMSHOE",
        firmware: str = "1.0.0",
        serial: str = "SIM0001",
        clock: Callable[[], float] = time.time,
        poll_interval: float = 0.01,
    ) -> None:
        self.device = ShoeDevice(
            decks=decks,
            seed=seed,
            cards=cards,
            cut_position=cut_position,
            faults=faults,
            model=model,
            firmware=firmware,
            serial=serial,
        )
        self.clock = clock
        self.port = SimulatedPort(self.device, clock=clock, poll_interval=poll_interval)

    # -- dealer ------------------------------------------------------------------------------------------
    def draw(self) -> bool:
        drawn = self.device.draw(self.clock())
        self.port.pump()
        return drawn

    def rescan(self, seq: int | None = None) -> bool:
        rescanned = self.device.rescan(self.clock(), seq)
        self.port.pump()
        return rescanned

    def fault(self, code: str, text: str | None = None) -> None:
        self.device.fault(code, text)
        self.port.pump()

    def clear_fault(self) -> None:
        self.device.clear_fault()
        self.port.pump()

    def force_noread(self) -> None:
        self.device.force_noread()

    @property
    def faults(self) -> ShoeFaults:
        return self.device.faults

    @faults.setter
    def faults(self, faults: ShoeFaults) -> None:
        self.device.faults = faults

    @property
    def remaining(self) -> int:
        return self.device.remaining

    @property
    def locked(self) -> bool:
        return self.device.locked

    @property
    def state(self) -> str:
        return self.device.state

    @property
    def sent(self) -> list[LoggedLine]:
        return self.device.sent

    @property
    def received(self) -> list[LoggedLine]:
        return self.device.received
