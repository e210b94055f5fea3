"""A simulated `shoe-line` card shoe that behaves like the machine, byte for byte.

`ShoeDevice` is the pure core (a `drivers.sim_port.SimulatedDevice` built on the line devices' shared
`drivers.line.device.LineDeviceCore`): it says HELLO when plugged in, sends `HB <uptime>` every second,
retransmits every seq message every 250 ms until it is ACKed (one outstanding message at a time, so the host
sees the shoe's messages in order), honours LOCK/UNLOCK/STATUS?, deals a shuffled shoe with a cut card, and
can misbehave on purpose (`ShoeFaults`: no-reads, bad checksums, line noise, duplicated lines).
`ShoeSimulator` serves it on a pty or TCP port and is what tests and the `simulate` mode drive: `draw()`,
`rescan()`, `fault()`, `unplug()`...
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from drivers.line.device import (
    HEARTBEAT_S,
    RETRANSMIT_S,
    LineDeviceCore,
    LineFaultInjector,
    LineFaults,
    LineSimulator,
    LoggedLine,
)
from drivers.line.framing import Hello
from drivers.shoe.protocol import (
    FAULT_TEXTS,
    LINE_PROTOCOL,
    RANKS,
    SUITS,
    Card,
    Cut,
    Fault,
    HostMessage,
    Lock,
    NoRead,
    Rescan,
    Unlock,
)

# Re-exported: they lived here before every line device shared them.
__all__ = [
    "DEFAULT_CUT_POSITION",
    "HEARTBEAT_S",
    "RETRANSMIT_S",
    "LineFaultInjector",
    "LoggedLine",
    "ShoeDevice",
    "ShoeFaults",
    "ShoeSimulator",
    "shuffled_shoe",
]

#: Where a dealer usually places the cut card: this many cards before the end of the shoe.
DEFAULT_CUT_POSITION = 16


@dataclass(frozen=True, slots=True)
class ShoeFaults(LineFaults):
    """Misbehaviour rates (0..1) applied to what the shoe emits; `seed` makes a run repeatable."""

    noread_rate: float = 0.0  # a drawn card is announced NOREAD (needs a rescan)


def shuffled_shoe(decks: int, seed: int) -> list[str]:
    cards = [rank + suit for _ in range(decks) for suit in SUITS for rank in RANKS]
    random.Random(seed).shuffle(cards)
    return cards


class ShoeDevice(LineDeviceCore[HostMessage, ShoeFaults]):
    """The pure core of the simulated shoe. All times are passed in."""

    line_protocol = LINE_PROTOCOL

    # the pack in the shoe (`_set_pack`)
    cards: list[str]
    position: int
    cut_index: int | None
    cut_sent: bool

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
        super().__init__(
            hello=Hello(model, firmware, serial), faults=faults or ShoeFaults(), first_seq=first_seq
        )
        self._set_pack(shuffled_shoe(decks, seed) if cards is None else cards, cut_position)
        self.locked = False
        self.fault_state: str | None = None  # "COVER_OPEN" | "FAULT"
        # A seq message blocks the line behind it until it is ACKed (stop-and-wait, in LineDeviceCore), so
        # the host never sees `STATE EMPTY` before the last card or a card before CUT.
        self._force_noread = False
        self._unread: dict[int, str] = {}  # NOREAD seq -> the card, waiting for a rescan

    # -- misbehaviour --------------------------------------------------------------------------------
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
        noread = self._force_noread or self._rng.random() < self._faults.noread_rate
        self._force_noread = False
        if noread:
            seq = self._queue_seq_message(lambda seq: NoRead(seq).encode(), now)
            self._unread[seq] = code
        else:
            self._queue_seq_message(lambda seq: Card(seq, code).encode(), now)
        if self.remaining == 0:
            self._say_state()
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
        self._say_state()

    def clear_fault(self) -> None:
        self.fault_state = None
        self._say_state()

    def load(self, cards: Sequence[str], cut_position: int | None = None) -> None:
        """The dealer puts a new pack in the shoe (single-deck games take a freshly shuffled deck every
        round). Lines already queued and cards waiting for a re-scan belong to the old pack and stay."""
        was_empty = self.remaining == 0
        self._set_pack(cards, cut_position)
        if was_empty:
            self._say_state()

    def _set_pack(self, cards: Sequence[str], cut_position: int | None) -> None:
        # Explicit lists may hold impossible codes on purpose (to test how the host handles misreads).
        for code in cards:
            if not code or " " in code or "*" in code or not code.isascii() or not code.isprintable():
                raise ValueError(f"a card code must be one printable ASCII word: {code!r}")
        self.cards = list(cards)
        self.position = 0
        self.cut_sent = False
        # No cut card when the shoe is too small to hold it that far from the end.
        cut_index = len(self.cards) - cut_position if cut_position is not None else 0
        self.cut_index = cut_index if cut_index > 0 else None

    # -- LineDeviceCore ----------------------------------------------------------------------------------
    def host_message(self, message: HostMessage, now: float) -> None:
        if isinstance(message, Lock | Unlock):
            self.locked = isinstance(message, Lock)
            self._say_state()


class ShoeSimulator(LineSimulator[ShoeDevice]):
    """A `ShoeDevice` served on a pty or TCP port; dealer actions use the port's clock."""

    device_class = ShoeDevice

    # -- dealer ------------------------------------------------------------------------------------------
    def draw(self) -> bool:
        return self._act(self.device.draw)

    def rescan(self, seq: int | None = None) -> bool:
        return self._act(lambda now: self.device.rescan(now, seq))

    def fault(self, code: str, text: str | None = None) -> None:
        self._act(lambda _now: self.device.fault(code, text))

    def clear_fault(self) -> None:
        self._act(lambda _now: self.device.clear_fault())

    def load_new_deck(self, seed: int, decks: int = 1, cut_position: int | None = None) -> None:
        """Load a freshly shuffled pack of `decks` decks (no cut card unless `cut_position` is given)."""
        self._act(lambda _now: self.device.load(shuffled_shoe(decks, seed), cut_position))

    def force_noread(self) -> None:
        self.device.force_noread()

    @property
    def remaining(self) -> int:
        return self.device.remaining

    @property
    def locked(self) -> bool:
        return self.device.locked
