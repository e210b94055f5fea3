"""A table's own capture tells the whole story: replaying it reproduces the table's events exactly, the
supervisor's pause, resume and void included (the capture holds the device bytes, the link's openings and
every command the table accepted, each at its time).

Runs the real service in-process on a pty shoe with a real Mosquitto, drives it through the one command
entry point, then replays the capture it wrote and compares event for event (type and data; ids and record
times are the journal's own).

Its integration tests; the unit ones are in `tests/unit/core/test_replay_story.py`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controller.commands import Pause, Resume, VoidRound
from controller.events import Envelope
from controller.replay import replay_file
from controller.service import TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import MosquittoBroker, wait_until
from drivers.capture import read_capture
from drivers.shoe.simulator import ShoeSimulator

pytestmark = pytest.mark.integration


async def test_replay_of_a_tables_own_capture_reproduces_its_events(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    shoe = ShoeSimulator(decks=8, seed=31)
    port = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    capture = tmp_path / "shoe.jsonl"
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": "s1", "table_id": "story", "game": "baccarat", "data_dir": str(tmp_path)},
            "broker": {"url": mosquitto.url},
            "devices": {"shoe": {"protocol": "shoe-line", "port": port, "capture": str(capture)}},
            "game": {"betting_seconds": 0.5, "round_gap_seconds": 0.3},
        },
        environ={},
        source="test",
    )
    service = TableService(config)
    live: list[Envelope] = []
    service.listeners.append(live.append)
    running = asyncio.create_task(service.run())

    def count(type_: str) -> int:
        return sum(e.type == type_ for e in live)

    async def deal_until(type_: str, n: int) -> None:
        while count(type_) < n:
            shoe.draw()
            await asyncio.sleep(0.15)

    try:
        # round 1: a card, a supervisor's pause and resume, then the hand to its end
        await wait_until(lambda: count("round.betting_closed") >= 1, timeout=15, what="betting to close")
        await deal_until("card.dealt", 1)
        await service.handle_command(Pause(reason="checking the shoe", by="supervisor:desk-1"))
        await asyncio.sleep(0.3)
        await service.handle_command(Resume(by="supervisor:desk-1"))
        await deal_until("round.result", 1)
        # round 2: a card, a pause, and the supervisor voids the round (which lifts the pause)
        await wait_until(
            lambda: count("round.betting_closed") >= 2, timeout=15, what="betting to close again"
        )
        await deal_until("card.dealt", count("card.dealt") + 1)
        await service.handle_command(Pause(reason="wrong card order", by="supervisor:desk-2"))
        await service.handle_command(VoidRound(reason="misdeal", by="supervisor:desk-2"))
        # round 3 plays through
        await wait_until(
            lambda: count("round.betting_closed") >= 3, timeout=15, what="betting to close a third time"
        )
        await deal_until("round.result", 2)
    finally:
        service.stop()
        await asyncio.wait_for(running, 10)
        await shoe.stop()

    story = [record.direction for record in read_capture(capture)]
    assert story[0] == "meta" and "link" in story and story.count("cmd") == 4
    replayed = list(replay_file("baccarat", "shoe-line", capture))
    assert [e.type for e in replayed] == [e.type for e in live]
    assert [(e.type, e.subject, e.data) for e in replayed] == [(e.type, e.subject, e.data) for e in live]
    types = [e.type for e in live]
    assert {"round.paused", "round.resumed", "round.voided"} <= set(types)
    assert types.count("round.result") == 2
