"""`tablectl run` in its own process, as a table runs it: what the end-to-end tests, the chaos campaign
(bench/chaos.py) and the console's screenshots (docs/screenshots.py) start, kill -9 and restart.

`ServiceProcess` runs the service from the repository (its working directory, so the checkout's own code
runs), optionally with a hook: Python source run in that process first, which may wrap the service's code to
stop it at a chosen instant (right after a journal commit, between a commit and its ACK). `TableProcess` is
one table of a studio whose broker has passwords. `write_config` and the helpers below are the single
baccarat table the service tests play (`TABLE`, on `BASE`, a shoe loaded with `CARDS`).

Needs paho-mqtt and pytest (through `controller.testing.mosquitto`): pyproject's `test` extra.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from controller.config import TableConfig
from controller.service import TableService
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until
from drivers.shoe.simulator import ShoeSimulator

#: the repository: the working directory of the processes, so that `-m controller.cli` runs this checkout
REPO = Path(__file__).resolve().parents[2]
TABLE = "bac-e2e"
BASE = f"studio/s1/table/{TABLE}"
#: Player 9S KC (natural 9) against Banker 8D 5H (3): four cards, player wins; then a second round's cards
CARDS = ["9S", "8D", "KC", "5H", "2C", "3D", "4H", "TS", "AS", "QD"]

#: what a hook ends with: the service's own entry point, with the arguments after `-c`
RUN_CLI = """
import sys
from controller.cli import main
sys.exit(main(sys.argv[1:]))
"""


@contextlib.asynccontextmanager
async def table_shoe(tmp_path: Path) -> AsyncIterator[ShoeSimulator]:
    """The table's shoe, loaded with `CARDS` five times and no cut card, on the pty `tmp_path/shoe.pty`."""
    simulator = ShoeSimulator(cards=CARDS * 5, cut_position=None)
    await simulator.start_pty(str(tmp_path / "shoe.pty"))
    try:
        yield simulator
    finally:
        await simulator.stop()


def write_table_config(
    tmp_path: Path,
    broker: MosquittoBroker,
    *,
    table_id: str,
    game: str,
    device: str,
    protocol: str,
    port: str,
    capture: Path | None = None,
    game_settings: str = "",
    extra: str = "",
    keepalive: int | None = 5,
) -> Path:
    """`tmp_path/table.toml`: table `table_id` of studio `s1` playing `game` on `broker`, its one device
    `device` speaking `protocol` on `port` (captured to `capture` if given), data in `tmp_path/data`; then
    `game_settings` (the lines of its `[game]` section, if any) and `extra` (more sections, as TOML)."""
    path = tmp_path / "table.toml"
    lines = [
        "[table]",
        'studio_id = "s1"',
        f'table_id = "{table_id}"',
        f'game = "{game}"',
        f'data_dir = "{tmp_path / "data"}"',
        "",
        "[broker]",
        f'url = "{broker.url}"',
        *([f"keepalive = {keepalive}"] if keepalive is not None else []),
        "",
        f"[devices.{device}]",
        f'protocol = "{protocol}"',
        f'port = "{port}"',
        *([f'capture = "{capture}"'] if capture is not None else []),
        "",
        *(["[game]", game_settings.strip(), ""] if game_settings else []),
        extra.strip(),
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_config(tmp_path: Path, broker: MosquittoBroker, port: str, panel_port: int | None = None) -> Path:
    """`tmp_path/table.toml`: table `TABLE` (baccarat, 8 decks) on `broker`, its shoe on `port` (captured to
    `data/shoe.jsonl`), data in `tmp_path/data`, the panel on `panel_port` if given."""
    return write_table_config(
        tmp_path,
        broker,
        table_id=TABLE,
        game="baccarat",
        device="shoe",
        protocol="shoe-line",
        port=port,
        capture=tmp_path / "data" / "shoe.jsonl",
        game_settings="betting_seconds = 1.0\nround_gap_seconds = 0.5\ndecks = 8",
        extra=f"[panel]\nenabled = true\nport = {panel_port}" if panel_port else "",
    )


class ServiceProcess:
    """`tablectl -v run --config CONFIG` in a subprocess, its output appended to `log`.

    `hook`: Python source run in that process before the service (it ends by running `tablectl`, see
    `RUN_CLI`); `env`: variables added to this process's environment for it."""

    def __init__(
        self, config: Path, log: Path, *, hook: str | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.config, self.log = config, log
        self.hook = hook
        self.env = dict(env) if env is not None else None
        self.process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        start = ["-m", "controller.cli"] if self.hook is None else ["-c", self.hook + RUN_CLI]
        return [sys.executable, *start, "-v", "run", "--config", str(self.config)]

    def start(self) -> None:
        env = None if self.env is None else {**os.environ, **self.env}
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command(), cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def kill9(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 15 s; the exit code (None: never started)."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


class TableProcess(ServiceProcess):
    """`tablectl run` for one baccarat table of `studio`, as systemd runs it: broker user `table-<table>`, its
    password `pw-<table>` in the environment; config `<table>.toml`, log `<table>.log` and data `<table>/` in
    `tmp_path`."""

    def __init__(
        self, tmp_path: Path, broker: MosquittoBroker, table: str, port: str, studio: str = "s1"
    ) -> None:
        super().__init__(
            tmp_path / f"{table}.toml",
            tmp_path / f"{table}.log",
            env={"TABLECTL__BROKER__PASSWORD": f"pw-{table}"},
        )
        self.table = table
        self.config.write_text(
            f"""
[table]
studio_id = "{studio}"
table_id = "{table}"
game = "baccarat"
data_dir = "{tmp_path / table}"

[broker]
url = "{broker.url}"
username = "table-{table}"
keepalive = 5

[devices.shoe]
protocol = "shoe-line"
port = "{port}"

[game]
betting_seconds = 1.0
round_gap_seconds = 0.5
decks = 8
"""
        )


def events(recorder: MqttRecorder, kind: str = "#") -> list[dict[str, Any]]:
    """The events of `kind` (all: "#") the recorder saw on table `TABLE`, as JSON."""
    return [m.json() for m in recorder.on(f"{BASE}/events/{kind}")]


def latest(recorder: MqttRecorder, topic: str) -> dict[str, Any]:
    result: dict[str, Any] = recorder.on(f"{BASE}/{topic}")[-1].json()
    return result


async def wait_event(recorder: MqttRecorder, kind: str, count: int = 1, timeout: float = 15) -> list[dict]:
    await recorder.wait_for_count(f"{BASE}/events/{kind}", count, timeout=timeout)
    return events(recorder, kind)


async def draw(shoe: ShoeSimulator, recorder: MqttRecorder, n: int) -> None:
    """The dealer draws `n` cards, each once the gate opens, each seen dealt before the next."""
    for _ in range(n):
        before = len(events(recorder, "card.dealt"))
        await wait_until(shoe.draw, timeout=10, what="the shoe's gate to open for a draw")
        await recorder.wait_for_count(f"{BASE}/events/card.dealt", before + 1, timeout=10)


@contextlib.asynccontextmanager
async def running_service(config: TableConfig) -> AsyncIterator[TableService]:
    """`TableService` in this process (its bus, links and journal real), connected to its broker; stopped
    (and waited for) on exit."""
    service = TableService(config)
    task = asyncio.create_task(service.run())
    try:
        await wait_until(lambda: service.bus.connected, what="the table to connect")
        yield service
    finally:
        service.stop()
        await asyncio.wait_for(task, 10)
