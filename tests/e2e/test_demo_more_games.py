"""`tablectl demo` for the single-deck card games: whole rounds as published, a fresh deck every round.

Its e2e tests; the unit ones are in `tests/unit/core/test_demo_more_games.py`."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import jsonschema
import pytest

from controller.games.andar_bahar import AndarBaharResult
from controller.games.stud import StudResult
from controller.schema import event_schema
from controller.testing.demo_process import demo_command as demo_command_of
from controller.testing.demo_process import run_demos

pytestmark = pytest.mark.e2e

ROUNDS = 2


def demo_command(game: str) -> list[str]:
    return demo_command_of("--game", game, "--rounds", str(ROUNDS), "--json", "--panel-port", "0")


@pytest.fixture(scope="module")
def published() -> dict[str, list[dict[str, Any]]]:
    """Both demos run side by side (two rounds take about 30 s)."""
    outputs = run_demos({game: demo_command(game) for game in ("andar_bahar", "stud")})
    envelopes_by_game: dict[str, list[dict[str, Any]]] = {}
    for game, (stdout, _) in outputs.items():
        envelopes = [json.loads(line) for line in stdout.splitlines()]
        for envelope in envelopes:
            jsonschema.validate(envelope, event_schema(envelope["type"]))
        assert [int(e["sequence"]) for e in envelopes] == list(range(1, len(envelopes) + 1))
        assert envelopes[-1]["type"] == "round.closed"
        envelopes_by_game[game] = envelopes
    return envelopes_by_game


def accepted_cards(envelopes: list[dict[str, Any]], round_id: str) -> list[dict[str, Any]]:
    return [e["data"] for e in envelopes if e["type"] == "card.dealt" and e["subject"] == round_id]


def test_andar_bahar_demo_plays_whole_rounds_from_a_fresh_deck(
    published: dict[str, list[dict[str, Any]]],
) -> None:
    envelopes = published["andar_bahar"]
    results = [AndarBaharResult.model_validate(e["data"]) for e in envelopes if e["type"] == "round.result"]
    assert len(results) == ROUNDS
    assert len([e for e in envelopes if e["type"] == "round.closed"]) == ROUNDS
    for result in results:
        dealt = accepted_cards(envelopes, result.round_id)
        assert [d["card"] for d in dealt if d["position"] == "game"] == [result.game_card]
        assert dealt[0]["position"] == "game"
        assert [d["card"] for d in dealt if d["position"] == "andar"] == result.andar
        assert [d["card"] for d in dealt if d["position"] == "bahar"] == result.bahar
        codes = [d["card"] for d in dealt]
        assert len(codes) == len(set(codes))  # one deck
        matching = (result.andar if result.winner == "andar" else result.bahar)[-1]
        assert matching[0] == result.game_card[0]
        assert all(code[0] != result.game_card[0] for code in codes[1:-1])
        # the round opened with the game card, and the countdown came after it
        kinds = [e["type"] for e in envelopes if e["subject"] == result.round_id]
        assert kinds[:2] == ["round.opened", "card.dealt"]
        assert kinds.index("round.betting_closed") < kinds.index("card.dealt", 2)


@pytest.mark.parametrize("game", ["andar_bahar", "stud"])
def test_every_demo_round_is_dealt_from_a_deck_the_simulated_shuffler_counted(
    published: dict[str, list[dict[str, Any]]], game: str
) -> None:
    envelopes = published[game]
    kinds = [e["type"] for e in envelopes]
    opened = [i for i, kind in enumerate(kinds) if kind == "round.opened"]
    assert len(opened) == ROUNDS
    started = [e["data"] for e in envelopes if e["type"] == "shuffle.started"]
    assert [s["reason"] for s in started] == ["table start"] + ["round over"] * (ROUNDS - 1)
    for index in opened:
        # the deck of every round: asked for, shuffled and counted before the round opened
        before = [e for e in envelopes[:index] if e["type"].startswith(("shuffle.", "round."))]
        *_, asked, done = before
        assert (asked["type"], done["type"]) == ("shuffle.started", "shuffle.done")
        assert done["data"]["shuffle_id"] == asked["data"]["shuffle_id"]
        assert (done["data"]["decks"], done["data"]["cards"]) == (1, 52)
        assert done["data"]["raw"].startswith("DONE ")
    assert "shuffle.failed" not in kinds


def test_stud_demo_plays_whole_rounds_with_the_decision_window_timing_out(
    published: dict[str, list[dict[str, Any]]],
) -> None:
    envelopes = published["stud"]
    results = [StudResult.model_validate(e["data"]) for e in envelopes if e["type"] == "round.result"]
    assert len(results) == ROUNDS
    for result in results:
        assert len(result.hands) == 3  # the demo's setting
        dealt = accepted_cards(envelopes, result.round_id)
        assert [d["position"] for d in dealt] == ["hand1", "hand2", "hand3"] * 5 + ["dealer"] * 5
        for i, stud_hand in enumerate(result.hands, start=1):
            assert [d["card"] for d in dealt if d["position"] == f"hand{i}"] == stud_hand.cards
        assert [d["card"] for d in dealt if d["position"] == "dealer"] == result.dealer.cards
        codes = [d["card"] for d in dealt]
        assert len(codes) == len(set(codes)) == 20
        dealer_times = [
            datetime.fromisoformat(e["time"])
            for e in envelopes
            if e["type"] == "card.dealt"
            and e["subject"] == result.round_id
            and e["data"]["position"] == "dealer"
        ]
        # nobody sent players_done: the demo's 2 s decision window ended by itself after the dealer's up card
        assert (dealer_times[1] - dealer_times[0]).total_seconds() >= 2.0
