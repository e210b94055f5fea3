"""Live Blackjack's `seated` through the real service (in-process; a shoe simulator on a real pty, a real
Mosquitto): the input changes no event, yet the retained state the supervisors see shows the seated boxes at
once, and only they are dealt."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controller.commands import parse_command
from controller.events import Envelope
from controller.service import TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until
from drivers.shoe.simulator import ShoeSimulator

pytestmark = pytest.mark.integration

ROOT = "studio/s1/table/seats"


async def test_seated_boxes_show_in_the_retained_state_at_once_and_only_they_are_dealt(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    shoe = ShoeSimulator(decks=8, seed=3)
    port = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": "s1", "table_id": "seats", "game": "blackjack", "data_dir": str(tmp_path)},
            "broker": {"url": mosquitto.url},
            "devices": {"shoe": {"protocol": "shoe-line", "port": port}},
            "game": {"seats": 5, "betting_seconds": 600, "betting_closes_on_first_card": True},
        },
        environ={},
        source="test",
    )
    service = TableService(config)
    events: list[Envelope] = []
    service.listeners.append(events.append)
    shown: list[dict] = []  # the states offered to the panel's live stream, as the step applies
    service.state_listeners.append(shown.append)
    running = asyncio.create_task(service.run())

    def boxes(state: dict) -> list[str]:
        return [p["name"] for p in state["game_state"]["positions"] if p["name"] != "dealer"]

    try:
        async with MqttRecorder(mosquitto, [f"{ROOT}/state"]) as recorder:
            await wait_until(
                lambda: any(e.type == "round.opened" for e in events), timeout=15, what="a round to open"
            )
            before = len(events)
            shown.clear()
            seated = parse_command("inputs", "seated", {"seats": [4, 2]}, by="rules-engine")
            reply = await service.handle_command(seated)
            assert len(events) == before  # no event: only the state changed
            assert boxes(reply["state"]) == ["box2", "box4"]
            # the step itself offered the new state (the panel and the retained state), not a later heartbeat
            assert shown and boxes(shown[-1]) == ["box2", "box4"]

            def retained_boxes() -> list[str]:
                states = recorder.on(f"{ROOT}/state")
                return boxes(states[-1].json()) if states else []

            await wait_until(lambda: retained_boxes() == ["box2", "box4"], what="the seated boxes published")
            for _ in range(5):  # box2, box4, the dealer, box2, box4
                dealt = len([e for e in events if e.type == "card.dealt"])
                shoe.draw()
                await wait_until(
                    lambda dealt=dealt: len([e for e in events if e.type == "card.dealt"]) > dealt,
                    timeout=10,
                    what="the card dealt",
                )
            positions = [e.data["position"] for e in events if e.type == "card.dealt"]
            assert positions == ["box2", "box4", "dealer", "box2", "box4"]
    finally:
        service.stop()
        await asyncio.wait_for(running, 10)
        await shoe.stop()
