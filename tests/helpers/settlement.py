"""What every game's settlement functions share (each game's own are in its tests folder,
tests/unit/games/<folder>/settlement.py, proved by that folder's settlement tests): a bet as placed (`Bet`), a
`round.result` event's `data` as a subscriber receives it (`Result`, through JSON: `as_published`), and the
dispatch from a result's `game` and a bet's name to its settlement function (`settler`).

A settlement function takes the result and the bet, and returns the net win per unit staked as an exact
fraction (sic bo: whether the bet wins, a single number how many dice show it). It reads nothing but the
result: written without asking the controller anything. Where a game's rules give no payout, the assumption
is said beside the function."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from controller.events import EventData, make_event

Result = Mapping[str, Any]


@dataclass(frozen=True)
class Bet:
    """A bet as placed: its name and the player's own choices (a bucket, a hand, bet or fold, a mode)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


Settle = Callable[[Result, Bet], Any]
Settlements = Mapping[str, Mapping[str, Settle]]
"""A game folder's settlement functions: by game (the result's `game`), then by bet name."""
LOSE, PUSH = Fraction(-1), Fraction(0)


def wins(condition: bool, payout: Fraction | int) -> Fraction:
    return Fraction(payout) if condition else LOSE


def settler(settlements: Settlements) -> Settle:
    """`settle(result, bet)` over a folder's settlement functions: the result's game, then the bet's name."""

    def settle(result: Result, bet: Bet) -> Any:
        return settlements[result["game"]][bet.name](result, bet)

    return settle


def as_published(result: EventData) -> Result:
    """The result's data exactly as an MQTT subscriber gets it: the event's data, through JSON."""
    data: Result = json.loads(json.dumps(make_event("round.result", result, 0.0).data))
    return data
