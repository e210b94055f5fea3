"""Andar Bahar as the shared card-game tests need it (the kit: tests/helpers/card_game.py)."""

from __future__ import annotations

from typing import Any

from tests.helpers.card_game import CardGameKit


def result_cards(data: dict[str, Any]) -> list[str]:
    return [data["game_card"], *data["andar"], *data["bahar"]]


def cards_on_table(state: dict[str, Any]) -> list[str]:
    game_card = [state["game_card"]] if state["game_card"] is not None else []
    return [*game_card, *state["andar"], *state["bahar"]]


CARD_GAMES: dict[str, CardGameKit] = {
    "andar_bahar": CardGameKit(
        settings={"betting_seconds": 2, "round_gap_seconds": 1},
        result_cards=result_cards,
        cards_on_table=cards_on_table,
        position_tables={"andar_bahar": {"betting_seconds": 2, "round_gap_seconds": 0}},
        max_cards=90,  # a round deals up to 49 cards
    ),
}
