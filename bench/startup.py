"""Start-up and recovery: from `exec` to `status online`, and from `kill -9` to a paused round on MQTT.

A real `tablectl run` process (the console entry point, as systemd starts it) with a baccarat table whose shoe
is `tablectl simulate shoe --deal-every ...` on a pty, against a real Mosquitto; a paho subscriber in this
process stamps what the table publishes (`time.perf_counter`, the same clock as the exec and the kill).

Each repeat:
1. cold start on a fresh journal: exec -> retained `status` online (this boot), and -> the first `state`;
2. wait for a round in progress (a `card.dealt`), then SIGKILL the process (what a crash or the OOM killer
   does; the broker publishes the Last Will) and exec it again at once: exec -> `status` online with the state
   restored from the journal, exec -> the `round.paused` event ("controller restarted mid-round") and the
   retained `state` saying paused; kill -> `round.paused` = the recovery without systemd's RestartSec, which
   is added on paper (read from systemd/tablectl.service).

It also runs one start with `PYTHONPROFILEIMPORTTIME=1` and lists the slowest imports and whether the panel's
web stack (starlette, uvicorn), amqtt or OpenCV/numpy were loaded (they should not be, for a table without a
panel or a camera).

Run: `python bench/startup.py` (see bench/README.md). Writes `bench/results/startup.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import common
import paho.mqtt.client as mqtt

STUDIO, TABLE = "bench", "bac-start"
ROOT = f"studio/{STUDIO}/table/{TABLE}"
#: modules a table without a panel or a camera must not load
UNWANTED = ("starlette", "uvicorn", "amqtt", "cv2", "numpy", "httpx", "jsonschema")


def restart_sec(unit: Path) -> float:
    """systemd's RestartSec in the shipped unit (seconds; default 100 ms)."""
    match = re.search(r"^RestartSec=(\S+)", unit.read_text(encoding="utf-8"), re.MULTILINE)
    if not match:
        return 0.1
    value = match.group(1)
    if value.endswith("ms"):
        return float(value[:-2]) / 1000
    return float(value.rstrip("s"))


class Watcher(common.Subscriber):
    """Every message on the table's topics, stamped on arrival (paho's thread)."""

    def __init__(self, port: int) -> None:
        self.messages: list[tuple[float, str, bytes, bool]] = []
        self._lock = threading.Lock()
        super().__init__(port, client_id="bench-startup", topic=f"{ROOT}/#")

    def _on_message(self, client: Any, userdata: Any, message: mqtt.MQTTMessage) -> None:
        stamp = time.perf_counter()
        with self._lock:
            self.messages.append((stamp, message.topic, bytes(message.payload), bool(message.retain)))

    def first(self, after: float, predicate: Any, timeout: float = 30.0) -> tuple[float, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                found = [m for m in self.messages if m[0] >= after]
            for stamp, topic, payload, _retain in found:
                try:
                    body = json.loads(payload)
                except ValueError:
                    continue
                if predicate(topic, body):
                    return stamp, body
            time.sleep(0.002)
        raise TimeoutError("not seen in time")


def write_config(path: Path, port: int, shoe: str, data_dir: Path) -> None:
    path.write_text(
        f"""[table]
studio_id = "{STUDIO}"
table_id = "{TABLE}"
game = "baccarat"
data_dir = "{data_dir}"

[broker]
url = "mqtt://127.0.0.1:{port}"
reconnect_min_seconds = 0.1

[devices.shoe]
protocol = "shoe-line"
port = "{shoe}"

[game]
betting_closes_on_first_card = true
round_gap_seconds = 0.2
""",
        encoding="utf-8",
    )


def status_online(boot: int) -> Any:
    return lambda topic, body: (
        topic == f"{ROOT}/status" and body.get("status") == "online" and body.get("boot") == boot
    )


def one_repeat(watcher: Watcher, config: Path, data_dir: Path, log: Any) -> dict[str, Any]:
    shutil.rmtree(data_dir, ignore_errors=True)
    command = [*common.tablectl_command(), "run", "--config", str(config)]
    exec_at = time.perf_counter()
    process = subprocess.Popen(command, stdout=log, stderr=log)
    try:
        online_at, _ = watcher.first(exec_at, status_online(1))
        state_at, _ = watcher.first(exec_at, lambda t, b: t == f"{ROOT}/state")
        # a round in progress: a card of it is out
        dealt_at, card = watcher.first(online_at, lambda t, b: t == f"{ROOT}/events/card.dealt", timeout=60)
        kill_at = time.perf_counter()
        process.send_signal(signal.SIGKILL)
        process.wait()
        will_at, _ = watcher.first(
            kill_at, lambda t, b: t == f"{ROOT}/status" and b.get("status") == "offline", timeout=10
        )
        exec2_at = time.perf_counter()
        process = subprocess.Popen(command, stdout=log, stderr=log)
        online2_at, _ = watcher.first(exec2_at, status_online(2))
        paused_at, paused = watcher.first(exec2_at, lambda t, b: t == f"{ROOT}/events/round.paused")
        state_paused_at, _ = watcher.first(
            exec2_at, lambda t, b: t == f"{ROOT}/state" and b.get("paused") is True
        )
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    ms = 1000.0
    return {
        "cold_exec_to_online_ms": round((online_at - exec_at) * ms, 1),
        "cold_exec_to_state_ms": round((state_at - exec_at) * ms, 1),
        "kill_to_last_will_ms": round((will_at - kill_at) * ms, 1),
        "restart_exec_to_online_ms": round((online2_at - exec2_at) * ms, 1),
        "restart_exec_to_round_paused_ms": round((paused_at - exec2_at) * ms, 1),
        "restart_exec_to_state_paused_ms": round((state_paused_at - exec2_at) * ms, 1),
        "kill_to_round_paused_no_restart_delay_ms": round((paused_at - kill_at) * ms, 1),
        "killed_in_round": card["data"]["round_id"],
        "paused_round": paused["data"]["round_id"],
        "paused_reason": paused["data"]["reason"],
        "dealt_before_kill_ms": round((kill_at - dealt_at) * ms, 1),
    }


def import_profile(config: Path, data_dir: Path, watcher: Watcher, log: Any) -> dict[str, Any]:
    shutil.rmtree(data_dir, ignore_errors=True)
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    exec_at = time.perf_counter()
    process = subprocess.Popen(
        [*common.tablectl_command(), "run", "--config", str(config)],
        stdout=log,
        stderr=subprocess.PIPE,
        env=env,
    )
    try:
        watcher.first(exec_at, status_online(1))
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=15)
    rows = []
    for line in err.decode(errors="replace").splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if match:
            rows.append((int(match.group(2)), len(match.group(3)), match.group(4)))
    top_level = [(us, name) for us, depth, name in rows if depth == 1]
    loaded = {name for _, _, name in rows}
    return {
        "modules": len(rows),
        "total_import_ms": round(sum(us for us, _ in top_level) / 1000, 1),
        "slowest_top_level_ms": [
            [name, round(us / 1000, 1)] for us, name in sorted(top_level, reverse=True)[:12]
        ],
        "unwanted_loaded": sorted(
            name for name in loaded if any(name == u or name.startswith(u + ".") for u in UNWANTED)
        ),
    }


def median(values: list[float]) -> float:
    return round(statistics.median(values), 1)


def run(args: argparse.Namespace) -> int:
    started = common.now()
    delay = restart_sec(common.REPO_ROOT / "systemd" / "tablectl.service")
    with (
        common.scratch_dir(args.data_dir) as workdir,
        common.broker_and_shoe(workdir, deal_every=args.deal_every, seed=3) as rig,
    ):
        watcher = None
        try:
            config = workdir / "table.toml"
            data_dir = workdir / "data"
            write_config(config, rig.broker.port, rig.shoe_path, data_dir)
            watcher = Watcher(rig.broker.port)
            loads = {"start": common.load_average()}
            imports = import_profile(config, data_dir, watcher, rig.log)
            repeats = []
            for number in range(args.repeat):
                result = one_repeat(watcher, config, data_dir, rig.log)
                result["load_average_after"] = common.load_average()
                repeats.append(result)
                print(f"repeat {number + 1}: {json.dumps(result)}", file=sys.stderr)
            loads["end"] = common.load_average()
            machine = common.machine_info(rig.broker.binary)
        finally:
            if watcher is not None:
                watcher.close()
    keys = [k for k in repeats[0] if k.endswith("_ms")]
    medians = {k: median([r[k] for r in repeats]) for k in keys}
    worst = {k: max(r[k] for r in repeats) for k in keys}
    recovery = medians["kill_to_round_paused_no_restart_delay_ms"] + delay * 1000
    report = {
        **common.header(
            "startup",
            started,
            machine,
            what="start-up (exec -> status online) and recovery (kill -9 -> paused round on MQTT)",
        ),
        "settings": {"repeat": args.repeat, "deal_every_s": args.deal_every, "restart_sec": delay},
        "load_average_1_5_15_min": loads,
        "imports": imports,
        "median_ms": medians,
        "worst_ms": worst,
        "kill_to_round_paused_with_restart_sec_ms": round(recovery, 1),
        "repeats": repeats,
    }
    output = common.write_result("startup", report, args.output)
    print()
    print("| measure | median ms | worst ms |")
    print("|---|---:|---:|")
    for key in keys:
        print(f"| {key} | {medians[key]} | {worst[key]} |")
    print(f"| kill -9 -> round.paused incl. RestartSec={delay:g}s | {round(recovery, 1)} | |")
    print()
    print(
        f"imports: {imports['modules']} modules, {imports['total_import_ms']} ms; unwanted loaded: "
        f"{imports['unwanted_loaded'] or 'none'}; slowest: {imports['slowest_top_level_ms'][:6]}"
    )
    common.print_written(output, report)
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.rig_parser(__doc__, "startup")
    parser.add_argument("--repeat", type=int, default=5, help="cold start + kill + restart, N times (5)")
    parser.add_argument("--deal-every", type=float, default=0.2, help="the simulated dealer's pace (s)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(run(parse_args()))
