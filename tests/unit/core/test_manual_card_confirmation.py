"""A card entered by hand after a no-read can need a supervisor's confirmation (`[table]
manual_card_confirmation = "supervisor"`): the dealer's entry deals nothing until a supervisor's
`confirm_manual_card` names the same card; the `card.dealt` then carries both identities. The default
("dealer") is the behaviour that was: dealt at once, published exactly as before.

Its unit tests; the integration ones are in `tests/integration/test_manual_card_confirmation.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.commands import CommandError, ConfirmManualCard, ManualCard, parse_command
from controller.config import ConfigError
from controller.flow import InputRejected
from controller.games.baccarat import BaccaratFlow, BaccaratSettings
from controller.games.card_flow import MAX_WRONG_CONFIRMATIONS
from controller.panel.app import DEALER_ACTIONS
from controller.runtime import Step, TableCore
from controller.table_build import TABLE_CONFIGS, build_core
from drivers.readings import CardSeen, CardUnread, DeviceOnline
from tests.helpers.manual_card_confirmation import raw_config

pytestmark = pytest.mark.unit

T0 = 1_790_000_000.0


def core_for(tmp_path: Path, confirmation: str | None) -> TableCore:
    core = build_core(TABLE_CONFIGS.from_dict(raw_config(tmp_path, confirmation), environ={}))
    core.on_reading(DeviceOnline(device="shoe", time=T0), T0)
    core.on_tick(T0)  # the first round opens
    core.on_tick(T0 + 1.0)  # betting closes
    return core


def command(name: str, payload: dict[str, Any], by: str) -> Any:
    return parse_command("commands", name, payload, by=by)


def types(step: Step) -> list[str]:
    return [event.type for event in step.events]


def dealt(step: Step) -> list[dict[str, Any]]:
    return [event.data for event in step.events if event.type == "card.dealt"]


def unread(core: TableCore, ref: str, now: float) -> None:
    step = core.on_reading(CardUnread(device="shoe", time=now, ref=ref, raw=f"NOREAD {ref}"), now)
    assert types(step) == ["card.unreadable"]


def test_a_supervisor_confirms_the_dealers_hand_entry_and_both_are_on_record(tmp_path: Path) -> None:
    core = core_for(tmp_path, "supervisor")
    now = T0 + 2
    unread(core, "1", now)
    step, _ = core.on_command(command("manual_card", {"card": "7D"}, "dealer:d1"), now)
    # held, not dealt: announced, and the prompt says what the table waits for
    assert types(step) == ["card.manual_pending"]
    pending = step.events[0].data
    assert pending == {
        "round_id": core.flow.rounds.round_id,
        "ref": "1",
        "card": "7D",
        "entered_by": "dealer:d1",
        "prompt": "Waiting for a supervisor to confirm 7D",
    }
    state = core.state()
    assert state["prompt"] == "Waiting for a supervisor to confirm 7D"
    assert state["manual_card_pending"] == {"card": "7D", "entered_by": "dealer:d1", "ref": "1"}
    assert state["game_state"]["player"] == []
    # the dealer cannot enter another card over it, nor confirm it, from the panel or anywhere
    with pytest.raises(CommandError, match="already waits for a supervisor"):
        core.on_command(command("manual_card", {"card": "8C"}, "dealer:d1"), now)
    for identity in ("dealer:d1", "dealer:d2", "panel"):
        with pytest.raises(InputRejected, match="only a supervisor"):
            core.flow.on_command(ConfirmManualCard(card="7D", by=identity), now)
    with pytest.raises(CommandError, match="unknown input 'confirm_manual_card'"):
        parse_command("inputs", "confirm_manual_card", {"card": "7D"}, by="rules-engine")
    assert "confirm_manual_card" not in DEALER_ACTIONS["commands"]
    # a wrong card deals nothing, and says nothing of the card entered
    with pytest.raises(CommandError, match="not the card entered by hand: nothing was dealt") as refused:
        core.on_command(command("confirm_manual_card", {"card": "7H"}, "desk-2"), now)
    assert "7D" not in str(refused.value)
    assert core.state()["game_state"]["player"] == []

    step, _ = core.on_command(command("confirm_manual_card", {"card": "7D"}, "desk-2"), now + 1)
    (card,) = dealt(step)
    assert card["card"] == "7D" and card["manual"] is True
    assert (card["entered_by"], card["confirmed_by"]) == ("dealer:d1", "desk-2")
    assert core.state()["game_state"]["player"] == ["7D"]
    assert "manual_card_pending" not in core.state()
    assert core.flow.manual_cards[-1].code == "7D"  # listed in the round's result as entered by hand
    with pytest.raises(CommandError, match="no card entered by hand waits"):
        core.on_command(command("confirm_manual_card", {"card": "7D"}, "desk-2"), now + 1)


def test_a_supervisor_refuses_and_the_dealer_enters_again(tmp_path: Path) -> None:
    core = core_for(tmp_path, "supervisor")
    now = T0 + 2
    unread(core, "1", now)
    core.on_command(command("manual_card", {"card": "7D"}, "dealer:d1"), now)
    with pytest.raises(CommandError, match="nothing was refused"):
        core.on_command(command("refuse_manual_card", {"card": "9S"}, "desk-2"), now)
    step, _ = core.on_command(command("refuse_manual_card", {"reason": "it is the 7H"}, "desk-2"), now)
    assert types(step) == ["card.manual_refused"]
    assert step.events[0].data | {"round_id": None} == {
        "round_id": None,
        "ref": "1",
        "card": "7D",
        "entered_by": "dealer:d1",
        "by": "desk-2",
        "reason": "it is the 7H",
    }
    assert "refused by the supervisor" in core.state()["prompt"]
    assert core.state()["game_state"]["awaiting_rescan"] is True  # the card still waits
    step, _ = core.on_command(command("manual_card", {"card": "7H"}, "dealer:d1"), now + 1)
    assert types(step) == ["card.manual_pending"]
    # whoever entered it cannot confirm it (a supervisor who entered a card needs another one)
    core.on_command(command("refuse_manual_card", {}, "desk-2"), now + 1)
    core.on_command(command("manual_card", {"card": "7H"}, "desk-2"), now + 1)
    with pytest.raises(CommandError, match="someone other than whoever entered it"):
        core.on_command(command("confirm_manual_card", {"card": "7H"}, "desk-2"), now + 1)
    step, _ = core.on_command(command("confirm_manual_card", {"card": "7H"}, "desk-3"), now + 2)
    assert [(d["card"], d["entered_by"], d["confirmed_by"]) for d in dealt(step)] == [
        ("7H", "desk-2", "desk-3")
    ]


def test_wrong_confirmations_are_capped_and_a_rescan_settles_the_entry(tmp_path: Path) -> None:
    core = core_for(tmp_path, "supervisor")
    now = T0 + 2
    unread(core, "1", now)
    core.on_command(command("manual_card", {"card": "7D"}, "dealer:d1"), now)
    for code in ["2C", "3C", "4C"][:MAX_WRONG_CONFIRMATIONS]:
        with pytest.raises(CommandError, match="not the card"):
            core.on_command(command("confirm_manual_card", {"card": code}, "desk-2"), now)
    # no more guessing (a face-down card must not be found by trying): only a refusal is taken now
    with pytest.raises(CommandError, match="refuse this entry"):
        core.on_command(command("confirm_manual_card", {"card": "7D"}, "desk-2"), now)
    core.on_command(command("refuse_manual_card", {}, "desk-2"), now)
    core.on_command(command("manual_card", {"card": "7D"}, "dealer:d1"), now)
    # the re-scan reads the card after all: it is dealt as read, the hand entry is void
    step = core.on_reading(CardSeen(device="shoe", time=now, code="7D", raw="7D", rescan_of="1"), now)
    assert [(d["card"], d["manual"], "entered_by" in d) for d in dealt(step)] == [("7D", False, False)]
    assert "manual_card_pending" not in core.state()
    with pytest.raises(CommandError, match="no card entered by hand waits"):
        core.on_command(command("confirm_manual_card", {"card": "7D"}, "desk-2"), now)


def test_the_pending_entry_is_not_journaled_and_a_restart_asks_for_it_again(tmp_path: Path) -> None:
    core = core_for(tmp_path, "supervisor")
    now = T0 + 2
    unread(core, "1", now)
    before = core.export_state_json()
    core.on_command(command("manual_card", {"card": "7D"}, "dealer:d1"), now)
    restarted = build_core(TABLE_CONFIGS.from_dict(raw_config(tmp_path, "supervisor"), environ={}))
    restarted.restore_state(core.export_state())
    assert core.export_state()["flow"]["unread_ref"] == "1"  # the state row: the card still waits, as before
    # on record, only the prompt changed: the pending entry itself is not journaled
    assert {**core.export_state()["flow"], "prompt": ""} == {**json.loads(before)["flow"], "prompt": ""}
    assert "manual_card_pending" not in restarted.state()
    assert restarted.flow.prompt == "Re-scan the card"  # not a wait for a confirmation that is gone
    with pytest.raises(CommandError, match="no card entered by hand waits"):
        restarted.on_command(command("confirm_manual_card", {"card": "7D"}, "desk-2"), now)


def test_the_default_deals_a_hand_entry_at_once_as_before(tmp_path: Path) -> None:
    config = TABLE_CONFIGS.from_dict(raw_config(tmp_path), environ={})
    assert config.table.manual_card_confirmation == "dealer"
    core = core_for(tmp_path, None)
    now = T0 + 2
    unread(core, "1", now)
    step, _ = core.on_command(command("manual_card", {"card": "7D"}, "dealer:d1"), now)
    (card,) = dealt(step)
    # exactly the card.dealt of before: no identities, not even null ones
    assert card == {
        "round_id": core.flow.rounds.round_id,
        "card": "7D",
        "position": "player",
        "index": 0,
        "rescan": False,
        "manual": True,
        "raw": "NOREAD 1\nmanual_card 7D",
    }
    with pytest.raises(CommandError, match="no card entered by hand waits"):
        core.on_command(command("confirm_manual_card", {"card": "7D"}, "desk-2"), now)
    assert isinstance(core.flow, BaccaratFlow) and BaccaratSettings().decks == 8


def test_the_setting_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"table\.manual_card_confirmation"):
        TABLE_CONFIGS.from_dict(raw_config(tmp_path, "pit-boss"), environ={})
    roulette = raw_config(tmp_path, "supervisor")
    roulette["table"]["game"] = "roulette"
    roulette["devices"] = {"wheel": {"protocol": "cammegh-ss2", "port": "/dev/null"}}
    roulette["game"] = {}
    with pytest.raises(ConfigError, match="has no cards entered by hand"):
        TABLE_CONFIGS.from_dict(roulette, environ={})


def test_a_face_down_card_entered_by_hand_is_named_nowhere_and_its_reveal_names_both() -> None:
    from tests.helpers.blackjack_table import single

    table = single()
    table.flow.manual_card_confirmation = "supervisor"
    table.open_round()
    table.deal("9S", "7H", "5D")  # the next card is the dealer's, face down
    table.noread("n1")
    entry = table.flow.on_command(ManualCard(card="KC", by="dealer:d1"), table.now)
    (pending,) = [e.data for e in entry.events if e.type == "card.manual_pending"]
    assert pending["card"] is None and "KC" not in json.dumps(pending)
    assert table.flow.manual_card_pending()["card"] is None
    with pytest.raises(InputRejected) as wrong:
        table.flow.on_command(ConfirmManualCard(card="QC", by="desk-2"), table.now)
    assert "KC" not in str(wrong.value)
    out = table.flow.on_command(ConfirmManualCard(card="KC", by="desk-2"), table.now)
    assert [e.type for e in out.events if e.type.startswith("card.")] == ["card.face_down"]
    assert "KC" not in json.dumps([e.data for e in out.events])
    revealed = table.send("stand", seat=1)
    (hole,) = [e.data for e in revealed.events if e.type == "card.dealt" and e.data["card"] == "KC"]
    assert hole["manual"] is True
    assert (hole["entered_by"], hole["confirmed_by"]) == ("dealer:d1", "desk-2")
