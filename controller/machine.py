"""The table machine: one table's pure core, the sessions of its devices and the merge of their deadlines.

    link_opened / feed (bytes) / link_lost --> the device's session --readings--+
    deliver (readings a device made itself: a camera) --------------------------+--> TableCore --> MachineStep
    command (a validated command) ----------------------------------------------+
    tick (at next_deadline(): the core's and every session's, merged) ----------+

Every input returns one `MachineStep`, what to do about it, in this order:
1. journal `events` with the core's state record and the `delivered` acknowledgement keys of the device
   messages the step applied, in ONE transaction ("one device message, one transaction": README);
2. only once that is committed, write `writes` (the bytes for each connected device: the ACKs among them are
   promises that the message is journaled) and serve `requests` (for the devices served outside the machine,
   a camera's dice station);
3. tell a command's sender of `refused`, the device requests a device could not take.
A device request of the core to a device with a session goes to that session inside the step: its bytes are
in `writes`, what it reports is applied at once.

It never awaits, reads a clock or touches a port: the live service (`controller.service`) drives it with real
I/O on the wall clock, `tablectl replay` (`controller.replay`) with captures on the capture's clock; both
through these very objects, so a capture replays as it was lived. The time only moves forward: a deadline is
handled at its own time, but never before an input the machine has already handled (`now`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.commands import Command, CommandError, Resume
from controller.events import Event
from controller.flow import DeviceRequest
from controller.runtime import Step, TableCore
from drivers.readings import Reading
from drivers.session import DeviceSession, UnknownDeviceCommand


@dataclass(slots=True)
class MachineStep:
    """What one input to the machine asks of its driver (see the module docstring for the order)."""

    #: the device the input came from ("" for a command or a deadline of the core)
    device: str = ""
    #: the readings applied, in order (what the device's message gave)
    readings: list[Reading] = field(default_factory=list)
    #: whether the core was called (its state may have changed); False: the input gave the table nothing
    applied: bool = False
    events: list[Event] = field(default_factory=list)
    #: devices whose health changed
    devices_changed: set[str] = field(default_factory=set)
    #: the acknowledgement keys of the device messages applied (`Reading.ack`), each once, in order
    delivered: list[str] = field(default_factory=list)
    #: bytes for each connected device, to be written once the step is journaled
    writes: dict[str, bytes] = field(default_factory=dict)
    #: requests for devices served outside the machine (cameras)
    requests: list[DeviceRequest] = field(default_factory=list)
    #: requests a device could not take, with why (UnknownDeviceCommand: it cannot do that)
    refused: list[tuple[DeviceRequest, Exception]] = field(default_factory=list)


class TableMachine:
    """One table: `core`, the `sessions` of its byte devices, and the names of the devices that deliver
    readings themselves (`outside`: cameras, whose requests the driver serves).

    `quiet`: nobody listens to the devices (a replay): the bytes the sessions queue are dropped, and a
    session is woken only at the deadlines at which it may report something (`next_reading_deadline`); the
    readings are the same. Otherwise a session's deadlines count only while its link is up, as the bytes it
    queues meanwhile wait for the link.
    `resume_by`: a pause is resumed under this identity as soon as every device is healthy again (the replay
    of a capture of device traffic only, `--auto-resume`); None: only a command resumes."""

    def __init__(
        self,
        core: TableCore,
        sessions: Mapping[str, DeviceSession],
        *,
        outside: Iterable[str] = (),
        quiet: bool = False,
        resume_by: str | None = None,
        now: float = 0.0,
    ) -> None:
        self.core = core
        self.sessions = dict(sessions)
        self.outside = frozenset(outside)
        self.quiet = quiet
        self.resume_by = resume_by
        #: the time of the last input handled: no deadline is handled before it
        self.now = now
        self._connected: set[str] = set()

    # -- inputs -----------------------------------------------------------------------------------------
    def link_opened(self, device: str, now: float) -> MachineStep:
        self._connected.add(device)
        return self._session_step(device, now, lambda session: session.connection_made(now))

    def link_lost(self, device: str, now: float, reason: str) -> MachineStep:
        self._connected.discard(device)
        return self._session_step(device, now, lambda session: session.connection_lost(now, reason=reason))

    def feed(self, device: str, data: bytes, now: float) -> MachineStep:
        """Bytes from `device`."""
        return self._session_step(device, now, lambda session: session.data_received(data, now))

    def deliver(self, readings: list[Reading]) -> MachineStep:
        """Readings a device made itself (a camera: health, what its frames were read as), at their times."""
        out = MachineStep(device=readings[0].device if readings else "")
        self.now = max([self.now, *(reading.time for reading in readings)])
        self._readings(out, readings)
        return self._drained(out)

    def command(self, command: Command, now: float) -> tuple[MachineStep, dict[str, Any]]:
        """A validated command. Raises CommandError (nothing changed) if it does not apply."""
        self.now = max(self.now, now)
        step, reply = self.core.on_command(command, now)
        out = MachineStep()
        self._take(out, step, now)
        return self._drained(out), reply

    def recovered(self, now: float) -> MachineStep:
        """Once, after the core's state was restored from the journal (see `TableCore.recovered`)."""
        self.now = max(self.now, now)
        out = MachineStep()
        self._take(out, self.core.recovered(now), now)
        return self._drained(out)

    def delivered_before(self, device: str, keys: Iterable[str]) -> None:
        """The acknowledgement keys journaled last for `device` before a restart: repeats are duplicates."""
        session = self.sessions[device]
        for key in keys:
            session.delivered_before(key)

    # -- time -------------------------------------------------------------------------------------------
    def next_deadline(self) -> float | None:
        """The earliest time at which `tick` must be called even if nothing arrives; None: none pending. It
        may change after every input: ask again each time."""
        due = [d for _, d in self._deadlines()]
        return min(due, default=None)

    def tick(self, now: float) -> MachineStep | None:
        """Handle the earliest deadline due by `now` (a session's before the core's at the same time), at its
        own time; None when nothing is due. Call again until None: each deadline is its own step."""
        due = [(d, name) for name, d in self._deadlines() if d <= now]
        if not due:
            return None
        deadline, name = min(due, key=lambda item: item[0])  # the first named at the earliest time
        at = max(self.now, deadline)
        if name:
            return self._session_step(name, at, lambda session: session.tick(at))
        self.now = at
        out = MachineStep()
        self._take(out, self.core.on_tick(at), at)
        return self._drained(out)

    def _deadlines(self) -> list[tuple[str, float]]:
        """(device, deadline) of every session with one, in the table's order, then ("", the core's)."""
        found: list[tuple[str, float]] = []
        for name, session in self.sessions.items():
            if self.quiet:
                deadline = session.next_reading_deadline()
            else:
                deadline = session.next_deadline() if name in self._connected else None
            if deadline is not None:
                found.append((name, deadline))
        core = self.core.next_deadline()
        if core is not None:
            found.append(("", core))
        return found

    # -- internals --------------------------------------------------------------------------------------
    def _session_step(
        self, device: str, now: float, call: Callable[[DeviceSession], list[Reading]]
    ) -> MachineStep:
        self.now = max(self.now, now)
        out = MachineStep(device=device)
        self._readings(out, call(self.sessions[device]))
        return self._drained(out)

    def _readings(self, out: MachineStep, readings: list[Reading]) -> None:
        for reading in readings:
            out.readings.append(reading)
            if reading.ack and reading.ack not in out.delivered:
                out.delivered.append(reading.ack)
            self._take(out, self.core.on_reading(reading, reading.time), reading.time)

    def _take(self, out: MachineStep, step: Step, now: float) -> None:
        """A step of the core: its events, then its device requests (what a session reports back is applied
        at once, after them), then the replay's resume."""
        out.applied = True
        out.events += step.events
        out.devices_changed |= step.devices_changed
        for request in step.requests:
            session = self.sessions.get(request.device)
            if session is None:
                if request.device in self.outside:
                    out.requests.append(request)
                else:
                    unknown = UnknownDeviceCommand(f"the table has no device {request.device!r}")
                    out.refused.append((request, unknown))
                continue
            try:
                readings = session.command(request.command, now)
            except Exception as exc:  # UnknownDeviceCommand; anything else is a session's bug, told too
                out.refused.append((request, exc))
                continue
            self._readings(out, readings)
        if self.resume_by is not None and self.core.paused and self.core.devices_ready:
            try:
                resumed, _ = self.core.on_command(Resume(by=self.resume_by), now)
            except CommandError:
                return
            self._take(out, resumed, now)

    def _drained(self, out: MachineStep) -> MachineStep:
        """The bytes the sessions queued: for the devices whose link is up (the others keep theirs until it is
        back); none at all when nobody listens."""
        for name, session in self.sessions.items():
            if self.quiet:
                session.data_to_send()
            elif name in self._connected:
                data = session.data_to_send()
                if data:
                    out.writes[name] = data
        return out
