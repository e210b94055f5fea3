"""`tablectl replay --game roulette --protocol cammegh-ss2`: the vendor's example, and the vendor's timing
windows running on the capture's own clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.replay import replay_file
from tests.helpers.paths import REPO

# The example of the SS2's public developers guide (mode 1024)
VENDOR_EXAMPLE = [
    "*X;1;011;23;0;154;0",
    "*X;2;011;23;0;154;0",
    "*X;2;011;23;0;086;0",
    "*X;3;011;23;0;170;1",
    "*X;4;011;23;0;168;1",
    "*X;4;011;23;0;165;1",
    "25",
    "*X;5;011;25;0;165;1",
    "*X;5;011;25;0;165;1",
    "*X;1;011;25;0;165;1",
]


def cli_replay(capture: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "replay",
            "--game",
            "roulette",
            "--protocol",
            "cammegh-ss2",
            str(capture),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def jsonl(path: Path, lines: list[tuple[float, str]], end: str = "\r\n") -> Path:
    with path.open("w") as out:
        for t, text in lines:
            out.write(json.dumps({"t": t, "dir": "rx", "data": text + end}) + "\n")
    return path


@pytest.mark.integration
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


@pytest.mark.integration
def test_vendor_example_as_a_timed_capture_with_lf_endings(tmp_path: Path) -> None:
    lines = [(1000.0 + 0.5 * i, text) for i, text in enumerate(VENDOR_EXAMPLE)]
    envelopes = cli_replay(jsonl(tmp_path / "vendor.jsonl", lines, end="\n"))
    results = [e for e in envelopes if e["type"] == "round.result"]
    assert [r["data"]["number"] for r in results] == [25]
    assert results[0]["time"].startswith("1970-01-01T00:16:43")  # the capture's clock, not the replay's
    assert not [e for e in envelopes if e["type"] in ("device.fault", "round.voided", "reading.rejected")]


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


@pytest.mark.unit
def test_flag_8_within_3_s_of_state_3_is_ignored(tmp_path: Path) -> None:
    events = replay_types(tmp_path, spin("8", 2.5))
    assert [d["number"] for t, d in events if t == "round.result"] == [17]
    assert not [t for t, _ in events if t in ("device.fault", "round.paused")]


@pytest.mark.unit
def test_flag_8_persisting_past_3_s_is_a_fault_that_pauses(tmp_path: Path) -> None:
    events = replay_types(tmp_path, spin("8", 4.0))
    faults = [d for t, d in events if t == "device.fault"]
    assert [f["code"] for f in faults] == ["LAUNCH_FAILED"]
    assert "round.paused" in [t for t, _ in events]
    # the result that follows while paused is held for the supervisor, not published
    assert "round.result" not in [t for t, _ in events]


@pytest.mark.unit
def test_ball_not_detected_for_5_s_voids_the_game(tmp_path: Path) -> None:
    short = replay_types(tmp_path, spin("0", 1.0, flags_in_4="1", seconds_in_4=4.5))
    assert [d["number"] for t, d in short if t == "round.result"] == [17]
    long = replay_types(tmp_path, spin("0", 1.0, flags_in_4="1", seconds_in_4=6.0))
    voids = [d for t, d in long if t == "round.voided"]
    assert [(v["reason"], v["by"]) for v in voids] == [("ball not detected", "device")]
    assert "round.result" not in [t for t, _ in long]


@pytest.mark.unit
def test_miss_spin_voids_at_once(tmp_path: Path) -> None:
    events = replay_types(tmp_path, spin("2", 0.5))
    assert [(d["reason"], d["by"]) for t, d in events if t == "round.voided"] == [("miss-spin", "device")]
    assert "round.result" not in [t for t, _ in events]
