"""The games' stage tables (`controller.stages`) are what the flows do: random walks of every game with
stages of its own go through every move of its table, and no other (a move not in the table raises)."""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest

from controller.cards import Card, full_deck
from controller.commands import CloseBetting, Command, NewShoe, PlayersDone, Resume, VoidRound
from controller.flow import InputRejected
from controller.games import GAMES
from controller.games.blackjack.flow import BOXED_INPUTS, BOXED_STAGES, INFINITE_STAGES, Insurance, Stage
from controller.games.infinite_blackjack.flow import BurnDone, DealCard
from controller.games.sicbo.flow import STAGES as SICBO_STAGES
from controller.games.stud.flow import STAGES as STUD_STAGES
from controller.stages import StageError, StageTable
from drivers.readings import CutCardSeen
from tests.helpers.blackjack_table import Table as BlackjackTable
from tests.helpers.sicbo_core import Table as SicBoTable

pytestmark = pytest.mark.unit

T0 = 1_700_000_000.0
Walk = Callable[[random.Random], None]


@contextmanager
def moves_made(monkeypatch: pytest.MonkeyPatch, table: StageTable[Any]) -> Iterator[set[tuple[str, str]]]:
    """Every move `table` was asked for while the block runs (staying in a stage is no move)."""
    made: set[tuple[str, str]] = set()
    original = StageTable.move

    def move(self: StageTable[Any], before: Any, after: Any) -> Any:
        if self is table and before != after:
            made.add((before, after))
        return original(self, before, after)

    monkeypatch.setattr(StageTable, "move", move)
    yield made


CODES = [card.code for card in full_deck()]


def any_card(rng: random.Random, fits: Callable[[str], object]) -> str:
    """A card the table's shoe can still hold (`fits` is the flow's own check)."""
    return rng.choice([code for code in CODES if isinstance(fits(code), Card)])


def _send(flow: Any, command: Command, now: float) -> None:
    with suppress(InputRejected):
        flow.on_command(command, now)


def blackjack_walk(game: str, settings: dict[str, Any], steps: int = 400) -> Walk:
    """A dealer who deals where the panel says, players who decide at random (or not at all: the policy
    decides), insurance answered or left to its timer, now and then a void, a cut card or a new shoe."""

    def walk(rng: random.Random) -> None:
        table = BlackjackTable(game, settings)
        flow = table.flow
        for _ in range(steps):
            state = flow.public_state()
            roll = rng.random()
            turn = state.get("turn")
            if roll < 0.03 and flow.rounds.in_round:
                flow.void_round(table.now, "test", "supervisor")
            elif roll < 0.04:
                table.read(CutCardSeen(device="shoe", time=table.now, raw="CUT"))
            elif roll < 0.06:
                _send(flow, NewShoe(), table.now)
            elif roll < 0.08:
                _send(flow, BurnDone(), table.now)
            elif roll < 0.12:
                _send(flow, rng.choice([DealCard(), PlayersDone()]), table.now)
            elif state.get("insurance_offered_to") and roll < 0.3:
                seat = rng.choice(state["insurance_offered_to"])
                _send(flow, Insurance(seat=seat, take=rng.random() < 0.5), table.now)
            elif turn and turn["allowed"] and roll < 0.5:
                action = rng.choice(turn["allowed"])
                _send(flow, BOXED_INPUTS[action](seat=turn["seat"], hand=turn["hand"]), table.now)
            elif state["next_position"] is not None and roll < 0.9:
                table.card(any_card(rng, flow._check_card))
            else:
                table.tick_to_deadline()

    return walk


def sicbo_walk(steps: int = 200) -> Walk:
    """The dice at rest or not, read or refused, the camera silent, a supervisor who resumes or voids."""

    def walk(rng: random.Random) -> None:
        table = SicBoTable(max_reshakes=1)
        for _ in range(steps):
            flow, roll = table.flow, rng.random()
            if table.core.paused:
                table.command(Resume() if roll < 0.7 else VoidRound())
            elif flow.stage == "shaking" and roll < 0.7:
                table.at_rest()
            elif flow.stage == "reading" and roll < 0.8:
                table.read((1, 2, 3) if roll < 0.3 else None, reason="a die is cocked")
            elif roll < 0.05 and flow.rounds.in_round:
                table.command(VoidRound())
            else:
                deadline = table.core.next_deadline()
                table.tick(table.now + 1 if deadline is None else max(table.now, deadline))

    return walk


def stud_walk(steps: int = 300) -> Walk:
    """Cards where the panel says, decisions ended by the players or their timer, now and then a void."""

    def walk(rng: random.Random) -> None:
        # the blackjack tests' table driver serves any card game
        table = BlackjackTable("stud", {"hands": rng.choice([1, 3]), "decision_seconds": 2})
        flow = table.flow
        for _ in range(steps):
            roll = rng.random()
            if roll < 0.03 and flow.rounds.in_round:
                flow.void_round(table.now, "test", "supervisor")
            elif roll < 0.1:
                _send(flow, rng.choice([PlayersDone(), CloseBetting()]), table.now)
            elif flow.public_state()["next_position"] is not None and roll < 0.85:
                table.card(any_card(rng, flow._check_card))
            else:
                table.tick_to_deadline()

    return walk


CASES: dict[str, tuple[StageTable[Any], list[Walk]]] = {
    "boxed blackjack": (
        BOXED_STAGES,
        [
            blackjack_walk("blackjack", {"seats": 2}),
            blackjack_walk("single_deck_blackjack", {}),
        ],
    ),
    "infinite blackjack": (
        INFINITE_STAGES,
        [
            blackjack_walk("infinite_blackjack", {"burn_confirmation": False}),
            blackjack_walk("infinite_blackjack", {"auto_new_shoe": True}),
        ],
    ),
    "sicbo": (SICBO_STAGES, [sicbo_walk()]),
    "stud": (STUD_STAGES, [stud_walk()]),
}


def stage_tables_of(flow: type[Any]) -> set[StageTable[Any]]:
    """The stage tables a game's flow moves through: those of the modules its flow classes are written in."""
    modules = {
        sys.modules[cls.__module__] for cls in flow.__mro__ if cls.__module__.startswith("controller.games")
    }
    return {value for module in modules for value in vars(module).values() if isinstance(value, StageTable)}


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_game_with_stages_of_its_own_is_walked(game: str) -> None:
    # the registry's games, so that a new game with a stage table is not left out silently
    walked = {id(table) for table, _ in CASES.values()}
    missing = sorted(table.game for table in stage_tables_of(GAMES[game].flow) if id(table) not in walked)
    assert not missing, f"{game}: no walk goes through its stage table(s) {missing}: add one to CASES here"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_flows_make_every_move_of_their_stage_table_and_no_other(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table, walks = CASES[name]
    with moves_made(monkeypatch, table) as made:
        for seed in range(12):
            for walk in walks:
                walk(random.Random(seed))  # a move not in the table would raise StageError here
    assert made == table.transitions(), sorted(table.transitions() - made)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_stage_of_a_table_is_reached_from_its_first_and_leads_back_to_it(name: str) -> None:
    table, _ = CASES[name]

    def reached_from(stage: Any) -> set[Any]:
        reached, frontier = {stage}, [stage]
        while frontier:
            for after in table.moves[frontier.pop()]:
                if after not in reached:
                    reached.add(after)
                    frontier.append(after)
        return reached

    assert reached_from(table.initial) == table.stages
    assert all(table.initial in reached_from(stage) for stage in table.stages)


def test_a_move_the_table_does_not_have_raises_and_staying_is_no_move() -> None:
    with pytest.raises(StageError, match="no move from stage 'waiting' to 'dealer'"):
        BOXED_STAGES.move(Stage.WAITING, Stage.DEALER)
    with pytest.raises(StageError):
        BOXED_STAGES.move(Stage.TURNS, Stage.BURN)  # Infinite's stage: not a boxed table's
    assert BOXED_STAGES.move(Stage.TURNS, Stage.TURNS) == Stage.TURNS
    with pytest.raises(ValueError, match="no path goes through it"):
        StageTable("broken", Stage.WAITING, [(Stage.WAITING, Stage.BETTING)], ending=[Stage.DEALER])
