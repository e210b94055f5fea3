"""The `shoe-line` card-shoe protocol: one frozen dataclass per message, parse and encode. Pure.

Device -> host: CARD, NOREAD, RESCAN, CUT (these carry a seq and are retransmitted until ACKed), STATE,
FAULT, plus the common HB and HELLO. Host -> device: ACK, LOCK, UNLOCK, STATUS?.
`parse_device_message` / `parse_host_message` take a line BODY (checksum already verified by
`drivers.line.framing.parse_frame`) and return a message or a `ParseFailure`; they never raise.
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.line.fields import parse_seq
from drivers.line.framing import Ack, Heartbeat, Hello, LineMessage, ParseFailure, State, StatusQuery
from drivers.line.protocol import MALFORMED_FIELDS, LineProtocol, seq_only

__all__ = [
    "FAULT_TEXTS",
    "LINE_PROTOCOL",
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
class Card(LineMessage):
    """`CARD <seq> <code>`: a card left the shoe and was read (code is always a valid card code)."""

    wire = "CARD {seq} {code}"
    seq: int
    code: str


@dataclass(frozen=True, slots=True)
class NoRead(LineMessage):
    """`NOREAD <seq>`: a card left the shoe unread; the dealer passes it over the reader again."""

    wire = "NOREAD {seq}"
    seq: int


@dataclass(frozen=True, slots=True)
class Rescan(LineMessage):
    """`RESCAN <seq> <code>`: the re-read of the card `NOREAD <seq>` announced (same seq)."""

    wire = "RESCAN {seq} {code}"
    seq: int
    code: str


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
class Cut(LineMessage):
    """`CUT <seq>`: the cut card passed the reader."""

    wire = "CUT {seq}"
    seq: int


@dataclass(frozen=True, slots=True)
class Fault(LineMessage):
    """`FAULT <code> <text>`, e.g. `FAULT F03 JAM`."""

    wire = "FAULT {code} {text}"
    code: str
    text: str


DeviceMessage = Card | NoRead | Rescan | InvalidCardRead | Cut | State | Fault | Heartbeat | Hello


# --- host -> device -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lock(LineMessage):
    """`LOCK`: close the gate, no card can be drawn."""

    wire = "LOCK"


@dataclass(frozen=True, slots=True)
class Unlock(LineMessage):
    wire = "UNLOCK"


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


def _parse_fault(args: list[str]) -> Fault | ParseFailure:
    if len(args) < 2:
        return MALFORMED_FIELDS
    return Fault(args[0], " ".join(args[1:]))


#: The shoe's messages beyond the common ones (HELLO, HB, STATE, ACK, STATUS?).
LINE_PROTOCOL: LineProtocol[DeviceMessage, HostMessage] = LineProtocol(
    states=SHOE_STATES,
    device_messages={
        "CARD": lambda args: _parse_card_like("CARD", args),
        "RESCAN": lambda args: _parse_card_like("RESCAN", args),
        "NOREAD": seq_only(NoRead),
        "CUT": seq_only(Cut),
        "FAULT": _parse_fault,
    },
    host_bodies={"LOCK": Lock(), "UNLOCK": Unlock()},
    acked=(Card, NoRead, Rescan, InvalidCardRead, Cut),
)


parse_device_message = LINE_PROTOCOL.parse_device_message
parse_host_message = LINE_PROTOCOL.parse_host_message
