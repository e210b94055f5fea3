"""Backlog flush: how fast the outbox drains after a broker outage at a busy table, with live events flowing.

A journal holds `--backlog` events (50,000 by default: card.dealt-sized envelopes) that waited through an
outage; then the table's real `TableBus` connects to a real Mosquitto and drains them, in sequence order,
QoS 1,
through its in-flight window (`broker.max_inflight`), while the benchmark goes on committing live events
(`--live-rate` per second, each journaled with `synchronous=FULL` and handed to the bus exactly as the service
does after a step). A QoS 1 subscriber in its own process (standing for the rules engine) checks that every
event arrives, in order, once or more (at-least-once).

Reported: the drain rate (backlog events per second, from the connection to the last PUBACK), the live
events' commit time during the flush (the device's ACK waits for it: it must not be starved), their delay to
the subscriber (they queue behind the backlog: strict order), the event loop's worst lag, and the same drain
with a window of 1 (one publish at a time, as before) for comparison.

Run: `python bench/flush.py` (see bench/README.md). Writes `bench/results/flush.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import common

from controller.bus import TableBus
from controller.config import BrokerSettings
from controller.events import CardDealt, make_event
from controller.journal import Journal

ROOT = "studio/bench/table/flush"
APPEND_BATCH = 1000

#: the subscriber, in its own process: counts every event, checks the order of first occurrences, stamps the
#: live ones (CLOCK_MONOTONIC, the same clock as the benchmark's); prints one JSON summary when told to stop
_SUBSCRIBER = """
import json, sys, threading, time
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
port, topic = int(sys.argv[1]), sys.argv[2]
seen = set(); order_ok = True; last = 0; total = 0; live = {}; first_ns = None; last_ns = None
ready = threading.Event()
def on_connect(client, userdata, flags, reason, props):
    client.subscribe(topic, qos=1)
def on_subscribe(client, userdata, mid, reasons, props):
    ready.set(); sys.stdout.write("ready\\n"); sys.stdout.flush()
def on_message(client, userdata, message):
    global order_ok, last, total, first_ns, last_ns
    now = time.perf_counter_ns()
    payload = bytes(message.payload)
    i = payload.index(b'"sequence":"') + 12
    sequence = int(payload[i:i + 12])
    total += 1
    first_ns = first_ns or now
    last_ns = now
    if sequence in seen:
        return
    seen.add(sequence)
    if sequence < last:
        order_ok = False
    last = max(last, sequence)
    if b'"historical":false' in payload:
        live[sequence] = now
client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="bench-flush-rules", protocol=mqtt.MQTTv5)
client.on_connect, client.on_subscribe, client.on_message = on_connect, on_subscribe, on_message
client.connect("127.0.0.1", port)
client.loop_start()
for line in sys.stdin:
    if line.strip() == "count":
        sys.stdout.write(f"{len(seen)}\\n"); sys.stdout.flush()
    else:
        break
client.disconnect(); client.loop_stop()
print(json.dumps({"total": total, "unique": len(seen), "max": last, "in_order": order_ok,
                  "first_ns": first_ns, "last_ns": last_ns, "live": live}))
"""


def card_event(n: int, now: float) -> Any:
    data = CardDealt(
        round_id=f"bac-flush-{n // 5:07d}",
        card="TD",
        position="player" if n % 2 else "banker",
        index=n % 3,
        rescan=False,
        raw=f"CARD {n % 10000:04d} TD*4F",
    )
    return make_event("card.dealt", data, now)


async def start_subscriber(port: int) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _SUBSCRIBER,
        str(port),
        f"{ROOT}/events/#",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=1 << 26,
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 10)
    if line.strip() != b"ready":
        raise RuntimeError(f"the subscriber did not subscribe: {line!r}")
    return process


async def wait_subscriber(process: asyncio.subprocess.Process, expected: int, timeout: float) -> None:
    """Until the subscriber has every event (it may lag the broker's PUBACKs to the table)."""
    assert process.stdin is not None and process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        process.stdin.write(b"count\n")
        await process.stdin.drain()
        if int(await process.stdout.readline()) >= expected:
            return
        await asyncio.sleep(0.1)


async def stop_subscriber(process: asyncio.subprocess.Process) -> dict[str, Any]:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(b"stop\n")
    await process.stdin.drain()
    out = await asyncio.wait_for(process.stdout.read(), 30)
    await process.wait()
    summary: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return summary


async def loop_lag(samples: list[float], stop: asyncio.Event) -> None:
    """How late the event loop runs a 5 ms timer: what a device's bytes would wait for during the flush."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        start = loop.time()
        await asyncio.sleep(0.005)
        samples.append(loop.time() - start - 0.005)


async def one_drain(
    port: int, workdir: Path, backlog: int, window: int, live_rate: float, timeout: float
) -> dict[str, Any]:
    journal_path = workdir / f"flush-{window}-{time.monotonic_ns()}.sqlite3"
    journal = Journal(journal_path, ROOT)
    started_fill = time.perf_counter()
    now = time.time() - 600  # journaled during the outage, ten minutes ago
    for start in range(0, backlog, APPEND_BATCH):
        journal.append([card_event(n, now) for n in range(start, min(backlog, start + APPEND_BATCH))])
    fill_seconds = time.perf_counter() - started_fill

    subscriber = await start_subscriber(port)
    settings = BrokerSettings(url=f"mqtt://127.0.0.1:{port}", max_inflight=window, reconnect_min_seconds=0.1)

    async def no_commands(_command: Any) -> dict[str, Any]:
        return {}

    bus = TableBus(settings, root=ROOT, journal=journal, handle_command=no_commands, client_id="bench-flush")
    lags: list[float] = []
    stop_lag = asyncio.Event()
    commits_ns: list[int] = []
    live_committed: dict[int, int] = {}
    live_count = 0
    connected_at: float | None = None
    drained_at: float | None = None
    outbox_left = -1
    runner = asyncio.create_task(bus.run())
    lag_task = asyncio.create_task(loop_lag(lags, stop_lag))
    deadline = time.monotonic() + timeout
    try:
        next_live = time.monotonic()
        while time.monotonic() < deadline:
            if connected_at is None and bus.connected:
                connected_at = time.perf_counter()
            if connected_at is not None and drained_at is None and bus.stats.published >= backlog:
                drained_at = time.perf_counter()
            if drained_at is not None and bus.stats.published >= backlog + live_count:
                break
            if connected_at is not None and live_rate > 0 and time.monotonic() >= next_live:
                # a live event, as the service commits one after a step (then the device gets its ACK)
                start = time.perf_counter_ns()
                (envelope,) = journal.append([card_event(backlog + live_count, time.time())])
                commits_ns.append(time.perf_counter_ns() - start)
                bus.events_committed()
                live_committed[int(envelope.sequence)] = time.perf_counter_ns()
                live_count += 1
                next_live += 1 / live_rate
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.2)  # the ack batch lands
        outbox_left = journal.outbox_size()
        await wait_subscriber(subscriber, backlog + live_count, 60)
    finally:
        stop_lag.set()
        await lag_task
        await asyncio.wait_for(bus.close(), 10)
        await asyncio.wait_for(runner, 10)
        received = await stop_subscriber(subscriber)
        journal.close()
    drain_seconds = (drained_at - connected_at) if drained_at and connected_at else None
    delays = sorted(
        received["live"][str(sequence)] - committed
        for sequence, committed in live_committed.items()
        if str(sequence) in received["live"]
    )
    lags.sort()
    return {
        "window": window,
        "backlog": backlog,
        "fill_seconds": round(fill_seconds, 2),
        "drain_seconds": round(drain_seconds, 3) if drain_seconds else None,
        "events_per_second": round(backlog / drain_seconds) if drain_seconds else None,
        "inflight_peak": bus.stats.inflight_peak,
        "published": bus.stats.published,
        "outbox_left": outbox_left,
        "subscriber": {k: v for k, v in received.items() if k != "live"},
        "subscriber_events_per_second": round(
            received["total"] / ((received["last_ns"] - received["first_ns"]) / 1e9)
        )
        if received.get("first_ns") and received.get("last_ns") and received["last_ns"] > received["first_ns"]
        else None,
        "all_delivered_in_order": received["unique"] == backlog + live_count and received["in_order"],
        "live_events": live_count,
        "live_commit": common.summary_ms(commits_ns),
        "live_delivery_delay": common.summary_ms(delays),
        "loop_lag_ms": common.summary(lags, scale=1e3),
    }


async def run(args: argparse.Namespace) -> int:
    started_at = common.now()
    # a rules engine's broker queues what its subscriber has not taken yet (Mosquitto's default drops QoS 1
    # messages past 1000 queued for a client)
    with (
        common.scratch_dir(args.data_dir) as workdir,
        common.mosquitto(workdir, extra_config="max_queued_messages 0") as broker,
    ):
        fsync = common.fsync_probe(workdir)
        loads = {"start": common.load_average()}
        runs = []
        for repeat in range(args.repeat):
            for window in (args.window, 1) if args.compare_window_1 else (args.window,):
                backlog = args.backlog if window > 1 else min(args.backlog, args.backlog_window_1)
                result = await one_drain(broker.port, workdir, backlog, window, args.live_rate, args.timeout)
                result["repeat"] = repeat + 1
                result["load_average_after"] = common.load_average()
                runs.append(result)
                print(
                    f"window {window}: {backlog} events drained in {result['drain_seconds']} s "
                    f"({result['events_per_second']}/s), in order and complete: "
                    f"{result['all_delivered_in_order']}; live commits p50 "
                    f"{result['live_commit'].get('p50_ms')} ms p99 {result['live_commit'].get('p99_ms')} "
                    f"ms; loop lag max {result['loop_lag_ms']['max']} ms",
                    file=sys.stderr,
                )
        loads["end"] = common.load_average()
        machine = common.machine_info(broker.binary)
    windowed = [r for r in runs if r["window"] == args.window and r["events_per_second"]]
    report = {
        **common.header(
            "flush",
            started_at,
            machine,
            what="backlog flush: journaled events drained to Mosquitto through the in-flight window",
        ),
        "settings": {
            "backlog": args.backlog,
            "window": args.window,
            "live_rate_per_second": args.live_rate,
            "repeat": args.repeat,
            "broker": "mosquitto on 127.0.0.1, persistence off, max_queued_messages 0; MQTT 5, QoS 1",
            "journal_filesystem": common.filesystem_of(workdir.parent),
        },
        "disk_append_fdatasync": fsync,
        "load_average_1_5_15_min": loads,
        "median_events_per_second": statistics.median(r["events_per_second"] for r in windowed)
        if windowed
        else None,
        "runs": runs,
    }
    output = common.write_result("flush", report, args.output)
    print()
    print(
        "| window | backlog | drained in s | events/s | in order, none lost | live commit p50 / p99 ms "
        "| live delay p50 ms | loop lag max ms |"
    )
    print("|---:|---:|---:|---:|---|---|---:|---:|")
    for r in runs:
        print(
            f"| {r['window']} | {r['backlog']} | {r['drain_seconds']} | {r['events_per_second']} | "
            f"{'yes' if r['all_delivered_in_order'] else 'NO'} | {r['live_commit'].get('p50_ms')} / "
            f"{r['live_commit'].get('p99_ms')} | {r['live_delivery_delay'].get('p50_ms')} | "
            f"{r['loop_lag_ms']['max']} |"
        )
    print()
    print(f"median drain rate (window {args.window}): {report['median_events_per_second']} events/s")
    common.print_written(output, report)
    ok = all(r["all_delivered_in_order"] and r["outbox_left"] == 0 for r in runs)
    return 0 if ok else 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.rig_parser(__doc__, "flush")
    parser.add_argument("--backlog", type=int, default=50_000, help="events waiting (default 50,000)")
    parser.add_argument("--window", type=int, default=100, help="broker.max_inflight (default 100)")
    parser.add_argument("--live-rate", type=float, default=20.0, help="live events per second (default 20)")
    parser.add_argument("--repeat", type=int, default=3, help="runs (default 3)")
    parser.add_argument(
        "--no-compare-window-1",
        dest="compare_window_1",
        action="store_false",
        help="skip the one-at-a-time drain (window 1)",
    )
    parser.add_argument(
        "--backlog-window-1", type=int, default=5_000, help="backlog for the window-1 drain (default 5,000)"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="limit per drain (s)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(run(parse_args(argv)))
    return 1


if __name__ == "__main__":
    sys.exit(main())
