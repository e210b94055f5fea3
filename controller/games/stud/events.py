"""5 Card Stud's `round.result`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from controller.events import EventData, RoundResult

PokerCategory = Literal[
    "high_card",
    "one_pair",
    "two_pair",
    "three_of_a_kind",
    "straight",
    "flush",
    "full_house",
    "four_of_a_kind",
    "straight_flush",
    "royal_flush",
]


class StudHand(EventData):
    cards: list[str] = Field(description="in dealing order")
    category: PokerCategory
    ranks: list[int] = Field(
        description="tie-break ranks, most significant first (2..14, ace 14): the groups by size then rank, "
        "then the kickers; a straight gives its top card only (5 for A-2-3-4-5)"
    )


class StudResult(RoundResult):
    game: Literal["stud"] = "stud"
    round_id: str
    hands: list[StudHand] = Field(description="the player hands in seat order (one: the common hand)")
    dealer: StudHand
    dealer_qualifies: bool = Field(description="the dealer has ace-king or better")
    outcomes: list[Literal["win", "lose", "tie"]] = Field(
        description="each player hand against the dealer's, qualified or not (payouts are the rules engine's)"
    )
    manual_cards: list[str] = Field(
        default_factory=list,
        description="cards of this round entered by hand after a no-read (see card.dealt)",
    )
