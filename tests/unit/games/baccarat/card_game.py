"""Baccarat as the shared card-game tests need it (the kit: tests/helpers/card_game.py)."""

from __future__ import annotations

from typing import Any

from tests.helpers.card_game import CardGameKit


def result_cards(data: dict[str, Any]) -> list[str]:
    return [*data["player"]["cards"], *data["banker"]["cards"]]


def cards_on_table(state: dict[str, Any]) -> list[str]:
    return [*state["player"], *state["banker"]]


CARD_GAMES: dict[str, CardGameKit] = {
    "baccarat": CardGameKit(
        settings={"betting_seconds": 2, "round_gap_seconds": 1, "decks": 1},
        result_cards=result_cards,
        cards_on_table=cards_on_table,
        position_tables={
            "baccarat": {"betting_seconds": 2, "round_gap_seconds": 0},
            "baccarat first card": {"betting_closes_on_first_card": True, "round_gap_seconds": 0},
        },
    ),
}
