"""bench/attacks_misc.py: every file under a table's data directory is checked against its retention bound,
on real files the service's own writers made; one out of bound (or of no known kind) is NOT held."""

from __future__ import annotations

import asyncio
import gzip
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from controller.events import RoundOpened, make_event
from controller.journal import Journal
from controller.retention import archive_path
from drivers.camera import CameraCaptureWriter
from drivers.capture import CaptureWriter
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration

T0 = 1_790_035_200.0
BENCH = REPO / "bench" / "attacks_misc.py"


def attacks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("attacks_misc", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["attacks_misc"] = module
    spec.loader.exec_module(module)
    return module


def test_every_file_is_reported_held_and_one_past_its_bound_is_not(tmp_path: Path, capsys) -> None:
    bench = attacks()
    journal = Journal(tmp_path / "t1-journal.sqlite3", "studio/s1/table/t1", clock=lambda: T0)
    opened = RoundOpened(game="baccarat", round_id="t1-1", round_number_in_shoe=1, betting_closes_at=None)
    for envelope in journal.append([make_event("round.opened", opened, T0)]):
        journal.acknowledge(int(envelope.sequence))
    journal.close()
    captures = tmp_path / "captures"
    captures.mkdir()
    with CaptureWriter(captures / "shoe.jsonl", daily=True) as shoe:
        shoe.rx(b"STATUS READY\r\n", T0)
        shoe.rx(b"STATUS READY\r\n", T0 + 86400)  # rotated at midnight
    with CameraCaptureWriter(captures / "camera.jsonl", max_frames=2) as camera:
        for seq in range(1, 6):
            camera.write_frame(np.zeros((8, 8, 3), np.uint8), T0 + seq, seq)
    args = bench.parse_args(["--data-dir", str(tmp_path), "--now", str(T0 + 2 * 86400)])
    outcomes = asyncio.run(bench.run_attacks(args))
    names = [name for name, _, _ in outcomes]
    assert all(held for _, held, _ in outcomes), outcomes
    assert "journal t1-journal.sqlite3" in names and "frames camera-frames/" in names
    assert sum(name.startswith("capture ") for name in names) == 2
    assert sum(name.startswith("camera ") for name in names) == 3  # live + 2 rotated

    # an archive day past archive_days, and a file no kind covers: NOT held, exit 1
    old = archive_path(tmp_path / "t1-journal.sqlite3", "20240101")
    old.parent.mkdir()
    old.write_bytes(gzip.compress(b"{}\n"))
    archive_path(tmp_path / "t1-journal.sqlite3", "20260921").write_bytes(gzip.compress(b"{}\n"))
    (captures / "dump.bin").write_bytes(b"x" * 10)
    assert bench.main(["--data-dir", str(tmp_path), "--now", str(T0 + 2 * 86400)]) == 1
    printed = capsys.readouterr().out
    assert "NOT held  archive t1-journal-20240101.jsonl.gz" in printed
    assert "held      archive t1-journal-20260921.jsonl.gz" in printed
    assert "NOT held  file captures/dump.bin" in printed
