"""Where the tests find the repository's files, whatever the depth of the test module that reads them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root (`examples/`, `bench/`, `pyproject.toml`, the working directory of subprocesses)."""

GOLDEN_STATE = REPO / "tests" / "golden_state"
"""The committed golden state records, `v<N>/<game>.json` (tests/unit/core/test_table_state.py)."""
