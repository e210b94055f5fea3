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
import signal
import sys
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

DEVICES = ("shoe", "wheel", "shuffler", "shaker")


class SimulateError(ValueError):
    """A bad option, worded for the operator."""


def faults_class(device: str) -> type[Any]:
    if device == "shoe":
        from drivers.shoe.simulator import ShoeFaults

        return ShoeFaults
    if device == "wheel":
        from drivers.wheel.simulator import WheelFaults

        return WheelFaults
    if device == "shuffler":
        from drivers.shuffler.simulator import ShufflerFaults

        return ShufflerFaults
    if device == "shaker":
        from drivers.shaker.simulator import ShakerFaults

        return ShakerFaults
    raise SimulateError(f"unknown device {device!r}; one of {', '.join(DEVICES)}")


def parse_faults(device: str, text: str | None, seed: int) -> Any:
    """`name=value,...` into the device's faults dataclass (its fields are the switches; `seed` too)."""
    cls = faults_class(device)
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


def build_simulator(device: str, *, seed: int, faults: Any, speed: float, decks: int) -> Any:
    if device == "shoe":
        from drivers.shoe.simulator import ShoeSimulator

        return ShoeSimulator(decks=decks, seed=seed, faults=faults)
    if device == "wheel":
        from drivers.wheel.simulator import WheelSimulator

        return WheelSimulator(seed=seed, speed=speed, faults=faults)
    if device == "shuffler":
        from drivers.shuffler.simulator import ShufflerSimulator

        return ShufflerSimulator(speed=speed, faults=faults)
    from drivers.shaker.simulator import ShakerSimulator

    return ShakerSimulator(speed=speed, seed=seed, faults=faults)


def actions(device: str, simulator: Any) -> dict[str, tuple[str, Callable[..., Any]]]:
    """What a line on standard input does: name -> (help, function of the line's arguments)."""
    table: dict[str, tuple[str, Callable[..., Any]]] = {
        "unplug": ("pull the cable", simulator.unplug),
        "replug": ("put the cable back", simulator.replug),
        "silence": (
            "the device stops talking (silence off: talks again)",
            lambda on="on": simulator.silence(on != "off"),
        ),
        "noise": ("put garbage bytes on the line", lambda: simulator.inject(b"\x00\xff#~noise~#\r\n")),
    }
    if device == "shoe":
        table |= {
            "draw": ("the dealer draws a card", simulator.draw),
            "noread": ("the next card is not read", simulator.force_noread),
            "rescan": ("the dealer passes the unread card again", simulator.rescan),
            "fault": ("FAULT <code> (e.g. fault COVER_OPEN)", lambda code="FAULT": simulator.fault(code)),
            "clear": ("the fault is cleared", simulator.clear_fault),
        }
    elif device == "shuffler":
        table |= {
            "load": ("load <decks> decks (default 8)", lambda decks="8": simulator.load_decks(int(decks))),
            "take": ("the dealer takes the shuffled cards", simulator.take_output),
            "jam": ("the next shuffle jams", simulator.jam_next),
            "open": ("open the door", simulator.open_door),
            "close": ("close the door", simulator.close_door),
        }
    elif device == "shaker":
        table |= {
            "open": ("open the dome", simulator.open_dome),
            "close": ("close the dome", simulator.close_dome),
            "motor": ("the motor fails at the next shake", simulator.motor_fault_next),
            "fault": ("FAULT <code>", lambda code="M01": simulator.fault(code)),
            "clear": ("the fault is cleared", simulator.clear_fault),
        }
    return table


async def _auto_deal(simulator: Any, period: float, seed: int, decks: int) -> None:
    """A dealer who draws a card every `period` seconds whenever the gate is open; a new shoe when empty."""
    shoe = 0
    while True:
        await asyncio.sleep(period)
        if simulator.remaining == 0:
            shoe += 1
            from drivers.shoe.simulator import DEFAULT_CUT_POSITION

            simulator.load_new_deck(seed + shoe, decks, DEFAULT_CUT_POSITION)
            log.info("a new shoe (%d decks)", decks)
            continue
        simulator.draw()


async def _read_commands(device: str, simulator: Any) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except (OSError, ValueError):
        return  # no usable standard input (e.g. /dev/null under a supervisor): signals only
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
    if device not in DEVICES:
        raise SimulateError(f"unknown device {device!r}; one of {', '.join(DEVICES)}")
    if deal_every and device != "shoe":
        raise SimulateError("--deal-every is for a shoe (a wheel plays by itself)")
    if speed <= 0:
        raise SimulateError("--speed must be positive")
    simulator = build_simulator(
        device, seed=seed, faults=parse_faults(device, faults, seed), speed=speed, decks=decks
    )
    url = await (simulator.start_tcp(port=tcp) if tcp is not None else simulator.start_pty(pty))
    (ready or (lambda u: print(u, flush=True)))(url)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    tasks = [asyncio.create_task(_read_commands(device, simulator))]
    if deal_every:
        tasks.append(asyncio.create_task(_auto_deal(simulator, deal_every, seed, decks)))
    try:
        await stop.wait()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await simulator.stop()
