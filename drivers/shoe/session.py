"""`ShoeSession`: host side of a `shoe-line` card shoe. Pure: bytes and time in, readings and bytes out."""

from __future__ import annotations

from drivers.line.framing import ParseFailure, seq_text
from drivers.line.session import LineDeviceSession
from drivers.readings import (
    CardSeen,
    CardUnread,
    CutCardSeen,
    DeviceFault,
    DeviceFaultCleared,
    DeviceStatus,
    Reading,
)
from drivers.session import DeviceCommand, UnknownDeviceCommand
from drivers.shoe.protocol import (
    Card,
    Cut,
    DeviceMessage,
    Fault,
    InvalidCardRead,
    Lock,
    NoRead,
    Rescan,
    State,
    StatusQuery,
    Unlock,
    parse_device_message,
)

# Shoe states that are faults in themselves, with the reason an operator reads.
_FAULT_STATES = {
    "COVER_OPEN": "shoe cover is open",
    "FAULT": "shoe reports a fault",
}
# States that mean the shoe works again after a fault.
_OPERATIONAL_STATES = frozenset({"READY", "LOCKED"})

_COMMANDS: dict[str, Lock | Unlock | StatusQuery] = {
    "lock": Lock(),
    "unlock": Unlock(),
    "status": StatusQuery(),
}


class ShoeSession(LineDeviceSession[DeviceMessage]):
    protocol = "shoe-line"

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.state: str | None = None
        self.active_fault: str | None = None

    # -- DeviceSession -----------------------------------------------------------------------------
    def connection_made(self, now: float) -> list[Reading]:
        readings = super().connection_made(now)
        # Ask at once: the shoe's state (locked, cover open...) may have changed while we were away.
        self._send(StatusQuery().encode())
        return readings

    def command(self, command: DeviceCommand, now: float) -> list[Reading]:
        message = _COMMANDS.get(command.name)
        if message is None:
            known = ", ".join(sorted(_COMMANDS))
            raise UnknownDeviceCommand(
                f"shoe-line device {self.name!r} has no command {command.name!r} (known: {known})"
            )
        self._send(message.encode())
        return []

    # -- LineDeviceSession -------------------------------------------------------------------------
    def parse_message(self, body: str) -> DeviceMessage | ParseFailure:
        return parse_device_message(body)

    def message_seq(self, message: DeviceMessage) -> int | None:
        if isinstance(message, Card | NoRead | Rescan | InvalidCardRead | Cut):
            return message.seq
        return None

    def handle_message(self, message: DeviceMessage, raw: str, now: float) -> list[Reading]:
        device = self.name
        if isinstance(message, Card):
            return [CardSeen(device=device, time=now, raw=raw, code=message.code, ref=seq_text(message.seq))]
        if isinstance(message, Rescan):
            ref = seq_text(message.seq)
            return [CardSeen(device=device, time=now, raw=raw, code=message.code, ref=ref, rescan_of=ref)]
        if isinstance(message, NoRead):
            return [CardUnread(device=device, time=now, raw=raw, ref=seq_text(message.seq))]
        if isinstance(message, InvalidCardRead):
            # Acknowledged already (by seq); the round waits for a re-scan or a hand-entered card.
            self.stats.reject("bad card code")
            return [CardUnread(device=device, time=now, raw=raw, ref=seq_text(message.seq))]
        if isinstance(message, Cut):
            return [CutCardSeen(device=device, time=now, raw=raw, ref=seq_text(message.seq))]
        if isinstance(message, State):
            return self._state_changed(message.state, raw, now)
        if isinstance(message, Fault):
            self.active_fault = message.code
            return [DeviceFault(device=device, time=now, raw=raw, code=message.code, reason=message.text)]
        return []

    def _state_changed(self, state: str, raw: str, now: float) -> list[Reading]:
        self.state = state
        readings: list[Reading] = [DeviceStatus(device=self.name, time=now, raw=raw, state=state)]
        if state in _FAULT_STATES:
            # A FAULT line usually precedes STATE FAULT; report the fault once, not once per line.
            if self.active_fault is None or (state == "COVER_OPEN" and self.active_fault != "COVER_OPEN"):
                self.active_fault = state
                readings.append(
                    DeviceFault(device=self.name, time=now, raw=raw, code=state, reason=_FAULT_STATES[state])
                )
        elif state in _OPERATIONAL_STATES and self.active_fault is not None:
            self.active_fault = None
            readings.append(DeviceFaultCleared(device=self.name, time=now, raw=raw, detail=state))
        return readings
