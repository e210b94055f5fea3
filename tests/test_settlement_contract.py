"""The `round.result` contract is complete: every bet the seeds name settles from the result's data alone.

A small settlement function per bet, registered by game (`SETTLEMENTS`), takes the `round.result` event's
`data` exactly as a subscriber receives it (JSON, through `json.loads`) and the bet as the player placed it
(`Bet`: its name and the player's own choices, which are the rules engine's and never in a result). It returns
the net win per unit staked as an exact fraction: 11 for 11:1, -1 for a lost bet, 0 for a push or a void.
If a bet could not be settled without asking the controller something, its function could not be written
here: that is the proof. Payouts are the rules engine's business; they are written here only to show that
the facts they depend on are in the result. Where a seed gives no payout, the assumption is said.

The results come from the games' own code (the flows and their result builders), so a change in a result
model that drops a fact a bet needs fails here.

Cross-check: Andar Bahar's RTPs by exact enumeration over a 52-card deck, with these settlement functions:
97.851% with commission, 98.589% without (the seed publishes 97.87% / 98.61%).

Adding a game: put its settlement functions in `SETTLEMENTS` under its game name (the result's `game`) and
results of its own in a test; `test_every_card_game_has_its_settlements` fails until a card game has them.
TODO(lead, blackjack): the blackjack result models have not landed in this branch. When they do, the
blackjack engineer adds (one function per bet, `(result: Result, bet: Bet) -> Fraction`):
  "blackjack" (Live Blackjack, seed 000), per box and hand (`bet.params`: box, hand):
      main(result, bet) - 3:2 blackjack, 1:1 win, push; doubled / split from the result's hand flags;
      bet_behind(result, bet) - main() of the box it backs (`bet.params["box"]`), nothing else;
      pair(result, bet) - first two cards of the box: mixed 6:1, coloured 12:1, perfect 25:1;
      insurance(result, bet) - 2:1 when the dealer has blackjack (allowed with a player blackjack);
  "infinite_blackjack" (seed 002): main (the player's own decisions in `bet.params`, applied to the common
      cards: the result must hold the common sequence of further cards), pair (mixed 5:1, same colour 10:1,
      perfect 30:1), bust_bonus (dealer bust, by its number of cards: 3 1:1, 4 2:1, 5 9:1, 6 50:1, 7 100:1,
      8+ 250:1), lucky_trio (19/20 2:1, 21 3:1, suited 21 10:1, 6-7-8 30:1, 7-7-7 50:1, suited 6-7-8 100:1,
      suited 7-7-7 200:1), poker_trio (flush 5:1, straight 10:1, trips 30:1, straight flush 40:1, suited
      trips 100:1), insurance; each side bet void past its maximum round in the shoe (round number in result);
  "single_deck_blackjack" (seed 004): main (one box; split by value), insurance (not against a blackjack).
Sic bo's engineer adds "sic_bo" the same way (big/small, totals, triples, doubles, combinations, singles).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb
from typing import Any

import pytest

from controller.cards import Card
from controller.events import EventData, make_event
from controller.games import GAMES
from controller.games.andar_bahar import andar_bahar_result
from controller.games.baccarat import BaccaratFlow, BaccaratSettings
from controller.games.card_flow import CardFlow
from controller.games.stud import stud_result
from tests.card_table import DrivesCardFlow

Result = Mapping[str, Any]


@dataclass(frozen=True)
class Bet:
    """A bet as placed: its name and the player's own choices (a bucket, a hand, bet or fold, a mode)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


Settle = Callable[[Result, Bet], Fraction]
LOSE, PUSH = Fraction(-1), Fraction(0)


def wins(condition: bool, payout: Fraction | int) -> Fraction:
    return Fraction(payout) if condition else LOSE


# --- baccarat (seed 000: BankerPair / PlayerPair 11:1; the main bets' payouts are not in the seeds) -------
# Assumed, as usual for punto banco: Player 1:1, Banker 0.95:1 (5% commission), Tie 8:1; Player and Banker
# are pushed on a tie. The seeds name no baccarat side bet besides the two pairs.


def baccarat_player(result: Result, bet: Bet) -> Fraction:
    return PUSH if result["winner"] == "tie" else wins(result["winner"] == "player", 1)


def baccarat_banker(result: Result, bet: Bet) -> Fraction:
    return PUSH if result["winner"] == "tie" else wins(result["winner"] == "banker", Fraction(95, 100))


def baccarat_tie(result: Result, bet: Bet) -> Fraction:
    return wins(result["winner"] == "tie", 8)


def baccarat_player_pair(result: Result, bet: Bet) -> Fraction:
    return wins(result["player_pair"], 11)


def baccarat_banker_pair(result: Result, bet: Bet) -> Fraction:
    return wins(result["banker_pair"], 11)


# --- Andar Bahar (seed 003) ------------------------------------------------------------------------------
# `bet.params["mode"]`: "commission" (Andar 0.9:1) or "no_commission" (Andar 0.25:1 on the first card, else
# 1:1; the side bets 1st Andar / 1st Bahar and First 3 are not offered in it).

BUCKET_PAYOUTS = {
    "1-5": 2,
    "6-10": 3,
    "11-15": 4,
    "16-20": 5,
    "21-25": 8,
    "26-30": 12,
    "31-35": 20,
    "36-40": 40,
    "41-45": 110,
    "46-49": 800,
}
FIRST_THREE_PAYOUTS = {"straight_flush": 120, "straight": 8, "flush": 5}


def andar(result: Result, bet: Bet) -> Fraction:
    if result["winner"] != "andar":
        return LOSE
    if bet.params.get("mode", "commission") == "commission":
        return Fraction(9, 10)
    return Fraction(1, 4) if result["first_andar_match"] else Fraction(1)


def bahar(result: Result, bet: Bet) -> Fraction:
    return wins(result["winner"] == "bahar", 1)


def first_andar(result: Result, bet: Bet) -> Fraction:
    return wins(result["first_andar_match"], 15)


def first_bahar(result: Result, bet: Bet) -> Fraction:
    return wins(result["first_bahar_match"], Fraction(31, 2))


def first_three(result: Result, bet: Bet) -> Fraction:
    pattern = result["first_three"]  # null with fewer than three cards: the bet loses
    return wins(pattern is not None, FIRST_THREE_PAYOUTS.get(pattern or "", 0))


def cards_dealt(result: Result, bet: Bet) -> Fraction:
    bucket = bet.params["bucket"]
    return wins(result["bucket"] == bucket, BUCKET_PAYOUTS[bucket])


# --- 5 Card Stud (seed 000) ------------------------------------------------------------------------------
# Per player hand (`bet.params["hand"]`, 0-based; one common hand: 0) and the player's own decision
# (`bet.params["decision"]`: "bet" or "fold"). Ante: even money on a win (also when the dealer does not
# qualify), lost to the dealer's better hand or a fold. The raise (2x ante) is void when the dealer does not
# qualify; the seed names no raise paytable: the usual one by the player's category is assumed here, to show
# the result carries the category it needs. Jackpot: a flush or better wins its tier, whatever the table
# result; the amount is the pool's (the rules engine's), so it settles to the tier.

RAISE_PAYOUTS = {
    "high_card": 1,
    "one_pair": 1,
    "two_pair": 2,
    "three_of_a_kind": 3,
    "straight": 4,
    "flush": 5,
    "full_house": 7,
    "four_of_a_kind": 20,
    "straight_flush": 50,
    "royal_flush": 100,
}
JACKPOT_TIERS = ("flush", "full_house", "four_of_a_kind", "straight_flush", "royal_flush")


def _stud_outcome(result: Result, bet: Bet) -> str:
    return str(result["outcomes"][bet.params.get("hand", 0)])


def stud_ante(result: Result, bet: Bet) -> Fraction:
    if bet.params["decision"] == "fold":
        return LOSE
    outcome = _stud_outcome(result, bet)
    if not result["dealer_qualifies"]:
        return Fraction(1)
    return {"win": Fraction(1), "tie": PUSH, "lose": LOSE}[outcome]


def stud_raise(result: Result, bet: Bet) -> Fraction:
    """Per unit of the raise itself (twice the ante)."""
    if bet.params["decision"] == "fold":
        return PUSH  # never placed
    if not result["dealer_qualifies"]:
        return PUSH  # void: returned
    outcome = _stud_outcome(result, bet)
    category = result["hands"][bet.params.get("hand", 0)]["category"]
    return {"win": Fraction(RAISE_PAYOUTS[category]), "tie": PUSH, "lose": LOSE}[outcome]


def stud_jackpot_tier(result: Result, bet: Bet) -> str | None:
    category = result["hands"][bet.params.get("hand", 0)]["category"]
    return category if category in JACKPOT_TIERS else None


SETTLEMENTS: dict[str, dict[str, Callable[[Result, Bet], Any]]] = {
    "baccarat": {
        "player": baccarat_player,
        "banker": baccarat_banker,
        "tie": baccarat_tie,
        "player_pair": baccarat_player_pair,
        "banker_pair": baccarat_banker_pair,
    },
    "andar_bahar": {
        "andar": andar,
        "bahar": bahar,
        "first_andar": first_andar,
        "first_bahar": first_bahar,
        "first_three": first_three,
        "cards_dealt": cards_dealt,
    },
    "stud": {"ante": stud_ante, "raise": stud_raise, "jackpot": stud_jackpot_tier},
    # TODO(lead): "blackjack", "infinite_blackjack", "single_deck_blackjack" (see the module docstring),
    # and "sic_bo", by their engineers, once their result models are in.
}


def settle(result: Result, bet: Bet) -> Any:
    return SETTLEMENTS[result["game"]][bet.name](result, bet)


def as_published(result: EventData) -> Result:
    """The result's data exactly as an MQTT subscriber gets it: the event's data, through JSON."""
    data: Result = json.loads(json.dumps(make_event("round.result", result, 0.0).data))
    return data


# --- the registry covers what exists ----------------------------------------------------------------------


def test_every_card_game_has_its_settlements() -> None:
    card_games = {name for name, spec in GAMES.items() if issubclass(spec.flow_class(), CardFlow)}
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


def test_the_seeds_first_example_andar_on_the_first_card() -> None:
    result = ab_result("KS", "KC", "")
    # "$10 x 0.25 = $2.5" (no commission), "$50 x 0.9 = 45" (commission), "1st Andar $20 x 15 = $300"
    assert 10 * settle(result, Bet("andar", NO_COMMISSION)) == Fraction(5, 2)
    assert 50 * settle(result, Bet("andar", COMMISSION)) == 45
    assert 20 * settle(result, Bet("first_andar")) == 300
    assert settle(result, Bet("first_bahar")) == -1
    assert settle(result, Bet("first_three")) == -1  # fewer than three cards: the bet loses
    assert settle(result, Bet("cards_dealt", {"bucket": "1-5"})) == 2


def test_the_seeds_second_example_first_three_straight_and_seven_cards() -> None:
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
    # the seed's published maxima, to within its rounding (0.02 points)
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
