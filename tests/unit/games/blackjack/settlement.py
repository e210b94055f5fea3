"""The three blackjack variants' settlement functions, one per bet their game pages name (the kit:
tests/helpers/settlement.py)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from controller.testing.blackjack_reference import settle as bj_outcome
from controller.testing.blackjack_reference import total as bj_total
from controller.testing.blackjack_reference import value as bj_value
from tests.helpers.settlement import LOSE, PUSH, Bet, Result, Settle, settler, wins

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


BLACKJACK_BOXED = {"main": boxed_main, "insurance": boxed_insurance}


SETTLEMENTS: dict[str, dict[str, Settle]] = {
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
}

settle = settler(SETTLEMENTS)
