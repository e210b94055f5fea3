"""What every game flow is: a pure state machine.

Readings and inputs go in, with the time; events, device requests and the dealer's prompt come out.
No I/O and no clock reads inside a flow: that is what makes replay and crash recovery exact.

The common round lifecycle (opened -> betting closed -> in play -> result -> closed, or voided) lives in
`RoundBook`, so each game only decides *when* those transitions happen.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from controller.events import (
    BettingClosed,
    Event,
    EventData,
    RoundClosed,
    RoundOpened,
    RoundVoided,
    iso_ms,
    make_event,
)
from drivers.readings import Reading
from drivers.session import DeviceCommand


class Phase(StrEnum):
    WAITING = "waiting"  # between rounds
    BETTING_OPEN = "betting_open"
    BETTING_CLOSED = "betting_closed"
    IN_PLAY = "in_play"  # dealing, spinning, shaking


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """Ask a device (by its configured name) to do something, e.g. lock the shoe's gate."""

    device: str
    command: DeviceCommand


@dataclass(slots=True)
class FlowOutput:
    events: list[Event] = field(default_factory=list)
    requests: list[DeviceRequest] = field(default_factory=list)

    def extend(self, other: FlowOutput) -> FlowOutput:
        self.events += other.events
        self.requests += other.requests
        return self

    def emit(self, type_: str, data: EventData, time: float, subject: str | None = None) -> None:
        self.events.append(make_event(type_, data, time, subject))


class InputRejected(ValueError):
    """An input or command that the flow cannot accept now (the reason is told to the sender)."""


class RoundBook:
    """Round ids, phases and numbering within the shoe: the lifecycle events shared by every game."""

    def __init__(self, table_id: str, game: str) -> None:
        self.table_id = table_id
        self.game = game
        self.rounds_opened = 0
        self.number_in_shoe = 0
        self.round_id: str | None = None
        self.phase = Phase.WAITING
        self.last_of_shoe = False
        self.started = (
            False  # a card dealt / ball launched / dice shaken: from now a fault pauses, not cancels
        )

    @property
    def in_round(self) -> bool:
        return self.round_id is not None

    def new_shoe(self) -> None:
        self.number_in_shoe = 0
        self.last_of_shoe = False

    def open(self, now: float, out: FlowOutput, betting_seconds: float | None, with_shoe: bool = True) -> str:
        assert self.round_id is None, "a round is already open"
        self.rounds_opened += 1
        if with_shoe:
            self.number_in_shoe += 1
        self.round_id = f"{self.table_id}-{self.rounds_opened:07d}"
        self.phase = Phase.BETTING_OPEN
        self.started = False
        closes = iso_ms(now + betting_seconds) if betting_seconds is not None else None
        out.emit(
            "round.opened",
            RoundOpened(
                game=self.game,
                round_id=self.round_id,
                round_number_in_shoe=self.number_in_shoe if with_shoe else None,
                betting_closes_at=closes,
                last_round_of_shoe=self.last_of_shoe,
            ),
            now,
        )
        return self.round_id

    def close_betting(self, now: float, out: FlowOutput, reason: str) -> None:
        assert self.round_id is not None and self.phase == Phase.BETTING_OPEN
        self.phase = Phase.BETTING_CLOSED
        out.emit("round.betting_closed", BettingClosed(round_id=self.round_id, reason=reason), now)

    def start_play(self) -> None:
        self.phase = Phase.IN_PLAY
        self.started = True

    def close(self, now: float, out: FlowOutput) -> None:
        assert self.round_id is not None
        out.emit("round.closed", RoundClosed(round_id=self.round_id), now)
        self._reset()

    def void(self, now: float, out: FlowOutput, reason: str, by: str) -> None:
        assert self.round_id is not None
        out.emit("round.voided", RoundVoided(round_id=self.round_id, reason=reason, by=by), now)
        self._reset()

    def _reset(self) -> None:
        self.round_id = None
        self.phase = Phase.WAITING
        self.started = False


class GameFlow(ABC):
    """A game's procedure. Subclasses live in `controller.games`, one module per game."""

    game: ClassVar[str]

    def __init__(self, table_id: str) -> None:
        self.rounds = RoundBook(table_id, self.game)
        self.prompt = ""

    @abstractmethod
    def on_reading(self, reading: Reading, now: float) -> FlowOutput:
        """A device reading (cards, wheel states...). Must not raise on a bad reading: emit a rejection."""

    @abstractmethod
    def on_tick(self, now: float) -> FlowOutput:
        """Time passes (betting timer, next round). Not called while the table is paused."""

    def on_input(self, name: str, payload: dict[str, Any], now: float) -> FlowOutput:
        """A validated input from the rules engine or the dealer. Raise InputRejected when not applicable."""
        raise InputRejected(f"{self.game} takes no input {name!r}")

    @abstractmethod
    def void_round(self, now: float, reason: str, by: str) -> FlowOutput:
        """Cancel the current round (bets refunded) and get ready for the next one."""

    def on_pause(self, now: float) -> FlowOutput:
        """The table was paused: e.g. lock the shoe's gate. Default: nothing."""
        return FlowOutput()

    def on_resume(self, now: float) -> FlowOutput:
        """The table resumes: continue where the round was."""
        return FlowOutput()

    @abstractmethod
    def public_state(self) -> dict[str, Any]:
        """Everything a late subscriber or the panel may see. Never a secret card."""
