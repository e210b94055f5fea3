"""`tablectl simulate studio --tables N`: a studio of simulated tables on one broker, to try the console,
a dashboard or the alerts without hardware.

Each table is the demo's table (`controller.demo.run_demo`): a real `TableService` (journal, MQTT bus, the
game's flow) on its own simulated devices over pseudo-terminals, played by the demo's virtual dealer (and
players, shuffler and dice camera where the game has them), with the demo's line faults unless `--no-faults`.
The games are mixed in a fixed order (each game's `Demo.studio_place`), so that a studio of as many tables as
games has one of each. All tables run in this
one process, on one event loop: what that costs per table is measured by `bench/studio_demo.py`.

Faults on demand come from standard input, one line each: `<table> <action> [args]` acts on the table's
device simulator (`bac-01 fault F03`, `bac-01 clear`, `bac-01 unplug`, ...), `<table> stop` takes a table
away (its bus says offline, as a table whose service stopped) and `<table> start` brings it back;
`tables` lists them, `help` says all this. Every `--report-every` seconds one line tells how the studio is
doing (tables playing, paused and why, events journaled). It runs until SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from controller.config import redact_url
from controller.demo import DemoTable, check_demo_extras, free_port, run_demo, start_embedded_broker
from controller.games import GAMES, game_spec
from drivers.simulate import actions, stdin_reader

log = logging.getLogger(__name__)

#: the order the games are given to the tables (each game's `Demo.studio_place`; sorted() is stable, so
#: equal places keep the registry's order): every game once in the first tables
GAME_ORDER = tuple(spec.name for spec in sorted(GAMES.values(), key=lambda spec: spec.demo.studio_place))
#: the table ids' prefixes (each game's `short`)
SHORT = {name: spec.short for name, spec in GAMES.items()}
#: the most tables in one process measured keeping up (bench/studio_demo.py: 32 tables, 68 events/s)
MAX_TABLES = 32


class StudioError(ValueError):
    """A bad option or command, worded for the operator."""


def studio_tables(count: int, games: tuple[str, ...] = GAME_ORDER) -> list[tuple[str, str]]:
    """(table id, game) of each table: the games in turn, numbered across the studio (`bac-01`, `bj-02`)."""
    if not 1 <= count <= MAX_TABLES:
        raise StudioError(f"--tables is between 1 and {MAX_TABLES} (one process, one event loop)")
    unknown = [game for game in games if game not in SHORT]
    if unknown or not games:
        raise StudioError(f"unknown game(s) {', '.join(unknown) or '(none)'}; known: {', '.join(GAME_ORDER)}")
    return [(f"{SHORT[games[n % len(games)]]}-{n + 1:02d}", games[n % len(games)]) for n in range(count)]


@dataclass
class StudioTable:
    table_id: str
    game: str
    seed: int
    demo: DemoTable | None = None
    task: asyncio.Task[int] | None = None
    stopped: bool = False


@dataclass
class SimulatedStudioRun:
    """The studio's tables and what standard input does to them."""

    studio_id: str
    mqtt_url: str
    faults: bool
    supervisor: bool
    tables: dict[str, StudioTable] = field(default_factory=dict)
    out: TextIO = sys.stdout

    def start(self, table: StudioTable) -> None:
        def ready(demo: DemoTable) -> None:
            table.demo = demo

        table.stopped = False
        table.task = asyncio.create_task(
            run_demo(
                table.game,
                0,
                as_json=False,
                mqtt_url=self.mqtt_url,
                seed=table.seed,
                faults=self.faults,
                out=_DISCARD,
                panel_port=None,
                supervisor=self.supervisor,
                on_ready=ready,
                studio_id=self.studio_id,
                table_id=table.table_id,
            ),
            name=table.table_id,
        )

    async def stop(self, table: StudioTable) -> None:
        table.stopped = True
        task, table.task, table.demo = table.task, None, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- what one line on standard input does ----------------------------------------------------------
    async def command(self, line: str) -> str:
        words = line.split()
        if not words:
            return ""
        if words[0] == "help":
            return HELP
        if words[0] == "tables":
            return "\n".join(self.describe(table) for table in self.tables.values())
        table = self.tables.get(words[0])
        if table is None:
            raise StudioError(f"no table {words[0]!r}: {', '.join(self.tables)} (or help, tables)")
        if len(words) == 1:
            raise StudioError(f"{table.table_id}: what? (stop, start, or an action: {self._actions(table)})")
        action, args = words[1], words[2:]
        if action == "stop":
            await self.stop(table)
            return f"{table.table_id} stopped"
        if action == "start":
            if table.task is not None and not table.task.done():
                raise StudioError(f"{table.table_id} is running")
            self.start(table)
            return f"{table.table_id} started"
        actions = self._device_actions(table)
        if action not in actions:
            raise StudioError(f"{table.table_id}: no action {action!r} ({self._actions(table)})")
        try:
            result = actions[action][1](*args)
            if asyncio.iscoroutine(result):
                result = await result
        except (TypeError, ValueError) as exc:
            raise StudioError(f"{table.table_id} {action}: {exc}") from None
        return f"{table.table_id} {' '.join(words[1:])} -> {result}"

    def _device_actions(self, table: StudioTable) -> dict[str, tuple[str, Callable[..., Any]]]:
        if table.demo is None:
            return {}
        return actions(_device_kind(table.game), table.demo.simulator)

    def _actions(self, table: StudioTable) -> str:
        return ", ".join(sorted(self._device_actions(table))) or "none while it is stopped"

    def describe(self, table: StudioTable) -> str:
        head = f"{table.table_id:<8} {table.game:<22}"
        if table.demo is None or table.stopped:
            return f"{head} stopped"
        state = table.demo.service.core.state()
        pause = state.get("pause") or {}
        if state.get("paused"):
            return f"{head} PAUSED: {pause.get('reason')}"
        return f"{head} {state.get('phase')}: {state.get('prompt')}"

    def report(self) -> str:
        """One line: how the studio is doing."""
        running = [t for t in self.tables.values() if t.demo is not None and not t.stopped]
        services = [t.demo.service for t in running if t.demo is not None]
        states = [service.core.state() for service in services]
        paused = [
            f"{t.table_id} ({(s.get('pause') or {}).get('reason')})"
            for t, s in zip(running, states, strict=True)
            if s.get("paused")
        ]
        events = sum(service.journal.last_sequence for service in services)
        stopped = [t.table_id for t in self.tables.values() if t.stopped]
        line = f"studio {self.studio_id}: {len(running)} table(s) running, {events} event(s) journaled"
        line += f"; paused: {', '.join(paused)}" if paused else "; none paused"
        if stopped:
            line += f"; stopped: {', '.join(stopped)}"
        return line


HELP = """\
  tables                     list the tables, their game and what each waits for
  <table> stop | start       take a table away (its bus says offline) / bring it back
  <table> <action> [args]    act on the table's simulated device, e.g. `bac-01 fault F03` (a shoe jam:
                             the table pauses), `bac-01 clear`, `bac-01 unplug`, `bac-01 replug`,
                             `rou-03 fault ...`; `<table>` alone lists its device's actions"""


def _device_kind(game: str) -> str:
    """The `tablectl simulate` name of the table's main device (shoe, wheel, shaker)."""
    from drivers.registry import protocol

    simulated = protocol(next(iter(game_spec(game).devices.values()))[0]).simulated
    assert simulated is not None  # every game's main device has a simulator (the demo plays on it)
    return simulated.device


class _Discard:
    """Where each table's own demo output goes: the studio prints its report lines instead."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None


_DISCARD: Any = _Discard()


async def run_studio(
    count: int,
    *,
    mqtt_url: str | None,
    studio_id: str = "sim",
    seed: int = 7,
    faults: bool = True,
    supervisor: bool = True,
    games: tuple[str, ...] = GAME_ORDER,
    report_every: float = 10.0,
    out: TextIO = sys.stdout,
    commands: asyncio.StreamReader | None = None,
    on_ready: Callable[[SimulatedStudioRun], None] | None = None,
    signals: bool = True,
) -> int:
    """Run the studio until cancelled (or SIGINT/SIGTERM when run as the command)."""
    layout = studio_tables(count, games)
    for game in {game for _, game in layout}:
        check_demo_extras(game, embedded_broker=mqtt_url is None)
    broker: Any = None
    if mqtt_url is None:
        port = free_port()
        broker = await start_local_broker(port)
        mqtt_url = f"mqtt://127.0.0.1:{port}"
    studio = SimulatedStudioRun(studio_id, mqtt_url, faults, supervisor, out=out)
    for n, (table_id, game) in enumerate(layout):
        studio.tables[table_id] = StudioTable(table_id, game, seed + n)
    print(
        f"studio {studio_id} on {redact_url(mqtt_url)}: {count} table(s) "
        f"({', '.join(f'{t} {g}' for t, g in layout)}); `help` on standard input",
        file=out,
        flush=True,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT) if signals else ():
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    for table in studio.tables.values():
        studio.start(table)
    if on_ready is not None:
        on_ready(studio)
    helpers = [asyncio.create_task(_report(studio, report_every))]
    reader = commands if commands is not None else await stdin_reader()
    if reader is not None:
        helpers.append(asyncio.create_task(_read_commands(studio, reader)))
    try:
        await stop.wait()
    finally:
        for task in helpers:
            task.cancel()
        await asyncio.gather(*helpers, return_exceptions=True)
        await asyncio.gather(*(studio.stop(t) for t in studio.tables.values()), return_exceptions=True)
        if broker is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(broker.shutdown(), 10)
    return 0


class LocalMosquitto:
    """The system's Mosquitto on 127.0.0.1:`port`, anonymous, nothing persisted: the studio's broker when
    none is given and Mosquitto is installed. (The demo's embedded amqtt let acknowledgements time out every
    ten seconds or so as soon as two tables shared it: each table's bus then reconnected.)"""

    def __init__(self, binary: str, port: int) -> None:
        self.binary, self.port = binary, port
        self._dir = tempfile.TemporaryDirectory(prefix="tablectl-studio-broker-")
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        conf = Path(self._dir.name) / "mosquitto.conf"
        conf.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        self._process = await asyncio.create_subprocess_exec(
            self.binary,
            "-c",
            str(conf),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            # not in the terminal's process group: a Ctrl-C stops the tables first (their bus says
            # offline), then the studio stops its broker
            start_new_session=True,
        )
        for _ in range(100):  # until it listens (a second at most, usually a few milliseconds)
            if self._process.returncode is not None:
                error = (await self._process.stderr.read()).decode() if self._process.stderr else ""
                raise StudioError(f"mosquitto did not start: {error.strip()}")
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
                writer.close()
                return
            await asyncio.sleep(0.01)
        raise StudioError(f"mosquitto does not listen on 127.0.0.1:{self.port}")

    async def shutdown(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            process.terminate()
            await process.wait()
        self._dir.cleanup()


async def start_local_broker(port: int) -> Any:
    """Mosquitto if it is installed (Debian: `mosquitto`), else the demo's embedded amqtt, said with a
    warning: fine for one table, its acknowledgements time out with more."""
    binary = shutil.which("mosquitto") or next(
        (path for path in ("/usr/sbin/mosquitto",) if Path(path).is_file()), None
    )
    if binary is None:
        log.warning("mosquitto is not installed: the studio runs on the demo's embedded amqtt broker")
        return await start_embedded_broker(port)
    broker = LocalMosquitto(binary, port)
    await broker.start()
    return broker


async def _report(studio: SimulatedStudioRun, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        for table in studio.tables.values():
            task = table.task
            if task is not None and task.done() and not table.stopped:
                # a table that ended by itself (its part failed): said, and started again
                error = None if task.cancelled() else task.exception()
                log.warning("studio: table %s ended (%s): starting it again", table.table_id, error)
                studio.start(table)
        print(studio.report(), file=studio.out, flush=True)


async def _read_commands(studio: SimulatedStudioRun, reader: asyncio.StreamReader) -> None:
    while line := await reader.readline():
        try:
            said = await studio.command(line.decode(errors="replace"))
        except StudioError as exc:
            said = str(exc)
        except Exception as exc:  # a simulator's action that failed: said, and the next line is read
            log.exception("studio: %r failed", line.decode(errors="replace").strip())
            said = f"failed: {exc}"
        if said:
            print(said, file=studio.out, flush=True)
