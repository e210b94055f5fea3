"""End-to-end latency: shoe bytes written on a pty -> the event at an MQTT subscriber on a real Mosquitto.

Two systems are measured in the same run, with the same cards, the same device bytes and the same subscriber:

- tablectl: the real `TableService` (shoe-line session, baccarat flow, SQLite journal in WAL mode with
  synchronous=FULL, so every event is on disk before it is published), publishing `card.dealt` events;
- a naive bridge as the baseline: pyserial `readline()` -> paho `publish(qos=1)`, no parsing, no journal.

The benchmark itself is the shoe: it writes `CARD <seq> <code>*<CK>\\r\\n` on the master side of a
pseudo-terminal pair (the system under test opens the slave path, as it would open /dev/ttyACM0), then waits
for the matching message at a QoS 1 subscriber before it writes the next card. Latency is the subscriber's
receive time minus the write time, both from `time.perf_counter_ns()` in this process.

Run: `python bench/latency.py` (see bench/README.md). This is a benchmark, not a test: it asserts nothing and
writes `bench/results/latency.json` (date, machine and commit inside).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import sqlite3
import statistics
import sys
import threading
import time
import tty
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import common
import paho.mqtt.client as mqtt
import serial
from paho.mqtt.enums import CallbackAPIVersion

from controller.cards import Card, full_deck
from controller.games.baccarat import next_position
from drivers.line.framing import FrameError, encode_line, parse_frame, seq_text

log = logging.getLogger("bench.latency")

DECKS = 8
#: the cut card comes out when this few cards are left: always enough for one more (last) round
CUT_CARD_REMAINING = 20
WARMUP_CARDS = 20
HEARTBEAT_SECONDS = 1.0
STUDIO_ID = "bench"
TABLE_ID = "bac-bench"
NAIVE_TOPIC = "bench/naive/shoe"
#: the pause between rounds for the naive bridge if tablectl measured none (the service's tick interval)
DEFAULT_ROUND_GAP_SECONDS = 0.1


# --- what is dealt --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScriptedRound:
    shoe: int
    cards: tuple[str, ...]
    positions: tuple[str, ...]
    cut_card_before: bool  # the cut card comes out at the start of this round: it is the shoe's last


def shuffled_shoe(seed: int, shoe_number: int) -> list[Card]:
    cards = full_deck() * DECKS
    random.Random(seed * 1_000 + shoe_number).shuffle(cards)
    return cards


def deal_script(seed: int, cards_wanted: int) -> list[ScriptedRound]:
    """Whole baccarat rounds, in shoe order, until at least `cards_wanted` cards are out.

    The rounds follow the punto banco drawing rules, so each round ends exactly where tablectl ends it and
    the next card is only written once the next round is open. When fewer than CUT_CARD_REMAINING cards are
    left, the cut card comes out and that round is the shoe's last; the next round starts a new shoe.
    """
    rounds: list[ScriptedRound] = []
    total = 0
    shoe_number = 0
    while total < cards_wanted:
        shoe_number += 1
        shoe = shuffled_shoe(seed, shoe_number)
        taken = 0
        while total < cards_wanted:
            last_round = len(shoe) - taken < CUT_CARD_REMAINING
            player: list[Card] = []
            banker: list[Card] = []
            cards: list[str] = []
            positions: list[str] = []
            while (position := next_position(player, banker)) is not None:
                card = shoe[taken]
                taken += 1
                (player if position == "player" else banker).append(card)
                cards.append(card.code)
                positions.append(position)
            rounds.append(ScriptedRound(shoe_number, tuple(cards), tuple(positions), last_round))
            total += len(cards)
            if last_round:
                break
    return rounds


@dataclass(frozen=True, slots=True)
class Pacing:
    card_timeout: float  # a card whose message has not arrived by then is counted lost
    phase_timeout: float  # hard limit for one system's whole measurement
    card_gap: float  # idle time between a card's arrival and the next write (0: back to back)
    subscriber: str = "process"  # "process": its own process; "thread": in this process (shares the GIL)


# --- the device: the benchmark writes shoe lines on the master side of a pty ------------------------------


class PtyShoe:
    """A shoe on a pseudo-terminal: the system under test opens `path`, this writes lines on the master.

    Lines from the host (ACK, LOCK/UNLOCK, STATUS?) are read, counted and answered with STATE as a shoe
    would. Unlike a real shoe this one never retransmits: a card is written once, and cards the host never
    acknowledged are reported instead.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.master_fd, self.slave_fd = os.openpty()
        tty.setraw(self.slave_fd)
        self.path = os.ttyname(self.slave_fd)
        self.seq = 0
        self.host_lines: dict[str, int] = {}
        self.acked: set[str] = set()
        self.seqs_sent: list[str] = []
        self.state = "READY"
        self._host_buffer = bytearray()
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._started = time.monotonic()

    def start(self) -> None:
        os.set_blocking(self.master_fd, False)
        self.loop.add_reader(self.master_fd, self._on_host_bytes)
        self._heartbeat_task = self.loop.create_task(self._heartbeats())

    def _on_host_bytes(self) -> None:
        try:
            data = os.read(self.master_fd, 4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:  # EIO: nobody has the slave open right now
            return
        self._host_buffer += data
        *lines, rest = self._host_buffer.split(b"\n")
        self._host_buffer = bytearray(rest)
        for line in lines:
            self._host_line(bytes(line.rstrip(b"\r")))

    def _host_line(self, line: bytes) -> None:
        body = parse_frame(line)
        if isinstance(body, FrameError):
            self._count(f"bad frame ({body.reason})")
            return
        name, _, argument = body.partition(" ")
        self._count(name)
        if name == "ACK":
            self.acked.add(argument)
        # answer like a real shoe, so the host sees the states it asked for (the gate opens every round)
        elif name == "STATUS?":
            self.write(f"STATE {self.state}")
        elif name in ("LOCK", "UNLOCK"):
            self.state = "LOCKED" if name == "LOCK" else "READY"
            self.write(f"STATE {self.state}")

    def _count(self, name: str) -> None:
        self.host_lines[name] = self.host_lines.get(name, 0) + 1

    async def _heartbeats(self) -> None:
        # the driver declares the link down after 3 s without a byte: a real shoe sends HB every second
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            self.write(f"HB {int(time.monotonic() - self._started)}")

    def write(self, body: str) -> int:
        """Write one framed line; returns perf_counter_ns() taken just before the write."""
        line = encode_line(body)
        stamp = time.perf_counter_ns()
        written = os.write(self.master_fd, line)
        if written != len(line):  # a 20-byte write to a drained pty is never partial; say so if it ever is
            raise OSError(f"short write on the pty master: {written} of {len(line)} bytes")
        return stamp

    def next_seq(self) -> str:
        self.seq = (self.seq + 1) % 10_000
        return seq_text(self.seq)

    def write_card(self, code: str) -> tuple[str, int]:
        seq = self.next_seq()
        self.seqs_sent.append(seq)
        return seq, self.write(f"CARD {seq} {code}")

    def write_cut(self) -> tuple[str, int]:
        seq = self.next_seq()
        self.seqs_sent.append(seq)
        return seq, self.write(f"CUT {seq}")

    async def close(self) -> None:
        if self._heartbeat_task is not None:
            self._heartbeat_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat_task
        self.loop.remove_reader(self.master_fd)
        os.close(self.master_fd)
        os.close(self.slave_fd)


# --- the subscriber --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Received:
    stamp_ns: int
    topic: str
    payload: bytes


class _Messages:
    """What the benchmark reads from either subscriber: its messages, in the order they came."""

    def __init__(self) -> None:
        self.messages: asyncio.Queue[Received] = asyncio.Queue()

    async def get(self, deadline: float) -> Received | None:
        """The next message, or None at the deadline (time.monotonic())."""
        remaining = deadline - time.monotonic()
        if self.messages.empty() and remaining <= 0:
            return None
        try:
            return await asyncio.wait_for(self.messages.get(), max(remaining, 0))
        except TimeoutError:
            return None


class Subscriber(_Messages):
    """A paho QoS 1 subscriber in its own network thread.

    The receive stamp is taken in paho's thread the moment the message is handed over, so it never waits for
    the asyncio loop (which the system under test may be busy with); the message then goes to an asyncio
    queue, which wakes the loop once per message and costs nothing while idle.
    """

    def __init__(self, port: int, topic: str, client_id: str) -> None:
        self.topic = topic
        self.port = port
        self.loop = asyncio.get_running_loop()
        super().__init__()
        self._subscribed = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = self._on_subscribe
        self.client.on_message = self._on_message

    def _on_connect(self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, props: Any) -> None:
        client.subscribe(self.topic, qos=1)

    def _on_subscribe(self, client: mqtt.Client, userdata: Any, mid: int, reasons: Any, props: Any) -> None:
        self._subscribed.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        # the stamp is the first thing taken: everything after it is the benchmark's own bookkeeping
        stamp = time.perf_counter_ns()
        self.loop.call_soon_threadsafe(
            self.messages.put_nowait, Received(stamp, message.topic, bytes(message.payload))
        )

    async def __aenter__(self) -> Subscriber:
        self.client.connect("127.0.0.1", self.port)
        self.client.loop_start()
        if not await asyncio.to_thread(self._subscribed.wait, 10):
            raise RuntimeError(f"no SUBACK for {self.topic} within 10 s")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.client.disconnect()
        self.client.loop_stop()


#: the subscriber in its own process: prints "ready" after its SUBACK, then one line per message:
#: `<perf_counter_ns at receipt> <topic> <payload as hex>` (CLOCK_MONOTONIC: the same clock in every process)
_SUBSCRIBER_PROCESS = """
import sys, time, threading
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
port, topic, client_id = int(sys.argv[1]), sys.argv[2], sys.argv[3]
out = sys.stdout
lock = threading.Lock()
def on_connect(client, userdata, flags, reason, props):
    client.subscribe(topic, qos=1)
def on_subscribe(client, userdata, mid, reasons, props):
    out.write("ready\\n"); out.flush()
def on_message(client, userdata, message):
    stamp = time.perf_counter_ns()
    out.write(f"{stamp} {message.topic} {bytes(message.payload).hex()}\\n"); out.flush()
client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
client.on_connect, client.on_subscribe, client.on_message = on_connect, on_subscribe, on_message
client.connect("127.0.0.1", port)
client.loop_start()
sys.stdin.read()
client.disconnect()
client.loop_stop()
"""


class ProcessSubscriber(_Messages):
    """The same QoS 1 subscriber as `Subscriber`, in a process of its own (as a rules engine is): it takes
    its receive stamp with no GIL shared with the system under test. The default."""

    def __init__(self, port: int, topic: str, client_id: str) -> None:
        super().__init__()
        self.args = [sys.executable, "-c", _SUBSCRIBER_PROCESS, str(port), topic, client_id]
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ProcessSubscriber:
        self._process = await asyncio.create_subprocess_exec(
            *self.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 24
        )
        assert self._process.stdout is not None
        line = await asyncio.wait_for(self._process.stdout.readline(), 10)
        if line.strip() != b"ready":
            raise RuntimeError(f"the subscriber process did not subscribe: {line!r}")
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        while line := await self._process.stdout.readline():
            stamp, topic, payload = line.decode().split(" ")
            self.messages.put_nowait(Received(int(stamp), topic, bytes.fromhex(payload.strip())))

    async def __aexit__(self, *exc: object) -> None:
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                await asyncio.wait_for(self._process.wait(), 5)
            except TimeoutError:
                self._process.kill()
                await self._process.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader


def make_subscriber(kind: str, port: int, topic: str, client_id: str) -> Subscriber | ProcessSubscriber:
    if kind == "thread":
        return Subscriber(port, topic, client_id)
    return ProcessSubscriber(port, topic, client_id)


# --- results -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class PhaseResult:
    name: str
    latencies_ns: list[int] = field(default_factory=list)  # every card that arrived, warm-up included
    cards_written: int = 0
    lost: int = 0
    rejected: int = 0
    position_mismatches: int = 0
    notes: list[str] = field(default_factory=list)
    round_gaps_ns: list[int] = field(default_factory=list)
    #: tablectl: per measured card, the time its path spent in journal appends (fsync included)
    commit_ns: list[int] = field(default_factory=list)
    #: and of that, in their COMMIT statements (the WAL's write and fdatasync)
    commit_statement_ns: list[int] = field(default_factory=list)
    #: tablectl: every call of each of the service's `TIMED_PARTS` in the phase (ns)
    parts_ns: dict[str, list[int]] = field(default_factory=dict)
    #: append + fdatasync probes of the journal's disk, taken just before this phase (ns)
    fsync_ns: list[int] = field(default_factory=list)
    host_lines: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def measured(self, warmup: int) -> list[int]:
        return self.latencies_ns[warmup:]


# --- phase 1: tablectl --------------------------------------------------------------------------------


class EventStream:
    """tablectl's events as the subscriber saw them, with just enough state to pace the dealing."""

    def __init__(self, subscriber: Subscriber | ProcessSubscriber) -> None:
        self.subscriber = subscriber
        self.open_rounds: dict[str, int] = {}  # round id -> receive stamp of its round.opened
        self.closed_rounds: set[str] = set()
        self.counts: dict[str, int] = {}
        self.device_online = False
        self.shoes_started = 0
        self.cut_cards = 0
        self.last_opened: str | None = None

    def current_round(self) -> str | None:
        for round_id in reversed(list(self.open_rounds)):
            if round_id not in self.closed_rounds:
                return round_id
        return None

    def _note(self, envelope: dict[str, Any], stamp: int) -> None:
        kind = envelope.get("type", "?")
        self.counts[kind] = self.counts.get(kind, 0) + 1
        data = envelope.get("data", {})
        if kind == "round.opened":
            self.open_rounds[data["round_id"]] = stamp
            self.last_opened = data["round_id"]
        elif kind in ("round.closed", "round.voided"):
            self.closed_rounds.add(data["round_id"])
        elif kind == "device.online":
            self.device_online = True
        elif kind in ("device.offline", "device.fault"):
            self.device_online = False
        elif kind == "shoe.started":
            self.shoes_started += 1
        elif kind == "shoe.cut_card":
            self.cut_cards += 1

    async def until(
        self, deadline: float, wanted: Callable[[dict[str, Any]], bool] | None = None
    ) -> tuple[dict[str, Any], int] | None:
        """Consume events until `wanted(envelope)` (returned with its receive stamp), or None at the deadline.

        With `wanted=None`, consume whatever arrives until the deadline (state only).
        """
        while True:
            message = await self.subscriber.get(deadline)
            if message is None:
                return None
            try:
                envelope = json.loads(message.payload)
            except ValueError:
                log.warning("non-JSON message on %s", message.topic)
                continue
            self._note(envelope, message.stamp_ns)
            if wanted is not None and wanted(envelope):
                return envelope, message.stamp_ns

    async def wait_state(self, deadline: float, condition: Callable[[], bool]) -> bool:
        while not condition():
            if await self.until(deadline, lambda _envelope: condition()) is None:
                return condition()
        return True


def tablectl_config(port: int, pty_path: str, data_dir: Path) -> dict[str, Any]:
    return {
        "table": {
            "studio_id": STUDIO_ID,
            "table_id": TABLE_ID,
            "game": "baccarat",
            "data_dir": str(data_dir),
        },
        "broker": {"url": f"mqtt://127.0.0.1:{port}", "protocol": "5"},
        "devices": {"shoe": {"protocol": "shoe-line", "port": pty_path}},
        "game": {"betting_closes_on_first_card": True, "round_gap_seconds": 0, "decks": DECKS},
    }


def time_journal_commits(service: Any) -> list[tuple[int, int, int]]:
    """(start, COMMIT's start, end) perf_counter_ns of every journal append (one durable commit each), by
    wrapping the service's journal: the benchmark's own instrument, so the report can say how much of a
    card's latency was the journal, and how much of that its COMMIT statement (the disk's part: the WAL's
    write and fdatasync). The COMMIT's start comes from the connection's statement trace (one Python call
    per statement, a microsecond: the instrument's own cost, in the figures it reports)."""
    commits: list[tuple[int, int, int]] = []
    append = service.journal.append
    commit_started = [0]

    def traced(statement: str) -> None:
        if statement == "COMMIT":
            commit_started[0] = time.perf_counter_ns()

    def timed_append(*args: Any, **kwargs: Any) -> Any:
        start = commit_started[0] = time.perf_counter_ns()
        try:
            return append(*args, **kwargs)
        finally:
            commits.append((start, commit_started[0], time.perf_counter_ns()))

    service.journal._db.set_trace_callback(traced)
    service.journal.append = timed_append
    return commits


#: the service's steps timed in every run, by wrapping them on the service's own objects (a card's path:
#: the bytes through framing, core and flow; its state record; the append; the publish of what it journaled)
TIMED_PARTS = {
    "feed (framing, core, flow)": ("machine", "feed"),
    "state record": ("core", "export_state_json"),
    "publish (events_committed)": ("bus", "events_committed"),
}


def time_parts(service: Any) -> dict[str, list[int]]:
    """Every call's duration (ns) of each of `TIMED_PARTS`, from now on; two clock reads a call."""
    timed: dict[str, list[int]] = {}
    for label, (owner_name, method) in TIMED_PARTS.items():
        owner = getattr(service, owner_name)
        timed[label] = []
        setattr(owner, method, _timed(getattr(owner, method), timed[label]))
    return timed


def _timed(call: Callable[..., Any], samples: list[int]) -> Callable[..., Any]:
    def timed_call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter_ns()
        try:
            return call(*args, **kwargs)
        finally:
            samples.append(time.perf_counter_ns() - start)

    return timed_call


def journal_settings(service: Any) -> dict[str, Any]:
    """Read back what the journal connection really runs with (the point of the 'durable' claim)."""
    settings: dict[str, Any] = {"file": Path(service.journal_path).name}  # the scratch dir is deleted anyway
    connection = getattr(service.journal, "_db", None)
    if isinstance(connection, sqlite3.Connection):
        settings["journal_mode"] = connection.execute("PRAGMA journal_mode").fetchone()[0]
        synchronous = connection.execute("PRAGMA synchronous").fetchone()[0]
        settings["synchronous"] = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(synchronous, synchronous)
    settings["last_sequence"] = service.journal.last_sequence
    # the service stores a snapshot of the table with every commit: its size is part of each commit's cost
    settings["snapshot_bytes"] = len(service.journal.snapshot() or b"")
    return settings


async def run_tablectl(
    script: list[ScriptedRound], broker_port: int, data_dir: Path, pacing: Pacing
) -> PhaseResult:
    from controller.service import TableService
    from controller.table_build import TABLE_CONFIGS

    result = PhaseResult("tablectl")
    loop = asyncio.get_running_loop()
    shoe = PtyShoe(loop)
    config = TABLE_CONFIGS.from_dict(
        tablectl_config(broker_port, shoe.path, data_dir), environ={}, source="bench"
    )
    service = TableService(config)
    commits = time_journal_commits(service)
    parts = time_parts(service)
    root = config.topic_root
    phase_deadline = time.monotonic() + pacing.phase_timeout
    started = time.monotonic()
    async with make_subscriber(
        pacing.subscriber, broker_port, f"{root}/events/#", "bench-tablectl-subscriber"
    ) as subscriber:
        events = EventStream(subscriber)
        shoe.start()
        runner = asyncio.create_task(service.run(), name="tablectl")
        try:
            # a real shoe says HELLO on power-up; repeat it until the service has the port open and heard it
            for _attempt in range(10):
                shoe.write("HELLO BENCH 1.0 0001")
                if await events.wait_state(time.monotonic() + 1.0, lambda: events.device_online):
                    break
                if runner.done():
                    break
            if not events.device_online:
                raise RuntimeError("the shoe never came online at tablectl (no device.online event in 10 s)")
            result.extra["journal"] = journal_settings(service)
            previous_round: str | None = None
            last_card_stamp: int | None = None
            for scripted in script:
                if time.monotonic() > phase_deadline:
                    result.error = f"phase deadline of {pacing.phase_timeout:.0f} s reached"
                    break
                if runner.done():
                    break
                # a card is written only into an open round: betting closes on the first card
                opened = await events.wait_state(
                    time.monotonic() + pacing.card_timeout,
                    lambda: events.current_round() not in (None, previous_round),  # noqa: B023
                )
                round_id = events.current_round()
                if not opened or round_id is None:
                    raise RuntimeError(
                        f"no new round opened within {pacing.card_timeout} s after {previous_round}"
                    )
                if last_card_stamp is not None:
                    result.round_gaps_ns.append(events.open_rounds[round_id] - last_card_stamp)
                previous_round = round_id
                if scripted.cut_card_before:
                    cut_seen = events.cut_cards
                    shoe.write_cut()
                    if not await events.wait_state(
                        time.monotonic() + pacing.card_timeout,
                        lambda: events.cut_cards > cut_seen,  # noqa: B023
                    ):
                        result.notes.append(f"no shoe.cut_card event in round {round_id}")
                for index, (code, position) in enumerate(
                    zip(scripted.cards, scripted.positions, strict=True)
                ):
                    if pacing.card_gap and index:
                        await events.until(time.monotonic() + pacing.card_gap)
                    outcome = await deal_one(shoe, events, code, pacing.card_timeout)
                    result.cards_written += 1
                    if outcome is None:
                        result.lost += 1
                        continue
                    envelope, latency, stamp = outcome
                    if envelope["type"] != "card.dealt":
                        result.rejected += 1
                        result.notes.append(f"{envelope['type']}: {envelope['data'].get('reason')}")
                        continue
                    if envelope["data"].get("position") != position:
                        result.position_mismatches += 1
                    result.latencies_ns.append(latency)
                    # the durable commits in this card's path (the journal's disk, for reading the results)
                    in_path = [c for c in commits if c[0] >= stamp - latency and c[2] <= stamp]
                    result.commit_ns.append(sum(end - start for start, _, end in in_path))
                    result.commit_statement_ns.append(sum(end - begun for _, begun, end in in_path))
                    del commits[:-4]
                    last_card_stamp = stamp
            # let the last round's events land so the counts are complete
            await events.until(time.monotonic() + 0.3)
            result.extra["journal"] = journal_settings(service)
            result.parts_ns = parts
        except RuntimeError as exc:  # the phase cannot go on; what was measured so far is still reported
            result.error = str(exc)
        finally:
            service.stop()
            try:
                await asyncio.wait_for(runner, 10)
            except Exception as exc:  # the report says how the service ended; the benchmark still reports
                result.error = result.error or f"tablectl ended with {type(exc).__name__}: {exc}"
            await shoe.close()
        crashed = runner.done() and not runner.cancelled() and runner.exception() is not None
        if crashed and result.error is None:
            result.error = f"tablectl stopped: {runner.exception()!r}"
        result.extra["event_counts"] = dict(sorted(events.counts.items()))
        result.extra["shoes_started"] = events.shoes_started
    result.host_lines = dict(shoe.host_lines)
    result.extra["seqs_never_acked"] = [seq for seq in shoe.seqs_sent if seq not in shoe.acked]
    result.seconds = time.monotonic() - started
    return result


async def deal_one(
    shoe: PtyShoe, events: EventStream, code: str, card_timeout: float
) -> tuple[dict[str, Any], int, int] | None:
    """Write one card and wait for its card.dealt (or its rejection). None if nothing came in time."""
    seq, written = shoe.write_card(code)

    def answers_this_card(envelope: dict[str, Any]) -> bool:
        data = envelope.get("data", {})
        kind = envelope.get("type")
        if kind == "card.dealt":
            # the raw device line names the seq: an earlier copy of the same card code cannot match
            return bool(data.get("card") == code and f"CARD {seq} {code}" in str(data.get("raw", "")))
        if kind == "card.rejected":
            return bool(data.get("card") == code)
        return kind == "reading.rejected" and seq in str(data.get("raw", ""))

    found = await events.until(time.monotonic() + card_timeout, answers_this_card)
    if found is None:
        return None
    envelope, stamp = found
    return envelope, stamp - written, stamp


# --- phase 2: the naive bridge ---------------------------------------------------------------------------


class NaiveBridge(threading.Thread):
    """The baseline: what anyone would write first. readline() -> publish(qos=1); no parsing, no journal."""

    def __init__(self, pty_path: str, broker_port: int) -> None:
        super().__init__(name="naive-bridge", daemon=True)
        self.pty_path = pty_path
        self.port = serial.Serial(pty_path, 115200, timeout=0.2)
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id="bench-naive-bridge", protocol=mqtt.MQTTv5
        )
        self.client.connect("127.0.0.1", broker_port)
        self.client.loop_start()
        self.published = 0
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.is_set():
            line = self.port.readline()
            if line:
                self.client.publish(NAIVE_TOPIC, line, qos=1)
                self.published += 1

    def stop(self) -> None:
        self._stopping.set()
        self.join(5)
        self.port.close()
        self.client.disconnect()
        self.client.loop_stop()


async def run_naive(
    script: list[ScriptedRound], broker_port: int, round_gap: float, pacing: Pacing
) -> PhaseResult:
    result = PhaseResult("naive bridge")
    result.extra["round_gap_seconds"] = round(round_gap, 4)
    loop = asyncio.get_running_loop()
    shoe = PtyShoe(loop)
    phase_deadline = time.monotonic() + pacing.phase_timeout
    started = time.monotonic()
    async with make_subscriber(
        pacing.subscriber, broker_port, NAIVE_TOPIC, "bench-naive-subscriber"
    ) as subscriber:
        bridge = NaiveBridge(shoe.path, broker_port)
        bridge.start()
        shoe.start()
        try:
            shoe.write("HELLO BENCH 1.0 0001")

            async def wait_line(prefix: bytes) -> Received | None:
                deadline = time.monotonic() + pacing.card_timeout
                while (message := await subscriber.get(deadline)) is not None:
                    if message.payload.startswith(prefix):
                        return message
                return None

            for number, scripted in enumerate(script):
                if time.monotonic() > phase_deadline:
                    result.error = f"phase deadline of {pacing.phase_timeout:.0f} s reached"
                    break
                if number:  # tablectl opens the next round on a later tick; give the bridge the same rhythm
                    await asyncio.sleep(round_gap)
                if scripted.cut_card_before:
                    seq, _ = shoe.write_cut()
                    if await wait_line(f"CUT {seq}".encode()) is None:
                        result.notes.append(f"CUT {seq} never arrived")
                for index, code in enumerate(scripted.cards):
                    if pacing.card_gap and index:
                        await asyncio.sleep(pacing.card_gap)
                    seq, written = shoe.write_card(code)
                    result.cards_written += 1
                    message = await wait_line(f"CARD {seq} {code}".encode())
                    if message is None:
                        result.lost += 1
                        continue
                    result.latencies_ns.append(message.stamp_ns - written)
        finally:
            bridge.stop()
            await shoe.close()
    result.extra["published"] = bridge.published
    result.host_lines = dict(shoe.host_lines)
    result.seconds = time.monotonic() - started
    return result


# --- the machine and the report ------------------------------------------------------------------------


def markdown_table(phases: list[tuple[str, PhaseResult]], warmup: int) -> str:
    rows = [
        "| system | cards measured | p50 ms | p90 ms | p99 ms | max ms | mean ms | lost | rejected |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, phase in phases:
        stats = common.summary_ms(phase.measured(warmup))
        if not stats.get("count"):
            rows.append(f"| {label} | 0 | – | – | – | – | – | {phase.lost} | {phase.rejected} |")
            continue
        rows.append(
            f"| {label} | {stats['count']} | {stats['p50_ms']:.2f} | {stats['p90_ms']:.2f} | "
            f"{stats['p99_ms']:.2f} | {stats['max_ms']:.2f} | {stats['mean_ms']:.2f} | {phase.lost} | "
            f"{phase.rejected} |"
        )
    return "\n".join(rows)


def phase_report(phase: PhaseResult, warmup: int) -> dict[str, Any]:
    return {
        "cards_written": phase.cards_written,
        "cards_received": len(phase.latencies_ns),
        "warmup_excluded": min(warmup, len(phase.latencies_ns)),
        "latency": common.summary_ms(phase.measured(warmup)),
        **(
            {
                "journal_commit_in_path": common.summary_ms(phase.commit_ns[warmup:]),
                "journal_commit_statement_in_path": common.summary_ms(phase.commit_statement_ns[warmup:]),
                "journal_append_before_commit_in_path": common.summary_ms(
                    [
                        whole - statement
                        for whole, statement in zip(
                            phase.commit_ns[warmup:], phase.commit_statement_ns[warmup:], strict=True
                        )
                    ]
                ),
                "service_steps_every_call": {
                    label: common.summary_ms(samples) for label, samples in phase.parts_ns.items()
                },
                "latency_without_commit": common.summary_ms(
                    [a - b for a, b in zip(phase.measured(warmup), phase.commit_ns[warmup:], strict=False)]
                ),
            }
            if phase.commit_ns
            else {}
        ),
        "lost": phase.lost,
        "rejected": phase.rejected,
        "position_mismatches": phase.position_mismatches,
        "round_gap_median_ms": round(sorted(phase.round_gaps_ns)[len(phase.round_gaps_ns) // 2] / 1e6, 3)
        if phase.round_gaps_ns
        else None,
        "host_lines_on_the_pty": phase.host_lines,
        "seconds": round(phase.seconds, 2),
        "error": phase.error,
        "notes": phase.notes[:20],
        **phase.extra,
        "samples_us": [round(value / 1e3) for value in phase.latencies_ns],
    }


def merged_phase(name: str, phases: list[PhaseResult], warmup: int) -> PhaseResult:
    """Every pair's measured cards (each phase's warm-up already left out) as one phase."""
    merged = PhaseResult(name)
    for phase in phases:
        merged.latencies_ns += phase.measured(warmup)
        merged.commit_ns += phase.commit_ns[warmup:]
        merged.commit_statement_ns += phase.commit_statement_ns[warmup:]
        merged.fsync_ns += phase.fsync_ns
        for label, samples in phase.parts_ns.items():
            merged.parts_ns.setdefault(label, []).extend(samples)
        merged.cards_written += phase.cards_written
        merged.lost += phase.lost
        merged.rejected += phase.rejected
        merged.position_mismatches += phase.position_mismatches
        merged.round_gaps_ns += phase.round_gaps_ns
        merged.seconds += phase.seconds
        merged.notes += phase.notes
        for line, count in phase.host_lines.items():
            merged.host_lines[line] = merged.host_lines.get(line, 0) + count
        merged.error = merged.error or phase.error
        merged.extra.update(
            {k: v for k, v in phase.extra.items() if k not in ("load_average_after", "order")}
        )
    return merged


#: what tablectl is held to: the naive bridge's path plus one fdatasync (the floor of any design that has the
#: event on disk before it is published), plus this much at p50 and at p99
FLOOR_MARGIN_MS = {"p50_ms": 0.1, "p99_ms": 0.5}


def floor_report(tablectl: dict[str, Any], naive: dict[str, Any], fsync: dict[str, Any]) -> dict[str, Any]:
    """The floor (naive bridge + one append and fdatasync of this disk, the same run) beside tablectl's
    figures, at p50 and p99, and whether tablectl is within `FLOOR_MARGIN_MS` of it."""
    report: dict[str, Any] = {}
    for key, margin in FLOOR_MARGIN_MS.items():
        if not tablectl.get("count") or not naive.get("count") or key not in fsync:
            continue
        floor = round(naive[key] + fsync[key], 3)
        report[key.removesuffix("_ms")] = {
            "tablectl_ms": tablectl[key],
            "floor_ms": floor,
            "naive_ms": naive[key],
            "fdatasync_ms": fsync[key],
            "over_floor_ms": round(tablectl[key] - floor, 3),
            "margin_ms": margin,
            "within": tablectl[key] <= floor + margin,
        }
    return report


def floor_line(floor: dict[str, Any]) -> str:
    return "; ".join(
        f"{name}: tablectl {f['tablectl_ms']} ms, floor {f['floor_ms']} ms (naive {f['naive_ms']} "
        f"+ fdatasync {f['fdatasync_ms']}), {f['over_floor_ms']:+.3f} ms over it, "
        f"{'within' if f['within'] else 'NOT within'} +{f['margin_ms']} ms"
        for name, f in floor.items()
    )


def pair_report(tablectl: PhaseResult, naive: PhaseResult, warmup: int) -> dict[str, Any]:
    """One interleaved pair: both systems' p50/p99 and their ratios."""
    t = common.summary_ms(tablectl.measured(warmup))
    n = common.summary_ms(naive.measured(warmup))

    def ratio(key: str) -> float | None:
        if not t.get("count") or not n.get("count") or not n[key]:
            return None
        return round(t[key] / n[key], 2)

    c = common.summary_ms(tablectl.commit_ns[warmup:])
    statement = common.summary_ms(tablectl.commit_statement_ns[warmup:])
    disk = common.summary_ms(tablectl.fsync_ns + naive.fsync_ns)
    rest = common.summary_ms(
        [a - b for a, b in zip(tablectl.measured(warmup), tablectl.commit_ns[warmup:], strict=False)]
    )
    return {
        "order": tablectl.extra.get("order"),
        "tablectl_commit_p50_ms": c.get("p50_ms"),
        "tablectl_commit_statement_p50_ms": statement.get("p50_ms"),
        "fdatasync_p50_ms": disk.get("p50_ms"),
        "tablectl_without_commit_p50_ms": rest.get("p50_ms"),
        "tablectl_without_commit_p99_ms": rest.get("p99_ms"),
        "tablectl_p50_ms": t.get("p50_ms"),
        "tablectl_p99_ms": t.get("p99_ms"),
        "naive_p50_ms": n.get("p50_ms"),
        "naive_p99_ms": n.get("p99_ms"),
        "p50_ratio": ratio("p50_ms"),
        "p99_ratio": ratio("p99_ms"),
        "load_average_after": [
            tablectl.extra.get("load_average_after"),
            naive.extra.get("load_average_after"),
        ],
    }


async def run(args: argparse.Namespace) -> int:
    script = deal_script(args.seed, args.cards)
    cards_scripted = sum(len(r.cards) for r in script)
    started_at = common.now()
    pacing = Pacing(args.card_timeout, args.phase_timeout, args.card_gap, args.subscriber)
    with common.scratch_dir(args.data_dir) as workdir, common.mosquitto(workdir) as broker:
        fstype = common.filesystem_of(workdir)
        if fstype in ("tmpfs", "ramfs"):
            print(f"warning: the journal is on {fstype}: its fsync does not reach a disk", file=sys.stderr)
        print(
            f"{cards_scripted} cards in {len(script)} rounds (seed {args.seed}); "
            f"Mosquitto on 127.0.0.1:{broker.port}; journal on {fstype}",
            file=sys.stderr,
        )
        loads = {"start": common.load_average()}
        round_gap = DEFAULT_ROUND_GAP_SECONDS
        pairs: list[tuple[PhaseResult, PhaseResult]] = []
        for number in range(args.pairs):
            # interleaved, and the order swapped every pair: a load that comes and goes hits both systems
            first = "tablectl" if number % 2 == 0 else "naive"
            results: dict[str, PhaseResult] = {}
            for system in (first, "naive" if first == "tablectl" else "tablectl"):
                # the disk's cost of a durable append, just before each phase: it moves by half within
                # minutes here, and the floor must be the disk's of the same moments as the cards
                probes = common.fsync_samples(workdir)
                if system == "tablectl":
                    phase = await run_tablectl(
                        script, broker.port, workdir / f"tablectl-data-{number}", pacing
                    )
                    gaps = sorted(phase.round_gaps_ns)
                    if gaps:
                        round_gap = gaps[len(gaps) // 2] / 1e9
                else:
                    phase = await run_naive(script, broker.port, round_gap, pacing)
                phase.fsync_ns = probes
                phase.extra["load_average_after"] = common.load_average()
                results[system] = phase
                p50 = common.summary_ms(phase.measured(args.warmup))["p50_ms"]
                print(
                    f"pair {number + 1}/{args.pairs}: {phase.name}: {len(phase.latencies_ns)} cards in "
                    f"{phase.seconds:.1f} s, p50 {p50} ms",
                    file=sys.stderr,
                )
            results["tablectl"].extra["order"] = f"{first} first"
            pairs.append((results["tablectl"], results["naive"]))
        loads["end"] = common.load_average()
        tablectl = merged_phase("tablectl", [pair[0] for pair in pairs], args.warmup)
        naive = merged_phase("naive bridge", [pair[1] for pair in pairs], args.warmup)
        fsync = common.summary_ms(tablectl.fsync_ns + naive.fsync_ns)
        machine = common.machine_info(broker.binary)
    journal = tablectl.extra.get("journal", {})
    durable = journal.get("journal_mode") == "wal" and journal.get("synchronous") == "FULL"
    phases = [
        (f"tablectl (SQLite WAL, synchronous={journal.get('synchronous', '?')}, on {fstype})", tablectl),
        ("naive bridge (readline → publish, no journal)", naive),
    ]
    table = markdown_table(phases, 0)
    pair_reports = [pair_report(t, n, args.warmup) for t, n in pairs]
    ratios = {
        key: round(statistics.median(r[key] for r in pair_reports if r[key] is not None), 2)
        if any(r[key] is not None for r in pair_reports)
        else None
        for key in ("p50_ratio", "p99_ratio")
    }
    floor = floor_report(
        common.summary_ms(tablectl.latencies_ns), common.summary_ms(naive.latencies_ns), fsync
    )
    for pair_result, (t, n) in zip(pair_reports, pairs, strict=True):
        pair_result["floor"] = floor_report(
            common.summary_ms(t.measured(args.warmup)),
            common.summary_ms(n.measured(args.warmup)),
            common.summary_ms(t.fsync_ns + n.fsync_ns),
        )
    report = {
        **common.header(
            "latency",
            started_at,
            machine,
            what="end-to-end latency: shoe line written on the pty -> MQTT message at a QoS 1 subscriber",
            measured=("controller", "drivers", "bench/latency.py", "bench/common.py"),
        ),
        "settings": {
            "cards": args.cards,
            "cards_scripted": cards_scripted,
            "rounds": len(script),
            "seed": args.seed,
            "warmup_cards": args.warmup,
            "card_timeout_s": args.card_timeout,
            "card_gap_s": args.card_gap,
            "broker": "mosquitto on 127.0.0.1 (loopback), persistence off; MQTT 5 clients, QoS 1",
            "subscriber": args.subscriber,
            "pairs": args.pairs,
            "journal_filesystem": fstype,
            "journal_durable": durable,
        },
        "disk_append_fdatasync": fsync,
        "disk_probes": "200 appends of 100 bytes + fdatasync before every phase, pooled (per pair: its two)",
        "load_average_1_5_15_min": loads,
        "tablectl": phase_report(tablectl, 0),
        "naive_bridge": phase_report(naive, 0),
        "pairs": pair_reports,
        "median_ratio_tablectl_to_naive": ratios,
        "floor": floor,
        "markdown": table,
    }
    output = common.write_result("latency", report, args.output)

    print()
    print(table)
    print()
    for number, pair in enumerate(pair_reports, 1):
        print(
            f"pair {number} ({pair['order']}): tablectl p50 {pair['tablectl_p50_ms']} ms p99 "
            f"{pair['tablectl_p99_ms']} ms; naive p50 {pair['naive_p50_ms']} ms "
            f"p99 {pair['naive_p99_ms']} ms; "
            f"ratio p50 {pair['p50_ratio']} p99 {pair['p99_ratio']}; tablectl's commits p50 "
            f"{pair['tablectl_commit_p50_ms']} ms (their COMMIT statements "
            f"{pair['tablectl_commit_statement_p50_ms']} ms; append + fdatasync "
            f"{pair['fdatasync_p50_ms']} ms), without them p50 "
            f"{pair['tablectl_without_commit_p50_ms']} ms "
            f"p99 {pair['tablectl_without_commit_p99_ms']} ms"
        )
    print(f"median ratio tablectl / naive over {len(pair_reports)} pair(s): {ratios}")
    steps = report["tablectl"].get("service_steps_every_call", {})
    before_commit = report["tablectl"].get("journal_append_before_commit_in_path", {})
    if steps:
        shown = ", ".join(
            f"{label} {1000 * v['p50_ms']:.0f} us" for label, v in steps.items() if v.get("count")
        )
        print(
            f"tablectl's steps, p50 of every call: {shown}; in the cards' paths, the append before its "
            f"COMMIT {1000 * before_commit.get('p50_ms', 0):.0f} us"
        )
    print(f"Floor (naive bridge + one append and fdatasync, this run), all pairs: {floor_line(floor)}")
    for number, pair in enumerate(pair_reports, 1):
        print(f"  pair {number}: {floor_line(pair['floor'])}")
    print()
    print(
        f"Journal: {'durable' if durable else 'NOT durable'} (journal_mode={journal.get('journal_mode')}, "
        f"synchronous={journal.get('synchronous')}, filesystem {fstype}); first {args.warmup} cards of each "
        "system excluded as warm-up."
    )
    print(
        f"Machine: {machine['cpu']}, {machine['cores']} cores, Python {machine['python']}, {machine['os']}, "
        f"{machine['mosquitto']}"
    )
    print(
        f"Disk: append + fdatasync p50 {fsync['p50_ms']} ms, p99 {fsync['p99_ms']} ms. "
        f"Load average (1 min): {loads['start'][0]} at start, {loads['end'][0]} at the end."
    )
    print(f"Date: {report['date_utc']}; commit: {report['git_commit']}")
    print(f"Written: {output}")
    problems = [
        f"{name}: {phase.error}" for name, phase in (("tablectl", tablectl), ("naive", naive)) if phase.error
    ]
    problems += [
        f"{name}: {phase.lost} lost, {phase.rejected} rejected, {phase.position_mismatches} misplaced"
        for name, phase in (("tablectl", tablectl), ("naive", naive))
        if phase.lost or phase.rejected or phase.position_mismatches
    ]
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    short = any(len(phase.latencies_ns) < args.cards for pair in pairs for phase in pair)
    return 1 if problems or short else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.rig_parser(__doc__, "latency")
    parser.add_argument("--cards", type=int, default=1200, help="cards per system, at least (default 1200)")
    parser.add_argument("--seed", type=int, default=1, help="shuffle seed (default 1)")
    parser.add_argument("--warmup", type=int, default=WARMUP_CARDS, help="first cards excluded (default 20)")
    parser.add_argument("--card-timeout", type=float, default=5.0, help="a card not seen by then is lost (s)")
    parser.add_argument("--phase-timeout", type=float, default=80.0, help="hard limit per system (s)")
    parser.add_argument(
        "--card-gap", type=float, default=0.0, help="idle seconds between a card's arrival and the next card"
    )
    parser.add_argument(
        "--pairs", type=int, default=3, help="tablectl/naive pairs, interleaved, order swapped (default 3)"
    )
    parser.add_argument(
        "--subscriber",
        choices=("process", "thread"),
        default="process",
        help="the subscriber in its own process (default) or a thread of the benchmark (shares its GIL)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.cards < 1:
        parser.error("--cards must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
