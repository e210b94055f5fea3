"""Baccarat to the rest of the controller (`GAME`), and how its result reads."""

from __future__ import annotations

from typing import Any

from controller.games.baccarat.flow import BaccaratFlow, BaccaratSettings
from controller.games.spec import CARD_READERS, SHUFFLER, Demo, GameSpec, View


def describe_result(data: dict[str, Any]) -> str:
    """One line for the demo."""
    p, b = data["player"], data["banker"]
    extras = [k for k in ("player_pair", "banker_pair", "natural") if data.get(k)]
    return (
        f"Player {' '.join(p['cards'])} ({p['total']}) vs Banker {' '.join(b['cards'])} ({b['total']})"
        f" -> {data['winner'].upper()}{' ' + ', '.join(extras) if extras else ''}"
    )


#: a result's extras as a console tile says them: short, so that the outcome fits whole beside the cards
SHORT_EXTRAS = {"natural": "natural", "player_pair": "P pair", "banker_pair": "B pair"}


def tile_result(data: dict[str, Any]) -> tuple[str, str]:
    """The hands, and the winner with its extras in short ("PLAYER, natural, P pair")."""
    p, b = data["player"], data["banker"]
    dealt = f"Player {' '.join(p['cards'])} ({p['total']}) vs Banker {' '.join(b['cards'])} ({b['total']})"
    extras = [short for key, short in SHORT_EXTRAS.items() if data.get(key)]
    return dealt, ", ".join([data["winner"].upper(), *extras])


GAME = GameSpec(
    flow=BaccaratFlow,
    short="bac",
    settings=BaccaratSettings,
    view=View("cards-two-hands", "Baccarat", usual_cards=3),
    devices={"shoe": CARD_READERS},
    replay_overrides={"round_gap_seconds": 0.0, "betting_closes_on_first_card": True, "auto_new_shoe": True},
    optional_devices=SHUFFLER,
    describe=describe_result,
    tile_result=tile_result,
    demo=Demo(
        studio_place=1,
        settings={"betting_seconds": 2.0, "round_gap_seconds": 1.0},
        # 8 decks are 416 cards: the cut card 16 cards in ends the first shoe within a few rounds (the
        # table starts the next one by itself)
        cut_position=400,
    ),
)
