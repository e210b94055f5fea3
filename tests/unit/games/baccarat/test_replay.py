"""Replay: captured shoe traffic through the live session, runtime and baccarat flow gives exactly the
rounds a correct dealer produces — judged by the independent punto banco reference, over several whole shoes
with noise, bad checksums, duplicated lines and no-reads followed by re-scans.

Its unit tests; the integration ones are in `tests/integration/test_replay.py`."""

from __future__ import annotations

import pytest

from controller.replay import replay, replay_config
from controller.testing.baccarat_reference import ExpectedRound, as_expected, from_reference
from controller.testing.shoe_capture import record_shoes
from tests.helpers.replay import FAULTS

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def three_shoes() -> tuple[list, list[ExpectedRound]]:
    return record_shoes(3, seed=20261129, faults=FAULTS)


def test_replay_of_three_faulty_shoes_matches_the_reference(three_shoes) -> None:
    records, expected = three_shoes
    # the capture really is dirty: it must exercise the re-read and the resync paths
    rx = b"".join(r.data for r in records if r.direction == "rx")
    assert rx.count(b"NOREAD") >= 10 and rx.count(b"RESCAN") >= 10
    envelopes = list(replay(replay_config("baccarat", "shoe-line"), records))
    results = [e.data for e in envelopes if e.type == "round.result"]
    assert [as_expected(r) for r in results] == [from_reference(r) for r in expected]
    assert len(results) > 100
    # round numbering restarts with every shoe, and every shoe's last round is the cut-card round
    numbers = [r["round_number_in_shoe"] for r in results]
    assert numbers.count(1) == 3
    assert sum(r["last_round_of_shoe"] for r in results) == 3
    types = [e.type for e in envelopes]
    assert types.count("shoe.cut_card") == 3
    # after the last shoe's cut-card round a fresh shoe and its first round open, as on the table
    assert types.count("shoe.started") == 4 and types[-2:] == ["shoe.started", "round.opened"]
    assert types.count("round.closed") == len(results) == types.count("round.opened") - 1
    assert "card.rejected" not in types and "round.voided" not in types and "round.paused" not in types
    dealt = [e for e in envelopes if e.type == "card.dealt"]
    assert len(dealt) == sum(len(r.player) + len(r.banker) for r in expected)
    assert sum(d.data["rescan"] for d in dealt) == rx.count(b"NOREAD") - _noread_copies_extra(rx)
    # gap-free sequences, unique ids
    assert [int(e.sequence) for e in envelopes] == list(range(1, len(envelopes) + 1))
    assert len({e.id for e in envelopes}) == len(envelopes)


def _noread_copies_extra(rx: bytes) -> int:
    """NOREAD lines seen more than once (retransmitted or duplicated copies of the same seq)."""
    lines = [line for line in rx.split(b"\n") if line.strip().startswith(b"NOREAD")]
    seqs = [line.split()[1].split(b"*")[0] for line in lines if len(line.split()) > 1]
    return len(seqs) - len(set(seqs))


def test_replay_is_deterministic(three_shoes) -> None:
    records, _ = three_shoes
    first = [(e.type, e.time, e.data) for e in replay(replay_config("baccarat", "shoe-line"), records[:4000])]
    second = [
        (e.type, e.time, e.data) for e in replay(replay_config("baccarat", "shoe-line"), records[:4000])
    ]
    assert first == second and len(first) > 20
