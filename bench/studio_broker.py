"""A studio's broker traffic at scale: N stand-in tables (default 500), each its own MQTT 5 connection,
against one Mosquitto on this machine, with one rules engine on the shared subscription
`$share/rules/studio/+/table/+/events/#`.

The payloads are a real table's: the run begins by recording one `tablectl run` baccarat table (dealt by
`tablectl simulate shoe` every 0.5 s, as `studio.py` deals) for a few rounds, every message it publishes with
its topic, QoS, retain flag and timing. Each stand-in then connects as a table does (its own client id,
MQTT 5, keepalive 15 s, a Last Will of `offline` retained on `status`, subscribed to its `commands`/`inputs`),
publishes the recorded retained `status`, `devices/*` and `state` at its birth and then replays the recorded
rounds: the same messages in the same order (events QoS 1, retained `state` after each, retained `result`),
its own table id in topics and payloads, each event with a fresh `id`, `time`, `recordedtime` and a gap-free
`sequence`, each `state` with its `last_sequence`. `--rate bench50` keeps the recorded timing (~3.4 events/s
per table, the 50-table bench's pace); `--rate real` stretches each round to 25-30 s (a dealer's baccarat
round). Each table starts somewhere inside a round, so the load is even from the first second.

The stand-ins are asyncio aiomqtt clients (the library a table uses), split over a few processes. Each
publish is stamped (CLOCK_MONOTONIC, the same clock in every process) just before it is handed to the client;
the rules engine (paho in its own process) stamps each event on arrival. Reported for the measurement window:
events/s, end-to-end latency publish → rules engine, order per table, duplicates, events never arrived, how
late the stand-ins were against their schedule (they are not the bottleneck if that stays small), and the CPU
(share of one core) and RSS of the broker, the stand-ins and the rules engine, from /proc. Everything shares
this machine's cores: the load average is recorded.

Run: `python bench/studio_broker.py --tables 500 --rate real --seconds 60`. Writes
`bench/results/studio_broker.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import multiprocessing
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import common

from controller.events import iso_ms

STUDIO = "bench"
#: the recorded table's id: the stand-ins' ids replace it in topics and payloads
RECORDED_TABLE = "bac-000"
#: a table's MQTT keepalive (its default) and the Maximum Packet Size it announces (16 x 64 KiB)
KEEPALIVE_SECONDS = 15
MAX_PACKET_SIZE = 16 * 64 * 1024
SHARED_EVENTS = "$share/rules/studio/+/table/+/events/#"
#: messages published back to back (an event, then its state) form one step of the schedule
STEP_GAP_SECONDS = 0.05
#: a dealer's baccarat round (`--rate real`), drawn per round
REAL_ROUND_SECONDS = (25.0, 30.0)
QUIET_LOGGER = logging.getLogger("stand-in")
QUIET_LOGGER.setLevel(logging.ERROR)
#: stand-ins connecting at once, per process (a studio's tables do not all connect in the same millisecond)
CONNECTING_AT_ONCE = 50


# --- the recording of a real table -------------------------------------------------------------------------


@dataclass(frozen=True)
class Recorded:
    at: float  # monotonic seconds
    topic: str  # below the table's root, e.g. "events/card.dealt", "state"
    payload: bytes
    qos: int
    retain: bool


def table_config(workdir: Path, port: int, shoe_path: str) -> Path:
    config = workdir / f"{RECORDED_TABLE}.toml"
    config.write_text(
        f'[table]\nstudio_id = "{STUDIO}"\ntable_id = "{RECORDED_TABLE}"\ngame = "baccarat"\n'
        f'data_dir = "{workdir / "data"}"\n\n[broker]\nurl = "mqtt://127.0.0.1:{port}"\n\n'
        f'[devices.shoe]\nprotocol = "shoe-line"\nport = "{shoe_path}"\n\n'
        "[game]\nbetting_closes_on_first_card = true\nround_gap_seconds = 0.5\n",
        encoding="utf-8",
    )
    return config


def record_real_table(workdir: Path, rounds: int, timeout: float) -> list[Recorded]:
    """Every message one `tablectl run` baccarat table publishes from its start until `rounds` rounds after
    its first have opened (so that at least `rounds` complete ones are in it), as the broker delivers them
    with the publisher's QoS and retain flag (subscribed at QoS 2, retain-as-published)."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion
    from paho.mqtt.subscribeoptions import SubscribeOptions

    root = f"studio/{STUDIO}/table/{RECORDED_TABLE}/"
    recorded: list[Recorded] = []
    opened = threading.Event()
    subscribed = threading.Event()
    opened_count = 0

    def on_message(client: Any, userdata: Any, message: mqtt.MQTTMessage) -> None:
        nonlocal opened_count
        if not message.topic.startswith(root) or not message.payload:
            return
        topic = message.topic.removeprefix(root)
        recorded.append(
            Recorded(time.monotonic(), topic, bytes(message.payload), message.qos, bool(message.retain))
        )
        if topic == "events/round.opened":
            opened_count += 1
            if opened_count > rounds:
                opened.set()

    with common.broker_and_shoe(workdir, deal_every=0.5, seed=1) as rig:
        recorder = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="recorder", protocol=mqtt.MQTTv5)
        recorder.on_connect = lambda client, *_: client.subscribe(
            root + "#", options=SubscribeOptions(qos=2, retainAsPublished=True)
        )
        recorder.on_subscribe = lambda *_: subscribed.set()
        recorder.on_message = on_message
        recorder.connect("127.0.0.1", rig.broker.port)
        recorder.loop_start()
        table = None
        try:
            if not subscribed.wait(10):
                raise RuntimeError("the recorder did not subscribe")
            config = table_config(workdir, rig.broker.port, rig.shoe_path)
            table = subprocess.Popen(
                [*common.tablectl_command(), "run", "--config", str(config)],
                stdout=rig.log,
                stderr=rig.log,
                stdin=subprocess.DEVNULL,
            )
            if not opened.wait(timeout):
                raise RuntimeError(f"the real table opened {opened_count} rounds in {timeout} s")
        finally:
            if table is not None:
                table.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    table.wait(15)
            recorder.disconnect()
            recorder.loop_stop()
    return recorded


@dataclass(frozen=True)
class Message:
    topic: str
    payload: bytes
    qos: int
    retain: bool

    @property
    def is_event(self) -> bool:
        return self.topic.startswith("events/")


@dataclass(frozen=True)
class Step:
    offset: float  # seconds since its round opened
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class Round:
    seconds: float  # from its round.opened to the next one's
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Template:
    """What every stand-in publishes: `birth` on connecting (the last retained message of each topic before
    the first round), then `rounds` over and over."""

    birth: tuple[Message, ...]
    rounds: tuple[Round, ...]


def template_from(recorded: list[Recorded]) -> Template:
    starts = [i for i, message in enumerate(recorded) if message.topic == "events/round.opened"]
    if len(starts) < 2:
        raise RuntimeError("the recording holds no complete round")
    birth: dict[str, Message] = {}
    for message in recorded[: starts[0]]:
        if message.retain:
            birth[message.topic] = Message(message.topic, message.payload, message.qos, True)
    rounds = []
    for begin, end in itertools.pairwise(starts):
        opened_at = recorded[begin].at
        steps: list[Step] = []
        current: list[Message] = []
        step_at = previous_at = opened_at
        for message in recorded[begin:end]:
            if current and message.at - previous_at > STEP_GAP_SECONDS:
                steps.append(Step(step_at - opened_at, tuple(current)))
                current, step_at = [], message.at
            if message.topic == "status":  # a table's status changes only on (re)connecting
                continue
            current.append(Message(message.topic, message.payload, message.qos, message.retain))
            previous_at = message.at
        steps.append(Step(step_at - opened_at, tuple(current)))
        rounds.append(Round(recorded[end].at - opened_at, tuple(steps)))
    return Template(tuple(birth.values()), tuple(rounds))


def describe(template: Template) -> dict[str, Any]:
    """What the recording holds, for the report: messages per round by topic, payload sizes."""
    per_topic: dict[str, int] = {}
    sizes: dict[str, list[int]] = {}
    for round_ in template.rounds:
        for step in round_.steps:
            for message in step.messages:
                kind = "events" if message.is_event else message.topic
                key = f"{kind} (QoS {message.qos}{', retained' if message.retain else ''})"
                per_topic[key] = per_topic.get(key, 0) + 1
                sizes.setdefault(kind, []).append(len(message.payload))
    count = len(template.rounds)
    return {
        "source": "one real `tablectl run` baccarat table recorded at the start of this run "
        "(tablectl simulate shoe --deal-every 0.5, round_gap_seconds 0.5)",
        "rounds": count,
        "recorded_round_seconds": [round(r.seconds, 2) for r in template.rounds],
        "messages_per_round": {key: round(value / count, 1) for key, value in sorted(per_topic.items())},
        "payload_bytes_median": {kind: sorted(v)[len(v) // 2] for kind, v in sorted(sizes.items())},
        "birth_topics": [message.topic for message in template.birth],
    }


# --- the stand-in tables ---------------------------------------------------------------------------------


@dataclass
class PublisherReport:
    #: (table, sequence, published monotonic ns) of every event
    events: list[tuple[str, int, int]]
    #: how late each step began against its schedule, in ms
    lateness_ms: list[float]
    messages: int
    acked: int
    failed: int
    connected: int
    #: connections the broker or the network dropped (a stand-in does not reconnect: it would hide them)
    disconnected: int = 0


class StandInTable:
    def __init__(self, table_id: str, template: Template, rate: str, rng: random.Random) -> None:
        self.table_id = table_id
        self.root = f"studio/{STUDIO}/table/{table_id}/"
        self.rate = rate
        self.rng = rng
        self.sequence = 0
        # the recording with this table's id: events and states parsed once, patched per publish
        self.birth = [self._own(message) for message in template.birth]
        self.rounds = [
            (r.seconds, [(s.offset, [self._own(m) for m in s.messages]) for s in r.steps])
            for r in template.rounds
        ]

    def _own(self, message: Message) -> tuple[str, Any, int, bool]:
        text = message.payload.decode().replace(RECORDED_TABLE, self.table_id)
        body: Any = json.loads(text) if message.is_event or message.topic == "state" else text.encode()
        return self.root + message.topic, body, message.qos, message.retain

    def client(self, port: int) -> Any:
        import aiomqtt
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties

        properties = Properties(PacketTypes.CONNECT)
        properties.MaximumPacketSize = MAX_PACKET_SIZE
        offline = json.dumps({"status": "offline", "boot": 1}, separators=(",", ":")).encode()
        return aiomqtt.Client(
            "127.0.0.1",
            port,
            identifier="tablectl-" + self.root.rstrip("/").replace("/", "-"),
            protocol=aiomqtt.ProtocolVersion.V5,
            will=aiomqtt.Will(self.root + "status", offline, qos=1, retain=True),
            keepalive=KEEPALIVE_SECONDS,
            timeout=30,
            properties=properties,
            max_inflight_messages=0,
            # aiomqtt warns on every publish while more than 10 await their PUBACK: none do here (see send)
            logger=QUIET_LOGGER,
        )

    def payload(self, body: Any, *, event: bool) -> bytes:
        if isinstance(body, bytes):
            return body
        if event:
            self.sequence += 1
            now = iso_ms(time.time())
            body = dict(body, id=uuid.uuid4().hex, time=now, recordedtime=now)
            body["sequence"] = str(self.sequence).zfill(12)
        elif "last_sequence" in body:
            body = dict(body, last_sequence=self.sequence)
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()

    def round_length(self, recorded_seconds: float) -> tuple[float, float]:
        """The round's length here and the factor its recorded step offsets are stretched by."""
        if self.rate == "real":
            seconds = self.rng.uniform(*REAL_ROUND_SECONDS)
            return seconds, seconds / recorded_seconds
        return recorded_seconds, 1.0


class Publisher:
    """The stand-ins of one process, on one asyncio loop."""

    def __init__(self, port: int, tables: list[StandInTable]) -> None:
        self.port = port
        self.tables = tables
        self.report = PublisherReport([], [], 0, 0, 0, 0)
        self.stop = asyncio.Event()

    def send(self, client: Any, table: StandInTable, message: tuple[str, Any, int, bool]) -> None:
        topic, body, qos, retain = message
        event = "/events/" in topic
        payload = table.payload(body, event=event)
        if event:
            self.report.events.append((table.table_id, table.sequence, time.monotonic_ns()))
        self.report.messages += 1
        # Straight to aiomqtt's paho client, as the table's own client does (controller/mqtt_client.py): its
        # socket is written by the loop; the PUBACK is counted by `_acknowledged`. aiomqtt's `publish` would
        # cost a task, an event and a timeout per message, several times the rest of the stand-in's work.
        info = client._client.publish(topic, payload, qos, retain)
        if info.rc != 0:
            self.report.failed += 1

    def _acknowledged(self, *_: Any) -> None:
        self.report.acked += 1

    async def connect(self, stack: contextlib.AsyncExitStack) -> list[Any]:
        gate = asyncio.Semaphore(CONNECTING_AT_ONCE)

        async def one(table: StandInTable) -> Any:
            async with gate:
                client = table.client(self.port)
                await stack.enter_async_context(client)
                client._client.on_publish = self._acknowledged
                filters = [f"{table.root}{kind}/+/+" for kind in ("commands", "inputs")]
                filters += [f"{table.root}{kind}/+" for kind in ("commands", "inputs")]
                await client.subscribe([(topic, 1) for topic in filters])
                for message in table.birth:
                    self.send(client, table, message)
                self.report.connected += 1
                return client

        return list(await asyncio.gather(*(one(table) for table in self.tables)))

    async def play(self, client: Any, table: StandInTable, start_at: float) -> None:
        # start somewhere inside a round, as a studio's tables are at any moment
        round_index = table.rng.randrange(len(table.rounds))
        recorded_seconds, steps = table.rounds[round_index]
        seconds, stretch = table.round_length(recorded_seconds)
        phase = table.rng.uniform(0, seconds)
        round_began = start_at - phase
        while not self.stop.is_set():
            for offset, messages in steps:
                due = round_began + offset * stretch
                if due < start_at:
                    continue
                delay = due - time.monotonic()
                if delay > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.stop.wait(), delay)
                if self.stop.is_set():
                    return
                self.report.lateness_ms.append((time.monotonic() - due) * 1000)
                for message in messages:
                    self.send(client, table, message)
            round_began += seconds
            round_index = (round_index + 1) % len(table.rounds)
            recorded_seconds, steps = table.rounds[round_index]
            seconds, stretch = table.round_length(recorded_seconds)

    async def drain(self, clients: list[Any], timeout: float) -> None:
        """Wait for the PUBACKs of what was sent; count the connections that are gone."""
        deadline = time.monotonic() + timeout
        report = self.report
        while report.acked + report.failed < report.messages and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        report.disconnected = sum(1 for client in clients if not client._client.is_connected())


def publisher_process(
    port: int, table_ids: list[str], template: Template, rate: str, seed: int, pipe: Connection
) -> None:
    """One process of stand-ins: connects them, says "connected", plays from the `start_at` it is sent until
    "stop", drains, and sends its report."""

    async def main() -> None:
        rng = random.Random(seed)
        tables = [StandInTable(t, template, rate, random.Random(rng.random())) for t in table_ids]
        publisher = Publisher(port, tables)
        loop = asyncio.get_running_loop()
        async with contextlib.AsyncExitStack() as stack:
            clients = await publisher.connect(stack)
            pipe.send(("connected", publisher.report.connected))
            start_at = await loop.run_in_executor(None, pipe.recv)
            players = [
                asyncio.create_task(publisher.play(c, t, start_at))
                for c, t in zip(clients, tables, strict=True)
            ]
            await loop.run_in_executor(None, pipe.recv)  # "stop"
            publisher.stop.set()
            await asyncio.gather(*players)
            await publisher.drain(clients, 10)
            pipe.send(("report", publisher.report))

    asyncio.run(main())


# --- the rules engine ------------------------------------------------------------------------------------


@dataclass
class RulesReport:
    #: (source, sequence) → first arrival, monotonic ns
    arrivals: dict[tuple[str, int], int]
    duplicates: int
    order_errors: int
    online: int


def rules_engine_process(port: int, pipe: Connection) -> None:
    """A paho MQTT 5 client on the shared subscription, as `studio.py`'s: stamps each event's arrival, checks
    each table's order; also counts the tables whose retained status says online."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    lock = threading.Lock()
    report = RulesReport({}, 0, 0, 0)
    online: set[str] = set()
    last_sequence: dict[str, int] = {}
    ready = threading.Event()

    def on_message(client: Any, userdata: Any, message: mqtt.MQTTMessage) -> None:
        arrived = time.monotonic_ns()
        if message.topic.endswith("/status"):
            if json.loads(message.payload).get("status") == "online":
                online.add(message.topic)
            return
        event = json.loads(message.payload)
        source, sequence = event["source"], int(event["sequence"])
        with lock:
            if (source, sequence) in report.arrivals:
                report.duplicates += 1
                return
            report.arrivals[(source, sequence)] = arrived
            if sequence < last_sequence.get(source, 0):
                report.order_errors += 1
            last_sequence[source] = max(sequence, last_sequence.get(source, 0))

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="rules-engine-1", protocol=mqtt.MQTTv5)
    client.on_connect = lambda c, *_: c.subscribe([(SHARED_EVENTS, 1), ("studio/+/table/+/status", 1)])
    client.on_subscribe = lambda *_: ready.set()
    client.on_message = on_message
    client.connect("127.0.0.1", port)
    client.loop_start()
    pipe.send("ready" if ready.wait(10) else "no SUBACK")
    while True:
        command = pipe.recv()
        with lock:
            if command == "online":
                pipe.send(len(online))
            elif command == "count":
                pipe.send(len(report.arrivals))
            elif command == "stop":
                report.online = len(online)
                pipe.send(report)
                break
    client.disconnect()
    client.loop_stop()


# --- the run ---------------------------------------------------------------------------------------------


def wait_for(predicate: Any, timeout: float, step: float = 0.5) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def ask(pipe: Connection, command: str) -> Any:
    pipe.send(command)
    return pipe.recv()


def run(args: argparse.Namespace) -> int:
    started = common.now()
    loads = {"before": common.load_average()}
    context = multiprocessing.get_context("spawn")
    with common.scratch_dir(args.data_dir) as workdir:
        recording = record_real_table(workdir / "record", args.record_rounds, timeout=120)
        template = template_from(recording)
        print(f"recorded a real table: {describe(template)['messages_per_round']}", file=sys.stderr)
        with common.mosquitto(workdir, extra_config="max_queued_messages 100000") as broker:
            assert broker._process is not None
            broker_pid = broker._process.pid
            rules_pipe, rules_end = context.Pipe()
            rules = context.Process(target=rules_engine_process, args=(broker.port, rules_end), daemon=True)
            rules.start()
            if not rules_pipe.poll(20) or rules_pipe.recv() != "ready":
                raise RuntimeError("the rules engine did not subscribe")
            table_ids = [f"bac-{n:03d}" for n in range(1, args.tables + 1)]
            shares = [table_ids[i :: args.processes] for i in range(args.processes)]
            pipes: list[Connection] = []
            publishers = []
            connect_began = time.monotonic()
            for index, share in enumerate(shares):
                mine, theirs = context.Pipe()
                process = context.Process(
                    target=publisher_process,
                    args=(broker.port, share, template, args.rate, index + 1, theirs),
                    daemon=True,
                )
                process.start()
                pipes.append(mine)
                publishers.append(process)
            try:
                connected = 0
                for pipe in pipes:
                    if not pipe.poll(args.connect_timeout):
                        raise RuntimeError("a publisher process did not connect its tables")
                    connected += pipe.recv()[1]
                wait_for(lambda: ask(rules_pipe, "online") >= args.tables, 30)
                connect_seconds = time.monotonic() - connect_began
                online = ask(rules_pipe, "online")
                print(
                    f"{connected} stand-ins connected, {online} online in {connect_seconds:.1f} s",
                    file=sys.stderr,
                )
                play_began = time.monotonic() + 0.5
                for pipe in pipes:
                    pipe.send(play_began)
                time.sleep(max(0.0, play_began + args.settle - time.monotonic()))
                pids = {"broker": broker_pid, "rules_engine": rules.pid}
                pids |= {f"publisher_{i + 1}": p.pid for i, p in enumerate(publishers)}
                cpu_before = {name: common.cpu_seconds(pid) for name, pid in pids.items() if pid}
                loads["window_start"] = common.load_average()
                window_began_ns = time.monotonic_ns()
                time.sleep(args.seconds)
                window_ended_ns = time.monotonic_ns()
                cpu_after = {name: common.cpu_seconds(pid) for name, pid in pids.items() if pid}
                loads["window_end"] = common.load_average()
                broker_rss = {
                    "rss_mb": round(common.memory_mib(broker_pid), 1),
                    "peak_rss_mb": round(common.memory_mib(broker_pid, "VmHWM"), 1),
                }
                publisher_rss = [round(common.memory_mib(p.pid), 1) for p in publishers if p.pid]
                rules_rss = round(common.memory_mib(rules.pid), 1) if rules.pid else 0.0
                for pipe in pipes:
                    pipe.send("stop")
                reports: list[PublisherReport] = []
                for pipe in pipes:
                    if not pipe.poll(60):
                        raise RuntimeError("a publisher process did not report")
                    reports.append(pipe.recv()[1])
                published_total = sum(len(r.events) for r in reports)
                # the last events on their way: wait until the rules engine has them all or stops gaining
                counts = [-1]

                def arrived_all_or_stalled() -> bool:
                    counts.append(ask(rules_pipe, "count"))
                    return counts[-1] in (published_total, counts[-2])

                wait_for(arrived_all_or_stalled, 15, step=1.0)
                rules_report: RulesReport = ask(rules_pipe, "stop")
                machine = common.machine_info(broker.binary) | {"aiomqtt": common.package_version("aiomqtt")}
            finally:
                for process in [*publishers, rules]:
                    process.join(10)
                    if process.is_alive():
                        process.kill()
    window = (window_ended_ns - window_began_ns) / 1e9
    cpu = {name: round((cpu_after[name] - cpu_before[name]) / window * 100, 1) for name in cpu_before}
    publishers_cpu = round(sum(v for k, v in cpu.items() if k.startswith("publisher_")), 1)
    latencies: list[float] = []
    in_window = lost_in_window = lost = 0
    for report in reports:
        for table_id, sequence, published_ns in report.events:
            arrived = rules_report.arrivals.get((f"studio/{STUDIO}/table/{table_id}", sequence))
            inside = window_began_ns <= published_ns < window_ended_ns
            if arrived is None:
                lost += 1
                lost_in_window += inside
            elif inside:
                in_window += 1
                latencies.append((arrived - published_ns) / 1e6)
    lateness = [value for report in reports for value in report.lateness_ms]
    events_in_window = in_window + lost_in_window
    result = {
        **common.header(
            "studio_broker",
            started,
            machine,
            measured=["bench/studio_broker.py", "bench/common.py"],
            what="N stand-in tables (one MQTT 5 connection each, a real table's recorded payloads) against "
            "one Mosquitto, one rules engine on a shared subscription",
        ),
        "settings": {
            "tables": args.tables,
            "rate": args.rate,
            "seconds": args.seconds,
            "settle_s": args.settle,
            "publisher_processes": args.processes,
            "broker": "mosquitto on 127.0.0.1, persistence off, max_queued_messages 100000; MQTT 5; "
            "rules engine: " + SHARED_EVENTS + " QoS 1 (paho, own process)",
        },
        "recording": describe(template),
        "load_average_1_5_15_min": loads,
        "tables_connected": sum(r.connected for r in reports),
        "tables_online_at_rules_engine": rules_report.online,
        "connect_seconds": round(connect_seconds, 1),
        "window_seconds": round(window, 1),
        "events_published_in_window": events_in_window,
        "events_per_second": round(events_in_window / window, 1),
        "messages_published_total": sum(r.messages for r in reports),
        "messages_per_second_into_broker": round(
            sum(r.messages for r in reports)
            / max(1e-9, sum(len(r.events) for r in reports))
            * events_in_window
            / window,
            1,
        ),
        "end_to_end_ms": common.summary(latencies, digits=2),
        "lost_in_window": lost_in_window,
        "lost_overall": lost,
        "events_published_overall": published_total,
        "publishes_failed": sum(r.failed for r in reports),
        "publishes_not_acknowledged": sum(r.messages - r.failed - r.acked for r in reports),
        "connections_lost": sum(r.disconnected for r in reports),
        "duplicates": rules_report.duplicates,
        "order_errors": rules_report.order_errors,
        "schedule_lateness_ms": common.summary(lateness, digits=2),
        "cpu_percent_of_one_core": cpu | {"publishers_all": publishers_cpu},
        "broker_memory": broker_rss,
        "publisher_rss_mb": publisher_rss,
        "rules_engine_rss_mb": rules_rss,
    }
    output = common.write_result("studio_broker", result, args.output)
    print(markdown(result))
    common.print_written(output, result)
    return 0 if lost == 0 and rules_report.order_errors == 0 and result["connections_lost"] == 0 else 1


def markdown(result: dict[str, Any]) -> str:
    s, e2e, late, cpu = (
        result["settings"],
        result["end_to_end_ms"],
        result["schedule_lateness_ms"],
        result["cpu_percent_of_one_core"],
    )
    loads = result["load_average_1_5_15_min"]
    lines = [
        "| tables | rate | events/s | msgs/s in | end-to-end p50 / p99 / max ms | lost | order errors / dups "
        "| broker CPU | broker RSS | stand-ins CPU | rules engine CPU | lateness p99 ms | load (1 min) |",
        "|---:|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---|",
        f"| {s['tables']} | {s['rate']} | {result['events_per_second']} | "
        f"{result['messages_per_second_into_broker']} | {e2e['p50']} / {e2e['p99']} / {e2e['max']} | "
        f"{result['lost_overall']} | {result['order_errors']} / {result['duplicates']} | {cpu['broker']} % | "
        f"{result['broker_memory']['rss_mb']} MB | {cpu['publishers_all']} % ({s['publisher_processes']} "
        f"processes) | {cpu['rules_engine']} % | {late['p99']} | "
        f"{loads['window_start'][0]} → {loads['window_end'][0]} |",
        "",
        f"{result['tables_connected']} connected, {result['tables_online_at_rules_engine']} online in "
        f"{result['connect_seconds']} s; window {result['window_seconds']} s; "
        f"{result['events_published_overall']} events published in all, "
        f"{result['lost_overall']} never arrived; {result['connections_lost']} connections lost, "
        f"{result['publishes_not_acknowledged']} publishes without PUBACK.",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.rig_parser(__doc__, "studio_broker")
    parser.add_argument("--tables", type=int, default=500, help="stand-in tables (default 500)")
    parser.add_argument(
        "--rate",
        choices=("real", "bench50"),
        default="real",
        help="real: a round every 25-30 s; bench50: the recorded pace, ~3.4 events/s a table (default real)",
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="measurement window (default 60)")
    parser.add_argument(
        "--settle", type=float, default=10.0, help="playing before the window (s, default 10)"
    )
    parser.add_argument("--processes", type=int, default=2, help="publisher processes (default 2)")
    parser.add_argument("--record-rounds", type=int, default=6, help="rounds of the real table recorded")
    parser.add_argument(
        "--connect-timeout", type=float, default=120.0, help="for every stand-in to connect (s)"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(run(parse_args()))
