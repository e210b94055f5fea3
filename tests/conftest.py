"""Shared fixtures. `mosquitto`: a real broker per test (skipped locally, failed in CI, if not installed)."""

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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """In CI nothing may skip: a skipped test there means a component is missing, and that is a failure."""
    outcome = yield
    report = outcome.get_result()
    if IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.longrepr = f"skipped in CI (CI=true), which counts as a failure: {reason}"
