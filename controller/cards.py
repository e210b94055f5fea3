"""Playing cards and shoes.

Card codes are rank + suit: rank in `A23456789TJQK`, suit in `SHDC` (e.g. `AS`, `TD`, `9H`).
A shoe of N decks holds every card exactly N times; a scan that would exceed that is a misread or a
foreign card and is rejected, never accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, field_validator

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


def _card_from_code(value: Any) -> Card:
    return value if isinstance(value, Card) else Card.parse(value)


#: a card in a state record: stored as its code ("TD"), a `Card` in memory
CardCode = Annotated[
    Card, BeforeValidator(_card_from_code), PlainSerializer(lambda card: card.code, return_type=str)
]


class ShoeComposition(BaseModel):
    """Counts what a shoe of `decks` decks has dealt, and refuses a card it no longer holds.

    A plain record (card code -> copies dealt), so a table's state serialises to JSON."""

    model_config = ConfigDict(extra="forbid")

    decks: int = Field(ge=1)
    dealt_copies: dict[str, int] = Field(default_factory=dict)

    def __init__(self, decks: int | None = None, /, **data: Any) -> None:
        if decks is not None:
            data["decks"] = decks
        if data.get("decks", 1) < 1:
            raise ValueError("a shoe holds at least one deck")
        super().__init__(**data)

    @field_validator("dealt_copies")
    @classmethod
    def _card_codes(cls, value: dict[str, int]) -> dict[str, int]:
        for code in value:
            Card.parse(code)
        return value

    def check(self, card: Card) -> None:
        """Raise ShoeExhausted if taking `card` would exceed what the shoe holds."""
        copies = self.dealt(card)
        if copies >= self.decks:
            raise ShoeExhausted(
                f"{card} already came out {copies} times; a {self.decks}-deck shoe holds it "
                f"{self.decks} times (misread or foreign card)"
            )

    def take(self, card: Card) -> None:
        self.check(card)
        self.dealt_copies[card.code] = self.dealt(card) + 1

    def dealt(self, card: Card) -> int:
        return self.dealt_copies.get(card.code, 0)

    @property
    def cards_dealt(self) -> int:
        return sum(self.dealt_copies.values())

    @property
    def cards_left(self) -> int:
        return 52 * self.decks - self.cards_dealt

    def reset(self) -> None:
        self.dealt_copies.clear()
