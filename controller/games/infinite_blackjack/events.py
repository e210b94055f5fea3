"""Infinite Blackjack's `round.result` and its burn after a shuffle."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from controller.events import GameEvent, RoundResult
from controller.games.blackjack.events import BlackjackDealer


class InfiniteBlackjackResult(RoundResult):
    game: Literal["infinite_blackjack"] = "infinite_blackjack"
    round_id: str
    shoe_id: str
    initial: list[str] = Field(description="the two common initial player cards")
    sequence: list[str] = Field(description="the common further player cards, in dealing order")
    dealer_up: str
    hole_card: str = Field(description="the dealer's face-down card, revealed")
    dealer: BlackjackDealer = Field(description="cards include the revealed hole card")
    dealer_bust_cards: int | None = Field(description="cards in the dealer's bust hand; null if no bust")
    round_in_shoe: int = Field(ge=1, description="for side bets available up to a round of the shoe")
    last_round_of_shoe: bool


class ShoeBurn(GameEvent):
    """Infinite Blackjack's burn after a shuffle: the shown card and the count of cards burned face down
    (never their identity)."""

    TYPE = "shoe.burn"
    shoe_id: str
    shown: str | None = Field(description="the card shown; its value is the number of cards to burn")
    to_burn: int | None
    burned: int
    done: bool = Field(description="the burn is complete and its count right: play may begin")
