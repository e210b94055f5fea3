"""The three blackjack variants as the shared card-game tests need them (the kit:
tests/helpers/card_game.py)."""

from __future__ import annotations

from typing import Any

from controller.games.blackjack.flow import FACE_DOWN
from tests.helpers.card_game import CardGameKit

#: the windows of every variant's integrity table
SHORT_WINDOWS = {"betting_seconds": 2, "round_gap_seconds": 1, "decision_seconds": 1, "insurance_seconds": 1}
#: the windows of every variant's positions table (no gap between rounds)
POSITIONS_WINDOWS = {**SHORT_WINDOWS, "round_gap_seconds": 0, "decision_seconds": 2}


def boxed_result_cards(data: dict[str, Any]) -> list[str]:
    return [card for hand in data["hands"] for card in hand["cards"]] + list(data["dealer"]["cards"])


def infinite_result_cards(data: dict[str, Any]) -> list[str]:
    return [*data["initial"], *data["sequence"], *data["dealer"]["cards"]]


def dealer_on_table(state: dict[str, Any]) -> list[str]:
    """The dealer's cards, the face-down one as the panel shows it."""
    return [*state["dealer"], *([FACE_DOWN] if state["dealer_face_down"] else [])]


def boxed_cards_on_table(state: dict[str, Any]) -> list[str]:
    return [*(card for box in state["boxes"] for card in box["cards"]), *dealer_on_table(state)]


def infinite_cards_on_table(state: dict[str, Any]) -> list[str]:
    burn = state["burn"]
    if burn is not None:  # a new shoe's burn: the shown card is all the table shows
        return [burn["shown"]] if burn["shown"] is not None else []
    return [*state["initial"], *state["sequence"], *dealer_on_table(state)]


CARD_GAMES: dict[str, CardGameKit] = {
    "blackjack": CardGameKit(
        settings={**SHORT_WINDOWS, "seats": 2, "decks": 1},
        result_cards=boxed_result_cards,
        cards_on_table=boxed_cards_on_table,
        position_tables={"blackjack two seats": {**POSITIONS_WINDOWS, "seats": 2}},
    ),
    "single_deck_blackjack": CardGameKit(
        settings=SHORT_WINDOWS,
        result_cards=boxed_result_cards,
        cards_on_table=boxed_cards_on_table,
        position_tables={"single_deck_blackjack": POSITIONS_WINDOWS},
    ),
    "infinite_blackjack": CardGameKit(
        settings={**SHORT_WINDOWS, "decks": 1, "burn_confirmation": False},
        result_cards=infinite_result_cards,
        cards_on_table=infinite_cards_on_table,
        position_tables={"infinite_blackjack": {**POSITIONS_WINDOWS, "burn_confirmation": False}},
    ),
}
