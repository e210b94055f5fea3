"""What the tests of `test_wheel_bias`, split by kind, share: `tests/unit/calibration/test_wheel_bias.py`,
`tests/integration/test_wheel_bias.py`."""

from __future__ import annotations

import random
from pathlib import Path

# --- verdicts ---------------------------------------------------------------------------------------------


def uniform_spins(count: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(37) for _ in range(count)]


def sector_weighted_spins(count: int, seed: int, sector: tuple[int, ...], weight: float) -> list[int]:
    rng = random.Random(seed)
    weights = [weight if number in sector else 1.0 for number in range(37)]
    return rng.choices(range(37), weights=weights, k=count)


# --- command line -----------------------------------------------------------------------------------------


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
