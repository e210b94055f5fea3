"""`tablectl demo --game sicbo` in its own process: the simulated shaker, a synthetic camera drawing its
dice, whole rounds as published.

Its e2e tests; the unit ones are in `tests/unit/games/sicbo/test_sicbo_demo.py`."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from controller.games.sicbo import SicBoResult
from controller.schema import event_schema
from controller.testing.demo_process import run_demo

pytestmark = pytest.mark.e2e


def test_the_sicbo_demo_plays_rounds_read_by_the_camera() -> None:
    stdout, _ = run_demo("--game", "sicbo", "--rounds", "2", "--json", "--panel-port", "0", "--seed", "3")
    envelopes: list[dict[str, Any]] = [json.loads(line) for line in stdout.splitlines()]
    for envelope in envelopes:
        jsonschema.validate(envelope, event_schema(envelope["type"]))
    results = [SicBoResult.model_validate(e["data"]) for e in envelopes if e["type"] == "round.result"]
    assert len(results) == 2
    reads = [e["data"] for e in envelopes if e["type"] == "dice.read"]
    for result in results:
        read = next(r for r in reads if r["cycle_id"] == result.cycle_id)
        assert read["values"] == result.dice_in_frame and read["frame"] == result.frame
        assert result.frame.startswith("camera-frames/") and len(result.frame_sha256) == 64
