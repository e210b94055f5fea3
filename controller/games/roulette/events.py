"""Roulette's `round.result`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from controller.events import RoundResult


class RouletteResult(RoundResult):
    game: Literal["roulette"] = "roulette"
    round_id: str
    number: int = Field(ge=0, le=36)
    color: Literal["red", "black", "green"]
    parity: Literal["odd", "even"] | None = Field(description="null for zero")
    range: Literal["low", "high"] | None = Field(description="low 1-18, high 19-36; null for zero")
    dozen: int | None = Field(description="1, 2 or 3; null for zero")
    column: int | None = Field(description="1, 2 or 3; null for zero")
    spin: int = Field(description="the wheel's own spin number (not unique)")
    rotor_rpm: float
    direction: Literal["clockwise", "anticlockwise"]
    raw: str = Field("", description="the wheel lines that produced the result")
