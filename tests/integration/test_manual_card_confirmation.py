"""A card entered by hand after a no-read, confirmed by a supervisor over a real Mosquitto: the `card.dealt`
names both the dealer who entered it and the supervisor who confirmed it.

Its integration tests; the unit ones are in `tests/unit/core/test_manual_card_confirmation.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.commands import parse_command
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until
from controller.testing.table_process import running_service
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers.manual_card_confirmation import raw_config

pytestmark = pytest.mark.integration
ROOT = "studio/s1/table/t1"


# --- end to end: the supervisor's command over a real broker ------------------------------------------------


async def test_a_supervisor_confirms_over_mqtt_and_card_dealt_names_both(
    mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    shoe = ShoeSimulator(cards=["9S", "8D", "7C", "6H"] * 4, cut_position=None)
    port = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    raw = raw_config(tmp_path, "supervisor")
    raw["broker"] = {"url": mosquitto.url, "reconnect_min_seconds": 0.05, "reconnect_max_seconds": 0.2}
    raw["devices"]["shoe"]["port"] = port
    config = TABLE_CONFIGS.from_dict(raw, environ={})
    try:
        async with running_service(config) as service:
            async with MqttRecorder(mosquitto, [f"{ROOT}/#"]) as desk:
                shoe.force_noread()
                await wait_until(shoe.draw, timeout=15, what="betting to close and the gate to open")
                await desk.wait_for_message(f"{ROOT}/events/card.unreadable", lambda m: True)
                # the dealer enters it on the panel (the panel's own identity, not an MQTT sender)
                entry = parse_command("commands", "manual_card", {"card": "9S"}, by="dealer:d1")
                await service.handle_command(entry)
                pending = await desk.wait_for_message(f"{ROOT}/events/card.manual_pending", lambda m: True)
                assert pending.json()["data"]["card"] == "9S"
                await desk.wait_for_message(
                    f"{ROOT}/state", lambda m: m.json().get("manual_card_pending", {}).get("card") == "9S"
                )
                # a wrong card from the supervisor's desk: an error reply, nothing dealt
                desk.publish(
                    f"{ROOT}/commands/confirm_manual_card/desk-2", {"transaction": "c1", "card": "9H"}
                )
                wrong = await desk.wait_for_message(
                    f"{ROOT}/replies/confirm_manual_card", lambda m: m.json().get("transaction") == "c1"
                )
                assert wrong.json()["status"] == "error"
                desk.publish(
                    f"{ROOT}/commands/confirm_manual_card/desk-2", {"transaction": "c2", "card": "9S"}
                )
                ok = await desk.wait_for_message(
                    f"{ROOT}/replies/confirm_manual_card", lambda m: m.json().get("transaction") == "c2"
                )
                assert ok.json()["status"] == "ok", ok.json()
                card = await desk.wait_for_message(f"{ROOT}/events/card.dealt", lambda m: True)
                data = card.json()["data"]
                assert (data["card"], data["manual"]) == ("9S", True)
                assert (data["entered_by"], data["confirmed_by"]) == ("dealer:d1", "desk-2")
                assert len(desk.on(f"{ROOT}/events/card.dealt")) == 1  # the wrong confirmation dealt nothing
            assert service.bus.stats.rejected_commands >= 1  # the refusal was counted
    finally:
        await shoe.stop()
