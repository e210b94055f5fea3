"""Game registry: `game = "baccarat"` in the config finds the flow, its settings and its devices.

A new game is one module in this package plus one entry here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from controller.flow import GameFlow


@dataclass(frozen=True, slots=True)
class GameSpec:
    flow_path: str  # "module:Class"
    settings_path: str
    #: device name -> protocols that can serve it (the first is the default, used by the demo's simulator)
    devices: dict[str, tuple[str, ...]]
    #: the demo's simulated shoe holds this many decks
    demo_decks: int = 8
    #: a freshly shuffled pack for every round (no cut card): the demo's dealer reloads the shoe after each
    fresh_deck_each_round: bool = False
    #: the replay policy for a capture of device traffic only (it knows nothing of bets and decisions):
    #: game settings laid over the table's. None: such captures of this game cannot be replayed.
    replay_overrides: dict[str, Any] | None = None

    def flow_class(self) -> type[GameFlow]:
        cls: type[GameFlow] = _load(self.flow_path)
        return cls

    def settings_class(self) -> type[BaseModel]:
        cls: type[BaseModel] = _load(self.settings_path)
        return cls


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


GAMES: dict[str, GameSpec] = {
    "baccarat": GameSpec(
        "controller.games.baccarat:BaccaratFlow",
        "controller.games.baccarat:BaccaratSettings",
        {"shoe": ("shoe-line",)},
        replay_overrides={
            "round_gap_seconds": 0.0,
            "betting_closes_on_first_card": True,
            "auto_new_shoe": True,
        },
    ),
    "roulette": GameSpec(
        "controller.games.roulette:RouletteFlow",
        "controller.games.roulette:RouletteSettings",
        {"wheel": ("cammegh-ss2",)},
        replay_overrides={"round_gap_seconds": 0.0, "user_start": False},
    ),
    "andar_bahar": GameSpec(
        "controller.games.andar_bahar:AndarBaharFlow",
        "controller.games.andar_bahar:AndarBaharSettings",
        {"shoe": ("shoe-line",)},
        demo_decks=1,
        fresh_deck_each_round=True,
        replay_overrides={"round_gap_seconds": 0.0, "betting_closes_on_first_card": True},
    ),
    "stud": GameSpec(
        "controller.games.stud:StudFlow",
        "controller.games.stud:StudSettings",
        {"shoe": ("shoe-line",)},
        demo_decks=1,
        fresh_deck_each_round=True,
        replay_overrides={
            "round_gap_seconds": 0.0,
            "betting_closes_on_first_card": True,
            "decisions_end_on_dealer_card": True,
        },
    ),
}


class UnknownGame(KeyError):
    def __str__(self) -> str:
        return f"unknown game {self.args[0]!r}; this controller runs: {', '.join(sorted(GAMES))}"


def game_spec(game: str) -> GameSpec:
    try:
        return GAMES[game]
    except KeyError:
        raise UnknownGame(game) from None


def make_flow(game: str, table_id: str, settings: BaseModel) -> GameFlow:
    spec = game_spec(game)
    flow_cls: Any = spec.flow_class()
    flow: GameFlow = flow_cls(table_id, settings)
    return flow
