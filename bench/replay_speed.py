"""How fast `tablectl replay` runs through a long roulette capture, and what it prints.

Records sessions of the simulated Cammegh SS2 wheel with every injectable fault (the same faults as the test
suite's long-session test) as a JSON Lines capture (device bytes only, as any version of the replay reads),
then replays it through the whole pure stack (`controller.replay.replay_file`) and reports lines per second
and CPU seconds. Two shapes of capture:

- `--days 0` (default): one session of `--hours` of continuous play: every status line of a polled wheel,
  so the replay's cost is parsing the wheel's lines;
- `--days N`: N studio days, each `--hours` of play and then the table closed (no traffic) until the next
  play session `--day-spacing` days later, as a table's capture over weeks looks: there the cost of a replay
  that walks through idle time shows. `--changes-only` keeps only the lines that differ from the previous
  one (a log that records changes, as a vendor's log does): few lines over a long time.

Also measured, as the floor no replay of that capture can go below: reading the capture (the JSON Lines
decoded and checked into records), and that plus the wheel's sans-IO framer and parser over every received
byte (`floor`), in CPU seconds. On a capture where every line is a status line, that floor is most of
the cost.

`--digest FILE` writes the replay's events (type, subject, time and data; ids and record times differ per
run) so that two versions of the code can be compared for identical output (`events_sha256`).

    python bench/replay_speed.py                        # 2 simulated hours: bench/results/replay-speed.json
    python bench/replay_speed.py --days 3 --hours 1     # 3 days with 1 hour of play each
    python bench/replay_speed.py --capture C.jsonl --digest /tmp/digest.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from pathlib import Path

import common

from controller.testing.wheel_faults import FAULTS, STEP, T0
from drivers.capture import CaptureWriter
from drivers.wheel.session import WheelSession
from drivers.wheel.simulator import WheelDevice


def record(path: Path, seconds: float, seed: int, start: float = T0, changes_only: bool = False) -> int:
    """Record the wheel's traffic with a host session polling it, as `tablectl run` would capture it.

    A technician repairs a latched fault after 2 s and powers the wheel up again, so the wheel keeps
    playing for the whole session. Returns the number of records written."""
    device = WheelDevice(seed=seed, speed=8.0, boot_seconds=0.5, faults=FAULTS)
    session = WheelSession("wheel", user_start=False)  # the wheel starts each game by itself
    now = start
    device.connected(now)
    session.connection_made(now)
    records = 0
    fault_since: float | None = None
    last_rx = b""
    with CaptureWriter(path) as capture:
        end = now + seconds
        while now < end:
            now = round(now + STEP, 6)
            data = device.poll(now)
            if data:
                if not (changes_only and data == last_rx):
                    capture.rx(data, now)
                    records += 1
                last_rx = data
                session.data_received(data, now)
            session.tick(now)
            sent = session.data_to_send()
            if sent:
                if not changes_only:
                    capture.tx(sent, now)
                    records += 1
                device.receive(sent, now)
            if device.latched_fault:
                fault_since = fault_since or now
                if now - fault_since > 2:
                    device.repair()
                    fault_since = None
    return records


def measure_floor(capture: Path) -> dict[str, float]:
    """CPU seconds of what any replay of the capture must do: read its records, parse the wheel's bytes."""
    from drivers.capture import read_capture
    from drivers.wheel.protocol import WheelFramer

    cpu_started = time.process_time()
    records = read_capture(capture)
    read_s = time.process_time() - cpu_started
    cpu_started = time.process_time()
    framer = WheelFramer()
    messages = 0
    for record in records:
        if record.direction == "rx":
            messages += sum(1 for _ in framer.feed(record.data))
    parse_s = time.process_time() - cpu_started
    return {
        "read_capture_cpu_s": round(read_s, 3),
        "framer_and_parser_cpu_s": round(parse_s, 3),
        "read_and_parse_cpu_s": round(read_s + parse_s, 3),
        "messages": messages,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hours", type=float, default=2.0, help="hours of play (per day with --days)")
    parser.add_argument("--days", type=int, default=0, help="play sessions, the table closed in between")
    parser.add_argument(
        "--day-spacing", type=float, default=1.0, help="days from one play session to the next"
    )
    parser.add_argument("--changes-only", action="store_true", help="record only lines that changed")
    parser.add_argument("--seed", type=int, default=424242)
    parser.add_argument("--capture", type=Path, help="replay this capture instead of recording one")
    parser.add_argument("--digest", type=Path, help="write the replayed events here (for comparisons)")
    common.add_output_argument(parser, "replay-speed")
    args = parser.parse_args()
    started_at = common.now()

    from controller.replay import replay_file

    with tempfile.TemporaryDirectory() as tmp:
        capture = args.capture or Path(tmp) / "wheel.jsonl"
        if args.capture is None and args.days == 0:
            record(capture, args.hours * 3600, args.seed, changes_only=args.changes_only)
        elif args.capture is None:
            for day in range(args.days):
                start = T0 + day * args.day_spacing * 86400
                record(
                    capture, args.hours * 3600, args.seed + day, start=start, changes_only=args.changes_only
                )
        lines = sum(1 for _ in capture.open(encoding="utf-8"))
        times = [json.loads(row)["t"] for row in capture.open(encoding="utf-8")]
        first_t, last_t = min(times), max(times)
        floor = measure_floor(capture)
        started = time.perf_counter()
        cpu_started = time.process_time()
        events = [
            {"type": e.type, "subject": e.subject, "time": e.time, "data": e.data}
            for e in replay_file("roulette", "cammegh-ss2", capture)
        ]
        wall = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
    text = json.dumps(events, sort_keys=True)
    summary = {
        **common.header(
            "replay-speed",
            started_at,
            common.machine(),
            what="tablectl replay of a simulated SS2 capture: CPU seconds, lines/s, the events' digest",
        ),
        "simulated_hours": args.hours,
        "days": args.days,
        "day_spacing": args.day_spacing,
        "changes_only": args.changes_only,
        "span_days": round((last_t - first_t) / 86400, 2),
        "capture_lines": lines,
        "events": len(events),
        "results": sum(e["type"] == "round.result" for e in events),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "lines_per_s": round(lines / wall),
        "events_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "floor": floor,
    }
    if args.digest:
        args.digest.write_text(text, encoding="utf-8")
    common.write_result("replay-speed", summary, args.output)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
