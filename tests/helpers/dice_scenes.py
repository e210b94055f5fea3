"""Synthetic dice drawn with OpenCV (exact truth: `die`, `scene`, a calibration's `training_set`), the real
photographs' folder (`DATA`, in ../shared next to the repository) and how a labelled die is read from them:
shared by test_dice_reader.py, test_dice_calibration.py and test_camera_sources.py."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from calibration.dice import LabelledDie, LabelledImage
from drivers.dice.reader import FACES, DiceReader, rounded_square
from tests.helpers.paths import REPO

DATA = REPO.parent / "shared" / "data" / "dice"

# --- synthetic dice -------------------------------------------------------------------------------------

SUPERSAMPLE = 4  # drawn 4x larger then shrunk: soft, anti-aliased edges as a camera sees them
FELT = (38, 104, 34)  # BGR
IVORY = (232, 236, 238)
INK = (28, 24, 22)
PIP_SPACING = 0.27  # pip grid unit / die side
PIP_RADIUS = 0.085  # / die side
SIDE = 60.0
Pips = Sequence[tuple[int, int]]


def rotation(angle: float) -> np.ndarray:
    t = math.radians(angle)
    return np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])


def die_box(centre: tuple[float, float], side: float, angle: float) -> tuple[float, float, float, float]:
    points = rounded_square(centre, side, angle)
    (x0, y0), (x1, y1) = points.min(axis=0), points.max(axis=0)
    return (float(x0), float(y0), float(x1 - x0), float(y1 - y0))


def die(
    centre: tuple[float, float], value: int, angle: float = 0.0, side: float = SIDE, **extra: Any
) -> dict[str, Any]:
    return {"centre": centre, "value": value, "angle": angle, "side": side, **extra}


def scene(dice: Sequence[dict[str, Any]], size: tuple[int, int] = (640, 480), seed: int = 0) -> np.ndarray:
    """Dice on green felt, slightly blurred, with sensor noise. A die's `pips` (grid positions) overrides its
    value's pattern (to draw impossible faces); its `marks`, (x, y, share) each, add pip-coloured marks at
    grid positions, of that share of a pip's area (smudges)."""
    width, height = size
    canvas = np.empty((height * SUPERSAMPLE, width * SUPERSAMPLE, 3), np.uint8)
    canvas[:] = FELT
    for spec in dice:
        outline = rounded_square(spec["centre"], spec["side"], spec["angle"]) * SUPERSAMPLE
        cv2.fillPoly(canvas, [np.round(outline).astype(np.int32)], IVORY, lineType=cv2.LINE_AA)
        pips: Pips = spec.get("pips") or FACES[spec["value"]]
        # each pip a whole pip's area, then the marks
        for gx, gy, share in [(gx, gy, 1.0) for gx, gy in pips] + list(spec.get("marks", ())):
            offset = rotation(spec["angle"]) @ (np.array([gx, gy], float) * PIP_SPACING * spec["side"])
            px, py = (offset + np.array(spec["centre"])) * SUPERSAMPLE
            radius = round(PIP_RADIUS * spec["side"] * SUPERSAMPLE * share**0.5)
            cv2.circle(canvas, (round(px), round(py)), radius, INK, -1, lineType=cv2.LINE_AA)
    image = cv2.resize(canvas, (width, height), interpolation=cv2.INTER_AREA)
    image = cv2.GaussianBlur(image, (0, 0), 0.6)
    noise = np.random.default_rng(seed).normal(0, 2.5, image.shape)
    return np.clip(image.astype(np.float32) + noise, 0, 255).astype(np.uint8)


def labelled(dice: Sequence[dict[str, Any]], image: np.ndarray, name: str) -> LabelledImage:
    labels = tuple(LabelledDie(d["value"], die_box(d["centre"], d["side"], d["angle"])) for d in dice)
    return LabelledImage(image, labels, name=name)


def training_set(images: int = 24, seed: int = 7) -> list[LabelledImage]:
    """Three dice per image, every face equally often, at random angles and sizes 54-66 px."""
    rng = np.random.default_rng(seed)
    values = [value for value in range(1, 7) for _ in range(images // 2)]
    rng.shuffle(values)
    examples = []
    for index in range(images):
        dice = []
        for slot_number, slot in enumerate(rng.permutation(6)[:3]):
            centre = (
                110 + (slot % 3) * 210 + rng.uniform(-30, 30),
                130 + (slot // 3) * 220 + rng.uniform(-30, 30),
            )
            value = int(values[index * 3 + slot_number])
            dice.append(die(centre, value, rng.uniform(0, 90), rng.uniform(54, 66)))
        examples.append(labelled(dice, scene(dice, seed=1000 + index), f"train-{index}"))
    return examples


THREE = [die((150, 200), 2, 10), die((320, 240), 5, 35), die((480, 300), 6, 70)]


def crop_reading(
    reader: DiceReader, image: np.ndarray, centre: tuple[float, float], side: float
) -> int | None:
    """Read the die at a labelled centre in a crop 3 die sides wide (the label only says where to look)."""
    half = 1.5 * side
    x0, y0 = max(0, round(centre[0] - half)), max(0, round(centre[1] - half))
    crop = image[y0 : round(centre[1] + half), x0 : round(centre[0] + half)]
    return reader.read_die_at(crop, (centre[0] - x0, centre[1] - y0)).value
