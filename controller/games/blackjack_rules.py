"""The rules every blackjack variant shares, as plain functions: no flow, no state, no time.

Card values (docs/games/blackjack.md, infinite_blackjack.md, single_deck_blackjack.md): two to nine at face
value, ten and court cards 10, an ace 1 or 11 — 11 unless that makes the hand go over 21. A hand's total is
that best value; it is *soft* while an ace counts 11. Two cards making 21 are a blackjack, except on a hand
made by a split (the same three pages: "21, not blackjack"). Over 21 is bust.

What differs between the variants is a parameter here, never a copy: the dealer's soft-17 rule
(`dealer_draws`), the player policies that stand in for a player who does not answer (`basic_strategy_h17`
for Live Blackjack, `hit_to_twelve` for Infinite and Single-deck), and the outcome of a hand against the
dealer's (`outcome`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from controller.cards import Card

Outcome = Literal["blackjack", "win", "push", "lose", "surrender"]
Action = Literal["hit", "stand", "double", "split", "surrender"]

TEN_RANKS = frozenset("TJQK")


def card_value(card: Card) -> int:
    """The value of a card with an ace counted as 1: A 1, 2-9 at face value, T J Q K 10. Also the burn
    count of Infinite Blackjack's first card after a shuffle (docs/games/infinite_blackjack.md: ace 1, two to
    ten at face value, J/Q/K 10)."""
    return 10 if card.rank in TEN_RANKS else card.rank_index


def ten_valued(card: Card) -> bool:
    return card.rank in TEN_RANKS


def is_ace(card: Card) -> bool:
    return card.rank == "A"


@dataclass(frozen=True, slots=True)
class Total:
    total: int
    soft: bool

    @property
    def bust(self) -> bool:
        return self.total > 21


def hand_total(cards: Sequence[Card]) -> Total:
    """The best total (an ace 11 unless that busts) and whether an ace still counts 11."""
    hard = sum(card_value(card) for card in cards)
    if any(is_ace(card) for card in cards) and hard + 10 <= 21:
        return Total(hard + 10, True)
    return Total(hard, False)


def is_blackjack(cards: Sequence[Card], from_split: bool = False) -> bool:
    """21 in the first two cards; never on a hand made by a split."""
    return not from_split and len(cards) == 2 and hand_total(cards).total == 21


def dealer_may_have_blackjack(up: Card) -> bool:
    """Only an ace or a ten-valued up card can become a blackjack: the dealer peeks, or a player's blackjack
    waits for the dealer's second card (Live)."""
    return is_ace(up) or ten_valued(up)


def dealer_draws(cards: Sequence[Card], hits_soft_17: bool) -> bool:
    """Whether the dealer takes another card: always on 16 or less, on a soft 17 only under `hits_soft_17`
    (Live and Single-deck hit it; Infinite stands on all 17s), never on a hard 17 or more."""
    if len(cards) < 2:
        return True
    total = hand_total(cards)
    if total.total < 17:
        return True
    return total.total == 17 and total.soft and hits_soft_17


def outcome(
    cards: Sequence[Card],
    *,
    from_split: bool,
    surrendered: bool,
    dealer: Sequence[Card],
) -> Outcome:
    """A finished hand against the dealer's finished hand (payouts are the rules engine's business)."""
    if surrendered:
        return "surrender"
    player = hand_total(cards)
    if player.bust:
        return "lose"
    player_blackjack = is_blackjack(cards, from_split)
    dealer_blackjack = is_blackjack(dealer)
    if player_blackjack:
        return "push" if dealer_blackjack else "blackjack"
    if dealer_blackjack:
        return "lose"
    dealer_total = hand_total(dealer)
    if dealer_total.bust or player.total > dealer_total.total:
        return "win"
    if player.total == dealer_total.total:
        return "push"
    return "lose"


# --- what the table does for a player who does not answer ------------------------------------------------


def hit_to_twelve(cards: Sequence[Card]) -> Action:
    """Infinite (docs/games/infinite_blackjack.md) and Single-deck (docs/games/single_deck_blackjack.md)
    disconnect policy: hit while the total is 11 or less (an ace counts 11 unless that busts), then stand."""
    return "hit" if hand_total(cards).total <= 11 else "stand"


# Basic strategy, 4 to 8 decks, dealer hits soft 17, double after split allowed, late surrender where the
# table offers it: the usual published chart for those rules. Columns: the dealer's up card 2..9, T, A.
# H hit, S stand, D double else hit, Ds double else stand, P split, Ph split if doubling after a split is
# allowed else hit, Rh surrender else hit, Rs surrender else stand, Rp surrender else split.
# Caveat: Live Blackjack deals the dealer no hole card (European style); the published no-hole-card charts
# differ from this one in a handful of cells (11 and the 8-8 split against a ten or an ace). The rules
# (docs/games/blackjack.md) name "Basic Strategy" without a chart, so the common H17 chart is the one the
# table uses.
_UP = ("2", "3", "4", "5", "6", "7", "8", "9", "T", "A")
_HARD: dict[int, str] = {
    # 5 to 8 always hit
    9: "H D D D D H H H H H",
    10: "D D D D D D D D H H",
    11: "D D D D D D D D D D",
    12: "H H S S S H H H H H",
    13: "S S S S S H H H H H",
    14: "S S S S S H H H H H",
    15: "S S S S S H H H Rh Rh",
    16: "S S S S S H H Rh Rh Rh",
    17: "S S S S S S S S S Rs",
}
_SOFT: dict[int, str] = {
    12: "H H H H H H H H H H",  # two aces that may not be split again
    13: "H H H D D H H H H H",
    14: "H H H D D H H H H H",
    15: "H H D D D H H H H H",
    16: "H H D D D H H H H H",
    17: "H D D D D H H H H H",
    18: "Ds Ds Ds Ds Ds S S H H H",
    19: "S S S S Ds S S S S S",
    # soft 20 and 21 stand
}
#: by the pair's value (A = 1); a pair of fives plays as a hard 10, tens never split
_PAIRS: dict[int, str] = {
    1: "P P P P P P P P P P",
    2: "Ph Ph P P P P H H H H",
    3: "Ph Ph P P P P H H H H",
    4: "H H H Ph Ph H H H H H",
    6: "Ph P P P P H H H H H",
    7: "P P P P P P H H H H",
    8: "P P P P P P P P P Rp",
    9: "P P P P P S P P S S",
}


def _chart(row: str, up: Card) -> str:
    column = "T" if ten_valued(up) else up.rank
    return row.split()[_UP.index(column)]


@dataclass(frozen=True, slots=True)
class Allowed:
    """What the rules allow this hand now (the policy never picks anything else)."""

    double: bool
    split: bool
    surrender: bool
    double_after_split: bool = True


def basic_strategy_h17(cards: Sequence[Card], up: Card, allowed: Allowed) -> Action:
    """Live Blackjack's disconnect policy (docs/games/blackjack.md: the hand of a disconnected player is
    played by basic strategy)."""
    total = hand_total(cards)
    code = "S"
    if allowed.split and len(cards) == 2 and card_value(cards[0]) == card_value(cards[1]):
        pair = _PAIRS.get(card_value(cards[0]))
        if pair is not None:
            code = _chart(pair, up)
            if code == "Ph":
                code = "P" if allowed.double_after_split else "H"
            if code == "Rp":
                if allowed.surrender:
                    return "surrender"
                code = "P"
            if code == "P":
                return "split"
            code = "S"  # the pair chart said hit / stand: read the totals' chart below
    if total.soft:
        code = _chart(_SOFT[total.total], up) if total.total in _SOFT else "S"
    elif total.total <= 8:
        code = "H"
    else:
        code = _chart(_HARD[total.total], up) if total.total in _HARD else "S"
    if code in ("Rh", "Rs"):
        if allowed.surrender:
            return "surrender"
        code = code[1].upper()
    if code == "D":
        return "double" if allowed.double else "hit"
    if code == "Ds":
        return "double" if allowed.double else "stand"
    return "hit" if code == "H" else "stand"
