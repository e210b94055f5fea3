"""`tablectl replay --game roulette --protocol cammegh-ss2` in its own process: the vendor's example, as
raw bytes and as a timed capture with LF line ends, gives exactly one result (25).

Its integration tests; the unit ones are in `tests/unit/games/roulette/test_roulette_replay.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.cli import tablectl
from tests.helpers.roulette_replay import jsonl
from tests.helpers.wheel_example import VENDOR_EXAMPLE

pytestmark = pytest.mark.integration


def cli_replay(capture: Path) -> list[dict[str, Any]]:
    done = tablectl("replay", "--game", "roulette", "--protocol", "cammegh-ss2", str(capture))
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_vendor_example_raw_bytes_gives_exactly_one_result_25(tmp_path: Path) -> None:
    capture = tmp_path / "vendor.bin"
    capture.write_bytes("".join(line + "\r\n" for line in VENDOR_EXAMPLE).encode())
    envelopes = cli_replay(capture)
    assert [e["type"] for e in envelopes] == [
        "device.online",
        "round.opened",
        "round.betting_closed",
        "round.result",
        "round.closed",
    ]
    result = envelopes[3]["data"]
    assert result["number"] == 25 and result["color"] == "red" and result["spin"] == 11
    assert result["rotor_rpm"] == 16.5 and result["direction"] == "anticlockwise"
    assert (
        result["dozen"] == 3
        and result["column"] == 1
        and result["parity"] == "odd"
        and result["range"] == "high"
    )
    assert "25" in result["raw"] and "*X;5;011;25" in result["raw"]


def test_vendor_example_as_a_timed_capture_with_lf_endings(tmp_path: Path) -> None:
    lines = [(1000.0 + 0.5 * i, text) for i, text in enumerate(VENDOR_EXAMPLE)]
    envelopes = cli_replay(jsonl(tmp_path / "vendor.jsonl", lines, end="\n"))
    results = [e for e in envelopes if e["type"] == "round.result"]
    assert [r["data"]["number"] for r in results] == [25]
    assert results[0]["time"].startswith("1970-01-01T00:16:43")  # the capture's clock, not the replay's
    assert not [e for e in envelopes if e["type"] in ("device.fault", "round.voided", "reading.rejected")]
