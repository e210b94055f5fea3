"""The `shaker-line` dice-shaker protocol: one frozen dataclass per message, parse and encode. Pure.

Device -> host: `AT_REST <seq> <cycle_id>` and `FAULT <seq> <code> <text...>` (these carry a seq and are
retransmitted until ACKed), `STATE <s>`, plus the common HB and HELLO.
Host -> device: `ACK <seq>`, `SHAKE <cycle_id> <pushes>`, `LIGHT ON|OFF`, `STATUS?`.

`parse_device_message` / `parse_host_message` take a line BODY (checksum already verified by
`drivers.line.framing.parse_frame`) and return a message or a `ParseFailure`; they never raise.
A cycle id is one token (`drivers.line.framing.is_token`); pushes are 1 to `MAX_PUSHES` (one digit). A FAULT
with a code outside M01..M04 is still a fault (it is reported, never dropped).
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
    is_token,
    parse_ack,
    parse_common,
    parse_number,
    parse_seq,
    seq_text,
    split_fields,
)

__all__ = [
    "DEFAULT_PUSHES",
    "FAULT_TEXTS",
    "MAX_PUSHES",
    "SHAKER_STATES",
    "Ack",
    "AtRest",
    "DeviceMessage",
    "Fault",
    "Heartbeat",
    "Hello",
    "HostMessage",
    "Light",
    "ParseFailure",
    "Shake",
    "State",
    "StatusQuery",
    "parse_device_message",
    "parse_host_message",
]

SHAKER_STATES = frozenset({"IDLE", "SHAKING", "SETTLING", "AT_REST", "DOME_OPEN", "FAULT"})
#: Fault codes the reference shaker documents; other codes are still reported (a fault is never dropped).
FAULT_TEXTS = {
    "M01": "MOTOR",
    "M02": "DOME_NOT_CLOSED",
    "M03": "VIBRATION_SENSOR",
    "M04": "LIGHT",
}
#: Like a dealer's shaker: the lever is pushed three times.
DEFAULT_PUSHES = 3
#: One digit on the wire.
MAX_PUSHES = 9


# --- device -> host -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class State:
    """`STATE <s>` with s in IDLE, SHAKING, SETTLING, AT_REST, DOME_OPEN, FAULT."""

    state: str

    def encode(self) -> bytes:
        return encode_line(f"STATE {self.state}")


@dataclass(frozen=True, slots=True)
class AtRest:
    """`AT_REST <seq> <cycle_id>`: the cycle ended and the dice are still; the camera may read them now."""

    seq: int
    cycle_id: str

    def encode(self) -> bytes:
        return encode_line(f"AT_REST {seq_text(self.seq)} {self.cycle_id}")


@dataclass(frozen=True, slots=True)
class Fault:
    """`FAULT <seq> <code> <text...>`, e.g. `FAULT 0012 M02 DOME_NOT_CLOSED`."""

    seq: int
    code: str
    text: str

    def encode(self) -> bytes:
        return encode_line(f"FAULT {seq_text(self.seq)} {self.code} {self.text}")


DeviceMessage = State | AtRest | Fault | Heartbeat | Hello


# --- host -> device -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shake:
    """`SHAKE <cycle_id> <pushes>`: run one shake cycle (the lever pushed `pushes` times), then settle."""

    cycle_id: str
    pushes: int = DEFAULT_PUSHES

    def encode(self) -> bytes:
        if not is_token(self.cycle_id):
            raise ValueError(f"a cycle id is one token (printable ASCII, no space or '*'): {self.cycle_id!r}")
        if not 1 <= self.pushes <= MAX_PUSHES:
            raise ValueError(f"pushes must be 1..{MAX_PUSHES}, not {self.pushes}")
        return encode_line(f"SHAKE {self.cycle_id} {self.pushes}")


@dataclass(frozen=True, slots=True)
class Light:
    """`LIGHT ON` / `LIGHT OFF`: the light under the dome the camera reads the dice by."""

    on: bool

    def encode(self) -> bytes:
        return encode_line("LIGHT ON" if self.on else "LIGHT OFF")


@dataclass(frozen=True, slots=True)
class StatusQuery:
    """`STATUS?`: the shaker answers with `STATE`."""

    def encode(self) -> bytes:
        return encode_line("STATUS?")


HostMessage = Ack | Shake | Light | StatusQuery


# --- parsing --------------------------------------------------------------------------------------------


def parse_device_message(body: str) -> DeviceMessage | ParseFailure:
    """A shaker message from its line body."""
    common = parse_common(body)
    if common is not None:
        return common
    fields = split_fields(body)
    if fields is None:
        return MALFORMED_FIELDS
    name, args = fields[0], fields[1:]
    if name == "STATE":
        if len(args) != 1 or args[0] not in SHAKER_STATES:
            return MALFORMED_FIELDS
        return State(args[0])
    if name == "AT_REST":
        seq = parse_seq(args[0]) if len(args) == 2 else None
        if seq is None or not is_token(args[1]):
            return MALFORMED_FIELDS
        return AtRest(seq, args[1])
    if name == "FAULT":
        seq = parse_seq(args[0]) if len(args) >= 3 else None
        if seq is None:
            return MALFORMED_FIELDS
        return Fault(seq, args[1], " ".join(args[2:]))
    return UNKNOWN_MESSAGE


def parse_host_message(body: str) -> HostMessage | ParseFailure:
    """A host command from its line body (what the simulated shaker understands)."""
    ack = parse_ack(body)
    if ack is not None:
        return ack
    if body == "STATUS?":
        return StatusQuery()
    if body == "LIGHT ON":
        return Light(True)
    if body == "LIGHT OFF":
        return Light(False)
    fields = split_fields(body)
    if fields is None:
        return MALFORMED_FIELDS
    if fields[0] == "SHAKE":
        pushes = parse_number(fields[2], 1) if len(fields) == 3 else None
        if pushes is None or pushes == 0 or not is_token(fields[1]):
            return MALFORMED_FIELDS
        return Shake(fields[1], pushes)
    if fields[0] == "LIGHT":
        return MALFORMED_FIELDS
    return UNKNOWN_MESSAGE
