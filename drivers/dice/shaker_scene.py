"""A simple synthetic dice camera: three dice in the tray, as the simulated shaker left them.

A `Renderer` for `drivers.camera.SyntheticSource(renderer=...)` (the demo and the tests): it asks `truth()`
which shake cycle the dice are in and what they show (None while they still move), and draws them: each rest
gets its own random layout (position, rotation, size, light from one side, a little blur and sensor noise),
and now and then what makes a real reader refuse: a die cocked against another (seen at a slant), or one die
stacked on another. Such a rest must be shaken again; the reader must never read it. (Dice touching are read
apart: `drivers.dice.synthetic.dome_scene` draws them.)

Pure drawing with OpenCV and numpy; the same cycle always gives the same picture (the layout is seeded by the
cycle id), so frames of one rest differ only by the source's sensor noise.

`CALIBRATION_FILE` is the reader's calibration for this renderer's dice, committed (`python -m
calibration.shaker_scene` fits and writes it again); `tests/integration/test_sicbo_table.py` plays rounds with
it on this renderer's dice.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import cv2
import numpy as np
from numpy.typing import NDArray

from drivers.dice.reader import FACES, rounded_square

CALIBRATION_FILE = Path(__file__).with_name("shaker_scene_calibration.json")

SUPERSAMPLE = 3
FELT = (40, 110, 36)  # BGR
IVORY = (228, 233, 236)
INK = (30, 26, 24)
PIP_SPACING = 0.27  # pip grid unit / die side
PIP_RADIUS = 0.085  # / die side
SIDE_RANGE = (54.0, 66.0)

Pose = Literal["flat", "cocked", "stacked"]
#: what the simulated shaker says now: (cycle id, the dice at rest or None while they move)
Truth = Callable[[], tuple[str, tuple[int, ...] | None]]


@dataclass(frozen=True, slots=True)
class Die:
    centre: tuple[float, float]
    value: int
    angle: float  # degrees
    side: float
    pose: Pose = "flat"
    slant: float = 1.0  # cocked: how square the top face looks from above (1 = flat)


@dataclass(frozen=True, slots=True)
class Layout:
    dice: tuple[Die, ...]
    gain: float  # overall light
    light_angle: float  # where the light comes from (degrees)
    light_spread: float  # how much darker the far side of the tray is (0..1)
    blur: float  # Gaussian sigma, px
    kind: str  # "flat" | "cocked" | "stacked" | "moving": what a reader must see


def _rotation(angle: float) -> NDArray[np.float64]:
    t = math.radians(angle)
    return np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])


def _outline(die: Die) -> NDArray[np.float64]:
    """The die's outline as seen from above (squashed along one axis when cocked)."""
    return rounded_square(die.centre, die.side, die.angle, slant=die.slant)


def draw(layout: Layout, width: int, height: int, seed: int = 0) -> NDArray[np.uint8]:
    """The tray and its dice, lit, slightly blurred, with sensor noise."""
    s = SUPERSAMPLE
    canvas = np.empty((height * s, width * s, 3), np.uint8)
    canvas[:] = FELT
    # stacked dice last: the one on top hides the one below
    for die in sorted(layout.dice, key=lambda d: d.pose == "stacked"):
        outline = _outline(die)
        if die.pose == "cocked":
            # the side face the slant shows: a darker band below the top face
            side = outline + _rotation(die.angle) @ np.array([0.0, die.side * (1 - die.slant) * 0.8])
            cv2.fillPoly(canvas, [np.round(side * s).astype(np.int32)], (150, 155, 160), lineType=cv2.LINE_AA)
        cv2.fillPoly(canvas, [np.round(outline * s).astype(np.int32)], IVORY, lineType=cv2.LINE_AA)
        for gx, gy in FACES[die.value]:
            offset = _rotation(die.angle) @ (np.array([gx, gy * die.slant]) * PIP_SPACING * die.side)
            px, py = (offset + np.array(die.centre)) * s
            radius = PIP_RADIUS * die.side * s
            axes = (round(radius), max(1, round(radius * die.slant)))
            cv2.ellipse(canvas, (round(px), round(py)), axes, die.angle, 0, 360, INK, -1, cv2.LINE_AA)
    image = cv2.resize(canvas, (width, height), interpolation=cv2.INTER_AREA).astype(np.float32)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    t = math.radians(layout.light_angle)
    along = ((xs - width / 2) * math.cos(t) + (ys - height / 2) * math.sin(t)) / max(width, height)
    light = layout.gain * (1.0 - layout.light_spread * (along + 0.5))
    lit: NDArray[Any] = cv2.GaussianBlur(image * light[..., None], (0, 0), layout.blur)
    noise = np.random.default_rng(seed).normal(0, 2.0, lit.shape)
    return np.clip(lit + noise, 0, 255).astype(np.uint8)


def _place(
    rng: np.random.Generator, count: int, width: int, height: int, side: float
) -> list[tuple[float, float]]:
    """Centres for `count` dice well apart from each other and from the rim."""
    margin = side * 1.1
    for _ in range(1000):
        centres = [
            (float(rng.uniform(margin, width - margin)), float(rng.uniform(margin, height - margin)))
            for _ in range(count)
        ]
        if all(math.dist(a, b) > side * 1.9 for i, a in enumerate(centres) for b in centres[i + 1 :]):
            return centres
    raise RuntimeError("no room for the dice")  # not with the sizes used here


def layout_for(
    values: Sequence[int],
    rng: np.random.Generator,
    width: int,
    height: int,
    *,
    anomaly_rate: float = 0.0,
) -> Layout:
    """A random rest of these dice; with `anomaly_rate` one of cocked, stacked."""
    side = float(rng.uniform(*SIDE_RANGE))
    centres = _place(rng, len(values), width, height, side)
    dice = [
        Die(centre, int(value), float(rng.uniform(0, 90)), side * float(rng.uniform(0.97, 1.03)))
        for centre, value in zip(centres, values, strict=True)
    ]
    kind = "flat"
    if len(dice) >= 2 and rng.random() < anomaly_rate:
        kind = str(rng.choice(["cocked", "stacked"]))
        first, second = dice[0], dice[1]
        if kind == "cocked":
            dice[0] = Die(
                first.centre, first.value, first.angle, first.side, "cocked", float(rng.uniform(0.5, 0.7))
            )
        else:
            # on top of the first, nearer the camera: larger, and off its centre
            offset = rng.uniform(-0.25, 0.25, 2) * first.side
            centre = (first.centre[0] + float(offset[0]), first.centre[1] + float(offset[1]))
            dice[1] = Die(centre, second.value, float(rng.uniform(0, 90)), first.side * 1.22, "stacked")
    return Layout(
        dice=tuple(dice),
        gain=float(rng.uniform(0.85, 1.08)),
        light_angle=float(rng.uniform(0, 360)),
        light_spread=float(rng.uniform(0.0, 0.3)),
        blur=float(rng.uniform(0.5, 0.8)),
        kind=kind,
    )


def _seed(*parts: object) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


class ShakerScene:
    """A `Renderer`: the dice `truth()` says are at rest, in a layout of their own per cycle."""

    def __init__(
        self,
        truth: Truth,
        *,
        width: int = 640,
        height: int = 480,
        seed: int = 0,
        anomaly_rate: float = 0.25,
    ) -> None:
        self.truth = truth
        self.width, self.height = width, height
        self.seed = seed
        self.anomaly_rate = anomaly_rate
        #: the layout of each rest drawn so far (tests compare what was read with what was shown)
        self.layouts: dict[str, Layout] = {}
        self._frames: dict[str, NDArray[np.uint8]] = {}

    def __call__(self, index: int, t: float) -> NDArray[np.uint8]:
        cycle, values = self.truth()
        if values is None:
            # moving: a different scatter every frame, smeared by the motion (a reader must refuse it)
            rng = np.random.default_rng(_seed(self.seed, "moving", index))
            moving = layout_for((1, 2, 3), rng, self.width, self.height)
            moving = Layout(moving.dice, moving.gain, moving.light_angle, moving.light_spread, 6.0, "moving")
            return draw(moving, self.width, self.height, seed=index)
        key = f"{cycle}:{','.join(map(str, values))}"
        frame = self._frames.get(key)
        if frame is None:
            rng = np.random.default_rng(_seed(self.seed, key))
            layout = layout_for(values, rng, self.width, self.height, anomaly_rate=self.anomaly_rate)
            self.layouts[cycle] = layout
            frame = self._frames[key] = draw(layout, self.width, self.height, seed=_seed(key) % 2**32)
            if len(self._frames) > 64:  # a long demo: keep the recent rests only
                self._frames.pop(next(iter(self._frames)))
        return frame


def die_box(die: Die) -> tuple[float, float, float, float]:
    """The box (x, y, w, h) around a die as drawn: a label for the reader's calibration."""
    points = _outline(die)
    (x0, y0), (x1, y1) = points.min(axis=0), points.max(axis=0)
    return float(x0), float(y0), float(x1 - x0), float(y1 - y0)
