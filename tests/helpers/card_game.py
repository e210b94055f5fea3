"""What each card game's tests folder tells the shared tests of `tests/unit/games/` about the game.

The shared tests (`test_table_integrity.py`, `test_card_positions.py`) run over every card game of the
registry (`controller.games.GAMES`, the games whose flow is a `CardFlow`). What only the game knows, they
read from its tests folder: `tests/unit/games/<folder>/card_game.py` declares `CARD_GAMES`, a
`CardGameKit` by game name (the blackjack folder's holds the three variants'), as its `settlement.py`
declares `SETTLEMENTS`. A card game with no kit fails those tests with a message naming what to add:
never a skip.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from controller.games import GAMES
from controller.games.card_flow import CardFlow
from tests.helpers.paths import GAME_TESTS

#: the module of a game's tests folder that declares `CARD_GAMES`
KIT_MODULE = "card_game"


@dataclass(frozen=True, slots=True)
class CardGameKit:
    """A card game as the shared tests need it."""

    #: its `[game]` settings for the integrity properties: one deck where the game has a choice (a card's
    #: code then names one physical card), short windows (betting 2 s, the gap 1 s, decisions 1 or 2 s)
    settings: Mapping[str, Any]
    #: every card a round's published result (`round.result` data, as a subscriber gets it) puts on the felt
    result_cards: Callable[[dict[str, Any]], list[str]]
    #: the round's cards in table order, read from the game's own keys of its `public_state()` (the dealer's
    #: panel shows them through `positions()`: the two must agree)
    cards_on_table: Callable[[dict[str, Any]], list[str]]
    #: the tables the positions walk deals at: a name -> their settings (short windows, no gap)
    position_tables: Mapping[str, Mapping[str, Any]]
    #: physical cards one integrity example deals at most (from one deck: no shoe runs out)
    max_cards: int = 34


def card_games() -> list[str]:
    """The card games of the registry, in its order."""
    return [name for name, spec in GAMES.items() if issubclass(spec.flow, CardFlow)]


@cache
def card_game_kits() -> dict[str, CardGameKit]:
    """Every `CARD_GAMES` of the games' tests folders (each folder found on disk, its module imported)."""
    kits: dict[str, CardGameKit] = {}
    for path in sorted(GAME_TESTS.glob(f"*/{KIT_MODULE}.py")):
        module = importlib.import_module(f"tests.unit.games.{path.parent.name}.{KIT_MODULE}")
        declared = getattr(module, "CARD_GAMES", None)
        assert isinstance(declared, dict), f"{path} declares no CARD_GAMES dictionary"
        for game, kit in declared.items():
            assert game not in kits, f"{game}: its card game kit is declared twice ({path})"
            assert game in GAMES, f"{path}: CARD_GAMES names {game!r}, which the registry does not list"
            kits[game] = kit
    return kits


def card_game_kit(game: str) -> CardGameKit:
    """The kit of `game`; a card game without one fails the test that asks, saying what to add."""
    kit = card_game_kits().get(game)
    assert kit is not None, (
        f"{game} is a card game with no kit for the shared tests: add CARD_GAMES = {{{game!r}: "
        f"CardGameKit(...)}} to its tests folder's {KIT_MODULE}.py (tests/unit/games/<folder>/"
        f"{KIT_MODULE}.py; tests/helpers/card_game.py says what each field is)"
    )
    return kit
