"""What every benchmark shares: where and when it ran (the machine, the date, the commit), how it writes its
result, its statistics, its argument conventions, and the rig around a real `tablectl run` process.

- **Results**: each benchmark writes `bench/results/<name>.json` (and `<name>.md` beside it, for those that
  print a report): one file per benchmark, replaced by its next run, with the date, the machine and the
  commit inside it (`header`), never in its name. `--output STEM` writes `STEM.json` (and `STEM.md`)
  instead, for a run that must not replace the kept one.
- **Statistics**: `percentile` (nearest rank: always an observed value) and `summary` (count, p50, p90, p99,
  max, mean, min), the one definition every benchmark reports with.
- **The machine**: `machine` (CPU, cores, Python, OS and the versions of what was measured), `machine_info`
  for the benchmarks around a broker (kernel, Mosquitto, SQLite, paho-mqtt, pyserial), `load_average` and
  `fsync_probe` (the machine is shared: every report says how busy it and its disk were).
- **Arguments**: `parser` (the description from the module's docstring), `add_output_argument`,
  `add_data_dir_argument` and `scratch_dir` (the scratch directory on a real disk, never tmpfs).
- **The rig** (`memory.py`, `startup.py`, `studio.py`, `flush.py`, `latency.py`): `mosquitto` (a private
  Mosquitto, the testing kit's, on a free port), `broker_and_shoe` (and a simulated shoe on a pty),
  `tablectl_command`, `Subscriber` (a paho subscriber in the benchmark's process).

The benchmarks run as `python bench/<name>.py`: Python puts bench/ on the path, and they import this as
`import common`. The ones the tests import as `bench.<name>` (`chaos`, `dice_table`, `dice_accuracy`) import
it as `bench.common` then. paho-mqtt (the `test` extra) is imported only where a broker is used.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from controller.testing.mosquitto import MosquittoBroker, find_binary

if TYPE_CHECKING:
    import paho.mqtt.client as mqtt

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"


# --- when, where, which code ------------------------------------------------------------------------------


def now() -> dt.datetime:
    """The moment a run starts, in UTC: what its report's `date_utc` says."""
    return dt.datetime.now(dt.UTC)


def date_utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def git_commit(measured: Sequence[str] = ()) -> str | None:
    """HEAD, and whether the code measured differs from it: the files `measured` (repository paths; none:
    every tracked file) edited, or not committed at all. None outside a git checkout."""
    status = ["git", "status", "--porcelain"]
    status += ["--", *measured] if measured else ["--untracked-files=no"]
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        changed = subprocess.run(
            status, cwd=REPO_ROOT, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}{' (the code measured is not committed as it is)' if changed else ''}"


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown"


def os_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    return platform.platform()


def machine(**versions: Any) -> dict[str, Any]:
    """The machine a report ran on: CPU, architecture, cores, Python, OS, and the versions of what else was
    measured."""
    return {
        "cpu": cpu_model(),
        "arch": platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "os": os_name(),
        **versions,
    }


def package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def mosquitto_version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "-h"], capture_output=True, text=True, timeout=5, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.splitlines()[0].strip() if out else "unknown"


def machine_info(broker_binary: str) -> dict[str, Any]:
    """`machine` for the benchmarks around a broker and a journal."""
    return machine(
        kernel=platform.release(),
        mosquitto=mosquitto_version(broker_binary),
        sqlite=sqlite3.sqlite_version,
        paho_mqtt=package_version("paho-mqtt"),
        pyserial=package_version("pyserial"),
    )


def machine_line(report: dict[str, Any], *extras: str) -> str:
    """One line for a Markdown report: its date, commit and machine, then `extras` (e.g. "OpenCV 5.0.0")."""
    m = report["machine"]
    where = [f"{m['cpu']}, {m['cores']} cores", m["os"], f"Python {m['python']}", *extras]
    return f"Date {report['date_utc']}; tablectl commit {report['git_commit']}; {', '.join(where)}."


def cpu_seconds(pid: int, *, gone: float | None = None) -> float:
    """CPU seconds (user + system) a live process has used, from /proc/<pid>/stat (fields 14 and 15).
    A process that has ended raises, unless `gone` says what to count for it (a total over many processes
    sampled while one of them exits)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except OSError:
        if gone is None:
            raise
        return gone
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid: int) -> dict[str, int]:
    """A live process's resident memory now (VmRSS) and at its peak (VmHWM), in KiB (/proc/<pid>/status)."""
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values


def memory_mib(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory (`field`: VmRSS now, VmHWM at its peak) in MiB; 0.0 once it has ended."""
    try:
        return proc_status(pid)[field] / 1024
    except (OSError, KeyError):
        return 0.0


def load_average() -> list[float]:
    # other work on the machine shows in the numbers: record how busy it was
    return [round(value, 2) for value in os.getloadavg()]


def fsync_probe(directory: Path, rounds: int = 200) -> dict[str, Any]:
    """What one durable append costs on this disk (append 100 bytes + fdatasync), for reading the results:
    every tablectl journal commit pays at least this once."""
    return summary_ms(fsync_samples(directory, rounds))


def fsync_samples(directory: Path, rounds: int = 200) -> list[int]:
    """`rounds` durable appends to a new file (100 bytes + fdatasync each): how long each took, in ns."""
    path = directory / "fsync-probe"
    samples: list[int] = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for _ in range(rounds):
            start = time.perf_counter_ns()
            os.write(fd, b"x" * 100)
            os.fdatasync(fd)
            samples.append(time.perf_counter_ns() - start)
    finally:
        os.close(fd)
        path.unlink()
    return samples


def filesystem_of(path: Path) -> str:
    """The filesystem type holding `path` (from /proc/self/mountinfo: the longest mount point prefix)."""
    best, fstype = "", "unknown"
    resolved = str(path.resolve())
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines():
            before, _, after = line.partition(" - ")
            mount_point = before.split()[4]
            inside = resolved == mount_point or resolved.startswith(mount_point.rstrip("/") + "/")
            if inside and len(mount_point) >= len(best):
                best, fstype = mount_point, after.split()[0]
    return fstype


# --- statistics ------------------------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of values sorted ascending (an actual observed value, no interpolation);
    `fraction` in [0, 1]. NaN for no values."""
    if not sorted_values:
        return float("nan")
    rank = max(1, -(-round(fraction * 1_000_000) * len(sorted_values) // 1_000_000))
    return float(sorted_values[min(rank, len(sorted_values)) - 1])


def summary(
    values: Sequence[float], *, scale: float = 1.0, unit: str = "", digits: int = 3
) -> dict[str, Any]:
    """count, p50, p90, p99, max, mean and min of `values` times `scale`, rounded to `digits`; each key but
    count ends in `_<unit>` when a unit is given (`p50_ms`). None for each when there are no values."""
    ordered = sorted(values)
    suffix = f"_{unit}" if unit else ""
    if not ordered:
        return {"count": 0, **{key + suffix: None for key in ("p50", "p90", "p99", "max", "mean", "min")}}
    stats = {
        "p50": percentile(ordered, 0.50),
        "p90": percentile(ordered, 0.90),
        "p99": percentile(ordered, 0.99),
        "max": ordered[-1],
        "mean": statistics.fmean(ordered),
        "min": ordered[0],
    }
    return {
        "count": len(ordered),
        **{key + suffix: round(value * scale, digits) for key, value in stats.items()},
    }


def summary_ms(values_ns: Sequence[int]) -> dict[str, Any]:
    """`summary` of durations in nanoseconds, in milliseconds (`p50_ms`, ...)."""
    return summary(values_ns, scale=1e-6, unit="ms")


def percent(count: int, total: int) -> str:
    """`count` and its share of `total`, as a Markdown report gives it: "12 (3.4%)"."""
    return f"{count} ({100 * count / total:.1f}%)" if total else "0"


# --- arguments and results ---------------------------------------------------------------------------------


def parser(doc: str | None, **kwargs: Any) -> argparse.ArgumentParser:
    """An argument parser described by the first paragraph of the benchmark's docstring."""
    return argparse.ArgumentParser(description=(doc or "").split("\n\n")[0] or None, **kwargs)


def add_output_argument(parser: argparse.ArgumentParser, name: str, *, markdown: bool = False) -> None:
    written = f"{name}.json and .md" if markdown else f"{name}.json"
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        metavar="STEM",
        help=f"write STEM.json{' and STEM.md' if markdown else ''} (default: bench/results/{written}, "
        "which the next run replaces)",
    )


def add_data_dir_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=None, help="parent of the scratch dir (a real disk)")


def rig_parser(doc: str | None, name: str) -> argparse.ArgumentParser:
    """`parser` with `--data-dir` and `--output`: what every benchmark around a real journal and broker
    takes, its own options added after."""
    made = parser(doc)
    add_data_dir_argument(made)
    add_output_argument(made, name)
    return made


def header(
    name: str, started: dt.datetime, machine: dict[str, Any], *, measured: Sequence[str] = (), what: str = ""
) -> dict[str, Any]:
    """What every result file begins with: the benchmark's name, what it measures, when, on which machine,
    of which commit (`measured`: the files whose uncommitted edits the commit must mention; none: any)."""
    return {
        "benchmark": name,
        **({"what": what} if what else {}),
        "date_utc": date_utc(started),
        "git_commit": git_commit(measured),
        "machine": machine,
    }


def result_path(name: str, output: Path | None = None, suffix: str = ".json") -> Path:
    """`bench/results/<name><suffix>`, or `<output><suffix>` (`output` a stem: a `.json` it ends with is
    dropped)."""
    stem = output if output is not None else RESULTS_DIR / name
    if stem.suffix == ".json":
        stem = stem.with_suffix("")
    return stem.with_name(stem.name + suffix)


def write_result(
    name: str, report: dict[str, Any], output: Path | None = None, markdown: str | None = None
) -> Path:
    """The report as `bench/results/<name>.json` (or at `output`, a stem), and `markdown` beside it as `.md`;
    the JSON file's path."""
    path = result_path(name, output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    if markdown is not None:
        result_path(name, output, ".md").write_text(markdown, encoding="utf-8")
    return path


def print_written(output: Path, report: dict[str, Any]) -> None:
    """The last lines a benchmark prints: where it ran, how busy the machine was, where its result went."""
    m = report["machine"]
    loads = report.get("load_average_1_5_15_min")
    print(f"Machine: {m['cpu']}, {m['cores']} cores{f'; load average {loads}' if loads else ''}")
    print(f"Written: {output}")


@contextlib.contextmanager
def scratch_dir(requested: Path | None) -> Iterator[Path]:
    """Where the journal goes: a real disk, never tmpfs (an fsync on RAM would make 'durable' meaningless)."""
    if requested is not None:
        requested.mkdir(parents=True, exist_ok=True)
        path = Path(tempfile.mkdtemp(prefix="tablectl-bench-", dir=requested))
    else:
        parent = Path(tempfile.gettempdir())
        if filesystem_of(parent) in ("tmpfs", "ramfs"):
            parent = BENCH_DIR / ".scratch"
            parent.mkdir(exist_ok=True)
        path = Path(tempfile.mkdtemp(prefix="tablectl-bench-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# --- the rig around a real `tablectl run` ------------------------------------------------------------------


def mosquitto_binary() -> str:
    binary = find_binary("mosquitto", "/usr/sbin", "/usr/local/sbin")
    if binary is None:
        raise SystemExit("mosquitto is not installed (Debian: apt-get install mosquitto)")
    return binary


@contextlib.contextmanager
def mosquitto(workdir: Path, *, extra_config: str = "") -> Iterator[MosquittoBroker]:
    """A private Mosquitto on a free loopback port (the testing kit's), persistence off, stopped on the way
    out; `extra_config` is added to its configuration."""
    broker = MosquittoBroker(
        mosquitto_binary(), workdir / "mosquitto", persistence=False, extra_config=extra_config
    )
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def tablectl_command() -> list[str]:
    script = Path(sys.executable).with_name("tablectl")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "controller.cli"]


@dataclass
class Rig:
    broker: MosquittoBroker
    #: where the shoe (and the table, if the benchmark passes it on) write their output
    log: IO[bytes]
    #: the pty the simulated shoe deals on: the table's `[devices.shoe] port`
    shoe_path: str


@contextlib.contextmanager
def broker_and_shoe(workdir: Path, *, deal_every: float, seed: int) -> Iterator[Rig]:
    """Mosquitto and a simulated shoe (`tablectl simulate shoe`) dealing every `deal_every` seconds, both
    stopped on the way out."""
    with mosquitto(workdir) as broker, (workdir / "tablectl.log").open("ab") as log:
        shoe = subprocess.Popen(
            [
                *tablectl_command(),
                "simulate",
                "shoe",
                "--pty",
                str(workdir / "shoe"),
                "--deal-every",
                str(deal_every),
                "--seed",
                str(seed),
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )
        try:
            assert shoe.stdout is not None
            # the simulator's first line is the path of its pty
            shoe_path = shoe.stdout.readline().decode().strip()
            yield Rig(broker, log, shoe_path)
        finally:
            shoe.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                shoe.wait(10)


class Subscriber:
    """A paho client subscribed to `topic` before the constructor returns; each message goes to
    `_on_message` on paho's thread."""

    def __init__(self, port: int, *, client_id: str, topic: str) -> None:
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        self._ready = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id, protocol=mqtt.MQTTv5)
        self.client.on_connect = lambda c, *_: c.subscribe(topic, qos=1)
        self.client.on_subscribe = lambda *_: self._ready.set()
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        if not self._ready.wait(10):
            raise RuntimeError("no SUBACK")

    def _on_message(self, client: Any, userdata: Any, message: mqtt.MQTTMessage) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
