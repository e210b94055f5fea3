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

from drivers.line.framing import (
    MALFORMED_FIELDS,
    MAX_TOKEN_LENGTH,
    UNKNOWN_MESSAGE,
    Ack,
    Heartbeat,
    Hello,
    ParseFailure,
    encode_line,
    is_token,
    parse_ack,
    parse_common,
    parse_number,
    parse_seq,
    seq_text,
    split_fields,
)

__all__ = [
    "CARDS_PER_DECK",
    "COUNT_MISMATCH_CODE",
    "ERROR_TEXTS",
    "MAX_DECKS",
    "MAX_TOKEN_LENGTH",
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
    "is_token",
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
class State:
    """`STATE <s>` with s in IDLE, LOADING, SHUFFLING, READY, DOOR_OPEN, ERROR."""

    state: str

    def encode(self) -> bytes:
        return encode_line(f"STATE {self.state}")


@dataclass(frozen=True, slots=True)
class Done:
    """`DONE <seq> <shuffle_id> <decks> <cards>`: the shuffle finished; the machine counted `cards` cards."""

    seq: int
    shuffle_id: str
    decks: int
    cards: int

    @property
    def expected_cards(self) -> int:
        return self.decks * CARDS_PER_DECK

    def encode(self) -> bytes:
        return encode_line(f"DONE {seq_text(self.seq)} {self.shuffle_id} {self.decks} {self.cards}")


@dataclass(frozen=True, slots=True)
class Err:
    """`ERR <seq> <code> <text...>`, e.g. `ERR 0007 E01 JAM` or `ERR 0008 E02 COUNT_MISMATCH 416 415`."""

    seq: int
    code: str
    text: str
    expected: int | None = None  # E02 only
    actual: int | None = None  # E02 only

    @property
    def count_fields_valid(self) -> bool:
        """False for an E02 whose counts could not be read (the error is reported all the same)."""
        return self.code != COUNT_MISMATCH_CODE or (self.expected is not None and self.actual is not None)

    def encode(self) -> bytes:
        return encode_line(f"ERR {seq_text(self.seq)} {self.code} {self.text}")

    @classmethod
    def count_mismatch(cls, seq: int, expected: int, actual: int) -> Err:
        return cls(seq, COUNT_MISMATCH_CODE, f"COUNT_MISMATCH {expected} {actual}", expected, actual)


DeviceMessage = State | Done | Err | Heartbeat | Hello


# --- host -> device -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shuffle:
    """`SHUFFLE <shuffle_id> <decks>`: shuffle the cards in the input tray as `decks` decks."""

    shuffle_id: str
    decks: int

    def encode(self) -> bytes:
        if not is_token(self.shuffle_id):
            raise ValueError(f"a shuffle id is one token of at most {MAX_TOKEN_LENGTH} characters")
        if not 1 <= self.decks <= MAX_DECKS:
            raise ValueError(f"decks must be 1..{MAX_DECKS}, not {self.decks}")
        return encode_line(f"SHUFFLE {self.shuffle_id} {self.decks}")


@dataclass(frozen=True, slots=True)
class Abort:
    """`ABORT`: stop the running shuffle (the cards go back to the input tray)."""

    def encode(self) -> bytes:
        return encode_line("ABORT")


@dataclass(frozen=True, slots=True)
class Reset:
    """`RESET`: clear an error after the dealer fixed its cause."""

    def encode(self) -> bytes:
        return encode_line("RESET")


@dataclass(frozen=True, slots=True)
class StatusQuery:
    """`STATUS?`: the shuffler answers with `STATE`."""

    def encode(self) -> bytes:
        return encode_line("STATUS?")


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
    if len(args) < 3:
        return MALFORMED_FIELDS
    seq = parse_seq(args[0])
    if seq is None:
        return MALFORMED_FIELDS
    code, text = args[1], " ".join(args[2:])
    if code == COUNT_MISMATCH_CODE and len(args) == 5 and args[2] == "COUNT_MISMATCH":
        expected = parse_number(args[3], 4)
        actual = parse_number(args[4], 4)
        if expected is not None and actual is not None:
            return Err(seq, code, text, expected, actual)
    return Err(seq, code, text)


def parse_device_message(body: str) -> DeviceMessage | ParseFailure:
    """A shuffler message from its line body."""
    common = parse_common(body)
    if common is not None:
        return common
    fields = split_fields(body)
    if fields is None:
        return MALFORMED_FIELDS
    name, args = fields[0], fields[1:]
    if name == "STATE":
        if len(args) != 1 or args[0] not in SHUFFLER_STATES:
            return MALFORMED_FIELDS
        return State(args[0])
    if name == "DONE":
        return _parse_done(args)
    if name == "ERR":
        return _parse_err(args)
    return UNKNOWN_MESSAGE


def parse_host_message(body: str) -> HostMessage | ParseFailure:
    """A host command from its line body (what the simulated shuffler understands)."""
    ack = parse_ack(body)
    if ack is not None:
        return ack
    if body == "ABORT":
        return Abort()
    if body == "RESET":
        return Reset()
    if body == "STATUS?":
        return StatusQuery()
    fields = split_fields(body)
    if fields is None:
        return MALFORMED_FIELDS
    if fields[0] == "SHUFFLE":
        decks = parse_number(fields[2], 2) if len(fields) == 3 else None
        if decks is None or decks == 0 or not is_token(fields[1]):
            return MALFORMED_FIELDS
        return Shuffle(fields[1], decks)
    return UNKNOWN_MESSAGE
