"""Infinite Blackjack, one common hand for every player (docs/games/infinite_blackjack.md)."""

from __future__ import annotations

from controller.games.infinite_blackjack.events import InfiniteBlackjackResult
from controller.games.infinite_blackjack.flow import InfiniteBlackjackFlow, InfiniteBlackjackSettings
from controller.games.infinite_blackjack.game import GAME

__all__ = ["GAME", "InfiniteBlackjackFlow", "InfiniteBlackjackResult", "InfiniteBlackjackSettings"]
