"""The game-independent view of a card table for the dealer's panel: `CardFlow.positions()`.

Every card game lays out its places as `{"name", "label", "cards", "total", "next"}` in table order, and
`next` marks where the next card goes (the position the game's own `next_position` names).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cards import full_deck
from controller.commands import PlayersDone
from controller.flow import FlowOutput, InputRejected
from controller.games import game_spec, make_flow
from controller.games.andar_bahar import AndarBaharFlow, AndarBaharSettings
from controller.games.baccarat import BaccaratFlow, BaccaratSettings
from controller.games.card_flow import CardFlow
from controller.games.stud import StudFlow, StudSettings
from drivers.readings import CardSeen, CardUnread
from tests.helpers.card_game import card_game_kit, card_game_kits, card_games

pytestmark = pytest.mark.unit

T0 = 1_700_000_000.0
ALL_CODES = [card.code for card in full_deck()]
POSITION_KEYS = {"name", "label", "cards", "total", "next"}


class Dealer:
    """Drives any card flow the way a dealer and a shoe would."""

    def __init__(self, flow: CardFlow) -> None:
        self.flow = flow
        self.now = T0
        self.refs = 0

    def tick(self, advance: float = 0.0) -> FlowOutput:
        self.now += advance
        return self.flow.on_tick(self.now)

    def card(self, code: str, rescan_of: str | None = None) -> FlowOutput:
        self.refs += 1
        ref = rescan_of or str(self.refs)
        seen = CardSeen(
            device="shoe", time=self.now, raw=f"CARD {ref} {code}", code=code, ref=ref, rescan_of=rescan_of
        )
        return self.flow.on_reading(seen, self.now)

    def noread(self) -> str:
        self.refs += 1
        ref = str(self.refs)
        self.flow.on_reading(CardUnread(device="shoe", time=self.now, raw=f"NOREAD {ref}", ref=ref), self.now)
        return ref

    def deal(self, *codes: str) -> None:
        for code in codes:
            out = self.card(code)
            assert "card.dealt" in [event.type for event in out.events], f"{code} was not dealt"

    def positions(self) -> list[dict[str, Any]]:
        view = self.flow.positions()
        assert json.loads(json.dumps(view)) == view  # what the panel receives is plain JSON
        return view


def summary(view: list[dict[str, Any]]) -> list[tuple[str, list[str], int | None, bool]]:
    return [(place["name"], place["cards"], place["total"], place["next"]) for place in view]


# -- baccarat ------------------------------------------------------------------------------------------------


def test_baccarat_positions_follow_the_deal_and_the_third_card_rule() -> None:
    table = Dealer(BaccaratFlow("bac1", BaccaratSettings(betting_seconds=10)))
    assert table.positions() == [
        {"name": "player", "label": "Player", "cards": [], "total": None, "next": False},
        {"name": "banker", "label": "Banker", "cards": [], "total": None, "next": False},
    ]
    table.tick()
    # Betting open: the round already knows its first card goes to Player (as `next_position` says).
    assert summary(table.positions()) == [("player", [], None, True), ("banker", [], None, False)]
    table.tick(10)
    table.deal("2S", "3C", "4D")
    assert summary(table.positions()) == [("player", ["2S", "4D"], 6, False), ("banker", ["3C"], 3, True)]
    table.deal("TH")  # banker 3, player stands on 6: banker draws
    assert summary(table.positions()) == [
        ("player", ["2S", "4D"], 6, False),
        ("banker", ["3C", "TH"], 3, True),
    ]
    table.deal("9C")  # banker 2: the hand is complete; it stays on show, and no card is next
    assert table.flow.rounds.round_id is None
    assert summary(table.positions()) == [
        ("player", ["2S", "4D"], 6, False),
        ("banker", ["3C", "TH", "9C"], 2, False),
    ]


def test_baccarat_positions_agree_with_the_rest_of_the_state() -> None:
    table = Dealer(BaccaratFlow("bac1", BaccaratSettings(betting_seconds=10)))
    table.tick()
    table.tick(10)
    table.deal("KS", "AH")
    state, view = table.flow.public_state(), table.positions()
    assert [place["cards"] for place in view] == [state["player"], state["banker"]]
    assert [place["total"] for place in view] == [state["player_total"], state["banker_total"]]
    assert [place["name"] for place in view if place["next"]] == [state["next_position"]] == ["player"]


# -- andar bahar ---------------------------------------------------------------------------------------------


def test_andar_bahar_positions_game_card_then_alternating_sides() -> None:
    table = Dealer(AndarBaharFlow("ab1", AndarBaharSettings(betting_seconds=10)))
    assert summary(table.positions()) == [
        ("game", [], None, False),
        ("andar", [], None, False),
        ("bahar", [], None, False),
    ]
    assert [place["label"] for place in table.positions()] == ["Game card", "Andar", "Bahar"]
    table.tick()  # asks for the game card
    assert [place["next"] for place in table.positions()] == [True, False, False]
    table.deal("KS")
    # Betting open after the game card: no card is wanted, so no place is next.
    assert summary(table.positions()) == [
        ("game", ["KS"], None, False),
        ("andar", [], None, False),
        ("bahar", [], None, False),
    ]
    table.tick(10)
    assert [place["next"] for place in table.positions()] == [False, True, False]
    table.deal("AC")
    assert [place["next"] for place in table.positions()] == [False, False, True]
    # An unread card is still the Bahar card: the re-scan goes there.
    ref = table.noread()
    assert summary(table.positions())[2] == ("bahar", [], None, True)
    table.card("QS", rescan_of=ref)
    assert summary(table.positions()) == [
        ("game", ["KS"], None, False),
        ("andar", ["AC"], None, True),
        ("bahar", ["QS"], None, False),
    ]
    table.deal("KD")  # matches the game card: Andar wins, the round is over
    assert summary(table.positions()) == [
        ("game", ["KS"], None, False),
        ("andar", ["AC", "KD"], None, False),
        ("bahar", ["QS"], None, False),
    ]


# -- stud ----------------------------------------------------------------------------------------------------


def test_stud_positions_go_round_the_hands_then_to_the_dealer() -> None:
    table = Dealer(StudFlow("stud1", StudSettings(hands=3, betting_seconds=10, decision_seconds=20)))
    table.tick()
    view = table.positions()
    assert [(place["name"], place["label"]) for place in view] == [
        ("hand1", "Hand 1"),
        ("hand2", "Hand 2"),
        ("hand3", "Hand 3"),
        ("dealer", "Dealer"),
    ]
    assert not any(place["next"] for place in view)  # antes are being placed: no card wanted
    table.tick(10)
    assert [place["next"] for place in table.positions()] == [True, False, False, False]
    table.deal("2S", "3H")
    assert summary(table.positions()) == [
        ("hand1", ["2S"], None, False),
        ("hand2", ["3H"], None, False),
        ("hand3", [], None, True),
        ("dealer", [], None, False),
    ]
    codes = iter(code for code in ALL_CODES if code not in ("2S", "3H"))
    table.deal(*(next(codes) for _ in range(13)))  # hand3's first card and four more rounds of hands
    assert [place["next"] for place in table.positions()] == [False, False, False, True]
    table.deal(next(codes))  # the dealer's up card: the players decide, no card is wanted
    assert [len(place["cards"]) for place in table.positions()] == [5, 5, 5, 1]
    assert not any(place["next"] for place in table.positions())
    table.flow.on_command(PlayersDone(), table.now)
    assert [place["next"] for place in table.positions()] == [False, False, False, True]


def test_stud_one_common_hand_is_called_the_hand() -> None:
    table = Dealer(StudFlow("stud1", StudSettings(hands=1)))
    assert [(place["name"], place["label"]) for place in table.positions()] == [
        ("hand1", "Hand"),
        ("dealer", "Dealer"),
    ]


# -- every card game -----------------------------------------------------------------------------------------

#: the tables the walk deals at, of every card game of the registry (each game's tests folder names its own:
#: `card_game.py`, tests/helpers/card_game.py), by name -> (game, settings)
TABLES: dict[str, tuple[str, dict[str, Any]]] = {
    name: (game, dict(settings))
    for game in card_games()
    if game in card_game_kits()
    for name, settings in card_game_kit(game).position_tables.items()
}
#: mostly cards, so that rounds get far (to the dealer's cards in stud, to results)
STEPS = ["card"] * 6 + ["tick"] * 2 + ["noread", "rescan", "void", "players_done"]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    table_name=st.sampled_from(sorted(TABLES)),
    deck=st.permutations(ALL_CODES),
    steps=st.lists(st.sampled_from(STEPS), min_size=40, max_size=150),
)
def test_positions_always_agree_with_next_position_and_the_cards_out(
    table_name: str, deck: list[str], steps: list[str]
) -> None:
    game, settings = TABLES[table_name]
    flow = make_flow(game, "t1", game_spec(game).settings.model_validate(settings))
    assert isinstance(flow, CardFlow)
    table = Dealer(flow)
    cards_on_table = card_game_kit(game).cards_on_table
    drawn = 0
    pending: str | None = None
    for kind in steps:
        if kind == "tick":
            table.tick(2.0)
        elif kind == "card" or (kind == "rescan" and pending is not None):
            # A shuffled deck, dealt round and round: a card of the deck may come again in a later round.
            table.card(deck[drawn % len(deck)], rescan_of=pending if kind == "rescan" else None)
            drawn += 1
        elif kind == "noread":
            pending = table.noread()
        elif kind in ("void", "players_done"):
            try:
                if kind == "void":
                    table.flow.void_round(table.now, "test", "supervisor")
                else:
                    table.flow.on_command(PlayersDone(), table.now)
            except InputRejected:
                pass
        view = table.positions()
        state = table.flow.public_state()
        assert all(place.keys() == POSITION_KEYS for place in view)
        assert [place["name"] for place in view if place["next"]] == (
            [state["next_position"]] if state["next_position"] is not None else []
        )
        assert [card for place in view for card in place["cards"]] == cards_on_table(state)
    # A table restored from its state record shows the same view.
    restored = type(table.flow)(table.flow.rounds.table_id, table.flow.settings)
    restored.restore_state(json.loads(json.dumps(table.flow.export_state())))
    assert restored.positions() == table.positions()


@pytest.mark.parametrize("game", card_games())
def test_every_card_game_names_the_tables_the_walk_deals_at(game: str) -> None:
    # a card game the walk above would not deal at fails here, with what to add
    assert card_game_kit(game).position_tables, f"{game}: its card_game.py names no position_tables"
