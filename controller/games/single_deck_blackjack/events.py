"""Single-deck Blackjack's `round.result`."""

from __future__ import annotations

from typing import Literal

from controller.games.blackjack.events import BoxedBlackjackResult


class SingleDeckBlackjackResult(BoxedBlackjackResult):
    """One box; a fresh deck every round, so `round_in_shoe` is always 1."""

    game: Literal["single_deck_blackjack"] = "single_deck_blackjack"
