"""Baccarat's `round.result`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from controller.events import EventData, RoundResult


class BaccaratHand(EventData):
    cards: list[str]
    total: int


class BaccaratResult(RoundResult):
    game: Literal["baccarat"] = "baccarat"
    round_id: str
    player: BaccaratHand
    banker: BaccaratHand
    winner: Literal["player", "banker", "tie"]
    player_pair: bool
    banker_pair: bool
    natural: bool = Field(description="either hand has a two-card 8 or 9")
    player_natural: bool
    banker_natural: bool
    round_number_in_shoe: int
    last_round_of_shoe: bool
    manual_cards: list[str] = Field(
        default_factory=list,
        description="cards of this round entered by hand after a no-read (see card.dealt)",
    )
