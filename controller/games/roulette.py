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

With `user_start` the flow asks the wheel for each game (`start_game`) `round_gap_seconds` after the
previous round ended, and asks again every `start_retry_seconds` until the wheel answers with
`WheelGameStarted`. Two exceptions, because the wheel re-spins by itself then: after a void the wheel
reported, and after a supervisor void that asked for `restart_game`, the flow first waits
`start_retry_seconds` for that re-spin instead of asking for a new game (which would race it). Directions
alternate from the direction the wheel actually launched last, so a repeated request repeats the direction.

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
  voided): ignored, but remembered, so that with `user_start` the flow does not ask for a new game while the
  wheel is still busy with that spin.
- A supervisor void after the ball was launched asks the wheel to `restart_game` (the vendor's `*R`
  acknowledges a void and re-spins). A void reported by the wheel itself is acknowledged by the wheel's
  driver, not from here.

The flow is pure (time is passed in) and picklable, for replay and crash recovery.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.events import RawRejected, RouletteResult
from controller.flow import DeviceRequest, FlowOutput, GameFlow, InputRejected, Phase
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

# A spin the wheel plays without a round of ours normally ends within a minute or two; if its end never
# arrives (a lost reading) the flow stops waiting for it after this long and asks for a new game again.
WHEEL_GAME_STALE_SECONDS = 120.0

# Wheel states after which the wheel is out of any game (before game / closed).
_IDLE_STATES = frozenset({1, 6})
_CLOSED_STATE = 6


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
    user_start: bool = Field(True, description="the flow asks the wheel to start each game")
    alternate_direction: bool = Field(True, description="clockwise / anticlockwise in turn when user_start")
    round_gap_seconds: float = Field(3.0, ge=0, description="result (or void) to next game request")
    start_retry_seconds: float = Field(10.0, gt=0, description="ask the wheel again if it started no game")


class RouletteFlow(GameFlow):
    game = "roulette"

    def __init__(self, table_id: str, settings: RouletteSettings) -> None:
        super().__init__(table_id)
        self.settings = settings
        self.prompt = "Waiting for the wheel"
        self.paused = False
        # What the wheel last told us (public).
        self.spin: int | None = None
        self.wheel_direction: Direction | None = None
        self.rotor_rpm: float | None = None
        self.last_result: Pocket | None = None
        # The current round's launch direction: the fallback for a result with an unreadable direction.
        self._launch_direction: Direction | None = None
        # The round that ended last and how ("settled" / "voided"), until the wheel starts another game:
        # lets a late or repeated result be rejected with the right reason.
        self._ended_round: tuple[str, str] | None = None
        # user_start bookkeeping.
        self._last_round_end: float | None = None
        self._start_requested_at: float | None = None  # waiting for WheelGameStarted since then
        self._wheel_in_game = False  # the wheel is playing a spin (with or without a round of ours)
        self._wheel_game_seen_at: float | None = None
        self._wheel_closed = False  # state 6: asking for a game is pointless until it powers up

    # -- readings ----------------------------------------------------------------------------------------

    def on_reading(self, reading: Reading, now: float) -> FlowOutput:
        out = FlowOutput()
        if reading.device != self.settings.wheel_device:
            return out
        if isinstance(reading, WheelGameStarted):
            self._on_game_started(reading, now, out)
        elif isinstance(reading, WheelBallLaunched):
            self._on_ball_launched(reading, now, out)
        elif isinstance(reading, WheelNoMoreBets):
            self._on_no_more_bets(reading, now, out)
        elif isinstance(reading, WheelResult):
            self._on_result(reading, now, out)
        elif isinstance(reading, WheelGameVoided):
            self._on_game_voided(reading, now, out)
        elif isinstance(reading, WheelIdle):
            self._on_idle(reading, now, out)
        # Link and health readings (online, offline, fault) are the runtime's: it pauses the table.
        return out

    def _on_game_started(self, reading: WheelGameStarted, now: float, out: FlowOutput) -> None:
        self._wheel_busy(now, reading.spin)
        self._start_requested_at = None
        if self.rounds.in_round:
            self._void(
                now,
                out,
                f"the wheel started a new game (spin {reading.spin}) before reporting a result for this one",
                by="system",
                prompt="Round voided: the wheel restarted the game",
            )
        self._ended_round = None
        self.rounds.open(now, out, betting_seconds=None, with_shoe=False)
        self._launch_direction = None
        self.prompt = "Place your bets"

    def _on_ball_launched(self, reading: WheelBallLaunched, now: float, out: FlowOutput) -> None:
        self._wheel_busy(now, reading.spin)
        self.rotor_rpm = reading.rotor_rpm
        direction = normalise_direction(str(reading.direction))
        if direction is not None:
            self.wheel_direction = direction
        if not self.rounds.in_round:
            return
        self._launch_direction = direction
        if self.rounds.phase == Phase.BETTING_OPEN and self.settings.close_betting_at == "ball_launched":
            self._close_betting(now, out, reason="wheel")
        self._mark_started()

    def _on_no_more_bets(self, reading: WheelNoMoreBets, now: float, out: FlowOutput) -> None:
        self._wheel_busy(now, reading.spin)
        if not self.rounds.in_round:
            return
        if self.rounds.phase == Phase.BETTING_OPEN:
            self._close_betting(now, out, reason="wheel")
        # State 4 means the ball is in the rim even if the launch reading was missed.
        self.rounds.start_play()

    def _on_result(self, reading: WheelResult, now: float, out: FlowOutput) -> None:
        self._wheel_in_game = False
        self.spin = reading.spin
        round_id = self.rounds.round_id
        if round_id is None:
            self._reject(reading, now, out, self._why_no_round(reading), subject=None)
            return
        problem, result = self._validated_result(reading, round_id)
        if result is None:
            self._reject(reading, now, out, problem, subject=round_id)
            self._void(
                now, out, f"no valid result: {problem}", by="system", prompt="Round voided: no valid result"
            )
            return
        self.rounds.start_play()
        out.emit("round.result", result, now)
        self.last_result = pocket(result.number)
        self.wheel_direction = result.direction
        self.rotor_rpm = result.rotor_rpm
        self.prompt = f"Winning number {result.number} {result.color}"
        self.rounds.close(now, out)
        self._ended_round = (round_id, "settled")
        self._last_round_end = now

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
        direction = normalise_direction(str(reading.direction)) or self._launch_direction
        if direction is None:
            return f"unknown wheel direction {reading.direction!r} with result {text}", None
        if not isinstance(reading.rotor_rpm, int | float) or not math.isfinite(reading.rotor_rpm):
            return f"rotor speed {reading.rotor_rpm!r} is not a number, with result {text}", None
        facts = pocket(int(text))
        try:
            result = RouletteResult(
                round_id=round_id,
                number=facts.number,
                color=facts.color,
                parity=facts.parity,
                range=facts.range,
                dozen=facts.dozen,
                column=facts.column,
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
        if self._ended_round is not None:
            round_id, how = self._ended_round
            if how == "settled":
                return f"duplicate result {number!r} (spin {reading.spin}): round {round_id} already settled"
            return f"result {number!r} (spin {reading.spin}) for round {round_id}, which was voided"
        return f"result {number!r} (spin {reading.spin}) with no open round"

    def _on_game_voided(self, reading: WheelGameVoided, now: float, out: FlowOutput) -> None:
        self.spin = reading.spin
        self._wheel_in_game = False
        # The wheel re-spins by itself: wait for its WheelGameStarted before asking for a game.
        self._start_requested_at = now
        if not self.rounds.in_round:
            return
        reason = reading.reason or "the wheel voided the game"
        self._void(now, out, reason, by="device", prompt="Spin voided: wheel re-spins")

    def _on_idle(self, reading: WheelIdle, now: float, out: FlowOutput) -> None:
        if reading.state not in _IDLE_STATES:
            return  # e.g. state 7 (ball not seen in the track): a warning, the game goes on
        self._wheel_in_game = False
        self._wheel_closed = reading.state == _CLOSED_STATE
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
        out = FlowOutput()
        if not self._should_request_game(now):
            return out
        direction = self._next_direction()
        out.requests.append(
            DeviceRequest(self.settings.wheel_device, DeviceCommand("start_game", {"direction": direction}))
        )
        self._start_requested_at = now
        return out

    def _should_request_game(self, now: float) -> bool:
        settings = self.settings
        if not settings.user_start or self.rounds.in_round or self._wheel_closed:
            return False
        if (
            self._wheel_in_game
            and self._wheel_game_seen_at is not None
            and now - self._wheel_game_seen_at < WHEEL_GAME_STALE_SECONDS
        ):
            return False  # the wheel is still playing a spin we have no round for
        if self._start_requested_at is not None:
            return now - self._start_requested_at >= settings.start_retry_seconds
        return self._last_round_end is None or now - self._last_round_end >= settings.round_gap_seconds

    def _next_direction(self) -> Direction:
        # Alternate from what the wheel really did last, so a re-request repeats the same direction.
        if self.settings.alternate_direction and self.wheel_direction == "clockwise":
            return "anticlockwise"
        return "clockwise"

    def on_input(self, name: str, payload: dict[str, Any], now: float) -> FlowOutput:
        if name != "close_betting":
            raise InputRejected(f"roulette takes no input {name!r}")
        if not self.rounds.in_round or self.rounds.phase != Phase.BETTING_OPEN:
            raise InputRejected("betting is not open")
        out = FlowOutput()
        self._close_betting(now, out, reason="dealer")
        if self.rounds.started:
            self.rounds.start_play()
        return out

    def void_round(self, now: float, reason: str, by: str) -> FlowOutput:
        if not self.rounds.in_round:
            raise InputRejected("there is no round to void")
        out = FlowOutput()
        ball_launched = self.rounds.started
        self._void(now, out, reason, by=by, prompt="Round voided")
        if ball_launched:
            # The wheel's *R acknowledges the void and re-spins: its WheelGameStarted answers this request.
            out.requests.append(DeviceRequest(self.settings.wheel_device, DeviceCommand("restart_game")))
            self._start_requested_at = now
        return out

    def on_pause(self, now: float) -> FlowOutput:
        self.paused = True
        return FlowOutput()

    def on_resume(self, now: float) -> FlowOutput:
        self.paused = False
        return FlowOutput()

    def public_state(self) -> dict[str, Any]:
        last = self.last_result
        return {
            "game": self.game,
            "phase": self.rounds.phase.value,
            "round_id": self.rounds.round_id,
            "ball_launched": self.rounds.started,
            "last_result": None if last is None else {"number": last.number, "color": last.color},
            "spin": self.spin,
            "prompt": self.prompt,
            "wheel_direction": self.wheel_direction,
            "rotor_rpm": self.rotor_rpm,
            "paused": self.paused,
        }

    # -- helpers -------------------------------------------------------------------------------------------

    def _wheel_busy(self, now: float, spin: int) -> None:
        self.spin = spin
        self._wheel_in_game = True
        self._wheel_game_seen_at = now
        self._wheel_closed = False

    def _mark_started(self) -> None:
        if self.rounds.phase == Phase.BETTING_OPEN:
            # Betting stays open until "no more bets", but the round has started (faults now pause it).
            self.rounds.started = True
        else:
            self.rounds.start_play()

    def _close_betting(self, now: float, out: FlowOutput, reason: str) -> None:
        self.rounds.close_betting(now, out, reason=reason)
        self.prompt = "No more bets"

    def _void(self, now: float, out: FlowOutput, reason: str, by: str, prompt: str) -> None:
        round_id = self.rounds.round_id
        assert round_id is not None
        self.rounds.void(now, out, reason=reason, by=by)
        self._ended_round = (round_id, "voided")
        self._launch_direction = None
        self._last_round_end = now
        self.prompt = prompt

    def _reject(
        self, reading: Reading, now: float, out: FlowOutput, reason: str, subject: str | None
    ) -> None:
        rejected = RawRejected(device=reading.device, reason=reason, raw=reading.raw)
        out.emit("reading.rejected", rejected, now, subject)
