"""`tablectl demo` for the three blackjack variants: rounds to completion as published (the disconnect policy
plays, as no rules engine is there), every envelope valid against its schema; Infinite's demo shows the burn,
the cut card, the reshuffle and the next shoe's burn; Live's demo goes past its shoe's end (its dealer loads
the next shoe and says so, `new_shoe`)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from controller.schema import event_schema
from controller.testing.blackjack_reference import names_card
from controller.testing.demo_process import demo_command, run_demos

pytestmark = pytest.mark.e2e

ROUNDS = {"blackjack": 6, "single_deck_blackjack": 3, "infinite_blackjack": 6}


@pytest.fixture(scope="module")
def published() -> dict[str, list[dict[str, Any]]]:
    outputs = run_demos(
        {
            game: demo_command("--game", game, "--rounds", str(rounds), "--json")
            for game, rounds in ROUNDS.items()
        }
    )
    return {game: [json.loads(line) for line in stdout.splitlines()] for game, (stdout, _) in outputs.items()}


@pytest.mark.parametrize("game", sorted(ROUNDS))
def test_the_demo_plays_whole_rounds(game: str, published: dict[str, list[dict[str, Any]]]) -> None:
    envelopes = published[game]
    for envelope in envelopes:
        jsonschema.validate(envelope, event_schema(envelope["type"]))
    results = [e["data"] for e in envelopes if e["type"] == "round.result"]
    assert len(results) >= ROUNDS[game] and all(r["game"] == game for r in results)
    trouble = [e for e in envelopes if e["type"] in ("round.paused", "round.voided", "card.rejected")]
    assert not trouble, [(e["type"], e["data"]) for e in trouble]
    decisions = [e["data"] for e in envelopes if e["type"] == "blackjack.decision"]
    assert decisions
    assert any(d["by"] == "player" for d in decisions), decisions  # the demo's players, over MQTT
    hole: str | None = None
    for envelope in envelopes:
        data = envelope["data"]
        if envelope["type"] == "card.face_down":
            revealed = [
                e["data"]["card"]
                for e in envelopes
                if e["type"] == "card.dealt"
                and e["subject"] == envelope["subject"]
                and e["data"]["index"] == 1
                if e["data"]["position"] == "dealer"
            ]
            hole = revealed[0]
        elif envelope["type"] == "card.dealt" and data["position"] == "dealer" and data["index"] == 1:
            hole = None
        elif hole is not None and not (envelope["type"] == "card.dealt" and data["card"] == hole):
            assert not names_card(json.dumps(envelope), hole)


def test_the_infinite_demo_burns_cuts_and_reshuffles(published: dict[str, list[dict[str, Any]]]) -> None:
    envelopes = published["infinite_blackjack"]
    types = [e["type"] for e in envelopes]
    burns = [e["data"] for e in envelopes if e["type"] == "shoe.burn" and e["data"]["done"]]
    assert len(burns) == 2 and all(b["burned"] == b["to_burn"] for b in burns)
    assert types.count("shoe.started") == 2 and types.count("shoe.cut_card") == 1
    results = [e["data"] for e in envelopes if e["type"] == "round.result"]
    last = [r for r in results if r["last_round_of_shoe"]]
    assert len(last) == 1
    after = results[results.index(last[0]) + 1 :]
    assert after and after[0]["round_in_shoe"] == 1 and after[0]["shoe_id"] != last[0]["shoe_id"]


def test_the_live_demo_goes_on_past_the_shoes_end(published: dict[str, list[dict[str, Any]]]) -> None:
    # Live Blackjack waits for the dealer's `new_shoe` after the cut-card round: the demo's dealer sends it
    # (before, the demo stopped there for good)
    envelopes = published["blackjack"]
    types = [e["type"] for e in envelopes]
    assert types.count("shoe.started") == 2 and types.count("shoe.cut_card") == 1, types
    results = [e["data"] for e in envelopes if e["type"] == "round.result"]
    last = [r for r in results if r["last_round_of_shoe"]]
    assert len(last) == 1
    after = results[results.index(last[0]) + 1 :]
    assert after and after[0]["round_in_shoe"] == 1
