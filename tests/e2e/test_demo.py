"""`tablectl demo`: the product's main job on its embedded default prints whole rounds, as published."""

from __future__ import annotations

import json

import jsonschema
import pytest

from controller.schema import event_schema
from controller.testing.demo_process import run_demo
from controller.testing.mosquitto import MosquittoBroker

pytestmark = pytest.mark.e2e


def demo(*args: str) -> list[dict]:
    stdout, _ = run_demo(*args)
    return [json.loads(line) for line in stdout.splitlines()]


def check_rounds(envelopes: list[dict], rounds: int) -> None:
    for envelope in envelopes:
        jsonschema.validate(envelope, event_schema(envelope["type"]))
    assert [int(e["sequence"]) for e in envelopes] == list(range(1, len(envelopes) + 1))
    results = [e for e in envelopes if e["type"] == "round.result"]
    closed = [e for e in envelopes if e["type"] == "round.closed"]
    assert len(results) == len(closed) == rounds
    for result, close in zip(results, closed, strict=True):
        assert result["subject"] == close["subject"]
    assert envelopes[-1]["type"] == "round.closed"


def check_past_the_shoes_end(envelopes: list[dict]) -> None:
    """The demo's first shoe ends (its cut card is early) and the next shoe's rounds are played."""
    types = [e["type"] for e in envelopes]
    assert types.count("shoe.started") == 2 and types.count("shoe.cut_card") == 1, types
    results = [e["data"] for e in envelopes if e["type"] == "round.result"]
    last = [r for r in results if r["last_round_of_shoe"]]
    assert len(last) == 1 and results[-1] is not last[0]
    assert results[-1]["round_number_in_shoe"] >= 1


def test_baccarat_demo_prints_complete_rounds_past_the_shoes_end_on_the_embedded_broker() -> None:
    stdout, stderr = run_demo("--game", "baccarat", "--rounds", "4", "--json")
    envelopes = [json.loads(line) for line in stdout.splitlines()]
    # the embedded broker has no ACL: MQTT 3.1.1's undetectable refusals cannot happen, nothing to warn of
    assert "MQTT 3.1.1" not in stderr, stderr
    check_rounds(envelopes, 4)
    check_past_the_shoes_end(envelopes)
    # with --json the last line goes to stderr: stdout is envelopes only (each line parsed above)
    assert "demo over after " in stderr and "4 round(s) played" in stderr
    for result in (e["data"] for e in envelopes if e["type"] == "round.result"):
        dealt = [
            e["data"] for e in envelopes if e["type"] == "card.dealt" and e["subject"] == result["round_id"]
        ]
        assert [d["card"] for d in dealt if d["position"] == "player"] == result["player"]["cards"]
        assert [d["card"] for d in dealt if d["position"] == "banker"] == result["banker"]["cards"]


def test_demo_on_an_external_broker_human_output(mosquitto: MosquittoBroker) -> None:
    stdout, _ = run_demo("--game", "baccarat", "--rounds", "1", "--mqtt-url", mosquitto.url, "--no-faults")
    lines = stdout.splitlines()
    assert any("round.result" in line and "Player" in line and "Banker" in line for line in lines)
    assert "round.closed" in lines[-2]
    # the demo's last line: what it published
    assert lines[-1].startswith("demo over after ") and "1 round(s) played, 1 result(s)" in lines[-1]
