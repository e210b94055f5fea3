"""Roulette to the rest of the controller (`GAME`), and how its result reads."""

from __future__ import annotations

from typing import Any

from controller.games.roulette.flow import RouletteFlow, RouletteSettings
from controller.games.spec import Demo, GameSpec, View


def describe_result(data: dict[str, Any]) -> str:
    """One line for the demo."""
    wheel = f"spin {data['spin']}, {data['rotor_rpm']} rpm {data['direction']}"
    return f"{data['number']} {data['color']} ({wheel})"


GAME = GameSpec(
    flow=RouletteFlow,
    short="rou",
    settings=RouletteSettings,
    view=View("wheel", "Roulette"),
    devices={"wheel": ("cammegh-ss2",)},
    replay_overrides={"round_gap_seconds": 0.0, "user_start": False},
    describe=describe_result,
    demo=Demo(studio_place=3, settings={"betting_seconds": 2.0, "round_gap_seconds": 1.0}),
)
