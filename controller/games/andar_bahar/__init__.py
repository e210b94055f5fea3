"""Andar Bahar, one deck a round: docs/games/andar_bahar.md."""

from __future__ import annotations

from controller.games.andar_bahar.events import AndarBaharResult
from controller.games.andar_bahar.flow import AndarBaharFlow, AndarBaharSettings
from controller.games.andar_bahar.game import GAME

__all__ = ["GAME", "AndarBaharFlow", "AndarBaharResult", "AndarBaharSettings"]
