"""Sic bo's settlement functions, one per bet docs/games/sicbo.md names (the kit:
tests/helpers/settlement.py)."""

from __future__ import annotations

from tests.helpers.settlement import Bet, Result, Settle, settler

# --- sic bo (docs/games/sicbo.md) -------------------------------------------------------------------------
# The rules give no payouts: these settle to whether the bet wins (a single number: how many dice show it,
# which sets its payout). Checked against the dice for all 216 outcomes, each played through the flow, in
# tests/unit/games/sicbo/test_sicbo_settlement.py. Bets on a value name it in `bet.params["value"]`, a total
# in `bet.params["total"]`, a two-dice combination its two values in `bet.params["values"]`.


def sicbo_big(result: Result, bet: Bet) -> bool:
    """Big: total 11-17; a triple loses."""
    return bool(result["size"] == "big")


def sicbo_small(result: Result, bet: Bet) -> bool:
    """Small: total 4-10; a triple loses."""
    return bool(result["size"] == "small")


def sicbo_odd(result: Result, bet: Bet) -> bool:
    """Odd (where offered): an odd total; a triple loses, as Big/Small."""
    return result["parity"] == "odd" and result["triple"] is None


def sicbo_even(result: Result, bet: Bet) -> bool:
    return result["parity"] == "even" and result["triple"] is None


def sicbo_total(result: Result, bet: Bet) -> bool:
    """Total 4 to 17."""
    return bool(result["total"] == bet.params["total"])


def sicbo_triple(result: Result, bet: Bet) -> bool:
    """A specific triple."""
    return bool(result["triple"] == bet.params["value"])


def sicbo_any_triple(result: Result, bet: Bet) -> bool:
    return result["triple"] is not None


def sicbo_double(result: Result, bet: Bet) -> bool:
    """At least two dice show the value (a triple of it wins too)."""
    return bool(result["double"] == bet.params["value"])


def sicbo_combination(result: Result, bet: Bet) -> bool:
    """Two-dice combination a-b (a != b): both values among the dice."""
    a, b = bet.params["values"]
    return a in result["dice"] and b in result["dice"]


def sicbo_single(result: Result, bet: Bet) -> int:
    """Single number: how many dice show it (0 loses; 1, 2 or 3 set the payout)."""
    return int(result["dice"].count(bet.params["value"]))


SETTLEMENTS: dict[str, dict[str, Settle]] = {
    "sicbo": {
        "big": sicbo_big,
        "small": sicbo_small,
        "odd": sicbo_odd,
        "even": sicbo_even,
        "total": sicbo_total,
        "triple": sicbo_triple,
        "any_triple": sicbo_any_triple,
        "double": sicbo_double,
        "combination": sicbo_combination,
        "single": sicbo_single,
    },
}

settle = settler(SETTLEMENTS)
