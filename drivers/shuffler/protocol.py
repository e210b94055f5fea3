"""The `shuffler-line` card-shuffler protocol: one frozen dataclass per message, parse and encode. Pure.

Device -> host: `DONE <seq> <shuffle_id> <decks> <cards>` and `ERR <seq> <code> <text...>` (these carry a seq
and are retransmitted until ACKed), `STATE <s>`, plus the common HB and HELLO.
Host -> device: `ACK <seq>`, `SHUFFLE <shuffle_id> <decks>`, `ABORT`, `RESET`, `STATUS?`.

`parse_device_message` / `parse_host_message` take a line BODY (checksum already verified by
`drivers.line.framing.parse_frame`) and return a message or a `ParseFailure`; they never raise.

What the parser guarantees: a `Done` has a shuffle id that is one token, 1 to `MAX_DECKS` decks and a card
count of at most four digits; whether the count is right (decks x 52) is the session's decision, not the
parser's. An `Err` is any code with a non-empty text; for `E02 COUNT_MISMATCH <expected> <actual>` the two
counts are parsed into `expected`/`actual` (left None, and `count_fields_valid` False, when they are not
numbers: the error is still an error and is still reported).
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.line.fields import (
    check_count,
    check_token,
    is_token,
    parse_number,
    parse_seq,
    parse_seq_code_text,
)
from drivers.line.framing import Ack, Heartbeat, Hello, LineMessage, ParseFailure, State, StatusQuery
from drivers.line.protocol import MALFORMED_FIELDS, LineProtocol, id_and_count

__all__ = [
    "CARDS_PER_DECK",
    "COUNT_MISMATCH_CODE",
    "ERROR_TEXTS",
    "LINE_PROTOCOL",
    "MAX_DECKS",
    "SHUFFLER_STATES",
    "Abort",
    "Ack",
    "DeviceMessage",
    "Done",
    "Err",
    "Heartbeat",
    "Hello",
    "HostMessage",
    "ParseFailure",
    "Reset",
    "Shuffle",
    "State",
    "StatusQuery",
    "parse_device_message",
    "parse_host_message",
]

CARDS_PER_DECK = 52
#: Two digits on the wire; real batch shufflers take up to eight or ten decks.
MAX_DECKS = 99
SHUFFLER_STATES = frozenset({"IDLE", "LOADING", "SHUFFLING", "READY", "DOOR_OPEN", "ERROR"})
COUNT_MISMATCH_CODE = "E02"
#: Error codes the reference shuffler documents; other codes are still reported (an error is never dropped).
ERROR_TEXTS = {
    "E01": "JAM",
    "E02": "COUNT_MISMATCH",
    "E03": "DOOR_OPEN",
    "E04": "INPUT_EMPTY",
    "E05": "MOTOR",
}


# --- device -> host -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Done(LineMessage):
    """`DONE <seq> <shuffle_id> <decks> <cards>`: the shuffle finished; the machine counted `cards` cards."""

    wire = "DONE {seq} {shuffle_id} {decks} {cards}"

    seq: int
    shuffle_id: str
    decks: int
    cards: int

    @property
    def expected_cards(self) -> int:
        return self.decks * CARDS_PER_DECK


@dataclass(frozen=True, slots=True)
class Err(LineMessage):
    """`ERR <seq> <code> <text...>`, e.g. `ERR 0007 E01 JAM` or `ERR 0008 E02 COUNT_MISMATCH 416 415`."""

    wire = "ERR {seq} {code} {text}"

    seq: int
    code: str
    text: str
    expected: int | None = None  # E02 only
    actual: int | None = None  # E02 only

    @property
    def count_fields_valid(self) -> bool:
        """False for an E02 whose counts could not be read (the error is reported all the same)."""
        return self.code != COUNT_MISMATCH_CODE or (self.expected is not None and self.actual is not None)

    @classmethod
    def count_mismatch(cls, seq: int, expected: int, actual: int) -> Err:
        return cls(seq, COUNT_MISMATCH_CODE, f"COUNT_MISMATCH {expected} {actual}", expected, actual)


DeviceMessage = State | Done | Err | Heartbeat | Hello


# --- host -> device -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shuffle(LineMessage):
    """`SHUFFLE <shuffle_id> <decks>`: shuffle the cards in the input tray as `decks` decks."""

    wire = "SHUFFLE {shuffle_id} {decks}"
    shuffle_id: str
    decks: int

    def encode(self) -> bytes:
        check_token(self.shuffle_id, "a shuffle id")
        check_count(self.decks, "decks", MAX_DECKS)
        return LineMessage.encode(self)


@dataclass(frozen=True, slots=True)
class Abort(LineMessage):
    """`ABORT`: stop the running shuffle (the cards go back to the input tray)."""

    wire = "ABORT"


@dataclass(frozen=True, slots=True)
class Reset(LineMessage):
    """`RESET`: clear an error after the dealer fixed its cause."""

    wire = "RESET"


HostMessage = Ack | Shuffle | Abort | Reset | StatusQuery


# --- parsing --------------------------------------------------------------------------------------------


def _parse_done(args: list[str]) -> Done | ParseFailure:
    if len(args) != 4:
        return MALFORMED_FIELDS
    seq = parse_seq(args[0])
    decks = parse_number(args[2], 2)
    cards = parse_number(args[3], 4)
    if seq is None or not is_token(args[1]) or decks is None or decks == 0 or cards is None:
        return MALFORMED_FIELDS
    return Done(seq, args[1], decks, cards)


def _parse_err(args: list[str]) -> Err | ParseFailure:
    fields = parse_seq_code_text(args)
    if fields is None:
        return MALFORMED_FIELDS
    seq, code, text = fields
    if code == COUNT_MISMATCH_CODE and len(args) == 5 and args[2] == "COUNT_MISMATCH":
        expected = parse_number(args[3], 4)
        actual = parse_number(args[4], 4)
        if expected is not None and actual is not None:
            return Err(seq, code, text, expected, actual)
    return Err(seq, code, text)


#: The shuffler's messages beyond the common ones (HELLO, HB, STATE, ACK, STATUS?).
LINE_PROTOCOL: LineProtocol[DeviceMessage, HostMessage] = LineProtocol(
    states=SHUFFLER_STATES,
    device_messages={"DONE": _parse_done, "ERR": _parse_err},
    host_bodies={"ABORT": Abort(), "RESET": Reset()},
    host_messages={"SHUFFLE": id_and_count(Shuffle, 2)},
    acked=(Done, Err),
)

parse_device_message = LINE_PROTOCOL.parse_device_message
parse_host_message = LINE_PROTOCOL.parse_host_message
