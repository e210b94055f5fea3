"""`tablectl replay` in its own process: JSON Lines and raw captures of the same shoe give the same rounds.

Its integration tests; the unit ones are in `tests/unit/games/baccarat/test_replay.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.testing.baccarat_reference import as_expected, from_reference
from controller.testing.shoe_capture import record_shoes
from drivers.capture import CaptureWriter
from tests.helpers.cli import tablectl
from tests.helpers.replay import FAULTS

pytestmark = pytest.mark.integration


def test_cli_replay_of_jsonl_and_raw_captures_agree(tmp_path: Path) -> None:
    records, expected = record_shoes(1, seed=7, faults=FAULTS)
    jsonl = tmp_path / "shoe.jsonl"
    with CaptureWriter(jsonl) as writer:
        for record in records:
            writer.write(record.direction, record.data, record.t)
    raw = tmp_path / "shoe.bin"
    raw.write_bytes(b"".join(r.data for r in records if r.direction == "rx"))

    def run(capture: Path) -> list[dict[str, Any]]:
        done = tablectl("replay", "--game", "baccarat", "--protocol", "shoe-line", str(capture), timeout=120)
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    from_jsonl = run(jsonl)
    from_raw = run(raw)
    for envelopes in (from_jsonl, from_raw):
        results = [e["data"] for e in envelopes if e["type"] == "round.result"]
        assert [as_expected(r) for r in results] == [from_reference(r) for r in expected]

    # the raw capture has no clock, but both tell the same story event by event up to the shoe's end (after
    # it, only the timed capture goes on long enough for the next shoe's first round to open)
    def story(envelopes: list[dict[str, Any]]) -> list[tuple[str, Any]]:
        end = max(i for i, e in enumerate(envelopes) if e["type"] == "round.closed")
        return [(e["type"], e["data"]) for e in envelopes[: end + 1]]

    assert story(from_jsonl) == story(from_raw)
