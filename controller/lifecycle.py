"""The round lifecycle every game shares, as one transition table (in the style of h11's state machine).

A round goes: opened (betting open) -> betting closed -> in play -> result -> closed, or is voided at any
point. `RoundBook` owns that lifecycle for every game: the round ids and numbering within the shoe, the phase,
the betting deadline, the gap before the next round, the game's own timers (a decision window, a wheel
launch), and the refusals that go with each move. A game flow only says *when* to make a move and what the
round's result is; it never keeps a copy of this bookkeeping.

Every (phase, move) pair is either a transition (`TRANSITIONS`) or a refusal with the reason the sender is
told (`REFUSALS`): nothing is left implicit, and a test walks the whole table.

Time is data here: deadlines are epoch seconds kept in the record, `due(now)` says which have passed, and
`shift(seconds)` moves them all when the table was paused (a pause does not eat the betting window).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from controller.events import (
    BettingClosed,
    EventData,
    RoundClosed,
    RoundOpened,
    RoundVoided,
    iso_ms,
    make_event,
)
from controller.flow_output import FlowOutput


class Phase(StrEnum):
    WAITING = "waiting"  # between rounds
    BETTING_OPEN = "betting_open"
    BETTING_CLOSED = "betting_closed"
    IN_PLAY = "in_play"  # dealing, spinning, shaking


class Move(StrEnum):
    OPEN = "open"
    CLOSE_BETTING = "close_betting"
    START_PLAY = "start_play"  # a card dealt, a ball launched: from now a fault pauses instead of voiding
    FINISH = "finish"  # the result is known: publish it and close the round
    VOID = "void"


class Refused(ValueError):
    """A lifecycle move that does not apply in the current phase; the message is for the sender."""


#: (phase, move) -> the phase after the move
TRANSITIONS: dict[tuple[Phase, Move], Phase] = {
    (Phase.WAITING, Move.OPEN): Phase.BETTING_OPEN,
    (Phase.BETTING_OPEN, Move.CLOSE_BETTING): Phase.BETTING_CLOSED,
    # A wheel may launch the ball while bets are still taken: the round has started, betting stays open.
    (Phase.BETTING_OPEN, Move.START_PLAY): Phase.BETTING_OPEN,
    (Phase.BETTING_OPEN, Move.VOID): Phase.WAITING,
    (Phase.BETTING_CLOSED, Move.START_PLAY): Phase.IN_PLAY,
    (Phase.BETTING_CLOSED, Move.FINISH): Phase.WAITING,
    (Phase.BETTING_CLOSED, Move.VOID): Phase.WAITING,
    (Phase.IN_PLAY, Move.START_PLAY): Phase.IN_PLAY,
    (Phase.IN_PLAY, Move.FINISH): Phase.WAITING,
    (Phase.IN_PLAY, Move.VOID): Phase.WAITING,
}

_NO_ROUND = "no round is open"
#: (phase, move) -> why the move is refused. Together with TRANSITIONS this covers every pair.
REFUSALS: dict[tuple[Phase, Move], str] = {
    (Phase.WAITING, Move.CLOSE_BETTING): "betting is not open",
    (Phase.WAITING, Move.START_PLAY): _NO_ROUND,
    (Phase.WAITING, Move.FINISH): _NO_ROUND,
    (Phase.WAITING, Move.VOID): "there is no round to void",
    (Phase.BETTING_OPEN, Move.OPEN): "a round is already open",
    (Phase.BETTING_OPEN, Move.FINISH): "betting is still open: a round has no result before betting closes",
    (Phase.BETTING_CLOSED, Move.OPEN): "a round is already open",
    (Phase.BETTING_CLOSED, Move.CLOSE_BETTING): "betting is not open",
    (Phase.IN_PLAY, Move.OPEN): "a round is already open",
    (Phase.IN_PLAY, Move.CLOSE_BETTING): "betting is not open",
}

#: the lifecycle's own timers; games add theirs under other names
BETTING = "betting"
NEXT_ROUND = "next_round"


class RoundBook(BaseModel):
    """Round ids, phase, numbering within the shoe and the round's deadlines: a plain, serialisable record
    with the lifecycle's moves as methods."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    table_id: str
    game: str
    #: from the game's settings (`round_gap_seconds`), not part of the journaled record
    gap_seconds: float = Field(0.0, exclude=True)
    rounds_opened: int = 0
    number_in_shoe: int = 0
    round_id: str | None = None
    phase: Phase = Phase.WAITING
    last_of_shoe: bool = False
    #: a card dealt / ball launched / dice shaken: from now a fault pauses the round instead of voiding it
    started: bool = False
    #: name -> epoch seconds. `next_round` is due at once on a new table: the first round may open then.
    timers: dict[str, float] = Field(default_factory=lambda: {NEXT_ROUND: 0.0})

    # -- queries -----------------------------------------------------------------------------------------

    @property
    def in_round(self) -> bool:
        return self.round_id is not None

    @property
    def betting_deadline(self) -> float | None:
        return self.timers.get(BETTING)

    def check(self, move: Move) -> Phase:
        """The phase after `move`, or Refused with the reason."""
        after = TRANSITIONS.get((self.phase, move))
        if after is None:
            raise Refused(REFUSALS.get((self.phase, move), f"cannot {move} while {self.phase}"))
        return after

    # -- time --------------------------------------------------------------------------------------------

    def set_timer(self, name: str, at: float) -> None:
        self.timers[name] = at

    def cancel_timer(self, name: str) -> None:
        self.timers.pop(name, None)

    def next_deadline(self) -> float | None:
        return min(self.timers.values(), default=None)

    def pop_due(self, now: float) -> list[str]:
        """The timers that are due at `now`, earliest first, removed from the book."""
        due = sorted((at, name) for name, at in self.timers.items() if at <= now)
        for _, name in due:
            del self.timers[name]
        return [name for _, name in due]

    def shift(self, seconds: float) -> None:
        """The table was paused for `seconds`: every running window gets that time back."""
        for name in self.timers:
            self.timers[name] += seconds

    # -- moves -------------------------------------------------------------------------------------------

    def new_shoe(self) -> None:
        self.number_in_shoe = 0
        self.last_of_shoe = False

    def open(self, now: float, out: FlowOutput, betting_seconds: float | None, with_shoe: bool = True) -> str:
        self.phase = self.check(Move.OPEN)
        self.rounds_opened += 1
        if with_shoe:
            self.number_in_shoe += 1
        self.round_id = f"{self.table_id}-{self.rounds_opened:07d}"
        self.started = False
        self.cancel_timer(NEXT_ROUND)
        if betting_seconds is not None:
            self.set_timer(BETTING, now + betting_seconds)
        closes = self.betting_deadline
        out.emit(
            "round.opened",
            RoundOpened(
                game=self.game,
                round_id=self.round_id,
                round_number_in_shoe=self.number_in_shoe if with_shoe else None,
                betting_closes_at=iso_ms(closes) if closes is not None else None,
                last_round_of_shoe=self.last_of_shoe,
            ),
            now,
        )
        return self.round_id

    def close_betting(self, now: float, out: FlowOutput, reason: str) -> None:
        self.phase = self.check(Move.CLOSE_BETTING)
        self.cancel_timer(BETTING)
        assert self.round_id is not None
        out.emit("round.betting_closed", BettingClosed(round_id=self.round_id, reason=reason), now)

    def start_play(self) -> None:
        self.phase = self.check(Move.START_PLAY)
        self.started = True

    def finish(self, now: float, out: FlowOutput, result: EventData) -> None:
        """Publish the round's result and close it; the next round may open after the gap."""
        self.check(Move.FINISH)
        assert self.round_id is not None
        out.events.append(make_event("round.result", result, now))
        out.emit("round.closed", RoundClosed(round_id=self.round_id), now)
        self._end(now)

    def void(self, now: float, out: FlowOutput, reason: str, by: str) -> None:
        self.check(Move.VOID)
        assert self.round_id is not None
        out.emit("round.voided", RoundVoided(round_id=self.round_id, reason=reason, by=by), now)
        self._end(now)

    def _end(self, now: float) -> None:
        self.round_id = None
        self.phase = Phase.WAITING
        self.started = False
        # the round's own windows end with it; the gap before the next one starts now
        self.timers = {NEXT_ROUND: now + self.gap_seconds}
