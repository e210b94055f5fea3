"""Shared fixtures. `mosquitto`: a real broker per test (skipped locally, failed in CI, if not installed).

Every test is marked with its kind, exactly one of `KINDS` (`pytestmark` in its module, or on the test where a
module mixes kinds): collection fails otherwise, so `-m unit` never silently misses or mislabels one."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.testing.mosquitto import MosquittoBroker, require_mosquitto


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[MosquittoBroker]:
    broker = MosquittoBroker(require_mosquitto(), tmp_path / "mosquitto")
    broker.start()
    try:
        yield broker
    finally:
        broker.kill()


IN_CI = os.environ.get("CI") == "true"
KINDS = ("unit", "integration", "e2e")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wrong = []
    for item in items:
        kinds = {mark.name for mark in item.iter_markers() if mark.name in KINDS}
        if len(kinds) != 1:
            wrong.append(f"{item.nodeid}: {sorted(kinds) or 'no kind'}")
    if wrong:
        raise pytest.UsageError(
            f"each test needs exactly one of the marks {', '.join(KINDS)}:\n" + "\n".join(wrong)
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """In CI nothing may skip: a skipped test there means a component is missing, and that is a failure."""
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped in CI (CI=true), which counts as a failure: {reason}"
