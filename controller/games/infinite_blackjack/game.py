"""Infinite Blackjack to the rest of the controller (`GAME`): how a result reads, and the demo's players."""

from __future__ import annotations

import random
from typing import Any

from controller.cards import Card
from controller.games.blackjack.flow import dealer_words
from controller.games.blackjack.game import BLACKJACK_DEMO, BLACKJACK_EVENTS, BLACKJACK_REPLAY
from controller.games.blackjack_rules import hand_total, is_blackjack
from controller.games.infinite_blackjack.events import ShoeBurn
from controller.games.infinite_blackjack.flow import (
    BurnDone,
    DealCard,
    InfiniteBlackjackFlow,
    InfiniteBlackjackSettings,
)
from controller.games.spec import Demo, DemoInput, GameSpec, View


def _total_words(cards: list[Card]) -> str:
    total = hand_total(cards)
    if is_blackjack(cards):
        return "blackjack"
    return "bust" if total.bust else f"{'soft ' if total.soft else ''}{total.total}"


def describe_result(data: dict[str, Any]) -> str:
    """One line for the demo and the console. Every player shares the two first cards and takes the
    sequence's cards in order until they stand, so there is no one outcome to name: the common hand's total
    after each card is, against the dealer's ("a player who stood on 17 lost to 18")."""
    dealer = data["dealer"]
    said = dealer_words(dealer)
    hand = [Card.parse(code) for code in data["initial"]]
    steps = [f"{' '.join(data['initial'])} ({_total_words(hand)})"]
    for code in data["sequence"]:
        hand.append(Card.parse(code))
        steps.append(f"+{code} ({_total_words(hand)})")
    last = " (last of the shoe)" if data["last_round_of_shoe"] else ""
    return (
        f"round {data['round_in_shoe']}{last}: common hand {' '.join(steps)} | "
        f"dealer {' '.join(dealer['cards'])} ({said}); each player: where they stood vs the dealer"
    )


def demo_players(table: dict[str, Any], rng: random.Random) -> list[DemoInput]:
    """What the demo's stand-in for the rules engine says now (see `blackjack.demo_players`): insurance
    ends at once (`players_done`), and the common hand takes a card while some player would still hit
    (always at 11 or less, half the time at 12-16), then `players_done`."""
    game, round_id = table["game_state"], table["round_id"]
    if round_id is None or table["paused"] or game["waiting_for_card"]:
        return []
    if game["stage"] == "insurance":
        return [(f"{round_id} insurance", "players_done", {})]
    if game["stage"] != "decisions" or game["player_total"] is None:
        return []
    total, cards = game["player_total"], len(game["initial"]) + len(game["sequence"])
    more = total <= 11 or (total <= 16 and rng.random() < 0.5)
    return [(f"{round_id} after {cards} cards", "deal_card" if more else "players_done", {})]


GAME = GameSpec(
    flow=InfiniteBlackjackFlow,
    short="ibj",
    settings=InfiniteBlackjackSettings,
    view=View("cards-two-hands", "Infinite Blackjack", usual_cards=5, usual_cards_at={"burn": 1}),
    devices={"shoe": ("shoe-line",)},
    replay_overrides={**BLACKJACK_REPLAY, "auto_new_shoe": True, "burn_confirmation": False},
    events=(*BLACKJACK_EVENTS, ShoeBurn),
    inputs={"deal_card": DealCard, "burn_done": BurnDone},
    describe=describe_result,
    demo=Demo(
        studio_place=7,
        settings={**BLACKJACK_DEMO, "auto_new_shoe": True, "burn_confirmation": False},
        # 8 decks are 416 cards: the cut card some 30 cards in shows the shoe's end, the reshuffle and the
        # burn within a few rounds
        cut_position=386,
        players=demo_players,
    ),
)
