"""The wheel bias check's command line in its own process: its exit codes.

Its integration tests; the unit ones are in `tests/unit/calibration/test_wheel_bias.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from calibration.wheel_bias import (
    wheel_sectors,
)
from tests.helpers.paths import REPO
from tests.helpers.wheel_bias import sector_weighted_spins, uniform_spins, write_lines

pytestmark = pytest.mark.integration


def test_cli_exit_codes_as_a_process(tmp_path: Path) -> None:
    spins = sector_weighted_spins(10_000, seed=7, sector=wheel_sectors(8)[2], weight=1.3)
    biased = write_lines(tmp_path / "biased.txt", [str(n) for n in spins])
    fair = write_lines(tmp_path / "fair.txt", [str(n) for n in uniform_spins(10_000, seed=20240611)])
    command = [sys.executable, "-m", "calibration.bias_cli"]
    runs = {
        name: subprocess.run([*command, str(path)], cwd=REPO, capture_output=True, text=True, timeout=30)
        for name, path in (("biased", biased), ("fair", fair), ("missing", tmp_path / "none.txt"))
    }
    assert runs["biased"].returncode == 1 and "BIAS FLAGGED" in runs["biased"].stdout
    assert runs["fair"].returncode == 0 and "no bias flagged" in runs["fair"].stdout
    assert runs["missing"].returncode == 2
    assert runs["missing"].stderr.strip().count("\n") == 0 and "no such file" in runs["missing"].stderr
