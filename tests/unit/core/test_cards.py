"""Card codes and shoe composition (controller.cards)."""

from __future__ import annotations

import json

import pytest

from controller.cards import Card, InvalidCard, ShoeComposition, ShoeExhausted, full_deck

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("code", "rank", "suit", "rank_index", "colour"),
    [
        ("AS", "A", "S", 1, "black"),
        ("TD", "T", "D", 10, "red"),
        ("9H", "9", "H", 9, "red"),
        ("KC", "K", "C", 13, "black"),
        ("2D", "2", "D", 2, "red"),
    ],
)
def test_parse_valid_codes(code: str, rank: str, suit: str, rank_index: int, colour: str) -> None:
    card = Card.parse(code)
    assert (card.rank, card.suit) == (rank, suit)
    assert card.code == code
    assert str(card) == code
    assert card.rank_index == rank_index
    assert card.colour == colour


@pytest.mark.parametrize("code", ["", "A", "ASS", "1S", "10H", "as", "AX", "XS", " AS", "A S", "0D"])
def test_parse_rejects_what_is_not_a_card(code: str) -> None:
    with pytest.raises(InvalidCard, match="is not a card code"):
        Card.parse(code)


def test_parse_rejects_non_strings() -> None:
    with pytest.raises(InvalidCard):
        Card.parse(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidCard):
        Card.parse(12)  # type: ignore[arg-type]


def test_invalid_card_is_a_value_error() -> None:
    assert issubclass(InvalidCard, ValueError)
    assert issubclass(ShoeExhausted, ValueError)


def test_full_deck_has_every_card_once() -> None:
    deck = full_deck()
    assert len(deck) == 52
    assert len(set(deck)) == 52
    assert {card.suit for card in deck} == set("SHDC")
    assert {card.rank for card in deck} == set("A23456789TJQK")


def test_cards_are_equal_by_value_and_hashable() -> None:
    assert Card.parse("QS") == Card("Q", "S")
    assert len({Card.parse("QS"), Card("Q", "S")}) == 1


def test_one_deck_shoe_holds_each_card_once() -> None:
    shoe = ShoeComposition(1)
    ace = Card.parse("AS")
    shoe.take(ace)
    assert shoe.dealt(ace) == 1
    with pytest.raises(ShoeExhausted, match="1-deck shoe"):
        shoe.check(ace)
    with pytest.raises(ShoeExhausted):
        shoe.take(ace)
    assert shoe.dealt(ace) == 1  # a refused card is not counted
    assert shoe.cards_dealt == 1
    assert shoe.cards_left == 51


def test_eight_deck_shoe_holds_each_card_eight_times() -> None:
    shoe = ShoeComposition(8)
    ten = Card.parse("TD")
    for _ in range(8):
        shoe.take(ten)
    with pytest.raises(ShoeExhausted, match="came out 8 times"):
        shoe.take(ten)
    shoe.take(Card.parse("TH"))  # another suit is another card
    assert shoe.cards_dealt == 9
    assert shoe.cards_left == 8 * 52 - 9


def test_whole_deck_then_exhausted_then_reset() -> None:
    shoe = ShoeComposition(2)
    for _ in range(2):
        for card in full_deck():
            shoe.take(card)
    assert shoe.cards_left == 0
    for card in full_deck():
        with pytest.raises(ShoeExhausted):
            shoe.check(card)
    shoe.reset()
    assert shoe.cards_dealt == 0
    assert shoe.cards_left == 104
    shoe.take(Card.parse("KC"))
    assert shoe.dealt(Card.parse("KC")) == 1


def test_a_shoe_holds_at_least_one_deck() -> None:
    with pytest.raises(ValueError, match="at least one deck"):
        ShoeComposition(0)


def test_composition_survives_its_json_record() -> None:
    shoe = ShoeComposition(3)
    shoe.take(Card.parse("7H"))
    shoe.take(Card.parse("7H"))
    record = json.loads(shoe.model_dump_json())
    assert record == {"decks": 3, "dealt_copies": {"7H": 2}}
    restored = ShoeComposition.model_validate(record)
    assert restored.dealt(Card.parse("7H")) == 2
    assert restored.cards_left == 3 * 52 - 2
    restored.take(Card.parse("7H"))
    with pytest.raises(ShoeExhausted):
        restored.take(Card.parse("7H"))
    with pytest.raises(ValueError, match="not a card code"):
        ShoeComposition.model_validate({"decks": 1, "dealt_copies": {"ZZ": 1}})
