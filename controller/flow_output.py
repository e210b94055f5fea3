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

    def extend(self, other: FlowOutput) -> FlowOutput:
        self.events += other.events
        self.requests += other.requests
        return self

    def emit(self, type_: str, data: EventData, time: float, subject: str | None = None) -> None:
        self.events.append(make_event(type_, data, time, subject))
