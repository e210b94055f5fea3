"""Andar Bahar to the rest of the controller (`GAME`), and how its result reads."""

from __future__ import annotations

from typing import Any

from controller.games.andar_bahar.flow import AndarBaharFlow, AndarBaharSettings
from controller.games.spec import CARD_READERS, SHUFFLER, Demo, GameSpec, View


def describe_result(data: dict[str, Any]) -> str:
    """One line for the demo."""
    first_three = f", first 3 {data['first_three']}" if data.get("first_three") else ""
    return (
        f"game card {data['game_card']}: Andar {' '.join(data['andar'])}"
        f" | Bahar {' '.join(data['bahar'])}"
        f" -> {data['winner'].upper()} ({data['cards_dealt']} cards dealt: the cards-dealt bet's range"
        f" {data['bucket']}{first_three})"
    )


def tile_result(data: dict[str, Any]) -> tuple[str, str]:
    """The game card and the sides, and the winner with the cards dealt and their range in short."""
    andar, bahar = " ".join(data["andar"]), " ".join(data["bahar"])
    dealt = f"game card {data['game_card']}: Andar {andar} | Bahar {bahar}"
    first_three = f", first 3 {data['first_three'].replace('_', ' ')}" if data.get("first_three") else ""
    return dealt, f"{data['winner'].upper()}, {data['cards_dealt']} cards ({data['bucket']}){first_three}"


GAME = GameSpec(
    flow=AndarBaharFlow,
    short="ab",
    settings=AndarBaharSettings,
    # the game card: one card, as big as it gets
    view=View("game-card-and-sides", "Andar Bahar", usual_cards=6, usual_cards_at={"game": 1}),
    devices={"shoe": CARD_READERS},
    replay_overrides={"round_gap_seconds": 0.0, "betting_closes_on_first_card": True},
    optional_devices=SHUFFLER,
    fresh_deck_each_round=True,
    describe=describe_result,
    tile_result=tile_result,
    demo=Demo(studio_place=4, settings={"betting_seconds": 2.0, "round_gap_seconds": 1.0}, decks=1),
)
