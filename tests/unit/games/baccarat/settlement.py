"""Baccarat's settlement functions, one per bet docs/games/baccarat.md names (the kit:
tests/helpers/settlement.py)."""

from __future__ import annotations

from fractions import Fraction

from tests.helpers.settlement import PUSH, Bet, Result, Settle, settler, wins

# --- baccarat (docs/games/baccarat.md: Player Pair / Banker Pair 11:1; no main bet's payout there) --------
# Assumed, as usual for punto banco: Player 1:1, Banker 0.95:1 (5% commission), Tie 8:1; Player and Banker
# are pushed on a tie. The rules name no baccarat side bet besides the two pairs.


def baccarat_player(result: Result, bet: Bet) -> Fraction:
    return PUSH if result["winner"] == "tie" else wins(result["winner"] == "player", 1)


def baccarat_banker(result: Result, bet: Bet) -> Fraction:
    return PUSH if result["winner"] == "tie" else wins(result["winner"] == "banker", Fraction(95, 100))


def baccarat_tie(result: Result, bet: Bet) -> Fraction:
    return wins(result["winner"] == "tie", 8)


def baccarat_player_pair(result: Result, bet: Bet) -> Fraction:
    return wins(result["player_pair"], 11)


def baccarat_banker_pair(result: Result, bet: Bet) -> Fraction:
    return wins(result["banker_pair"], 11)


SETTLEMENTS: dict[str, dict[str, Settle]] = {
    "baccarat": {
        "player": baccarat_player,
        "banker": baccarat_banker,
        "tie": baccarat_tie,
        "player_pair": baccarat_player_pair,
        "banker_pair": baccarat_banker_pair,
    },
}

settle = settler(SETTLEMENTS)
