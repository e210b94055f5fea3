"""bench/attacks.py runs the parts its arguments name, with each part's own options, and reports every
attack: here the data-directory part on a real journal, and nothing named at all."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.events import RoundOpened, make_event
from controller.journal import Journal
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration

BENCH = REPO / "bench" / "attacks.py"
T0 = 1_790_035_200.0


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=60)


def test_the_umbrella_runs_the_named_part_with_its_own_options_and_reports_each_attack(
    tmp_path: Path,
) -> None:
    journal = Journal(tmp_path / "t1-journal.sqlite3", "studio/s1/table/t1", clock=lambda: T0)
    opened = RoundOpened(game="baccarat", round_id="t1-1", round_number_in_shoe=1, betting_closes_at=None)
    for envelope in journal.append([make_event("round.opened", opened, T0)]):
        journal.acknowledge(int(envelope.sequence))
    journal.close()
    held = run("--data-dir", str(tmp_path), "--now", str(T0 + 86400))
    assert held.returncode == 0, held.stdout + held.stderr
    assert "held      files: journal t1-journal.sqlite3" in held.stdout
    (tmp_path / "stray.bin").write_bytes(b"x")  # a file no bound covers
    stray = run("--data-dir", str(tmp_path), "--now", str(T0 + 86400))
    assert stray.returncode == 1 and "NOT held  files: " in stray.stdout, stray.stdout


def test_with_nothing_named_it_says_so_and_fails() -> None:
    nothing = run()
    assert nothing.returncode == 2 and "nothing to attack" in nothing.stdout
