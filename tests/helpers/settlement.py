"""The settlement functions the `round.result` contract is proved with
(tests/unit/games/test_settlement_contract.py, and tests/unit/games/sicbo/test_sicbo_settlement.py for sic
bo's 216 outcomes): one per bet the game pages name, registered by game in `SETTLEMENTS`. Each takes a
`round.result` event's `data` as a subscriber receives it (JSON) and the bet as placed (`Bet`), and returns
the net win per unit staked as an exact fraction (sic bo: whether the bet wins, a single number how many dice
show it). They read nothing but the result: written without asking the controller anything. Where a game's
rules give no payout, the assumption is said."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from controller.events import EventData, make_event
from controller.testing.blackjack_reference import settle as bj_outcome
from controller.testing.blackjack_reference import total as bj_total
from controller.testing.blackjack_reference import value as bj_value

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


# --- baccarat (docs/games/baccarat.md: Player Pair / Banker Pair 11:1; no main bet's payout there) --------
# Assumed, as usual for punto banco: Player 1:1, Banker 0.95:1 (5% commission), Tie 8:1; Player and Banker
# are pushed on a tie. The rules name no baccarat side bet besides the two pairs.


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


# --- Andar Bahar (docs/games/andar_bahar.md) -------------------------------------------------------------
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


# --- 5 Card Stud (docs/games/stud.md) --------------------------------------------------------------------
# Per player hand (`bet.params["hand"]`, 0-based; one common hand: 0) and the player's own decision
# (`bet.params["decision"]`: "bet" or "fold"). Ante: even money on a win (also when the dealer does not
# qualify), lost to the dealer's better hand or a fold. The raise (2x ante) is void when the dealer does not
# qualify; the rules name no raise paytable: the usual one by the player's category is assumed here, to show
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


# --- blackjack: what every variant shares ------------------------------------------------------------------
# Per unit of the bet as placed. A hand's `outcome` is the controller's (against the dealer's finished hand);
# its payout is: blackjack 3:2, win 1:1, push 0, lose -1, surrender -1/2 (docs/games/infinite_blackjack.md:
# half the bet is lost). A doubled hand carries two units; each hand of a split box carries one (the split
# adds a bet equal to the first). Live Blackjack deals no hole card: a double or a split lost to a dealer
# blackjack found after the boxes played is lost in full (assumed; the rules (docs/games/blackjack.md) do not
# say, and `doubled` / `split` / `outcome` settle the "original bets only" variant as well).

MAIN_PAYOUTS = {
    "blackjack": Fraction(3, 2),
    "win": Fraction(1),
    "push": PUSH,
    "lose": LOSE,
    "surrender": Fraction(-1, 2),
}
RED_SUITS = frozenset("HD")


def pair_kind(first: str, second: str) -> str | None:
    """The two first cards of a hand as a Pair side bet sees them: the same rank (assumed: a king and a ten
    are no pair, as in the usual Perfect Pairs), then by their suits."""
    if first[0] != second[0]:
        return None
    if first[1] == second[1]:
        return "perfect"
    return "coloured" if (first[1] in RED_SUITS) == (second[1] in RED_SUITS) else "mixed"


def _box(result: Result, bet: Bet) -> list[Result]:
    """The hands of the box the bet is on (`bet.params["box"]`; Single-deck has only box 1), by hand."""
    seat = bet.params.get("box", 1)
    hands = [hand for hand in result["hands"] if hand["seat"] == seat]
    if not hands:
        raise ValueError(f"the result has no box {seat}")
    return sorted(hands, key=lambda hand: hand["hand"])


def boxed_main(result: Result, bet: Bet) -> Fraction:
    """The box's main bet, all its hands together; `bet.params["hand"]` settles one hand of a split box."""
    hands = _box(result, bet)
    if "hand" in bet.params:
        hands = [hand for hand in hands if hand["hand"] == bet.params["hand"]]
        if not hands:
            raise ValueError(f"box {bet.params.get('box', 1)} has no hand {bet.params['hand']}")
    return sum((MAIN_PAYOUTS[hand["outcome"]] * (2 if hand["doubled"] else 1) for hand in hands), PUSH)


def bet_behind(result: Result, bet: Bet) -> Fraction:
    """Bet Behind (docs/games/blackjack.md): the backed box's main bet, its doubles and splits followed
    (assumed: the rules say the backer cannot tell the player how to play, not whether a double or split is
    followed)."""
    return boxed_main(result, Bet("main", {"box": bet.params["box"]}))


def box_first_two(result: Result, bet: Bet) -> tuple[str, str]:
    """The box's first two cards: a split box's are the first card of each of its hands."""
    hands = _box(result, bet)
    if hands[0]["split"]:
        return hands[0]["cards"][0], hands[1]["cards"][0]
    return hands[0]["cards"][0], hands[0]["cards"][1]


LIVE_PAIR_PAYOUTS = {"mixed": 6, "coloured": 12, "perfect": 25}  # docs/games/blackjack.md


def live_pair(result: Result, bet: Bet) -> Fraction:
    kind = pair_kind(*box_first_two(result, bet))
    return wins(kind is not None, LIVE_PAIR_PAYOUTS.get(kind or "", 0))


def boxed_insurance(result: Result, bet: Bet) -> Fraction:
    """Per unit of the insurance stake (half the box's bet): 2:1 on a dealer blackjack. The box took it (its
    hands say `insured`), so the dealer's second card is in the result even when no hand stood (Live)."""
    if not _box(result, bet)[0]["insured"]:
        raise ValueError(f"box {bet.params.get('box', 1)} did not take insurance: there is no bet to settle")
    return wins(result["dealer"]["blackjack"], 2)


# --- Infinite Blackjack (docs/games/infinite_blackjack.md) ----------------------------------------------
# The main bet is each player's own: their decisions (`bet.params`) applied to the common cards, `initial`
# then `sequence` in dealing order, against the common dealer hand.
#   {"took": n, "doubled": bool}   the hand took the sequence's first n cards (a double: exactly one)
#   {"surrender": True}            before any action, the dealer's card not an ace or ten-valued: -1/2
#   {"split": [{"took": n, "doubled": bool}, {"took": m, "doubled": bool}]}  the initial pair split (same
#       value): each hand starts with one initial card and takes its cards from the sequence, the first
#       hand from the sequence's start, the second from where the first stopped (assumed: the rules say all
#       players draw from one common sequence, not how a player's two split hands share it; any fixed rule
#       settles the same way from the published order)
# Decisions the cards make impossible (a card taken on 21 or more, more cards than the sequence holds, a
# double taking other than one card, split aces taking more than one) are refused, not settled.


def _draw(start: list[str], sequence: list[str], at: int, spec: Mapping[str, Any]) -> tuple[list[str], int]:
    cards = list(start)
    took = int(spec.get("took", 0))
    for _ in range(took):
        if bj_total(cards)[0] >= 21:
            raise ValueError(f"{' '.join(cards)} takes no more cards")
        if at >= len(sequence):
            raise ValueError(f"the common sequence holds {len(sequence)} card(s): {took} cannot be taken")
        cards.append(sequence[at])
        at += 1
    if len(start) == 1 and took < 1:
        raise ValueError("a split hand takes its second card from the sequence")
    if len(start) == 1 and start[0][0] == "A" and took != 1:
        raise ValueError("split aces take one card each")
    if spec.get("doubled") and (len(cards) != 3 or (len(start) == 1 and start[0][0] == "A")):
        raise ValueError("a double takes exactly one card on two cards (not on split aces)")
    return cards, at


def infinite_main(result: Result, bet: Bet) -> Fraction:
    initial, sequence, dealer = result["initial"], result["sequence"], result["dealer"]["cards"]
    params = bet.params
    if params.get("surrender"):
        if result["dealer_up"][0] in "ATJQK":
            raise ValueError("no surrender against an ace or a ten-valued card")
        return Fraction(-1, 2)
    split = params.get("split")
    if split is None:
        cards, _ = _draw(initial, sequence, 0, params)
        return MAIN_PAYOUTS[bj_outcome(cards, False, dealer)] * (2 if params.get("doubled") else 1)
    if bj_value(initial[0]) != bj_value(initial[1]):
        raise ValueError(f"{' '.join(initial)} is not a pair: no split")
    net, at = PUSH, 0
    for start, spec in zip(initial, split, strict=True):
        cards, at = _draw([start], sequence, at, spec)
        net += MAIN_PAYOUTS[bj_outcome(cards, True, dealer)] * (2 if spec.get("doubled") else 1)
    return net


def infinite_insurance(result: Result, bet: Bet) -> Fraction:
    if result["dealer_up"][0] != "A":
        raise ValueError("insurance is offered only under a dealer ace")
    return wins(result["dealer"]["blackjack"], 2)


#: docs/games/infinite_blackjack.md, "maximum availability per round": the side bet is not offered after
#: that round of the shoe
SIDE_BET_LAST_ROUND = {"pair": 40, "bust_bonus": 45, "lucky_trio": 45, "poker_trio": 45}


def offered_up_to(name: str, settle_open: Settle) -> Settle:
    """A side bet placed after its last round in the shoe (`round_in_shoe`) is void: its stake returned."""

    def settle_side_bet(result: Result, bet: Bet) -> Fraction:
        if result["round_in_shoe"] > SIDE_BET_LAST_ROUND[name]:
            return PUSH
        return settle_open(result, bet)

    return settle_side_bet


INFINITE_PAIR_PAYOUTS = {"mixed": 5, "coloured": 10, "perfect": 30}
BUST_BONUS_PAYOUTS = {3: 1, 4: 2, 5: 9, 6: 50, 7: 100}  # 8 cards or more: 250


def infinite_pair(result: Result, bet: Bet) -> Fraction:
    kind = pair_kind(*result["initial"])
    return wins(kind is not None, INFINITE_PAIR_PAYOUTS.get(kind or "", 0))


def bust_bonus(result: Result, bet: Bet) -> Fraction:
    cards = result["dealer_bust_cards"]  # null: the dealer did not bust
    return wins(cards is not None, BUST_BONUS_PAYOUTS.get(cards or 0, 250))


def _trio(result: Result) -> tuple[list[str], bool]:
    """The two initial player cards and the dealer's up card; whether all three are of one suit."""
    three = [*result["initial"], result["dealer_up"]]
    return three, len({card[1] for card in three}) == 1


def lucky_trio(result: Result, bet: Bet) -> Fraction:
    """Only the best pattern pays. The total counts an ace 11 unless that goes over 21 (assumed: the rules
    do not say); "different suits" is read as "not all of one suit" (docs/games/infinite_blackjack.md)."""
    three, suited = _trio(result)
    ranks = sorted(card[0] for card in three)
    if ranks == ["7", "7", "7"]:
        return Fraction(200 if suited else 50)
    if ranks == ["6", "7", "8"]:
        return Fraction(100 if suited else 30)
    total = bj_total(three)[0]
    if total == 21:
        return Fraction(10 if suited else 3)
    return wins(total in (19, 20), 2)


POKER_RANKS = "23456789TJQKA"


def poker_trio(result: Result, bet: Bet) -> Fraction:
    """Three-card poker on the same three cards, only the best pattern paying; a straight has the ace high
    (Q-K-A) or low (A-2-3), never round the corner (K-A-2). Flush is one suit, as the rules
    (docs/games/infinite_blackjack.md) state it; the cards' suits are in the result either way."""
    three, suited = _trio(result)
    ranks = sorted(POKER_RANKS.index(card[0]) for card in three)
    trips = ranks[0] == ranks[2]
    straight = ranks in ([0, 1, 12],) or (ranks[1] == ranks[0] + 1 and ranks[2] == ranks[1] + 1)
    if trips:
        return Fraction(100 if suited else 30)
    if straight:
        return Fraction(40 if suited else 10)
    return wins(suited, 5)


# --- sic bo (docs/games/sicbo.md) -------------------------------------------------------------------------
# The rules give no payouts: these settle to whether the bet wins (a single number: how many dice show it,
# which sets its payout). Checked against the dice for all 216 outcomes, each played through the flow, in
# tests/unit/games/sicbo/test_sicbo_settlement.py. Bets on a value name it in `bet.params["value"]`, a total
# in `bet.params["total"]`, a two-dice combination its two values in `bet.params["values"]`.


def sicbo_big(result: Result, bet: Bet) -> bool:
    """Big: total 11-17; a triple loses."""
    return bool(result["size"] == "big")


def sicbo_small(result: Result, bet: Bet) -> bool:
    """Small: total 4-10; a triple loses."""
    return bool(result["size"] == "small")


def sicbo_odd(result: Result, bet: Bet) -> bool:
    """Odd (where offered): an odd total; a triple loses, as Big/Small."""
    return result["parity"] == "odd" and result["triple"] is None


def sicbo_even(result: Result, bet: Bet) -> bool:
    return result["parity"] == "even" and result["triple"] is None


def sicbo_total(result: Result, bet: Bet) -> bool:
    """Total 4 to 17."""
    return bool(result["total"] == bet.params["total"])


def sicbo_triple(result: Result, bet: Bet) -> bool:
    """A specific triple."""
    return bool(result["triple"] == bet.params["value"])


def sicbo_any_triple(result: Result, bet: Bet) -> bool:
    return result["triple"] is not None


def sicbo_double(result: Result, bet: Bet) -> bool:
    """At least two dice show the value (a triple of it wins too)."""
    return bool(result["double"] == bet.params["value"])


def sicbo_combination(result: Result, bet: Bet) -> bool:
    """Two-dice combination a-b (a != b): both values among the dice."""
    a, b = bet.params["values"]
    return a in result["dice"] and b in result["dice"]


def sicbo_single(result: Result, bet: Bet) -> int:
    """Single number: how many dice show it (0 loses; 1, 2 or 3 set the payout)."""
    return int(result["dice"].count(bet.params["value"]))


BLACKJACK_BOXED = {"main": boxed_main, "insurance": boxed_insurance}

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
    # docs/games/blackjack.md: no surrender named (a studio may offer it: `surrender` then settles at -1/2)
    "blackjack": {**BLACKJACK_BOXED, "bet_behind": bet_behind, "pair": live_pair},
    # docs/games/single_deck_blackjack.md: one box, no side bet named
    "single_deck_blackjack": BLACKJACK_BOXED,
    "infinite_blackjack": {
        "main": infinite_main,
        "insurance": infinite_insurance,
        "pair": offered_up_to("pair", infinite_pair),
        "bust_bonus": offered_up_to("bust_bonus", bust_bonus),
        "lucky_trio": offered_up_to("lucky_trio", lucky_trio),
        "poker_trio": offered_up_to("poker_trio", poker_trio),
    },
    "sicbo": {
        "big": sicbo_big,
        "small": sicbo_small,
        "odd": sicbo_odd,
        "even": sicbo_even,
        "total": sicbo_total,
        "triple": sicbo_triple,
        "any_triple": sicbo_any_triple,
        "double": sicbo_double,
        "combination": sicbo_combination,
        "single": sicbo_single,
    },
}


def settle(result: Result, bet: Bet) -> Any:
    return SETTLEMENTS[result["game"]][bet.name](result, bet)


def as_published(result: EventData) -> Result:
    """The result's data exactly as an MQTT subscriber gets it: the event's data, through JSON."""
    data: Result = json.loads(json.dumps(make_event("round.result", result, 0.0).data))
    return data
