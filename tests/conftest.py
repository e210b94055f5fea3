"""Shared fixtures. `mosquitto`: a real broker per test (skipped locally, failed in CI, if not installed).

Every test is marked with its kind, exactly one of `KINDS` (its module's `pytestmark`, or on the test), and
lives in that kind's folder (`tests/unit/`, `tests/integration/`, `tests/e2e/`): collection fails otherwise,
so `-m unit` never silently misses or mislabels one, and a test in `tests/unit/` cannot be an e2e test."""

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
TESTS = Path(__file__).resolve().parent


def folder_of(item: pytest.Item) -> str:
    """The folder of tests/ the item's module is in, as `tests/<folder>/`."""
    try:
        relative = item.path.resolve().relative_to(TESTS)
    except ValueError:
        return f"{item.path}, outside tests/"
    return f"tests/{relative.parts[0]}/" if len(relative.parts) > 1 else "tests/"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wrong = []
    for item in items:
        kinds = sorted(mark.name for mark in item.iter_markers() if mark.name in KINDS)
        if len(set(kinds)) != 1:
            wrong.append(f"{item.nodeid}: {kinds or 'no kind'}")
        elif folder_of(item) != f"tests/{kinds[0]}/":
            wrong.append(f"{item.nodeid}: marked {kinds[0]}, but in {folder_of(item)}")
    if wrong:
        raise pytest.UsageError(
            f"each test needs exactly one of the marks {', '.join(KINDS)}, and lives in that kind's folder"
            " (tests/unit/, tests/integration/ or tests/e2e/):\n" + "\n".join(wrong)
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
