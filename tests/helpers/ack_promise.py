"""What the tests of `test_ack_promise`, split by kind, share: `tests/unit/core/test_ack_promise.py`,
`tests/integration/test_ack_promise.py`, `tests/e2e/test_ack_promise.py`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.testing.table_process import table_shoe
from drivers.shoe.simulator import ShoeSimulator


def journal_rows(path: Path, type_: str) -> list[dict]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT envelope FROM events WHERE type = ? ORDER BY sequence", (type_,)).fetchall()
    finally:
        db.close()
    return [json.loads(row[0]) for row in rows]


def acked_cards(shoe: ShoeSimulator) -> list[str]:
    return [line.text for line in shoe.device.acknowledged if line.text.startswith("CARD ")]


@pytest.fixture
async def shoe(tmp_path: Path) -> AsyncIterator[ShoeSimulator]:
    async with table_shoe(tmp_path) as simulator:
        yield simulator
