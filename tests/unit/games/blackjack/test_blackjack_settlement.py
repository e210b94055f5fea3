"""The blackjack variants' bets settle from the result's data alone (the contract:
tests/unit/games/test_settlement_contract.py; the functions: tests/unit/games/blackjack/settlement.py).

Blackjack: Live and Single-deck settle per box (`bet.params["box"]`, and `"hand"` for one hand of a split
box) from the result's hands: their outcome against the dealer, doubled, split, surrendered, insured. Infinite
Blackjack publishes one common hand; each player's main bet settles from `initial`, the common `sequence` and
the player's own decisions in `bet.params` (how many of the sequence's cards each hand took, doubled, split,
surrendered), its side bets from the initial cards, the dealer's up card and bust hand, and `round_in_shoe`
(a side bet closes after its round of the shoe). A decision the published cards make impossible is refused.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest

from tests.helpers.blackjack_table import Table as BlackjackTable
from tests.helpers.blackjack_table import ready_infinite
from tests.helpers.settlement import Bet, Result
from tests.unit.games.blackjack.settlement import SETTLEMENTS, settle

pytestmark = pytest.mark.unit


# --- blackjack: rounds played through the flows -------------------------------------------------------------


def last_result(table: BlackjackTable) -> Result:
    results = [data for kind, data in table.log if kind == "round.result"]
    assert results, "the round is not complete"
    data: Result = json.loads(json.dumps(results[-1]))
    return data


def live_table(seats: int, **settings: Any) -> BlackjackTable:
    table = BlackjackTable("blackjack", {"seats": seats, **settings})
    table.open_round()
    return table


def test_live_blackjack_pays_3_to_2_doubles_and_splits_and_bet_behind_follows_its_box() -> None:
    table = live_table(3)
    # box1 A K (blackjack), box2 8H 8D, box3 5C 6C (11); the dealer's 6 cannot make blackjack
    table.deal("AS", "8H", "5C", "6H", "KD", "8D", "6C")
    table.send("split", seat=2)
    table.deal("3S")  # box2 hand 1: 8 3
    table.send("double", seat=2)
    table.deal("9H")  # 8 3 9 = 20, doubled
    table.deal("2C")  # box2 hand 2: 8 2
    table.send("hit", seat=2, hand=2)
    table.deal("TC")  # 8 2 T = 20
    table.send("stand", seat=2, hand=2)
    table.send("double", seat=3)
    table.deal("4D")  # box3 5 6 4 = 15, doubled
    table.deal("TD", "3D")  # dealer 6 T 3 = 19
    result = last_result(table)
    assert result["dealer"]["total"] == 19
    main = {box: settle(result, Bet("main", {"box": box})) for box in (1, 2, 3)}
    assert main == {1: Fraction(3, 2), 2: 2 + 1, 3: -2}
    assert settle(result, Bet("main", {"box": 2, "hand": 1})) == 2  # doubled 20 beats 19
    assert settle(result, Bet("main", {"box": 2, "hand": 2})) == 1
    assert [settle(result, Bet("bet_behind", {"box": box})) for box in (1, 2, 3)] == list(main.values())
    # Pair: the box's first two cards, a split box's too (8H 8D: both red)
    assert [settle(result, Bet("pair", {"box": box})) for box in (1, 2, 3)] == [-1, 12, -1]
    with pytest.raises(ValueError, match="did not take insurance"):
        settle(result, Bet("insurance", {"box": 1}))


def test_live_dealer_blackjack_without_a_hole_card_insurance_and_a_perfect_pair() -> None:
    table = live_table(3)
    table.deal("AS", "5D", "9S", "AH", "KD", "6C", "9S")  # box1 blackjack, box2 11, box3 9S 9S
    table.send("insurance", seat=1)
    table.send("insurance", seat=2, take=False)
    table.send("insurance", seat=3, take=False)
    table.send("double", seat=2)
    table.deal("2H")  # 13, doubled
    table.send("stand", seat=3)  # 18
    table.deal("KS")  # the dealer's second card: A K, blackjack
    result = last_result(table)
    assert result["dealer"]["blackjack"]
    assert [settle(result, Bet("main", {"box": box})) for box in (1, 2, 3)] == [0, -2, -1]
    assert settle(result, Bet("bet_behind", {"box": 2})) == -2
    # taken with a blackjack: allowed (docs/games/blackjack.md)
    assert settle(result, Bet("insurance", {"box": 1})) == 2
    assert settle(result, Bet("pair", {"box": 3})) == 25
    assert settle(result, Bet("pair", {"box": 2})) == -1


def test_live_insurance_lost_when_every_box_is_done_the_dealer_still_shows_the_second_card() -> None:
    table = live_table(1)
    table.deal("TS", "AC", "6D")  # 16 under an ace
    table.send("insurance", seat=1)
    table.send("hit", seat=1)
    table.deal("KH")  # bust: no hand stands, but the insurance waits on the dealer's second card
    table.deal("5C")
    result = last_result(table)
    assert result["dealer"]["cards"] == ["AC", "5C"]
    assert settle(result, Bet("main", {"box": 1})) == -1
    assert settle(result, Bet("insurance", {"box": 1})) == -1


def test_live_surrender_where_the_studio_offers_it_loses_half() -> None:
    table = live_table(1, surrender=True)
    table.deal("TS", "TC", "6D")
    table.send("surrender", seat=1)
    result = last_result(table)
    assert settle(result, Bet("main", {"box": 1})) == Fraction(-1, 2)
    assert settle(result, Bet("bet_behind", {"box": 1})) == Fraction(-1, 2)


def single_deck_round(*codes: str) -> BlackjackTable:
    table = BlackjackTable("single_deck_blackjack")
    table.open_round()
    table.deal(*codes)
    return table


def test_single_deck_split_by_value_the_21_after_a_split_is_no_blackjack() -> None:
    table = single_deck_round("JS", "6H", "KD", "9C")  # J K: the same value; dealer 6 + 9 face down
    table.send("split", seat=1)
    table.deal("AS")  # J A: 21, stands by itself, pays 1:1
    table.deal("QS")  # K Q: 20
    table.send("stand", seat=1, hand=2)
    table.deal("5D")  # dealer 6 9 5 = 20
    result = last_result(table)
    assert settle(result, Bet("main")) == 1 + 0
    assert (settle(result, Bet("main", {"hand": 1})), settle(result, Bet("main", {"hand": 2}))) == (1, 0)


def test_single_deck_double_blackjack_and_insurance() -> None:
    doubled = single_deck_round("6S", "6H", "4D", "9C")  # 10 against a 6
    doubled.send("double", seat=1)
    doubled.deal("TC", "8S")  # 20; dealer 6 9 8 = 23
    assert settle(last_result(doubled), Bet("main")) == 2

    # no insurance offered to a blackjack (docs/games/single_deck_blackjack.md)
    blackjack = single_deck_round("AS", "AH", "KD", "9C")
    result = last_result(blackjack)
    assert settle(result, Bet("main")) == Fraction(3, 2)
    with pytest.raises(ValueError, match="did not take insurance"):
        settle(result, Bet("insurance"))

    insured = BlackjackTable("single_deck_blackjack")
    insured.open_round()
    insured.deal("9S", "AC", "7D", "KH")
    insured.send("insurance", seat=1)  # the peek follows the answer: A K, the round ends
    result = last_result(insured)
    assert (settle(result, Bet("main")), settle(result, Bet("insurance"))) == (-1, 2)


# --- Infinite Blackjack: one common hand, every player's own decisions --------------------------------------


def infinite_round(*codes: str, cards_asked: int = 0, dealer: Sequence[str] = ()) -> Result:
    """One round on a fresh shoe: the initial four cards, `cards_asked` common cards asked for (the first
    of `dealer` onward dealt to them), players done, the dealer's cards."""
    table = ready_infinite()
    table.deal(*codes)
    if table.flow.stage == "insurance":
        table.send("players_done")
    further = list(dealer)
    for _ in range(cards_asked):
        table.send("deal_card")
        table.deal(further.pop(0))
    if table.flow.stage == "decisions":
        table.send("players_done")
    table.deal(*further)
    return last_result(table)


def test_infinite_main_bet_settles_each_players_decisions_on_the_common_cards() -> None:
    # 8 8 against a 9 (7 face down); four common cards; the dealer's 16 takes a 4: 20
    result = infinite_round("8S", "9H", "8D", "7S", cards_asked=4, dealer=["3C", "TD", "2H", "5S", "4D"])
    assert result["sequence"] == ["3C", "TD", "2H", "5S"] and result["dealer"]["total"] == 20
    main = SETTLEMENTS["infinite_blackjack"]["main"]
    assert main(result, Bet("main", {"took": 0})) == -1  # 16
    assert main(result, Bet("main", {"took": 1})) == -1  # 19
    assert main(result, Bet("main", {"took": 1, "doubled": True})) == -2
    assert main(result, Bet("main", {"took": 2})) == -1  # 8 8 3 T: bust
    assert main(result, Bet("main", {"surrender": True})) == Fraction(-1, 2)  # a 9 up: allowed
    # split: hand 1 8 3, doubled: 8 3 T = 21; hand 2 takes the next cards: 8 2 5 = 15
    split = {"split": [{"took": 2, "doubled": True}, {"took": 2}]}
    assert main(result, Bet("main", split)) == 2 - 1
    # hand 1 8 3 T 21 stands; hand 2 8 2 then stands at 10
    assert main(result, Bet("main", {"split": [{"took": 2}, {"took": 1}]})) == 1 - 1


@pytest.mark.parametrize(
    ("params", "refusal"),
    [
        ({"split": [{"took": 2}, {"took": 3}]}, "holds 4 card"),  # 8 2 5 wants a fifth common card
        ({"took": 3}, "takes no more cards"),  # 8 8 3 T is bust: no fifth card
        ({"took": 2, "doubled": True}, "exactly one card"),
        ({"split": [{"took": 3}, {"took": 1}]}, "takes no more cards"),  # 8 3 T is 21
        ({"split": [{"took": 2}, {"took": 0}]}, "second card from the sequence"),
    ],
)
def test_infinite_decisions_the_common_cards_make_impossible_are_refused(
    params: dict[str, Any], refusal: str
) -> None:
    result = infinite_round("8S", "9H", "8D", "7S", cards_asked=4, dealer=["3C", "TD", "2H", "5S", "4D"])
    with pytest.raises(ValueError, match=refusal):
        settle(result, Bet("main", params))


def test_infinite_dealer_blackjack_insurance_and_a_player_blackjack_pushes() -> None:
    result = infinite_round("AS", "AH", "KD", "KS")  # player A K, dealer A K: peeked, the round ends
    assert result["dealer"]["blackjack"] and result["sequence"] == []
    assert settle(result, Bet("main", {"took": 0})) == 0
    assert settle(result, Bet("insurance")) == 2
    with pytest.raises(ValueError, match="no surrender"):
        settle(result, Bet("main", {"surrender": True}))

    nines = infinite_round("9S", "AH", "9D", "KS")  # 18 against a dealer blackjack
    assert settle(nines, Bet("main", {"took": 0})) == -1
    assert settle(nines, Bet("insurance")) == 2
    with pytest.raises(ValueError, match="holds 0 card"):
        settle(nines, Bet("main", {"split": [{"took": 1}, {"took": 1}]}))  # the round ended at the peek

    no_blackjack = infinite_round("9S", "AC", "9D", "6C")  # soft 17 stands (Infinite)
    assert settle(no_blackjack, Bet("insurance")) == -1
    assert settle(no_blackjack, Bet("main", {"took": 0})) == 1  # 18 against 17
    with pytest.raises(ValueError, match="second card from the sequence"):
        settle(no_blackjack, Bet("main", {"split": [{"took": 0}, {"took": 0}]}))  # nobody asked for one
    with pytest.raises(ValueError, match="not a pair"):
        settle(result, Bet("main", {"split": [{"took": 0}, {"took": 0}]}))  # A K


@pytest.mark.parametrize(
    ("dealer", "payout"),
    [
        (["6D", "TC", "KC"], 1),
        (["2D", "TC", "4C", "TD"], 2),
        (["2D", "2C", "2H", "TC", "TD"], 9),
        (["2D", "2C", "2H", "2S", "8C", "TD"], 50),
        (["2D", "2C", "2H", "2S", "2D", "6C", "TD"], 100),
        (["2D", "2C", "2H", "2S", "2D", "2C", "4C", "TD"], 250),
        (["2D", "2C", "2H", "2S", "2D", "2C", "2H", "2S", "TD"], 250),
        (["6D", "TC", "AC"], -1),  # 17: no bust
    ],
)
def test_infinite_bust_bonus_pays_by_the_dealers_number_of_cards(dealer: list[str], payout: int) -> None:
    up, hole, *draws = dealer
    result = infinite_round("9S", up, "9H", hole, dealer=draws)
    assert result["dealer"]["cards"] == dealer
    assert settle(result, Bet("bust_bonus")) == payout


# (player's two cards, dealer's up card, the hole card and the dealer's draws to a standing hand)
TRIO_ROUNDS = {
    "suited 7-7-7": ("7S 7S", "7S", "TS"),
    "7-7-7": ("7S 7H", "7D", "TS"),
    "suited 6-7-8": ("6H 7H", "8H", "9H"),
    "6-7-8": ("6H 7C", "8H", "9H"),
    "suited 21": ("9H 2H", "TH", "7C"),
    "21": ("9H 2C", "TH", "7C"),
    "21 with two aces": ("AS AD", "9C", "8C"),
    "19": ("4S 5D", "KC", "7C"),
    "15": ("2S 3D", "KC", "7C"),
    "ace-low straight": ("AS 2D", "3C", "TC 4D"),
    "ace-high straight": ("QS KD", "AC", "6C"),
    "no straight round the corner": ("KS AD", "2C", "TC 5D"),
    "flush": ("2H 3H", "KH", "7C"),
}


def trio_round(name: str) -> Result:
    player, up, dealer = TRIO_ROUNDS[name]
    first, second = player.split()
    hole, *draws = dealer.split()
    return infinite_round(first, up, second, hole, dealer=draws)


@pytest.mark.parametrize(
    ("name", "lucky", "poker"),
    [
        ("suited 7-7-7", 200, 100),
        ("7-7-7", 50, 30),
        ("suited 6-7-8", 100, 40),
        ("6-7-8", 30, 10),
        ("suited 21", 10, 5),
        ("21", 3, -1),
        ("21 with two aces", 3, -1),
        ("19", 2, -1),
        ("15", -1, -1),
        ("ace-low straight", -1, 10),
        ("ace-high straight", 3, 10),  # Q K A is also 21
        ("no straight round the corner", -1, -1),
        ("flush", -1, 5),
    ],
)
def test_infinite_lucky_trio_and_poker_trio_pay_the_best_pattern_only(
    name: str, lucky: int, poker: int
) -> None:
    result = trio_round(name)
    assert (settle(result, Bet("lucky_trio")), settle(result, Bet("poker_trio"))) == (lucky, poker)


@pytest.mark.parametrize(
    ("player", "payout"),
    [("8S 8S", 30), ("8S 8C", 10), ("8H 8D", 10), ("8S 8D", 5), ("8S 9S", -1), ("KS TS", -1)],
)
def test_infinite_pair_on_the_two_initial_cards(player: str, payout: int) -> None:
    first, second = player.split()
    result = infinite_round(first, "9C", second, "8C")
    assert settle(result, Bet("pair")) == payout


def test_infinite_side_bets_close_after_their_round_of_the_shoe() -> None:
    """46 rounds of one shoe: the pair is offered up to round 40, the other side bets up to round 45; a side
    bet settled on a later round is void (its stake back). The main bet never closes."""
    table = ready_infinite()
    tens = itertools.cycle([rank + suit for rank in "TJQK" for suit in "SHDC"])
    holes = itertools.cycle([rank + suit for rank in "89" for suit in "SHDC"])
    small = itertools.cycle([rank + suit for rank in "23456" for suit in "SHDC"])
    suited_sevens = {40: "S", 41: "H", 45: "D", 46: "C"}
    results: dict[int, Result] = {}
    for number in range(1, 47):
        if number > 1:
            table.open_round()
        suit = suited_sevens.get(number)
        if suit is None:
            table.deal(next(small), next(tens), next(small), next(holes))  # the dealer stands on 18 or 19
            table.send("players_done")
            continue
        table.deal(f"7{suit}", f"7{suit}", f"7{suit}", f"5{suit}")  # every side bet wins: 7-7-7 suited
        table.send("players_done")
        table.deal(next(tens))  # the dealer's 12 busts with 3 cards
        results[number] = last_result(table)
        assert results[number]["round_in_shoe"] == number
    side_bets = ("pair", "lucky_trio", "poker_trio", "bust_bonus")

    def settled(number: int) -> list[Fraction]:
        return [settle(results[number], Bet(name)) for name in side_bets]

    assert settled(40) == [30, 200, 100, 1]
    assert settled(41) == [0, 200, 100, 1]
    assert settled(45) == [0, 200, 100, 1]
    assert settled(46) == [0, 0, 0, 0]
    assert settle(results[46], Bet("main", {"took": 0})) == 1
