"""5 Card Stud's bets settle from the result's data alone (the contract:
tests/unit/games/test_settlement_contract.py; the functions: tests/unit/games/stud/settlement.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from controller.cards import Card
from controller.games.stud.flow import stud_result
from tests.helpers.settlement import Bet, Result, as_published
from tests.unit.games.stud.settlement import settle

pytestmark = pytest.mark.unit


# --- 5 Card Stud --------------------------------------------------------------------------------------------


def stud(hands: Sequence[str], dealer: str) -> Result:
    parsed = [[Card.parse(code) for code in hand.split()] for hand in hands]
    return as_published(stud_result("st1-0000001", parsed, [Card.parse(code) for code in dealer.split()]))


def test_stud_ante_and_raise_against_a_qualifying_dealer() -> None:
    result = stud(["2H 2D 9S 9C KH", "3S 5S 8S JS QS", "4C 6D 8H TC QC"], "AS KD 7C 5H 3D")
    assert result["dealer_qualifies"] is True
    bet, fold = {"decision": "bet"}, {"decision": "fold"}
    assert settle(result, Bet("ante", {**bet, "hand": 0})) == 1
    assert settle(result, Bet("raise", {**bet, "hand": 0})) == 2  # two pair
    assert settle(result, Bet("raise", {**bet, "hand": 1})) == 5  # flush
    assert settle(result, Bet("ante", {**bet, "hand": 2})) == -1  # queen high loses to ace-king
    assert settle(result, Bet("raise", {**bet, "hand": 2})) == -1
    assert settle(result, Bet("ante", {**fold, "hand": 0})) == -1
    assert settle(result, Bet("raise", {**fold, "hand": 0})) == 0


def test_stud_dealer_not_qualifying_pays_the_ante_and_voids_the_raise() -> None:
    result = stud(["2H 3D 9S TC KH"], "AS QD 7C 5H 3D")  # ace-queen: no ace-king
    assert result["dealer_qualifies"] is False
    assert settle(result, Bet("ante", {"decision": "bet"})) == 1
    assert settle(result, Bet("raise", {"decision": "bet"})) == 0


def test_stud_tie_pushes() -> None:
    result = stud(["AH KD 9S 5C 3H"], "AS KC 9D 5H 3C")
    assert result["outcomes"] == ["tie"]
    assert (
        settle(result, Bet("ante", {"decision": "bet"})),
        settle(result, Bet("raise", {"decision": "bet"})),
    ) == (
        0,
        0,
    )


@pytest.mark.parametrize(
    ("hand", "tier"),
    [
        ("3S 5S 8S JS QS", "flush"),
        ("2H 2D 2S 9C 9H", "full_house"),
        ("7H 7D 7S 7C 9H", "four_of_a_kind"),
        ("5D 6D 7D 8D 9D", "straight_flush"),
        ("TH JH QH KH AH", "royal_flush"),
        ("2H 3D 4S 5C 6H", None),  # a straight is below the jackpot
    ],
)
def test_stud_jackpot_pays_a_flush_or_better_whatever_the_table_result(hand: str, tier: str | None) -> None:
    result = stud([hand], "AS AC AD 4C 4D")  # the dealer's full house beats most of them
    assert settle(result, Bet("jackpot")) == tier
