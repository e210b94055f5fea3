"""Playing cards and shoes.

Card codes are rank + suit: rank in `A23456789TJQK`, suit in `SHDC` (e.g. `AS`, `TD`, `9H`).
A shoe of N decks holds every card exactly N times; a scan that would exceed that is a misread or a
foreign card and is rejected, never accepted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

RANKS = "A23456789TJQK"
SUITS = "SHDC"
RED_SUITS = frozenset("HD")


class InvalidCard(ValueError):
    """A code that is not a card."""


@dataclass(frozen=True, slots=True, order=True)
class Card:
    rank: str
    suit: str

    @classmethod
    def parse(cls, code: str) -> Card:
        if not isinstance(code, str) or len(code) != 2 or code[0] not in RANKS or code[1] not in SUITS:
            raise InvalidCard(f"{code!r} is not a card code (rank in {RANKS}, suit in {SUITS}, e.g. 'TD')")
        return cls(code[0], code[1])

    @property
    def code(self) -> str:
        return self.rank + self.suit

    @property
    def rank_index(self) -> int:
        """Ace = 1 ... King = 13."""
        return RANKS.index(self.rank) + 1

    @property
    def colour(self) -> str:
        return "red" if self.suit in RED_SUITS else "black"

    def __str__(self) -> str:
        return self.code


def full_deck() -> list[Card]:
    return [Card(r, s) for s in SUITS for r in RANKS]


class ShoeExhausted(ValueError):
    """The card was already dealt as many times as the shoe holds it."""


class ShoeComposition:
    """Counts what a shoe of `decks` decks has dealt, and refuses a card it no longer holds."""

    def __init__(self, decks: int) -> None:
        if decks < 1:
            raise ValueError("a shoe holds at least one deck")
        self.decks = decks
        self._dealt: Counter[Card] = Counter()

    def check(self, card: Card) -> None:
        """Raise ShoeExhausted if taking `card` would exceed what the shoe holds."""
        if self._dealt[card] >= self.decks:
            raise ShoeExhausted(
                f"{card} already came out {self._dealt[card]} times; a {self.decks}-deck shoe holds it "
                f"{self.decks} times (misread or foreign card)"
            )

    def take(self, card: Card) -> None:
        self.check(card)
        self._dealt[card] += 1

    def dealt(self, card: Card) -> int:
        return self._dealt[card]

    @property
    def cards_dealt(self) -> int:
        return sum(self._dealt.values())

    @property
    def cards_left(self) -> int:
        return 52 * self.decks - self.cards_dealt

    def reset(self) -> None:
        self._dealt.clear()
