"""Replay with auto-resume: after a fault, the table plays on as a supervisor would have resumed it.

Its unit tests; the integration ones are in `tests/integration/test_replay_story.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.events import Envelope
from controller.replay import replay_file
from drivers.line.framing import encode_line

pytestmark = pytest.mark.unit


def test_auto_resume_plays_on_after_a_fault_as_a_supervisor_would(tmp_path: Path) -> None:
    """A capture of device traffic only has no supervisor: a shoe jam pauses the started round; with
    --auto-resume the replay resumes it once the shoe is healthy again, and says so (`by: "replay"`)."""
    lines = [
        "HELLO SIM 1.0 1",
        "STATE READY",
        "CARD 0001 9S",
        "CARD 0002 8D",
        "FAULT F03 JAM",
        "STATE READY",
        "CARD 0003 KC",
        "CARD 0004 5H",
    ]
    capture = tmp_path / "jam.bin"
    capture.write_bytes(b"".join(encode_line(line) for line in lines))

    def run(auto_resume: bool) -> list[Envelope]:
        return list(replay_file("baccarat", "shoe-line", capture, auto_resume=auto_resume))

    without = run(False)
    assert [e.type for e in without].count("round.paused") == 1
    assert not any(e.type == "round.result" for e in without), "nobody resumed: the round stays paused"
    events = run(True)
    resumed = [e for e in events if e.type == "round.resumed"]
    assert len(resumed) == 1 and resumed[0].data["by"] == "replay"
    result = next(e.data for e in events if e.type == "round.result")
    assert result["player"]["cards"] == ["9S", "KC"] and result["banker"]["cards"] == ["8D", "5H"]
