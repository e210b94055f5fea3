"""An independent model of Andar Bahar, to check the flow against: what a round dealt from a known deck must
give, computed from the rules' words (docs/games/andar_bahar.md) with no code of the controller's: cards are
plain codes, the buckets a literal table, a run of three read off the rank order."""

from __future__ import annotations

from typing import Any

BUCKET_TOPS = [
    (5, "1-5"),
    (10, "6-10"),
    (15, "11-15"),
    (20, "16-20"),
    (25, "21-25"),
    (30, "26-30"),
    (35, "31-35"),
    (40, "36-40"),
    (45, "41-45"),
    (49, "46-49"),
]
RUN_ORDER = "A23456789TJQKA"  # the ace at both ends: A-2-3 and Q-K-A


def reference_round(deck: list[str]) -> dict[str, Any]:
    """What a round dealt from `deck` (game card first) must give, computed from the rules' words
    (docs/games/andar_bahar.md)."""
    game = deck[0]
    sides: dict[str, list[str]] = {"andar": [], "bahar": []}
    winner = ""
    for n, code in enumerate(deck[1:]):
        side = ("andar", "bahar")[n % 2]
        sides[side].append(code)
        if code[0] == game[0]:
            winner = side
            break
    total = len(sides["andar"]) + len(sides["bahar"])
    bucket = next(label for top, label in BUCKET_TOPS if total <= top)
    pattern = None
    if sides["andar"] and sides["bahar"]:
        three = [game, sides["andar"][0], sides["bahar"][0]]
        rank_set = {code[0] for code in three}
        run = len(rank_set) == 3 and any(set(RUN_ORDER[i : i + 3]) == rank_set for i in range(12))
        same_suit = len({code[1] for code in three}) == 1
        pattern = {(True, True): "straight_flush", (True, False): "straight", (False, True): "flush"}.get(
            (run, same_suit)
        )
    return {
        "game_card": game,
        "andar": sides["andar"],
        "bahar": sides["bahar"],
        "winner": winner,
        "cards_dealt": total,
        "bucket": bucket,
        "first_andar_match": sides["andar"][0][0] == game[0],
        "first_bahar_match": bool(sides["bahar"]) and sides["bahar"][0][0] == game[0],
        "first_three": pattern,
    }
