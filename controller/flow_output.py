"""What a step of a game flow produces: events to journal and requests to devices."""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.events import Event, EventData, make_event
from drivers.session import DeviceCommand


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """Ask a device (by its configured name) to do something, e.g. lock the shoe's gate."""

    device: str
    command: DeviceCommand


@dataclass(slots=True)
class FlowOutput:
    events: list[Event] = field(default_factory=list)
    requests: list[DeviceRequest] = field(default_factory=list)
    #: the game found a fault in the table's procedure (e.g. a wrong burn count): the runtime pauses the table
    #: with this reason (`by: "system"`) after the step's events, as it does for a device fault; a supervisor
    #: resumes or voids. A flow cannot pause the table itself: pausing is the runtime's (held readings, the
    #: clock of the round, the shoe's gate).
    fault: str | None = None

    def extend(self, other: FlowOutput) -> FlowOutput:
        self.events += other.events
        self.requests += other.requests
        if other.fault is not None and self.fault is None:
            self.fault = other.fault
        return self

    def pause_table(self, reason: str) -> None:
        """Ask the runtime to pause the table (the first reason in a step wins)."""
        if self.fault is None:
            self.fault = reason

    def emit(self, type_: str, data: EventData, time: float, subject: str | None = None) -> None:
        self.events.append(make_event(type_, data, time, subject))
