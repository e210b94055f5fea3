"""Single-deck Blackjack (docs/games/single_deck_blackjack.md): the procedure of a table with boxes
(`BoxedBlackjackFlow`, shared with Live Blackjack) under its own house rules, one box, a fresh deck every
round.

Time only comes in as `now`.
"""

from __future__ import annotations

from pydantic import Field

from controller.games.blackjack.flow import BlackjackSettings, BoxedBlackjackFlow, HouseRules
from controller.games.card_source import DeckPerRound
from controller.games.single_deck_blackjack.events import SingleDeckBlackjackResult


class SingleDeckBlackjackSettings(BlackjackSettings):
    decks: int = Field(default=1, ge=1, le=1, description="one deck, replaced by a shuffled one every round")


class SingleDeckBlackjackFlow(BoxedBlackjackFlow):
    """Single-deck Blackjack (docs/games/single_deck_blackjack.md): one box, a fresh deck every round, hole
    card and peek, H17."""

    game = "single_deck_blackjack"
    result_model = SingleDeckBlackjackResult
    shoe_kind = DeckPerRound
    rules = HouseRules(
        hole_card=True,
        split_same_value=True,
        double_totals=frozenset({9, 10, 11}),
        insurance_with_blackjack=False,
        policy="hit_to_twelve",
    )
    settings: SingleDeckBlackjackSettings

    def __init__(self, table_id: str, settings: SingleDeckBlackjackSettings) -> None:
        super().__init__(table_id, settings)
