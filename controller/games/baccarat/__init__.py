"""Baccarat (punto banco), docs/games/baccarat.md: its flow, its result and its `GAME`."""

from __future__ import annotations

from controller.games.baccarat.events import BaccaratResult
from controller.games.baccarat.flow import BaccaratFlow, BaccaratSettings, next_position
from controller.games.baccarat.game import GAME

__all__ = ["GAME", "BaccaratFlow", "BaccaratResult", "BaccaratSettings", "next_position"]
