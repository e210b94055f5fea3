"""`ShufflerSession`: host side of a `shuffler-line` card shuffler. Pure: bytes and time in, readings out.

Readings (besides the link's DeviceOnline/DeviceOffline from `LineDeviceSession`):

- `STATE <s>` -> `DeviceStatus(state)`; `ERROR` and `DOOR_OPEN` are faults -> also `DeviceFault` (once, not
  once per STATE line), and `DeviceFaultCleared` when the shuffler is operational again.
- `DONE` whose count is `decks` x 52 -> `ShuffleDone(shuffle_id, decks, cards)`.
- `DONE` whose count is anything else -> `ShuffleFailed(code="COUNT_MISMATCH", expected, actual)` and
  `DeviceFault(code="COUNT_MISMATCH")`, never a ShuffleDone: cards are missing or added, so that deck must
  not be dealt. The shuffler itself sees nothing wrong (it says `STATE READY`), so the fault is cleared only
  once the deck has left the output tray (`STATE IDLE`, `LOADING` or `SHUFFLING`), not by that READY.
- `ERR <seq> <code> <text...>` -> `ShuffleFailed(code, text)` + `DeviceFault(code, text)`; for
  `E02 COUNT_MISMATCH <expected> <actual>` the counts are in the ShuffleFailed. An E02 whose counts cannot be
  read is still reported as a failure (with no counts) and counted as `malformed count mismatch`.
  ERR carries no shuffle id: `ShuffleFailed.shuffle_id` is the id of the SHUFFLE this session sent and has
  not seen finish, or "" when it knows of none (e.g. after a host restart).

Every copy of DONE/ERR is ACKed and copies after the first are dropped (`LineDeviceSession`).

Commands (`DeviceCommand`): `shuffle {"shuffle_id": str|int, "decks": int}` -> `SHUFFLE <id> <decks>`,
`abort` -> `ABORT`, `reset` -> `RESET`, `status` -> `STATUS?`. Bad arguments raise `UnknownDeviceCommand`.
Without a `shuffle_id` the id is the command's time in epoch milliseconds: unique in practice, and the same
again when a capture is replayed (time is passed in), so a DONE still names the shuffle it belongs to.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from drivers.line.session import CommandBuilder, HostCommand, LineDeviceSession, fixed, wire_id
from drivers.readings import DeviceFault, Reading, ShuffleDone, ShuffleFailed
from drivers.session import UnknownDeviceCommand
from drivers.shuffler.protocol import (
    COUNT_MISMATCH_CODE,
    LINE_PROTOCOL,
    MAX_DECKS,
    SHUFFLER_STATES,
    Abort,
    DeviceMessage,
    Done,
    Err,
    Reset,
    Shuffle,
    StatusQuery,
)

#: The code of a count mismatch the host found in a DONE (the shuffler reports its own as E02).
COUNT_MISMATCH = "COUNT_MISMATCH"

_FAULT_STATES = {
    "ERROR": "shuffler reports an error",
    "DOOR_OPEN": "shuffler door is open",
}
# States in which the output tray no longer holds the last shuffle's cards.
_OUTPUT_TRAY_CLEARED_STATES = frozenset({"IDLE", "LOADING", "SHUFFLING"})
_DOOR_ERROR_CODE = "E03"
#: (expected, actual) card counts of a failed shuffle, when its count was wrong
_Counts = tuple[int | None, int | None]


def shuffle_command(args: Mapping[str, Any], now: float) -> Shuffle:
    """The SHUFFLE for a `shuffle` command's arguments; UnknownDeviceCommand if they are not usable."""
    shuffle_id = wire_id(args, "shuffle_id", now, command="shuffle")
    decks = args.get("decks")
    if not isinstance(decks, int) or isinstance(decks, bool) or not 1 <= decks <= MAX_DECKS:
        raise UnknownDeviceCommand(f"shuffle needs 'decks' between 1 and {MAX_DECKS}, not {decks!r}")
    return Shuffle(shuffle_id, decks)


class ShufflerSession(LineDeviceSession[DeviceMessage]):
    protocol = "shuffler-line"
    line_protocol = LINE_PROTOCOL
    commands: ClassVar[Mapping[str, CommandBuilder]] = {
        "shuffle": shuffle_command,
        "abort": fixed(Abort()),
        "reset": fixed(Reset()),
        "status": fixed(StatusQuery()),
    }
    fault_states = _FAULT_STATES
    # A door opened on top of an error is reported all the same.
    overriding_fault_states = frozenset({"DOOR_OPEN"})
    operational_states = SHUFFLER_STATES - _FAULT_STATES.keys()

    def __init__(self, name: str) -> None:
        super().__init__(name)
        #: A shuffle's count was wrong and its deck may still be in the output tray.
        self.deck_unusable = False
        #: The id of the SHUFFLE sent and not yet seen finish (DONE or ERR) or aborted.
        self.requested_shuffle: str | None = None

    @property
    def faulted(self) -> bool:
        return self.active_fault is not None or self.deck_unusable

    # -- LineDeviceSession -------------------------------------------------------------------------
    def command_sent(self, message: HostCommand, now: float) -> None:
        if isinstance(message, Shuffle):
            self.requested_shuffle = message.shuffle_id
        elif isinstance(message, Abort):
            self.requested_shuffle = None

    def state_operational(self, state: str) -> None:
        # The shuffler itself sees nothing wrong with a miscounted deck: only its removal clears that fault.
        if state in _OUTPUT_TRAY_CLEARED_STATES:
            self.deck_unusable = False

    def handle_message(self, message: DeviceMessage, raw: str, now: float) -> list[Reading]:
        if isinstance(message, Done):
            return self._done(message, raw, now)
        if isinstance(message, Err):
            return self._error(message, raw, now)
        return []

    # -- internals ---------------------------------------------------------------------------------
    def _done(self, done: Done, raw: str, now: float) -> list[Reading]:
        if self.requested_shuffle == done.shuffle_id:
            self.requested_shuffle = None
        device = self.name
        if done.cards == done.expected_cards:
            return [
                ShuffleDone(
                    device=device,
                    time=now,
                    raw=raw,
                    shuffle_id=done.shuffle_id,
                    decks=done.decks,
                    cards=done.cards,
                )
            ]
        # Cards missing or added: whatever the shuffler thinks, this deck must never be dealt.
        self.deck_unusable = True
        reason = (
            f"shuffle {done.shuffle_id} counted {done.cards} cards, expected {done.expected_cards} "
            f"({done.decks} x 52): the deck must not be used"
        )
        counts = (done.expected_cards, done.cards)
        return [
            self._failed(done.shuffle_id, COUNT_MISMATCH, reason, counts, raw, now),
            DeviceFault(device=device, time=now, raw=raw, code=COUNT_MISMATCH, reason=reason),
        ]

    def _error(self, error: Err, raw: str, now: float) -> list[Reading]:
        shuffle_id = self.requested_shuffle or ""
        self.requested_shuffle = None
        if not error.count_fields_valid:
            self.stats.reject("malformed count mismatch")
        if error.code == COUNT_MISMATCH_CODE:
            self.deck_unusable = True
        # The STATE line that follows an ERR must not report the same fault a second time.
        latch = "DOOR_OPEN" if error.code == _DOOR_ERROR_CODE else "ERROR"
        counts = (error.expected, error.actual)
        return [
            self._failed(shuffle_id, error.code, error.text, counts, raw, now),
            self._fault_reported(error.code, error.text, raw, now, latch=latch),
        ]

    def _failed(
        self,
        shuffle_id: str,
        code: str,
        reason: str,
        counts: tuple[int | None, int | None],
        raw: str,
        now: float,
    ) -> ShuffleFailed:
        """A shuffle that must not be dealt; `counts` is (expected, actual) when the count was wrong."""
        expected, actual = counts
        return ShuffleFailed(
            device=self.name,
            time=now,
            raw=raw,
            code=code,
            reason=reason,
            expected=expected,
            actual=actual,
            shuffle_id=shuffle_id,
        )
