"""Andar Bahar's bets settle from the result's data alone (the contract:
tests/unit/games/test_settlement_contract.py; the functions: tests/unit/games/andar_bahar/settlement.py).

Cross-check: Andar Bahar's RTPs by exact enumeration over a 52-card deck, with these settlement functions:
97.851% with commission, 98.589% without (docs/games/andar_bahar.md publishes 97.87% / 98.61%)."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from controller.cards import Card
from controller.games.andar_bahar.flow import andar_bahar_result
from tests.helpers.settlement import Bet, Result, as_published
from tests.unit.games.andar_bahar.settlement import BUCKET_PAYOUTS, settle

pytestmark = pytest.mark.unit


# --- Andar Bahar --------------------------------------------------------------------------------------------


def ab_result(game_card: str, andar_cards: str, bahar_cards: str) -> Result:
    andar_hand = [Card.parse(code) for code in andar_cards.split()]
    bahar_hand = [Card.parse(code) for code in bahar_cards.split()]
    return as_published(andar_bahar_result("ab1-0000001", Card.parse(game_card), andar_hand, bahar_hand))


COMMISSION, NO_COMMISSION = {"mode": "commission"}, {"mode": "no_commission"}


def test_the_rules_first_example_andar_on_the_first_card() -> None:
    result = ab_result("KS", "KC", "")
    # "$10 x 0.25 = $2.5" (no commission), "$50 x 0.9 = 45" (commission), "1st Andar $20 x 15 = $300"
    assert 10 * settle(result, Bet("andar", NO_COMMISSION)) == Fraction(5, 2)
    assert 50 * settle(result, Bet("andar", COMMISSION)) == 45
    assert 20 * settle(result, Bet("first_andar")) == 300
    assert settle(result, Bet("first_bahar")) == -1
    assert settle(result, Bet("first_three")) == -1  # fewer than three cards: the bet loses
    assert settle(result, Bet("cards_dealt", {"bucket": "1-5"})) == 2


def test_the_rules_second_example_first_three_straight_and_seven_cards() -> None:
    result = ab_result("KS", "AC 8D JH KD", "QS 7C 2H")
    assert settle(result, Bet("andar", COMMISSION)) == Fraction(9, 10)
    assert settle(result, Bet("andar", NO_COMMISSION)) == 1
    assert settle(result, Bet("bahar")) == -1
    assert 10 * settle(result, Bet("first_three")) == 80  # K-A-Q: a straight, 8:1
    assert 5 * settle(result, Bet("cards_dealt", {"bucket": "6-10"})) == 15  # "$5 x 3 = $15"
    assert settle(result, Bet("cards_dealt", {"bucket": "1-5"})) == -1


@pytest.mark.parametrize(
    ("three", "payout"),
    [(("5H", "6H", "7H"), 120), (("5H", "6D", "7H"), 8), (("2H", "9H", "KH"), 5), (("2H", "9H", "KD"), -1)],
)
def test_first_three_pays_by_pattern(three: tuple[str, str, str], payout: int) -> None:
    game, first_andar_card, first_bahar_card = three
    # the round goes on until the game card's rank comes (here on Andar's second card)
    result = ab_result(game, f"{first_andar_card} {game[0]}C", first_bahar_card)
    assert settle(result, Bet("first_three")) == payout


def test_a_first_bahar_match() -> None:
    result = ab_result("7S", "2D", "7H")
    assert (settle(result, Bet("bahar")), settle(result, Bet("first_bahar"))) == (1, Fraction(31, 2))
    assert settle(result, Bet("andar", NO_COMMISSION)) == -1


def match_at(k: int) -> Result:
    """A round whose first card of the game card's rank is the k-th card dealt (k = 1..49)."""
    others = [f"{rank}{suit}" for rank in "A23456789TJQ" for suit in "SHDC"][: k - 1]
    dealt = [*others, "KD"]
    return ab_result("KS", " ".join(dealt[0::2]), " ".join(dealt[1::2]))


def test_andar_bahar_rtp_by_exact_enumeration_over_one_deck() -> None:
    # After the game card, its rank's 3 other cards lie anywhere among the 51 left, all C(51, 3) ways alike:
    # the first of them is the k-th card dealt in C(51 - k, 2) of them. Every order of a 52-card deck is
    # counted by these weights, exactly.
    weights = {k: Fraction(comb(51 - k, 2), comb(51, 3)) for k in range(1, 50)}
    assert sum(weights.values()) == 1
    results = {k: match_at(k) for k in weights}
    assert all(results[k]["cards_dealt"] == k for k in weights)

    def rtp(bet: Bet) -> Fraction:
        return sum((w * (1 + settle(results[k], bet)) for k, w in weights.items()), Fraction(0))

    with_commission = rtp(Bet("andar", COMMISSION))
    without = rtp(Bet("andar", NO_COMMISSION))
    assert round(float(with_commission) * 100, 3) == 97.851
    assert round(float(without) * 100, 3) == 98.589
    # the published maxima (docs/games/andar_bahar.md), to within their rounding (0.02 points)
    assert abs(float(with_commission) * 100 - 97.87) < 0.025
    assert abs(float(without) * 100 - 98.61) < 0.025
    # the published RTP is the best main bet's: Bahar returns less in both modes
    assert rtp(Bet("bahar")) < with_commission < without
    # every bucket bet settles for every k, and exactly one bucket wins each round
    for result in results.values():
        winning = [b for b in BUCKET_PAYOUTS if settle(result, Bet("cards_dealt", {"bucket": b})) > 0]
        assert len(winning) == 1
