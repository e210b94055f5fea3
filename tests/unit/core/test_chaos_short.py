"""The fault-injection campaign's plan (`bench/chaos.py`), pure: every kind of fault in each block, and the
plan depends on the seed alone.

Its unit tests; the e2e ones are in `tests/e2e/test_chaos_short.py`."""

from __future__ import annotations

import pytest

from bench.chaos import KINDS, fault_plan

pytestmark = pytest.mark.unit


def test_the_fault_plan_holds_every_kind_in_each_block_and_depends_on_the_seed_alone() -> None:
    kinds = list(KINDS)
    plan = fault_plan(kinds, 30, 2026)
    assert len(plan) == 30 and plan == fault_plan(kinds, 30, 2026)
    for start in range(0, 30 - len(kinds) + 1, len(kinds)):  # the whole blocks of the 30
        assert sorted(plan[start : start + len(kinds)]) == sorted(kinds)
    assert plan != fault_plan(kinds, 30, 2027)
