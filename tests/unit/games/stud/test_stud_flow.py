"""5 Card Stud: dealing order, the decision window, rejections, re-scans, and the poker evaluation.

The poker evaluator is checked three ways: known hands; every one of the 7462 distinct five-card hand values,
built in strength order from the definitions in this file, must come out in exactly that order; and random
hands against `reference_value`, an independent evaluator written differently (a rank histogram and
straight windows). Whole rounds from random decks are checked against the same reference.
"""

from __future__ import annotations

import pickle
import random
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.cards import Card
from controller.commands import CloseBetting, CommandError, ManualCard, NewShoe, PlayersDone, parse_command
from controller.flow import FlowOutput, InputRejected
from controller.games import make_flow
from controller.games.stud import StudFlow, StudResult, StudSettings
from controller.games.stud.flow import CATEGORIES, compare, dealer_qualifies, evaluate
from controller.runtime import TableCore
from controller.testing import card_table
from controller.testing.card_table import (
    ALL_CODES,
    LOCK,
    T0,
    UNLOCK,
    CardFlowTable,
    dealt_positions,
    event_types,
    held,
    only,
)
from drivers.readings import CardSeen, CutCardSeen, DeviceOnline

pytestmark = pytest.mark.unit

TABLE = "stud1"


def validated_results(out: FlowOutput) -> list[StudResult]:
    return card_table.round_results(out, StudResult)


def hand(*codes: str) -> list[Card]:
    return [Card.parse(code) for code in codes]


def value_of(codes: str) -> tuple[str, list[int]]:
    value = evaluate(hand(*codes.split()))
    return value.category, list(value.ranks)


@dataclass
class Table(CardFlowTable[StudSettings, StudFlow]):
    settings: StudSettings = field(default_factory=StudSettings)

    def make_flow(self, settings: StudSettings) -> StudFlow:
        return StudFlow(TABLE, settings)

    def manual(self, code: str) -> FlowOutput:
        return self.flow.on_command(ManualCard(card=code), self.now)

    def players_done(self) -> FlowOutput:
        return self.flow.on_command(PlayersDone(by="rules-engine", transaction="t1"), self.now)


def round_robin(hands: list[list[str]]) -> list[str]:
    """The order the player cards come out of the shoe: one at a time round the hands, five times."""
    return [h[i] for i in range(5) for h in hands]


# --- poker: known hands -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("codes", "category", "ranks"),
    [
        ("AS KS QS JS TS", "royal_flush", [14]),
        ("TH JH QH KH AH", "royal_flush", [14]),
        ("9D KD QD JD TD", "straight_flush", [13]),
        ("AC 2C 3C 4C 5C", "straight_flush", [5]),  # the steel wheel: the ace plays low
        ("AS 2H 3D 4C 5S", "straight", [5]),  # the wheel
        ("AS KH QD JC TS", "straight", [14]),
        ("6S 2H 3D 4C 5S", "straight", [6]),
        ("9S 9H 9D 9C 2S", "four_of_a_kind", [9, 2]),
        ("2S 2H AD 2C 2D", "four_of_a_kind", [2, 14]),
        ("KS KH KD 2C 2S", "full_house", [13, 2]),
        ("3S AH 3D AC 3C", "full_house", [3, 14]),
        ("AS 9S 7S 4S 2S", "flush", [14, 9, 7, 4, 2]),
        ("QS QH QD 7C 2S", "three_of_a_kind", [12, 7, 2]),
        ("JS JH 4D 4C AS", "two_pair", [11, 4, 14]),
        ("5S 5H 9D 9C 3S", "two_pair", [9, 5, 3]),
        ("TS TH AD 8C 3S", "one_pair", [10, 14, 8, 3]),
        ("AS KH 7D 5C 3S", "high_card", [14, 13, 7, 5, 3]),
        ("KS AH 2D 3C 4S", "high_card", [14, 13, 4, 3, 2]),  # K-A-2-3-4 does not wrap
        ("QS KH AD 2C 3S", "high_card", [14, 13, 12, 3, 2]),
    ],
)
def test_known_hands(codes: str, category: str, ranks: list[int]) -> None:
    assert value_of(codes) == (category, ranks)


@pytest.mark.parametrize(
    ("stronger", "weaker"),
    [
        ("KS KH KD 2C 2S", "QS QH QD AC AS"),  # full houses: the trips decide first
        ("3S 3H 3D AC AS", "3S 3H 3D KC KS"),  # then the pair
        ("6S 2H 3D 4C 5S", "AS 2H 3D 4C 5D"),  # the wheel is the lowest straight
        ("6H 2H 3H 4H 5H", "AS 2S 3S 4S 5S"),  # the steel wheel is the lowest straight flush
        ("AH KH QH JH TH", "KS QS JS TS 9S"),  # royal flush over a king-high straight flush
        ("2S 2H 2D 2C 3S", "AS AH AD KC KS"),  # any four of a kind beats any full house
        ("8C 7D 5H 4S 2C", "7C 6D 4H 3S 2D"),  # high card: the top card first
        ("JS JH 4D 4C AS", "JS JH 4D 4C KS"),  # two pair: the kicker
        ("JS JH 5D 5C 2S", "JS JH 4D 4C AS"),  # two pair: the second pair before the kicker
        ("TS TH AD 8C 4S", "TS TH AD 8C 3S"),  # a pair: down to the last kicker
        ("AS 9S 7S 4S 3S", "AS 9S 7S 4S 2S"),
        ("2S 3S 4S 5S 7S", "AS KH QD JC TS"),  # a flush beats a straight
        ("9S 9H 9D 9C 2S", "8S 8H 8D 8C AS"),
    ],
)
def test_tie_breaks(stronger: str, weaker: str) -> None:
    strong, weak = evaluate(hand(*stronger.split())), evaluate(hand(*weaker.split()))
    assert compare(strong, weak) == "win"
    assert compare(weak, strong) == "lose"


def test_suits_never_break_a_tie() -> None:
    a = evaluate(hand("AS", "KH", "7D", "5C", "3S"))
    b = evaluate(hand("AD", "KC", "7H", "5S", "3D"))
    assert compare(a, b) == compare(b, a) == "tie"


@pytest.mark.parametrize(
    ("codes", "qualifies"),
    [
        ("AS KH 7D 5C 3S", True),  # ace-king: the least that qualifies
        ("AS QH JD 5C 3S", False),
        ("KS QH JD 9C 7S", False),
        ("2S 2H 7D 5C 3S", True),  # any pair
        ("AS 2H 3D 4C 5S", True),  # the wheel is a straight, five-high or not
        ("AS KS 7S 5S 3S", True),
    ],
)
def test_the_dealer_qualifies_with_ace_king_or_better(codes: str, qualifies: bool) -> None:
    assert dealer_qualifies(evaluate(hand(*codes.split()))) is qualifies


def test_a_poker_hand_is_five_different_cards() -> None:
    with pytest.raises(ValueError, match="five different cards"):
        evaluate(hand("AS", "KS", "QS", "JS"))
    with pytest.raises(ValueError, match="five different cards"):
        evaluate(hand("AS", "AS", "QS", "JS", "TS"))


# --- poker: every hand value, in order --------------------------------------------------------------------

DESCENDING = range(14, 1, -1)
RANK_CHARS = {value: char for value, char in zip(range(2, 15), "23456789TJQKA", strict=True)}


def _is_run(ranks: tuple[int, ...]) -> bool:
    return ranks[0] - ranks[4] == 4 or ranks == (14, 5, 4, 3, 2)


def _run(top: int) -> tuple[int, ...]:
    return (14, 5, 4, 3, 2) if top == 5 else tuple(range(top, top - 5, -1))


def every_hand_value_strongest_first() -> list[tuple[str, tuple[int, ...], bool]]:
    """(category, ranks laid out group by group, suited) for each of the 7462 distinct hand values."""
    values: list[tuple[str, tuple[int, ...], bool]] = []
    tops = range(14, 4, -1)
    for top in tops:
        values.append(("royal_flush" if top == 14 else "straight_flush", _run(top), True))
    for quad in DESCENDING:
        kickers = [rank for rank in DESCENDING if rank != quad]
        values += [("four_of_a_kind", (quad,) * 4 + (kicker,), False) for kicker in kickers]
    for trips in DESCENDING:
        values += [("full_house", (trips,) * 3 + (pair,) * 2, False) for pair in DESCENDING if pair != trips]
    no_runs = [ranks for ranks in combinations(DESCENDING, 5) if not _is_run(ranks)]
    values += [("flush", ranks, True) for ranks in no_runs]
    values += [("straight", _run(top), False) for top in tops]
    for trips in DESCENDING:
        others = [rank for rank in DESCENDING if rank != trips]
        values += [("three_of_a_kind", (trips,) * 3 + kickers, False) for kickers in combinations(others, 2)]
    for high, low in combinations(DESCENDING, 2):
        values += [
            ("two_pair", (high, high, low, low, kicker), False)
            for kicker in DESCENDING
            if kicker not in (high, low)
        ]
    for pair in DESCENDING:
        others = [rank for rank in DESCENDING if rank != pair]
        values += [("one_pair", (pair, pair, *kickers), False) for kickers in combinations(others, 3)]
    values += [("high_card", ranks, False) for ranks in no_runs]
    return values


def cards_for(ranks: tuple[int, ...], suited: bool) -> list[Card]:
    # Unsuited: the suit follows the position, so equal ranks (always adjacent here) get different suits
    # and five cards never share one.
    return [Card(RANK_CHARS[rank], "S" if suited else "SHDC"[i % 4]) for i, rank in enumerate(ranks)]


def test_all_7462_hand_values_come_out_in_strength_order() -> None:
    expected = every_hand_value_strongest_first()
    assert len(expected) == 7462
    counts: dict[str, int] = {}
    for category, _, _ in expected:
        counts[category] = counts.get(category, 0) + 1
    assert counts == {
        "royal_flush": 1,
        "straight_flush": 9,
        "four_of_a_kind": 156,
        "full_house": 156,
        "flush": 1277,
        "straight": 10,
        "three_of_a_kind": 858,
        "two_pair": 858,
        "one_pair": 2860,
        "high_card": 1277,
    }
    previous = None
    for category, ranks, suited in expected:
        value = evaluate(cards_for(ranks, suited))
        assert value.category == category, (ranks, suited)
        if previous is not None:
            assert value.key < previous.key, (previous, value)
        previous = value


# --- poker: random hands against an independent evaluator -------------------------------------------------

REFERENCE_ORDER = [
    "high_card",
    "one_pair",
    "two_pair",
    "three_of_a_kind",
    "straight",
    "flush",
    "full_house",
    "four_of_a_kind",
    "straight_flush",
    "royal_flush",
]


def reference_value(codes: list[str]) -> tuple[str, list[int]]:
    """Category and tie-break ranks from a rank histogram, straights by sliding a five-rank window."""
    histogram = [0] * 15
    for code in codes:
        histogram["..23456789TJQKA".index(code[0])] += 1
    top = next((t for t in range(14, 5, -1) if all(histogram[r] == 1 for r in range(t - 4, t + 1))), None)
    if top is None and all(histogram[r] == 1 for r in (14, 2, 3, 4, 5)):
        top = 5
    suited = len({code[1] for code in codes}) == 1
    by_multiplicity = [r for times in (4, 3, 2, 1) for r in range(14, 1, -1) if histogram[r] == times]
    shape = sorted((n for n in histogram if n), reverse=True)
    if top is not None and suited:
        return ("royal_flush" if top == 14 else "straight_flush"), [top]
    if shape[0] == 4:
        return "four_of_a_kind", by_multiplicity
    if shape == [3, 2]:
        return "full_house", by_multiplicity
    if suited:
        return "flush", by_multiplicity
    if top is not None:
        return "straight", [top]
    named = {3: "three_of_a_kind", 2: "two_pair" if shape.count(2) == 2 else "one_pair", 1: "high_card"}
    return named[shape[0]], by_multiplicity


def reference_outcome(player: list[str], dealer: list[str]) -> str:
    p_category, p_ranks = reference_value(player)
    d_category, d_ranks = reference_value(dealer)
    p = (REFERENCE_ORDER.index(p_category), p_ranks)
    d = (REFERENCE_ORDER.index(d_category), d_ranks)
    return "win" if p > d else "lose" if p < d else "tie"


def reference_qualifies(dealer: list[str]) -> bool:
    category, _ = reference_value(dealer)
    ranks = {code[0] for code in dealer}
    return category != "high_card" or {"A", "K"} <= ranks


def test_the_reference_orders_categories_as_the_flow_does() -> None:
    assert list(CATEGORIES) == REFERENCE_ORDER


TEN_CARDS = st.lists(st.sampled_from(ALL_CODES), min_size=10, max_size=10, unique=True)


@settings(max_examples=500, deadline=None)
@given(cards=TEN_CARDS)
def test_random_hands_match_the_reference(cards: list[str]) -> None:
    a, b = cards[:5], cards[5:]
    value = evaluate(hand(*a))
    assert (value.category, list(value.ranks)) == reference_value(a)
    assert compare(value, evaluate(hand(*b))) == reference_outcome(a, b)
    assert dealer_qualifies(value) == reference_qualifies(a)


@settings(max_examples=300, deadline=None)
@given(
    ranks=st.lists(st.sampled_from("A23456789TJQK"), min_size=5, max_size=5).filter(
        lambda ranks: max(ranks.count(r) for r in ranks) <= 4
    ),
    suits=st.lists(st.sampled_from("SHDC"), min_size=5, max_size=5),
)
def test_random_rank_patterns_match_the_reference(ranks: list[str], suits: list[str]) -> None:
    """Pairs, trips and quads are rare in random hands: draw the ranks first, then make the cards distinct."""
    codes: list[str] = []
    for rank, suit in zip(ranks, suits, strict=True):
        free = [s for s in "SHDC" if rank + s not in codes]
        codes.append(rank + (suit if suit in free else free[0]))
    value = evaluate(hand(*codes))
    assert (value.category, list(value.ranks)) == reference_value(codes)


# --- the flow: dealing order and the decision window ------------------------------------------------------


def test_a_round_with_three_hands_exactly() -> None:
    table = Table(StudSettings(hands=3, betting_seconds=10, decision_seconds=20))
    out = table.tick()
    assert event_types(out) == ["round.opened"]
    opened = only(out, "round.opened")
    assert opened == {
        "game": "stud",
        "round_id": "stud1-0000001",
        "round_number_in_shoe": None,
        "betting_closes_at": "2023-11-14T22:13:30.000Z",
        "last_round_of_shoe": False,
    }
    assert out.requests == [LOCK]
    out = table.tick(10)
    assert event_types(out) == ["round.betting_closed"] and out.requests == [UNLOCK]
    assert table.flow.prompt == "Deal to Hand 1"
    hands = [
        ["AS", "KS", "QS", "JS", "TS"],
        ["2H", "2D", "9C", "9S", "4H"],
        ["3C", "5D", "7H", "8C", "JD"],
    ]
    prompts = []
    out = FlowOutput()
    for code in round_robin(hands):
        out.extend(table.card(code))
        prompts.append(table.flow.prompt)
    assert prompts[:4] == ["Deal to Hand 2", "Deal to Hand 3", "Deal to Hand 1", "Deal to Hand 2"]
    assert prompts[-1] == "Deal to Dealer"
    assert dealt_positions(out) == [(hands[i % 3][i // 3], f"hand{i % 3 + 1}", i // 3) for i in range(15)]
    out = table.card("AH")
    assert dealt_positions(out) == [("AH", "dealer", 0)]
    assert out.requests == [LOCK]  # the players decide: no card may come out
    assert table.flow.prompt == "Players decide: bet or fold — do not deal"
    state = table.flow.public_state()
    assert (state["stage"], state["next_position"]) == ("deciding", None)
    assert state["decisions_close_at"] == "2023-11-14T22:13:50.000Z"  # dealt at ...30 + 20
    assert table.tick(19.9).events == []
    out = table.tick(0.1)  # nobody said players_done: the timer ends the decisions
    assert out.events == [] and out.requests == [UNLOCK]
    assert table.flow.public_state()["next_position"] == "dealer"
    out = table.deal("KD", "7C", "5S", "3D")
    assert dealt_positions(out) == [
        ("KD", "dealer", 1),
        ("7C", "dealer", 2),
        ("5S", "dealer", 3),
        ("3D", "dealer", 4),
    ]
    assert event_types(out)[-2:] == ["round.result", "round.closed"]
    (result,) = validated_results(out)
    assert result.model_dump() == {
        "game": "stud",
        "round_id": "stud1-0000001",
        "hands": [
            {"cards": ["AS", "KS", "QS", "JS", "TS"], "category": "royal_flush", "ranks": [14]},
            {"cards": ["2H", "2D", "9C", "9S", "4H"], "category": "two_pair", "ranks": [9, 2, 4]},
            {"cards": ["3C", "5D", "7H", "8C", "JD"], "category": "high_card", "ranks": [11, 8, 7, 5, 3]},
        ],
        "dealer": {
            "cards": ["AH", "KD", "7C", "5S", "3D"],
            "category": "high_card",
            "ranks": [14, 13, 7, 5, 3],
        },
        "dealer_qualifies": True,
        "outcomes": ["win", "win", "lose"],
        "manual_cards": [],
    }
    assert table.flow.prompt == "Dealer has high card (qualifies) — Hand 1 wins, Hand 2 wins, Hand 3 loses"
    assert table.flow.public_state()["stage"] == "waiting"


def test_players_done_ends_the_decisions_early_and_only_then() -> None:
    table = Table()
    with pytest.raises(InputRejected, match="not deciding"):
        table.players_done()
    table.tick()
    with pytest.raises(InputRejected, match="not deciding"):  # betting open
        table.players_done()
    table.tick(15)
    table.deal("2S", "3S", "4S", "5S")
    with pytest.raises(InputRejected, match="not deciding"):  # the hand is not complete
        table.players_done()
    table.deal("9H", "AD")
    out = table.players_done()
    assert out.events == [] and out.requests == [UNLOCK]
    assert table.flow.prompt == "Deal to Dealer"
    with pytest.raises(InputRejected, match="not deciding"):  # once only
        table.players_done()
    assert table.tick(60).requests == []  # the decision timer is gone
    (result,) = validated_results(table.deal("AC", "KD", "KH", "7C"))
    assert result.hands[0].category == "high_card" and result.dealer.category == "two_pair"
    assert result.outcomes == ["lose"]
    assert table.flow.prompt == "Dealer has two pair (qualifies) — the hand loses"


def test_a_dealer_who_does_not_qualify_is_still_compared() -> None:
    table = Table()
    table.open_and_close_betting()
    table.deal("2S", "2H", "7D", "8C", "9S", "KC")
    table.players_done()
    (result,) = validated_results(table.deal("QC", "JH", "6D", "4S"))
    assert result.dealer_qualifies is False
    assert result.outcomes == ["win"]
    assert table.flow.prompt == "Dealer has high card (does not qualify) — the hand wins"


def test_a_tie_with_the_dealer() -> None:
    table = Table()
    table.open_and_close_betting()
    table.deal("AS", "KH", "7D", "5C", "3S", "AD")
    table.players_done()
    (result,) = validated_results(table.deal("KC", "7H", "5S", "3D"))
    assert result.outcomes == ["tie"]
    assert result.hands[0].ranks == result.dealer.ranks == [14, 13, 7, 5, 3]


def test_close_betting_input_and_unknown_inputs() -> None:
    table = Table()
    table.tick()
    out = table.flow.on_command(CloseBetting(), table.now)
    assert only(out, "round.betting_closed")["reason"] == "input"
    with pytest.raises(InputRejected, match="betting is not open"):
        table.flow.on_command(CloseBetting(), table.now)
    with pytest.raises(InputRejected, match="no input 'new_shoe'"):
        table.flow.on_command(NewShoe(), table.now)


# --- cards out of procedure ------------------------------------------------------------------------------


def test_cards_out_of_procedure_are_held_for_the_supervisor() -> None:
    table = Table()
    before = table.card("2S")
    assert held(before) == {
        "card": "2S",
        "reason": "no round is open yet",
        "message": "Card 2S came out of procedure (no round is open yet): put it aside",
        "raw": "CARD 1 2S",
    }
    assert table.flow.out_of_procedure is not None and table.flow.out_of_procedure.round_id is None
    table.tick()
    during_betting = table.card("2S")
    reason = held(during_betting)["reason"]
    assert reason == "betting is still open: deal only after betting closes"
    table.tick(15)
    table.deal("2S", "3S", "4S", "5S", "6S", "AD")
    deciding = table.card("KD")
    assert held(deciding)["reason"] == (
        "the players are deciding: deal to the dealer only when they are done"
    )
    assert held(table.noread())["message"].startswith(
        "An unread card came out of procedure (the players are deciding"
    )
    with pytest.raises(InputRejected, match="no unread card is waiting"):
        table.manual("KD")
    table.players_done()
    assert "already came out" in held(table.card("AD"))["reason"]
    assert "is not a card code" in held(table.card("1X"))["reason"]
    cut = table.read(CutCardSeen(device="shoe", time=table.now, raw="CUT 5", ref="5"))
    assert "cut card has no place" in only(cut, "card.rejected")["reason"]
    assert table.card("KD", device="wheel").events == []
    table.deal("KD", "KH", "KC", "KS")
    after = table.card("QS")
    assert held(after)["reason"] == (
        "the round is over: no card is expected until the next round's betting closes"
    )
    assert table.flow.composition.cards_dealt == 10


def test_each_round_has_a_fresh_deck() -> None:
    table = Table(StudSettings(round_gap_seconds=2))
    table.open_and_close_betting()
    table.deal("2S", "3S", "4S", "5S", "6S", "AD")
    table.players_done()
    table.deal("KD", "KH", "KC", "KS")
    assert table.tick(1.9).events == []
    out = table.tick(0.1)
    assert only(out, "round.opened")["round_id"] == "stud1-0000002"
    assert table.flow.public_state()["cards_left_in_deck"] == 52
    table.tick(15)
    assert dealt_positions(table.card("2S")) == [("2S", "hand1", 0)]


# --- no-reads, re-scans, hand-entered cards ----------------------------------------------------------------


def test_an_unread_dealer_card_holds_the_decisions_until_it_is_known() -> None:
    table = Table(StudSettings(decision_seconds=5))
    table.open_and_close_betting()
    table.deal("2S", "3S", "4S", "5S", "6S")
    out = table.noread("20")
    assert event_types(out) == ["card.unreadable"]
    state = table.flow.public_state()
    assert (state["stage"], state["next_position"]) == ("dealing_hands", "dealer")
    assert state["awaiting_rescan"] is True
    assert table.tick(60).events == []
    with pytest.raises(InputRejected, match="not deciding"):
        table.players_done()
    out = table.card("AD", rescan_of="20")
    dealt = only(out, "card.dealt")
    assert (dealt["position"], dealt["rescan"], dealt["raw"]) == ("dealer", True, "NOREAD 20\nRESCAN 20 AD")
    assert out.requests == [LOCK]
    assert table.flow.public_state()["stage"] == "deciding"
    assert table.tick(5).requests == [UNLOCK]  # the window starts with the known card, not the no-read


def test_noread_rescan_and_manual_card_while_dealing_the_hands() -> None:
    table = Table(StudSettings(hands=2))
    table.open_and_close_betting()
    table.deal("2S")
    table.noread("7")
    assert table.flow.rounds.started is True
    assert "re-scan the unread card first" in held(table.card("9D"))["reason"]
    assert "another card came out unread" in held(table.noread("8"))["reason"]
    assert "already came out" in held(table.card("2S", rescan_of="7"))["reason"]
    out = table.manual("3H")
    assert dealt_positions(out) == [("3H", "hand2", 0)]
    assert only(out, "card.dealt")["raw"] == "NOREAD 7\nmanual_card 3H"
    assert only(out, "card.dealt")["manual"] is True
    assert "no unread card is waiting" in held(table.card("4H", rescan_of="7"))["reason"]
    with pytest.raises(InputRejected, match="no unread card is waiting"):
        table.manual("4H")  # the next card is expected, but the shoe reads it
    assert dealt_positions(table.card("4H")) == [("4H", "hand1", 1)]
    assert table.flow.manual_cards == [Card.parse("3H")]


# --- the runtime forwards players_done from the rules engine ----------------------------------------------


def test_the_runtime_forwards_players_done_to_the_flow() -> None:
    flow = make_flow("stud", TABLE, StudSettings())
    assert isinstance(flow, StudFlow)
    core = TableCore(table_id=TABLE, game="stud", flow=flow, devices=["shoe"])
    players_done = parse_command("inputs", "players_done", {"transaction": "t9"}, by="rules-engine")
    with pytest.raises(CommandError, match="not deciding"):
        core.on_command(players_done, T0)
    core.on_reading(DeviceOnline(device="shoe", time=T0), T0)
    core.on_tick(T0)
    core.on_tick(T0 + 15)
    for ref, code in enumerate(["2S", "3S", "4S", "5S", "6S", "AD"]):
        step = core.on_reading(CardSeen(device="shoe", time=T0 + 15, code=code, ref=str(ref)), T0 + 15)
        assert [event.type for event in step.events] == ["card.dealt"]
    core.on_command(parse_command("commands", "pause", {}, by="supervisor"), T0 + 16)
    with pytest.raises(CommandError, match="the table is paused"):
        core.on_command(players_done, T0 + 16)
    core.on_command(parse_command("commands", "resume", {}, by="supervisor"), T0 + 16)
    step, reply = core.on_command(players_done, T0 + 17)
    assert step.requests == [UNLOCK]
    assert reply["state"]["game_state"]["next_position"] == "dealer"


# --- voids, pauses, state ---------------------------------------------------------------------------------


def test_void_mid_round_and_the_next_round() -> None:
    table = Table(StudSettings(round_gap_seconds=1))
    with pytest.raises(InputRejected, match="no round to void"):
        table.flow.void_round(table.now, "x", "supervisor")
    table.open_and_close_betting()
    table.deal("2S", "3S", "4S", "5S", "6S", "AD")
    out = table.flow.void_round(table.now, "misdeal", "supervisor")
    assert event_types(out) == ["round.voided"] and out.requests == [LOCK]
    state = table.flow.public_state()
    assert (state["stage"], state["hands"], state["dealer"]) == ("waiting", [[]], [])
    assert table.flow.prompt == "Round voided — collect the cards and take the shuffled deck"
    assert table.tick(60).events[0].type == "round.opened"


def test_pause_locks_and_resume_unlocks_only_when_a_card_is_wanted() -> None:
    table = Table()
    table.tick()
    assert table.flow.on_pause(table.now).requests == [LOCK]
    assert table.flow.on_resume(table.now).requests == []  # betting
    table.tick(15)
    assert table.flow.on_resume(table.now).requests == [UNLOCK]
    table.deal("2S", "3S", "4S", "5S", "6S", "AD")
    assert table.flow.on_resume(table.now).requests == []  # deciding
    table.players_done()
    assert table.flow.on_resume(table.now).requests == [UNLOCK]


def test_public_state_is_json_and_complete() -> None:
    table = Table(StudSettings(hands=2))
    table.open_and_close_betting()
    table.deal("2S", "3H", "4S")
    state = card_table.public_state_json(table.flow)
    assert state == {
        "game": "stud",
        "phase": "in_play",
        "stage": "dealing_hands",
        "round_id": "stud1-0000001",
        "betting_closes_at": None,
        "decisions_close_at": None,
        "hands": [["2S", "4S"], ["3H"]],
        "dealer": [],
        "next_position": "hand2",
        "awaiting_rescan": False,
        "cards_left_in_deck": 49,
        "prompt": "Deal to Hand 2",
    }


def test_a_pickled_flow_resumes_exactly_where_it_was() -> None:
    table = Table(StudSettings(hands=1, decision_seconds=8))
    table.open_and_close_betting()
    table.deal("2S", "3S", "4S", "5S", "6S", "AD")
    restored = card_table.pickled_and_restored(table.flow)
    for flow in (table.flow, restored):
        assert flow.on_tick(table.now + 8).requests == [UNLOCK]
        out = FlowOutput()
        for ref, code in enumerate(["KD", "KH", "KC", "KS"]):
            seen = CardSeen(device="shoe", time=table.now, code=code, ref=str(ref))
            out.extend(flow.on_reading(seen, table.now))
        (result,) = validated_results(out)
        assert result.hands[0].category == "straight_flush" and result.outcomes == ["win"]
    assert restored.public_state() == table.flow.public_state()


@pytest.mark.parametrize(
    "bad",
    [
        {"hands": 0},
        {"hands": 8},
        {"decks": 2},
        {"betting_seconds": 0},
        {"decision_seconds": 0},
        {"round_gap_seconds": -1},
        {"shoe_device": ""},
        {"players": 2},
    ],
)
def test_settings_refuse_what_cannot_work(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        StudSettings.model_validate(bad)


# --- whole rounds from random decks -----------------------------------------------------------------------


def reference_round(deck: list[str], hands: int) -> dict[str, Any]:
    """Hand i gets deck[i], deck[i + hands], ... (round-robin); the dealer the next five."""
    player_hands = [deck[i : 5 * hands : hands] for i in range(hands)]
    dealer = deck[5 * hands : 5 * hands + 5]
    expected_hands = []
    for cards in player_hands:
        category, ranks = reference_value(cards)
        expected_hands.append({"cards": cards, "category": category, "ranks": ranks})
    category, ranks = reference_value(dealer)
    return {
        "hands": expected_hands,
        "dealer": {"cards": dealer, "category": category, "ranks": ranks},
        "dealer_qualifies": reference_qualifies(dealer),
        "outcomes": [reference_outcome(cards, dealer) for cards in player_hands],
    }


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    hands=st.integers(1, 7),
    rounds=st.integers(1, 2),
    noise=st.sampled_from([0.0, 0.1, 0.3]),
    by_input=st.booleans(),
)
def test_random_decks_match_the_reference(
    seed: int, hands: int, rounds: int, noise: float, by_input: bool
) -> None:
    rng = random.Random(seed)
    table = Table(StudSettings(hands=hands, betting_seconds=5, decision_seconds=7, round_gap_seconds=1))

    def feed(code: str, dealt: list[str]) -> FlowOutput:
        while rng.random() < noise:
            junk = table.card(rng.choice(card_table.GARBAGE + dealt))
            held(junk)
        if rng.random() < noise:
            ref = table.next_ref()
            out = table.noread(ref)
            if rng.random() < 0.5:
                out.extend(table.card(code, rescan_of=ref))
            else:
                out.extend(table.manual(code))
                by_hand.append(code)
        else:
            out = table.card(code)
        assert [e.data["card"] for e in out.events if e.type == "card.dealt"] == [code]
        dealt.append(code)
        if rng.random() < 0.05:
            table.flow = pickle.loads(pickle.dumps(table.flow))
        return out

    for number in range(1, rounds + 1):
        deck = list(ALL_CODES)
        rng.shuffle(deck)
        table.open_and_close_betting()
        dealt: list[str] = []
        by_hand: list[str] = []
        out = FlowOutput()
        for code in deck[: 5 * hands + 1]:
            out.extend(feed(code, dealt))
        assert table.flow.public_state()["stage"] == "deciding"
        held(table.card(deck[5 * hands + 1]))
        if by_input:
            table.players_done()
        else:
            table.tick(table.settings.decision_seconds)
        for code in deck[5 * hands + 1 : 5 * hands + 5]:
            out.extend(feed(code, dealt))
        (result,) = validated_results(out)
        assert result.round_id == f"{TABLE}-{number:07d}"
        assert result.model_dump(exclude={"game", "round_id", "manual_cards"}) == reference_round(deck, hands)
        assert result.manual_cards == by_hand
        positions = dealt_positions(out)
        for i, expected in enumerate(reference_round(deck, hands)["hands"]):
            assert [card for card, where, _ in positions if where == f"hand{i + 1}"] == expected["cards"]
