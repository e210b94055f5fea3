"""A table started on a full disk waits for space, however long, and starts by itself when it returns.

It used to exit (status 2) on every start while the disk stayed full, and systemd, which allows 20 starts in
300 s (`systemd/tablectl.service`), gave up on the table for good after some 15-20 s of a full disk.

Its integration tests; the unit ones are in `tests/unit/core/test_disk_full_start.py`."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import controller.cli as cli
from controller.service import TableService
from tests.helpers.disk_full_start import Notes, table_config

pytestmark = pytest.mark.integration


async def test_on_a_full_disk_the_table_waits_says_why_and_starts_when_space_returns(tmp_path: Path) -> None:
    free = {"bytes": 4096}
    notes = Notes()
    opening = asyncio.create_task(
        cli.open_table(table_config(tmp_path), notes, free=lambda _: free["bytes"], interval=0.01)
    )
    await asyncio.sleep(0.3)  # as long as the disk stays full, it waits: no exit, no failed start
    assert not opening.done()
    kind, first = notes.said[0]
    assert kind == "READY" and first.startswith("waiting: disk full, 4096 bytes free under ")
    assert "starts by itself" in first
    assert len(notes.said) > 5 and all(kind == "STATUS" for kind, _ in notes.said[1:])
    free["bytes"] = 1 << 30  # the operator frees space
    service = await asyncio.wait_for(opening, 5)
    assert isinstance(service, TableService)
    service.journal.close()


async def test_a_journal_that_cannot_be_opened_for_want_of_space_is_waited_for_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusals = [sqlite3.OperationalError("database or disk is full")] * 3
    real = cli.__dict__.get("TableService")
    assert real is None  # the service is imported where it is opened

    def opened(config: Any, **kwargs: Any) -> TableService:
        if refusals:
            raise refusals.pop()
        return TableService(config, **kwargs)

    monkeypatch.setattr("controller.service.TableService", opened)
    notes = Notes()
    service = await asyncio.wait_for(cli.open_table(table_config(tmp_path), notes, interval=0.01), 5)
    assert isinstance(service, TableService) and refusals == []
    ready = [status for kind, status in notes.said if kind == "READY"]
    assert len(ready) == 1 and "cannot open the journal: database or disk is full" in ready[0]
    service.journal.close()
