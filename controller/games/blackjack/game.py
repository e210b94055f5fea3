"""Live Blackjack to the rest of the controller (`GAME`), and what the blackjack tables with boxes share
there: their inputs, their replay policy and demo presets, how a result reads, and the demo's players."""

from __future__ import annotations

import random
from typing import Any

from controller.flow import Phase
from controller.games.blackjack.events import (
    BlackjackDecisionMade,
    BlackjackHandSettled,
    CardFaceDown,
    DealerPeek,
)
from controller.games.blackjack.flow import (
    BOXED_INPUTS,
    LiveBlackjackFlow,
    LiveBlackjackSettings,
    Seated,
    dealer_words,
)
from controller.games.spec import Demo, DemoInput, GameSpec, View

#: the events every blackjack table publishes (Infinite's too)
BLACKJACK_EVENTS = (CardFaceDown, DealerPeek, BlackjackDecisionMade, BlackjackHandSettled)
#: blackjack captures of device traffic only know nothing of the players: the disconnect policy decides
#: every hand at once (a decision window of 0 s on the capture's clock, so it is decided before the next
#: card), insurance is declined, and a card closes betting
BLACKJACK_REPLAY: dict[str, Any] = {
    "round_gap_seconds": 0.0,
    "betting_closes_on_first_card": True,
    "decision_seconds": 0.0,
    "insurance_seconds": 0.0,
}
BLACKJACK_DEMO: dict[str, Any] = {
    "betting_seconds": 1.5,
    "round_gap_seconds": 1.0,
    # the demo's players (`demo_players`) answer within about half a second; the policy decides after this
    "decision_seconds": 1.5,
    "insurance_seconds": 1.5,
}


def describe_result(data: dict[str, Any]) -> str:
    """One line for the demo."""
    dealer = data["dealer"]
    said = dealer_words(dealer)
    hands = "; ".join(
        f"box{hand['seat']}{'' if hand['hand'] == 1 else '-2'} {' '.join(hand['cards'])} ({hand['total']})"
        f" {hand['outcome']}"
        for hand in data["hands"]
    )
    return f"Dealer {' '.join(dealer['cards'])} ({said}) | {hands}"


def demo_players(table: dict[str, Any], rng: random.Random) -> list[DemoInput]:
    """What the demo's stand-in for the rules engine says now, from the table's public state (Live and
    Single-deck Blackjack): which boxes hold a bet while betting is open (Live's `seated`), an answer to
    insurance, and a plain player's decision for the hand whose turn it is (stand on 17 or more, double 10
    or 11, split a pair half the time, hit 11 or less, else hit or stand at random). The demo sends each
    key once; the table refuses what the rules do not allow, as it would from a real rules engine."""
    game, round_id = table["game_state"], table["round_id"]
    if round_id is None or table["paused"]:
        return []
    said: list[DemoInput] = []
    if game["game"] == "blackjack" and table["round_phase"] == Phase.BETTING_OPEN:
        seats = [box["seat"] for box in game["boxes"]]
        seated = sorted(rng.sample(seats, rng.randint(1, len(seats))))
        said.append((f"{round_id} seated", "seated", {"seats": seated}))
    for seat in game["insurance_offered_to"]:
        said.append((f"{round_id} insurance {seat}", "insurance", {"seat": seat, "take": rng.random() < 0.2}))
    turn = game["turn"]
    if turn is not None and turn["allowed"]:
        box = next(b for b in game["boxes"] if (b["seat"], b["hand"]) == (turn["seat"], turn["hand"]))
        allowed, total = turn["allowed"], turn["total"]
        if "split" in allowed and rng.random() < 0.5:
            action = "split"
        elif total >= 17:
            action = "stand"
        elif total in (10, 11) and "double" in allowed:
            action = "double"
        else:
            action = "hit" if total <= 11 else rng.choice(("hit", "stand"))
        key = f"{round_id} {turn['seat']}-{turn['hand']} after {len(box['cards'])} cards"
        said.append((key, action, {"seat": turn["seat"], "hand": turn["hand"]}))
    return said


GAME = GameSpec(
    flow=LiveBlackjackFlow,
    short="bj",
    settings=LiveBlackjackSettings,
    view=View("boxes", "Live Blackjack", usual_cards=3, usual_cards_at={"dealer": 5}),
    devices={"shoe": ("shoe-line",)},
    replay_overrides={**BLACKJACK_REPLAY, "auto_new_shoe": True},
    events=BLACKJACK_EVENTS,
    inputs={**BOXED_INPUTS, "seated": Seated},
    describe=describe_result,
    demo=Demo(
        studio_place=2,
        settings={**BLACKJACK_DEMO, "seats": 3},
        # the cut card some 30 cards in: the shoe's end (the dealer loads a new shoe and says so) within a
        # few rounds
        cut_position=386,
        players=demo_players,
    ),
)
