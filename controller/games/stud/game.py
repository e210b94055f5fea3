"""5 Card Stud to the rest of the controller (`GAME`), and how its result reads."""

from __future__ import annotations

from typing import Any

from controller.games.spec import CARD_READERS, SHUFFLER, Demo, GameSpec, View
from controller.games.stud.flow import StudFlow, StudSettings


def describe_result(data: dict[str, Any]) -> str:
    """One line for the demo."""
    hands = "; ".join(
        f"{' '.join(hand['cards'])} {hand['category']} {outcome}"
        for hand, outcome in zip(data["hands"], data["outcomes"], strict=True)
    )
    dealer = data["dealer"]
    qualifies = "qualifies" if data["dealer_qualifies"] else "does not qualify"
    return f"Dealer {' '.join(dealer['cards'])} {dealer['category']} ({qualifies}) | {hands}"


GAME = GameSpec(
    flow=StudFlow,
    short="stud",
    settings=StudSettings,
    view=View("boxes", "5 Card Stud", usual_cards=5),
    devices={"shoe": CARD_READERS},
    replay_overrides={
        "round_gap_seconds": 0.0,
        "betting_closes_on_first_card": True,
        "decisions_end_on_dealer_card": True,
    },
    optional_devices=SHUFFLER,
    fresh_deck_each_round=True,
    describe=describe_result,
    demo=Demo(
        studio_place=6,
        settings={"hands": 3, "betting_seconds": 2.0, "decision_seconds": 2.0, "round_gap_seconds": 1.0},
        decks=1,
    ),
)
