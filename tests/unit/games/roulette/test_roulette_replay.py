"""`tablectl replay --game roulette --protocol cammegh-ss2`: the vendor's example, and the vendor's timing
windows running on the capture's own clock.

Its unit tests; the integration ones are in `tests/integration/test_roulette_replay.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.replay import replay_file
from tests.helpers.roulette_replay import jsonl

pytestmark = pytest.mark.unit


def spin(
    flags_in_3: str, seconds_in_3: float, *, flags_in_4: str = "0", seconds_in_4: float = 2.0
) -> list[str]:
    """One game at 0.5 s per status line, with chosen warning flags in states 3 and 4."""
    lines = ["*X;1;020; 7;0;180;0", "*X;2;021; 7;0;180;0"]
    lines += [f"*X;3;021; 7;{flags_in_3};180;0"] * int(seconds_in_3 / 0.5)
    lines += ["*X;3;021; 7;0;180;0"] * 2
    lines += [f"*X;4;021; 7;{flags_in_4};178;0"] * int(seconds_in_4 / 0.5)
    lines += [
        "*X;4;021; 7;0;176;0",
        "17",
        "*X;5;021;17;0;175;0",
        "*X;5;021;17;0;175;0",
        "*X;1;021;17;0;175;0",
    ]
    return lines


def timed(lines: list[str]) -> list[tuple[float, str]]:
    return [(2000.0 + 0.5 * i, text) for i, text in enumerate(lines)]


def replay_types(tmp_path: Path, lines: list[str]) -> list[tuple[str, dict[str, Any]]]:
    capture = jsonl(tmp_path / "capture.jsonl", timed(lines))
    return [(e.type, e.data) for e in replay_file("roulette", "cammegh-ss2", capture)]


def test_flag_8_within_3_s_of_state_3_is_ignored(tmp_path: Path) -> None:
    events = replay_types(tmp_path, spin("8", 2.5))
    assert [d["number"] for t, d in events if t == "round.result"] == [17]
    assert not [t for t, _ in events if t in ("device.fault", "round.paused")]


def test_flag_8_persisting_past_3_s_is_a_fault_that_pauses(tmp_path: Path) -> None:
    events = replay_types(tmp_path, spin("8", 4.0))
    faults = [d for t, d in events if t == "device.fault"]
    assert [f["code"] for f in faults] == ["LAUNCH_FAILED"]
    assert "round.paused" in [t for t, _ in events]
    # the result that follows while paused is held for the supervisor, not published
    assert "round.result" not in [t for t, _ in events]


def test_ball_not_detected_for_5_s_voids_the_game(tmp_path: Path) -> None:
    short = replay_types(tmp_path, spin("0", 1.0, flags_in_4="1", seconds_in_4=4.5))
    assert [d["number"] for t, d in short if t == "round.result"] == [17]
    long = replay_types(tmp_path, spin("0", 1.0, flags_in_4="1", seconds_in_4=6.0))
    voids = [d for t, d in long if t == "round.voided"]
    assert [(v["reason"], v["by"]) for v in voids] == [("ball not detected", "device")]
    assert "round.result" not in [t for t, _ in long]


def test_miss_spin_voids_at_once(tmp_path: Path) -> None:
    events = replay_types(tmp_path, spin("2", 0.5))
    assert [(d["reason"], d["by"]) for t, d in events if t == "round.voided"] == [("miss-spin", "device")]
    assert "round.result" not in [t for t, _ in events]
