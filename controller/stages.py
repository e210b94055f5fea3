"""A game's own stages within a round, as a transition table (in the style of `controller.lifecycle`).

The round lifecycle (opened, betting closed, in play, result, closed or voided) is `RoundBook`'s. Some games
go through stages of their own inside it: a blackjack round's initial deal, insurance, the boxes' turns and
the dealer's hand; sic bo's shake, reading and a supervisor's decision. Each such game names its stages in a
`StrEnum` (the values are what its state record and public state hold) and lists, in a `StageTable` beside
it, which stage may follow which. A flow moves only through `StageTable.move`: a move the table does not
have is a bug in the flow, and raises `StageError`. The flows' tests walk the games and check that every
move in each table happens (tests/unit/games/test_flow_stages.py).

Staying in a stage is not a move: a flow may say "turns" again while it is in "turns". A stage the table
does not list (one enum may serve several variants of a game) can be neither entered nor left.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum
from itertools import pairwise
from typing import Generic, TypeVar

S = TypeVar("S", bound=StrEnum)


class StageError(RuntimeError):
    """A move between two stages that the game's table does not have: a bug in the flow."""


class StageTable(Generic[S]):
    """Which stage may follow which, for one game.

    `paths` are the ways through the stages, each move of a path one of the table's (a round that goes
    waiting -> betting -> dealing is two moves); `ending` are the stages of a round that its end (its
    result, or a void) may leave for `initial`, the stage between rounds. `moves` is the table: each stage
    -> the stages it may go to."""

    def __init__(self, game: str, initial: S, paths: Iterable[Sequence[S]], ending: Iterable[S] = ()) -> None:
        self.game = game
        self.initial = initial
        moves: dict[S, set[S]] = {initial: set()}
        for path in paths:
            for before, after in pairwise(path):
                moves.setdefault(before, set()).add(after)
                moves.setdefault(after, set())
        for stage in ending:
            if stage not in moves or stage == initial:
                raise ValueError(f"{game}: a round cannot end in stage '{stage}': no path goes through it")
            moves[stage].add(initial)
        self.moves: dict[S, frozenset[S]] = {stage: frozenset(after) for stage, after in moves.items()}

    def move(self, before: S, after: S) -> S:
        """`after`, if the table has the move from `before` (or it is no move at all); else StageError."""
        if after != before and after not in self.moves.get(before, ()):
            raise StageError(f"{self.game}: no move from stage '{before}' to '{after}'")
        return after

    @property
    def stages(self) -> frozenset[S]:
        return frozenset(self.moves)

    def transitions(self) -> set[tuple[S, S]]:
        """Every (before, after) move of the table."""
        return {(before, after) for before, afters in self.moves.items() for after in afters}
