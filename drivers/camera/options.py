"""The camera device's settings: `[devices.<name>.options]` of a camera in the table config.

Only pydantic here, so the config can validate a camera's options without importing numpy or OpenCV.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CameraOptions(BaseModel):
    """Health thresholds, reconnection and source settings. The defaults suit a 25-30 fps camera."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # -- health ------------------------------------------------------------------------------------
    frame_timeout_s: float = Field(
        default=2.0, gt=0, description="offline when no frame arrives for this long"
    )
    frozen_frames: int = Field(
        default=60,
        ge=2,
        description="fault FROZEN after this many frames in a row, each identical to the last",
    )
    frozen_max_diff: float = Field(
        default=0.05,
        ge=0,
        description="two frames count as identical when their mean absolute difference on the sample "
        "grid (grey levels 0-255) is at most this; a live sensor's noise alone is well above it",
    )
    dark_max_brightness: float = Field(
        default=12.0, ge=0, le=255, description="a frame whose mean brightness (0-255) is below this is black"
    )
    dark_frames: int = Field(
        default=15, ge=1, description="fault BLACK after this many black frames in a row"
    )
    covered_max_contrast: float = Field(
        default=4.0,
        ge=0,
        description="a frame whose brightness spread (standard deviation, grey levels) is below this "
        "shows nothing: the lens is covered or out of focus",
    )
    covered_frames: int = Field(
        default=15, ge=1, description="fault COVERED after this many flat frames in a row"
    )
    clear_frames: int = Field(default=5, ge=1, description="good frames in a row that clear a fault")
    sample_columns: int = Field(
        default=80, ge=8, le=1000, description="columns of the sample grid the statistics are computed on"
    )
    # -- link ---------------------------------------------------------------------------------------
    reconnect_min_s: float = Field(
        default=0.2, gt=0, description="first delay before reopening a failed source"
    )
    reconnect_max_s: float = Field(default=5.0, gt=0, description="the delay doubles up to this")
    open_timeout_s: float = Field(
        default=10.0, gt=0, description="stream URLs and pipelines: give up opening after"
    )
    read_timeout_s: float = Field(
        default=5.0, gt=0, description="stream URLs and pipelines: give up a read after"
    )
    # -- stills -------------------------------------------------------------------------------------
    grab_timeout_s: float = Field(
        default=2.0, gt=0, description="grab() fails when no fresh frame comes in time"
    )
    # one by default: the first frame delivered after a request may have been exposed before it (the dice
    # not yet at rest when the shaker said so); letting it pass costs one frame's time
    grab_skip_frames: int = Field(
        default=1, ge=0, description="frames to let pass after a grab() request before taking one"
    )
    # -- what the camera reads -----------------------------------------------------------------------
    dice_calibration: str | None = Field(
        default=None,
        description="sic bo: the dice reader's calibration file (`tablectl calibrate dice`); without it "
        "every reading of the dice is refused",
    )
    # -- folder and synthetic sources ----------------------------------------------------------------
    fps: float | None = Field(
        default=None,
        gt=0,
        description="pace a folder or synthetic source at this rate (default 25), and a video file "
        "(default: as fast as it decodes); a real camera sets its own rate",
    )
    loop: bool = Field(default=False, description="a folder source starts again after its last image")
    width: int = Field(default=640, ge=16, le=8192, description="size of synthetic frames")
    height: int = Field(default=480, ge=16, le=8192, description="size of synthetic frames")

    @model_validator(mode="after")
    def _reconnect_order(self) -> CameraOptions:
        if self.reconnect_max_s < self.reconnect_min_s:
            raise ValueError("reconnect_max_s must not be below reconnect_min_s")
        return self
