"""Sic Bo to the rest of the controller (`GAME`), and how its result reads."""

from __future__ import annotations

from typing import Any

from controller.games.sicbo.events import ShakeReading
from controller.games.sicbo.flow import ManualDice, SicBoFlow, SicBoSettings
from controller.games.spec import Demo, GameSpec, View


def describe_result(data: dict[str, Any]) -> str:
    """One line for the demo."""
    size = data["size"] or "triple"
    how = f", entered by {data['entered_by']}" if data["source"] == "manual" else ""
    reshakes = f", {data['reshakes']} re-shake(s)" if data["reshakes"] else ""
    return f"{' '.join(map(str, data['dice']))} = {data['total']} {size}{reshakes}{how}"


GAME = GameSpec(
    flow=SicBoFlow,
    short="sb",
    settings=SicBoSettings,
    view=View("dice", "Sic Bo"),
    devices={"shaker": ("shaker-line",), "camera": ("camera",)},
    # a device-only capture (the shaker's bytes and the camera's readings) replays with betting closing
    # at once: the dice are only ever shaken after betting closed
    replay_overrides={"round_gap_seconds": 0.0, "betting_seconds": 0.001},
    events=(ShakeReading,),
    commands={"manual_dice": ManualDice},
    captured_devices=("camera",),
    describe=describe_result,
    demo=Demo(studio_place=5, settings={"betting_seconds": 2.0, "round_gap_seconds": 1.0}),
)
