"""The `round.result` contract is complete: every bet the game pages name (docs/games) settles from the
result's data alone.

A small settlement function per bet, registered by game (`SETTLEMENTS`, in each game's tests folder:
tests/unit/games/<folder>/settlement.py, on the kit of tests/helpers/settlement.py), takes
the `round.result` event's `data` exactly as a subscriber receives it (JSON, through `json.loads`) and the bet
as the player placed it (`Bet`: its name and the player's own choices, which are the rules engine's and never
in a result). It returns the net win per unit staked as an exact fraction: 11 for 11:1, -1 for a lost bet, 0
for a push or a void.
If a bet could not be settled without asking the controller something, its function could not be written
there: that is the proof. Payouts are the rules engine's business; they are written there only to show that
the facts they depend on are in the result. Where a game's rules give no payout, the assumption is said.

The results come from the games' own code (the flows and their result builders), so a change in a result
model that drops a fact a bet needs fails here.

Each game's folder proves its bets (`test_<game>_settlement.py`: Andar Bahar's RTPs by exact enumeration,
the blackjack variants per box and per player, sic bo over all 216 outcomes); this module checks that every
card game has them.

Adding a game: put its settlement functions in `SETTLEMENTS` in its tests folder's `settlement.py`, under its
game name (the result's `game`), and results of its own in that folder's `test_<game>_settlement.py`;
`test_every_card_game_has_its_settlements` fails until a card game has them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from controller.games import GAMES
from controller.games.card_flow import CardFlow
from tests.helpers.paths import GAME_TESTS

pytestmark = pytest.mark.unit


def declared_settlements(module: Path) -> set[str]:
    """The games a folder's `settlement.py` gives functions for: the keys of its `SETTLEMENTS` literal (read,
    not imported: the folders are found on disk, and only their keys are needed here)."""
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Dict):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Dict):
            target, value = node.targets[0], node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == "SETTLEMENTS":
            return {key.value for key in value.keys if isinstance(key, ast.Constant)}
    raise AssertionError(f"{module} declares no SETTLEMENTS dictionary")


def test_every_card_game_has_its_settlements() -> None:
    by_folder = {path.parent.name: declared_settlements(path) for path in GAME_TESTS.glob("*/settlement.py")}
    declared = [game for games in by_folder.values() for game in games]
    assert len(declared) == len(set(declared)), f"a game's settlements are declared twice: {by_folder}"
    card_games = {name for name, spec in GAMES.items() if issubclass(spec.flow, CardFlow)}
    missing = sorted(card_games - set(declared))
    assert not missing, f"add the settlement functions of {missing} to their tests folder's settlement.py"
    assert set(declared) <= set(GAMES)
    for folder in by_folder:
        tests = list((GAME_TESTS / folder).glob("test_*settlement.py"))
        assert tests, f"{folder}: its settlement functions are not tested"
