"""Andar Bahar's `round.result`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from controller.events import RoundResult

AndarBaharBucket = Literal[
    "1-5", "6-10", "11-15", "16-20", "21-25", "26-30", "31-35", "36-40", "41-45", "46-49"
]


class AndarBaharResult(RoundResult):
    game: Literal["andar_bahar"] = "andar_bahar"
    round_id: str
    game_card: str = Field(description="the card drawn before betting; its rank is the one to match")
    andar: list[str] = Field(description="Andar's cards in dealing order (Andar gets the 1st, 3rd, ...)")
    bahar: list[str] = Field(description="Bahar's cards in dealing order (Bahar gets the 2nd, 4th, ...)")
    winner: Literal["andar", "bahar"] = Field(description="the side that received the matching card")
    cards_dealt: int = Field(ge=1, le=49, description="Andar and Bahar cards together, game card excluded")
    bucket: AndarBaharBucket = Field(description="the 'number of cards dealt' bet range cards_dealt is in")
    first_andar_match: bool = Field(description="the first Andar card has the game card's rank")
    first_bahar_match: bool = Field(description="the first Bahar card has the game card's rank")
    first_three: Literal["straight_flush", "straight", "flush"] | None = Field(
        description="game card + first Andar + first Bahar; ace high (Q-K-A) or low (A-2-3), no wrap "
        "(K-A-2); null when no pattern or fewer than 3 cards"
    )
    manual_cards: list[str] = Field(
        default_factory=list,
        description="cards of this round entered by hand after a no-read (see card.dealt)",
    )
