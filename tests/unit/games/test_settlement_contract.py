"""The `round.result` contract is complete: every bet the game pages name (docs/games) settles from the
result's data alone.

A small settlement function per bet, registered by game (`SETTLEMENTS`, in tests/helpers/settlement.py), takes
the `round.result` event's `data` exactly as a subscriber receives it (JSON, through `json.loads`) and the bet
as the player placed it (`Bet`: its name and the player's own choices, which are the rules engine's and never
in a result). It returns the net win per unit staked as an exact fraction: 11 for 11:1, -1 for a lost bet, 0
for a push or a void.
If a bet could not be settled without asking the controller something, its function could not be written
there: that is the proof. Payouts are the rules engine's business; they are written there only to show that
the facts they depend on are in the result. Where a game's rules give no payout, the assumption is said.

The results come from the games' own code (the flows and their result builders), so a change in a result
model that drops a fact a bet needs fails here.

Cross-check: Andar Bahar's RTPs by exact enumeration over a 52-card deck, with these settlement functions:
97.851% with commission, 98.589% without (docs/games/andar_bahar.md publishes 97.87% / 98.61%).

Blackjack: Live and Single-deck settle per box (`bet.params["box"]`, and `"hand"` for one hand of a split
box) from the result's hands: their outcome against the dealer, doubled, split, surrendered, insured. Infinite
Blackjack publishes one common hand; each player's main bet settles from `initial`, the common `sequence` and
the player's own decisions in `bet.params` (how many of the sequence's cards each hand took, doubled, split,
surrendered), its side bets from the initial cards, the dealer's up card and bust hand, and `round_in_shoe`
(a side bet closes after its round of the shoe). A decision the published cards make impossible is refused.
Sic bo (whose rules, docs/games/sicbo.md, give no payouts) settles to win or lose, a single number to the dice
showing it; its check over all 216 outcomes is tests/unit/games/sicbo/test_sicbo_settlement.py.

Adding a game: put its settlement functions in `SETTLEMENTS` (tests/helpers/settlement.py) under its game name
(the result's `game`) and results of its own in a test; `test_every_card_game_has_its_settlements` fails until
a card game has them.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from typing import Any

import pytest

from controller.cards import Card
from controller.games import GAMES
from controller.games.andar_bahar.flow import andar_bahar_result
from controller.games.baccarat import BaccaratFlow, BaccaratSettings
from controller.games.card_flow import CardFlow
from controller.games.stud.flow import stud_result
from controller.testing.card_table import DrivesCardFlow
from tests.helpers.blackjack_table import Table as BlackjackTable
from tests.helpers.blackjack_table import ready_infinite
from tests.helpers.settlement import BUCKET_PAYOUTS, SETTLEMENTS, Bet, Result, as_published, settle

pytestmark = pytest.mark.unit

# --- the registry covers what exists ----------------------------------------------------------------------


def test_every_card_game_has_its_settlements() -> None:
    card_games = {name for name, spec in GAMES.items() if issubclass(spec.flow, CardFlow)}
    missing = card_games - set(SETTLEMENTS)
    assert not missing, f"add the settlement functions of {sorted(missing)} to SETTLEMENTS"
    assert set(SETTLEMENTS) <= set(GAMES)


# --- baccarat -----------------------------------------------------------------------------------------------


@dataclass
class BaccaratTable(DrivesCardFlow):
    flow: BaccaratFlow = field(
        default_factory=lambda: BaccaratFlow("b1", BaccaratSettings(betting_closes_on_first_card=True))
    )
    now: float = 1_700_000_000.0
    seq: int = 0

    def hand(self, *codes: str) -> Result:
        self.tick(5)
        results = [e.data for code in codes for e in self.card(code).events if e.type == "round.result"]
        assert len(results) == 1, "the hand is not complete"
        return json.loads(json.dumps(results[0]))


@pytest.mark.parametrize(
    ("cards", "expected"),
    [
        # player 9S KH (9, natural) v banker 3D 2C (5): player wins
        (
            ("9S", "3D", "KH", "2C"),
            {"player": 1, "banker": -1, "tie": -1, "player_pair": -1, "banker_pair": -1},
        ),
        # player 4S 4H (8, a pair) v banker 6D 2C (8): tie, player pair
        (
            ("4S", "6D", "4H", "2C"),
            {"player": 0, "banker": 0, "tie": 8, "player_pair": 11, "banker_pair": -1},
        ),
        # player 2S 3H (5) draws 4D (9); banker KD KC (0, a pair) draws 7S: banker 7 loses
        (
            ("2S", "KD", "3H", "KC", "4D", "7S"),
            {"player": 1, "banker": -1, "tie": -1, "player_pair": -1, "banker_pair": 11},
        ),
        # player TS 6H (6) stands; banker 2D 3C (5) draws 2S: banker 7 wins at 0.95:1
        (
            ("TS", "2D", "6H", "3C", "2S"),
            {"player": -1, "banker": Fraction(19, 20), "tie": -1, "player_pair": -1, "banker_pair": -1},
        ),
    ],
)
def test_every_baccarat_bet_settles_from_the_result(cards: Sequence[str], expected: dict[str, Any]) -> None:
    result = BaccaratTable().hand(*cards)
    assert {name: settle(result, Bet(name)) for name in SETTLEMENTS["baccarat"]} == expected


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
