"""Single-deck Blackjack: one box, a fresh deck every round (docs/games/single_deck_blackjack.md)."""

from __future__ import annotations

from controller.games.single_deck_blackjack.events import SingleDeckBlackjackResult
from controller.games.single_deck_blackjack.flow import SingleDeckBlackjackFlow, SingleDeckBlackjackSettings
from controller.games.single_deck_blackjack.game import GAME

__all__ = ["GAME", "SingleDeckBlackjackFlow", "SingleDeckBlackjackResult", "SingleDeckBlackjackSettings"]
