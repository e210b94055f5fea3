"""Fitting a `DiceCalibration` from labelled photographs of the table's dice, and storing it.

The labelled examples say where each die is (a box) and what it shows. The fit measures the table's own dice
with the reader's own code and sets every threshold from what it saw:

1. segmentation: the die/background colour distance (and whether dice may be darker than the background) that
   turns the most labelled dice into one blob each, with the fewest blobs where there is no die;
2. dice: the accepted blob size and shape, from the blobs that hold exactly one labelled die;
3. pips: the pip polarity (dark, light, either) and least pip contrast that read the most dice right and the
   fewest wrong under lenient face checks; then every face tolerance (pip size, roundness, grid size, fit
   error, tilt, centre, empty positions, sharpness) from the dice read right, with a margin;
4. the least confidence: above every wrong reading left on the calibration images, so that none of them
   would have been a confident one.

Labels are used to fit and to score only; the reader never sees them. `save` writes a versioned JSON file and
never replaces an older one; `load` reads it back.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import cv2
import numpy as np

from drivers.dice.calibration_file import CalibrationFileError, load_calibration
from drivers.dice.reader import (
    DiceCalibration,
    DiceReader,
    DieRegion,
    FaceMeasure,
    Pixels,
    Polarity,
    outside_as_felt,
    to_lab,
)

__all__ = [
    "CalibrationError",
    "DiceCalibration",
    "DieOutcome",
    "Evaluation",
    "LabelledDie",
    "LabelledImage",
    "ValueSample",
    "calibrate",
    "calibrate_from_samples",
    "evaluate",
    "fit_tray",
    "load",
    "load_samples",
    "load_yolo_folder",
    "read_back",
    "save",
    "save_as",
]

BoxKind = Literal["die", "pips"]

# A YOLO "pips" box encloses the top face's pip pattern only: the die is about this much larger (2-6 pips).
PIPS_BOX_TO_DIE_SIDE = 1.45
# A "die" box encloses the whole die as seen (a die turned 45 degrees fills its box less).
DIE_BOX_TO_DIE_SIDE = 1.0 / 1.12
MAX_SEGMENTATION_IMAGES = 60
MAX_SELECTION_DICE = 300  # dice used to choose the pip detection settings (all are used for the tolerances)
# Even with no wrong reading in the calibration, a reading must keep this margin from every limit: dice and
# light at the table will differ a little from the examples
LEAST_CONFIDENCE = 0.1
WRONG_PENALTY = 20  # a wrong reading costs this many right ones when choosing between settings
# dice larger than this (pixels) are read from the frame shrunk to about this size: the pips stay several
# pixels wide and the reading takes a fraction of the time
READ_SIDE_PX = 48.0
# touching dice are split into dice within this fraction of the sizes seen alone (1st-99th percentile): the
# squares fitted to dice that touch came out up to 2.5% below that range on generated dome frames of one die
# size (the blob's soft outline and the gaps closed between dice move its area), so a margin of about three
# times that; on a table of one die size it still leaves out 4 dice for a blob of 3 (0.87 times as wide) and
# 2 larger ones (1.22 times)
SPLIT_SIDE_MARGIN = 0.08


class CalibrationError(Exception):
    """The examples cannot produce a calibration (no labelled dice, unreadable files...)."""


@dataclass(frozen=True)
class LabelledDie:
    value: int  # 1-6
    box: tuple[float, float, float, float]  # x, y, w, h in pixels
    box_kind: BoxKind = "die"

    @property
    def centre(self) -> tuple[float, float]:
        x, y, w, h = self.box
        return (x + w / 2, y + h / 2)

    def die_side(self) -> float | None:
        """The die's side in pixels as far as the box tells (None: a "pips" box of a 1 does not tell)."""
        _, _, w, h = self.box
        if self.box_kind == "die":
            return max(w, h) * DIE_BOX_TO_DIE_SIDE
        return None if self.value == 1 else max(w, h) * PIPS_BOX_TO_DIE_SIDE


@dataclass(frozen=True)
class LabelledImage:
    """One example: the image itself or the file it is in (loaded when needed), and its labelled dice."""

    image: Pixels | Path
    dice: tuple[LabelledDie, ...]
    name: str = ""

    def load(self) -> Pixels:
        if isinstance(self.image, np.ndarray):
            return self.image
        pixels = cv2.imread(str(self.image), cv2.IMREAD_COLOR)
        if pixels is None:
            raise CalibrationError(f"{self.image}: not an image OpenCV can read")
        return pixels


@dataclass(frozen=True)
class DieOutcome:
    image: str
    truth: int
    value: int | None
    confidence: float
    reason: str

    @property
    def kind(self) -> Literal["correct", "wrong", "unreadable"]:
        if self.value is None:
            return "unreadable"
        return "correct" if self.value == self.truth else "wrong"


@dataclass
class Evaluation:
    dice: list[DieOutcome] = field(default_factory=list)
    images: Counter[str] = field(default_factory=Counter)  # "all right" / "any wrong" / "abstained"

    def counts(self) -> Counter[str]:
        return Counter(outcome.kind for outcome in self.dice)

    def summary(self) -> str:
        counts, total = self.counts(), max(1, len(self.dice))
        images = sum(self.images.values())
        parts = ", ".join(
            f"{counts[k]} {k} ({100 * counts[k] / total:.1f}%)" for k in ("correct", "wrong", "unreadable")
        )
        image_parts = ", ".join(f"{self.images[k]} {k}" for k in ("all right", "any wrong", "abstained"))
        return f"{len(self.dice)} dice: {parts}; {images} images: {image_parts}"


# --- loading labelled folders --------------------------------------------------------------------------


def load_yolo_folder(images: Path, labels: Path, box_kind: BoxKind = "die") -> list[LabelledImage]:
    """Images with YOLO labels (`<stem>.txt`: `class cx cy w h` normalised, value = class + 1)."""
    examples = []
    for path in sorted(p for p in Path(images).iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png")):
        label_path = Path(labels) / f"{path.stem}.txt"
        if not label_path.exists():
            continue
        height, width = _image_size(path)
        examples.append(
            LabelledImage(path, tuple(_yolo_dice(label_path, width, height, box_kind)), name=path.name)
        )
    if not examples:
        raise CalibrationError(f"no labelled images in {images} (labels in {labels})")
    return examples


def _image_size(path: Path) -> tuple[int, int]:
    pixels = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
    if pixels is None:
        raise CalibrationError(f"{path}: not an image OpenCV can read")
    return int(pixels.shape[0]), int(pixels.shape[1])


def _yolo_dice(path: Path, width: int, height: int, box_kind: BoxKind) -> Iterator[LabelledDie]:
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            label, cx, cy, w, h = int(fields[0]), *(float(value) for value in fields[1:5])
        except (ValueError, IndexError):
            raise CalibrationError(f"{path}:{number}: not a YOLO label line: {line!r}") from None
        if not 0 <= label <= 5:
            raise CalibrationError(f"{path}:{number}: class {label} is not a die face (0-5)")
        box = ((cx - w / 2) * width, (cy - h / 2) * height, w * width, h * height)
        yield LabelledDie(label + 1, box, box_kind)


# --- fitting -------------------------------------------------------------------------------------------


def calibrate(
    examples: Sequence[LabelledImage],
    *,
    roi: tuple[int, int, int, int] | None = None,
    now: datetime | None = None,
    read_side: float = READ_SIDE_PX,
) -> DiceCalibration:
    """Fit every threshold of the reader from labelled examples (see the module's docstring)."""
    dice = [die for example in examples for die in example.dice]
    if not dice:
        raise CalibrationError("no labelled dice in the examples")
    sides = [side for side in (die.die_side() for die in dice) if side is not None]
    if not sides:
        raise CalibrationError("the labels do not tell the dice's size (only 1s in pip boxes)")
    scale = reading_scale(float(np.median(sides)), read_side)
    fitted = _calibrate_in_view(to_view(examples, roi, scale), [side * scale for side in sides])
    return _finish(fitted.model_copy(update={"roi": roi, "scale": scale}), examples, dice, now)


def reading_scale(die_side: float, read_side: float = READ_SIDE_PX) -> float:
    """The scale at which a die `die_side` pixels wide is read about `read_side` wide (never enlarged)."""
    return 1.0 if die_side <= read_side else round(read_side / die_side, 4)


def to_view(
    examples: Sequence[LabelledImage], roi: tuple[int, int, int, int] | None, scale: float
) -> list[LabelledImage]:
    """The examples as the reader sees them: the tray region only, resized by `scale` (labels moved too)."""
    if roi is None and scale == 1.0:
        return list(examples)
    viewer = DiceReader(DiceCalibration(roi=roi, scale=scale))
    moved = []
    for example in examples:
        view = viewer.view(example.load())
        if isinstance(view, str):
            raise CalibrationError(f"{example.name or 'an example'}: {view}")
        image = cv2.cvtColor(view.lab, cv2.COLOR_LAB2BGR)
        dice = []
        for die in example.dice:
            x, y, w, h = die.box
            left, top = view.to_view((x, y))
            dice.append(replace(die, box=(left, top, w * view.scale, h * view.scale)))
        moved.append(LabelledImage(image, tuple(dice), example.name))
    return moved


def _calibrate_in_view(examples: Sequence[LabelledImage], sides: list[float]) -> DiceCalibration:
    low, high = float(np.percentile(sides, 2)), float(np.percentile(sides, 98))
    base = DiceCalibration(
        die_side_px=(low / 1.6, high * 1.6),
        die_side_median=float(np.median(sides)),
        pip_area_ratio=(0.002, 0.12),
        one_pip_area_ratio=(0.002, 0.12),
        min_pip_roundness=0.4,
        max_pip_area_spread=4.0,
        pip_unit_ratio=((0.1, 0.6),) * 6,
        max_layout_error=0.45,
        min_face_aspect=(0.35,) * 6,
        max_diagonal_angle=40.0,
        max_centre_offset=0.8,
        max_empty_level=0.8,
        max_clutter_level=0.9,
        max_pip_colour_spread=2.0,
        min_sharpness=1.0,
        min_confidence=0.0,
    )
    segmentation_examples = list(examples)[:: max(1, math.ceil(len(examples) / MAX_SEGMENTATION_IMAGES))]
    base = _fit_segmentation(base, segmentation_examples)
    singles = list(_single_dice(base, examples))
    if len(singles) < 6:
        raise CalibrationError(
            f"only {len(singles)} labelled dice stand alone in the images: "
            "need more examples of separate dice"
        )
    base = _fit_die_shape(base, singles)
    singles = list(_single_dice(base, examples))
    base = _fit_pip_detection(base, singles)
    fitted = _fit_face_tolerances(base, singles)
    fitted, wrong_before = _fit_min_confidence(fitted, singles)
    return fitted.model_copy(
        update={"fitted_on": {"single_dice_measured": len(singles), "wrong_before": wrong_before}}
    )


def _finish(
    fitted: DiceCalibration,
    examples: Sequence[LabelledImage],
    dice: Sequence[LabelledDie],
    now: datetime | None,
) -> DiceCalibration:
    """Read the examples back with the finished calibration, and record what it was fitted on."""
    wrong_before = fitted.fitted_on["wrong_before"]
    evaluation = evaluate(DiceReader(fitted), examples)
    counts = evaluation.counts()
    when = (now or datetime.now(UTC)).astimezone(UTC)
    return fitted.model_copy(
        update={
            "created_utc": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "fitted_on": {
                "images": len(examples),
                "dice": len(dice),
                "single_dice_measured": fitted.fitted_on["single_dice_measured"],
                # read wrong with no least confidence: the least confidence was set above all of these
                "highest_wrong_confidence": round(
                    max((w["confidence"] for w in wrong_before), default=0.0), 4
                ),
                "wrong_without_least_confidence": wrong_before,
                # read back on the calibration images themselves, one die at a time
                "correct": counts["correct"],
                "wrong": counts["wrong"],
                "unreadable": counts["unreadable"],
                "images_all_right": evaluation.images["all right"],
                "images_any_wrong": evaluation.images["any wrong"],
                "images_abstained": evaluation.images["abstained"],
                "wrong_readings": [
                    {"image": o.image, "label": o.truth, "read": o.value, "confidence": o.confidence}
                    for o in evaluation.dice
                    if o.kind == "wrong"
                ],
            },
        }
    )


@dataclass
class _Single:
    """A labelled die that the segmentation found as one blob of its own."""

    name: str
    die: LabelledDie
    lab: Pixels
    region: DieRegion


def _labs(examples: Iterable[LabelledImage]) -> Iterator[tuple[LabelledImage, Pixels]]:
    for example in examples:
        lab = to_lab(example.load())
        if lab is None:
            raise CalibrationError(f"{example.name or 'an example'}: not a colour or grey 8-bit image")
        yield example, lab


def _segmentation_score(calibration: DiceCalibration, labs: list[tuple[LabelledImage, Pixels]]) -> float:
    reader = DiceReader(calibration)
    score = 0.0
    for example, lab in labs:
        regions = reader.find_dice(_crop(lab, calibration.roi))
        centres = [_shift(die.centre, calibration.roi) for die in example.dice]
        for region in regions:
            inside = sum(1 for centre in centres if _contains(region, centre))
            if inside == 1 and not reader.region_problem(region):
                score += 1.0
            elif inside == 0:
                score -= 0.5  # a blob where there is no die: shadow, tray edge, stain
    return score


def _fit_segmentation(base: DiceCalibration, examples: Sequence[LabelledImage]) -> DiceCalibration:
    labs = list(_labs(examples))
    best, best_score = base, -math.inf
    for contrast in (8.0, 12.0, 16.0, 22.0, 30.0):
        for shadow in (0.0, 0.5, 1.0):
            candidate = base.model_copy(update={"die_contrast": contrast, "shadow_weight": shadow})
            score = _segmentation_score(candidate, labs)
            if score > best_score:
                best, best_score = candidate, score
    return best


def _single_dice(calibration: DiceCalibration, examples: Iterable[LabelledImage]) -> Iterator[_Single]:
    reader = DiceReader(calibration)
    for example, lab in _labs(examples):
        lab = _crop(lab, calibration.roi)
        regions = reader.find_dice(lab)
        centres = [(die, _shift(die.centre, calibration.roi)) for die in example.dice]
        for region in regions:
            inside = [die for die, centre in centres if _contains(region, centre)]
            if len(inside) == 1 and not region.at_edge:
                yield _Single(example.name, inside[0], lab, region)


def _fit_die_shape(base: DiceCalibration, singles: list[_Single]) -> DiceCalibration:
    sides = np.array([single.region.side for single in singles])
    aspects = np.array([single.region.aspect for single in singles])
    solidity = np.array([single.region.solidity for single in singles])
    # blobs far off the labelled size are two dice or a die and its shadow: not what a die looks like
    expected = [s.die.die_side() for s in singles]
    typical = [
        s.region.side
        for s, e in zip(singles, expected, strict=True)
        if e is None or 0.6 < s.region.side / e < 1.6
    ]
    if len(typical) >= 6:
        sides = np.array(typical)
    return base.model_copy(
        update={
            "die_side_px": (float(np.percentile(sides, 1)) * 0.85, float(np.percentile(sides, 99)) * 1.15),
            "split_side_px": (
                float(np.percentile(sides, 1)) * (1.0 - SPLIT_SIDE_MARGIN),
                float(np.percentile(sides, 99)) * (1.0 + SPLIT_SIDE_MARGIN),
            ),
            "die_side_median": float(np.median(sides)),
            "max_die_aspect": max(1.2, float(np.percentile(aspects, 98)) * 1.1),
            "min_die_solidity": min(0.9, float(np.percentile(solidity, 2)) * 0.97),
        }
    )


def _fit_pip_detection(base: DiceCalibration, singles: list[_Single]) -> DiceCalibration:
    """The pip polarity and least contrast whose fitted tolerances read the most dice right and the fewest
    wrong."""
    best, best_score = base, -math.inf
    sample = singles[:: max(1, math.ceil(len(singles) / MAX_SELECTION_DICE))]
    polarities: tuple[Polarity, ...] = ("dark", "light", "any")
    for polarity in polarities:
        for contrast in (12.0, 20.0, 30.0):
            candidate = base.model_copy(update={"pip_polarity": polarity, "pip_contrast": contrast})
            try:
                fitted = _fit_face_tolerances(candidate, sample)
            except CalibrationError:
                continue
            right, wrong = _score(fitted, sample)
            score = right - WRONG_PENALTY * wrong
            if score > best_score:
                best, best_score = candidate, score
    return best


def _score(calibration: DiceCalibration, singles: list[_Single]) -> tuple[int, int]:
    reader = DiceReader(calibration.model_copy(update={"min_confidence": 0.0}))
    right = wrong = 0
    for single in singles:
        value = reader.read_region(single.lab, single.region).value
        right += value == single.die.value
        wrong += value is not None and value != single.die.value
    return right, wrong


def _right_measures(
    calibration: DiceCalibration, singles: list[_Single]
) -> list[tuple[_Single, FaceMeasure]]:
    """For each die read right under lenient checks, the measurement that read it."""
    reader = DiceReader(calibration)
    found = []
    for single in singles:
        if reader.region_problem(single.region):
            continue
        for measure in reader.measure_face(single.lab, single.region):
            value, _, _ = reader.judge(measure)
            if value == single.die.value:
                found.append((single, measure))
                break
    return found


def _fit_face_tolerances(base: DiceCalibration, singles: list[_Single]) -> DiceCalibration:
    right = _right_measures(base, singles)
    if len(right) < 6:
        raise CalibrationError(
            f"only {len(right)} dice could be read at all: the examples do not fit this method"
        )
    measures = [measure for _, measure in right]
    pip_ratio = [pip.area / single.region.area for single, m in right for pip in m.pips if len(m.pips) >= 2]
    one_ratio = [m.pips[0].area / single.region.area for single, m in right if len(m.pips) == 1]
    pip_ratio = pip_ratio or one_ratio
    one_ratio = one_ratio or pip_ratio
    roundness = [pip.roundness for m in measures for pip in m.pips]
    several = [m for m in measures if len(m.pips) >= 2]
    units = {value: [m.unit_ratio for m in several if len(m.pips) == value] for value in range(2, 7)}
    aspects = {value: [m.face_aspect for m in several if len(m.pips) == value] for value in range(4, 7)}
    layout = [m.layout_error for m in measures if len(m.pips) >= 3] or [0.1]
    diagonal = [m.diagonal_angle for m in measures if len(m.pips) in (2, 3)] or [10.0]
    spread = [m.pip_area_spread for m in several] or [1.5]
    colour_spread = [m.colour_spread for m in several] or [0.2]
    centre = [m.centre_offset for m in measures]
    empty = [m.empty_level for m in measures]
    clutter = [m.clutter_level for m in measures]
    sharpness = [m.sharpness for m in measures]
    levels = [m.pip_level for m in measures]
    return base.model_copy(
        update={
            "pip_area_ratio": (
                float(np.percentile(pip_ratio, 0.5)) * 0.7,
                float(np.percentile(pip_ratio, 99.5)) * 1.4,
            ),
            "one_pip_area_ratio": (
                float(np.percentile(one_ratio, 1)) * 0.7,
                float(np.percentile(one_ratio, 99)) * 1.4,
            ),
            "min_pip_roundness": max(base.min_pip_roundness, float(np.percentile(roundness, 0.5)) * 0.9),
            "pip_unit_ratio": _unit_ranges(units),
            "max_layout_error": min(0.45, max(0.08, float(np.percentile(layout, 99)) * 1.25)),
            "min_face_aspect": (
                1.0,
                1.0,
                1.0,
                *(_least_aspect(aspects[value], aspects) for value in (4, 5, 6)),
            ),
            "max_diagonal_angle": min(40.0, max(8.0, float(np.percentile(diagonal, 99)) * 1.25)),
            "max_pip_colour_spread": min(1.0, max(0.15, float(np.percentile(colour_spread, 99)) * 1.25)),
            "max_pip_area_spread": min(4.0, max(1.5, float(np.percentile(spread, 99)) * 1.2)),
            "max_centre_offset": min(0.8, max(0.05, float(np.percentile(centre, 99)) * 1.25)),
            "max_empty_level": min(0.6, max(0.2, float(np.percentile(empty, 99)) * 1.25)),
            "max_clutter_level": min(0.8, max(0.3, float(np.percentile(clutter, 99)) * 1.25)),
            # a lower limit with a margin, as the others: refusing the blurriest 5% of the calibration's own
            # dice (as before) refused about 8% of calm synthetic frames and 13 matteop65 photos that read
            # right; the other checks refuse a blurred die whose pips are smeared (bench/DICE.md)
            "min_sharpness": float(np.percentile(sharpness, 1)) * 0.7,
            "typical_sharpness": float(np.median(sharpness)),
            "pip_contrast": max(
                base.pip_contrast, min(float(np.percentile(levels, 1)) * 0.8, base.pip_contrast * 2)
            ),
        }
    )


MIN_SAMPLES_PER_FACE = 8  # fewer right readings of a face than this: its tolerance comes from all faces


def _unit_ranges(units: dict[int, list[float]]) -> tuple[tuple[float, float], ...]:
    """Accepted grid unit / die side for 1-6 pips; a 1's (an estimate) spans the 2-5 pip faces."""
    every = [unit for values in units.values() for unit in values] or [0.25]

    def spread(values: list[float]) -> tuple[float, float]:
        chosen = values if len(values) >= MIN_SAMPLES_PER_FACE else every
        return (float(np.percentile(chosen, 1)) * 0.92, float(np.percentile(chosen, 99)) * 1.08)

    common = [unit for value in (2, 3, 4, 5) for unit in units[value]] or every
    return (spread(common), *(spread(units[value]) for value in range(2, 7)))


def _least_aspect(values: list[float], aspects: dict[int, list[float]]) -> float:
    if len(values) < MIN_SAMPLES_PER_FACE:
        values = [aspect for every in aspects.values() for aspect in every] or [1.0]
    return max(0.35, min(0.9, float(np.percentile(values, 1)) * 0.95))


def _fit_min_confidence(
    calibration: DiceCalibration, singles: list[_Single]
) -> tuple[DiceCalibration, list[dict[str, Any]]]:
    """The least confidence: above the most confident wrong reading of the calibration dice. Returns them all
    (a wrong reading of a calibration die is often a wrong label: the operator should look)."""
    reader = DiceReader(calibration.model_copy(update={"min_confidence": 0.0}))
    wrong: list[dict[str, Any]] = []
    for single in singles:
        reading = reader.read_region(single.lab, single.region)
        if reading.value is not None and reading.value != single.die.value:
            wrong.append(
                {
                    "image": single.name,
                    "label": single.die.value,
                    "read": reading.value,
                    "confidence": reading.confidence,
                    "box": [round(v) for v in single.die.box],
                }
            )
    ceiling = max((float(w["confidence"]) for w in wrong), default=0.0)
    least = max(LEAST_CONFIDENCE, ceiling + 0.05) if wrong else LEAST_CONFIDENCE
    return calibration.model_copy(update={"min_confidence": min(1.0, least)}), wrong


# --- measuring ------------------------------------------------------------------------------------------


def evaluate(reader: DiceReader, examples: Iterable[LabelledImage]) -> Evaluation:
    """Read every labelled die where it is (`read_die_at`) and score it against its label.

    Per image: "all right" when every die was read right, "any wrong" when one was read confidently wrong,
    "abstained" otherwise (at the table: re-shake)."""
    evaluation = Evaluation()
    for example in examples:
        image = example.load()
        outcomes = []
        for die in example.dice:
            reading = reader.read_die_at(image, die.centre)
            outcomes.append(
                DieOutcome(example.name, die.value, reading.value, reading.confidence, reading.reason)
            )
        evaluation.dice.extend(outcomes)
        kinds = {outcome.kind for outcome in outcomes}
        evaluation.images[
            "any wrong" if "wrong" in kinds else "abstained" if "unreadable" in kinds else "all right"
        ] += 1
    return evaluation


# --- files ----------------------------------------------------------------------------------------------


def save(calibration: DiceCalibration, directory: str | Path, *, now: datetime | None = None) -> Path:
    """Write `dice-calibration-<UTC time>.json` in `directory`; an existing file is never replaced."""
    when = (now or datetime.now(UTC)).astimezone(UTC)
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"dice-calibration-{when.strftime('%Y%m%dT%H%M%S%fZ')}"
    text = json.dumps(calibration.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    for attempt in range(1, 1000):
        path = folder / (f"{stem}.json" if attempt == 1 else f"{stem}-{attempt}.json")
        try:
            with path.open("x", encoding="utf-8") as handle:  # "x": fails rather than overwrite
                handle.write(text)
        except FileExistsError:
            continue
        return path
    raise CalibrationError(f"cannot find a free file name for {stem} in {folder}")


def save_as(calibration: DiceCalibration, path: str | Path) -> Path:
    """Write the calibration to `path`; fails rather than replace an existing file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(calibration.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
    try:
        with target.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise CalibrationError(
            f"{target} exists: a calibration is never replaced; choose another name"
        ) from None
    return target


def load(path: str | Path) -> DiceCalibration:
    """Read a calibration file as the reader does (`load_calibration`), its refusal as a CalibrationError."""
    try:
        return load_calibration(path)
    except CalibrationFileError as exc:
        raise CalibrationError(str(exc)) from None


# --- small helpers --------------------------------------------------------------------------------------


def _crop(lab: Pixels, roi: tuple[int, int, int, int] | None) -> Pixels:
    if roi is None:
        return lab
    x, y, w, h = roi
    return lab[y : y + h, x : x + w]


def _shift(point: tuple[float, float], roi: tuple[int, int, int, int] | None) -> tuple[float, float]:
    return point if roi is None else (point[0] - roi[0], point[1] - roi[1])


def _contains(region: DieRegion, point: tuple[float, float]) -> bool:
    x, y, w, h = region.box
    px, py = int(point[0]), int(point[1])
    return x <= px < x + w and y <= py < y + h and bool(region.mask[py - y, px - x])


# --- calibrating from values only -------------------------------------------------------------------------
#
# What a technician can produce at the table: photos of the table's own dice, each with the values it shows
# (in any order), no boxes. The die's size, the segmentation and the tray are found from the blob counts (a
# photo of 3 dice must show 3 die-sized blobs); the dice of each photo get their values where one reading is
# consistent with the photo's values; the box calibration above then runs on those; the least confidence is
# raised above every reading that the photos' values contradict; every photo is read back whole.

SHAPE_PROBLEMS = ("touching", "stacked", "cocked", "edge")  # a blob that is not one die lying flat
TRAY_STEP = 4  # grey levels between neighbouring pixels (a tray ~120 px across) still on the same surface
CANDIDATE_SIDES = 14  # die sizes tried, from 1/40 to 1/4 of the image's short side
DISCOVERY_IMAGES = 30  # photos used to find the die's size and the segmentation


@dataclass(frozen=True)
class ValueSample:
    """One photo of the table's dice and the values it shows (any order)."""

    image: Pixels | Path
    values: tuple[int, ...]
    name: str = ""

    def load(self) -> Pixels:
        return LabelledImage(self.image, (), self.name).load()


def load_samples(path: str | Path) -> list[ValueSample]:
    """A SAMPLES.csv: columns `image,values`; `values` are face values separated by spaces; an image's path
    is relative to the CSV's folder."""
    import csv

    csv_path = Path(path)
    try:
        text = csv_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CalibrationError(f"{csv_path}: cannot read the samples: {exc.strerror or exc}") from None
    rows = list(csv.DictReader(text.splitlines()))
    if not rows or not {"image", "values"} <= set(rows[0]):
        raise CalibrationError(f"{csv_path}: expected a header line 'image,values' and one line per photo")
    samples = []
    for number, row in enumerate(rows, 2):
        try:
            values = tuple(int(value) for value in (row["values"] or "").split())
        except ValueError:
            raise CalibrationError(f"{csv_path}:{number}: values {row['values']!r} are not numbers") from None
        if not values or not all(1 <= value <= 6 for value in values):
            raise CalibrationError(
                f"{csv_path}:{number}: values must be 1-6, at least one: {row['values']!r}"
            )
        image = csv_path.parent / (row["image"] or "").strip()
        if not image.is_file():
            raise CalibrationError(f"{csv_path}:{number}: no image {image}")
        samples.append(ValueSample(image, values, image.name))
    return samples


def calibrate_from_samples(
    samples: Sequence[ValueSample],
    *,
    roi: tuple[int, int, int, int] | None = None,
    now: datetime | None = None,
    read_side: float = READ_SIDE_PX,
) -> DiceCalibration:
    """Fit a calibration from photos labelled with values only (see above)."""
    if not samples:
        raise CalibrationError("no samples")
    images = [sample.load() for sample in samples]
    if roi is None:
        roi = fit_tray(images)
    circle = fit_tray_circle(images, roi)
    if circle is not None:  # a round tray: its rim is no die, as the reader will see it
        images = [outside_as_felt(image, circle, (0, 0)) for image in images]
    found = _discover_dice(images, samples, roi, read_side)
    examples = _labelled_from_values(images, samples, found)
    if sum(len(e.dice) for e in examples) < 6:
        raise CalibrationError(
            f"only {sum(len(e.dice) for e in examples)} dice could be told apart and matched to their "
            "values: need more photos of dice lying apart"
        )
    fitted = calibrate(examples, roi=roi, now=now, read_side=read_side)
    if circle is not None:
        fitted = fitted.model_copy(update={"tray_circle": circle})
    fitted, contradicted = _raise_least_confidence(fitted, images, samples)
    readback = read_back(DiceReader(fitted), images, samples)
    # a camera straight above sees no side faces: then no pip need be tried left out (5x less work per die)
    overhead = fitted.model_copy(update={"max_pips_left_out": 0})
    overhead_readback = read_back(DiceReader(overhead), images, samples)
    if overhead_readback["exact"] >= readback["exact"] and overhead_readback["misread"] == 0:
        fitted, readback = overhead, overhead_readback
    return fitted.model_copy(
        update={
            "fitted_on": {
                **fitted.fitted_on,
                "mode": "values",
                "samples": len(samples),
                "samples_matched": len(examples),
                "contradicted_readings": contradicted,
                "readback": readback,
            }
        }
    )


@dataclass
class _Discovery:
    calibration: DiceCalibration  # segmentation and die size, lenient everywhere else
    side: float  # the usual die side in frame pixels
    blobs: list[list[tuple[float, float, float]]]  # per image: (x, y, side) of each single die, frame px


def _segmentation_candidate(side: float, contrast: float, shadow: float, roi: Any, read_side: float) -> Any:
    scale = reading_scale(side, read_side)
    seen = side * scale
    return DiceCalibration(
        roi=roi,
        scale=scale,
        die_side_px=(seen / 1.5, seen * 1.5),
        die_side_median=seen,
        die_contrast=contrast,
        shadow_weight=shadow,
        max_die_aspect=1.35,
        min_die_solidity=0.85,
        max_pips_left_out=0,
    )


def _count_score(calibration: DiceCalibration, images: list[Pixels], samples: Sequence[ValueSample]) -> float:
    """Photos whose single-die blobs are as many as their values, less a little for each other photo."""
    reader = DiceReader(calibration)
    score = 0.0
    for image, sample in zip(images, samples, strict=True):
        view = reader.view(image)
        if isinstance(view, str):
            return -math.inf
        regions = [region for region in reader.find_dice(view.lab) if not region.at_edge]
        single = sum(1 for region in regions if not reader.region_problem(region))
        wanted = len(sample.values)
        if single == wanted == len(regions):
            score += 1.0
        else:  # many dice, some touching: partly right when the single dice found are not too many
            score += 0.5 * min(single, wanted) / wanted - 0.5 * max(0, single - wanted) / wanted
    return score


def _discover_dice(
    images: list[Pixels], samples: Sequence[ValueSample], roi: Any, read_side: float
) -> _Discovery:
    subset = list(range(len(images)))[:: max(1, math.ceil(len(images) / DISCOVERY_IMAGES))]
    some_images, some_samples = [images[i] for i in subset], [samples[i] for i in subset]
    short = min(min(image.shape[:2]) for image in images) if roi is None else min(roi[2], roi[3])
    sides = [short / 40 * 10 ** (k / (CANDIDATE_SIDES - 1)) for k in range(CANDIDATE_SIDES)]
    # the die's size is looked for in photos shrunk to about 360 px across the tray: a fraction of the work
    shrink = min(1.0, 360.0 / short)
    small_roi = None if roi is None else tuple(round(v * shrink) for v in roi)
    small_images = [
        cv2.resize(image, None, fx=shrink, fy=shrink, interpolation=cv2.INTER_AREA) if shrink < 1 else image
        for image in some_images
    ]
    best, best_score = None, -math.inf
    for contrast, shadow in ((16.0, 0.5), (30.0, 0.0)):
        for side in sides:
            candidate = _segmentation_candidate(side * shrink, contrast, shadow, small_roi, math.inf)
            score = _count_score(candidate, small_images, some_samples)
            if score > best_score:
                best, best_score = (side, contrast, shadow), score
    assert best is not None
    side, _, _ = best
    best_score = -math.inf
    for contrast in (8.0, 12.0, 16.0, 22.0, 30.0):
        for shadow in (0.0, 0.5, 1.0):
            candidate = _segmentation_candidate(side, contrast, shadow, roi, read_side)
            score = _count_score(candidate, some_images, some_samples)
            if score > best_score:
                best, best_score = (side, contrast, shadow), score
    side, contrast, shadow = best
    # the die's size from the photos that counted right, then the same once more at that size
    calibration = _segmentation_candidate(side, contrast, shadow, roi, read_side)
    blobs = _single_blobs(calibration, images, samples)
    measured = [s for image_blobs in blobs for _, _, s in image_blobs]
    if len(measured) < 6:
        raise CalibrationError(
            "the dice could not be told from the background: fewer than 6 dice found in photos whose die "
            "count matched their values (photograph the dice apart, on the tray, under the table's light)"
        )
    side = float(np.median(measured))
    calibration = _segmentation_candidate(side, contrast, shadow, roi, read_side)
    return _Discovery(calibration, side, _single_blobs(calibration, images, samples))


def _single_blobs(
    calibration: DiceCalibration, images: list[Pixels], samples: Sequence[ValueSample]
) -> list[list[tuple[float, float, float]]]:
    """Per photo, the dice found (centre and side in frame pixels), only where their count is the values';
    when too few photos have that (many dice, touching), every blob that looks like one die in a photo that
    does not show more of them than it has dice."""
    strict = _single_blobs_in(calibration, images, samples, exact=True)
    if sum(len(blobs) for blobs in strict) >= 6:
        return strict
    return _single_blobs_in(calibration, images, samples, exact=False)


def _single_blobs_in(
    calibration: DiceCalibration, images: list[Pixels], samples: Sequence[ValueSample], *, exact: bool
) -> list[list[tuple[float, float, float]]]:
    reader = DiceReader(calibration)
    found = []
    for image, sample in zip(images, samples, strict=True):
        view = reader.view(image)
        blobs: list[tuple[float, float, float]] = []
        if not isinstance(view, str):
            # (blobs at the edge of the frame are left out: the tray's rim, things beside it)
            regions = [region for region in reader.find_dice(view.lab) if not region.at_edge]
            single = [r for r in regions if not reader.region_problem(r)]
            if (len(single) == len(regions) == len(sample.values)) or (
                not exact and len(single) <= len(sample.values)
            ):
                blobs = [(*view.to_frame(r.centre), r.side / view.scale) for r in single]
        found.append(blobs)
    return found


def fit_tray(images: Sequence[Pixels]) -> tuple[int, int, int, int] | None:
    """The tray region: the surface in the middle of the view, as far as it has the same colour.

    The same camera sees the same tray in every photo, and the dice lie elsewhere in each: the pixel-wise
    median of the photos is the tray without dice. The tray is the part of it connected to the middle of the
    view that has the colour of the middle. None (the whole frame) when the photos differ in size, or when
    that part is small (no tray to be seen: the camera looks at dice on a wide surface)."""
    if not images or len({image.shape for image in images}) != 1:
        return None
    height, width = images[0].shape[:2]
    shrink = max(1.0, min(width, height) / 120.0)  # the tray's outline needs no more than this
    size = (max(1, round(width / shrink)), max(1, round(height / shrink)))
    stack = np.stack([cv2.resize(image, size, interpolation=cv2.INTER_AREA) for image in images[:25]])
    empty = cv2.GaussianBlur(np.median(stack, axis=0).astype(np.uint8), (0, 0), 0.8)
    w, h = size
    # flood from the middle: the light may fall off across the tray (neighbours differ little), its edge is a
    # step (neighbours differ a lot)
    mask = np.zeros((h + 2, w + 2), np.uint8)
    step = (TRAY_STEP,) * 3
    cv2.floodFill(
        empty.copy(), mask, (w // 2, h // 2), (0, 0, 0), step, step, 4 | cv2.FLOODFILL_MASK_ONLY | (1 << 8)
    )
    filled = mask[1:-1, 1:-1]
    filled = cv2.morphologyEx(filled, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    _, labels, stats, _ = cv2.connectedComponentsWithStats(filled, connectivity=4)
    label = int(labels[h // 2, w // 2])
    if label == 0:
        return None
    x, y, bw, bh = (int(v) for v in stats[label, :4])
    if bw * bh < 0.2 * w * h:
        return None
    left, top = math.ceil(x * shrink), math.ceil(y * shrink)  # inside the tray, not on its rim
    right, bottom = min(width, math.floor((x + bw) * shrink)), min(height, math.floor((y + bh) * shrink))
    if (left, top, right, bottom) == (0, 0, width, height):
        return None
    return (left, top, right - left, bottom - top)


def fit_tray_circle(
    images: Sequence[Pixels], roi: tuple[int, int, int, int] | None
) -> tuple[float, float, float] | None:
    """A round tray (a shaker's dome): the circle the tray region fills, when it fills it (at least 90% of
    the circle of its width is tray, and it is as tall as wide); else None. In frame pixels, a pixel inside
    the tray's outline (the rim is not tray)."""
    if roi is None or not images:
        return None
    x, y, w, h = roi
    if abs(w - h) > 0.05 * max(w, h):
        return None
    shrink = max(1.0, min(w, h) / 120.0)
    size = (max(1, round(w / shrink)), max(1, round(h / shrink)))
    stack = np.stack(
        [cv2.resize(image[y : y + h, x : x + w], size, interpolation=cv2.INTER_AREA) for image in images[:25]]
    )
    empty = cv2.GaussianBlur(np.median(stack, axis=0).astype(np.uint8), (0, 0), 0.8)
    mask = np.zeros((size[1] + 2, size[0] + 2), np.uint8)
    step = (TRAY_STEP,) * 3
    cv2.floodFill(
        empty.copy(),
        mask,
        (size[0] // 2, size[1] // 2),
        (0, 0, 0),
        step,
        step,
        4 | cv2.FLOODFILL_MASK_ONLY | (1 << 8),
    )
    filled = mask[1:-1, 1:-1]
    radius = min(size) / 2
    ys, xs = np.ogrid[0 : size[1], 0 : size[0]]
    disc = (xs + 0.5 - size[0] / 2) ** 2 + (ys + 0.5 - size[1] / 2) ** 2 <= radius * radius
    if np.count_nonzero(filled[disc]) < 0.9 * np.count_nonzero(disc):
        return None
    # the rim, to the pixel: along rays from the middle of the empty tray (the photos' median, full size),
    # where the colour first leaves the felt's; the circle through those points (least squares), less the
    # rays whose point is off it (a die lying on the rim in most photos, a reflection)
    # the tray region lies inside the rim: look a little beyond it
    height, width = images[0].shape[:2]
    margin = round(0.1 * max(w, h))
    left, top = max(0, x - margin), max(0, y - margin)
    right, bottom = min(width, x + w + margin), min(height, y + h + margin)
    full = np.median(np.stack([image[top:bottom, left:right] for image in images[:15]]), axis=0)
    lab = cv2.cvtColor(full.astype(np.uint8), cv2.COLOR_BGR2LAB).astype(np.float32)
    centre_x, centre_y = x + w / 2 - left, y + h / 2 - top
    reach = np.arange(0.8 * min(w, h) / 2, max(w, h) / 2 + margin)
    points = []
    for turn in np.linspace(0, 2 * math.pi, 120, endpoint=False):
        xs = np.clip(np.round(centre_x + reach * math.cos(turn)).astype(int), 0, right - left - 1)
        ys = np.clip(np.round(centre_y + reach * math.sin(turn)).astype(int), 0, bottom - top - 1)
        samples = lab[ys, xs]
        felt = np.median(samples[: len(samples) // 3], axis=0)
        off = np.nonzero(np.linalg.norm(samples - felt, axis=1) > 3 * TRAY_STEP)[0]
        if len(off):
            points.append((float(xs[off[0]]), float(ys[off[0]])))
    if len(points) < 60:
        return None
    edge = np.array(points)
    for _ in range(2):
        # x^2 + y^2 + a x + b y + c = 0
        design = np.column_stack([edge[:, 0], edge[:, 1], np.ones(len(edge))])
        a, b, c = np.linalg.lstsq(design, -(edge**2).sum(axis=1), rcond=None)[0]
        fit_x, fit_y = -a / 2, -b / 2
        radius = math.sqrt(max(0.0, fit_x * fit_x + fit_y * fit_y - c))
        off_circle = np.abs(np.hypot(edge[:, 0] - fit_x, edge[:, 1] - fit_y) - radius)
        edge = edge[off_circle <= max(2.0, float(np.percentile(off_circle, 80)))]
    # a pixel inside: the rim's anti-aliased edge is not felt
    return (left + fit_x, top + fit_y, radius - 1.5)


def _lenient_pips(calibration: DiceCalibration) -> DiceCalibration:
    return calibration.model_copy(
        update={
            "pip_area_ratio": (0.002, 0.12),
            "one_pip_area_ratio": (0.002, 0.12),
            "min_pip_roundness": 0.4,
            "max_pip_area_spread": 4.0,
            "pip_unit_ratio": ((0.1, 0.6),) * 6,
            "max_layout_error": 0.45,
            "min_face_aspect": (0.35,) * 6,
            "max_diagonal_angle": 40.0,
            "max_centre_offset": 0.8,
            "max_empty_level": 0.8,
            "max_clutter_level": 0.9,
            "max_pip_colour_spread": 2.0,
            "min_sharpness": 1.0,
            "min_confidence": 0.0,
        }
    )


def _values_read(reader: DiceReader, image: Pixels) -> list[tuple[Any, Any]]:
    """(region in view pixels as a frame box, reading) of every blob of a photo."""
    view = reader.view(image)
    if isinstance(view, str):
        return []
    # blobs at the frame's edge are left out, as when the dice were found: the rim, things beside the tray
    return [
        (region, reader.read_region(view.lab, region, view))
        for region in reader.find_dice(view.lab)
        if not region.at_edge
    ]


def _labelled_from_values(
    images: list[Pixels], samples: Sequence[ValueSample], found: _Discovery
) -> list[LabelledImage]:
    """The photos whose dice can each be given a value: every blob a single die, the lenient readings a
    sub-multiset of the photo's values, and any die not read left with one possible value."""
    best: list[LabelledImage] = []
    best_score = -math.inf
    polarities: tuple[Polarity, ...] = ("dark", "light", "any")
    for polarity in polarities:
        for contrast in (20.0,):  # the box calibration then chooses the least contrast
            calibration = _lenient_pips(found.calibration).model_copy(
                update={"pip_polarity": polarity, "pip_contrast": contrast}
            )
            reader = DiceReader(calibration)
            examples: list[LabelledImage] = []
            score = 0.0
            for image, sample in zip(images, samples, strict=True):
                readings = [reading for _, reading in _values_read(reader, image)]
                read = Counter(r.value for r in readings if r.value is not None)
                labels = Counter(sample.values)
                score -= WRONG_PENALTY * sum((read - labels).values())
                if len(readings) != len(sample.values) or any(r.problem in SHAPE_PROBLEMS for r in readings):
                    continue
                left = list((labels - read).elements())
                if read - labels or len(set(left)) > 1:
                    continue
                score += sum(read.values())
                dice = tuple(
                    LabelledDie(r.value if r.value is not None else left[0], _float_box(r.box))
                    for r in readings
                )
                examples.append(LabelledImage(image, dice, sample.name))
            if score > best_score:
                best, best_score = examples, score
    return best


def _raise_least_confidence(
    fitted: DiceCalibration, images: list[Pixels], samples: Sequence[ValueSample]
) -> tuple[DiceCalibration, list[dict[str, Any]]]:
    """Above every reading that a photo's values contradict (a value more often than the photo has it: the
    most confident of those dice is taken as the wrong one, to be safe)."""
    reader = DiceReader(fitted.model_copy(update={"min_confidence": 0.0}))
    contradicted = []
    for image, sample in zip(images, samples, strict=True):
        readings = [reading for _, reading in _values_read(reader, image) if reading.value is not None]
        excess = Counter(r.value for r in readings) - Counter(sample.values)
        for value in excess:
            worst = max((r for r in readings if r.value == value), key=lambda r: r.confidence)
            contradicted.append(
                {
                    "image": sample.name,
                    "read": value,
                    "values": list(sample.values),
                    "confidence": worst.confidence,
                }
            )
    ceiling = max((float(c["confidence"]) for c in contradicted), default=0.0)
    least = max(fitted.min_confidence, ceiling + 0.05) if contradicted else fitted.min_confidence
    return fitted.model_copy(update={"min_confidence": min(1.0, round(least, 4))}), contradicted


def read_back(reader: DiceReader, images: Sequence[Pixels], samples: Sequence[ValueSample]) -> dict[str, Any]:
    """Each photo read whole as the table reads a frame: exact, refused (with why), or misread."""
    outcomes: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    misread = []
    for image, sample in zip(images, samples, strict=True):
        result = reader.read(image, expect=len(sample.values))
        if result.values is None:
            outcomes["refused"] += 1
            reasons[result.reason] += 1
        elif sorted(result.values) == sorted(sample.values):
            outcomes["exact"] += 1
        else:
            outcomes["misread"] += 1
            misread.append({"image": sample.name, "values": list(sample.values), "read": list(result.values)})
    return {
        "images": len(samples),
        "exact": outcomes["exact"],
        "refused": outcomes["refused"],
        "misread": outcomes["misread"],
        "refusals": dict(reasons.most_common()),
        "misreadings": misread,
    }


def _float_box(box: tuple[int, int, int, int]) -> tuple[float, float, float, float]:
    x, y, w, h = box
    return (float(x), float(y), float(w), float(h))
