"""Live Blackjack (docs/games/blackjack.md); its package also holds what the blackjack tables share."""

from __future__ import annotations

from controller.games.blackjack.events import BlackjackResult
from controller.games.blackjack.flow import LiveBlackjackFlow, LiveBlackjackSettings
from controller.games.blackjack.game import GAME

__all__ = ["GAME", "BlackjackResult", "LiveBlackjackFlow", "LiveBlackjackSettings"]
