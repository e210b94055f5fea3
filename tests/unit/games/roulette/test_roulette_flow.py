"""Roulette flow: wheel readings in, exact round events and wheel requests out."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest

from controller.commands import CloseBetting, PlayersDone
from controller.events import RawRejected, RoundVoided, iso_ms
from controller.flow import DeviceRequest, FlowOutput, InputRejected, Phase
from controller.games.roulette import RouletteFlow, RouletteResult, RouletteSettings, pocket
from drivers.readings import (
    CardSeen,
    Reading,
    WheelBallLaunched,
    WheelGameStarted,
    WheelGameVoided,
    WheelIdle,
    WheelNoMoreBets,
    WheelResult,
)
from drivers.session import DeviceCommand
from drivers.wheel.session import WheelSession
from drivers.wheel.simulator import WheelDevice

pytestmark = pytest.mark.unit

WHEEL = "wheel"
T0 = 1_700_000_000.0
TABLE = "rou-1"

# --- an independent description of the single-zero layout, written as it is printed on the felt -----------

RED = [1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36]
BLACK = [2, 4, 6, 8, 10, 11, 13, 15, 17, 20, 22, 24, 26, 28, 29, 31, 33, 35]
COLUMNS = {
    1: [1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 34],
    2: [2, 5, 8, 11, 14, 17, 20, 23, 26, 29, 32, 35],
    3: [3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 33, 36],
}
ODD = [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35]


def expected_facts(number: int) -> dict[str, Any]:
    if number == 0:
        return {"color": "green", "parity": None, "range": None, "dozen": None, "column": None}
    dozen = 1 if number <= 12 else 2 if number <= 24 else 3
    column = next(column for column, members in COLUMNS.items() if number in members)
    return {
        "color": "red" if number in RED else "black",
        "parity": "odd" if number in ODD else "even",
        "range": "low" if number < 19 else "high",
        "dozen": dozen,
        "column": column,
    }


# --- readings ---------------------------------------------------------------------------------------------


def game_started(t: float, spin: int = 11) -> WheelGameStarted:
    return WheelGameStarted(device=WHEEL, time=t, spin=spin, raw=f"*X;2;{spin:03d};23;0;154;0")


def ball_launched(t: float, spin: int = 11, direction: str = "anticlockwise") -> WheelBallLaunched:
    return WheelBallLaunched(
        device=WHEEL,
        time=t,
        spin=spin,
        rotor_rpm=17.0,
        direction=direction,
        raw=f"*X;3;{spin:03d};23;0;170;1",
    )


def no_more_bets(t: float, spin: int = 11) -> WheelNoMoreBets:
    return WheelNoMoreBets(device=WHEEL, time=t, spin=spin, raw=f"*X;4;{spin:03d};23;0;168;1")


def wheel_result(
    t: float, number: str = "25", spin: int = 11, direction: str = "anticlockwise", rpm: float = 16.5
) -> WheelResult:
    raw = f"{number:>2}\r\n*X;5;{spin:03d};{number:>2};0;165;1"
    return WheelResult(
        device=WHEEL, time=t, number=number, spin=spin, rotor_rpm=rpm, direction=direction, raw=raw
    )


def wheel_voided(t: float, reason: str, spin: int = 11) -> WheelGameVoided:
    return WheelGameVoided(device=WHEEL, time=t, reason=reason, spin=spin, raw=f"*X;3;{spin:03d};23;2;170;1")


# --- helpers ----------------------------------------------------------------------------------------------


def make_flow(**settings: Any) -> RouletteFlow:
    return RouletteFlow(TABLE, RouletteSettings(**settings))


def feed(flow: RouletteFlow, *readings: Reading) -> FlowOutput:
    out = FlowOutput()
    for reading in readings:
        out.extend(flow.on_reading(reading, reading.time))
    return out


def types(out: FlowOutput) -> list[str]:
    return [event.type for event in out.events]


def only(out: FlowOutput, type_: str) -> dict[str, Any]:
    matching = [event.data for event in out.events if event.type == type_]
    assert len(matching) == 1, types(out)
    return matching[0]


def ticks(flow: RouletteFlow, start: float, stop: float, step: float = 0.5) -> FlowOutput:
    """Everything the flow does on ticks from `start` up to, not including, `stop`."""
    out = FlowOutput()
    now = start
    while now < stop:
        out.extend(flow.on_tick(now))
        now += step
    return out


def start_request(direction: str) -> DeviceRequest:
    return DeviceRequest(WHEEL, DeviceCommand("start_game", {"direction": direction}))


def play_full_game(flow: RouletteFlow, t: float, number: str = "25", spin: int = 11) -> FlowOutput:
    return feed(
        flow,
        game_started(t, spin),
        ball_launched(t + 10, spin),
        no_more_bets(t + 18, spin),
        wheel_result(t + 25, number, spin),
    )


def assert_state_serialisable(flow: RouletteFlow) -> dict[str, Any]:
    state = flow.public_state()
    assert json.loads(json.dumps(state)) == state
    return state


# --- the normal game --------------------------------------------------------------------------------------


def test_normal_game_publishes_the_full_lifecycle_and_result() -> None:
    flow = make_flow(user_start=False)

    out = feed(flow, game_started(T0))
    assert types(out) == ["round.opened"]
    assert out.events[0].data == {
        "game": "roulette",
        "round_id": "rou-1-0000001",
        "round_number_in_shoe": None,
        "betting_closes_at": None,
        "last_round_of_shoe": False,
    }
    assert flow.prompt == "Place your bets"
    assert flow.rounds.phase == Phase.BETTING_OPEN and not flow.rounds.started

    out = feed(flow, ball_launched(T0 + 10))
    assert out.events == [] and out.requests == []
    # default close mode: betting stays open in state 3, but the round has started (a fault now pauses)
    assert flow.rounds.phase == Phase.BETTING_OPEN and flow.rounds.started
    assert assert_state_serialisable(flow)["ball_launched"] is True

    out = feed(flow, no_more_bets(T0 + 18))
    assert types(out) == ["round.betting_closed"]
    assert out.events[0].data == {"round_id": "rou-1-0000001", "reason": "wheel"}
    assert flow.prompt == "No more bets"
    assert flow.rounds.phase == Phase.IN_PLAY

    out = feed(flow, wheel_result(T0 + 25, "25"))
    assert types(out) == ["round.result", "round.closed"]
    result = out.events[0]
    assert result.time == T0 + 25 and result.subject == "rou-1-0000001"
    assert result.data == {
        "game": "roulette",
        "round_id": "rou-1-0000001",
        "number": 25,
        "color": "red",
        "parity": "odd",
        "range": "high",
        "dozen": 3,
        "column": 1,
        "spin": 11,
        "rotor_rpm": 16.5,
        "direction": "anticlockwise",
        "raw": "25\r\n*X;5;011;25;0;165;1",
    }
    RouletteResult.model_validate(result.data)
    assert out.events[1].data == {"round_id": "rou-1-0000001"}
    assert flow.prompt == "Winning number 25 red"
    assert assert_state_serialisable(flow) == {
        "game": "roulette",
        "phase": "waiting",
        "round_id": None,
        "ball_launched": False,
        "launch_at": None,
        "last_result": {"number": 25, "color": "red"},
        "spin": 11,
        "prompt": "Winning number 25 red",
        "wheel_direction": "anticlockwise",
        "rotor_rpm": 16.5,
        "paused": False,
    }


def test_consecutive_games_get_consecutive_round_ids() -> None:
    flow = make_flow(user_start=False)
    first = play_full_game(flow, T0, "0", spin=11)
    second = play_full_game(flow, T0 + 60, "32", spin=12)
    assert only(first, "round.result")["round_id"] == "rou-1-0000001"
    assert only(second, "round.result")["round_id"] == "rou-1-0000002"
    assert only(second, "round.result")["number"] == 32
    assert flow.prompt == "Winning number 32 red"


def test_zero_is_green_with_no_outside_facts() -> None:
    flow = make_flow(user_start=False)
    data = only(play_full_game(flow, T0, "0"), "round.result")
    assert (data["number"], data["color"], data["parity"], data["range"], data["dozen"], data["column"]) == (
        0,
        "green",
        None,
        None,
        None,
        None,
    )
    assert flow.prompt == "Winning number 0 green"


def test_wheel_number_padded_with_a_space_is_accepted() -> None:
    flow = make_flow(user_start=False)
    assert only(play_full_game(flow, T0, " 9"), "round.result")["number"] == 9


# --- closing betting --------------------------------------------------------------------------------------


def test_dealer_closes_betting_early_by_input() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0))

    out = flow.on_command(CloseBetting(), T0 + 5)
    assert types(out) == ["round.betting_closed"]
    assert out.events[0].data == {"round_id": "rou-1-0000001", "reason": "dealer"}
    assert flow.prompt == "No more bets"
    assert flow.rounds.phase == Phase.BETTING_CLOSED and not flow.rounds.started

    with pytest.raises(InputRejected, match="betting is not open"):
        flow.on_command(CloseBetting(), T0 + 6)

    # the wheel's own "no more bets" later closes nothing twice
    out = feed(flow, ball_launched(T0 + 10), no_more_bets(T0 + 18))
    assert out.events == []
    assert flow.rounds.phase == Phase.IN_PLAY and flow.rounds.started
    out = feed(flow, wheel_result(T0 + 25, "4"))
    assert types(out) == ["round.result", "round.closed"]
    assert only(out, "round.result")["number"] == 4


def test_dealer_closes_betting_after_the_launch_puts_the_round_in_play() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0), ball_launched(T0 + 10))
    out = flow.on_command(CloseBetting(by="panel"), T0 + 12)
    assert only(out, "round.betting_closed")["reason"] == "dealer"
    assert flow.rounds.phase == Phase.IN_PLAY


def test_close_betting_input_is_rejected_without_a_round_and_unknown_inputs_are_rejected() -> None:
    flow = make_flow(user_start=False)
    with pytest.raises(InputRejected, match="betting is not open"):
        flow.on_command(CloseBetting(), T0)
    feed(flow, game_started(T0))
    with pytest.raises(InputRejected, match="no input 'players_done'"):
        flow.on_command(PlayersDone(), T0)
    assert flow.rounds.phase == Phase.BETTING_OPEN


def test_ball_launched_close_mode_closes_betting_at_launch() -> None:
    flow = make_flow(user_start=False, close_betting_at="ball_launched")
    feed(flow, game_started(T0))
    out = feed(flow, ball_launched(T0 + 10))
    assert types(out) == ["round.betting_closed"]
    assert out.events[0].data == {"round_id": "rou-1-0000001", "reason": "wheel"}
    assert flow.rounds.phase == Phase.IN_PLAY and flow.rounds.started
    assert feed(flow, no_more_bets(T0 + 18)).events == []
    assert types(feed(flow, wheel_result(T0 + 25, "17"))) == ["round.result", "round.closed"]


def test_no_more_bets_without_a_launch_reading_still_starts_the_round() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0))
    out = feed(flow, no_more_bets(T0 + 18))
    assert types(out) == ["round.betting_closed"]
    assert flow.rounds.started and flow.rounds.phase == Phase.IN_PLAY


# --- voids reported by the wheel --------------------------------------------------------------------------


def test_miss_spin_voids_the_round_and_the_re_spin_opens_a_new_one() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0), ball_launched(T0 + 10))

    out = feed(flow, wheel_voided(T0 + 12, "miss-spin: ball turning with the wheel"))
    assert types(out) == ["round.voided"]
    assert out.events[0].data == {
        "round_id": "rou-1-0000001",
        "reason": "miss-spin: ball turning with the wheel",
        "refund": True,
        "by": "device",
    }
    assert out.requests == []  # the wheel's driver acknowledges its own void
    assert flow.prompt == "Spin voided: wheel re-spins"
    assert not flow.rounds.in_round

    out = feed(flow, game_started(T0 + 15))
    assert types(out) == ["round.opened"]
    assert out.events[0].data["round_id"] == "rou-1-0000002"
    out = feed(flow, ball_launched(T0 + 25), no_more_bets(T0 + 33), wheel_result(T0 + 40, "8"))
    assert types(out) == ["round.betting_closed", "round.result", "round.closed"]
    assert only(out, "round.result")["round_id"] == "rou-1-0000002"


def test_lost_ball_voids_the_round_by_device() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0), ball_launched(T0 + 10), no_more_bets(T0 + 18))
    out = feed(flow, wheel_voided(T0 + 30, "ball not detected"))
    assert types(out) == ["round.voided"]
    assert RoundVoided.model_validate(out.events[0].data) == RoundVoided(
        round_id="rou-1-0000001", reason="ball not detected", by="device"
    )
    assert flow.public_state()["phase"] == "waiting"


def test_wheel_void_without_a_round_emits_nothing() -> None:
    flow = make_flow(user_start=False)
    assert feed(flow, wheel_voided(T0, "ball not detected")).events == []


# --- bad and unexpected readings --------------------------------------------------------------------------


@pytest.mark.parametrize("number", ["00", "000", "0000"])
def test_extra_zero_on_a_single_zero_game_is_rejected_and_the_round_voided(number: str) -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0), ball_launched(T0 + 10), no_more_bets(T0 + 18))
    out = feed(flow, wheel_result(T0 + 25, number))
    assert types(out) == ["reading.rejected", "round.voided"]
    rejected = RawRejected.model_validate(out.events[0].data)
    assert rejected.device == WHEEL
    assert f"'{number}' is an extra-zero pocket" in rejected.reason
    assert rejected.raw == f"{number:>2}\r\n*X;5;011;{number:>2};0;165;1"
    voided = out.events[1].data
    assert voided["by"] == "system" and voided["round_id"] == "rou-1-0000001"
    assert voided["reason"].startswith("no valid result: ")
    assert flow.last_result is None and flow.prompt == "Round voided: no valid result"


@pytest.mark.parametrize("number", ["37", "99", "-1", "abc", "", "07", "1.5", "２"])
def test_number_outside_0_to_36_is_rejected_and_the_round_voided(number: str) -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0), ball_launched(T0 + 10), no_more_bets(T0 + 18))
    out = feed(flow, wheel_result(T0 + 25, number))
    assert types(out) == ["reading.rejected", "round.voided"]
    assert "is not a single-zero roulette number (0-36)" in out.events[0].data["reason"]


def test_duplicate_result_for_a_settled_round_is_rejected() -> None:
    flow = make_flow(user_start=False)
    first = play_full_game(flow, T0, "25")
    out = feed(flow, wheel_result(T0 + 26, "25"))
    assert types(out) == ["reading.rejected"]
    reason = out.events[0].data["reason"]
    assert reason == "duplicate result '25' (spin 11): round rou-1-0000001 already settled"
    assert out.events[0].subject is None
    # never two results for one round
    all_results = [e for e in first.events + out.events if e.type == "round.result"]
    assert len(all_results) == 1
    assert flow.last_result is not None and flow.last_result.number == 25


def test_result_with_no_open_round_is_rejected() -> None:
    flow = make_flow(user_start=False)
    # the controller started while the wheel was mid-spin: launch and no-more-bets are ignored
    out = feed(flow, ball_launched(T0), no_more_bets(T0 + 8), wheel_result(T0 + 15, "12"))
    assert types(out) == ["reading.rejected"]
    assert out.events[0].data["reason"] == "result '12' (spin 11) with no open round"
    assert not flow.rounds.in_round and flow.last_result is None


def test_result_while_betting_is_still_open_is_rejected_and_the_round_voided() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0), ball_launched(T0 + 10))  # the wheel skipped state 4
    out = feed(flow, wheel_result(T0 + 25, "3"))
    assert types(out) == ["reading.rejected", "round.voided"]
    assert "while betting was still open" in out.events[0].data["reason"]
    assert out.events[1].data["by"] == "system"
    assert flow.last_result is None


def test_result_direction_falls_back_to_the_launch_direction_of_the_same_spin() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0), ball_launched(T0 + 10, direction="clockwise"), no_more_bets(T0 + 18))
    out = feed(flow, wheel_result(T0 + 25, "5", direction="?"))
    assert only(out, "round.result")["direction"] == "clockwise"


def test_result_with_no_known_direction_is_rejected() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0), ball_launched(T0 + 10, direction="sideways"), no_more_bets(T0 + 18))
    out = feed(flow, wheel_result(T0 + 25, "5", direction="?"))
    assert types(out) == ["reading.rejected", "round.voided"]
    assert "unknown wheel direction '?'" in out.events[0].data["reason"]


def test_result_with_an_impossible_rotor_speed_is_rejected() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0), ball_launched(T0 + 10), no_more_bets(T0 + 18))
    out = feed(flow, wheel_result(T0 + 25, "5", rpm=float("nan")))
    assert types(out) == ["reading.rejected", "round.voided"]


def test_game_started_while_a_round_is_open_voids_it_and_opens_the_new_one() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0, spin=11), ball_launched(T0 + 10, spin=11))
    out = feed(flow, game_started(T0 + 40, spin=12))
    assert types(out) == ["round.voided", "round.opened"]
    assert out.events[0].data == {
        "round_id": "rou-1-0000001",
        "reason": "the wheel started a new game (spin 12) before reporting a result for this one",
        "refund": True,
        "by": "system",
    }
    assert out.events[1].data["round_id"] == "rou-1-0000002"
    assert flow.prompt == "Place your bets"
    assert flow.rounds.phase == Phase.BETTING_OPEN and not flow.rounds.started


@pytest.mark.parametrize("first_seen", ["launch", "no more bets", "result"])
def test_a_round_in_play_is_voided_when_the_wheel_shows_another_games_ball_never_taking_its_number(
    first_seen: str,
) -> None:
    """The round follows spin 57 from its launch; the controller restarts (or loses sight of the wheel) while
    57 ends, and the first the wheel shows again is the ball of spin 58, in its rim, past no more bets, or at
    rest. 57's result was not seen: the round is voided, and 58's number is never its result."""
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0, spin=57), ball_launched(T0 + 10, spin=57))
    other = {
        "launch": ball_launched(T0 + 60, spin=58),
        "no more bets": no_more_bets(T0 + 60, spin=58),
        "result": wheel_result(T0 + 60, "17", spin=58),
    }[first_seen]
    out = feed(flow, other)
    assert types(out)[0] == "round.voided"
    assert out.events[0].data["reason"] == (
        "the wheel is in another game (spin 58) than the one this round followed (spin 57): its result was "
        "not seen"
    )
    out.extend(feed(flow, wheel_result(T0 + 70, "17", spin=58)))
    assert "round.result" not in types(out)


def test_a_spin_counter_that_does_not_advance_voids_nothing() -> None:
    """The same number in every game (the counter is stuck): nothing tells the games apart, and a game
    followed from its start to its result settles as ever."""
    flow = make_flow(user_start=False)
    play_full_game(flow, T0, "25", spin=11)
    out = play_full_game(flow, T0 + 40, "9", spin=11)
    assert only(out, "round.result")["number"] == 9 and "round.voided" not in types(out)


def test_wheel_closing_during_a_game_voids_the_round_and_nothing_is_asked_of_a_closed_wheel() -> None:
    flow = make_flow()
    flow.on_tick(T0)
    feed(flow, game_started(T0 + 1), ball_launched(T0 + 10))
    out = feed(
        flow, WheelIdle(device=WHEEL, time=T0 + 12, state=6, during_game=True, raw="*X;6;011;23;4;000;0")
    )
    assert types(out) == ["round.voided"]
    assert out.events[0].data["by"] == "system"
    assert "state 6" in out.events[0].data["reason"]
    # a closed wheel opens its next game by itself once powered up: no round, no request meanwhile
    assert ticks(flow, T0 + 12, T0 + 400) == FlowOutput()
    feed(flow, WheelIdle(device=WHEEL, time=T0 + 400, state=1))
    assert ticks(flow, T0 + 400, T0 + 800) == FlowOutput()
    out = feed(flow, game_started(T0 + 800, spin=12))
    assert types(out) == ["round.opened"]
    assert flow.on_tick(T0 + 815).requests == [start_request("clockwise")]


def test_readings_from_other_devices_and_unrelated_readings_are_ignored() -> None:
    flow = make_flow(user_start=False)
    other = WheelGameStarted(device="wheel-2", time=T0, spin=1)
    assert feed(flow, other).events == []
    assert feed(flow, CardSeen(device=WHEEL, time=T0, code="AS")).events == []
    assert not flow.rounds.in_round


# --- asking the wheel to launch (user_start) --------------------------------------------------------------
# A wheel in user-start mode opens each game by itself (state 2) and waits there for the host's *u.


def test_user_start_asks_for_the_launch_betting_seconds_after_the_round_opened_and_retries() -> None:
    flow = make_flow()  # betting 15 s, retry 10 s
    assert flow.on_tick(T0) == FlowOutput()  # no round: nothing to ask
    out = feed(flow, game_started(T0 + 1))
    assert types(out) == ["round.opened"] and out.requests == []

    assert ticks(flow, T0 + 1, T0 + 16) == FlowOutput()  # betting is open for 15 s
    assert flow.on_tick(T0 + 16) == FlowOutput(requests=[start_request("clockwise")])
    assert flow.rounds.phase == Phase.BETTING_OPEN  # betting stays open until the wheel says no more bets
    # the wheel did not launch: asked again every 10 s, in the same direction, and nothing in between
    assert ticks(flow, T0 + 16.5, T0 + 26) == FlowOutput()
    assert flow.on_tick(T0 + 26).requests == [start_request("clockwise")]
    assert ticks(flow, T0 + 26.5, T0 + 36) == FlowOutput()
    assert flow.on_tick(T0 + 36).requests == [start_request("clockwise")]

    # the wheel launched: no more requests, through the rest of the spin
    feed(flow, ball_launched(T0 + 38, direction="clockwise"))
    assert ticks(flow, T0 + 38, T0 + 50) == FlowOutput()
    feed(flow, no_more_bets(T0 + 50))
    assert ticks(flow, T0 + 50, T0 + 55) == FlowOutput()
    out = feed(flow, wheel_result(T0 + 55, "19", direction="clockwise"))
    assert types(out) == ["round.result", "round.closed"]
    # the wheel goes on to state 2 by itself: nothing is asked until it opens the next game
    assert ticks(flow, T0 + 55, T0 + 60) == FlowOutput()
    feed(flow, game_started(T0 + 60, spin=12))
    assert ticks(flow, T0 + 60, T0 + 75) == FlowOutput()
    assert flow.on_tick(T0 + 75).requests == [start_request("anticlockwise")]


def test_the_public_state_gives_the_launch_time_while_betting_waits_for_it() -> None:
    # what the dealer's panel counts down to: the first launch request, not its retries
    flow = make_flow()  # betting 15 s, retry 10 s
    assert flow.public_state()["launch_at"] is None  # no round
    feed(flow, game_started(T0 + 1))
    assert flow.public_state()["launch_at"] == iso_ms(T0 + 16)
    flow.on_tick(T0 + 16)  # asked: the wheel's own "no more bets" follows, no time of ours is left to show
    assert flow.public_state()["launch_at"] is None
    assert flow.on_tick(T0 + 26).requests == [start_request("clockwise")]  # the retry still runs
    assert flow.public_state()["launch_at"] is None
    # a dealer who closes betting early: the launch is asked at once
    flow = make_flow()
    feed(flow, game_started(T0))
    flow.on_command(CloseBetting(), T0 + 3)
    assert flow.public_state()["launch_at"] is None  # betting is closed: nothing to count down
    assert flow.on_tick(T0 + 3).requests == [start_request("clockwise")]
    # without user start the wheel keeps the time itself: nothing to count down
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0))
    assert flow.public_state()["launch_at"] is None


def test_no_more_bets_or_the_end_of_the_round_stops_the_launch_requests() -> None:
    # the launch reading was lost, but state 4 shows the ball is out
    flow = make_flow()
    feed(flow, game_started(T0))
    assert flow.on_tick(T0 + 15).requests == [start_request("clockwise")]
    feed(flow, no_more_bets(T0 + 20))
    assert ticks(flow, T0 + 20, T0 + 40) == FlowOutput()

    # a round that ends without a launch (the wheel powered down, or voided its game)
    for ending in (
        WheelIdle(device=WHEEL, time=T0 + 116, state=6, during_game=True),
        wheel_voided(T0 + 116, "ball not detected"),
    ):
        flow = make_flow()
        feed(flow, game_started(T0 + 100))
        assert flow.on_tick(T0 + 115).requests == [start_request("clockwise")]
        assert types(feed(flow, ending)) == ["round.voided"]
        assert ticks(flow, T0 + 116, T0 + 140) == FlowOutput()


def test_user_start_never_asks_for_anything_while_no_round_is_open() -> None:
    flow = make_flow()
    assert ticks(flow, T0, T0 + 59, step=0.25) == FlowOutput()
    # a spin the controller did not open (it started mid-spin): ignored, and nothing is asked
    feed(flow, ball_launched(T0 + 59))
    assert ticks(flow, T0 + 59, T0 + 70) == FlowOutput()
    out = feed(flow, no_more_bets(T0 + 70), wheel_result(T0 + 75, "7"))
    assert types(out) == ["reading.rejected"]
    assert ticks(flow, T0 + 75, T0 + 134) == FlowOutput()  # the wheel goes on to state 2 by itself
    # before a game (state 1) or closed (state 6): the wheel says when it is in state 2, however long it takes
    feed(flow, WheelIdle(device=WHEEL, time=T0 + 134, state=1))
    assert ticks(flow, T0 + 134, T0 + 1000, step=1.0) == FlowOutput()
    feed(flow, WheelIdle(device=WHEEL, time=T0 + 1000, state=6))
    assert ticks(flow, T0 + 1000, T0 + 5000, step=1.0) == FlowOutput()
    assert not flow.rounds.in_round


def test_dealer_closing_betting_before_the_launch_asks_the_wheel_to_launch_at_once() -> None:
    flow = make_flow()
    feed(flow, game_started(T0))
    assert flow.on_tick(T0 + 2) == FlowOutput()
    out = flow.on_command(CloseBetting(), T0 + 3)
    assert types(out) == ["round.betting_closed"]
    assert flow.on_tick(T0 + 3).requests == [start_request("clockwise")]
    assert ticks(flow, T0 + 3.5, T0 + 13) == FlowOutput()
    assert flow.on_tick(T0 + 13).requests == [start_request("clockwise")]  # no launch: asked again
    feed(flow, ball_launched(T0 + 14, direction="clockwise"))
    assert flow.rounds.phase == Phase.IN_PLAY
    assert ticks(flow, T0 + 14, T0 + 40) == FlowOutput()


def test_dealer_closing_betting_after_the_launch_asks_nothing() -> None:
    flow = make_flow()
    feed(flow, game_started(T0))
    assert flow.on_tick(T0 + 15).requests == [start_request("clockwise")]
    feed(flow, ball_launched(T0 + 17))
    flow.on_command(CloseBetting(), T0 + 18)
    assert ticks(flow, T0 + 18, T0 + 40) == FlowOutput()


def test_user_start_directions_alternate_from_what_the_wheel_did() -> None:
    flow = make_flow(betting_seconds=5.0)
    directions = []
    t = T0
    for spin in range(1, 5):
        feed(flow, game_started(t, spin))
        (request,) = flow.on_tick(t + 5).requests
        direction = request.command.args["direction"]
        directions.append(direction)
        feed(
            flow,
            ball_launched(t + 7, spin, direction=direction),
            no_more_bets(t + 12, spin),
            wheel_result(t + 17, "1", spin, direction=direction),
        )
        t += 20
    assert directions == ["clockwise", "anticlockwise", "clockwise", "anticlockwise"]


def test_directions_follow_the_wheel_not_the_request() -> None:
    flow = make_flow(betting_seconds=5.0)
    feed(flow, game_started(T0, 1))
    assert flow.on_tick(T0 + 5).requests == [start_request("clockwise")]
    # the wheel launched the other way (e.g. it only plays one way): the next request alternates from that
    feed(flow, ball_launched(T0 + 7, 1, direction="anticlockwise"), no_more_bets(T0 + 12, 1))
    feed(flow, wheel_result(T0 + 17, "3", 1, direction="anticlockwise"))
    feed(flow, game_started(T0 + 20, 2))
    assert flow.on_tick(T0 + 25).requests == [start_request("clockwise")]


def test_without_alternation_every_launch_is_requested_clockwise() -> None:
    flow = make_flow(alternate_direction=False, betting_seconds=1.0)
    for spin, t in ((1, T0), (2, T0 + 20)):
        feed(flow, game_started(t, spin))
        assert flow.on_tick(t + 1).requests == [start_request("clockwise")]
        feed(flow, ball_launched(t + 5, spin, direction="clockwise"), no_more_bets(t + 9, spin))
        feed(flow, wheel_result(t + 12, "2", spin, direction="clockwise"))


def test_without_user_start_the_flow_never_asks_the_wheel_and_opens_no_round_itself() -> None:
    flow = make_flow(user_start=False)
    assert ticks(flow, T0, T0 + 600, step=1.0) == FlowOutput()
    feed(flow, game_started(T0 + 600))
    assert ticks(flow, T0 + 600, T0 + 700) == FlowOutput()  # betting_seconds is not the flow's to enforce
    feed(flow, ball_launched(T0 + 700), no_more_bets(T0 + 708), wheel_result(T0 + 715, "30"))
    assert ticks(flow, T0 + 715, T0 + 2000, step=1.0) == FlowOutput()


def test_after_a_wheel_void_the_flow_waits_for_the_wheels_own_re_spin() -> None:
    flow = make_flow()
    feed(flow, game_started(T0 + 1), ball_launched(T0 + 10), wheel_voided(T0 + 12, "miss-spin"))
    assert ticks(flow, T0 + 12, T0 + 40) == FlowOutput()  # the wheel re-spins by itself (the driver's *R)
    out = feed(flow, game_started(T0 + 14))
    assert types(out) == ["round.opened"] and out.events[0].data["round_id"] == "rou-1-0000002"
    assert flow.on_tick(T0 + 29).requests == [start_request("clockwise")]


# --- a wheel holding a game nobody opened a round for ------------------------------------------------------


def test_a_round_voided_before_the_launch_is_replaced_for_the_wheels_waiting_game() -> None:
    flow = make_flow()  # round gap 3 s
    feed(flow, game_started(T0))
    out = flow.void_round(T0 + 5, "wrong table limits", "supervisor")
    assert types(out) == ["round.voided"] and out.requests == []  # no *R: the ball is not out
    # the wheel still waits in state 2 and never moves without *u: a new round for that same game
    assert ticks(flow, T0 + 5, T0 + 8) == FlowOutput()
    out = flow.on_tick(T0 + 8)
    assert types(out) == ["round.opened"] and out.requests == []
    assert out.events[0].data["round_id"] == "rou-1-0000002"
    assert flow.prompt == "Place your bets" and flow.rounds.phase == Phase.BETTING_OPEN
    # a full betting period for it, then the launch
    assert ticks(flow, T0 + 8, T0 + 23) == FlowOutput()
    assert flow.on_tick(T0 + 23).requests == [start_request("clockwise")]
    out = feed(flow, ball_launched(T0 + 25, direction="clockwise"), no_more_bets(T0 + 33))
    out.extend(feed(flow, wheel_result(T0 + 40, "14", direction="clockwise")))
    assert types(out) == ["round.betting_closed", "round.result", "round.closed"]
    assert only(out, "round.result")["round_id"] == "rou-1-0000002"


def test_a_round_the_runtime_voids_for_a_pause_is_replaced_only_after_the_resume() -> None:
    flow = make_flow()
    feed(flow, game_started(T0))
    # what the runtime does when a device fails before the launch: pause, then void the unstarted round
    flow.on_pause(T0 + 4)
    assert types(flow.void_round(T0 + 4, "wheel offline before the round started", "system")) == [
        "round.voided"
    ]
    assert ticks(flow, T0 + 4, T0 + 100) == FlowOutput()  # paused
    flow.on_resume(T0 + 100)
    out = flow.on_tick(T0 + 100)  # the gap after the void has long passed
    assert types(out) == ["round.opened"] and out.requests == []
    assert flow.on_tick(T0 + 115).requests == [start_request("clockwise")]


def test_supervisor_void_after_launch_asks_the_wheel_to_restart_the_game() -> None:
    flow = make_flow()
    flow.on_tick(T0)
    feed(flow, game_started(T0 + 1), ball_launched(T0 + 10))

    out = flow.void_round(T0 + 12, "chip fell on the wheel", "supervisor:desk-2")
    assert types(out) == ["round.voided"]
    assert out.events[0].data == {
        "round_id": "rou-1-0000001",
        "reason": "chip fell on the wheel",
        "refund": True,
        "by": "supervisor:desk-2",
    }
    assert out.requests == [DeviceRequest(WHEEL, DeviceCommand("restart_game"))]
    assert flow.prompt == "Round voided"
    # the restart answers as a new game: no start_game meanwhile
    assert flow.on_tick(T0 + 16).requests == []

    # the spin that was voided may still finish: its result is rejected, never published
    out = feed(flow, wheel_result(T0 + 18, "30"))
    assert types(out) == ["reading.rejected"]
    assert out.events[0].data["reason"] == "result '30' (spin 11) for round rou-1-0000001, which was voided"

    out = feed(flow, game_started(T0 + 20, spin=12))
    assert types(out) == ["round.opened"] and out.events[0].data["round_id"] == "rou-1-0000002"


def test_supervisor_void_before_launch_does_not_restart_the_wheel() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0))
    out = flow.void_round(T0 + 2, "wrong table limits", "supervisor")
    assert types(out) == ["round.voided"]
    assert out.requests == []


def test_supervisor_void_without_a_round_is_rejected() -> None:
    flow = make_flow(user_start=False)
    with pytest.raises(InputRejected, match="no round to void"):
        flow.void_round(T0, "why not", "supervisor")


# --- pause, state, persistence ----------------------------------------------------------------------------


def test_pause_and_resume_are_remembered_and_emit_nothing() -> None:
    flow = make_flow(user_start=False)
    feed(flow, game_started(T0), ball_launched(T0 + 10))
    assert flow.on_pause(T0 + 11) == FlowOutput()
    assert assert_state_serialisable(flow)["paused"] is True
    assert flow.on_resume(T0 + 20) == FlowOutput()
    assert flow.public_state()["paused"] is False
    # the round goes on where it was
    out = feed(flow, no_more_bets(T0 + 21), wheel_result(T0 + 30, "36"))
    assert types(out) == ["round.betting_closed", "round.result", "round.closed"]


def test_flow_survives_pickling_mid_round_and_continues_identically() -> None:
    flow = make_flow()
    flow.on_tick(T0)
    feed(flow, game_started(T0 + 1), ball_launched(T0 + 10))
    restored = pickle.loads(pickle.dumps(flow))
    rest = (no_more_bets(T0 + 18), wheel_result(T0 + 25, "13"))
    original_out = feed(flow, *rest)
    restored_out = feed(restored, *rest)
    assert original_out == restored_out
    assert restored.public_state() == flow.public_state()
    for each in (flow, restored):
        assert each.on_tick(T0 + 28) == FlowOutput()
        feed(each, game_started(T0 + 30, spin=12))
    launch = [start_request("clockwise")]
    assert restored.on_tick(T0 + 45).requests == flow.on_tick(T0 + 45).requests == launch
    assert restored.public_state() == flow.public_state()


# --- every number -----------------------------------------------------------------------------------------


def test_independent_felt_table_is_complete() -> None:
    assert sorted(RED + BLACK) == list(range(1, 37))
    assert sorted(number for members in COLUMNS.values() for number in members) == list(range(1, 37))


@pytest.mark.parametrize("number", range(37))
def test_every_number_is_described_as_on_the_felt(number: int) -> None:
    facts = pocket(number)
    assert {
        "color": facts.color,
        "parity": facts.parity,
        "range": facts.range,
        "dozen": facts.dozen,
        "column": facts.column,
    } == expected_facts(number)


def test_every_number_through_the_flow_gives_a_valid_result() -> None:
    flow = make_flow(user_start=False)
    for number in range(37):
        out = play_full_game(flow, T0 + 60 * number, str(number), spin=number + 1)
        data = only(out, "round.result")
        model = RouletteResult.model_validate(data)
        assert model.number == number and model.spin == number + 1
        facts = {key: data[key] for key in ("color", "parity", "range", "dozen", "column")}
        assert facts == expected_facts(number)
        color = expected_facts(number)["color"]
        assert flow.prompt == f"Winning number {number} {color}"


def test_pocket_rejects_numbers_off_the_wheel() -> None:
    for bad in (-1, 37):
        with pytest.raises(ValueError):
            pocket(bad)


# --- the real wheel core and its driver, on a simulated clock ----------------------------------------------


class SimulatedTable:
    """The simulator's pure `WheelDevice`, a `WheelSession` and the flow, wired as the service does."""

    STEP = 0.05  # the clock advances in 50 ms steps

    def __init__(self, device: WheelDevice, flow: RouletteFlow, start: float = T0) -> None:
        self.device = device
        self.session = WheelSession(WHEEL)  # user start, the vendor's non-arcade mode
        self.flow = flow
        self.start = start
        self.steps = 0
        self.events = FlowOutput()
        # (time, request, round id at the time, seconds since that round opened)
        self.requests: list[tuple[float, DeviceRequest, str | None, float | None]] = []
        self.round_opened_at: dict[str, float] = {}
        device.connected(start)
        self._take(self.session.connection_made(start), start)
        self._to_wheel(start)

    @property
    def now(self) -> float:
        return self.start + self.steps * self.STEP

    def run_until(self, done: Callable[[], bool], limit_seconds: float) -> None:
        while not done():
            elapsed = self.now - self.start
            assert elapsed < limit_seconds, f"not done in {limit_seconds} s: {types(self.events)}"
            self.steps += 1
            now = self.now
            data = self.device.poll(now)
            if data:
                self._take(self.session.data_received(data, now), now)
            self._take(self.session.tick(now), now)
            out = self.flow.on_tick(now)
            self._record(out, now)
            for request in out.requests:
                assert request.device == WHEEL
                self._take(self.session.command(request.command, now), now)
            self._to_wheel(now)

    def _take(self, readings: list[Reading], now: float) -> None:
        for reading in readings:
            self._record(self.flow.on_reading(reading, now), now)

    def _record(self, out: FlowOutput, now: float) -> None:
        round_id = self.flow.rounds.round_id
        for request in out.requests:
            opened = self.round_opened_at.get(round_id) if round_id is not None else None
            self.requests.append((now, request, round_id, None if opened is None else now - opened))
        for event in out.events:
            if event.type == "round.opened":
                self.round_opened_at[event.data["round_id"]] = now
        self.events.extend(out)

    def _to_wheel(self, now: float) -> None:
        data = self.session.data_to_send()
        if data:
            self.device.receive(data, now)

    def results(self) -> list[dict[str, Any]]:
        return [event.data for event in self.events.events if event.type == "round.result"]


def test_consecutive_rounds_on_the_simulated_wheel_publish_exactly_the_numbers_it_produced() -> None:
    rounds = 5
    device = WheelDevice(seed=20240611, speed=8.0)
    flow = make_flow(betting_seconds=3.0, start_retry_seconds=2.0)
    table = SimulatedTable(device, flow)

    table.run_until(lambda: len(table.results()) == rounds, limit_seconds=120)

    # the wheel's own record of what it did
    played = [game for game in device.games if game.outcome == "result"]
    assert len(played) == rounds
    assert all(game.outcome in ("result", "in play") for game in device.games)  # nothing voided or lost
    results = table.results()
    assert [r["number"] for r in results] == [int(game.number or "") for game in played]
    assert [r["spin"] for r in results] == [game.spin for game in played]
    assert [r["direction"] for r in results] == [game.direction.name.lower() for game in played]
    assert len({r["number"] for r in results}) > 1  # a real draw, not one number repeated

    # one round per wheel game, each with exactly one result, closed; nothing voided or rejected
    round_ids = [f"rou-1-{n:07d}" for n in range(1, rounds + 1)]
    assert [r["round_id"] for r in results] == round_ids
    lifecycle = [(e.type, e.data["round_id"]) for e in table.events.events if e.type != "round.opened"]
    assert lifecycle == [
        (kind, round_id)
        for round_id in round_ids
        for kind in ("round.betting_closed", "round.result", "round.closed")
    ]
    opened = [e.data["round_id"] for e in table.events.events if e.type == "round.opened"]
    assert opened[:rounds] == round_ids and len(opened) <= rounds + 1  # the wheel's next game may be open

    # one launch request per game, each for an open round after its full betting period, alternating
    assert [request for _, request, _, _ in table.requests] == [
        start_request("clockwise" if n % 2 == 0 else "anticlockwise") for n in range(len(table.requests))
    ]
    assert len(table.requests) in (rounds, rounds + 1)
    for _, _, round_id, betting in table.requests:
        assert round_id is not None and betting is not None and betting >= 3.0
    user_starts = [line for _, line in device.received if line.startswith("*u")]
    assert user_starts == ["*u 1" if n % 2 == 0 else "*u 3" for n in range(len(table.requests))]
