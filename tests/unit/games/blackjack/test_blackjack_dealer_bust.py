"""The dealer's rule, statistically: over a long simulated run through the Infinite Blackjack flow, the
dealer's bust frequency is within 4 sigma of the exact figure for an 8-deck shoe — 0.2818 standing on all 17s
(Infinite's rule), 0.2857 hitting soft 17 (the Live and Single-deck rule, run through the same flow with only
the dealer's rule changed). The exact figures are computed here too, from the composition of the shoe.

The two runs are paired: each round is dealt from the same slice of the same shuffled shoe under both rules,
so they differ only where the dealer reached a soft 17. That is what makes a few thousand rounds enough to
tell the two rules apart: the H17 run busts in exactly the rounds the S17 run did, plus the soft-17 rounds
where the extra card busts.
"""

from __future__ import annotations

import math
import random
from functools import cache
from typing import Any, ClassVar

import pytest

from controller.games.infinite_blackjack import InfiniteBlackjackFlow, InfiniteBlackjackSettings
from drivers.readings import CardSeen, CutCardSeen
from drivers.shoe.simulator import shuffled_shoe

pytestmark = pytest.mark.unit

ROUNDS = 12_000
SLICE = 20  # cards a round may take (the rest of its slice is set aside, unseen)
EXACT = {False: 0.2818, True: 0.2857}


class HitsSoft17(InfiniteBlackjackFlow):
    dealer_hits_soft_17: ClassVar[bool] = True


def exact_bust(hits_soft_17: bool, decks: int = 8) -> float:
    """P(the dealer busts) for a dealer hand drawn from a full shoe (a blackjack is a hand that does not)."""

    @cache
    def bust(counts: tuple[int, ...], hard: int, ace: bool, cards: int) -> float:
        best = hard + 10 if ace and hard + 10 <= 21 else hard
        soft = ace and hard + 10 <= 21
        if hard > 21:
            return 1.0
        if cards >= 2 and (best > 17 or (best == 17 and not (soft and hits_soft_17))):
            return 0.0
        left = sum(counts)
        total = 0.0
        for index, count in enumerate(counts):
            if count:
                rest = (*counts[:index], count - 1, *counts[index + 1 :])
                total += count / left * bust(rest, hard + index + 1, ace or index == 0, cards + 1)
        return total

    return bust((4 * decks,) * 9 + (16 * decks,), 0, False, 0)


def test_the_exact_figures() -> None:
    assert round(exact_bust(False), 4) == EXACT[False]
    assert round(exact_bust(True), 4) == EXACT[True]


def run(flow_class: type[InfiniteBlackjackFlow], seed: int) -> list[bool]:
    """Whether the dealer bust, round by round."""
    settings = InfiniteBlackjackSettings(
        betting_closes_on_first_card=True,
        round_gap_seconds=0.0,
        decision_seconds=0.0,
        insurance_seconds=0.0,
        auto_new_shoe=True,
        burn_confirmation=False,
    )
    flow = flow_class("stat", settings)
    rng = random.Random(seed)
    now = 1_700_000_000.0
    busts: list[bool] = []
    ref = 0

    def feed(card: str) -> list[Any]:
        nonlocal ref
        ref += 1
        return flow.on_reading(CardSeen(device="shoe", time=now, code=card, ref=str(ref)), now).events

    def settle() -> list[Any]:
        events = []
        while (deadline := flow.next_deadline()) is not None and deadline <= now:
            events += flow.on_tick(now).events
        return events

    while len(busts) < ROUNDS:
        shoe = shuffled_shoe(8, rng.randrange(2**32))
        settle()
        assert flow.stage == "burn"
        shown = shoe.pop()
        feed(shown)
        for _ in range(min(10, "A23456789TJQK".index(shown[0]) + 1)):
            feed(shoe.pop())
        slices = [shoe[i : i + SLICE] for i in range(0, len(shoe) - SLICE, SLICE)][:-2]
        for number, cards in enumerate(slices):
            events = []
            if number == len(slices) - 1:
                flow.on_reading(CutCardSeen(device="shoe", time=now, ref="cut"), now)
            for card in cards:
                events += settle()
                if any(e.type == "round.result" for e in events):
                    break  # the round is over: the rest of its slice is set aside
                events += feed(card)
            else:
                events += settle()
            results = [e.data for e in events if e.type == "round.result"]
            assert len(results) == 1, [e.type for e in events]
            busts.append(results[0]["dealer"]["bust"])
            now += 1.0
    return busts[:ROUNDS]


@pytest.mark.slow
def test_the_dealer_busts_as_often_as_the_rule_says_and_the_two_rules_are_told_apart() -> None:
    stands = run(InfiniteBlackjackFlow, seed=17)
    hits = run(HitsSoft17, seed=17)
    n = len(stands)
    for hits_soft_17, busts in ((False, stands), (True, hits)):
        p = EXACT[hits_soft_17]
        sigma = math.sqrt(p * (1 - p) / n)
        assert abs(sum(busts) / n - p) < 4 * sigma, (hits_soft_17, sum(busts) / n)
    # paired: hitting soft 17 only ever adds busts, and adds about as many as the figures differ by
    assert all(h or not s for s, h in zip(stands, hits, strict=True))
    extra = sum(hits) - sum(stands)
    expected = n * (EXACT[True] - EXACT[False])
    assert expected > 4 * 4 * math.sqrt(expected) / 4  # enough rounds: "no difference" lies beyond 4 sigma
    assert abs(extra - expected) < 4 * math.sqrt(expected), (extra, expected)
