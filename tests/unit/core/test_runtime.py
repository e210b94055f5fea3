"""The table runtime's policy (pure): device health, pause / resume / void, recovery.

Exercised with the real baccarat flow."""

from __future__ import annotations

import json

import pytest

from controller.commands import CommandError, ManualCard, Pause, Resume, VoidRound, parse_command
from controller.games import game_spec, make_flow
from controller.runtime import FLOW_ERROR, INTERNAL_ERROR, MAX_HELD_READINGS, Step, TableCore
from drivers.readings import (
    CardSeen,
    CardUnread,
    DeviceFault,
    DeviceFaultCleared,
    DeviceOffline,
    DeviceOnline,
)
from tests.helpers.core_steps import card, make_core, online, open_and_close_betting, types

pytestmark = pytest.mark.unit


def restore(core: TableCore) -> TableCore:
    """A core built afresh from the same configuration, with `core`'s journaled state applied."""
    restored = make_core()
    restored.restore_state(json.loads(json.dumps(core.export_state())))
    return restored


def test_waits_for_devices_without_pausing() -> None:
    core = make_core()
    assert core.on_tick(0).events == []
    assert core.state()["waiting_for_devices"] == ["shoe"]
    assert not core.paused
    step = online(core)
    assert types(step) == ["device.online"]
    assert "round.opened" in types(core.on_tick(0.1))


def test_fault_before_any_card_voids_the_round_and_pauses() -> None:
    core = make_core()
    online(core)
    core.on_tick(0)  # round opened, betting open
    round_id = core.flow.rounds.round_id
    step = core.on_reading(DeviceFault(device="shoe", time=1, code="F03", reason="JAM"), 1)
    assert types(step) == ["device.fault", "round.paused", "round.voided"]
    voided = step.events[-1]
    assert (
        voided.data["round_id"] == round_id
        and voided.data["refund"] is True
        and voided.data["by"] == "system"
    )
    assert core.paused and core.state()["phase"] == "paused"
    with pytest.raises(CommandError, match="device shoe is fault"):
        core.on_command(Resume(), 2)
    core.on_reading(DeviceFaultCleared(device="shoe", time=3), 3)
    step, _ = core.on_command(Resume(by="supervisor:desk-2"), 4)
    assert types(step) == ["round.resumed"]
    assert step.events[0].data["by"] == "supervisor:desk-2"
    assert "round.opened" in types(core.on_tick(10))


def test_fault_mid_round_pauses_then_resume_continues_the_same_round() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    round_id = core.flow.rounds.round_id
    assert types(core.on_reading(card("9S", now + 1), now + 1)) == ["card.dealt"]
    step = core.on_reading(
        DeviceOffline(device="shoe", time=now + 2, reason="no data from device for 3 s"), now + 2
    )
    assert types(step) == ["device.offline", "round.paused"]
    assert core.flow.rounds.round_id == round_id  # not voided: the round had started
    # a card that arrives while paused is never dealt
    step = core.on_reading(card("2H", now + 3), now + 3)
    assert types(step) == ["reading.rejected"]
    assert core.state()["game_state"]["player"] == ["9S"]
    online(core, now + 4)
    core.on_command(Resume(), now + 5)
    events = []
    for i, code in enumerate(["8D", "KC", "5H"]):
        events += core.on_reading(card(code, now + 6 + i), now + 6 + i).events
    result = next(e for e in events if e.type == "round.result")
    assert result.subject == round_id
    assert result.data["player"]["cards"] == ["9S", "KC"]
    assert result.data["banker"]["cards"] == ["8D", "5H"]
    assert result.data["winner"] == "player"


def test_void_command_refunds_the_round_and_bad_commands_change_nothing() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    core.on_reading(card("AS", now), now)
    round_id = core.flow.rounds.round_id
    before = core.export_state()
    for bad in (Resume(), VoidRound(round_id="t1-9999999")):
        with pytest.raises(CommandError):
            core.on_command(bad, now + 1)
        assert core.export_state() == before, f"{bad!r} changed the table"
    step, reply = core.on_command(VoidRound(reason="dealer error", round_id=round_id), now + 1)
    assert types(step) == ["round.voided"]
    assert step.events[0].data == {
        "round_id": round_id,
        "reason": "dealer error",
        "refund": True,
        "by": "supervisor",
    }
    assert reply["state"]["round_id"] is None
    with pytest.raises(CommandError, match="no round in progress"):
        core.on_command(VoidRound(), now + 2)


def test_supervisor_pause_and_double_pause() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    core.on_reading(card("AS", now), now)
    step, _ = core.on_command(Pause(reason="checking the shoe"), now)
    assert types(step) == ["round.paused"]
    assert core.flow.rounds.round_id is not None  # supervisor pause never voids by itself
    with pytest.raises(CommandError, match="already paused"):
        core.on_command(Pause(), now)
    with pytest.raises(CommandError, match="paused"):
        core.on_command(ManualCard(card="KD"), now)


def noread(ref: str, now: float) -> CardUnread:
    return CardUnread(device="shoe", time=now, ref=ref, raw=f"NOREAD {ref}")


def test_manual_card_goes_through_the_flow_checks() -> None:
    core = make_core(decks=1)
    now = open_and_close_betting(core)
    with pytest.raises(CommandError, match="no unread card is waiting"):
        core.on_command(parse_command("commands", "manual_card", {"card": "QS"}, by="panel"), now)
    core.on_reading(noread("1", now), now)
    step, _ = core.on_command(parse_command("commands", "manual_card", {"card": "QS"}, by="supervisor"), now)
    assert [e.data["manual"] for e in step.events if e.type == "card.dealt"] == [True]
    assert core.state()["game_state"]["player"] == ["QS"]
    core.on_reading(noread("2", now), now)
    with pytest.raises(CommandError):
        core.on_command(ManualCard(card="QS"), now)  # a 1-deck shoe holds QS once
    with pytest.raises(CommandError):
        core.on_command(ManualCard(card="ZZ"), now)
    assert core.state()["game_state"]["awaiting_rescan"] is True  # still waiting for the unread card


def test_reading_from_an_unconfigured_device_is_rejected_not_applied() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    step = core.on_reading(CardSeen(device="other", time=now, code="AS"), now)
    assert types(step) == ["reading.rejected"]
    assert core.state()["game_state"]["player"] == []


def test_the_state_record_counts_a_rejection_made_without_a_pause() -> None:
    """The record's fields beside the flow's are kept encoded from step to step while nothing is held or
    paused: a rejection that pauses nothing must still reach the journaled record."""
    core = make_core()
    now = open_and_close_betting(core)
    assert json.loads(core.export_state_json())["rejected"] == {}
    for count in (1, 2):
        core.on_reading(CardSeen(device="other", time=now, code="AS"), now)
        assert not core.paused and not core.held
        assert json.loads(core.export_state_json())["rejected"] == {"unknown device": count}


def test_recovery_mid_round_pauses_until_a_supervisor_resumes() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    core.on_reading(card("4C", now), now)
    restored = restore(core)
    step = restored.recovered(now + 30)
    assert types(step) == ["round.paused"]
    assert step.events[0].data["reason"] == "controller restarted mid-round"
    assert restored.state()["devices"]["shoe"]["status"] == "offline"
    online(restored, now + 31)  # a device coming back after a restart does not re-pause
    restored.on_command(Resume(), now + 32)
    restored.on_reading(card("5D", now + 33), now + 33)
    assert restored.state()["game_state"]["player"] == ["4C"]
    assert restored.state()["game_state"]["banker"] == ["5D"]


def test_recovery_between_rounds_does_not_pause() -> None:
    core = make_core()
    online(core)
    restored = restore(core)
    assert restored.recovered(1).events == []
    assert not restored.paused


def test_readings_during_a_pause_are_held_and_applied_in_order_on_resume() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    core.on_reading(CardUnread(device="shoe", time=now, ref="0007", raw="NOREAD 0007"), now)
    core.on_command(Pause(reason="dealer called the supervisor"), now + 1)
    # the dealer re-scans the unread card during the pause: physically it is the player's first card
    step = core.on_reading(
        CardSeen(device="shoe", time=now + 2, code="9S", ref="0007", rescan_of="0007", raw="RESCAN 0007 9S"),
        now + 2,
    )
    assert types(step) == ["reading.held"]
    assert step.events[0].data == {
        "device": "shoe",
        "reading": "CardSeen",
        "raw": "RESCAN 0007 9S",
        "held": 1,
    }
    assert core.state()["held_readings"] == 1
    # what is held, not only how many: a supervisor sees it before resuming
    assert core.state()["held"] == [
        {"device": "shoe", "reading": "CardSeen", "card": "9S", "raw": "RESCAN 0007 9S"}
    ]
    assert core.state()["game_state"]["player"] == []
    step, _ = core.on_command(Resume(), now + 3)
    assert types(step) == ["round.resumed", "card.dealt"]
    assert step.events[1].data["card"] == "9S" and step.events[1].data["rescan"] is True
    # taken when the table takes it, at the resume: a window it opens starts then (the reading keeps its own
    # time, as journaled with the pause)
    assert step.events[1].time == now + 3
    assert core.state()["held_readings"] == 0 and core.state()["held"] == []


def test_a_window_a_held_reading_opens_starts_at_the_resume() -> None:
    """Stud: the dealer's up card is re-scanned during a pause; the players' decision window it opens must
    start when the table takes the card (the resume), not when the dealer scanned it, or it is over before
    the players see the card."""
    settings = {"betting_seconds": 5, "round_gap_seconds": 1, "hands": 1, "decision_seconds": 20}
    flow = make_flow("stud", "t1", game_spec("stud").settings.model_validate(settings))
    core = TableCore(table_id="t1", game="stud", flow=flow, devices=["shoe"])
    core.on_reading(DeviceOnline(device="shoe", time=0.0), 0.0)
    now = 0.0
    for _ in range(2):  # the round opens, then betting closes
        due = core.next_deadline()
        assert due is not None
        now = max(now, due)
        core.on_tick(now)
    for index, code in enumerate(["2C", "5D", "9H", "JS", "KD"], 1):  # the box's five cards
        core.on_reading(CardSeen(device="shoe", time=now, code=code, ref=f"{index:04d}"), now)
    core.on_reading(CardUnread(device="shoe", time=now, ref="0006", raw="NOREAD 0006"), now)  # the up card
    core.on_command(Pause(reason="dealer called the supervisor"), now)
    rescan = CardSeen(
        device="shoe", time=now + 1, code="AS", ref="0006", rescan_of="0006", raw="RESCAN 0006 AS"
    )
    assert types(core.on_reading(rescan, now + 1)) == ["reading.held"]
    resumed_at = now + 60.0
    step, _ = core.on_command(Resume(), resumed_at)
    assert "card.dealt" in types(step)
    assert core.next_deadline() == resumed_at + 20.0  # the players' 20 s, from when they can see the card
    assert types(core.on_tick(resumed_at)) == []  # nothing is over yet


def test_a_pause_holds_a_bounded_number_of_readings() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    core.on_command(Pause(), now)
    for _ in range(MAX_HELD_READINGS):
        core.on_reading(card("AS", now), now)
    step = core.on_reading(card("KD", now), now)
    assert types(step) == ["reading.rejected"]
    assert core.state()["rejected"] == {"hold limit": 1}


def test_device_action_is_a_request_to_that_device_only() -> None:
    core = make_core()
    online(core)
    step, _ = core.on_command(
        parse_command("commands", "device_action", {"device": "shoe", "action": "status"}, by="supervisor"), 1
    )
    assert step.events == []
    assert [(r.device, r.command.name) for r in step.requests] == [("shoe", "status")]
    with pytest.raises(CommandError, match="no device 'wheel'"):
        core.on_command(
            parse_command(
                "commands", "device_action", {"device": "wheel", "action": "power_on"}, by="supervisor"
            ),
            1,
        )
    with pytest.raises(CommandError):
        parse_command("commands", "device_action", {"device": "shoe", "action": "explode"}, by="supervisor")


def test_a_pause_gives_the_betting_window_its_time_back() -> None:
    core = make_core()  # betting 5 s
    online(core, 0.0)
    core.on_tick(0.0)  # opened at 0: betting closes at 5
    core.on_command(Pause(reason="checking"), 1.0)
    assert core.next_deadline() is None  # a paused table waits for nothing
    core.on_command(Resume(), 31.0)  # paused for 30 s
    assert core.next_deadline() == 35.0
    assert core.on_tick(34.9).events == []
    assert types(core.on_tick(35.0)) == ["round.betting_closed"]


def test_a_supervisors_void_lifts_the_pause_but_an_automatic_one_does_not() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    core.on_reading(card("AS", now), now)
    core.on_command(Pause(reason="wrong card order"), now + 1)
    round_id = core.flow.rounds.round_id
    step, _ = core.on_command(VoidRound(reason="misdeal"), now + 2)
    assert types(step) == ["round.voided", "round.resumed"]
    assert step.events[1].data["round_id"] == round_id
    assert not core.paused
    # a device fault before the round started voids it and keeps the table paused
    later = core.next_deadline()
    assert later is not None
    core.on_tick(later)
    step = core.on_reading(DeviceFault(device="shoe", time=later, code="JAM", reason="jam"), later)
    assert "round.voided" in types(step) and core.paused


def gate_requests(step: Step) -> list[str]:
    return [r.command.name for r in step.requests if r.device == "shoe" and r.command.name in GATE]


GATE = ("lock", "unlock")


def test_a_shoe_back_online_is_told_the_gate_the_game_wants_now() -> None:
    # A LOCK written just before the cable was pulled may never have reached the shoe: whenever the link is
    # back, the gate is asked for again (locked while betting is open or the table paused, open while a
    # card is expected), so that a lost request cannot leave the gate open during betting.
    core = make_core()
    online(core)
    core.on_tick(0)  # betting open
    offline = DeviceOffline(device="shoe", time=1, reason="cable pulled")
    core.on_reading(offline, 1)  # the round had not started: voided, the table paused
    assert core.paused
    assert gate_requests(online(core, 2)) == ["lock"]
    core.on_command(Resume(), 3)
    now = open_and_close_betting(core, 10)
    assert gate_requests(online(core, now)) == ["unlock"]  # already online: the gate is asked all the same
    core.on_reading(card("9S", now), now)  # the round has started: a pause keeps it
    core.on_reading(DeviceOffline(device="shoe", time=now + 1, reason="cable pulled"), now + 1)
    assert gate_requests(online(core, now + 2)) == ["lock"]  # paused mid-round
    core.on_command(Resume(), now + 3)
    assert gate_requests(online(core, now + 4)) == ["unlock"]


def test_the_gate_locks_with_a_rounds_last_card() -> None:
    # No card is expected from a round's last card until the next round's betting closes: a gate left open
    # there lets the dealer draw the next round's first card while its bets are still taken.
    core = make_core()
    now = open_and_close_betting(core)
    for n, code in enumerate(("9S", "2H", "KD")):
        assert gate_requests(core.on_reading(card(code, now + n), now + n)) == []
    last = core.on_reading(card("3C", now + 5), now + 5)  # the player's natural 9 ends the hand
    assert "round.result" in types(last)
    assert gate_requests(last) == ["lock"]


def test_a_resume_that_ends_the_round_with_a_held_card_never_opens_the_gate() -> None:
    # Restarted mid-round, with the round's last card read while paused: the resume unlocks for the card
    # the round waits for, and the held card ends the round in the same step. Written as asked, the shoe
    # would get UNLOCK then LOCK and be open between the two lines, for the next round's first card.
    core = make_core()
    now = open_and_close_betting(core)
    for n, code in enumerate(("9S", "2H", "KD")):
        core.on_reading(card(code, now + n), now + n)
    restarted = restore(core)
    restarted.recovered(now + 10)
    assert restarted.paused
    assert gate_requests(online(restarted, now + 11)) == ["lock"]
    assert types(restarted.on_reading(card("3C", now + 12), now + 12)) == ["reading.held"]
    step, _ = restarted.on_command(Resume(), now + 13)
    assert "round.result" in types(step)
    assert gate_requests(step) == ["lock"]


def test_a_flow_that_fails_on_a_command_pauses_the_table_and_the_reply_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug met by a command may have changed the game halfway: the table pauses, as for a reading, and
    the step is returned (to be journaled) with the error for the sender, never raised before it is kept."""
    core = make_core()
    now = open_and_close_betting(core)
    core.on_reading(card("4C", now), now)  # the round has started: a pause keeps it

    def broken(command: object, now: float) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(core.flow, "on_command", broken)
    manual = parse_command("commands", "manual_card", {"card": "9S"}, by="supervisor:ana")
    step, reply = core.on_command(manual, now + 1)
    assert types(step) == ["round.paused"]
    assert (
        step.events[0].data["reason"] == INTERNAL_ERROR and step.events[0].data["cause"] == "internal_error"
    )
    assert reply[FLOW_ERROR] == "internal error in the game flow: the table is paused"
    assert core.paused and "game flow failed on the command manual_card" in caplog.text
