"""Andar Bahar's settlement functions, one per bet docs/games/andar_bahar.md names (the kit:
tests/helpers/settlement.py)."""

from __future__ import annotations

from fractions import Fraction

from tests.helpers.settlement import LOSE, Bet, Result, Settle, settler, wins

# --- Andar Bahar (docs/games/andar_bahar.md) -------------------------------------------------------------
# `bet.params["mode"]`: "commission" (Andar 0.9:1) or "no_commission" (Andar 0.25:1 on the first card, else
# 1:1; the side bets 1st Andar / 1st Bahar and First 3 are not offered in it).

BUCKET_PAYOUTS = {
    "1-5": 2,
    "6-10": 3,
    "11-15": 4,
    "16-20": 5,
    "21-25": 8,
    "26-30": 12,
    "31-35": 20,
    "36-40": 40,
    "41-45": 110,
    "46-49": 800,
}
FIRST_THREE_PAYOUTS = {"straight_flush": 120, "straight": 8, "flush": 5}


def andar(result: Result, bet: Bet) -> Fraction:
    if result["winner"] != "andar":
        return LOSE
    if bet.params.get("mode", "commission") == "commission":
        return Fraction(9, 10)
    return Fraction(1, 4) if result["first_andar_match"] else Fraction(1)


def bahar(result: Result, bet: Bet) -> Fraction:
    return wins(result["winner"] == "bahar", 1)


def first_andar(result: Result, bet: Bet) -> Fraction:
    return wins(result["first_andar_match"], 15)


def first_bahar(result: Result, bet: Bet) -> Fraction:
    return wins(result["first_bahar_match"], Fraction(31, 2))


def first_three(result: Result, bet: Bet) -> Fraction:
    pattern = result["first_three"]  # null with fewer than three cards: the bet loses
    return wins(pattern is not None, FIRST_THREE_PAYOUTS.get(pattern or "", 0))


def cards_dealt(result: Result, bet: Bet) -> Fraction:
    bucket = bet.params["bucket"]
    return wins(result["bucket"] == bucket, BUCKET_PAYOUTS[bucket])


SETTLEMENTS: dict[str, dict[str, Settle]] = {
    "andar_bahar": {
        "andar": andar,
        "bahar": bahar,
        "first_andar": first_andar,
        "first_bahar": first_bahar,
        "first_three": first_three,
        "cards_dealt": cards_dealt,
    },
}

settle = settler(SETTLEMENTS)
