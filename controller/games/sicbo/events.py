"""Sic bo's `round.result` and its dice readings."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from controller.events import GameEvent, RoundResult

DieValue = Annotated[int, Field(ge=1, le=6)]


class SicBoResult(RoundResult):
    """Three dice. Every sic bo bet settles from these fields alone
    (tests/unit/games/sicbo/test_sicbo_settlement.py)."""

    game: Literal["sicbo"] = "sicbo"
    round_id: str
    dice: list[DieValue] = Field(min_length=3, max_length=3, description="the three values, ascending")
    total: int = Field(ge=3, le=18)
    size: Literal["small", "big"] | None = Field(
        description="small 4-10, big 11-17; null on a triple (a triple loses both)"
    )
    parity: Literal["odd", "even"] = Field(
        description="of the total; an Odd/Even bet that loses on a triple also reads `triple`"
    )
    triple: DieValue | None = Field(description="the value all three dice show, or null")
    double: DieValue | None = Field(
        description="the value at least two dice show (a triple's value too), or null"
    )
    reshakes: int = Field(
        ge=0,
        description="times the dice were shaken again in this round (after a refused reading, a shaker that "
        "did not answer, or an interruption)",
    )
    frame: str = Field(
        description="the camera frame the values were read from (or, entered by hand, decided on): its file "
        "relative to the camera capture's JSON Lines file; empty if no frame could be kept"
    )
    frame_sha256: str = Field(description="sha256 of that frame file; empty with no frame")
    source: Literal["camera", "manual"] = Field(description="read by the camera, or entered by a supervisor")
    entered_by: str | None = Field(None, description="who entered the dice by hand (source manual)")
    cycle_id: str = Field(description="the shaker's cycle the dice came to rest in")
    dice_in_frame: list[DieValue] = Field(
        description="the values as read, left to right in the frame (as entered, when by hand)"
    )
    raw: str = Field("", description="the shaker's AT_REST line the reading followed")


class ShakeReading(GameEvent):
    """The camera read the dice of one shake (or refused to): every reading is published, refusals too."""

    TYPE = "dice.read"
    round_id: str | None
    cycle_id: str
    attempt: int = Field(ge=1, description="the shake of this round the reading belongs to (1 = first)")
    values: list[DieValue] | None = Field(description="left to right in the frame; null: refused")
    reason: str = Field("", description="why the reading was refused")
    frame: str = ""
    frame_sha256: str = ""
    dice: list[dict[str, Any]] = Field(
        default_factory=list,
        description="the reader's evidence per die found: value (or null), confidence, box [x, y, w, h], "
        "reason",
    )
