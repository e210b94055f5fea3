"""The table service: the async shell around the pure core.

device runners --readings--> TableCore --events--> Journal (commit) --> TableBus (MQTT) and local listeners
commands (MQTT, panel) ----------------> TableCore.on_command (the one validated entry point)

Everything runs on one event loop and the core is called synchronously, so there is no interleaving inside it:
each reading, tick or command is applied, journaled with a snapshot of the core in the same SQLite
transaction,
and only then published.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from controller.bus import TableBus
from controller.commands import Command, CommandError
from controller.config import TableConfig
from controller.events import Envelope
from controller.files import private_dir
from controller.flow import DeviceRequest
from controller.games import make_flow
from controller.journal import Journal
from controller.runtime import Step, TableCore
from drivers.capture import CaptureWriter
from drivers.readings import Reading
from drivers.registry import session_class
from drivers.runner import DeviceRunner
from drivers.session import DeviceSession, UnknownDeviceCommand

log = logging.getLogger(__name__)

#: bumped when TableCore's pickled shape changes incompatibly; an older snapshot is then not restored
SNAPSHOT_VERSION = 1
DEFAULT_BAUDRATE = {"cammegh-ss2": 9600}

EnvelopeListener = Callable[[Envelope], None]
StateListener = Callable[[dict[str, Any]], None]


def build_core(config: TableConfig) -> TableCore:
    flow = make_flow(config.table.game, config.table.table_id, config.game_settings())
    return TableCore(
        table_id=config.table.table_id, game=config.table.game, flow=flow, devices=list(config.devices)
    )


def build_session(name: str, protocol: str, options: dict[str, Any]) -> DeviceSession:
    cls: Any = session_class(protocol)
    session: DeviceSession = cls(name, **options)
    return session


def dump_snapshot(core: TableCore) -> bytes:
    return pickle.dumps((SNAPSHOT_VERSION, core), protocol=pickle.HIGHEST_PROTOCOL)


def load_snapshot(blob: bytes | None) -> TableCore | None:
    if blob is None:
        return None
    try:
        version, core = pickle.loads(blob)
    except Exception:
        log.exception("the journal's snapshot cannot be read; starting from a fresh table state")
        return None
    if version != SNAPSHOT_VERSION or not isinstance(core, TableCore):
        log.error("the journal's snapshot is of another version (%s); starting fresh", version)
        return None
    return core


class TableService:
    def __init__(
        self,
        config: TableConfig,
        *,
        clock: Callable[[], float] = time.time,
        tick_interval: float = 0.1,
        journal_path: Path | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.tick_interval = tick_interval
        data_dir = config.table.data_dir
        self.journal_path = journal_path or data_dir / f"{config.table.table_id}-journal.sqlite3"
        private_dir(self.journal_path.parent)  # 0700, and an older install's 0644 files tightened
        self.journal = Journal(self.journal_path, source=config.topic_root, clock=clock)
        restored = load_snapshot(self.journal.snapshot())
        self.core = restored if restored is not None else build_core(config)
        self.restored = restored is not None
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
        )
        self.runners: dict[str, DeviceRunner] = {}
        for name, device in config.devices.items():
            session = build_session(name, device.protocol, device.options)
            capture = CaptureWriter(device.capture) if device.capture else None
            self.runners[name] = DeviceRunner(
                session,
                device.port,
                baudrate=device.baudrate or DEFAULT_BAUDRATE.get(device.protocol, 115200),
                on_readings=self.on_readings,
                clock=clock,
                capture=capture,
            )
        # Device requests leave through one queue, in order, sent by `_dispatch_loop`. Never sent from inside
        # `_apply`: a runner delivering readings holds its own lock, and a request sent back to that runner
        # from there (a shoe fault pausing the table locks that shoe) would wait on that lock forever.
        self._requests: asyncio.Queue[tuple[DeviceRequest, asyncio.Future[None] | None]] = asyncio.Queue()
        self._stopped = asyncio.Event()
        #: set when the service must stop because it can no longer keep its guarantees (journal unwritable)
        self.failure: str | None = None

    # -- the one path from the core to the world ---------------------------------------------------------
    # Everything from the core's call to the journal commit and the publish is synchronous: no await, so one
    # reading, tick or command is applied whole before anything else runs on the loop (no lock needed).
    def _apply(self, step: Step, *, want_results: bool = False) -> list[asyncio.Future[None]]:
        """Journal, publish and queue the device requests of one step.

        With `want_results`, returns one future per request, resolved when the device took it (or failed
        with UnknownDeviceCommand): a command's sender is told if the device cannot do what was asked."""
        if self.failure is not None:
            return []  # stopping: nothing more may be published that is not journaled
        if step.events:
            try:
                envelopes = self.journal.append(step.events, snapshot=dump_snapshot(self.core))
            except (sqlite3.Error, OSError) as exc:
                # Fail-stop (like Klipper on a lost MCU): an event that is not durable must not be published,
                # and a table whose journal cannot be written cannot promise anything. systemd restarts the
                # service, which recovers from the last committed snapshot with the round paused.
                self.failure = f"cannot write the journal {self.journal_path}: {exc}"
                log.critical("%s; stopping", self.failure)
                self._stopped.set()
                return []
            self.bus.events_committed()
            for envelope in envelopes:
                for listener in self.listeners:
                    listener(envelope)
        if step.events or step.devices_changed:
            self._publish_state()
        for name in step.devices_changed:
            self.bus.set_device(name, self.core.devices[name].public())
        futures: list[asyncio.Future[None]] = []
        for request in step.requests:
            future = asyncio.get_running_loop().create_future() if want_results else None
            self._requests.put_nowait((request, future))
            if future is not None:
                futures.append(future)
        return futures

    async def _dispatch_loop(self) -> None:
        while True:
            request, future = await self._requests.get()
            try:
                runner = self.runners.get(request.device)
                if runner is None:
                    raise UnknownDeviceCommand(f"the table has no device {request.device!r}")
                await runner.send(request.command)
            except Exception as exc:
                if future is not None:
                    future.set_exception(exc)
                elif isinstance(exc, UnknownDeviceCommand):
                    log.error("%s", exc)
                else:
                    log.exception("could not send %s to %s", request.command.name, request.device)
            else:
                if future is not None:
                    future.set_result(None)

    def _publish_state(self) -> None:
        state = self.public_state()
        self.bus.set_state(state)
        for listener in self.state_listeners:
            listener(state)

    def public_state(self) -> dict[str, Any]:
        state = self.core.state()
        state["last_sequence"] = self.journal.last_sequence
        return state

    async def on_readings(self, readings: list[Reading]) -> None:
        for reading in readings:
            self._apply(self.core.on_reading(reading, reading.time))

    async def handle_command(self, command: Command) -> dict[str, Any]:
        """The single entry point for validated commands (from MQTT or the panel). CommandError propagates."""
        step, reply = self.core.on_command(command, self.clock())
        sent = self._apply(step, want_results=True)
        reply["state"] = self.public_state()
        for future in sent:  # after the state change is committed: wait for the devices to take it
            try:
                await future
            except UnknownDeviceCommand as exc:
                raise CommandError(str(exc)) from None
        return reply

    async def _tick_loop(self) -> None:
        while True:
            self._apply(self.core.on_tick(self.clock()))
            await asyncio.sleep(self.tick_interval)

    # -- lifecycle ----------------------------------------------------------------------------------------
    async def run(self, ready: Callable[[], Awaitable[None] | None] | None = None) -> None:
        log.info(
            "table %s (%s) boot %d, journal %s%s",
            self.config.table.table_id,
            self.config.table.game,
            self.journal.boot,
            self.journal_path,
            ", state restored after a restart" if self.restored else "",
        )
        if self.restored:
            self._apply(self.core.recovered(self.clock()))
        self._publish_state()
        for name in self.core.devices:
            self.bus.set_device(name, self.core.devices[name].public())
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self.bus.run(), name="mqtt-bus")
                for name, runner in self.runners.items():
                    group.create_task(runner.run(), name=f"device-{name}")
                group.create_task(self._tick_loop(), name="tick")
                group.create_task(self._dispatch_loop(), name="device-requests")
                if ready is not None:
                    result = ready()
                    if result is not None:
                        await result
                group.create_task(self._wait_stopped())
        except* _Stop:
            pass
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.bus.close(), 5)
            self.journal.close()
        if self.failure is not None:
            raise ServiceFailure(self.failure)

    async def _wait_stopped(self) -> None:
        await self._stopped.wait()
        raise _Stop

    def stop(self) -> None:
        self._stopped.set()


class ServiceFailure(RuntimeError):
    """The service stopped because it could not keep its guarantees; the message says why."""


class _Stop(Exception):
    pass
