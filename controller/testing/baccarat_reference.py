"""An independent model of punto banco, to check the baccarat flow against.

Written on purpose in another shape than `controller.games.baccarat`: the banker's rule is the printed
tableau as a literal table, and a whole shoe is played by walking a list of card codes, with no state
machine, no Card class and no shared helper. If both agree on thousands of random shoes, neither is likely
to carry the same mistake.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

POINTS = {
    "A": 1,
    "2": 2,
    "3": 3,
    "4": 4,
    "5": 5,
    "6": 6,
    "7": 7,
    "8": 8,
    "9": 9,
    "T": 0,
    "J": 0,
    "Q": 0,
    "K": 0,
}

# The banker's third-card tableau as printed on a punto banco table card.
# Row: the banker's two-card total. Column: the points of the player's third card, 0 to 9.
# D = the banker draws, S = the banker stands.
#                    player's third card: 0123456789
BANKER_TABLEAU: dict[int, str] = {
    0: "DDDDDDDDDD",
    1: "DDDDDDDDDD",
    2: "DDDDDDDDDD",
    3: "DDDDDDDDSD",
    4: "SSDDDDDDSS",
    5: "SSSSDDDDSS",
    6: "SSSSSSDDSS",
    7: "SSSSSSSSSS",
}
# When the player stood on 6 or 7 the banker plays like the player: draws on 0-5, stands on 6-7.
BANKER_WHEN_PLAYER_STOOD = "DDDDDDSS"
# The player draws on 0-5 and stands on 6-7 (8-9 never get here: a natural ends the hand).
PLAYER_RULE = "DDDDDDSS"

# The most cards a round can take: the cut card must leave at least that many behind it.
CARDS_PER_ROUND_MAX = 6


@dataclass(frozen=True, slots=True)
class ExpectedRound:
    player: tuple[str, ...]
    banker: tuple[str, ...]
    player_total: int
    banker_total: int
    winner: str
    player_pair: bool
    banker_pair: bool
    player_natural: bool
    banker_natural: bool
    last_round_of_shoe: bool
    first_card_index: int  # where the round starts in the shoe's list of cards

    @property
    def cards_in_dealing_order(self) -> list[tuple[str, str]]:
        """(position, code) in the order the dealer deals them."""
        order = [
            ("player", self.player[0]),
            ("banker", self.banker[0]),
            ("player", self.player[1]),
            ("banker", self.banker[1]),
        ]
        if len(self.player) == 3:
            order.append(("player", self.player[2]))
        if len(self.banker) == 3:
            order.append(("banker", self.banker[2]))
        return order


def total_of(codes: Sequence[str]) -> int:
    return sum(POINTS[code[0]] for code in codes) % 10


def play_one_round(shoe: Iterator[str], first_card_index: int, last: bool) -> ExpectedRound:
    p1, b1, p2, b2 = next(shoe), next(shoe), next(shoe), next(shoe)
    player = [p1, p2]
    banker = [b1, b2]
    player_two, banker_two = total_of(player), total_of(banker)
    natural = player_two >= 8 or banker_two >= 8
    if not natural:
        if PLAYER_RULE[player_two] == "D":
            third = next(shoe)
            player.append(third)
            banker_draws = BANKER_TABLEAU[banker_two][POINTS[third[0]]] == "D"
        else:
            banker_draws = BANKER_WHEN_PLAYER_STOOD[banker_two] == "D"
        if banker_draws:
            banker.append(next(shoe))
    player_total, banker_total = total_of(player), total_of(banker)
    # Compare by the sign of the difference, not by a chain of ifs like the flow does.
    sign = (player_total > banker_total) - (player_total < banker_total)
    winner = {0: "tie", 1: "player", -1: "banker"}[sign]
    return ExpectedRound(
        player=tuple(player),
        banker=tuple(banker),
        player_total=player_total,
        banker_total=banker_total,
        winner=winner,
        player_pair=p1[0] == p2[0],
        banker_pair=b1[0] == b2[0],
        player_natural=player_two >= 8,
        banker_natural=banker_two >= 8,
        last_round_of_shoe=last,
        first_card_index=first_card_index,
    )


class _CountingIterator:
    """Iterates over the shoe while remembering how many cards were taken."""

    def __init__(self, cards: Sequence[str]) -> None:
        self.cards = cards
        self.taken = 0

    def __iter__(self) -> _CountingIterator:
        return self

    def __next__(self) -> str:
        if self.taken >= len(self.cards):
            raise StopIteration
        card = self.cards[self.taken]
        self.taken += 1
        return card


def expected_rounds(cards: Sequence[str], cut_before: int) -> list[ExpectedRound]:
    """Every round dealt from `cards` (a shuffled shoe, in order).

    The cut card lies just before `cards[cut_before]`: the round that deals that card is the shoe's last,
    whether the cut card came out during it or just before it began.
    """
    if not 0 <= cut_before <= len(cards) - CARDS_PER_ROUND_MAX:
        raise ValueError("the cut card must leave at least a full round of cards behind it")
    shoe = _CountingIterator(cards)
    rounds: list[ExpectedRound] = []
    while True:
        start = shoe.taken
        played = play_one_round(shoe, start, last=False)
        if start <= cut_before < shoe.taken:
            rounds.append(replace(played, last_round_of_shoe=True))
            return rounds
        rounds.append(played)


# --- comparing a table's `round.result` with the reference (the replay tests, the chaos campaign) -----------


def as_expected(result: Mapping[str, Any]) -> tuple[Any, ...]:
    """A `round.result` event's data, as the facts `from_reference` gives for the same round."""
    return (
        tuple(result["player"]["cards"]),
        tuple(result["banker"]["cards"]),
        result["player"]["total"],
        result["banker"]["total"],
        result["winner"],
        result["player_pair"],
        result["banker_pair"],
        result["player_natural"],
        result["banker_natural"],
        result["last_round_of_shoe"],
    )


def from_reference(r: ExpectedRound) -> tuple[Any, ...]:
    return (
        r.player,
        r.banker,
        r.player_total,
        r.banker_total,
        r.winner,
        r.player_pair,
        r.banker_pair,
        r.player_natural,
        r.banker_natural,
        r.last_round_of_shoe,
    )
