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

from typing import Any

from drivers.line.framing import ParseFailure, is_token
from drivers.line.session import LineDeviceSession
from drivers.readings import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceStatus,
    Reading,
    ShuffleDone,
    ShuffleFailed,
)
from drivers.session import DeviceCommand, UnknownDeviceCommand
from drivers.shuffler.protocol import (
    COUNT_MISMATCH_CODE,
    MAX_DECKS,
    Abort,
    DeviceMessage,
    Done,
    Err,
    Reset,
    Shuffle,
    State,
    StatusQuery,
    parse_device_message,
)

#: The code of a count mismatch the host found in a DONE (the shuffler reports its own as E02).
COUNT_MISMATCH = "COUNT_MISMATCH"

# Shuffler states that are faults in themselves, with the reason an operator reads.
_FAULT_STATES = {
    "ERROR": "shuffler reports an error",
    "DOOR_OPEN": "shuffler door is open",
}
# States in which the output tray no longer holds the last shuffle's cards.
_OUTPUT_TRAY_CLEARED_STATES = frozenset({"IDLE", "LOADING", "SHUFFLING"})
_DOOR_ERROR_CODE = "E03"

_SIMPLE_COMMANDS: dict[str, Abort | Reset | StatusQuery] = {
    "abort": Abort(),
    "reset": Reset(),
    "status": StatusQuery(),
}
_KNOWN_COMMANDS = ", ".join(sorted([*_SIMPLE_COMMANDS, "shuffle"]))


def shuffle_command(args: dict[str, Any], now: float) -> Shuffle:
    """The SHUFFLE for a `shuffle` command's arguments; UnknownDeviceCommand if they are not usable."""
    shuffle_id = args.get("shuffle_id")
    if shuffle_id is None:
        shuffle_id = round(now * 1000)
    if isinstance(shuffle_id, int) and not isinstance(shuffle_id, bool) and shuffle_id >= 0:
        shuffle_id = str(shuffle_id)
    if not isinstance(shuffle_id, str) or not is_token(shuffle_id):
        raise UnknownDeviceCommand(
            f"shuffle needs a 'shuffle_id' of one word (printable ASCII, no '*'), not {shuffle_id!r}"
        )
    decks = args.get("decks")
    if not isinstance(decks, int) or isinstance(decks, bool) or not 1 <= decks <= MAX_DECKS:
        raise UnknownDeviceCommand(f"shuffle needs 'decks' between 1 and {MAX_DECKS}, not {decks!r}")
    return Shuffle(shuffle_id, decks)


class ShufflerSession(LineDeviceSession[DeviceMessage]):
    protocol = "shuffler-line"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.state: str | None = None
        #: "ERROR" or "DOOR_OPEN" while the shuffler reports a fault (None when it works).
        self.active_fault: str | None = None
        #: A shuffle's count was wrong and its deck may still be in the output tray.
        self.deck_unusable = False
        #: The id of the SHUFFLE sent and not yet seen finish (DONE or ERR) or aborted.
        self.requested_shuffle: str | None = None

    @property
    def faulted(self) -> bool:
        return self.active_fault is not None or self.deck_unusable

    # -- DeviceSession -----------------------------------------------------------------------------
    def connection_made(self, now: float) -> list[Reading]:
        readings = super().connection_made(now)
        # Ask at once: the shuffler may have finished, jammed or been opened while we were away.
        self._send(StatusQuery().encode())
        return readings

    def command(self, command: DeviceCommand, now: float) -> list[Reading]:
        if command.name == "shuffle":
            message = shuffle_command(command.args, now)
            self.requested_shuffle = message.shuffle_id
            self._send(message.encode())
            return []
        simple = _SIMPLE_COMMANDS.get(command.name)
        if simple is None:
            raise UnknownDeviceCommand(
                f"shuffler-line device {self.name!r} has no command {command.name!r}"
                f" (known: {_KNOWN_COMMANDS})"
            )
        if isinstance(simple, Abort):
            self.requested_shuffle = None
        self._send(simple.encode())
        return []

    # -- LineDeviceSession -------------------------------------------------------------------------
    def parse_message(self, body: str) -> DeviceMessage | ParseFailure:
        return parse_device_message(body)

    def message_seq(self, message: DeviceMessage) -> int | None:
        if isinstance(message, Done | Err):
            return message.seq
        return None

    def handle_message(self, message: DeviceMessage, raw: str, now: float) -> list[Reading]:
        if isinstance(message, State):
            return self._state_changed(message.state, raw, now)
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
        return [
            ShuffleFailed(
                device=device,
                time=now,
                raw=raw,
                code=COUNT_MISMATCH,
                reason=reason,
                expected=done.expected_cards,
                actual=done.cards,
                shuffle_id=done.shuffle_id,
            ),
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
        self.active_fault = "DOOR_OPEN" if error.code == _DOOR_ERROR_CODE else "ERROR"
        device = self.name
        return [
            ShuffleFailed(
                device=device,
                time=now,
                raw=raw,
                code=error.code,
                reason=error.text,
                expected=error.expected,
                actual=error.actual,
                shuffle_id=shuffle_id,
            ),
            DeviceFault(device=device, time=now, raw=raw, code=error.code, reason=error.text),
        ]

    def _state_changed(self, state: str, raw: str, now: float) -> list[Reading]:
        was_faulted = self.faulted
        self.state = state
        readings: list[Reading] = [DeviceStatus(device=self.name, time=now, raw=raw, state=state)]
        if state in _FAULT_STATES:
            if self.active_fault is None or (state == "DOOR_OPEN" and self.active_fault != "DOOR_OPEN"):
                self.active_fault = state
                readings.append(
                    DeviceFault(device=self.name, time=now, raw=raw, code=state, reason=_FAULT_STATES[state])
                )
            return readings
        self.active_fault = None
        if state in _OUTPUT_TRAY_CLEARED_STATES:
            self.deck_unusable = False
        if was_faulted and not self.faulted:
            readings.append(DeviceFaultCleared(device=self.name, time=now, raw=raw, detail=state))
        return readings
