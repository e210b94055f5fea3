"""Memory: the resident set of a running baccarat table over many rounds, and whether it grows per round.

A real `tablectl run` process (journal on disk, MQTT 5 to a real Mosquitto) deals from `tablectl simulate shoe
--deal-every ...` on a pty as fast as the table takes cards; a paho subscriber in this process counts the
`round.closed` events. The table's RSS is read from /proc/<pid>/status (VmRSS; VmHWM for the peak) every
`--sample-every` rounds.

Reported: RSS after the first rounds, at the end, the peak, and the growth per 1,000 rounds over the second
half of the run (least squares; the first half includes warm-up: the SQLite page cache, the allocator's
pools, the first shoe). Flat means that growth is within noise.

Run: `python bench/memory.py` (10,000 rounds; see bench/README.md). Writes
`bench/results/memory.json`.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import subprocess
import sys
import time
from typing import Any

import common
import paho.mqtt.client as mqtt

STUDIO, TABLE = "bench", "bac-memory"
ROOT = f"studio/{STUDIO}/table/{TABLE}"


def rss_sample(pid: int, rounds: int, began: float) -> dict[str, Any]:
    status = common.proc_status(pid)
    return {
        "rounds": rounds,
        "seconds": round(time.monotonic() - began, 1),
        "rss_kb": status["VmRSS"],
        "hwm_kb": status["VmHWM"],
    }


def slope_per_1000(points: list[tuple[int, int]]) -> float | None:
    """Least-squares growth of RSS (kB) per 1,000 rounds."""
    if len(points) < 3:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    var = sum((x - mean_x) ** 2 for x, _ in points)
    if not var:
        return None
    cov = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return round(cov / var * 1000, 1)


class RoundCounter(common.Subscriber):
    def __init__(self, port: int) -> None:
        self.closed = 0
        self.voided = 0
        self.events = 0
        super().__init__(port, client_id="bench-memory", topic=f"{ROOT}/events/#")

    def _on_message(self, client: Any, userdata: Any, message: mqtt.MQTTMessage) -> None:
        self.events += 1
        if message.topic.endswith("/round.closed"):
            self.closed += 1
        elif message.topic.endswith("/round.voided"):
            self.voided += 1


def run(args: argparse.Namespace) -> int:
    started = common.now()
    samples: list[dict[str, Any]] = []
    with (
        common.scratch_dir(args.data_dir) as workdir,
        common.broker_and_shoe(workdir, deal_every=args.deal_every, seed=11) as rig,
    ):
        counter = table = None
        try:
            config = workdir / "table.toml"
            config.write_text(
                f'[table]\nstudio_id = "{STUDIO}"\ntable_id = "{TABLE}"\ngame = "baccarat"\n'
                f'data_dir = "{workdir / "data"}"\n\n[broker]\nurl = "mqtt://127.0.0.1:{rig.broker.port}"\n\n'
                f'[devices.shoe]\nprotocol = "shoe-line"\nport = "{rig.shoe_path}"\n\n'
                "[game]\nbetting_closes_on_first_card = true\nround_gap_seconds = 0\n",
                encoding="utf-8",
            )
            counter = RoundCounter(rig.broker.port)
            loads = {"start": common.load_average()}
            began = time.monotonic()
            table = subprocess.Popen(
                [*common.tablectl_command(), "run", "--config", str(config)],
                stdout=rig.log,
                stderr=rig.log,
            )
            next_sample = 0
            while counter.closed < args.rounds:
                if time.monotonic() - began > args.max_seconds:
                    print(f"stopped after {args.max_seconds} s", file=sys.stderr)
                    break
                if table.poll() is not None:
                    raise RuntimeError(f"tablectl exited with {table.returncode}")
                if counter.closed >= next_sample:
                    samples.append(rss_sample(table.pid, counter.closed, began))
                    if len(samples) % 10 == 1:
                        print(f"{samples[-1]}", file=sys.stderr)
                    next_sample += args.sample_every
                time.sleep(0.05)
            samples.append(rss_sample(table.pid, counter.closed, began))
            loads["end"] = common.load_average()
            journal_bytes = sum(p.stat().st_size for p in (workdir / "data").glob("*") if p.is_file())
            machine = common.machine_info(rig.broker.binary)
            rounds, events, voided = counter.closed, counter.events, counter.voided
        finally:
            if table is not None:
                table.send_signal(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    table.wait(10)
            if counter is not None:
                counter.close()
    half = [(s["rounds"], s["rss_kb"]) for s in samples if s["rounds"] >= rounds / 2]
    first = next((s for s in samples if s["rounds"] >= min(100, rounds)), samples[0])
    report = {
        **common.header(
            "memory",
            started,
            machine,
            what="resident memory of a running baccarat table (tablectl run) over many rounds",
        ),
        "settings": {
            "rounds": args.rounds,
            "deal_every_s": args.deal_every,
            "sample_every": args.sample_every,
        },
        "load_average_1_5_15_min": loads,
        "rounds_closed": rounds,
        "rounds_voided": voided,
        "events_received": events,
        "seconds": samples[-1]["seconds"],
        "rss_mb_after_100_rounds": round(first["rss_kb"] / 1024, 1),
        "rss_mb_end": round(samples[-1]["rss_kb"] / 1024, 1),
        "peak_mb": round(max(s["hwm_kb"] for s in samples) / 1024, 1),
        "growth_kb_per_1000_rounds_second_half": slope_per_1000(half),
        "journal_bytes": journal_bytes,
        "samples": samples,
    }
    output = common.write_result("memory", report, args.output)
    print()
    print(
        "| rounds | seconds | RSS after 100 rounds MB | RSS at end MB | peak MB | growth kB / 1,000 rounds |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {rounds} | {report['seconds']} | {report['rss_mb_after_100_rounds']} | {report['rss_mb_end']} | "
        f"{report['peak_mb']} | {report['growth_kb_per_1000_rounds_second_half']} |"
    )
    print(f"events {events}, journal {journal_bytes / 1e6:.1f} MB")
    common.print_written(output, report)
    return 0 if rounds >= args.rounds else 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.rig_parser(__doc__, "memory")
    parser.add_argument("--rounds", type=int, default=10_000, help="rounds to deal (default 10,000)")
    parser.add_argument(
        "--deal-every", type=float, default=0.001, help="the dealer's pace (s, default 0.001)"
    )
    parser.add_argument("--sample-every", type=int, default=250, help="rounds between RSS samples")
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="give up after (s)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(run(parse_args()))
