"""Sic bo: a shaker, three dice and the camera that reads them (docs/games/sicbo.md)."""

from __future__ import annotations

from controller.games.sicbo.events import SicBoResult
from controller.games.sicbo.flow import ManualDice, SicBoFlow, SicBoSettings, dice_facts
from controller.games.sicbo.game import GAME

__all__ = ["GAME", "ManualDice", "SicBoFlow", "SicBoResult", "SicBoSettings", "dice_facts"]
