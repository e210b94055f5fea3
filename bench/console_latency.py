"""The supervisor's console under a studio's load: from an event published by a table to its appearance on
the page, with 200 tables.

A studio of simulated tables (`controller.testing.studio_sim`: the retained status, state and devices of a
real table, and baccarat rounds of 8 events, each followed by the table's retained state) publishes on a real
Mosquitto;
`tablectl console` runs as its own process, as a studio runs it; a real headless Chromium shows the page,
signed in. In the page a MutationObserver notes when each table's tile shows a new event sequence
(`data-seq`), and the time of the next animation frame after it (when it is painted): latency is that time
minus the time the simulated table handed the event to its MQTT client (both the same system clock). Events of
one table that come within one update of the page share its frame; each counts from its own publish time.

Also measured: the page's long tasks (main-thread work over 50 ms: what would make it feel stuck), the time
from a click on a tile to that table's details on screen while the load goes on, and the console process's
CPU time.

Run: `python bench/console_latency.py` (about 2 minutes; `--help`). A benchmark, not a test: it asserts
nothing and writes `bench/results/console-latency.json`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common
from playwright.async_api import expect

from controller.testing.console import chromium, open_console
from controller.testing.mosquitto import MosquittoBroker, free_port
from controller.testing.studio_sim import ROUND, SimulatedStudio

OBSERVE_JS = """() => {
  window.__seen = [];
  window.__long = [];
  const observer = new MutationObserver((records) => {
    const changed = [];
    for (const record of records) {
      const tile = record.target;
      changed.push([tile.dataset.table, Number(tile.dataset.seq), Date.now()]);
    }
    // painted with the next frame
    requestAnimationFrame(() => {
      const painted = performance.timeOrigin + performance.now();
      for (const entry of changed) window.__seen.push([...entry, painted]);
    });
  });
  const grid = document.getElementById("grid");
  observer.observe(grid, { subtree: true, attributes: true, attributeFilter: ["data-seq"] });
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) window.__long.push(entry.duration);
  }).observe({ entryTypes: ["longtask"] });
}"""


async def scenario(
    broker: MosquittoBroker, tables: int, round_seconds: float, seconds: float, clicks: int
) -> dict[str, Any]:
    studio = SimulatedStudio(broker.port, "bench", tables, round_seconds=round_seconds, seed=tables)
    studio.start()
    port = free_port()
    console = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "console",
            "--broker",
            broker.url,
            "--studio",
            "bench",
            "--port",
            str(port),
        ],
        cwd=common.REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        async with chromium() as browser:
            for _ in range(200):
                try:
                    page, errors = await open_console(browser, url, "supervisor-bench")
                    break
                except Exception:
                    await asyncio.sleep(0.1)
            await expect(page.locator("#grid .tile")).to_have_count(tables, timeout=30_000)
            await asyncio.sleep(2.0)  # settled
            await page.evaluate(OBSERVE_JS)
            started = time.time()
            cpu_before = common.cpu_seconds(console.pid)
            click_ms: list[float] = []
            rng = random.Random(1)
            pause = seconds / (clicks + 1)
            for _ in range(clicks):
                await asyncio.sleep(pause)
                table = f"sim-{rng.randint(1, tables):03d}"
                clicked = time.monotonic()
                await page.locator(f'#grid .tile[data-table="{table}"]').click()
                await expect(page.locator("#d-round-line #d-boot")).to_have_text("1")
                await expect(page.locator("#d-table")).to_have_text(table)
                click_ms.append((time.monotonic() - clicked) * 1000)
            await asyncio.sleep(max(0.0, started + seconds - time.time()))
            ended = time.time()
            cpu = common.cpu_seconds(console.pid) - cpu_before
            await asyncio.sleep(1.0)  # the last events reach the page
            seen = await page.evaluate("window.__seen")
            long_tasks = await page.evaluate("window.__long")
            assert errors == [], errors
    finally:
        console.terminate()
        console.wait(10)
        studio.stop()

    by_table: dict[str, list[tuple[int, float, float]]] = {}
    for table, sequence, dom_ms, painted_ms in seen:
        by_table.setdefault(table, []).append((sequence, dom_ms / 1000, painted_ms / 1000))
    for observations in by_table.values():
        observations.sort(key=lambda item: item[1])
    dom: list[float] = []
    painted: list[float] = []
    missing = 0
    sent = [(key, when) for key, when in studio.sent.items() if started <= when <= ended]
    for (table, sequence), when in sent:
        shown = next(
            ((d, p) for s, d, p in by_table.get(table, []) if s >= sequence and d >= when - 0.001), None
        )
        if shown is None:
            missing += 1
            continue
        dom.append((shown[0] - when) * 1000)
        painted.append((shown[1] - when) * 1000)
    window = ended - started
    return {
        "tables": tables,
        "round_seconds": round_seconds,
        "events_per_round": len(ROUND),
        "seconds": round(window, 1),
        "events": len(sent),
        "events_per_second": round(len(sent) / window, 1),
        "mqtt_messages_per_second": round(2 * len(sent) / window, 1),  # each event and its retained state
        "not_seen": missing,
        "event_to_dom_ms": common.summary(dom),
        "event_to_paint_ms": common.summary(painted),
        "long_tasks": {
            "count": len(long_tasks),
            "total_ms": sum(long_tasks),
            "max_ms": max(long_tasks, default=0),
        },
        "click_to_detail_ms": common.summary(click_ms),
        "console_cpu_percent": round(100 * cpu / window, 1),
    }


async def run(args: argparse.Namespace) -> int:
    started = common.now()
    results = []
    with tempfile.TemporaryDirectory() as workdir, common.mosquitto(Path(workdir)) as broker:
        for round_seconds in args.round_seconds:
            print(
                f"{args.tables} tables, a round every {round_seconds:g} s, {args.seconds:g} s ...",
                flush=True,
            )
            results.append(await scenario(broker, args.tables, round_seconds, args.seconds, args.clicks))
        machine = common.machine_info(broker.binary)
    report = {
        **common.header(
            "console-latency",
            started,
            machine,
            what="the supervisors' console with many simulated tables: event published -> its tile painted",
        ),
        "settings": vars(args) | {"output": str(args.output)},
        "results": results,
    }
    output = common.write_result("console-latency", report, args.output)
    print()
    print(
        "| tables | round every | events/s | MQTT msg/s | event → page p50 | p90 | p99 | max | not seen "
        "| long tasks | click → details p50 / max | console CPU |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        p = r["event_to_paint_ms"]
        c = r["click_to_detail_ms"]
        rate = f"{r['events_per_second']} | {r['mqtt_messages_per_second']}"
        latency = f"{p['p50']:.0f} ms | {p['p90']:.0f} ms | {p['p99']:.0f} ms | {p['max']:.0f} ms"
        long_tasks = f"{r['long_tasks']['count']} ({r['long_tasks']['max_ms']:.0f} ms max)"
        print(
            f"| {r['tables']} | {r['round_seconds']:g} s | {rate} | {latency} | {r['not_seen']} "
            f"| {long_tasks} | {c['p50']:.0f} / {c['max']:.0f} ms | {r['console_cpu_percent']}% |"
        )
    where = f"{machine['cpu']}, {machine['cores']} cores, Python {machine['python']}"
    print(f"\nMachine: {where}; written to {output}")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.parser(__doc__)
    parser.add_argument("--tables", type=int, default=200)
    parser.add_argument(
        "--round-seconds",
        type=float,
        nargs="+",
        default=[30.0, 5.0],
        help="a round (8 events) every so many seconds per table: 30 is a baccarat table's pace, 5 a stress",
    )
    parser.add_argument("--seconds", type=float, default=45.0, help="measured time per scenario")
    parser.add_argument("--clicks", type=int, default=10, help="tiles clicked during each scenario")
    common.add_output_argument(parser, "console-latency")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
