"""What a step of a game flow produces: events to journal, requests to devices, and maybe a pause."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.events import Event, EventData, make_event
from drivers.session import DeviceCommand


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """Ask a device (by its configured name) to do something, e.g. lock the shoe's gate."""

    device: str
    command: DeviceCommand


@dataclass(frozen=True, slots=True)
class PauseRequest:
    """The flow cannot go on without a supervisor (e.g. the dice stayed unreadable after every re-shake).

    The runtime pauses the table exactly as for a device fault (`round.paused`, by "system", with this
    reason and device), unless it is paused already. The flow keeps its own state of what it waits for; the
    supervisor's resume, void or game command (see `GameFlow.commands_while_paused`) ends the pause."""

    reason: str
    device: str | None = None
    #: `game` (the procedure cannot go on) or `out_of_procedure` (a reading the table did not expect, held
    #: by the flow until the supervisor decides; such a pause never voids a round that had not started)
    cause: str = "game"
    #: out_of_procedure: the card and device text the pause names (None / "" when secret or unread)
    card: str | None = None
    raw: str = ""


@dataclass(slots=True)
class FlowOutput:
    events: list[Event] = field(default_factory=list)
    requests: list[DeviceRequest] = field(default_factory=list)
    pause: PauseRequest | None = None

    def extend(self, other: FlowOutput) -> FlowOutput:
        self.events += other.events
        self.requests += other.requests
        self.pause = self.pause or other.pause
        return self

    def emit(self, type_: str, data: EventData, time: float, subject: str | None = None) -> None:
        self.events.append(make_event(type_, data, time, subject))

    def request_pause(self, reason: str, device: str | None = None) -> None:
        """Ask the runtime to pause the table (the first request of a step wins)."""
        if self.pause is None:
            self.pause = PauseRequest(reason, device)

    def hold_out_of_procedure(self, reason: str, device: str, card: str | None, raw: str) -> None:
        """A reading came that the procedure does not allow now and the flow holds it: pause the table
        (cause `out_of_procedure`) until the supervisor decides (`GameFlow.settle_pause`)."""
        if self.pause is None:
            self.pause = PauseRequest(reason, device, "out_of_procedure", card, raw)
