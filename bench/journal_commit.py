"""One card's journal commit against the disk's own fdatasync, outside the service: what SQLite adds.

Four writes, in turn (one of each per round, so the disk's moods, which move by half within minutes on a
virtual disk, fall on all four alike):

- probe: append 100 bytes to a file + fdatasync (what `bench/latency.py` calls the floor's fdatasync);
- overwrite: write 8 KiB (two pages) into a file written and synced beforehand + fdatasync: the disk's cost of
  a write that does not grow the file, as SQLite's WAL, once it wrapped, does not;
- journal: `Journal.append` of one `card.dealt` event with a state record of the latency benchmark's size
  (1,200 bytes) and the device's line, as the service makes it per card (WAL, synchronous=FULL); its COMMIT
  statement timed apart (from the connection's statement trace);
- journal, CPU only: the same append on a second journal with synchronous=OFF (no fdatasync): the Python and
  SQL of an append, without the disk and without a busy service's cores around it.

Run: `python bench/journal_commit.py` (see bench/README.md). Writes `bench/results/journal-commit.json`.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import common
from flush import card_event  # the flush benchmark's card.dealt events, the same size

from controller.journal import Journal

STATE_RECORD = b'{"table":' + b'"x"' * 396 + b"}"  # 1,200 bytes, as the latency benchmark's
PAGE_WRITE = b"w" * 8192


class TimedJournal:
    """A journal whose appends are timed whole and from the start of their COMMIT statement."""

    def __init__(self, path: Path, synchronous: str) -> None:
        self.journal = Journal(path, "studio/bench/table/commit")
        if synchronous != "FULL":
            self.journal._db.execute(f"PRAGMA synchronous={synchronous}")
        self._commit_started = 0
        self.journal._db.set_trace_callback(self._traced)

    def _traced(self, statement: str) -> None:
        if statement == "COMMIT":
            self._commit_started = time.perf_counter_ns()

    def append(self, n: int) -> tuple[int, int]:
        """(whole append, its COMMIT) in ns."""
        event = card_event(n, time.time())
        start = time.perf_counter_ns()
        self.journal.append([event], snapshot=STATE_RECORD, delivered=("shoe", event.data["raw"]))
        end = time.perf_counter_ns()
        return end - start, end - self._commit_started


def run(rounds: int, directory: Path) -> dict[str, Any]:
    probe_fd = os.open(directory / "probe", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    overwrite_fd = os.open(directory / "overwrite", os.O_RDWR | os.O_CREAT, 0o600)
    os.write(overwrite_fd, b"\0" * len(PAGE_WRITE) * rounds)
    os.fsync(overwrite_fd)
    durable = TimedJournal(directory / "full.sqlite3", "FULL")
    cpu_only = TimedJournal(directory / "off.sqlite3", "OFF")
    samples: dict[str, list[int]] = {
        "probe": [],
        "overwrite": [],
        "journal": [],
        "journal_commit": [],
        "journal_cpu_only": [],
    }
    try:
        for n in range(rounds):
            start = time.perf_counter_ns()
            os.write(probe_fd, b"x" * 100)
            os.fdatasync(probe_fd)
            samples["probe"].append(time.perf_counter_ns() - start)
            start = time.perf_counter_ns()
            os.pwrite(overwrite_fd, PAGE_WRITE, n * len(PAGE_WRITE))
            os.fdatasync(overwrite_fd)
            samples["overwrite"].append(time.perf_counter_ns() - start)
            whole, commit = durable.append(n)
            samples["journal"].append(whole)
            samples["journal_commit"].append(commit)
            samples["journal_cpu_only"].append(cpu_only.append(n)[0])
    finally:
        os.close(probe_fd)
        os.close(overwrite_fd)
        durable.journal.close()
        cpu_only.journal.close()
    # the first rounds fill SQLite's caches and the WAL's first pass: left out, as the latency benchmark's
    # warm-up cards are
    warmup = min(rounds // 10, 100)
    return {key: common.summary_ms(values[warmup:]) for key, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__)
    parser.add_argument("--rounds", type=int, default=2000, help="writes of each kind (default 2000)")
    parser.add_argument("--data-dir", type=Path, default=None, help="parent of the scratch dir (a real disk)")
    common.add_output_argument(parser, "journal-commit")
    args: argparse.Namespace = parser.parse_args(argv)
    started = common.now()
    with common.scratch_dir(args.data_dir) as workdir:
        fstype = common.filesystem_of(workdir)
        load_before = common.load_average()
        results = run(args.rounds, workdir)
        load_after = common.load_average()
    machine = common.machine(kernel=os.uname().release, sqlite=sqlite3.sqlite_version)
    report = {
        **common.header(
            "journal-commit",
            started,
            machine,
            what="one card's Journal.append (WAL, synchronous=FULL) against the disk's fdatasync, in turn",
            measured=("controller", "bench/journal_commit.py", "bench/flush.py", "bench/common.py"),
        ),
        "settings": {"rounds": args.rounds, "filesystem": fstype, "state_record_bytes": len(STATE_RECORD)},
        "load_average_1_5_15_min": {"start": load_before, "end": load_after},
        **results,
    }
    output = common.write_result("journal-commit", report, args.output)
    names = {
        "probe": "append 100 B + fdatasync (the floor's probe)",
        "overwrite": "overwrite 8 KiB + fdatasync (no growth)",
        "journal": "Journal.append, synchronous=FULL",
        "journal_commit": "  of which its COMMIT",
        "journal_cpu_only": "Journal.append, synchronous=OFF (CPU)",
    }
    for key, label in names.items():
        r = results[key]
        print(f"{label:48s} p50 {1000 * r['p50_ms']:6.0f} us  p90 {1000 * r['p90_ms']:6.0f} us")
    print(
        f"{args.rounds} rounds on {fstype}; load (1 min) {load_before[0]} -> {load_after[0]}; "
        f"{report['date_utc']}, commit {report['git_commit'][:7]}; written: {output}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
