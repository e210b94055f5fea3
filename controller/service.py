"""The table service: the async shell around the pure core.

device links (bytes) ----+
cameras (readings) ------+--> TableMachine --MachineStep--> Journal (commit) --> TableBus (MQTT), listeners
commands (MQTT, panel) --+    (core + sessions)              then: bytes to the links, requests to the cameras

Everything runs on one event loop and the machine (`controller.machine`) is called synchronously, so there is
no interleaving inside it: each input (a device's bytes or link event, a camera's readings, a deadline, a
command) is one step of the machine, journaled with the core's state record in one SQLite transaction, and
only then published, and only then are its bytes written to the devices (the acknowledgements among them are
promises: see `drivers.runner`).

Time is deadline-driven: the service sleeps until the machine's next deadline (the core's and every
session's, merged) or the next input, never polls.
After a restart the core is built from the configuration and the journaled state record is applied to it
(`controller.table_state`); a record that does not fit stops the start with one line, never a silent reset.

`TableService.run` is the process's composition root: one TaskGroup for the table's own tasks and the parts
its caller runs with it (`tablectl run`: the panel, the metrics, the systemd watchdog; `tablectl demo`: its
virtual dealer and the rest); a part that ends or fails stops the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import sqlite3
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from controller.bus import TableBus
from controller.commands import INPUTS, Command, CommandError, command_name
from controller.config import ConfigError, DeviceSettings, TableConfig
from controller.events import Envelope
from controller.files import private_dir
from controller.games import game_spec
from controller.journal import CommandReply, Journal
from controller.machine import MachineStep, TableMachine
from controller.retention import Housekeeping, evidence_since
from controller.runtime import FLOW_ERROR, TableCore
from controller.table_build import build_core, build_session
from controller.table_state import decode_state
from drivers.capture import CaptureWriter
from drivers.readings import Reading
from drivers.registry import is_camera, link_opener, protocol
from drivers.runner import Link
from drivers.session import DeviceSession, UnknownDeviceCommand
from drivers.waiting import wait_event

log = logging.getLogger(__name__)

DEFAULT_BAUDRATE = {"cammegh-ss2": 9600}
#: how long a stopping table waits for its bus to say `offline` and disconnect
BUS_CLOSE_SECONDS = 5.0

EnvelopeListener = Callable[[Envelope], None]
StateListener = Callable[[dict[str, Any]], None]
#: a part of the running table (`TableService.run`): called once, it runs until cancelled; its end, or its
#: error, stops the table. A task already running (started before the table, as the systemd watchdog is,
#: or the demo's watcher) is handed over as `lambda: task`.
Part = Callable[[], Awaitable[None]]


def restore_core(core: TableCore, journal: Journal, *, discard_state: bool = False) -> bool:
    """Apply the journal's state record to `core` (built from the configuration). Returns whether a state
    was restored. Raises StateMismatch (see controller.table_state) when the record does not fit."""
    blob = journal.snapshot()
    if blob is not None and not discard_state:
        core.restore_state(decode_state(blob))
        return True
    if blob is not None:
        log.warning("discarding the journal's table state as asked (--discard-state); starting afresh")
    # Round ids stay unique per table: a fresh state continues the journal's numbering.
    last = journal.last_event("round.opened")
    if last is not None and last.subject:
        number = last.subject.rsplit("-", 1)[-1]
        if number.isdigit():
            core.flow.rounds.rounds_opened = int(number)
    return False


class TableService:
    def __init__(
        self,
        config: TableConfig,
        *,
        clock: Callable[[], float] = time.time,
        journal_path: Path | None = None,
        discard_state: bool = False,
        broker_may_refuse: bool = True,
    ) -> None:
        """`broker_may_refuse=False`: the broker refuses no publish (the demo's own, without an ACL)."""
        self.config = config
        self.clock = clock
        data_dir = config.table.data_dir
        self.journal_path = journal_path or data_dir / f"{config.table.table_id}-journal.sqlite3"
        private_dir(self.journal_path.parent)  # 0700, and an older install's 0644 files tightened
        self.journal = Journal(self.journal_path, source=config.topic_root, clock=clock)
        self.core = build_core(config)
        try:
            self.restored = restore_core(self.core, self.journal, discard_state=discard_state)
        except BaseException:
            self.journal.close()
            raise
        self._stored_state = self.core.export_state_json()
        # set after a step that moved the machine's next deadline before the one the loop sleeps until
        self._deadlines_changed = asyncio.Event()
        #: the deadline the deadline loop sleeps until (math.inf: none); None while it is not asleep
        self._sleeping_until: float | None = None
        #: called with each journaled envelope, in order (the demo, the panel)
        self.listeners: list[EnvelopeListener] = []
        #: called with the new public state whenever it changed (the panel pushes it to the dealer's screen)
        self.state_listeners: list[StateListener] = []
        self.bus = TableBus(
            config.broker,
            root=config.topic_root,
            journal=self.journal,
            handle_command=self.handle_command,
            client_id=config.broker.client_id or f"tablectl-{config.table.studio_id}-{config.table.table_id}",
            broker_may_refuse=broker_may_refuse,
        )
        #: the links to the byte devices (their sessions are the machine's)
        self.links: dict[str, Link] = {}
        #: camera devices (frames, not bytes): their health goes the same way as every device's
        self.cameras: dict[str, Any] = {}
        #: what serves a camera's device requests (`drivers.dice.station`: grab, keep, read, deliver)
        self.dice_stations: dict[str, Any] = {}
        meta: dict[str, Any] = {
            "game": config.table.game,
            "table_id": config.table.table_id,
            "settings": config.game_settings().model_dump(mode="json"),
        }
        if config.table.manual_card_confirmation != "dealer":
            # a replay must hold hand-entered cards for the supervisor's commands as the table did (only
            # then: the meta of every other table stays as it was)
            meta["manual_card_confirmation"] = config.table.manual_card_confirmation
        sessions: dict[str, DeviceSession] = {}
        for name, device in config.devices.items():
            if is_camera(device.protocol):
                self.cameras[name] = self._build_camera(name, device)
                continue
            sessions[name] = build_session(name, device.protocol, device.options)
            capture = CaptureWriter(device.capture) if device.capture else None
            if capture is not None:
                # what table recorded this, so that `tablectl replay` runs it with the same settings
                capture.story("meta", meta, clock())
            self.links[name] = Link(
                name,
                device.port,
                _TableLink(self, name),
                baudrate=device.baudrate or DEFAULT_BAUDRATE.get(device.protocol, 115200),
                clock=clock,
                capture=capture,
                open_link=link_opener(device.protocol),
            )
        self.machine = TableMachine(self.core, sessions, outside=self.cameras)
        for name in sessions:
            # A message journaled just before a crash, whose ACK may not have left: its repeat is a duplicate.
            self.machine.delivered_before(name, self.journal.delivered(name))
        self._stopped = asyncio.Event()
        #: set when the service must stop because it can no longer keep its guarantees (journal unwritable)
        self.failure: str | None = None
        #: the error of the first part of run() that failed
        self._part_error: Exception | None = None
        #: the retention task (it also knows what the table's files take: the metrics read it)
        self.housekeeping = self._housekeeping()

    # -- the one path from the machine to the world -----------------------------------------------------
    # Everything from the machine's call to the journal commit, the publish and the writes is synchronous: no
    # await, so one input is applied whole before anything else runs on the loop (no lock needed).
    def apply_step(
        self, step: MachineStep, *, reply: CommandReply | None = None, command: bool = False
    ) -> bool:
        """Carry out one step of the table's machine (`self.machine`): commit it, then write its bytes to the
        devices and hand its requests to the cameras. Every input goes this way: a link's bytes and events
        (`_TableLink`), a camera's readings, a command, a deadline, the recovery after a restart. Call it
        with the step at once, in the same synchronous stretch as the machine's call that made it: an await in
        between would let another input's step be committed before this one.

        `reply`: a command's reply, journaled in the step's transaction. Returns whether the step was
        committed (False: the service is stopping, and no byte of the step left: the device repeats what it
        was not told was kept). The requests the devices refused are logged, unless they answer a
        `command` (its sender is told)."""
        if not self.commit(step, reply=reply):
            if step.writes:
                log.error(
                    "%s: none of the %d readings of this step was committed (%s); %d bytes for the devices "
                    "withheld, so they repeat them",
                    step.device or "table",
                    len(step.readings),
                    self.failure,
                    sum(map(len, step.writes.values())),
                )
            return False
        for name, data in step.writes.items():
            self.links[name].write(data)
        for request in step.requests:
            # a camera's work (sic bo: read the dice) runs in its own task
            self.dice_stations[request.device].request(request.command)
        if not command:
            for request, exc in step.refused:
                if isinstance(exc, UnknownDeviceCommand):
                    log.error("%s", exc)
                else:
                    log.error("could not send %s to %s: %r", request.command.name, request.device, exc)
        return True

    def commit(self, step: MachineStep, *, reply: CommandReply | None = None) -> bool:
        """Journal and publish one step of the machine. Its events, the core's state record, a command's
        `reply` and the step's delivered keys (the device messages it applied, which the device repeats
        until ACKed) go into ONE transaction: committed together or not at all. Committed one by one, a crash
        or a full disk between two commits would leave a line marked delivered whose card is recorded
        nowhere: the device's repeat of it would then be dropped as a duplicate, and the card lost behind an
        ACK. Returns False if it could not be journaled: the service then fail-stops."""
        if self.failure is not None:
            return False  # stopping: nothing more may be published that is not journaled
        try:
            return self._commit(step, reply)
        finally:
            # once the step's events are on their way
            self._wake_deadline_loop()

    def _wake_deadline_loop(self) -> None:
        """Wake the deadline loop if a step moved the machine's next deadline before the one it sleeps
        until. A later one needs no waking (a card moves the shoe's watchdog on): the loop wakes at the
        earlier time, finds nothing due and sleeps until the new one; awake, it reads the deadlines before it
        sleeps."""
        sleeping_until = self._sleeping_until
        if sleeping_until is None:
            return
        deadline = self.machine.next_deadline()
        if deadline is not None and deadline < sleeping_until:
            self._deadlines_changed.set()

    def _commit(self, step: MachineStep, reply: CommandReply | None) -> bool:
        if not step.applied and reply is None:
            return True  # the core saw nothing (a heartbeat, a repeat): nothing to journal
        delivered = (step.device, "\n".join(step.delivered)) if step.delivered else None
        state = self.core.export_state_json()
        state_changed = state != self._stored_state
        if step.events or reply is not None or delivered is not None or state_changed:
            try:
                # the envelopes are built only for those who listen (the bus publishes the journal's text)
                envelopes = self.journal.append(
                    step.events,
                    snapshot=state,
                    reply=reply,
                    delivered=delivered,
                    envelopes=bool(self.listeners),
                )
            except (sqlite3.Error, OSError) as exc:
                # Fail-stop (like Klipper on a lost MCU): an event that is not durable must not be published,
                # and a table whose journal cannot be written cannot promise anything. systemd restarts the
                # service, which recovers from the last committed snapshot with the round paused.
                self.failure = f"cannot write the journal {self.journal_path}: {exc}"
                log.critical("%s; stopping", self.failure)
                self._stopped.set()
                return False
            self._stored_state = state
            if step.events:
                self.bus.events_committed()
            for envelope in envelopes:
                for listener in self.listeners:
                    listener(envelope)
        # a step may change what the table shows without an event (an input such as blackjack's `seated`):
        # the retained state and the panel follow the state, not only the events
        if step.events or step.devices_changed or state_changed:
            self._publish_state()
        for name in step.devices_changed:
            self.bus.set_device(name, self.core.devices[name].public())
        return True

    def _publish_state(self) -> None:
        if not self.state_listeners:
            # built when the bus publishes it: one state for a burst of steps, none on the step's own path
            self.bus.set_state(self.public_state)
            return
        state = self.public_state()
        self.bus.set_state(state)
        for listener in self.state_listeners:
            listener(state)

    def public_state(self) -> dict[str, Any]:
        state = self.core.state()
        state["last_sequence"] = self.journal.last_sequence
        # how a screen draws this game (the panel; a supervisor's console)
        state["view"] = game_spec(self.config.table.game).view.as_state()
        return state

    async def on_readings(self, readings: list[Reading]) -> None:
        """A camera's readings (health; what its frames were read as): one step of the machine. Returns once
        they are committed; raises ServiceFailure if they could not be."""
        if not self.apply_step(self.machine.deliver(readings)):
            raise ServiceFailure(self.failure or "stopping")

    async def handle_command(self, command: Command) -> dict[str, Any]:
        """The single entry point for validated commands (from MQTT or the panel). CommandError propagates.

        A command with a `transaction` is applied at most once per sender (`command.by`): a repeat (MQTT QoS 1
        may deliver twice) gets the first reply again, from the journal, where it was written in the same
        transaction as the command's events. A command refused before it changed anything is not kept."""
        name = command_name(command)
        transaction = command.transaction
        if transaction is not None:
            kept = self.journal.command_reply(command.by, transaction)
            if kept is not None:
                log.info("%s %r from %s again: answered with the first reply", name, transaction, command.by)
                if kept.name != name:
                    raise CommandError(
                        f"transaction {transaction!r} was already used for {kept.name}; use a new one"
                    )
                if kept.reply.get("status") == "ok":
                    data: dict[str, Any] = kept.reply.get("data") or {}
                    return data
                raise CommandError(str(kept.reply.get("error", "refused")))
        now = self.clock()
        step, reply = self.machine.command(command, now)
        flow_error: str | None = reply.pop(FLOW_ERROR, None)  # the pause it made is journaled all the same
        record = None
        if transaction is not None:
            record = CommandReply(command.by, transaction, name, {"status": "ok", "data": reply})
        committed = self.apply_step(step, reply=record, command=True)
        self._record_command(command, now)
        reply["state"] = self.public_state()
        error: str | None = flow_error
        for _, exc in step.refused if committed and error is None else []:  # what the devices could not take
            if not isinstance(exc, UnknownDeviceCommand):
                raise exc
            error = str(exc)
            break
        if record is not None and self.failure is None:
            # the reply as sent (with the state and the devices' answer) replaces the one kept with the events
            final = {"status": "error", "error": error} if error else {"status": "ok", "data": reply}
            self.journal.record_reply(CommandReply(record.sender, record.transaction, name, final))
        if error is not None:
            raise CommandError(error)
        return reply

    def _build_camera(self, name: str, device: DeviceSettings) -> Any:
        # imported here: a table without a camera never loads the camera code (nor, later, OpenCV)
        from functools import partial

        from drivers.camera import CameraCaptureWriter, CameraOptions, CameraRunner, make_source
        from drivers.dice.station import DiceStation

        camera_options = CameraOptions.model_validate(device.options)
        renderers = protocol(device.protocol).renderers  # what a `synthetic:<name>` source may name
        camera = CameraRunner(
            name,
            partial(make_source, device.port, camera_options, renderers=renderers),
            options=camera_options,
            on_readings=self.on_readings,
            clock=self.clock,
            capture=CameraCaptureWriter(device.capture) if device.capture else None,
        )
        reader = None
        if camera_options.dice_calibration:
            from drivers.dice.adapter import CalibratedDiceReader

            try:
                reader = CalibratedDiceReader.from_file(camera_options.dice_calibration).read
            except ValueError as exc:
                raise ConfigError(f"devices.{name}.options.dice_calibration: {exc}") from None
        self.dice_stations[name] = DiceStation(camera, reader, clock=self.clock)
        return camera

    def _record_command(self, command: Command, now: float) -> None:
        """An accepted command goes into the first device's capture: a replay applies it at its time."""
        primary = next(iter(game_spec(self.config.table.game).devices), None)
        link = self.links.get(primary) if primary is not None else None
        if link is None or link.capture is None:
            return
        name = command_name(command)
        info = {
            "kind": "inputs" if name in INPUTS else "commands",
            "name": name,
            "payload": command.model_dump(mode="json", exclude={"by"}),
            "by": command.by,
        }
        link.record_story("cmd", info, now)

    async def _deadline_loop(self) -> None:
        """Sleep until the machine's next deadline (or until a step moved it earlier), then handle what is
        due: each deadline at its own time (the rule fired then, however late the loop woke up), one step
        each."""
        while True:
            self._deadlines_changed.clear()
            deadline = self.machine.next_deadline()
            now = self.clock()
            if deadline is not None and deadline <= now:
                step = self.machine.tick(now)
                if step is not None:
                    self.apply_step(step)
                await asyncio.sleep(0)  # let readings and commands in between two due deadlines
                continue
            self._sleeping_until = math.inf if deadline is None else deadline
            try:
                await wait_event(self._deadlines_changed, None if deadline is None else deadline - now)
            finally:
                self._sleeping_until = None

    # -- lifecycle ----------------------------------------------------------------------------------------
    def _housekeeping(self) -> Housekeeping:
        """The retention task, configured from `[retention]`: it rotates the devices' captures."""
        captures = [link.capture for link in self.links.values() if link.capture is not None]
        cameras = [camera.capture for camera in self.cameras.values() if camera.capture is not None]
        return Housekeeping(
            self.config.retention,
            journal=self.journal,
            journal_path=self.journal_path,
            report_disk=self.bus.set_disk,
            captures=captures,
            cameras=cameras,
            evidence_since=lambda: evidence_since(self.journal, self.core.flow.rounds.in_round),
            clock=self.clock,
        )

    async def run(
        self,
        ready: Callable[[], Awaitable[None] | None] | None = None,
        parts: Mapping[str, Part] | None = None,
    ) -> None:
        """Run the table until `stop()` (SIGTERM), a fail-stop or the end of a part: the composition root.

        One TaskGroup holds everything the running table does: its own tasks (the bus, each device's link,
        each camera, the deadlines, the retention) and the `parts` its caller runs with it (`tablectl run`:
        the systemd watchdog, the dealer's panel, the metrics; the demo: its watcher, dealer, supervisor,
        players and panel). `ready` is called once they are all started. A part that ends, or fails, stops
        the table, and run() then raises the part's error (a fail-stop's ServiceFailure goes first).

        It stops in order: the table's inputs (links, cameras, deadlines, retention), then its bus (which
        says `offline`), then the parts (the watchdog pings on while the table stops, a command from the
        panel still finds the journal open), then the journal closes."""
        log.info(
            "table %s (%s) boot %d, journal %s%s",
            self.config.table.table_id,
            self.config.table.game,
            self.journal.boot,
            self.journal_path,
            ", state restored after a restart" if self.restored else "",
        )
        if self.restored:
            self.apply_step(self.machine.recovered(self.clock()))
        self._publish_state()
        for name in self.core.devices:
            self.bus.set_device(name, self.core.devices[name].public())
        self._part_error = None
        try:
            async with asyncio.TaskGroup() as group:
                bus = group.create_task(self.bus.run(), name="mqtt-bus")
                inputs = [
                    group.create_task(link.run(), name=f"device-{name}") for name, link in self.links.items()
                ]
                for name, camera in self.cameras.items():
                    inputs.append(group.create_task(camera.run(), name=f"camera-{name}"))
                inputs.append(group.create_task(self._deadline_loop(), name="deadlines"))
                inputs.append(group.create_task(self.housekeeping.run(), name="retention"))
                for name, part in (parts or {}).items():
                    group.create_task(self._run_part(name, part), name=name)
                group.create_task(self._stop_in_order(bus, inputs), name="stop")
                if ready is not None:
                    result = ready()
                    if result is not None:
                        await result
        except* _Stop:
            pass
        finally:
            with contextlib.suppress(Exception):  # (closed already, unless the run was cancelled)
                await asyncio.wait_for(self.bus.close(), BUS_CLOSE_SECONDS)
            self.journal.close()
        if self.failure is not None:
            raise ServiceFailure(self.failure)
        if self._part_error is not None:
            raise self._part_error

    async def _run_part(self, name: str, part: Part) -> None:
        """A part of the running table: when it ends the table stops, and its error is run()'s."""
        try:
            await part()
        except Exception as exc:
            log.info("%s failed (%s): stopping the table", name, exc)
            if self._part_error is None:
                self._part_error = exc
        else:
            log.info("%s ended: stopping the table", name)
        self.stop()

    async def _stop_in_order(self, bus: asyncio.Task[None], inputs: list[asyncio.Task[None]]) -> None:
        """Once stopped: the table's inputs (links, cameras, deadlines, retention), then the bus (closed: it
        says `offline`), then, raising _Stop out of the group, its parts. An error the tasks end with is
        the group's: it is not swallowed here."""
        await self._stopped.wait()
        for task in inputs:
            task.cancel()
        await asyncio.wait(inputs)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.bus.close(), BUS_CLOSE_SECONDS)
        bus.cancel()  # (done already, unless it did not close in time)
        await asyncio.wait((bus,))
        raise _Stop

    def stop(self) -> None:
        self._stopped.set()


class _TableLink:
    """What the link of the table's device `name` tells goes to the table's machine, one step at a time."""

    def __init__(self, service: TableService, name: str) -> None:
        self.service = service
        self.name = name

    async def link_opened(self, now: float) -> None:
        self.service.apply_step(self.service.machine.link_opened(self.name, now))

    async def link_lost(self, now: float, reason: str) -> None:
        self.service.apply_step(self.service.machine.link_lost(self.name, now, reason))

    async def data_received(self, data: bytes, now: float) -> None:
        self.service.apply_step(self.service.machine.feed(self.name, data, now))


class ServiceFailure(RuntimeError):
    """The service stopped because it could not keep its guarantees; the message says why."""


class _Stop(Exception):
    pass
