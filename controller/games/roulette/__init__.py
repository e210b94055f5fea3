"""Roulette on a Cammegh wheel (docs/games/roulette.md)."""

from __future__ import annotations

from controller.games.roulette.events import RouletteResult
from controller.games.roulette.flow import RouletteFlow, RouletteSettings, pocket
from controller.games.roulette.game import GAME

__all__ = ["GAME", "RouletteFlow", "RouletteResult", "RouletteSettings", "pocket"]
