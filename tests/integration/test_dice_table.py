"""The dice reader as the table uses it, through the tools in their own processes: the table benchmark
(`bench/dice_table.py`) on a table's own samples and on a bad samples file, and `tablectl dice read`.

Its integration tests; the unit ones are in `tests/unit/drivers/test_dice_table.py`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from drivers.dice.synthetic import random_scene, render
from tests.helpers import dice_table as shared
from tests.helpers.dice_table import write_samples
from tests.helpers.paths import REPO

# the tables' samples are calibrated from photographs (a module fixture of seconds): slow, as a whole
pytestmark = [pytest.mark.integration, pytest.mark.slow]
fitted = shared.fitted  # a fixture (tests/helpers/dice_table.py)


def test_the_table_benchmark_measures_a_tables_own_samples(tmp_path: Path) -> None:
    """`bench/dice_table.py --parts samples`: a table's SAMPLES.csv in two halves, each half calibrated from
    its values and measured on the other, as the sic bo issue's target would be measured at a table."""
    from bench.dice_table import main, sample_halves

    csv_path = write_samples(tmp_path / "table", 40, seed=9)
    halves = sample_halves(csv_path)
    assert sorted(s.name for s in halves[0] + halves[1]) == [f"shot-{i:03d}.png" for i in range(40)]
    assert main(["--parts", "samples", "--samples", str(csv_path), "--output", str(tmp_path / "report")]) == 0
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["samples"]
    images = report["images"]
    assert sum(images.values()) == 40 and "not calibrated" not in images, report
    assert images.get("MISREAD", 0) == 0 and images.get("exact", 0) >= 20, report
    assert "| photos | not calibrated | exact | refused | MISREAD |" in (tmp_path / "report.md").read_text(
        encoding="utf-8"
    )

    # photos of one burst, near-duplicates, given one group, fall in one half
    rows = [line.split(",") for line in csv_path.read_text(encoding="utf-8").splitlines()[1:]]
    grouped = tmp_path / "table" / "GROUPED.csv"
    body = [f"{image},{values},{'burst' if n < 10 else ''}" for n, (image, values) in enumerate(rows)]
    grouped.write_text("\n".join(["image,values,group", *body]) + "\n", encoding="utf-8")
    burst = {f"shot-{n:03d}.png" for n in range(10)}
    first, second = ({s.name for s in half} for half in sample_halves(grouped))
    assert burst <= first or burst <= second


def test_the_table_benchmark_says_what_is_wrong_with_a_samples_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.dice_table import main

    bad = tmp_path / "SAMPLES.csv"
    bad.write_text("image,values\nmissing.png,3 4 9\n", encoding="utf-8")
    assert main(["--parts", "samples", "--samples", str(bad), "--output", str(tmp_path / "report")]) == 2
    assert "values must be 1-6" in capsys.readouterr().err
    assert not (tmp_path / "report.json").exists()  # no report of a measurement that did not happen


# --- tablectl dice read ------------------------------------------------------------------------------------


def test_dice_read_prints_one_json_line_per_image(fitted: tuple[Path, list[str]], tmp_path: Path) -> None:
    cal_path, _ = fitted
    rng = np.random.default_rng(21)
    good = random_scene(rng, hazard="none")
    cv2.imwrite(str(tmp_path / "good.png"), render(good, seed=1))
    cv2.imwrite(str(tmp_path / "stacked.png"), render(random_scene(rng, hazard="stacked"), seed=2))
    result = subprocess.run(
        [sys.executable, "-m", "controller.cli", "dice", "read", "--calibration", str(cal_path),
         str(tmp_path / "good.png"), str(tmp_path / "stacked.png")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 1, result.stderr
    assert [line["status"] for line in lines] == ["ok", "reject"]
    assert lines[0]["values"] == list(good.values) and lines[0]["reason"] is None
    assert lines[1]["values"] == [] and lines[1]["reason"] == "count"  # the die below is hidden: two dice
    assert all(line["ms"] > 0 and line["image"].endswith(".png") for line in lines)
    only = subprocess.run(
        [sys.executable, "-m", "controller.cli", "dice", "read", "--calibration", str(cal_path),
         "--expect", "3", str(tmp_path / "good.png")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert only.returncode == 0 and json.loads(only.stdout)["status"] == "ok"
    missing = subprocess.run(
        [sys.executable, "-m", "controller.cli", "dice", "read",
         "--calibration", str(tmp_path / "no.json"), "x"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert missing.returncode == 2 and missing.stderr.startswith("tablectl: error: ")
    assert "Traceback" not in missing.stderr
