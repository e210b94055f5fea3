"""Shared fixtures. `mosquitto`: a real broker per test (skipped locally, failed in CI, if not installed)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.mosquitto import MosquittoBroker, require_mosquitto


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[MosquittoBroker]:
    broker = MosquittoBroker(require_mosquitto(), tmp_path / "mosquitto")
    broker.start()
    try:
        yield broker
    finally:
        broker.kill()
