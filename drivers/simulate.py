"""`tablectl simulate`: serve one simulated device on a pty or a TCP port, as a real one would be.

A studio engineer tries a table's TOML and the MQTT side without hardware: the device's path (or
`socket://127.0.0.1:PORT`) goes in the table's `devices.<name>.port`. The simulators are the test suite's
(`drivers/*/simulator.py` on `drivers.sim_port`), with their fault switches (`--faults name=rate,...`).

The first line on standard output is what a host opens (the pty path, or `socket://...`); then each action
taken is logged. Lines on standard input act on the device (`help` lists them); the dealer of a shoe can
also be automatic (`--deal-every SECONDS`: one card per period whenever the shoe's gate is open, a new
shuffled shoe when it is empty). It runs until SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import selectors
import signal
import sys
from collections.abc import Callable
from typing import Any

from drivers.registry import SIMULATED, Actions, Simulated, SimulatorSettings, common_actions

log = logging.getLogger(__name__)

#: the devices `tablectl simulate` serves
DEVICES = tuple(SIMULATED)


class SimulateError(ValueError):
    """A bad option, worded for the operator."""


def simulated(device: str) -> Simulated:
    """How `tablectl simulate <device>` serves the device (its protocol's record says)."""
    record = SIMULATED.get(device)
    if record is None or record.simulated is None:
        raise SimulateError(f"unknown device {device!r}; one of {', '.join(DEVICES)}")
    return record.simulated


def parse_faults(device: str, text: str | None, seed: int) -> Any:
    """`name=value,...` into the device's faults dataclass (its fields are the switches; `seed` too)."""
    cls = simulated(device).faults
    fields = {field.name: field for field in dataclasses.fields(cls)}
    values: dict[str, Any] = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or name not in fields:
            known = ", ".join(sorted(n for n in fields if n != "seed"))
            raise SimulateError(f"--faults {item!r}: the {device} simulator's switches are: {known}")
        default = fields[name].default
        try:
            if isinstance(default, bool):
                values[name] = value.strip().lower() in ("1", "true", "yes", "on")
            elif isinstance(default, int):
                values[name] = int(value)
            elif isinstance(default, float):
                values[name] = float(value)
            else:
                raise SimulateError(f"--faults {name}: not a switch that takes a number")
        except ValueError:
            raise SimulateError(f"--faults {name}={value!r}: not a number") from None
        if isinstance(values[name], float) and not 0.0 <= values[name] <= 1.0 and name.endswith("_rate"):
            raise SimulateError(f"--faults {name}: a rate is between 0 and 1")
    if "seed" in fields:
        values.setdefault("seed", seed)
    return cls(**values)


#: the longest a simulated port sleeps between polls (`SimulatedPort.idle_sleep`) under `tablectl simulate`
IDLE_SLEEP_SECONDS = 0.5


def actions(device: str, simulator: Any) -> Actions:
    """What a line on standard input does: name -> (help, function of the line's arguments)."""
    return common_actions(simulator) | simulated(device).actions(simulator)


def stdin_can_be_watched() -> bool:
    """Whether the event loop can wait on standard input: a terminal, a pipe or a socket can be, /dev/null or
    a regular file cannot (epoll refuses them). asyncio's `connect_read_pipe` accepts them all the same and
    fails later, in a callback of its own, with a PermissionError traceback on the log (seen when run in the
    background, under nohup or systemd)."""
    if sys.stdin is None:
        return False
    try:
        fd = sys.stdin.fileno()
    except (OSError, ValueError):
        return False
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ)
        except (OSError, ValueError):
            return False
    return True


async def stdin_reader() -> asyncio.StreamReader | None:
    """Standard input as a stream of command lines, or None when it cannot be watched (signals only)."""
    if not stdin_can_be_watched():
        log.info("standard input is not a terminal or a pipe: no commands on stdin, signals only")
        return None
    reader = asyncio.StreamReader()
    try:
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), sys.stdin
        )
    except (OSError, ValueError):
        return None  # no usable standard input after all: signals only
    return reader


async def _read_commands(device: str, simulator: Any) -> None:
    reader = await stdin_reader()
    if reader is None:
        return
    table = actions(device, simulator)
    while line := await reader.readline():
        words = line.decode(errors="replace").split()
        if not words:
            continue
        if words[0] == "help" or words[0] not in table:
            for name, (text, _) in sorted(table.items()):
                print(f"  {name}: {text}", file=sys.stderr)
            continue
        try:
            result = table[words[0]][1](*words[1:])
            if asyncio.iscoroutine(result):
                result = await result
        except (TypeError, ValueError) as exc:
            print(f"{words[0]}: {exc}", file=sys.stderr)
            continue
        log.info("%s -> %s", " ".join(words), result)


async def serve(
    device: str,
    *,
    pty: str | None = None,
    tcp: int | None = None,
    faults: str | None = None,
    seed: int = 1,
    speed: float = 1.0,
    decks: int = 8,
    deal_every: float = 0.0,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the simulated device until cancelled (or SIGINT/SIGTERM when run as the command)."""
    serving = simulated(device)
    if deal_every and serving.auto_deal is None:
        dealt = ", ".join(name for name, p in SIMULATED.items() if p.simulated and p.simulated.auto_deal)
        raise SimulateError(f"--deal-every is for a {dealt} (a {device} plays by itself or on stdin)")
    if speed <= 0:
        raise SimulateError("--speed must be positive")
    settings = SimulatorSettings(
        seed=seed, faults=parse_faults(device, faults, seed), speed=speed, decks=decks
    )
    simulator = serving.make(settings)
    port = getattr(simulator, "port", None)
    if port is not None:
        # a simulator serving a table for hours sleeps until its device is next due (a heartbeat, a
        # retransmission, a timed step), not 100 times a second
        port.idle_sleep = IDLE_SLEEP_SECONDS
    url = await (simulator.start_tcp(port=tcp) if tcp is not None else simulator.start_pty(pty))
    (ready or (lambda u: print(u, flush=True)))(url)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    tasks = [asyncio.create_task(_read_commands(device, simulator))]
    if deal_every and serving.auto_deal is not None:
        tasks.append(asyncio.create_task(serving.auto_deal(simulator, deal_every, settings)))
    try:
        await stop.wait()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await simulator.stop()
