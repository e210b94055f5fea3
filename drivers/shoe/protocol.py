"""The `shoe-line` card-shoe protocol: one frozen dataclass per message, parse and encode. Pure.

Device -> host: CARD, NOREAD, RESCAN, CUT (these carry a seq and are retransmitted until ACKed), STATE,
FAULT, plus the common HB and HELLO. Host -> device: ACK, LOCK, UNLOCK, STATUS?.
`parse_device_message` / `parse_host_message` take a line BODY (checksum already verified by
`drivers.line.framing.parse_frame`) and return a message or a `ParseFailure`; they never raise.
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.line.framing import (
    MALFORMED_FIELDS,
    UNKNOWN_MESSAGE,
    Ack,
    Heartbeat,
    Hello,
    ParseFailure,
    encode_line,
    parse_ack,
    parse_common,
    parse_seq,
    seq_text,
    split_fields,
)

__all__ = [
    "FAULT_TEXTS",
    "RANKS",
    "SHOE_STATES",
    "SUITS",
    "Ack",
    "Card",
    "Cut",
    "DeviceMessage",
    "Fault",
    "Heartbeat",
    "Hello",
    "HostMessage",
    "InvalidCardRead",
    "Lock",
    "NoRead",
    "ParseFailure",
    "Rescan",
    "State",
    "StatusQuery",
    "Unlock",
    "is_card_code",
    "parse_device_message",
    "parse_host_message",
]

RANKS = "A23456789TJQK"
SUITS = "SHDC"
SHOE_STATES = frozenset({"READY", "EMPTY", "COVER_OPEN", "LOCKED", "FAULT"})
#: Fault codes the reference shoe documents; other codes are still reported (a fault is never dropped).
FAULT_TEXTS = {"F01": "READER_DIRTY", "F02": "SENSOR", "F03": "JAM"}


def is_card_code(code: str) -> bool:
    return len(code) == 2 and code[0] in RANKS and code[1] in SUITS


# --- device -> host -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Card:
    """`CARD <seq> <code>`: a card left the shoe and was read (code is always a valid card code)."""

    seq: int
    code: str

    def encode(self) -> bytes:
        return encode_line(f"CARD {seq_text(self.seq)} {self.code}")


@dataclass(frozen=True, slots=True)
class NoRead:
    """`NOREAD <seq>`: a card left the shoe unread; the dealer passes it over the reader again."""

    seq: int

    def encode(self) -> bytes:
        return encode_line(f"NOREAD {seq_text(self.seq)}")


@dataclass(frozen=True, slots=True)
class Rescan:
    """`RESCAN <seq> <code>`: the re-read of the card `NOREAD <seq>` announced (same seq)."""

    seq: int
    code: str

    def encode(self) -> bytes:
        return encode_line(f"RESCAN {seq_text(self.seq)} {self.code}")


@dataclass(frozen=True, slots=True)
class InvalidCardRead:
    """A CARD/RESCAN, checksum correct, whose code is not a card: the reader misread the index.

    It still carries a seq, so the host acknowledges it (or the shoe would retransmit forever) and treats
    the card as unread, never as some other card.
    """

    seq: int
    kind: str  # "CARD" | "RESCAN"
    code: str


@dataclass(frozen=True, slots=True)
class Cut:
    """`CUT <seq>`: the cut card passed the reader."""

    seq: int

    def encode(self) -> bytes:
        return encode_line(f"CUT {seq_text(self.seq)}")


@dataclass(frozen=True, slots=True)
class State:
    """`STATE <s>` with s in READY, EMPTY, COVER_OPEN, LOCKED, FAULT."""

    state: str

    def encode(self) -> bytes:
        return encode_line(f"STATE {self.state}")


@dataclass(frozen=True, slots=True)
class Fault:
    """`FAULT <code> <text>`, e.g. `FAULT F03 JAM`."""

    code: str
    text: str

    def encode(self) -> bytes:
        return encode_line(f"FAULT {self.code} {self.text}")


DeviceMessage = Card | NoRead | Rescan | InvalidCardRead | Cut | State | Fault | Heartbeat | Hello


# --- host -> device -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lock:
    """`LOCK`: close the gate, no card can be drawn."""

    def encode(self) -> bytes:
        return encode_line("LOCK")


@dataclass(frozen=True, slots=True)
class Unlock:
    def encode(self) -> bytes:
        return encode_line("UNLOCK")


@dataclass(frozen=True, slots=True)
class StatusQuery:
    """`STATUS?`: the shoe answers with `STATE`."""

    def encode(self) -> bytes:
        return encode_line("STATUS?")


HostMessage = Ack | Lock | Unlock | StatusQuery


# --- parsing --------------------------------------------------------------------------------------------


def _parse_card_like(kind: str, args: list[str]) -> Card | Rescan | InvalidCardRead | ParseFailure:
    if len(args) != 2:
        return MALFORMED_FIELDS
    seq = parse_seq(args[0])
    if seq is None:
        return MALFORMED_FIELDS
    code = args[1]
    if not is_card_code(code):
        return InvalidCardRead(seq, kind, code)
    return Card(seq, code) if kind == "CARD" else Rescan(seq, code)


def _parse_seq_only(args: list[str]) -> int | None:
    return parse_seq(args[0]) if len(args) == 1 else None


def parse_device_message(body: str) -> DeviceMessage | ParseFailure:
    """A shoe message from its line body."""
    common = parse_common(body)
    if common is not None:
        return common
    fields = split_fields(body)
    if fields is None:
        return MALFORMED_FIELDS
    name, args = fields[0], fields[1:]
    if name in ("CARD", "RESCAN"):
        return _parse_card_like(name, args)
    if name in ("NOREAD", "CUT"):
        seq = _parse_seq_only(args)
        if seq is None:
            return MALFORMED_FIELDS
        return NoRead(seq) if name == "NOREAD" else Cut(seq)
    if name == "STATE":
        if len(args) != 1 or args[0] not in SHOE_STATES:
            return MALFORMED_FIELDS
        return State(args[0])
    if name == "FAULT":
        if len(args) < 2:
            return MALFORMED_FIELDS
        return Fault(args[0], " ".join(args[1:]))
    return UNKNOWN_MESSAGE


def parse_host_message(body: str) -> HostMessage | ParseFailure:
    """A host command from its line body (what the simulated shoe understands)."""
    ack = parse_ack(body)
    if ack is not None:
        return ack
    if body == "LOCK":
        return Lock()
    if body == "UNLOCK":
        return Unlock()
    if body == "STATUS?":
        return StatusQuery()
    return UNKNOWN_MESSAGE
