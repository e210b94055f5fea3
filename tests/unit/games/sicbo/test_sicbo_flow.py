"""Sic bo flow, pure: shaker and camera readings in (with the time), exact events and device requests out.

Run through the pure runtime (`TableCore`), so the pause a flow asks for, device faults and the supervisor's
commands behave as on the table."""

from __future__ import annotations

import pytest

from controller.commands import CommandError, Resume, VoidRound, parse_command
from controller.flow import DeviceRequest
from controller.games.sicbo import ManualDice, dice_facts
from controller.games.sicbo.game import describe_result
from drivers.readings import DeviceFault, DeviceFaultCleared, DeviceStatus, DiceAtRest
from drivers.session import DeviceCommand
from tests.helpers.sicbo_core import BET, FRAME, SHA, T0, Table

pytestmark = pytest.mark.unit


def shake(cycle: str, pushes: int = 3) -> DeviceRequest:
    return DeviceRequest("shaker", DeviceCommand("shake", {"cycle_id": cycle, "pushes": pushes}))


def read_dice(cycle: str) -> DeviceRequest:
    return DeviceRequest("camera", DeviceCommand("read_dice", {"cycle_id": cycle, "dice": 3}))


# --- the round ----------------------------------------------------------------------------------------------


def test_a_round_betting_shake_read_result() -> None:
    table = Table()
    opened = table.tick(T0)
    assert table.types(opened) == ["round.opened"]
    assert opened.events[0].data["betting_closes_at"] == "2027-01-15T08:00:10.000Z"
    assert table.flow.prompt == "Place your bets"
    assert table.core.next_deadline() == T0 + BET

    closed = table.tick(T0 + BET)
    assert table.types(closed) == ["round.betting_closed"]
    assert closed.requests == [shake("1.1")]
    assert table.flow.rounds.started and table.flow.stage == "shaking"

    rest = table.at_rest()
    assert rest.events == [] and rest.requests == [read_dice("1.1")]
    assert table.flow.stage == "reading" and table.flow.prompt == "Reading the dice"

    done = table.read((5, 2, 5))
    assert table.types(done) == ["dice.read", "round.result", "round.closed"]
    assert done.events[0].data == {
        "round_id": "sb1-0000001",
        "cycle_id": "1.1",
        "attempt": 1,
        "values": [5, 2, 5],
        "reason": "",
        "frame": FRAME,
        "frame_sha256": SHA,
        "dice": [
            {"value": 5, "confidence": 0.8, "box": [10, 20, 50, 50], "reason": ""},
            {"value": 2, "confidence": 0.8, "box": [70, 20, 50, 50], "reason": ""},
            {"value": 5, "confidence": 0.8, "box": [130, 20, 50, 50], "reason": ""},
        ],
    }
    assert table.result() == {
        "game": "sicbo",
        "round_id": "sb1-0000001",
        "dice": [2, 5, 5],
        "total": 12,
        "size": "big",
        "parity": "even",
        "triple": None,
        "double": 5,
        "reshakes": 0,
        "frame": FRAME,
        "frame_sha256": SHA,
        "source": "camera",
        "entered_by": None,
        "cycle_id": "1.1",
        "dice_in_frame": [5, 2, 5],
        "raw": "AT_REST 0001 1.1*00",
    }
    assert table.flow.stage == "idle" and table.flow.prompt == "Result: 2 5 5 = 12"
    # the next round opens after the gap, with its own cycles
    assert table.core.next_deadline() == table.now + 2.0
    table.tick(table.now + 2.0)
    table.tick(table.now + BET)
    assert table.requests[-1] == shake("2.1")


def test_the_dealer_closes_betting_early_and_the_shaker_gets_the_configured_pushes() -> None:
    table = Table(pushes=5)
    table.tick(T0)
    table.now = T0 + 2
    step = table.take(
        table.core.on_command(parse_command("inputs", "close_betting", {}, by="dealer:7"), T0 + 2)[0]
    )
    assert table.types(step) == ["round.betting_closed"]
    assert step.events[0].data["reason"] == "dealer"
    assert step.requests == [shake("1.1", pushes=5)]
    assert table.core.next_deadline() == T0 + 2 + 20.0  # the shake's timeout, no betting timer left


def test_a_refused_reading_is_never_guessed_the_dice_are_shaken_again() -> None:
    table = Table()
    table.open_and_close()
    table.at_rest()
    step = table.read(None, reason="die 2: face tilted: cocked")
    assert table.types(step) == ["dice.read"]
    assert step.events[0].data["values"] is None
    assert step.events[0].data["reason"] == "die 2: face tilted: cocked"
    assert step.requests == [shake("1.2")]
    assert table.flow.prompt == "Dice not readable (die 2: face tilted: cocked): shaking again"
    table.at_rest()
    assert table.requests[-1] == read_dice("1.2")
    table.read((6, 6, 6))
    result = table.result()
    assert result["reshakes"] == 1 and result["cycle_id"] == "1.2"
    assert (result["triple"], result["double"], result["size"]) == (6, 6, None)


@pytest.mark.parametrize(
    ("values", "frame", "why"),
    [
        ((3, 4), FRAME, "2 dice read, 3 expected"),
        ((3, 4, 5, 6), FRAME, "4 dice read, 3 expected"),
        ((0, 4, 5), FRAME, "values [0, 4, 5] are not die faces"),
        ((3, 4, 7), FRAME, "values [3, 4, 7] are not die faces"),
        ((3, 4, 5), "", "the frame was not kept: a result must point at the frame it was read from"),
    ],
)
def test_a_reading_that_cannot_be_a_result_counts_as_refused(
    values: tuple[int, ...], frame: str, why: str
) -> None:
    table = Table()
    table.open_and_close()
    table.at_rest()
    step = table.read(values, frame=frame)
    assert step.events[0].data["values"] is None and step.events[0].data["reason"] == why
    assert step.requests == [shake("1.2")]


def test_after_max_reshakes_the_round_pauses_and_a_supervisor_enters_the_dice() -> None:
    table = Table(max_reshakes=2)
    table.open_and_close()
    for attempt in range(1, 3):
        table.at_rest()
        step = table.read(None, reason="3 dice found, 2 expected" if attempt == 1 else "die 1: blurred")
        assert step.requests == [shake(f"1.{attempt + 1}")]
    table.at_rest()
    step = table.read(None, reason="die 3: die too large (90 px): stacked or cocked", frame="f3.png")
    assert table.types(step) == ["dice.read", "round.paused"]
    paused = step.events[1].data
    assert paused == {
        "round_id": "sb1-0000001",
        "reason": "dice unreadable after 2 re-shake(s): die 3: die too large (90 px): stacked or cocked; "
        "enter the dice by hand (manual_dice) or void the round",
        "device": "camera",
        "by": "system",
        "cause": "game",
        "card": None,
        "raw": "",
    }
    assert step.requests == []  # no more shaking: the supervisor decides
    assert table.core.paused and table.flow.stage == "supervisor"
    assert table.core.next_deadline() is None
    state = table.core.state()
    assert state["game_state"]["awaiting_supervisor"] is True
    assert state["game_state"]["last_read"]["frame"] == "f3.png"
    assert state["prompt"].startswith("PAUSED: dice unreadable after 2 re-shake(s)")

    # other commands stay refused while paused
    with pytest.raises(CommandError, match="the table is paused"):
        table.command(parse_command("inputs", "close_betting", {}, by="rules"))
    table.now += 30
    manual = parse_command("commands", "manual_dice", {"dice": [4, 1, 4]}, by="supervisor:ana")
    done = table.command(manual)
    assert table.types(done) == ["round.result", "round.closed", "round.resumed"]
    assert done.events[2].data == {"round_id": "sb1-0000001", "by": "supervisor:ana"}
    result = table.result()
    assert result["source"] == "manual" and result["entered_by"] == "supervisor:ana"
    assert result["frame"] == "f3.png" and result["frame_sha256"] == SHA  # the frame it was decided on
    assert (result["dice"], result["dice_in_frame"], result["reshakes"]) == ([1, 4, 4], [4, 1, 4], 2)
    assert not table.core.paused and table.flow.stage == "idle"


def test_manual_dice_is_refused_unless_the_round_waits_for_a_supervisor() -> None:
    table = Table(max_reshakes=0)
    manual = parse_command("commands", "manual_dice", {"dice": [1, 2, 3]}, by="sup")
    with pytest.raises(CommandError, match="only when the round waits for a supervisor"):
        table.command(manual)  # no round
    table.open_and_close()
    with pytest.raises(CommandError, match=r"waits for the shaker's cycle 1\.1"):
        table.command(manual)
    table.at_rest()
    table.read(None, reason="no dice found")
    assert table.core.paused
    wrong_round = parse_command("commands", "manual_dice", {"dice": [1, 2, 3], "round_id": "sb1-9"}, by="s")
    with pytest.raises(CommandError, match="round sb1-9 is not the current round"):
        table.command(wrong_round)
    for bad in ({"dice": [1, 2]}, {"dice": [1, 2, 7]}, {"dice": [1, 2, 3], "by": "x"}, {"dice": "123"}):
        with pytest.raises(CommandError):
            parse_command("commands", "manual_dice", bad, by="s")
    assert table.core.paused  # nothing changed


def test_manual_dice_while_a_device_is_still_in_fault_keeps_the_table_paused() -> None:
    table = Table(max_reshakes=0)
    table.open_and_close()
    table.at_rest()
    table.read(None, reason="no dice found")
    table.reading(DeviceFault(device="shaker", time=table.now + 1, code="M04", reason="LIGHT"))
    table.command(ManualDice(dice=[2, 2, 3], by="sup"))
    assert table.result()["dice"] == [2, 2, 3]
    assert table.core.paused  # the lamp is still broken: a supervisor resumes once it is fixed


def test_the_supervisor_voids_the_unreadable_round() -> None:
    table = Table(max_reshakes=0)
    table.open_and_close()
    table.at_rest()
    table.read(None, reason="no dice found")
    step = table.command(VoidRound(reason="dice damaged", by="supervisor:ana"))
    assert table.types(step) == ["round.voided", "round.resumed"]
    assert not table.core.paused and table.flow.stage == "idle"
    assert table.flow.prompt == "Round voided: bets are refunded"


def test_the_supervisor_resumes_the_unreadable_round_for_another_set_of_shakes() -> None:
    table = Table(max_reshakes=1)
    table.open_and_close()
    table.at_rest()
    table.read(None, reason="die 1: blurred")
    table.at_rest()
    table.read(None, reason="die 1: blurred")
    assert table.core.paused
    step = table.command(Resume(by="supervisor:ana"))
    assert table.types(step) == ["round.resumed"]
    assert step.requests == [shake("1.3")]
    table.at_rest()
    assert table.types(table.read(None, reason="die 1: blurred")) == ["dice.read"]  # one more re-shake
    table.at_rest()
    assert table.types(table.read(None, reason="die 1: blurred")) == ["dice.read", "round.paused"]
    table.command(Resume(by="supervisor:ana"))
    table.at_rest()
    table.read((1, 2, 3))
    assert table.result()["reshakes"] == 4  # every shake after the first


# --- stale and misplaced readings -----------------------------------------------------------------------


def test_readings_of_another_cycle_or_with_no_round_are_rejected_never_used() -> None:
    table = Table()
    # a table just started opens its first round before it looks at a reading (the round was due): the
    # dice at rest then belong to no shake of that round
    step = table.at_rest(cycle="0.1")
    assert table.types(step) == ["round.opened", "reading.rejected"]
    assert step.events[1].data["reason"] == "dice at rest in cycle 0.1: betting is still open"
    step = table.at_rest(cycle="1.1")
    assert step.events[0].data["reason"] == "dice at rest in cycle 1.1: betting is still open"
    table.tick(T0 + 3.0 + BET)  # the round opened with the first reading, 3 s after the start
    step = table.at_rest(cycle="1.0")
    assert (
        step.events[0].data["reason"]
        == "dice at rest in cycle 1.0: the round waits for the shaker's cycle 1.1"
    )
    step = table.read((1, 1, 1), cycle="1.1")
    assert (
        step.events[0].data["reason"] == "dice read in cycle 1.1: the round waits for the shaker's cycle 1.1"
    )
    table.at_rest()
    step = table.read((1, 1, 1), cycle="1.0")
    assert step.events[0].data["reason"] == (
        "dice read in cycle 1.0: the round waits for the camera's reading of cycle 1.1"
    )
    assert step.requests == [] and table.flow.stage == "reading"
    table.read((1, 1, 2))
    assert table.result()["dice"] == [1, 1, 2]
    repeat = table.read((1, 1, 2), cycle="1.1")  # the same reading again: never a second result
    assert table.types(repeat) == ["reading.rejected"]
    # between rounds (the 2 s gap): no round waits for dice
    step = table.at_rest(cycle="0.1", dt=0.5)
    assert table.types(step) == ["reading.rejected"]
    assert step.events[0].data["reason"] == "dice at rest in cycle 0.1: no round waits for dice"
    other = table.reading(DiceAtRest(device="camera", time=table.now, cycle_id="1.1"))  # wrong device
    assert other.events == []


# every reading in every stage: what the flow does with it
STAGES = ["no round", "betting", "shaking", "reading", "supervisor"]
INPUTS = ["at_rest", "at_rest stale", "read ok", "read refused", "read stale"]
EXPECTED = {
    ("shaking", "at_rest"): "read requested",
    ("shaking", "at_rest stale"): "rejected, shake again",  # the shaker is free now: it may take our SHAKE
    ("reading", "read ok"): "result",
    ("reading", "read refused"): "re-shake",
}


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("what", INPUTS)
def test_every_reading_in_every_stage(stage: str, what: str) -> None:
    table = Table(max_reshakes=0)
    if stage == "no round":
        # between two rounds, in the gap after a result: the next round is not due yet (at a table just
        # started the first round opens before any reading is looked at)
        table.open_and_close()
        table.at_rest()
        table.read((1, 2, 3))
        assert not table.flow.rounds.in_round
    else:
        table.tick(T0)
    if stage in ("shaking", "reading", "supervisor"):
        table.tick(T0 + BET)
    if stage in ("reading", "supervisor"):
        table.at_rest()
    if stage == "supervisor":
        table.read(None, reason="no dice found")
        assert table.flow.stage == "supervisor"
        table.core.pause = None  # the flow alone: what it does with a reading while it waits
    table.flow.refusals_allowed = table.flow.refusals + 1  # one re-shake left: a refusal shows as one
    cycle = table.flow.cycle_id or "1.1"
    before = len(table.events)
    rest_dt = 0.4 if stage == "no round" else 3.0  # within the gap between rounds
    if what == "at_rest":
        step = table.at_rest(cycle=cycle, dt=rest_dt)
    elif what == "at_rest stale":
        step = table.at_rest(cycle="9.9", dt=rest_dt)
    elif what == "read ok":
        step = table.read((2, 3, 4), cycle=cycle)
    elif what == "read refused":
        step = table.read(None, reason="die 1: blurred", cycle=cycle)
    else:
        step = table.read((2, 3, 4), cycle="9.9")
    outcome = EXPECTED.get((stage, what), "rejected")
    types = [e.type for e in table.events[before:]]
    if outcome == "rejected":
        assert types == ["reading.rejected"] and step.requests == []
    elif outcome == "rejected, shake again":
        assert types == ["reading.rejected"] and step.requests == [shake(cycle)]
    elif outcome == "read requested":
        assert types == [] and step.requests == [read_dice(cycle)]
    elif outcome == "result":
        assert types == ["dice.read", "round.result", "round.closed"]
    else:
        assert types == ["dice.read"] and [r.command.name for r in step.requests] == ["shake"]


# --- time -----------------------------------------------------------------------------------------------


def test_a_silent_shaker_is_asked_again_then_the_round_pauses() -> None:
    table = Table(shake_timeout_seconds=15.0, max_silent_shakes=2)
    table.open_and_close()
    step = table.tick(T0 + BET + 15)
    assert step.requests == [shake("1.2")] and step.events == []
    assert table.flow.prompt == "The shaker did not answer: shaking again"
    step = table.tick(T0 + BET + 30)
    assert table.types(step) == ["round.paused"]
    assert step.events[0].data["device"] == "shaker"
    assert (
        step.events[0]
        .data["reason"]
        .startswith(
            "the shaker did not report the dice at rest within 15 s of SHAKE (2 times in a row, cycle 1.2)"
        )
    )
    table.now += 60
    step = table.command(Resume(by="sup"))
    assert step.requests == [shake("1.3")]
    table.at_rest()
    table.read((3, 3, 4))
    assert table.result()["reshakes"] == 2


def test_dice_entered_by_hand_after_a_read_timed_out_point_at_no_earlier_frame() -> None:
    """The camera gave no reading of the shake the supervisor decides on: the result names no frame, not the
    frame of an earlier shake or an earlier round (`last_read` is kept for the panel between rounds)."""
    table = Table(max_reshakes=1, read_timeout_seconds=5.0)
    table.open_and_close()
    table.at_rest()
    table.read((1, 2, 3), frame="round-1.png")  # round 1's result, read from its frame
    assert table.result()["frame"] == "round-1.png"
    table.tick(table.now + 2.0)  # round 2 opens after the gap
    table.tick(table.now + BET)
    assert table.flow.cycle_id == "2.1"
    table.at_rest()
    table.read(None, reason="die 2: blurred", frame="round-2-shake-1.png")  # refused: shaken again
    table.at_rest()
    assert table.flow.cycle_id == "2.2"
    step = table.tick(table.now + 5.0)  # the camera never reads shake 2.2
    assert table.types(step) == ["round.paused"] and table.flow.stage == "supervisor"
    manual = parse_command("commands", "manual_dice", {"dice": [6, 6, 6]}, by="supervisor:ana")
    done = table.command(manual)
    result = next(e.data for e in done.events if e.type == "round.result")
    assert (result["source"], result["cycle_id"], result["dice"]) == ("manual", "2.2", [6, 6, 6])
    assert result["frame"] == "" and result["frame_sha256"] == ""


@pytest.mark.parametrize("state", ["DOME_OPEN", "IDLE", "SHAKING", "SETTLING"])
def test_the_shaker_leaving_at_rest_before_the_read_pauses_and_that_shake_is_never_read(state: str) -> None:
    """The dice came to rest and the camera is reading them when the shaker reports another state (its dome
    lifted, its lever pushed): they may have been moved. The table pauses, the reading of that cycle is
    never a result, and the resume shakes again."""
    table = Table()
    table.open_and_close()
    table.at_rest()
    assert table.flow.stage == "reading"
    step = table.reading(DeviceStatus(device="shaker", time=table.now + 0.1, state=state))
    assert table.types(step) == ["round.paused"]
    assert step.events[0].data["reason"] == (
        f"the shaker reported {state} after the dice came to rest (cycle 1.1) and before the camera read "
        "them: they may have been moved; close the dome, then resume (the dice are shaken again) or void the "
        "round"
    )
    assert step.events[0].data["device"] == "shaker" and table.core.paused
    held = table.read((1, 1, 1))  # the frame may show dice a hand moved
    assert table.types(held) == ["reading.held"]
    step = table.command(Resume(by="sup"))
    assert table.types(step) == ["round.resumed", "reading.rejected"]
    assert step.requests == [shake("1.2")]
    assert not any(e.type == "round.result" for e in table.events)


def test_shaker_states_that_break_no_procedure_change_nothing() -> None:
    """AT_REST while reading, and any state while shaking or between rounds, is the shaker's health only."""
    table = Table()
    table.reading(DeviceStatus(device="shaker", time=table.now, state="DOME_OPEN"))  # dice changed, no round
    table.reading(DeviceStatus(device="shaker", time=table.now, state="IDLE"))
    table.open_and_close()
    for state in ("SHAKING", "SETTLING"):
        assert table.types(table.reading(DeviceStatus(device="shaker", time=table.now, state=state))) == []
    table.at_rest()
    assert table.types(table.reading(DeviceStatus(device="shaker", time=table.now, state="AT_REST"))) == []
    table.read((3, 4, 5))
    assert table.result()["dice"] == [3, 4, 5] and not table.core.paused


def test_a_camera_that_does_not_answer_counts_as_a_refused_reading() -> None:
    table = Table(read_timeout_seconds=5.0)
    table.open_and_close()
    table.at_rest()
    rested = table.now
    assert table.core.next_deadline() == rested + 5.0
    step = table.tick(rested + 5.0)
    assert step.requests == [shake("1.2")]
    assert table.flow.prompt == "Dice not readable (the camera gave no reading within 5 s): shaking again"
    late = table.read((1, 2, 3), cycle="1.1")
    assert table.types(late) == ["reading.rejected"]


# --- device faults ----------------------------------------------------------------------------------------


def test_a_shaker_fault_mid_round_pauses_and_on_resume_the_dice_are_shaken_again() -> None:
    table = Table()
    table.open_and_close()
    step = table.reading(DeviceFault(device="shaker", time=T0 + BET + 1, code="M01", reason="MOTOR"))
    assert table.types(step) == ["device.fault", "round.paused"]
    assert step.events[1].data == {
        "round_id": "sb1-0000001",
        "reason": "shaker fault: MOTOR",
        "device": "shaker",
        "by": "device",
        "cause": "device",
        "card": None,
        "raw": "",
    }
    with pytest.raises(CommandError, match="device shaker is fault"):
        table.command(Resume(by="sup"))
    table.reading(DeviceFaultCleared(device="shaker", time=T0 + BET + 50))
    step = table.command(Resume(by="sup"))
    assert step.requests == [shake("1.2")]


def test_a_shaker_still_busy_with_the_old_cycle_at_the_resume_is_asked_again_once_at_rest() -> None:
    # The camera was covered while the shaker shook cycle 1.1; the supervisor resumed before the shaker was
    # done, so it answered SHAKE 1.2 with its state only. Its AT_REST of 1.1 says it is free: ask again now,
    # not after the shake timeout (20 s of a round standing still).
    table = Table()
    table.open_and_close()
    table.reading(DeviceFault(device="camera", time=table.now + 0.5, code="COVERED", reason="covered"))
    table.reading(DeviceFaultCleared(device="camera", time=table.now + 1))
    assert table.command(Resume(by="sup")).requests == [shake("1.2")]
    step = table.at_rest(cycle="1.1", dt=1.0)
    assert table.types(step) == ["reading.rejected"]
    assert step.requests == [shake("1.2")]
    assert table.flow.shakes == 2  # the same cycle asked again: not a re-shake of the round
    assert table.core.next_deadline() == table.now + table.flow.settings.shake_timeout_seconds
    assert table.at_rest(cycle="1.2").requests == [read_dice("1.2")]
    table.read((2, 2, 6))
    assert table.result()["dice"] == [2, 2, 6] and table.result()["reshakes"] == 1


def test_a_reading_held_during_a_pause_belongs_to_the_old_cycle_and_is_rejected() -> None:
    table = Table()
    table.open_and_close()
    table.at_rest()
    table.reading(DeviceFault(device="shaker", time=table.now + 0.1, code="M02", reason="DOME_NOT_CLOSED"))
    held = table.read((4, 5, 6))  # the camera was fine: its reading is held
    assert table.types(held) == ["reading.held"]
    table.reading(DeviceFaultCleared(device="shaker", time=table.now + 5))
    step = table.command(Resume(by="sup"))
    assert table.types(step) == ["round.resumed", "reading.rejected"]
    assert step.requests == [shake("1.2")]
    assert "dice read in cycle 1.1" in step.events[1].data["reason"]
    assert not any(e.type == "round.result" for e in table.events)


def test_a_camera_fault_before_the_shake_voids_the_round_and_during_it_pauses() -> None:
    table = Table()
    table.tick(T0)
    step = table.reading(DeviceFault(device="camera", time=T0 + 1, code="COVERED", reason="covered: ..."))
    assert table.types(step) == ["device.fault", "round.paused", "round.voided"]
    assert step.events[2].data["reason"] == "camera fault: covered: ... before the round started"

    table = Table()
    table.open_and_close()
    table.at_rest()
    step = table.reading(DeviceFault(device="camera", time=table.now + 1, code="FROZEN", reason="frozen"))
    assert table.types(step) == ["device.fault", "round.paused"]
    late = table.read((1, 2, 3))  # from a camera in fault: the runtime does not trust it
    assert table.types(late) == ["reading.rejected"]


# --- state ------------------------------------------------------------------------------------------------


def test_the_state_record_round_trips_mid_round() -> None:
    table = Table(max_reshakes=0)
    table.open_and_close()
    table.at_rest()
    table.read(None, reason="no dice found")
    record = table.core.export_state()
    fresh = Table(max_reshakes=0)
    fresh.core.restore_state(record)
    assert fresh.core.export_state() == record
    assert fresh.flow.stage == "supervisor" and fresh.core.paused
    fresh.command(ManualDice(dice=[6, 5, 4], by="sup"))
    assert fresh.result()["dice"] == [4, 5, 6]


def test_dice_facts_and_the_demo_line() -> None:
    assert dice_facts([3, 1, 2]) == {
        "dice": [1, 2, 3],
        "total": 6,
        "size": "small",
        "parity": "even",
        "triple": None,
        "double": None,
    }
    assert dice_facts([4, 4, 4])["size"] is None
    with pytest.raises(ValueError):
        dice_facts([1, 2])
    line = describe_result({**dice_facts([2, 2, 2]), "reshakes": 1, "source": "manual", "entered_by": "ana"})
    assert line == "2 2 2 = 6 triple, 1 re-shake(s), entered by ana"
