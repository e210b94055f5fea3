"""What the tests of `test_retention_bounds`, split by kind, share:
`tests/unit/core/test_retention_bounds.py`, `tests/integration/test_retention_bounds.py`."""

from __future__ import annotations

import numpy as np

DAY = 86400.0
T0 = 1_790_035_200.0  # 2026-09-22T00:00:00Z
MIB = 1024 * 1024


def noise(seed: int, size: int = 200) -> np.ndarray:
    # random pixels do not compress: each PNG is about size * size * 3 bytes (120 kB), like a real frame
    return np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)
