"""What `tablectl simulate studio --tables N` costs: the process's CPU (share of one core) and RSS while its N
tables play, and whether its tables keep up (events journaled per second, acknowledgement timeouts and
reconnections in its log).

Each run starts the command against a private Mosquitto (not counted: a studio has its own broker), lets it
warm up `--warmup` seconds, then reads the process's utime + stime and VmRSS from /proc over `--seconds`, and
the events journaled from its report lines. All tables run in one process on one event loop, so the CPU share
of a core is the figure that bounds N: near 1.0 the tables fall behind.

Run: `python bench/studio_demo.py` (see bench/README.md). Writes `bench/results/studio_demo.json`.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from pathlib import Path
from typing import Any

import common

REPORT = re.compile(r"(\d+) table\(s\) running, (\d+) event\(s\) journaled")


async def measure(url: str, tables: int, warmup: float, seconds: float) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        *common.tablectl_command(),
        "simulate",
        "studio",
        "--tables",
        str(tables),
        "--mqtt-url",
        url,
        stdin=asyncio.subprocess.PIPE,  # kept open: the studio reads commands, none come
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    lines: list[tuple[float, str]] = []  # (when it was read, the line)

    async def read() -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            lines.append((time.monotonic(), line.decode(errors="replace")))

    reader = asyncio.create_task(read())
    try:
        await asyncio.sleep(warmup)
        before, started = common.cpu_seconds(process.pid), time.monotonic()
        await asyncio.sleep(seconds)
        used, elapsed = common.cpu_seconds(process.pid) - before, time.monotonic() - started
        rss = common.memory_mib(process.pid)
        window = [(at, line) for at, line in lines if at >= started]
    finally:
        process.send_signal(signal.SIGTERM)
        await process.wait()
        reader.cancel()
    # the rate between the first and the last report line inside the window (each says the events so far)
    reports = [(at, int(m.group(2))) for at, line in window if (m := REPORT.search(line))]
    rate = None
    if len(reports) >= 2 and reports[-1][0] > reports[0][0]:
        rate = round((reports[-1][1] - reports[0][1]) / (reports[-1][0] - reports[0][0]), 1)
    return {
        "tables": tables,
        "seconds": round(elapsed, 1),
        "cpu_share_of_a_core": round(used / elapsed, 3),
        "rss_mib": round(rss, 1),
        "events_journaled_per_second": rate,  # None: fewer than two report lines in the window
        "ack_timeouts_in_window": sum("timed out" in line for _, line in window),
        "reconnections_in_window": sum("reconnecting to the MQTT broker" in line for _, line in window),
    }


def main() -> None:
    args = common.parser(__doc__)
    args.add_argument("--tables", default="8,16,32", help="studio sizes, comma-separated")
    args.add_argument("--warmup", type=float, default=20.0)
    args.add_argument("--seconds", type=float, default=40.0)
    common.add_output_argument(args, "studio_demo")
    options = args.parse_args()
    started = common.now()
    runs = []
    with common.scratch_dir(None) as workdir, common.mosquitto(workdir) as broker:
        for count in (int(n) for n in options.tables.split(",")):
            runs.append(asyncio.run(measure(broker.url, count, options.warmup, options.seconds)))
            run = runs[-1]
            rate = run["events_journaled_per_second"]
            shown = (
                "events/s not measured (fewer than two reports in the window)"
                if rate is None
                else f"{rate} events/s"
            )
            print(
                f"{count:>3} tables: {run['cpu_share_of_a_core'] * 100:.0f} % of a core, "
                f"{run['rss_mib']} MiB, {shown}, "
                f"{run['ack_timeouts_in_window']} timeouts",
                flush=True,
            )
    report = {
        "benchmark": "studio_demo",
        "date_utc": common.date_utc(started),
        "machine": common.machine(),
        "commit": common.git_commit(),
        "load_average": common.load_average(),
        "runs": runs,
    }
    output = options.output or common.REPO_ROOT / "bench" / "results" / "studio_demo"
    Path(f"{output}.json").write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
