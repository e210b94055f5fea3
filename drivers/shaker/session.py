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

from typing import Any

from drivers.line.framing import ParseFailure, is_token
from drivers.line.session import LineDeviceSession
from drivers.readings import DeviceFault, DeviceFaultCleared, DeviceStatus, DiceAtRest, Reading
from drivers.session import DeviceCommand, UnknownDeviceCommand
from drivers.shaker.protocol import (
    DEFAULT_PUSHES,
    MAX_PUSHES,
    AtRest,
    DeviceMessage,
    Fault,
    Light,
    Shake,
    State,
    StatusQuery,
    parse_device_message,
)

_FAULT_STATE_REASON = "shaker reports a fault"
# States that mean the shaker works again after a fault.
_OPERATIONAL_STATES = frozenset({"IDLE", "SHAKING", "SETTLING", "AT_REST"})
_KNOWN_COMMANDS = "light, shake, status"


def shake_command(args: dict[str, Any], now: float) -> Shake:
    """The SHAKE for a `shake` command's arguments; UnknownDeviceCommand if they are not usable."""
    cycle_id = args.get("cycle_id")
    if cycle_id is None:
        cycle_id = round(now * 1000)
    if isinstance(cycle_id, int) and not isinstance(cycle_id, bool) and cycle_id >= 0:
        cycle_id = str(cycle_id)
    if not isinstance(cycle_id, str) or not is_token(cycle_id):
        raise UnknownDeviceCommand(
            f"shake needs a 'cycle_id' of one word (printable ASCII, no '*'), not {cycle_id!r}"
        )
    pushes = args.get("pushes", DEFAULT_PUSHES)
    if not isinstance(pushes, int) or isinstance(pushes, bool) or not 1 <= pushes <= MAX_PUSHES:
        raise UnknownDeviceCommand(f"shake needs 'pushes' between 1 and {MAX_PUSHES}, not {pushes!r}")
    return Shake(cycle_id, pushes)


class ShakerSession(LineDeviceSession[DeviceMessage]):
    protocol = "shaker-line"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.state: str | None = None
        #: The code of the fault the shaker reports (None when it works).
        self.active_fault: str | None = None

    # -- DeviceSession -----------------------------------------------------------------------------
    def connection_made(self, now: float) -> list[Reading]:
        readings = super().connection_made(now)
        # Ask at once: the dome may have been opened or a fault cleared while we were away.
        self._send(StatusQuery().encode())
        return readings

    def command(self, command: DeviceCommand, now: float) -> list[Reading]:
        message: Shake | Light | StatusQuery
        if command.name == "shake":
            message = shake_command(command.args, now)
        elif command.name == "light":
            on = command.args.get("on")
            if not isinstance(on, bool):
                raise UnknownDeviceCommand(f"light needs {{'on': true|false}}, not {command.args!r}")
            message = Light(on)
        elif command.name == "status":
            message = StatusQuery()
        else:
            raise UnknownDeviceCommand(
                f"shaker-line device {self.name!r} has no command {command.name!r} (known: {_KNOWN_COMMANDS})"
            )
        self._send(message.encode())
        return []

    # -- LineDeviceSession -------------------------------------------------------------------------
    def parse_message(self, body: str) -> DeviceMessage | ParseFailure:
        return parse_device_message(body)

    def message_seq(self, message: DeviceMessage) -> int | None:
        if isinstance(message, AtRest | Fault):
            return message.seq
        return None

    def handle_message(self, message: DeviceMessage, raw: str, now: float) -> list[Reading]:
        device = self.name
        if isinstance(message, AtRest):
            return [DiceAtRest(device=device, time=now, raw=raw, cycle_id=message.cycle_id)]
        if isinstance(message, Fault):
            self.active_fault = message.code
            return [DeviceFault(device=device, time=now, raw=raw, code=message.code, reason=message.text)]
        if isinstance(message, State):
            return self._state_changed(message.state, raw, now)
        return []

    def _state_changed(self, state: str, raw: str, now: float) -> list[Reading]:
        self.state = state
        readings: list[Reading] = [DeviceStatus(device=self.name, time=now, raw=raw, state=state)]
        if state == "FAULT":
            # A FAULT message usually precedes STATE FAULT; report the fault once, not once per line.
            if self.active_fault is None:
                self.active_fault = state
                readings.append(
                    DeviceFault(device=self.name, time=now, raw=raw, code=state, reason=_FAULT_STATE_REASON)
                )
        elif state in _OPERATIONAL_STATES and self.active_fault is not None:
            self.active_fault = None
            readings.append(DeviceFaultCleared(device=self.name, time=now, raw=raw, detail=state))
        return readings
