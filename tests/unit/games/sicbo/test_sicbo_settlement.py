"""Every sic bo bet of the rules (docs/games/sicbo.md: Big/Small, Odd/Even, totals, specific and any triple,
doubles, two-dice combinations, single numbers) settles from the `round.result` data alone.

The settlement functions (`SETTLEMENTS["sicbo"]` in tests/unit/games/sicbo/settlement.py; the contract every
game's keep is tests/unit/games/test_settlement_contract.py) read nothing but the published result (a JSON
object); they are checked here against the three dice themselves for all 216 outcomes, each one played
through the flow to its result.
Payouts are the rules engine's; what is settled here is win or lose (and, for single numbers, how many dice
match, which sets the payout)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from controller.games.sicbo import SicBoResult
from tests.helpers.settlement import Bet
from tests.helpers.sicbo_core import Table
from tests.unit.games.sicbo.settlement import settle as settle_bet

pytestmark = pytest.mark.unit

Result = dict[str, Any]
OUTCOMES = list(itertools.product(range(1, 7), repeat=3))

# --- the same bets, decided on the dice themselves ------------------------------------------------------


def truth(dice: tuple[int, int, int]) -> dict[str, Any]:
    s = sum(dice)
    is_triple = dice[0] == dice[1] == dice[2]
    bets: dict[str, Any] = {
        "big": 11 <= s <= 17 and not is_triple,
        "small": 4 <= s <= 10 and not is_triple,
        "odd": s % 2 == 1 and not is_triple,
        "even": s % 2 == 0 and not is_triple,
        "any triple": is_triple,
    }
    for n in range(4, 18):
        bets[f"total {n}"] = s == n
    for n in range(1, 7):
        bets[f"triple {n}"] = is_triple and dice[0] == n
        bets[f"double {n}"] = sum(1 for d in dice if d == n) >= 2
        bets[f"single {n}"] = sum(1 for d in dice if d == n)
    for a, b in itertools.combinations(range(1, 7), 2):
        bets[f"combination {a}-{b}"] = a in dice and b in dice
    return bets


def settle(result: Result) -> dict[str, Any]:
    """Every bet on the table, settled by sic bo's settlement functions
    (tests/unit/games/sicbo/settlement.py), from the result data only."""

    def bet(name: str, **params: Any) -> Any:
        return settle_bet(result, Bet(name, params))

    bets: dict[str, Any] = {
        "big": bet("big"),
        "small": bet("small"),
        "odd": bet("odd"),
        "even": bet("even"),
        "any triple": bet("any_triple"),
    }
    for n in range(4, 18):
        bets[f"total {n}"] = bet("total", total=n)
    for n in range(1, 7):
        bets[f"triple {n}"] = bet("triple", value=n)
        bets[f"double {n}"] = bet("double", value=n)
        bets[f"single {n}"] = bet("single", value=n)
    for a, b in itertools.combinations(range(1, 7), 2):
        bets[f"combination {a}-{b}"] = bet("combination", values=[a, b])
    return bets


def played(dice: tuple[int, int, int]) -> Result:
    """The result the table publishes for these dice (through the flow and the runtime)."""
    table = Table()
    table.open_and_close()
    table.at_rest()
    table.read(dice)
    return table.result()


@pytest.fixture(scope="module")
def results() -> dict[tuple[int, int, int], Result]:
    return {dice: played(dice) for dice in OUTCOMES}


def test_every_bet_settles_from_the_result_alone(results: dict[tuple[int, int, int], Result]) -> None:
    for dice, result in results.items():
        SicBoResult.model_validate(result)  # the published contract
        assert settle(result) == truth(dice), dice


def test_the_bets_cover_the_table(results: dict[tuple[int, int, int], Result]) -> None:
    # 4 even-money bets, 14 totals, 6 specific triples + any triple, 6 doubles, 15 combinations, 6 singles
    assert len(settle(results[(1, 2, 3)])) == 4 + 14 + 7 + 6 + 15 + 6
    # every bet can win: no settlement function is stuck at "lose"
    for bet in settle(results[(1, 2, 3)]):
        assert any(settle(result)[bet] for result in results.values()), bet


def test_the_result_order_is_stable() -> None:
    assert played((6, 1, 4))["dice"] == played((4, 6, 1))["dice"] == [1, 4, 6]
    assert played((6, 1, 4))["dice_in_frame"] == [6, 1, 4]
