"""5 Card Stud against the dealer, a fresh deck every round (docs/games/stud.md)."""

from __future__ import annotations

from controller.games.stud.events import StudResult
from controller.games.stud.flow import StudFlow, StudSettings
from controller.games.stud.game import GAME

__all__ = ["GAME", "StudFlow", "StudResult", "StudSettings"]
