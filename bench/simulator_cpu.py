"""CPU of `tablectl simulate` feeding a table: the simulator's own CPU seconds while a table's driver session
is connected to it and nothing is dealt (the state of a simulated device most of its life).

Each run starts `python -m controller.cli simulate <device> --tcp 0` from a checkout (`--repo`, default this
one: run it again with `--repo` on a worktree of an older commit to compare), connects the table's own
driver session to it (`drivers.runner.DeviceRunner`, which ACKs, as a table does), waits `--seconds`, and
reads the simulator process's utime + stime from /proc. The figure is CPU seconds per wall second (1.0 = one
core); it does not depend on this machine's speed as much as a latency does, but it is still one machine's.

Run: `python bench/simulator_cpu.py` (see bench/README.md). Writes `bench/results/simulator_cpu.json`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import common

from drivers.readings import Reading
from drivers.runner import DeviceRunner
from drivers.shaker.session import ShakerSession
from drivers.shoe.session import ShoeSession
from drivers.shuffler.session import ShufflerSession

SESSIONS: dict[str, Any] = {"shoe": ShoeSession, "shuffler": ShufflerSession, "shaker": ShakerSession}


async def measure(repo: Path, device: str, seconds: float) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "controller.cli",
        "simulate",
        device,
        "--tcp",
        "0",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=repo,
    )
    try:
        assert process.stdout is not None
        url = (await asyncio.wait_for(process.stdout.readline(), 15)).decode().strip()
        readings: list[Reading] = []

        async def keep(batch: list[Reading]) -> None:
            readings.extend(batch)

        runner = DeviceRunner(SESSIONS[device](device), url, on_readings=keep)
        task = asyncio.create_task(runner.run())
        await asyncio.sleep(2.0)  # connected, HELLO answered
        before, started = common.cpu_seconds(process.pid), time.monotonic()
        await asyncio.sleep(seconds)
        used, elapsed = common.cpu_seconds(process.pid) - before, time.monotonic() - started
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return {
            "device": device,
            "seconds": round(elapsed, 2),
            "cpu_seconds": round(used, 3),
            "cpu_share_of_a_core": round(used / elapsed, 5),
            "readings": len(readings),
        }
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            await process.wait()


def main() -> None:
    args = common.parser(__doc__)
    args.add_argument("--seconds", type=float, default=20.0)
    args.add_argument("--repo", type=Path, default=common.REPO_ROOT, help="the checkout whose simulator runs")
    args.add_argument("--devices", default="shoe,shuffler,shaker")
    common.add_output_argument(args, "simulator_cpu")
    options = args.parse_args()
    started = common.now()
    runs = [asyncio.run(measure(options.repo, d, options.seconds)) for d in options.devices.split(",")]
    report = {
        "benchmark": "simulator_cpu",
        "date_utc": common.date_utc(started),
        "machine": common.machine(),
        "commit": common.git_commit(),
        "repo_measured": "this checkout" if options.repo == common.REPO_ROOT else "another checkout (--repo)",
        "load_average": common.load_average(),
        "runs": runs,
    }
    output = options.output or common.REPO_ROOT / "bench" / "results" / "simulator_cpu"
    Path(f"{output}.json").write_text(json.dumps(report, indent=2) + "\n")
    for run in runs:
        print(
            f"{run['device']:<9} {run['cpu_share_of_a_core'] * 100:.2f} % of a core ({run['cpu_seconds']} s)"
        )


if __name__ == "__main__":
    main()
