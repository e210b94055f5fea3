"""What the tests of `test_dice_table`, split by kind, share: `tests/unit/drivers/test_dice_table.py`,
`tests/integration/test_dice_table.py`."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import cv2
import numpy as np
import pytest

from calibration.dice_cli import EXIT_OK, register
from drivers.dice.synthetic import random_scene, render

SAMPLES = 24


def write_samples(folder: Path, count: int, seed: int) -> Path:
    """Photos of 1-7 dice (some touching or cocked, as a technician's would be) and SAMPLES.csv."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for index in range(count):
        scene = random_scene(
            rng, dice=int(rng.integers(1, 8)), hazards={"none": 0.8, "touching": 0.1, "cocked": 0.1}
        )
        name = f"shot-{index:03d}.png"
        cv2.imwrite(str(folder / name), render(scene, seed=index))
        values = [die.value for die in scene.dice]
        rng.shuffle(values)  # any order
        rows.append({"image": name, "values": " ".join(map(str, values))})
    path = folder / "SAMPLES.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["image", "values"])
        writer.writeheader()
        writer.writerows(rows)
    return path


def calibrate_tool(argv: list[str]) -> tuple[int, list[str]]:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="calibration", required=True))
    lines: list[str] = []
    args = parser.parse_args(argv)
    return args.func(args, lines.append), lines


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("samples")
    csv_path = write_samples(folder, SAMPLES, seed=5)
    out = folder / "CAL.json"
    status, lines = calibrate_tool(["dice", "--samples", str(csv_path), "--out", str(out)])
    assert status == EXIT_OK, lines
    return out, lines
