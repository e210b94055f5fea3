"""A studio on one broker: N tables (`tablectl run` processes, each dealt by a `tablectl simulate shoe`)
against one Mosquitto and one subscriber standing for the rules engine (MQTT 5 shared subscription
`$share/rules/studio/+/table/+/events/#`, in its own process).

Reported for the measurement window (after every table said `online`): events per second at the rules engine,
end-to-end latency (the event's `time`, when the table read the shoe's line, to its arrival at the rules
engine; both wall clocks of this machine, millisecond resolution) and commit-to-arrival (`recordedtime`),
order per table (sequence never goes back) and duplicates, and the CPU used by the broker, the tables and the
simulators (from /proc/<pid>/stat), as a share of one core.

Run: `python bench/studio.py` (50 tables, 60 s; see bench/README.md). Writes
`bench/results/studio.json`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import subprocess
import sys
import time

import common

STUDIO = "bench"

#: the rules engine: a shared subscription; prints "ready", then on "stop" one JSON summary
_RULES_ENGINE = r"""
import json, sys, threading, time
from datetime import datetime
import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
port = int(sys.argv[1])
lock = threading.Lock()
state = {"measuring": False, "events": 0, "dups": 0, "order_errors": 0, "e2e_ms": [], "commit_ms": [],
         "first": None, "last": None, "online": set(), "per_table": {}}
last_seq = {}
seen = set()
def ms(iso):
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000
def on_connect(client, userdata, flags, reason, props):
    client.subscribe([("$share/rules/studio/+/table/+/events/#", 1), ("studio/+/table/+/status", 1)])
def on_subscribe(client, userdata, mid, reasons, props):
    sys.stdout.write("ready\n"); sys.stdout.flush()
def on_message(client, userdata, message):
    now = time.time() * 1000
    topic = message.topic
    if topic.endswith("/status"):
        body = json.loads(message.payload)
        if body.get("status") == "online":
            state["online"].add(topic)
        return
    event = json.loads(message.payload)
    source = event["source"]
    sequence = int(event["sequence"])
    key = (source, sequence)
    with lock:
        if key in seen:
            state["dups"] += 1
            return
        seen.add(key)
        if sequence < last_seq.get(source, 0):
            state["order_errors"] += 1
        last_seq[source] = max(sequence, last_seq.get(source, 0))
        if not state["measuring"]:
            return
        state["events"] += 1
        state["per_table"][source] = state["per_table"].get(source, 0) + 1
        state["first"] = state["first"] or now
        state["last"] = now
        if not event.get("historical"):
            state["e2e_ms"].append(round(now - ms(event["time"]), 1))
            state["commit_ms"].append(round(now - ms(event["recordedtime"]), 1))
client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="rules-engine-1", protocol=mqtt.MQTTv5)
client.on_connect, client.on_subscribe, client.on_message = on_connect, on_subscribe, on_message
client.connect("127.0.0.1", port)
client.loop_start()
for line in sys.stdin:
    command = line.strip()
    if command == "online":
        sys.stdout.write(f"{len(state['online'])}\n"); sys.stdout.flush()
    elif command == "start":
        with lock:
            state["measuring"] = True
            state["started"] = time.time() * 1000
        sys.stdout.write("started\n"); sys.stdout.flush()
    elif command == "stop":
        with lock:
            state["measuring"] = False
            state["stopped"] = time.time() * 1000
            out = dict(state, online=len(state["online"]))
        sys.stdout.write(json.dumps(out) + "\n"); sys.stdout.flush()
        break
client.disconnect(); client.loop_stop()
"""


def ask(process: subprocess.Popen[bytes], command: str) -> str:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(command.encode() + b"\n")
    process.stdin.flush()
    return process.stdout.readline().decode().strip()


def run(args: argparse.Namespace) -> int:
    started = common.now()
    tables: list[subprocess.Popen[bytes]] = []
    shoes: list[subprocess.Popen[bytes]] = []
    with (
        common.scratch_dir(args.data_dir) as workdir,
        common.mosquitto(workdir, extra_config="max_queued_messages 100000") as broker,
        (workdir / "processes.log").open("ab") as log,
    ):
        assert broker._process is not None
        broker_pid = broker._process.pid
        rules = subprocess.Popen(
            [sys.executable, "-c", _RULES_ENGINE, str(broker.port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
        try:
            assert rules.stdout is not None
            if rules.stdout.readline().strip() != b"ready":
                raise RuntimeError("the rules engine did not subscribe")
            loads = {"start": common.load_average()}
            launch_began = time.monotonic()
            for number in range(args.tables):
                table_id = f"bac-{number + 1:03d}"
                shoe = subprocess.Popen(
                    [
                        *common.tablectl_command(),
                        "simulate",
                        "shoe",
                        "--pty",
                        str(workdir / f"{table_id}.pty"),
                        "--deal-every",
                        str(args.deal_every),
                        "--seed",
                        str(number + 1),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=log,
                    stdin=subprocess.DEVNULL,
                )
                shoes.append(shoe)
                assert shoe.stdout is not None
                shoe_path = shoe.stdout.readline().decode().strip()
                config = workdir / f"{table_id}.toml"
                config.write_text(
                    f'[table]\nstudio_id = "{STUDIO}"\ntable_id = "{table_id}"\ngame = "baccarat"\n'
                    f'data_dir = "{workdir / "data"}"\n\n[broker]\nurl = "mqtt://127.0.0.1:{broker.port}"\n'
                    f"max_inflight = {args.max_inflight}\n\n"
                    f'[devices.shoe]\nprotocol = "shoe-line"\nport = "{shoe_path}"\n\n'
                    f"[game]\nbetting_closes_on_first_card = true\nround_gap_seconds = {args.round_gap}\n",
                    encoding="utf-8",
                )
                tables.append(
                    subprocess.Popen(
                        [*common.tablectl_command(), "run", "--config", str(config)],
                        stdout=log,
                        stderr=log,
                        stdin=subprocess.DEVNULL,
                    )
                )
            deadline = time.monotonic() + args.launch_timeout
            online = 0
            while time.monotonic() < deadline:
                online = int(ask(rules, "online"))
                if online >= args.tables:
                    break
                time.sleep(0.5)
            launch_seconds = time.monotonic() - launch_began
            print(f"{online}/{args.tables} tables online after {launch_seconds:.1f} s", file=sys.stderr)
            time.sleep(args.settle)
            cpu_before = {
                "broker": common.cpu_seconds(broker_pid, gone=0.0),
                "tables": sum(common.cpu_seconds(p.pid, gone=0.0) for p in tables),
                "simulators": sum(common.cpu_seconds(p.pid, gone=0.0) for p in shoes),
                "rules_engine": common.cpu_seconds(rules.pid, gone=0.0),
            }
            window_began = time.monotonic()
            ask(rules, "start")
            time.sleep(args.seconds)
            summary = json.loads(ask(rules, "stop"))
            window = time.monotonic() - window_began
            cpu_after = {
                "broker": common.cpu_seconds(broker_pid, gone=0.0),
                "tables": sum(common.cpu_seconds(p.pid, gone=0.0) for p in tables),
                "simulators": sum(common.cpu_seconds(p.pid, gone=0.0) for p in shoes),
                "rules_engine": common.cpu_seconds(rules.pid, gone=0.0),
            }
            table_rss = sorted(common.memory_mib(p.pid) for p in tables)
            alive = sum(1 for p in tables if p.poll() is None)
            loads["end"] = common.load_average()
            machine = common.machine_info(broker.binary)
        finally:
            for process in [*tables, *shoes]:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
            for process in [*tables, *shoes]:
                try:
                    process.wait(15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
            with contextlib.suppress(Exception):
                rules.kill()
                rules.wait(5)
    cpu = {
        key: round((cpu_after[key] - cpu_before[key]) / window * 100, 1) for key in cpu_before
    }  # percent of one core
    events = summary["events"]
    report = {
        **common.header(
            "studio",
            started,
            machine,
            what="a studio on one broker: N tablectl run processes, one rules engine (shared subscription)",
        ),
        "settings": {
            "tables": args.tables,
            "deal_every_s": args.deal_every,
            "round_gap_s": args.round_gap,
            "seconds": args.seconds,
            "max_inflight": args.max_inflight,
            "broker": "mosquitto on 127.0.0.1, persistence off; MQTT 5, QoS 1; "
            "rules engine: $share/rules/studio/+/table/+/events/#",
        },
        "load_average_1_5_15_min": loads,
        "tables_online": summary["online"],
        "tables_alive_at_end": alive,
        "launch_seconds": round(launch_seconds, 1),
        "window_seconds": round(window, 1),
        "events": events,
        "events_per_second": round(events / window, 1),
        "per_table_events_per_second": {
            "min": round(min(summary["per_table"].values(), default=0) / window, 2),
            "max": round(max(summary["per_table"].values(), default=0) / window, 2),
        },
        "end_to_end_ms": common.summary(summary["e2e_ms"], digits=1),
        "commit_to_rules_engine_ms": common.summary(summary["commit_ms"], digits=1),
        "duplicates": summary["dups"],
        "order_errors": summary["order_errors"],
        "cpu_percent_of_one_core": cpu,
        "cpu_percent_per_table": round(cpu["tables"] / max(1, args.tables), 2),
        "table_rss_mb": {
            "min": round(table_rss[0], 1),
            "median": round(table_rss[len(table_rss) // 2], 1),
            "max": round(table_rss[-1], 1),
        }
        if table_rss
        else None,
    }
    output = common.write_result("studio", report, args.output)
    e2e, commit = report["end_to_end_ms"], report["commit_to_rules_engine_ms"]
    print()
    print(
        "| tables | events/s | end-to-end p50 / p99 ms | commit → rules p50 / p99 ms | broker CPU "
        "| tables CPU (all) | simulators CPU | order errors | duplicates |"
    )
    print("|---:|---:|---|---|---:|---:|---:|---:|---:|")
    print(
        f"| {args.tables} | {report['events_per_second']} | {e2e.get('p50')} / {e2e.get('p99')} | "
        f"{commit.get('p50')} / {commit.get('p99')} | {cpu['broker']} % | {cpu['tables']} % | "
        f"{cpu['simulators']} % | {report['order_errors']} | {report['duplicates']} |"
    )
    print(
        f"online {summary['online']}/{args.tables}, alive at end {alive}; "
        f"RSS per table {report['table_rss_mb']}"
    )
    common.print_written(output, report)
    return 0 if alive == args.tables and report["order_errors"] == 0 else 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.rig_parser(__doc__, "studio")
    parser.add_argument("--tables", type=int, default=50, help="tablectl run processes (default 50)")
    parser.add_argument("--deal-every", type=float, default=0.1, help="each dealer's pace (s, default 0.1)")
    parser.add_argument("--round-gap", type=float, default=0.5, help="game.round_gap_seconds (default 0.5)")
    parser.add_argument("--seconds", type=float, default=60.0, help="measurement window (default 60)")
    parser.add_argument(
        "--settle", type=float, default=5.0, help="pause between all online and measuring (s)"
    )
    parser.add_argument("--max-inflight", type=int, default=100, help="broker.max_inflight of each table")
    parser.add_argument(
        "--launch-timeout", type=float, default=300.0, help="for every table to be online (s)"
    )
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(run(parse_args()))
