"""Roulette on an automatic wheel (e.g. a Cammegh SS2): wheel readings in, round events out.

The wheel runs the game; this flow follows it and keeps the round lifecycle honest:

- `WheelGameStarted` (wheel state 2) opens a round; betting is open while the wheel is in states 1-3.
- `WheelBallLaunched` (state 3) starts the round: from now a fault pauses instead of cancelling. With
  `close_betting_at = "ball_launched"` betting closes here (reason "wheel").
- `WheelNoMoreBets` (state 4) closes betting (reason "wheel") if it is still open. The dealer or the rules
  engine may close it earlier with the input `close_betting` (reason "dealer").
- `WheelResult` (state 5) publishes `round.result` (a `RouletteResult`) and closes the round.
- `WheelGameVoided` (miss-spin, ball lost) voids the round "by device"; the wheel re-spins by itself and its
  next `WheelGameStarted` opens a new round.

User start (`user_start`, the wheel's mode bit 2). A wheel in this mode goes to state 2 BY ITSELF after a
result (or after power-up, or after `*R`) and then waits there, rotor turning, until the host says `*u`:
only then does it position and launch the ball. So the wheel opens each game and the flow decides when
betting has lasted long enough:

- `betting_seconds` after the round opened, the flow asks the wheel to launch (`start_game`), at once if
  the dealer or the rules engine closed betting early (`close_betting`) before the launch. It asks again
  every `start_retry_seconds` until the wheel shows it launched (ball launched, or no more bets) or the
  round ends (result, void, idle). A retry repeats the direction: directions alternate from the direction
  the wheel actually launched last, which a request does not change.
- The flow never asks for a launch while no round is open: `*u` at the wrong moment would launch a ball
  that nobody could bet on. Every launch request therefore follows at least `betting_seconds` of betting
  (or a dealer's early close) of an open round.
- The flow does not ask for games either: there is no "start a game" for a wheel that opens games by
  itself, and an unanswered request would only launch a ball early.
- A round voided before the launch (by a supervisor, or by the runtime when a device fault paused a round
  that had not started) leaves the wheel holding its game in state 2, waiting for a `*u` that would
  launch a ball for a voided round. Nothing else would ever move it on, so the flow opens a new round for
  that same wheel game `round_gap_seconds` after the void (when the table is not paused). The wheel cannot
  leave state 2 without `*u` except by powering down, so this knowledge survives a pause.
- Readings that arrive while the table is paused are held by the runtime and replayed on resume, and after a
  link gap the wheel's session reports the game it finds (or the spin it missed), so the flow never has to
  guess that the wheel waits in state 2: it only opens rounds on what the wheel reported.
- After a supervisor void with the ball launched the flow asks the wheel to `restart_game` (below); the
  wheel answers with state 2 and its `WheelGameStarted` opens the next round.

Decisions on bad or unexpected readings. The rule: never publish a wrong or invented result; a number that
cannot be trusted is reported as `reading.rejected` (with the raw wheel lines) and, when a round is waiting
for it, that round is voided (bets refunded) because the spin it stood for has no valid result and the wheel
will not repeat it.

- Extra-zero results ("00", "000", "0000") on this single-zero game, and anything that is not 0-36:
  rejected, and the open round voided "by system". The wheel or its setting does not match the game;
  publishing a nearby number would be inventing one.
- A result while betting is still open (the wheel skipped "no more bets", or its reading was lost): rejected
  and the round voided. The number is probably right, but bets may have been accepted after the ball
  dropped, so settling them would be unfair; refunding is always fair.
- A result with no open round: rejected, never published. The reason says whether it repeats the result of
  the round just settled (a duplicate: never two results for one round), belongs to a round that was voided
  (the wheel finished a spin we had already cancelled), or came with no round at all (e.g. the controller
  started mid-spin).
- A result whose direction is not clockwise/anticlockwise takes the direction the same spin reported at
  launch; if neither is known the result is rejected and the round voided (the result model needs a true
  direction).
- `WheelGameStarted` while a round is open (the wheel restarted a game we never saw finish): the open round
  is voided "by system" with the reason, and the new game opens a new round.
- `WheelIdle` (state 1 or 6) while a round is open: the wheel left the game without a result (e.g. it
  powered down after a component fault), so the round is voided "by system". Pausing the table for the fault
  is the runtime's job (it sees the device fault); a powered-down wheel will never report this spin, so
  waiting would not help.
- Ball launched / no more bets with no open round (a spin the controller did not open, or one a supervisor
  voided): ignored; the wheel goes on to state 2 by itself when that spin ends.
- A supervisor void after the ball was launched asks the wheel to `restart_game` (the vendor's `*R`
  acknowledges a void and re-spins). A void reported by the wheel itself is acknowledged by the wheel's
  driver, not from here.

The flow is pure (time is passed in) and its state is a typed record (`RouletteRecord`), for replay and
crash recovery.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.events import iso_ms
from controller.flow import DeviceRequest, FlowOutput, FlowRecord, GameFlow, Phase
from controller.games.roulette.events import RouletteResult
from controller.lifecycle import NEXT_ROUND
from drivers.readings import (
    Reading,
    WheelBallLaunched,
    WheelGameStarted,
    WheelGameVoided,
    WheelIdle,
    WheelNoMoreBets,
    WheelResult,
)
from drivers.session import DeviceCommand

Direction = Literal["clockwise", "anticlockwise"]
Color = Literal["red", "black", "green"]

# The red pockets of the standard single-zero layout, as printed on the felt.
RED_NUMBERS = frozenset({1, 3, 5, 7, 9, 12, 14, 16, 18, 19, 21, 23, 25, 27, 30, 32, 34, 36})
EXTRA_ZEROS = frozenset({"00", "000", "0000"})
# A pocket of a single-zero wheel as the wheel writes it: no leading zeros (the wheel pads with a space).
_SINGLE_ZERO_POCKET = re.compile(r"0|[1-9][0-9]?")

# Spellings a driver might use for the rotor direction; the result model knows two.
_DIRECTIONS: dict[str, Direction] = {
    "clockwise": "clockwise",
    "cw": "clockwise",
    "anticlockwise": "anticlockwise",
    "anti-clockwise": "anticlockwise",
    "counterclockwise": "anticlockwise",
    "counter-clockwise": "anticlockwise",
    "ccw": "anticlockwise",
}

# With user_start and no round open, a wheel that has reported nothing for this long is taken to be waiting
# in state 2 (its reading was missed, e.g. while the table was paused). The longest silence within a spin
# is a state 3 of about 10 s. Only a games-per-hour delay (state 1) longer than this, unseen because it began
# during a pause, would fool it: the round opened then is voided by the wheel's own next game.

# Wheel states after which the wheel is out of any game (before game / closed).
_IDLE_STATES = frozenset({1, 6})
_CLOSED_STATE = 6

# What the wheel last told the flow about its game (None: nothing yet).
WheelReport = Literal[
    "holding",  # state 2: it holds a game and waits for the host's *u to launch
    "busy",  # a spin is under way or just ended (result, void): it goes on to state 2 by itself
    "before_game",  # state 1: it goes on to state 2 by itself
    "closed",  # state 6: nothing happens until it is powered up
]


@dataclass(frozen=True, slots=True)
class Pocket:
    """What the rules engine needs to settle outside bets on a number."""

    number: int
    color: Color
    parity: Literal["odd", "even"] | None
    range: Literal["low", "high"] | None
    dozen: int | None
    column: int | None


def pocket(number: int) -> Pocket:
    """The facts of a single-zero roulette number. Column 1 is 1, 4, 7 ... 34."""
    if not 0 <= number <= 36:
        raise ValueError(f"{number} is not a single-zero roulette number (0-36)")
    if number == 0:
        return Pocket(0, "green", None, None, None, None)
    return Pocket(
        number=number,
        color="red" if number in RED_NUMBERS else "black",
        parity="odd" if number % 2 else "even",
        range="low" if number <= 18 else "high",
        dozen=(number - 1) // 12 + 1,
        column=(number - 1) % 3 + 1,
    )


def normalise_direction(text: str) -> Direction | None:
    return _DIRECTIONS.get(text.strip().lower())


class RouletteSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    wheel_device: str = "wheel"
    close_betting_at: Literal["no_more_bets", "ball_launched"] = Field(
        "no_more_bets",
        description="wheel state 4 (default) or 3; the dealer/rules engine may close earlier (close_betting)",
    )
    user_start: bool = Field(
        True, description="the wheel waits in state 2 for the flow to ask for the launch (the wheel's *u)"
    )
    alternate_direction: bool = Field(True, description="clockwise / anticlockwise in turn when user_start")
    betting_seconds: float = Field(
        15.0, gt=0, description="with user_start: betting time in state 2 before the flow asks for the launch"
    )
    round_gap_seconds: float = Field(
        3.0,
        ge=0,
        description="with user_start: a round voided before the launch leaves the wheel holding its game; "
        "a new round opens for that game this long after the void",
    )
    start_retry_seconds: float = Field(
        10.0, gt=0, description="ask the wheel to launch again if it has not launched this long after asking"
    )


#: with user_start, when to ask the wheel to launch: a timer of the round book, the panel counts down to it
LAUNCH = "launch"
#: when to ask again (the wheel did not show it launched): a timer apart, so LAUNCH stays the first ask
LAUNCH_RETRY = "launch_retry"


class RouletteRecord(FlowRecord):
    paused: bool = False
    spin: int | None = None
    wheel_direction: Direction | None = None
    rotor_rpm: float | None = None
    last_result: Pocket | None = None
    launch_direction: Direction | None = None
    ended_round: tuple[str, str] | None = None
    wheel_report: WheelReport | None = None


class RouletteFlow(GameFlow):
    game = "roulette"
    result_model = RouletteResult
    record_model: ClassVar[type[FlowRecord]] = RouletteRecord
    close_betting_input_reason: ClassVar[str] = "dealer"
    settings: RouletteSettings

    def __init__(self, table_id: str, settings: RouletteSettings) -> None:
        super().__init__(table_id, settings)
        self.prompt = "Waiting for the wheel"
        self.paused = False
        # What the wheel last told us (public).
        self.spin: int | None = None
        self.wheel_direction: Direction | None = None
        self.rotor_rpm: float | None = None
        self.last_result: Pocket | None = None
        # The current round's launch direction: the fallback for a result with an unreadable direction.
        self.launch_direction: Direction | None = None
        # The round that ended last and how ("settled" / "voided"), until the wheel starts another game:
        # lets a late or repeated result be rejected with the right reason.
        self.ended_round: tuple[str, str] | None = None
        # user_start bookkeeping (see the module docstring): the round book's LAUNCH timer asks for the
        # launch; its NEXT_ROUND timer (the gap after a round) adopts a game the wheel still holds.
        self.wheel_report: WheelReport | None = None

    # -- readings ----------------------------------------------------------------------------------------

    def on_reading(self, reading: Reading, now: float) -> FlowOutput:
        out = FlowOutput()
        if reading.device != self.settings.wheel_device:
            return out
        # Link and health readings (online, offline, fault) are the runtime's: it pauses the table.
        taken_by: dict[type[Reading], Callable[[Any, float, FlowOutput], None]] = {
            WheelGameStarted: self._on_game_started,
            WheelBallLaunched: self._on_ball_launched,
            WheelNoMoreBets: self._on_no_more_bets,
            WheelResult: self._on_result,
            WheelGameVoided: self._on_game_voided,
            WheelIdle: self._on_idle,
        }
        take = taken_by.get(type(reading))
        if take is not None:
            take(reading, now, out)
        return out

    def _on_game_started(self, reading: WheelGameStarted, now: float, out: FlowOutput) -> None:
        self._heard(now, "holding", reading.spin)
        if self.rounds.in_round:
            self._void(
                now,
                out,
                f"the wheel started a new game (spin {reading.spin}) before reporting a result for this one",
                by="system",
                prompt="Round voided: the wheel restarted the game",
            )
        self._open_round(now, out)

    def _on_ball_launched(self, reading: WheelBallLaunched, now: float, out: FlowOutput) -> None:
        self._another_game(reading.spin, now, out)
        self._heard(now, "busy", reading.spin)
        self.rotor_rpm = reading.rotor_rpm
        direction = normalise_direction(str(reading.direction))
        if direction is not None:
            self.wheel_direction = direction
        if not self.rounds.in_round:
            return
        self.launch_direction = direction
        if self.rounds.phase == Phase.BETTING_OPEN and self.settings.close_betting_at == "ball_launched":
            self.close_betting(now, out, reason="wheel")
        self._mark_started()

    def _on_no_more_bets(self, reading: WheelNoMoreBets, now: float, out: FlowOutput) -> None:
        self._another_game(reading.spin, now, out)
        self._heard(now, "busy", reading.spin)
        if not self.rounds.in_round:
            return
        if self.rounds.phase == Phase.BETTING_OPEN:
            self.close_betting(now, out, reason="wheel")
        # State 4 means the ball is in the rim even if the launch reading was missed.
        self._mark_started()

    def _on_result(self, reading: WheelResult, now: float, out: FlowOutput) -> None:
        self._another_game(reading.spin, now, out)  # then rejected as a result with no open round
        self._heard(now, "busy", reading.spin)  # state 5: the wheel goes on to state 2 by itself
        round_id = self.rounds.round_id
        if round_id is None:
            self._reject(out, now, reading, self._why_no_round(reading))
            return
        problem, result = self._validated_result(reading, round_id)
        if result is None:
            self._reject(out, now, reading, problem)
            self._void(
                now, out, f"no valid result: {problem}", by="system", prompt="Round voided: no valid result"
            )
            return
        self._mark_started()
        self.finish_round(now, out, result)
        self.last_result = pocket(result.number)
        self.wheel_direction = result.direction
        self.rotor_rpm = result.rotor_rpm
        self.prompt = f"Winning number {result.number} {result.color}"
        self.ended_round = (round_id, "settled")

    def _validated_result(self, reading: WheelResult, round_id: str) -> tuple[str, RouletteResult | None]:
        """The result to publish, or why there is none (the first problem found)."""
        text = str(reading.number).strip()
        if text in EXTRA_ZEROS:
            return f"{text!r} is an extra-zero pocket, not on a single-zero wheel (check the wheel)", None
        if not _SINGLE_ZERO_POCKET.fullmatch(text) or int(text) > 36:
            return f"{reading.number!r} is not a single-zero roulette number (0-36)", None
        if self.rounds.phase == Phase.BETTING_OPEN:
            return (
                f"result {text} arrived while betting was still open (no 'no more bets' from the wheel): "
                "bets may have been accepted after the ball dropped"
            ), None
        direction = normalise_direction(str(reading.direction)) or self.launch_direction
        if direction is None:
            return f"unknown wheel direction {reading.direction!r} with result {text}", None
        if not isinstance(reading.rotor_rpm, int | float) or not math.isfinite(reading.rotor_rpm):
            return f"rotor speed {reading.rotor_rpm!r} is not a number, with result {text}", None
        facts = pocket(int(text))
        try:
            result = RouletteResult(
                round_id=round_id,
                **asdict(facts),  # the number and what its bets settle on
                spin=reading.spin,
                rotor_rpm=reading.rotor_rpm,
                direction=direction,
                raw=reading.raw,
            )
        except ValidationError as exc:  # a reading field of the wrong type: a driver bug, never a crash here
            return f"result {text} does not fit the result model: {exc.errors()[0]['msg']}", None
        return "", result

    def _why_no_round(self, reading: WheelResult) -> str:
        number = str(reading.number).strip()
        if self.ended_round is not None:
            round_id, how = self.ended_round
            if how == "settled":
                return f"duplicate result {number!r} (spin {reading.spin}): round {round_id} already settled"
            return f"result {number!r} (spin {reading.spin}) for round {round_id}, which was voided"
        return f"result {number!r} (spin {reading.spin}) with no open round"

    def _on_game_voided(self, reading: WheelGameVoided, now: float, out: FlowOutput) -> None:
        # The wheel re-spins by itself (after the driver's *R): its WheelGameStarted opens the next round.
        self._heard(now, "busy", reading.spin)
        if not self.rounds.in_round:
            return
        reason = reading.reason or "the wheel voided the game"
        self._void(now, out, reason, by="device", prompt="Spin voided: wheel re-spins")

    def _on_idle(self, reading: WheelIdle, now: float, out: FlowOutput) -> None:
        if reading.state not in _IDLE_STATES:
            return  # e.g. state 7 (ball not seen in the track): a warning, the game goes on
        self._heard(now, "closed" if reading.state == _CLOSED_STATE else "before_game")
        if self.rounds.in_round:
            self._void(
                now,
                out,
                f"the wheel went to state {reading.state} (idle) without a result",
                by="system",
                prompt="Round voided: the wheel stopped",
            )

    # -- time, inputs, supervisor --------------------------------------------------------------------------

    def on_tick(self, now: float) -> FlowOutput:
        if self.paused:
            return FlowOutput()  # the windows wait (the runtime shifts them by the pause's length)
        return super().on_tick(now)

    def on_timer(self, name: str, now: float, out: FlowOutput) -> None:
        if name in (LAUNCH, LAUNCH_RETRY):
            if self.rounds.in_round and not self.rounds.started:
                direction = self._next_direction()
                command = DeviceCommand("start_game", {"direction": direction})
                out.requests.append(DeviceRequest(self.settings.wheel_device, command))
                self.rounds.set_timer(LAUNCH_RETRY, now + self.settings.start_retry_seconds)
        elif (
            name == NEXT_ROUND
            and self.settings.user_start
            and not self.rounds.in_round
            and self.wheel_report == "holding"
        ):
            # The wheel holds a game in state 2 that has no round: its round was voided before the
            # launch, and the wheel will not move without *u. Adopt it (see the module docstring).
            self._open_round(now, out)

    def _next_direction(self) -> Direction:
        # Alternate from what the wheel really did last, so a re-request repeats the same direction.
        if self.settings.alternate_direction and self.wheel_direction == "clockwise":
            return "anticlockwise"
        return "clockwise"

    def betting_closed(self, now: float, out: FlowOutput, reason: str) -> None:
        self.prompt = "No more bets"
        if reason == "dealer":
            if self.rounds.started:
                self.rounds.start_play()
            elif self.settings.user_start:
                self.rounds.cancel_timer(LAUNCH_RETRY)
                self.rounds.set_timer(LAUNCH, now)  # the ball is not launched yet: ask for it at once

    def void_round(self, now: float, reason: str, by: str) -> FlowOutput:
        ball_launched = self.rounds.started
        out = FlowOutput()
        self._void(now, out, reason, by=by, prompt="Round voided")
        if ball_launched:
            # The wheel's *R acknowledges the void and re-spins: its WheelGameStarted opens the next round.
            out.requests.append(DeviceRequest(self.settings.wheel_device, DeviceCommand("restart_game")))
        return out

    def on_pause(self, now: float) -> FlowOutput:
        self.paused = True
        return FlowOutput()

    def on_resume(self, now: float) -> FlowOutput:
        self.paused = False  # the runtime replays what the wheel reported meanwhile, right after this
        return FlowOutput()

    def public_state(self) -> dict[str, Any]:
        last = self.last_result
        return {
            "game": self.game,
            "phase": self.rounds.phase.value,
            "round_id": self.rounds.round_id,
            "ball_launched": self.rounds.started,
            # user start: when the table asks the wheel to launch, the end of the betting time it keeps (the
            # wheel's own "no more bets" follows the launch); None while the wheel keeps the time itself
            "launch_at": self._launch_at(),
            "last_result": None if last is None else {"number": last.number, "color": last.color},
            "spin": self.spin,
            "prompt": self.prompt,
            "wheel_direction": self.wheel_direction,
            "rotor_rpm": self.rotor_rpm,
            "paused": self.paused,
        }

    # -- helpers -------------------------------------------------------------------------------------------

    def _launch_at(self) -> str | None:
        due = self.rounds.timers.get(LAUNCH)
        if due is None or self.rounds.phase != Phase.BETTING_OPEN or self.rounds.started:
            return None
        return iso_ms(due)

    def _another_game(self, spin: int, now: float, out: FlowOutput) -> None:
        """Void the round in play when a reading of the ball is of another game than the one it follows (the
        spin heard last, from its launch on): the controller restarted, or lost sight of the wheel, while
        that game ended, so its result was not seen, and the other game's number must never become it. (A
        spin counter that does not advance shows nothing here, and never a false change.)"""
        followed = self.spin
        if not (self.rounds.in_round and self.rounds.started) or followed is None or spin == followed:
            return
        self._void(
            now,
            out,
            f"the wheel is in another game (spin {spin}) than the one this round followed (spin {followed}): "
            "its result was not seen",
            by="system",
            prompt="Round voided: the wheel's game was not followed to its result",
        )

    def _heard(self, now: float, report: WheelReport, spin: int | None = None) -> None:
        if spin is not None:
            self.spin = spin
        self.wheel_report = report

    def _open_round(self, now: float, out: FlowOutput) -> None:
        self.ended_round = None
        self.rounds.open(now, out, betting_seconds=None, with_shoe=False)
        self.launch_direction = None
        if self.settings.user_start:
            self.rounds.set_timer(LAUNCH, now + self.settings.betting_seconds)
        self.prompt = "Place your bets"

    def _mark_started(self) -> None:
        # With betting still open (until "no more bets") the round has started all the same: faults now
        # pause it. The wheel launched: nothing more to ask of it.
        self.rounds.start_play()
        self.rounds.cancel_timer(LAUNCH)
        self.rounds.cancel_timer(LAUNCH_RETRY)

    def round_over(self, now: float, out: FlowOutput) -> None:
        self.launch_direction = None

    def _void(self, now: float, out: FlowOutput, reason: str, by: str, prompt: str) -> None:
        round_id = self.rounds.round_id
        out.extend(super().void_round(now, reason, by))  # refused (InputRejected) when no round is open
        self.ended_round = (round_id, "voided")  # type: ignore[assignment]
        self.prompt = prompt
