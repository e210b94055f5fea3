"""Where the tests find the repository's files, whatever the depth of the test module that reads them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root (`examples/`, `bench/`, `pyproject.toml`, the working directory of subprocesses)."""

GAME_TESTS = REPO / "tests" / "unit" / "games"
"""Each game's tests folder, `<folder>/`: its tests, its golden state records, its settlement functions."""


def golden_state_records() -> dict[tuple[int, str], Path]:
    """The committed golden state records, by (state version, game): each game's tests folder keeps its own,
    `<folder>/golden_state/v<N>/<game>.json` (the blackjack folder holds the three variants'), so a new game
    adds its records where its tests are (tests/unit/core/test_table_state.py loads them all)."""
    return {(int(p.parent.name[1:]), p.stem): p for p in sorted(GAME_TESTS.glob("*/golden_state/v*/*.json"))}
