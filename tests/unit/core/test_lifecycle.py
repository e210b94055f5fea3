"""The round lifecycle's transition table, walked whole: every (phase, move) is a transition or a refusal
with a reason, and RoundBook does exactly what the table says."""

from __future__ import annotations

import pytest

from controller.flow import FlowOutput
from controller.games.roulette import RouletteResult
from controller.lifecycle import BETTING, NEXT_ROUND, REFUSALS, TRANSITIONS, Move, Phase, Refused, RoundBook

pytestmark = pytest.mark.unit


def book_in(phase: Phase) -> RoundBook:
    book = RoundBook(table_id="t", game="roulette", gap_seconds=2.0)
    out = FlowOutput()
    if phase != Phase.WAITING:
        book.open(10.0, out, betting_seconds=15.0, with_shoe=False)
    if phase in (Phase.BETTING_CLOSED, Phase.IN_PLAY):
        book.close_betting(11.0, out, "timer")
    if phase == Phase.IN_PLAY:
        book.start_play()
    assert book.phase == phase
    return book


RESULT = RouletteResult(
    round_id="t-0000001",
    number=7,
    color="red",
    parity="odd",
    range="low",
    dozen=1,
    column=1,
    direction="clockwise",
    rotor_rpm=25.0,
    spin=1,
)


def make(book: RoundBook, move: Move, out: FlowOutput) -> None:
    if move == Move.OPEN:
        book.open(20.0, out, betting_seconds=15.0, with_shoe=False)
    elif move == Move.CLOSE_BETTING:
        book.close_betting(20.0, out, "input")
    elif move == Move.START_PLAY:
        book.start_play()
    elif move == Move.FINISH:
        book.finish(20.0, out, RESULT)
    else:
        book.void(20.0, out, "test", "supervisor")


def test_every_pair_is_either_a_transition_or_a_refusal() -> None:
    pairs = {(phase, move) for phase in Phase for move in Move}
    assert set(TRANSITIONS) | set(REFUSALS) == pairs
    assert not set(TRANSITIONS) & set(REFUSALS)
    assert all(reason for reason in REFUSALS.values())


@pytest.mark.parametrize("phase", list(Phase))
@pytest.mark.parametrize("move", list(Move))
def test_round_book_follows_the_table(phase: Phase, move: Move) -> None:
    book = book_in(phase)
    out = FlowOutput()
    if (phase, move) in REFUSALS:
        before = book.model_dump()
        with pytest.raises(Refused, match=REFUSALS[(phase, move)].split(":")[0]):
            make(book, move, out)
        assert book.model_dump() == before and out.events == [], "a refused move changes nothing"
        return
    make(book, move, out)
    assert book.phase == TRANSITIONS[(phase, move)]
    types = [e.type for e in out.events]
    expected = {
        Move.OPEN: ["round.opened"],
        Move.CLOSE_BETTING: ["round.betting_closed"],
        Move.START_PLAY: [],
        Move.FINISH: ["round.result", "round.closed"],
        Move.VOID: ["round.voided"],
    }[move]
    assert types == expected
    if move in (Move.FINISH, Move.VOID):
        # the round's windows end with it; the gap before the next one starts now
        assert book.round_id is None and book.timers == {NEXT_ROUND: 22.0}
    if move == Move.START_PLAY:
        assert book.started


def test_deadlines_are_kept_popped_in_order_and_shifted_by_a_pause() -> None:
    book = RoundBook(table_id="t", game="baccarat", gap_seconds=3.0)
    assert book.next_deadline() == 0.0  # a new table may open its first round at once
    assert book.pop_due(5.0) == [NEXT_ROUND]
    out = FlowOutput()
    book.open(5.0, out, betting_seconds=15.0)
    book.set_timer("decisions", 30.0)
    assert book.next_deadline() == 20.0 and book.betting_deadline == 20.0
    book.shift(7.5)  # paused for 7.5 s
    assert book.timers == {BETTING: 27.5, "decisions": 37.5}
    assert book.pop_due(27.4) == []
    assert book.pop_due(40.0) == [BETTING, "decisions"]
    assert book.next_deadline() is None
