"""5 Card Stud as the shared card-game tests need it (the kit: tests/helpers/card_game.py)."""

from __future__ import annotations

from typing import Any

from tests.helpers.card_game import CardGameKit


def result_cards(data: dict[str, Any]) -> list[str]:
    return [card for hand in data["hands"] for card in hand["cards"]] + list(data["dealer"]["cards"])


def cards_on_table(state: dict[str, Any]) -> list[str]:
    return [*(card for hand in state["hands"] for card in hand), *state["dealer"]]


CARD_GAMES: dict[str, CardGameKit] = {
    "stud": CardGameKit(
        settings={"betting_seconds": 2, "round_gap_seconds": 1, "decision_seconds": 2},
        result_cards=result_cards,
        cards_on_table=cards_on_table,
        position_tables={
            "stud one hand": {"hands": 1, "betting_seconds": 2, "decision_seconds": 2},
            "stud three hands": {"hands": 3, "betting_seconds": 2, "decision_seconds": 2},
        },
    ),
}
