"""The journaled table state with a real journal on disk: a fresh state continues the journal's round
numbering.

Its integration tests; the unit ones are in `tests/unit/core/test_table_state.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.journal import Journal
from controller.runtime import StateMismatch
from controller.service import restore_core
from controller.table_build import TABLE_CONFIGS
from controller.table_state import encode_state
from drivers.readings import CardSeen, DeviceOnline
from tests.helpers.table_state import fresh_core

pytestmark = pytest.mark.integration


def test_a_fresh_state_continues_the_journals_round_numbering(tmp_path: Path) -> None:
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {"table_id": "golden", "game": "baccarat", "data_dir": str(tmp_path)},
            "devices": {"shoe": {"protocol": "shoe-line", "port": "/dev/null"}},
        },
        environ={},
    )
    journal = Journal(tmp_path / "j.sqlite3", source=config.topic_root)
    core = fresh_core("baccarat")
    core.on_reading(DeviceOnline(device="shoe", time=1.0), 1.0)
    for now in (1.0, 16.0):
        journal.append(core.on_tick(now).events, snapshot=encode_state(core.export_state()))
    journal.append(
        core.on_reading(CardSeen(device="shoe", time=17.0, code="AS", raw="CARD 1 AS"), 17.0).events,
        snapshot=b"\x80 an unreadable snapshot",
    )
    with pytest.raises(StateMismatch):
        restore_core(fresh_core("baccarat"), journal)
    discarded = fresh_core("baccarat")
    assert restore_core(discarded, journal, discard_state=True) is False
    discarded.on_reading(DeviceOnline(device="shoe", time=20.0), 20.0)
    opened = discarded.on_tick(20.0).events[-1]
    assert opened.type == "round.opened" and opened.data["round_id"] == "golden-0000002"
