"""A journal problem at start that is not a full disk is still one line and an exit (the full disk waits:
`tests/integration/test_disk_full_start.py`).

Its unit tests; the integration ones are in `tests/integration/test_disk_full_start.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import controller.cli as cli
from controller.service import TableService
from tests.helpers.disk_full_start import Notes, table_config

pytestmark = pytest.mark.unit


async def test_another_journal_problem_is_still_one_line_and_an_exit(tmp_path: Path, monkeypatch) -> None:
    def opened(config: Any, **kwargs: Any) -> TableService:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("controller.service.TableService", opened)
    with pytest.raises(cli.OperatorError, match="cannot keep the journal there"):
        await cli.open_table(table_config(tmp_path), Notes(), interval=0.01)
