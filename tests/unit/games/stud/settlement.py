"""5 Card Stud's settlement functions, one per bet docs/games/stud.md names (the kit:
tests/helpers/settlement.py)."""

from __future__ import annotations

from fractions import Fraction

from tests.helpers.settlement import LOSE, PUSH, Bet, Result, Settle, settler

# --- 5 Card Stud (docs/games/stud.md) --------------------------------------------------------------------
# Per player hand (`bet.params["hand"]`, 0-based; one common hand: 0) and the player's own decision
# (`bet.params["decision"]`: "bet" or "fold"). Ante: even money on a win (also when the dealer does not
# qualify), lost to the dealer's better hand or a fold. The raise (2x ante) is void when the dealer does not
# qualify; the rules name no raise paytable: the usual one by the player's category is assumed here, to show
# the result carries the category it needs. Jackpot: a flush or better wins its tier, whatever the table
# result; the amount is the pool's (the rules engine's), so it settles to the tier.

RAISE_PAYOUTS = {
    "high_card": 1,
    "one_pair": 1,
    "two_pair": 2,
    "three_of_a_kind": 3,
    "straight": 4,
    "flush": 5,
    "full_house": 7,
    "four_of_a_kind": 20,
    "straight_flush": 50,
    "royal_flush": 100,
}
JACKPOT_TIERS = ("flush", "full_house", "four_of_a_kind", "straight_flush", "royal_flush")


def _stud_outcome(result: Result, bet: Bet) -> str:
    return str(result["outcomes"][bet.params.get("hand", 0)])


def stud_ante(result: Result, bet: Bet) -> Fraction:
    if bet.params["decision"] == "fold":
        return LOSE
    outcome = _stud_outcome(result, bet)
    if not result["dealer_qualifies"]:
        return Fraction(1)
    return {"win": Fraction(1), "tie": PUSH, "lose": LOSE}[outcome]


def stud_raise(result: Result, bet: Bet) -> Fraction:
    """Per unit of the raise itself (twice the ante)."""
    if bet.params["decision"] == "fold":
        return PUSH  # never placed
    if not result["dealer_qualifies"]:
        return PUSH  # void: returned
    outcome = _stud_outcome(result, bet)
    category = result["hands"][bet.params.get("hand", 0)]["category"]
    return {"win": Fraction(RAISE_PAYOUTS[category]), "tie": PUSH, "lose": LOSE}[outcome]


def stud_jackpot_tier(result: Result, bet: Bet) -> str | None:
    category = result["hands"][bet.params.get("hand", 0)]["category"]
    return category if category in JACKPOT_TIERS else None


SETTLEMENTS: dict[str, dict[str, Settle]] = {
    "stud": {"ante": stud_ante, "raise": stud_raise, "jackpot": stud_jackpot_tier},
}

settle = settler(SETTLEMENTS)
