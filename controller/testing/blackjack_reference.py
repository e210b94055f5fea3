"""Independent blackjack references for the tests: how a correct dealer deals each variant from a known
order of cards, with the disconnect policies deciding every hand (as in replay and the demo).

Written from the rules (docs/games/blackjack.md, infinite_blackjack.md, single_deck_blackjack.md) without
the controller's code: totals from rank characters, basic strategy as the usual spoken rules rather than a
chart, the dealer as a plain loop over the remaining cards. Each round gives the cards per place, the
decisions in order and the outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

RANKS = "A23456789TJQK"


def value(code: str) -> int:
    return min(10, RANKS.index(code[0]) + 1)


def total(cards: list[str]) -> tuple[int, bool]:
    hard = sum(value(card) for card in cards)
    if any(card[0] == "A" for card in cards) and hard + 10 <= 21:
        return hard + 10, True
    return hard, False


def natural(cards: list[str]) -> bool:
    return len(cards) == 2 and total(cards)[0] == 21


def up_value(code: str) -> int:
    return 11 if code[0] == "A" else value(code)


def strategy(cards: list[str], up: str, can_double: bool, can_split: bool) -> str:
    """Basic strategy, many decks, dealer hits soft 17, double after split, no surrender."""
    u = up_value(up)
    if can_split and len(cards) == 2 and cards[0][0] == cards[1][0]:
        pair = value(cards[0])
        if pair in (1, 8):
            return "split"
        if pair in (2, 3, 7) and u <= 7:
            return "split"
        if pair == 6 and u <= 6:
            return "split"
        if pair == 4 and u in (5, 6):
            return "split"
        if pair == 9 and u not in (7, 10, 11):
            return "split"
    t, soft = total(cards)

    def double_or(otherwise: str) -> str:
        return "double" if can_double else otherwise

    if soft:
        if t >= 20:
            return "stand"
        if t == 19:
            return double_or("stand") if u == 6 else "stand"
        if t == 18:
            if u <= 6:
                return double_or("stand")
            return "stand" if u in (7, 8) else "hit"
        if t == 17:
            return double_or("hit") if 3 <= u <= 6 else "hit"
        if t in (15, 16):
            return double_or("hit") if 4 <= u <= 6 else "hit"
        if t in (13, 14):
            return double_or("hit") if 5 <= u <= 6 else "hit"
        return "hit"
    if t >= 17:
        return "stand"
    if t >= 13:
        return "stand" if u <= 6 else "hit"
    if t == 12:
        return "stand" if 4 <= u <= 6 else "hit"
    if t == 11:
        return double_or("hit")
    if t == 10:
        return double_or("hit") if u <= 9 else "hit"
    if t == 9:
        return double_or("hit") if 3 <= u <= 6 else "hit"
    return "hit"


def dealer_done(cards: list[str], hit_soft_17: bool) -> bool:
    t, soft = total(cards)
    if len(cards) < 2 or t < 17:
        return False
    return not (t == 17 and soft and hit_soft_17)


def settle(cards: list[str], split: bool, dealer: list[str]) -> str:
    t, _ = total(cards)
    if t > 21:
        return "lose"
    player_bj = natural(cards) and not split
    if player_bj:
        return "push" if natural(dealer) else "blackjack"
    if natural(dealer):
        return "lose"
    d, _ = total(dealer)
    if d > 21 or t > d:
        return "win"
    return "push" if t == d else "lose"


@dataclass
class Hand:
    seat: int
    number: int
    cards: list[str]
    split: bool = False
    doubled: bool = False


@dataclass
class BoxedRound:
    hands: list[Hand]
    dealer: list[str]
    decisions: list[tuple[int | None, int | None, str]]
    first_card: int  # index in the pack of the round's first card
    cards_used: int
    last_of_shoe: bool = False
    outcomes: list[str] = field(default_factory=list)


class Pack:
    def __init__(self, cards: list[str], start: int = 0) -> None:
        self.cards, self.at = cards, start

    def next(self) -> str:
        card = self.cards[self.at]
        self.at += 1
        return card


def boxed_round(pack: Pack, *, seats: int, live: bool) -> BoxedRound:
    """Live (`live`: no hole card, basic strategy, split same rank, double any two) or Single-deck (hole
    card and peek, hit to 12)."""
    start = pack.at
    hands = [Hand(seat, 1, []) for seat in range(1, seats + 1)]
    dealer: list[str] = []
    decisions: list[tuple[int | None, int | None, str]] = []
    for hand in hands:
        hand.cards.append(pack.next())
    dealer.append(pack.next())
    for hand in hands:
        hand.cards.append(pack.next())
    hole = None if live else pack.next()
    up = dealer[0]
    if up[0] == "A":
        for hand in hands:
            if live or not natural(hand.cards):
                decisions.append((hand.seat, None, "no_insurance"))
    if hole is not None and (up[0] == "A" or value(up) == 10) and natural([up, hole]):
        dealer.append(hole)
        result = BoxedRound(hands, dealer, decisions, start, pack.at - start)
        result.outcomes = [settle(h.cards, h.split, dealer) for h in hands]
        return result
    done: list[Hand] = []
    queue = list(hands)
    while queue:
        hand = queue.pop(0)
        if len(hand.cards) == 1:
            hand.cards.append(pack.next())
        if natural(hand.cards) and not hand.split:
            done.append(hand)
            continue
        split_aces = hand.split and hand.cards[0][0] == "A"
        while not split_aces and total(hand.cards)[0] < 21:
            if live:
                box_split = any(h.seat == hand.seat and h.split for h in [*done, *queue, hand])
                action = strategy(hand.cards, up, len(hand.cards) == 2, not box_split)
            else:
                action = "hit" if total(hand.cards)[0] <= 11 else "stand"
            decisions.append((hand.seat, hand.number, action))
            if action == "stand":
                break
            if action == "split":
                second = Hand(hand.seat, 2, [hand.cards[1]], split=True)
                hand.cards = [hand.cards[0]]
                hand.split = True
                queue.insert(0, second)
                queue.insert(0, hand)
                hand = None  # type: ignore[assignment]
                break
            hand.cards.append(pack.next())
            if action == "double":
                hand.doubled = True
                break
        if hand is not None:
            done.append(hand)
    done.sort(key=lambda h: (h.seat, h.number))
    standing = [h for h in done if total(h.cards)[0] <= 21 and not (natural(h.cards) and not h.split)]
    if hole is not None:
        dealer.append(hole)
    if standing:
        while not dealer_done(dealer, hit_soft_17=True):
            dealer.append(pack.next())
    elif live and (up[0] == "A" or value(up) == 10) and any(natural(h.cards) and not h.split for h in done):
        dealer.append(pack.next())
    result = BoxedRound(done, dealer, decisions, start, pack.at - start)
    result.outcomes = [settle(h.cards, h.split, dealer) for h in done]
    return result


def live_shoe(cards: list[str], cut_index: int, seats: int) -> list[BoxedRound]:
    """Every round of a Live Blackjack shoe up to the cut-card round (the round holding card `cut_index`)."""
    pack = Pack(cards)
    rounds = []
    while True:
        played = boxed_round(pack, seats=seats, live=True)
        rounds.append(played)
        if pack.at > cut_index:
            played.last_of_shoe = True
            return rounds


@dataclass
class InfiniteRound:
    initial: list[str]
    sequence: list[str]
    dealer: list[str]
    decisions: list[str]
    round_in_shoe: int
    last_of_shoe: bool = False


@dataclass
class InfiniteShoe:
    shown: str
    burned: int
    rounds: list[InfiniteRound]
    cards_used: int


def infinite_shoe(cards: list[str], cut_index: int, hit_soft_17: bool = False) -> InfiniteShoe:
    pack = Pack(cards)
    shown = pack.next()
    for _ in range(value(shown)):
        pack.next()
    rounds = []
    number = 0
    while True:
        number += 1
        player = [pack.next()]
        dealer = [pack.next()]
        player.append(pack.next())
        hole = pack.next()
        decisions: list[str] = []
        if (dealer[0][0] == "A" or value(dealer[0]) == 10) and natural([dealer[0], hole]):
            dealer.append(hole)
            played = InfiniteRound(player, [], dealer, decisions, number)
        else:
            sequence: list[str] = []
            while total(player + sequence)[0] <= 11:
                decisions.append("deal_card")
                sequence.append(pack.next())
            decisions.append("players_done")
            dealer.append(hole)
            while not dealer_done(dealer, hit_soft_17):
                dealer.append(pack.next())
            played = InfiniteRound(player, sequence, dealer, decisions, number)
        rounds.append(played)
        if pack.at > cut_index:
            played.last_of_shoe = True
            return InfiniteShoe(shown, value(shown), rounds, pack.at)


def names_card(text: str, code: str) -> bool:
    """Whether `text` names the card `code` as a token of its own (not inside a checksum such as `*2D`, a
    sequence number or a word)."""
    import re

    return re.search(rf"(?<![*0-9A-Za-z]){re.escape(code)}(?![0-9A-Za-z])", text) is not None
