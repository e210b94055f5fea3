"""Baccarat's bets settle from the result's data alone (the contract:
tests/unit/games/test_settlement_contract.py; the functions: tests/unit/games/baccarat/settlement.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import pytest

from controller.games.baccarat import BaccaratFlow, BaccaratSettings
from controller.testing.card_table import DrivesCardFlow
from tests.helpers.settlement import Bet, Result
from tests.unit.games.baccarat.settlement import SETTLEMENTS, settle

pytestmark = pytest.mark.unit


# --- baccarat -----------------------------------------------------------------------------------------------


@dataclass
class BaccaratTable(DrivesCardFlow):
    flow: BaccaratFlow = field(
        default_factory=lambda: BaccaratFlow("b1", BaccaratSettings(betting_closes_on_first_card=True))
    )
    now: float = 1_700_000_000.0
    seq: int = 0

    def hand(self, *codes: str) -> Result:
        self.tick(5)
        results = [e.data for code in codes for e in self.card(code).events if e.type == "round.result"]
        assert len(results) == 1, "the hand is not complete"
        return json.loads(json.dumps(results[0]))


@pytest.mark.parametrize(
    ("cards", "expected"),
    [
        # player 9S KH (9, natural) v banker 3D 2C (5): player wins
        (
            ("9S", "3D", "KH", "2C"),
            {"player": 1, "banker": -1, "tie": -1, "player_pair": -1, "banker_pair": -1},
        ),
        # player 4S 4H (8, a pair) v banker 6D 2C (8): tie, player pair
        (
            ("4S", "6D", "4H", "2C"),
            {"player": 0, "banker": 0, "tie": 8, "player_pair": 11, "banker_pair": -1},
        ),
        # player 2S 3H (5) draws 4D (9); banker KD KC (0, a pair) draws 7S: banker 7 loses
        (
            ("2S", "KD", "3H", "KC", "4D", "7S"),
            {"player": 1, "banker": -1, "tie": -1, "player_pair": -1, "banker_pair": 11},
        ),
        # player TS 6H (6) stands; banker 2D 3C (5) draws 2S: banker 7 wins at 0.95:1
        (
            ("TS", "2D", "6H", "3C", "2S"),
            {"player": -1, "banker": Fraction(19, 20), "tie": -1, "player_pair": -1, "banker_pair": -1},
        ),
    ],
)
def test_every_baccarat_bet_settles_from_the_result(cards: Sequence[str], expected: dict[str, Any]) -> None:
    result = BaccaratTable().hand(*cards)
    assert {name: settle(result, Bet(name)) for name in SETTLEMENTS["baccarat"]} == expected
