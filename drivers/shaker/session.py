"""`ShakerSession`: host side of a `shaker-line` dice shaker. Pure: bytes and time in, readings out.

Readings (besides the link's DeviceOnline/DeviceOffline from `LineDeviceSession`):

- `STATE <s>` -> `DeviceStatus(state)`; `FAULT` is a fault -> also `DeviceFault` unless a FAULT message
  already reported it, and `DeviceFaultCleared` when the shaker is back in IDLE, SHAKING, SETTLING or
  AT_REST. `DOME_OPEN` is a state, not a fault (a shake asked for while the dome is open is: M02).
- `AT_REST <seq> <cycle_id>` -> `DiceAtRest(cycle_id)`: the camera may read the dice now. Exactly once per
  message, however often the shaker retransmits it (every copy is ACKed, `LineDeviceSession`).
- `FAULT <seq> <code> <text...>` -> `DeviceFault(code, text)` (M01 MOTOR, M02 DOME_NOT_CLOSED,
  M03 VIBRATION_SENSOR, M04 LIGHT, or any other code). A cycle that faults never comes to rest: no
  DiceAtRest follows for it, so no dice are read from it.

Commands (`DeviceCommand`): `shake {"cycle_id": str|int, "pushes": int = 3}` -> `SHAKE <id> <pushes>`,
`light {"on": bool}` -> `LIGHT ON|OFF`, `status` -> `STATUS?`. Bad arguments raise `UnknownDeviceCommand`.
Without a `cycle_id` the id is the command's time in epoch milliseconds (the same again in a replay).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from drivers.line.session import CommandBuilder, LineDeviceSession, fixed, wire_id
from drivers.readings import DiceAtRest, Reading
from drivers.session import UnknownDeviceCommand
from drivers.shaker.protocol import (
    DEFAULT_PUSHES,
    LINE_PROTOCOL,
    MAX_PUSHES,
    AtRest,
    DeviceMessage,
    Fault,
    Light,
    Shake,
    StatusQuery,
)


def shake_command(args: Mapping[str, Any], now: float) -> Shake:
    """The SHAKE for a `shake` command's arguments; UnknownDeviceCommand if they are not usable."""
    cycle_id = wire_id(args, "cycle_id", now, command="shake")
    pushes = args.get("pushes", DEFAULT_PUSHES)
    if not isinstance(pushes, int) or isinstance(pushes, bool) or not 1 <= pushes <= MAX_PUSHES:
        raise UnknownDeviceCommand(f"shake needs 'pushes' between 1 and {MAX_PUSHES}, not {pushes!r}")
    return Shake(cycle_id, pushes)


def light_command(args: Mapping[str, Any], now: float) -> Light:
    on = args.get("on")
    if not isinstance(on, bool):
        raise UnknownDeviceCommand(f"light needs {{'on': true|false}}, not {dict(args)!r}")
    return Light(on)


class ShakerSession(LineDeviceSession[DeviceMessage]):
    protocol = "shaker-line"
    line_protocol = LINE_PROTOCOL
    commands: ClassVar[Mapping[str, CommandBuilder]] = {
        "shake": shake_command,
        "light": light_command,
        "status": fixed(StatusQuery()),
    }
    # DOME_OPEN is a state, not a fault (a shake asked for while the dome is open is: M02).
    fault_states: ClassVar[Mapping[str, str]] = {"FAULT": "shaker reports a fault"}
    operational_states = frozenset({"IDLE", "SHAKING", "SETTLING", "AT_REST"})

    def handle_message(self, message: DeviceMessage, raw: str, now: float) -> list[Reading]:
        if isinstance(message, AtRest):
            return [DiceAtRest(device=self.name, time=now, raw=raw, cycle_id=message.cycle_id)]
        if isinstance(message, Fault):
            return [self._fault_reported(message.code, message.text, raw, now)]
        return []
