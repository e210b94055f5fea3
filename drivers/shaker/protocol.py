"""The `shaker-line` dice-shaker protocol: one frozen dataclass per message, parse and encode. Pure.

Device -> host: `AT_REST <seq> <cycle_id>` and `FAULT <seq> <code> <text...>` (these carry a seq and are
retransmitted until ACKed), `STATE <s>`, plus the common HB and HELLO.
Host -> device: `ACK <seq>`, `SHAKE <cycle_id> <pushes>`, `LIGHT ON|OFF`, `STATUS?`.

`parse_device_message` / `parse_host_message` take a line BODY (checksum already verified by
`drivers.line.framing.parse_frame`) and return a message or a `ParseFailure`; they never raise.
A cycle id is one token (`drivers.line.fields.is_token`); pushes are 1 to `MAX_PUSHES` (one digit). A FAULT
with a code outside M01..M04 is still a fault (it is reported, never dropped).
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.line.fields import check_count, check_token, is_token, parse_seq, parse_seq_code_text
from drivers.line.framing import Ack, Heartbeat, Hello, LineMessage, State, StatusQuery, encode_line
from drivers.line.protocol import MALFORMED_FIELDS, LineProtocol, ParseFailure, id_and_count

__all__ = [
    "DEFAULT_PUSHES",
    "FAULT_TEXTS",
    "LINE_PROTOCOL",
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
class AtRest(LineMessage):
    """`AT_REST <seq> <cycle_id>`: the cycle ended and the dice are still; the camera may read them now."""

    wire = "AT_REST {seq} {cycle_id}"
    seq: int
    cycle_id: str


@dataclass(frozen=True, slots=True)
class Fault(LineMessage):
    """`FAULT <seq> <code> <text...>`, e.g. `FAULT 0012 M02 DOME_NOT_CLOSED`."""

    wire = "FAULT {seq} {code} {text}"
    seq: int
    code: str
    text: str


DeviceMessage = State | AtRest | Fault | Heartbeat | Hello


# --- host -> device -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Shake(LineMessage):
    """`SHAKE <cycle_id> <pushes>`: run one shake cycle (the lever pushed `pushes` times), then settle."""

    wire = "SHAKE {cycle_id} {pushes}"
    cycle_id: str
    pushes: int = DEFAULT_PUSHES

    def encode(self) -> bytes:
        check_token(self.cycle_id, "a cycle id")
        check_count(self.pushes, "pushes", MAX_PUSHES)
        return LineMessage.encode(self)


@dataclass(frozen=True, slots=True)
class Light:
    """`LIGHT ON` / `LIGHT OFF`: the light under the dome the camera reads the dice by."""

    on: bool

    def encode(self) -> bytes:
        return encode_line("LIGHT ON" if self.on else "LIGHT OFF")


HostMessage = Ack | Shake | Light | StatusQuery


# --- parsing --------------------------------------------------------------------------------------------


def _parse_at_rest(args: list[str]) -> AtRest | ParseFailure:
    seq = parse_seq(args[0]) if len(args) == 2 else None
    if seq is None or not is_token(args[1]):
        return MALFORMED_FIELDS
    return AtRest(seq, args[1])


def _parse_fault(args: list[str]) -> Fault | ParseFailure:
    fields = parse_seq_code_text(args)
    return MALFORMED_FIELDS if fields is None else Fault(*fields)


#: The shaker's messages beyond the common ones (HELLO, HB, STATE, ACK, STATUS?).
LINE_PROTOCOL: LineProtocol[DeviceMessage, HostMessage] = LineProtocol(
    states=SHAKER_STATES,
    device_messages={"AT_REST": _parse_at_rest, "FAULT": _parse_fault},
    host_bodies={"LIGHT ON": Light(True), "LIGHT OFF": Light(False)},
    # `LIGHT` with anything but ON or OFF
    host_messages={"SHAKE": id_and_count(Shake, 1), "LIGHT": lambda args: MALFORMED_FIELDS},
    acked=(AtRest, Fault),
)

parse_device_message = LINE_PROTOCOL.parse_device_message
parse_host_message = LINE_PROTOCOL.parse_host_message
