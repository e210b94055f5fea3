"""Fail-stop: when the journal cannot be written, nothing more is published and the service stops with a
clear reason (systemd restarts it; it recovers from the last committed snapshot)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controller.events import Envelope
from controller.service import ServiceFailure, TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until
from drivers.shoe.simulator import ShoeSimulator

pytestmark = pytest.mark.integration


async def test_unwritable_journal_stops_the_service_and_publishes_nothing_more(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    shoe = ShoeSimulator(cards=["9S", "8D", "KC", "5H"] * 4, cut_position=None)
    port = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": "s1", "table_id": "bac-fs", "game": "baccarat", "data_dir": str(tmp_path)},
            "broker": {"url": mosquitto.url},
            "devices": {"shoe": {"protocol": "shoe-line", "port": port}},
            "game": {"betting_seconds": 0.5, "round_gap_seconds": 0.2},
        },
        environ={},
    )
    service = TableService(config)
    journaled: list[Envelope] = []
    service.listeners.append(journaled.append)
    root = config.topic_root
    try:
        async with MqttRecorder(mosquitto, [f"{root}/events/#"], client_id="fs-watch") as watch:
            running = asyncio.create_task(service.run())
            await watch.wait_for_message(f"{root}/events/round.betting_closed", lambda m: True, timeout=15)
            published_before = len(watch.on(f"{root}/events/#"))
            service.journal._db.close()  # the disk is gone: every further write fails
            await wait_until(shoe.draw, timeout=10, what="a draw")
            with pytest.raises(ServiceFailure, match="cannot write the journal"):
                await asyncio.wait_for(running, 15)
            await asyncio.sleep(0.5)
            assert len(watch.on(f"{root}/events/#")) == published_before
            assert not watch.on(f"{root}/events/card.dealt")
            assert all(e.type != "card.dealt" for e in journaled)
    finally:
        await shoe.stop()
