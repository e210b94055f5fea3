"""What the benchmarks that run a real `tablectl run` process set up around it (`memory.py`, `startup.py`).

A real Mosquitto on a free port, `tablectl simulate shoe --deal-every ...` on a pty for the table's shoe, a
log file both processes write to, and a paho subscriber in the benchmark's process. Imported as a sibling
module: run the benchmarks as `python bench/<name>.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import latency as common
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

BENCH_DIR = Path(__file__).resolve().parent


def tablectl_command() -> list[str]:
    script = Path(sys.executable).with_name("tablectl")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "controller.cli"]


@dataclass
class Rig:
    #: the Mosquitto binary (the machine's report names its version)
    binary: str
    broker: common.MosquittoBroker
    #: where the shoe (and the table, if the benchmark passes it on) write their output
    log: IO[bytes]
    #: the pty the simulated shoe deals on: the table's `[devices.shoe] port`
    shoe_path: str


@contextlib.contextmanager
def broker_and_shoe(workdir: Path, *, deal_every: float, seed: int) -> Iterator[Rig]:
    """Mosquitto and a simulated shoe dealing every `deal_every` seconds, both stopped on the way out."""
    binary = common.find_binary("mosquitto", "/usr/sbin", "/usr/local/sbin")
    if binary is None:
        raise SystemExit("mosquitto is not installed (Debian: apt-get install mosquitto)")
    broker = common.MosquittoBroker(binary, workdir / "mosquitto", persistence=False)
    broker.start()
    log = (workdir / "tablectl.log").open("ab")
    shoe = subprocess.Popen(
        [
            *tablectl_command(),
            "simulate",
            "shoe",
            "--pty",
            str(workdir / "shoe"),
            "--deal-every",
            str(deal_every),
            "--seed",
            str(seed),
        ],
        stdout=subprocess.PIPE,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert shoe.stdout is not None
        # the simulator's first line is the path of its pty
        shoe_path = shoe.stdout.readline().decode().strip()
        yield Rig(binary, broker, log, shoe_path)
    finally:
        shoe.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            shoe.wait(10)
        broker.stop()
        log.close()


class Subscriber:
    """A paho client subscribed to `topic` before the constructor returns; each message goes to
    `_on_message` on paho's thread."""

    def __init__(self, port: int, *, client_id: str, topic: str) -> None:
        self._ready = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
        self.client.on_connect = lambda c, *_: c.subscribe(topic, qos=1)
        self.client.on_subscribe = lambda *_: self._ready.set()
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        if not self._ready.wait(10):
            raise RuntimeError("no SUBACK")

    def _on_message(self, client: Any, userdata: Any, message: mqtt.MQTTMessage) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def add_scratch_and_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None, help="parent of the scratch dir (a real disk)")
    parser.add_argument("--output", type=Path, default=None, help="JSON result path")


def write_result(report: dict[str, Any], output: Path | None, name: str, started: dt.datetime) -> Path:
    """The report as JSON at `output`, by default `bench/results/<name>-<YYYYMMDD>.json`; its path."""
    output = output or BENCH_DIR / "results" / f"{name}-{started:%Y%m%d}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return output
