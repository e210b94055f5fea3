"""The dice reader as a table uses it: calibrated from photos labelled with values only, measured whole-frame.

    python bench/dice_table.py                          # everything: real sets, synthetic suite, speed
    python bench/dice_table.py --parts real --datasets matteop65
    python bench/dice_table.py --parts synthetic,speed --scenes 2000
    python bench/dice_table.py --parts dome --dome-scenes 500   # the shaker's dome, mostly touching dice
    python bench/dice_table.py --parts speed             # the speed only: bench/results/dice-speed.*
    python bench/dice_table.py --parts speed --against 6336b0a   # and an older reader, frame by frame in turn
    python bench/dice_table.py --parts samples --samples TABLE/SAMPLES.csv   # a table's own photos

Four parts:

- real: the two public sets of labelled photographs (`--data`, see `bench/DICE.md`). Each set is split in
  halves as in `dice_accuracy.py` (matteop65 by blocks of 10 consecutive frames); the reader is calibrated
  with `calibrate_from_samples` on one half, from the VALUES of each photo only (derived from its labels;
  boxes are not used), and measured on the other half, then the halves swap. Each photo is read whole with
  `DiceReader.read(image, expect=<dice labelled>)`: exact (every value right), refused, or misread (read
  confidently and wrong: a wrong value, or the dice read are not the labelled ones). Per die, each labelled
  die is matched to the read die whose box holds the label's centre: right / wrong / not read.
- synthetic: `--scenes` scenes of `drivers.dice.synthetic` (1-7 dice, every hazard at its default weight),
  read with a calibration fitted from 40 other synthetic photos (values only). A reading of a scene that must
  be refused (touching, cocked, stacked) counts as a misread too.
- samples: a table's own photos, as a technician labels them for `tablectl calibrate dice --samples`
  (SAMPLES.csv, columns `image,values`, and optionally `group`). Split in halves by `crc32(group or image
  name) % 2` (photos of one burst are near-duplicates: give them one group so that they fall in one half),
  calibrated from one half, the other half read whole with `expect=<values of the photo>`, then the halves
  swap. Without boxes a photo is exact when the values read are its values (in any order), a MISREAD when
  the reader read it confidently and they are not, refused otherwise. The measurement the sic bo target,
  "95% of photos exact, 0 misread", asks for, on the table it is meant for.
- dome: `--dome-scenes` rests of 3-7 dice in a sic bo shaker's round dome, mostly touching
  (`drivers.dice.synthetic.dome_scene`: the rim, the light's reflection), taken in turn at four tables of one
  die size each (`DOME_TABLES`), each read with a values-only calibration from 40 photos of its dome with the
  dice spread apart: exact / refused / MISREAD per number of dice touching another and per table. Drawn by
  the hand that wrote the reader: for finding failures, not evidence alone.
- speed: milliseconds (CPU time) per 1280x720 frame of three dice on one core (OpenCV limited to one
  thread), with where the time goes (locating the dice; the faces), and the whole-tray segmentation beside;
  frames with two dice touching too, and the shaker's own frames (three dice at rest in the dome, mostly
  touching, at each table with its calibration, and again with one calibration across all sizes); each timed
  in turn with a fixed reference operation (a blur
  and a colour conversion of a frame), for a ratio that the machine's speed and load do not move.

Real photos are also counted by the number of dice touching another, estimated from the labels.

Writes bench/results/dice-table.json and .md. Nothing is asserted; the tests hold the bounds.
"""

from __future__ import annotations

import csv
import math
import os
import statistics
import subprocess
import sys
import time
import types
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from calibration.dice import (
    CalibrationError,
    LabelledImage,
    ValueSample,
    calibrate_from_samples,
    load_samples,
    load_yolo_folder,
)
from drivers.dice.reader import AcceptedDice, DiceCalibration, DiceReader, DiceRefusal
from drivers.dice.synthetic import DiceScene, dome_scene, random_scene, render

if __package__:  # imported as `bench.dice_table` (tests/integration/test_dice_table.py)
    from bench import common, dice_accuracy
else:  # `python bench/dice_table.py`: Python puts bench/ on the path
    import common
    import dice_accuracy

pct = common.percent

# --- real photographs ------------------------------------------------------------------------------------


def as_samples(examples: list[LabelledImage]) -> list[ValueSample]:
    """What a technician writes in SAMPLES.csv: the photo and its values, in no particular order."""
    return [ValueSample(e.image, tuple(sorted(d.value for d in e.dice)), e.name) for e in examples]


def score_image(example: LabelledImage, result: AcceptedDice | DiceRefusal, dice: Counter[str]) -> str:
    for die in example.dice:
        cx, cy = die.centre
        found = [
            r
            for r in result.dice
            if r.box[0] <= cx < r.box[0] + r.box[2] and r.box[1] <= cy < r.box[1] + r.box[3]
        ]
        if len(found) != 1 or found[0].value is None:
            dice["not read"] += 1
        else:
            dice["right" if found[0].value == die.value else "WRONG"] += 1
    if isinstance(result, DiceRefusal):
        return "refused"
    right = all(
        any(
            r.box[0] <= d.centre[0] < r.box[0] + r.box[2]
            and r.box[1] <= d.centre[1] < r.box[1] + r.box[3]
            and r.value == d.value
            for r in result.dice
        )
        for d in example.dice
    )
    return "exact" if right and sorted(result.values) == sorted(d.value for d in example.dice) else "MISREAD"


def touching_dice(example: LabelledImage) -> int:
    """How many labelled dice of a photo touch another, as far as the labels tell: dice whose centres are
    closer than `TOUCHING_SIDES` die sides (the photo's median die side from its boxes; a "pips" box of a 1
    tells none). An estimate: two dice edge to edge are 1 side apart, corner to corner up to 1.41."""
    sides = [side for die in example.dice if (side := die.die_side()) is not None]
    if not sides or len(example.dice) < 2:
        return 0
    side = statistics.median(sides)
    together = set()
    for i, a in enumerate(example.dice):
        for j in range(i + 1, len(example.dice)):
            if math.dist(a.centre, example.dice[j].centre) < TOUCHING_SIDES * side:
                together |= {i, j}
    return len(together)


TOUCHING_SIDES = 1.2


def calibrate_fold(
    name: str,
    number: int,
    fit: list[ValueSample],
    untested: int,
    folds: list[dict[str, Any]],
    images: Counter[str],
) -> tuple[DiceCalibration, float] | None:
    """One fold's calibration from the values of its half, and the seconds it took; or None when that half
    cannot be calibrated from values: reported (on stderr and in `folds`), not hidden, and the other half's
    `untested` photos counted as not calibrated."""
    started = time.perf_counter()
    try:
        calibration = calibrate_from_samples(fit)
    except CalibrationError as exc:
        print(f"  {name} fold {number}: no calibration: {exc}", file=sys.stderr)
        folds.append({"fold": number, "calibration_photos": len(fit), "calibration_error": str(exc)})
        images["not calibrated"] += untested
        return None
    return calibration, time.perf_counter() - started


def run_real(data: Path, dataset: str) -> dict[str, Any]:
    folder = data / dataset
    examples, _ = dice_accuracy.apply_errata(
        dataset,
        load_yolo_folder(folder / "images", folder / "labels", dice_accuracy.DATASETS[dataset]),  # type: ignore[arg-type]
    )
    halves = dice_accuracy.split(dataset, examples)
    images: Counter[str] = Counter()
    dice: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    misread: list[dict[str, Any]] = []
    folds = []
    by_count: dict[int, Counter[str]] = {}
    by_touching: dict[int, Counter[str]] = {}
    reasons_by_touching: dict[int, Counter[str]] = {}
    for number, (fit, test) in enumerate(((halves[0], halves[1]), (halves[1], halves[0])), 1):
        fitted = calibrate_fold(dataset, number, as_samples(fit), len(test), folds, images)
        if fitted is None:
            continue
        calibration, seconds = fitted
        reader = DiceReader(calibration)
        fold_images: Counter[str] = Counter()
        for example in test:
            result = reader.read(example.load(), expect=len(example.dice))
            outcome = score_image(example, result, dice)
            fold_images[outcome] += 1
            by_count.setdefault(min(len(example.dice), 8), Counter())[outcome] += 1
            together = touching_dice(example)
            by_touching.setdefault(together, Counter())[outcome] += 1
            if isinstance(result, DiceRefusal):
                reasons[result.reason] += 1
                reasons_by_touching.setdefault(together, Counter())[result.reason] += 1
            elif outcome == "MISREAD":
                misread.append(
                    {
                        "image": example.name,
                        "values": [d.value for d in example.dice],
                        "read": list(result.values),
                    }
                )
        images.update(fold_images)
        folds.append(
            {
                "fold": number,
                "calibration_photos": len(fit),
                "calibration_seconds": round(seconds, 1),
                "calibration": {
                    k: v for k, v in calibration.model_dump(mode="json").items() if k not in ("fitted_on",)
                }
                | {"fitted_on": {k: v for k, v in calibration.fitted_on.items() if k != "wrong_readings"}},
                "test_photos": len(test),
                "images": dict(fold_images),
            }
        )
        print(
            f"  {dataset} fold {number}: {dict(fold_images)} ({seconds:.0f} s to calibrate)", file=sys.stderr
        )
    return {
        "dataset": dataset,
        "split": dice_accuracy.split_description(dataset),
        "images": dict(images),
        "dice": dict(dice),
        "refusals": dict(reasons.most_common()),
        "misreadings": misread,
        "images_by_dice_count": {("8+" if k == 8 else str(k)): dict(v) for k, v in sorted(by_count.items())},
        "touching_estimate": f"dice whose labelled centres are closer than {TOUCHING_SIDES} die sides",
        "images_by_touching_dice": {str(k): dict(v) for k, v in sorted(by_touching.items())},
        "refusals_by_touching_dice": {
            str(k): dict(v.most_common()) for k, v in sorted(reasons_by_touching.items())
        },
        "folds": folds,
    }


# --- a table's own photos, values only ----------------------------------------------------------------------


def sample_halves(csv_path: Path) -> tuple[list[ValueSample], list[ValueSample]]:
    """The photos of a SAMPLES.csv in two halves, by `crc32(group or image name) % 2`."""
    samples = load_samples(csv_path)
    with csv_path.open(newline="", encoding="utf-8") as handle:
        groups = {
            Path(row["image"].strip()).name: (row.get("group") or "").strip()
            for row in csv.DictReader(handle)
        }
    halves: tuple[list[ValueSample], list[ValueSample]] = ([], [])
    for sample in samples:
        key = groups.get(sample.name) or sample.name
        halves[zlib.crc32(key.encode()) % 2].append(sample)
    return halves


def run_samples(csv_path: Path) -> dict[str, Any]:
    halves = sample_halves(csv_path)
    images: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    misread: list[dict[str, Any]] = []
    folds = []
    for number, (fit, test) in enumerate(((halves[0], halves[1]), (halves[1], halves[0])), 1):
        fitted = calibrate_fold("samples", number, fit, len(test), folds, images)
        if fitted is None:
            continue
        reader, seconds = DiceReader(fitted[0]), fitted[1]
        fold_images: Counter[str] = Counter()
        for sample in test:
            result = reader.read(sample.load(), expect=len(sample.values))
            if isinstance(result, DiceRefusal):
                outcome = "refused"
                reasons[result.reason] += 1
            elif sorted(result.values) == sorted(sample.values):
                outcome = "exact"
            else:
                outcome = "MISREAD"
                misread.append(
                    {"image": sample.name, "values": list(sample.values), "read": list(result.values)}
                )
            fold_images[outcome] += 1
        images.update(fold_images)
        folds.append(
            {
                "fold": number,
                "calibration_photos": len(fit),
                "calibration_seconds": round(seconds, 1),
                "test_photos": len(test),
                "images": dict(fold_images),
            }
        )
        print(f"  samples fold {number}: {dict(fold_images)} ({seconds:.0f} s to calibrate)", file=sys.stderr)
    return {
        "samples": str(csv_path),
        "split": "crc32(group or image name) % 2; fold 1 calibrates on half 0 and measures half 1, "
        "fold 2 the other way round",
        "images": dict(images),
        "refusals": dict(reasons.most_common()),
        "misreadings": misread,
        "folds": folds,
    }


# --- synthetic -------------------------------------------------------------------------------------------


def synthetic_calibration(seed: int = 5, photos: int = 40) -> Any:
    rng = np.random.default_rng(seed)
    samples = []
    for index in range(photos):
        scene = random_scene(
            rng, dice=int(rng.integers(1, 8)), hazards={"none": 0.8, "touching": 0.1, "cocked": 0.1}
        )
        samples.append(
            ValueSample(render(scene, seed=index), tuple(d.value for d in scene.dice), f"s{index}")
        )
    return calibrate_from_samples(samples)


def judge(scene: DiceScene, result: AcceptedDice | DiceRefusal) -> str:
    if isinstance(result, DiceRefusal):
        return "refused"
    if not scene.readable:
        return "MISREAD"  # a hazard accepted
    # each die read is the scene's die nearest its centre, within half a side, and no die is read twice (the
    # boxes of touching dice turned 45 degrees hold each other's centres)
    matched = set()
    for die in result.dice:
        nearest = min(scene.dice, key=lambda d: math.dist(d.centre, die.centre))
        if math.dist(nearest.centre, die.centre) > 0.5 * nearest.side or nearest.value != die.value:
            return "MISREAD"
        matched.add(id(nearest))
    return "exact" if len(matched) == len(result.dice) == len(scene.dice) else "MISREAD"


def run_synthetic(reader: DiceReader, scenes: int) -> dict[str, Any]:
    rng = np.random.default_rng(20261201)
    by_hazard: dict[str, Counter[str]] = {}
    reasons: dict[str, Counter[str]] = {}
    misread = []
    for index in range(scenes):
        scene = random_scene(rng, dice=3 if index % 3 else int(rng.integers(1, 8)))
        result = reader.read(render(scene, seed=index), expect=len(scene.dice))
        outcome = judge(scene, result)
        by_hazard.setdefault(scene.hazard, Counter())[outcome] += 1
        if isinstance(result, DiceRefusal):
            reasons.setdefault(scene.hazard, Counter())[result.reason] += 1
        if outcome == "MISREAD":
            misread.append(
                {"scene": index, "hazard": scene.hazard, "values": scene.values, "read": result.values}
            )
    total: Counter[str] = Counter()
    for counts in by_hazard.values():
        total.update(counts)
    return {
        "scenes": scenes,
        "outcomes": dict(total),
        "by_hazard": {h: dict(c) for h, c in sorted(by_hazard.items())},
        "refusals_by_hazard": {h: dict(c.most_common()) for h, c in sorted(reasons.items())},
        "misreadings": misread,
    }


# --- a shaker's dome -------------------------------------------------------------------------------------


#: the dome's tables: each one size of die (frame pixels, as `dome_scene` draws a die flat; each die within 2%
#: of it), each read with a calibration from its own photos. A table's camera sees one set of dice from one
#: height; a calibration fitted across all these sizes is one of no table (the speed part times it too).
DOME_TABLES = (58.0, 62.0, 66.0, 70.0)
DOME_SIDES = (DOME_TABLES[0], DOME_TABLES[-1])


def dome_calibration(
    side: tuple[float, float] = DOME_SIDES, seed: int = 5, photos: int = 40
) -> DiceCalibration:
    """Values-only calibration from photos of the dome with the dice spread apart (as a technician takes
    them: the calibration needs dice it can tell apart), dice of `side` (a die side drawn per photo)."""
    rng = np.random.default_rng(seed)
    samples = []
    for index in range(photos):
        scene = dome_scene(rng, touching=0.0, side=side)
        samples.append(
            ValueSample(render(scene, seed=1000 + index), tuple(d.value for d in scene.dice), f"d{index}")
        )
    return calibrate_from_samples(samples)


def run_dome(tables: dict[float, DiceReader], scenes: int) -> dict[str, Any]:
    """`scenes` rests of 3-7 dice in the dome, mostly touching (`dome_scene`), taken in turn at each table
    (die side: its reader): exact / refused / MISREAD per number of dice touching another and per table, and
    why frames were refused."""
    rng = np.random.default_rng(20261205)
    by_touching: dict[int, Counter[str]] = {}
    by_table: dict[str, Counter[str]] = {}
    reasons: dict[int, Counter[str]] = {}
    misread = []
    cpu_ms = []
    sides = list(tables)
    for index in range(scenes):
        side = sides[index % len(sides)]
        scene = dome_scene(rng, side=(side, side))
        image = render(scene, seed=index)
        started = time.process_time()
        result = tables[side].read(image, expect=len(scene.dice))
        cpu_ms.append((time.process_time() - started) * 1000)
        outcome = judge(scene, result)
        by_touching.setdefault(scene.touching_dice, Counter())[outcome] += 1
        by_table.setdefault(f"{side:g}", Counter())[outcome] += 1
        if isinstance(result, DiceRefusal):
            reasons.setdefault(scene.touching_dice, Counter())[result.reason] += 1
        if outcome == "MISREAD":
            misread.append({"scene": index, "table": side, "values": scene.values, "read": result.values})
    total: Counter[str] = Counter()
    touching: Counter[str] = Counter()
    for count, counts in by_touching.items():
        total.update(counts)
        if count:
            touching.update(counts)
    return {
        "scenes": scenes,
        "outcomes": dict(total),
        "outcomes_with_touching_dice": dict(touching),
        "by_touching_dice": {str(k): dict(v) for k, v in sorted(by_touching.items())},
        "by_table_die_side": {k: dict(v) for k, v in by_table.items()},
        "refusals_by_touching_dice": {str(k): dict(v.most_common()) for k, v in sorted(reasons.items())},
        "misreadings": misread,
        "cpu_ms_median": round(statistics.median(cpu_ms), 2),
        "cpu_ms_p95": round(float(np.percentile(cpu_ms, 95)), 2),
    }


# --- speed -----------------------------------------------------------------------------------------------


def reader_at(commit: str, calibration: Any) -> Any:
    """A `DiceReader` of the reader module as it was at `commit` (from git, loaded on its own: the module
    needs only OpenCV, numpy and pydantic), with the same calibration (less any field it does not know)."""
    source = subprocess.run(
        ["git", "show", f"{commit}:drivers/dice/reader.py"],
        cwd=common.REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    name = f"dice_reader_at_{commit}"
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up while the class is being made
    exec(compile(source, f"{commit}:drivers/dice/reader.py", "exec"), module.__dict__)
    # a field the older reader does not know is left out (its files refuse unknown fields): it reads as it
    # did, e.g. without `split_side_px` it splits touching dice at every size a die alone may have
    known = module.DiceCalibration.model_fields
    fields = {key: value for key, value in calibration.model_dump().items() if key in known}
    return module.DiceReader(module.DiceCalibration.model_validate(fields))


def run_speed(
    reader: DiceReader,
    frames: int = 200,
    rounds: int = 3,
    against: str | None = None,
    shaker: tuple[dict[tuple[float, float], DiceReader], dict[tuple[float, float], DiceReader]] | None = None,
) -> dict[str, Any]:
    """Milliseconds per `read` of a 1280x720 frame of three dice, OpenCV on one thread.

    CPU time (`time.process_time`) is the figure: the machine may be shared, and wall time then counts the
    other processes' turns too; wall time is kept beside it. Each frame is read `rounds` times, and its
    fastest is kept (the least disturbed); the median and p95 are over frames. The split: locating the dice
    (the tray shrunk, each die segmented in its window) and reading the faces; and, for comparison, reading
    with the whole tray segmented at once (`locate(whole=True)`, what every read did before). `against`: a
    commit whose reader reads every frame too (the touching ones as well), in turn with this one (the same
    moments of a shared machine's load; which first, swapped every frame), for the ratio of the two.
    `shaker`: readers calibrated for the shaker's dome, per table (die sides) and one across all sizes,
    which also read `frames` dome frames of three dice each (`dome_scene`: mostly touching, as they come to
    rest; the round tray painted round), each timed in turn with the reference too (and with `against`'s
    reader of the same calibration)."""
    cv2.setNumThreads(1)
    rng = np.random.default_rng(7)
    images = [render(random_scene(rng, hazard="none"), seed=i) for i in range(frames)]
    # the same number of frames with two of the three dice touching (read as two dice, or refused)
    touching_images = [render(random_scene(rng, hazard="touching"), seed=i) for i in range(frames)]
    # the fixed reference: the same work on every machine, timed in turn with the reads (a ratio to it does
    # not move with the machine's speed or load as milliseconds do)
    reference_image = render(random_scene(np.random.default_rng(1), hazard="none"), seed=1)
    for image in images[:5]:
        reader.read(image)
    load_before = os.getloadavg()

    def fastest(work: Any) -> tuple[float, float]:
        best_cpu, best_wall = math.inf, math.inf
        for _ in range(rounds):
            cpu, wall = time.process_time(), time.perf_counter()
            work()
            best_cpu = min(best_cpu, time.process_time() - cpu)
            best_wall = min(best_wall, time.perf_counter() - wall)
        return best_cpu * 1000, best_wall * 1000

    other = reader_at(against, reader.calibration) if against else None
    cpu_ms, wall_ms, locate_ms, faces_ms, whole_ms, other_ms = [], [], [], [], [], []
    reference_ms: list[float] = []
    touching_ms, other_touching_ms, touching_reference_ms = in_turn(
        touching_images, [(reader, other)] * len(touching_images), fastest, reference_image
    )
    for number, image in enumerate(images):
        reference_ms.append(fastest(lambda: reference_operation(reference_image))[0])
        if other is not None and number % 2:
            other_ms.append(fastest(lambda image=image: other.read(image))[0])
        cpu, wall = fastest(lambda image=image: reader.read(image))
        if other is not None and not number % 2:
            other_ms.append(fastest(lambda image=image: other.read(image))[0])
        cpu_ms.append(cpu)
        wall_ms.append(wall)
        located = reader.locate(image)
        assert not isinstance(located, str)
        locate_ms.append(fastest(lambda image=image: reader.locate(image))[0])
        faces_ms.append(
            fastest(lambda located=located: [reader.read_region(v.lab, r, v) for v, r in located])[0]
        )
        whole_ms.append(fastest(lambda image=image: reader.locate(image, whole=True))[0])

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 2)

    compared = {}
    if other is not None:
        ratios = [theirs / ours for theirs, ours in zip(other_ms, cpu_ms, strict=True)]
        compared = {
            "against_commit": against,
            "against_cpu_ms_median": median(other_ms),
            "against_cpu_ms_p95": round(float(np.percentile(other_ms, 95)), 2),
            "speedup_median_of_frames": round(statistics.median(ratios), 2),
            "against_touching_cpu_ms_median": median(other_touching_ms),
            "touching_speedup_median_of_frames": round(
                statistics.median(
                    theirs / ours for theirs, ours in zip(other_touching_ms, touching_ms, strict=True)
                ),
                3,
            ),
        }
    shaker_part = {}
    if shaker is not None:
        # the shaker's frames at its tables, each with its own calibration; and the same number of frames of
        # every size read with one calibration fitted across them all (no table's: the harder case)
        shaker_part["shaker"] = time_shaker(shaker[0], frames, fastest, reference_image, against)
        shaker_part["shaker_one_calibration_across_sizes"] = time_shaker(
            shaker[1], frames, fastest, reference_image, against
        )
    ratios_calm = [ours / reference for ours, reference in zip(cpu_ms, reference_ms, strict=True)]
    ratios_touching = [
        ours / reference for ours, reference in zip(touching_ms, touching_reference_ms, strict=True)
    ]
    compared |= {
        "reference_operation": REFERENCE_OPERATION,
        "reference_cpu_ms_median": median(reference_ms + touching_reference_ms),
        "ratio_to_reference_median": round(statistics.median(ratios_calm), 3),
        "touching_frames": len(touching_images),
        "touching_cpu_ms_median": median(touching_ms),
        "touching_cpu_ms_p95": round(float(np.percentile(touching_ms, 95)), 2),
        "touching_ratio_to_reference_median": round(statistics.median(ratios_touching), 3),
    }
    return (
        compared
        | shaker_part
        | {
            "frame": "1280x720, three dice about 64 px wide",
            "frames": frames,
            "rounds_per_frame": rounds,
            "opencv_threads": 1,
            "tray_roi": reader.calibration.roi,
            "scale": reader.calibration.scale,
            "max_pips_left_out": reader.calibration.max_pips_left_out,
            "load_average_1_5_15_min": {"before": load_before, "after": os.getloadavg()},
            "cpu_ms_median": median(cpu_ms),
            "cpu_ms_p95": round(float(np.percentile(cpu_ms, 95)), 2),
            "wall_ms_median": median(wall_ms),
            "wall_ms_p95": round(float(np.percentile(wall_ms, 95)), 2),
            "cpu_ms_locate_median": median(locate_ms),
            "cpu_ms_faces_median": median(faces_ms),
            "cpu_ms_locate_whole_tray_median": median(whole_ms),
        }
    )


def in_turn(
    images: list[Any],
    readers: list[tuple[DiceReader, DiceReader | None]],
    fastest: Any,
    reference_image: Any,
) -> tuple[list[float], list[float], list[float]]:
    """CPU ms of each image's reader reading it, of its other reader (if any) reading it in turn, and of the
    reference operation after each: the same moments of a shared machine's load. Which reader goes first is
    swapped every frame (the second reads a warm cache)."""
    ours: list[float] = []
    theirs: list[float] = []
    reference: list[float] = []
    for number, (image, (reader, other)) in enumerate(zip(images, readers, strict=True)):
        if other is not None and number % 2:
            theirs.append(fastest(lambda image=image, other=other: other.read(image))[0])
        ours.append(fastest(lambda image=image, reader=reader: reader.read(image))[0])
        if other is not None and not number % 2:
            theirs.append(fastest(lambda image=image, other=other: other.read(image))[0])
        reference.append(fastest(lambda: reference_operation(reference_image))[0])
    return ours, theirs, reference


def time_shaker(
    tables: dict[tuple[float, float], DiceReader],
    frames: int,
    fastest: Any,
    reference_image: Any,
    against: str | None,
) -> dict[str, Any]:
    """The speed part's dome frames of three dice (see `run_speed`), taken in turn at each table (the die
    sides `dome_scene` draws: its reader): CPU median and p95 of `read`, and the median over frames of its
    ratio to the reference timed in turn."""
    rng = np.random.default_rng(20261206)
    sides = list(tables)
    scenes = [dome_scene(rng, dice=3, side=sides[index % len(sides)]) for index in range(frames)]
    images = [render(scene, seed=index) for index, scene in enumerate(scenes)]
    others = {
        side: reader_at(against, reader.calibration) if against else None for side, reader in tables.items()
    }
    readers = [
        (tables[sides[index % len(sides)]], others[sides[index % len(sides)]]) for index in range(frames)
    ]
    ms, other_ms, reference_ms = in_turn(images, readers, fastest, reference_image)
    touching = Counter(str(scene.touching_dice) for scene in scenes)
    part: dict[str, Any] = {
        "frames": frames,
        "die_sides_px": [list(side) for side in sides],
        "dice_touching_another": dict(sorted(touching.items())),
        "cpu_ms_median": round(statistics.median(ms), 2),
        "cpu_ms_p95": round(float(np.percentile(ms, 95)), 2),
        "ratio_to_reference_median": round(
            statistics.median(ours / ref for ours, ref in zip(ms, reference_ms, strict=True)), 3
        ),
        # the reference as it ran in turn with these frames (the run's own, `reference_cpu_ms_median` of the
        # speed part, is timed with the flat tray's frames, minutes before or after)
        "reference_cpu_ms_median": round(statistics.median(reference_ms), 2),
    }
    if against:
        part["against_cpu_ms_median"] = round(statistics.median(other_ms), 2)
        part["speedup_median_of_frames"] = round(
            statistics.median(theirs / ours for theirs, ours in zip(other_ms, ms, strict=True)), 3
        )
    return part


REFERENCE_OPERATION = (
    "cv2.GaussianBlur of a 1280x720 BGR frame, sigma 3, then cv2.cvtColor to Lab, one thread"
)


def reference_operation(image: Any) -> None:
    """A fixed piece of OpenCV work of about a dice frame's size and kind, to time the reader against."""
    cv2.cvtColor(cv2.GaussianBlur(image, (0, 0), 3.0), cv2.COLOR_BGR2LAB)


# --- report ----------------------------------------------------------------------------------------------


def outcome_cells(outcomes: dict[str, int]) -> str:
    """The table cells `scenes | exact | refused | MISREAD` of one row's outcomes."""
    n = sum(outcomes.values())
    return " | ".join([str(n)] + [pct(outcomes.get(k, 0), n) for k in ("exact", "refused", "MISREAD")])


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Dice reader at the table: values-only calibration, whole frames",
        "",
        dice_accuracy.machine_line(report),
        "",
    ]
    if report.get("real"):
        lines += [
            "Real photographs: calibrated from the values of one half (no boxes), measured on the other, "
            "two folds. MISREAD = read with confidence and wrong.",
            "",
            "| data set | photos | not calibrated | exact | refused | MISREAD "
            "| dice | right | WRONG | not read |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in report["real"]:
            im, di = r["images"], r["dice"]
            n, d = sum(im.values()), sum(di.values())
            lines.append(
                f"| {r['dataset']} | {n} | {im.get('not calibrated', 0)} | {pct(im.get('exact', 0), n)} "
                f"| {pct(im.get('refused', 0), n)} "
                f"| {pct(im.get('MISREAD', 0), n)} | {d} | {pct(di.get('right', 0), d)} "
                f"| {pct(di.get('WRONG', 0), d)} | {pct(di.get('not read', 0), d)} |"
            )
        lines.append("")
        for r in report["real"]:
            lines.append(
                f"- {r['dataset']} refusals: {r['refusals']}; by dice per photo: "
                f"{r['images_by_dice_count']}; by dice touching another ({r['touching_estimate']}): "
                f"{r['images_by_touching_dice']}, "
                f"refusals {r['refusals_by_touching_dice']}"
            )
        lines.append("")
    if report.get("samples"):
        r = report["samples"]
        im = r["images"]
        n = sum(im.values())
        lines += [
            f"A table's own photos ({r['samples']}): calibrated from the values of one half, measured on the "
            "other, two folds. MISREAD = read with confidence and wrong.",
            "",
            "| photos | not calibrated | exact | refused | MISREAD |",
            "|---:|---:|---:|---:|---:|",
            f"| {n} | {im.get('not calibrated', 0)} | {pct(im.get('exact', 0), n)} | "
            f"{pct(im.get('refused', 0), n)} | {pct(im.get('MISREAD', 0), n)} |",
            "",
            f"- refusals: {r['refusals']}; misread: {r['misreadings']}",
            "",
        ]
    if report.get("synthetic"):
        s = report["synthetic"]
        o, n = s["outcomes"], s["scenes"]
        lines += [
            f"Synthetic suite: {n} scenes (1-7 dice, every hazard): exact {pct(o.get('exact', 0), n)}, "
            f"refused {pct(o.get('refused', 0), n)}, MISREAD {pct(o.get('MISREAD', 0), n)}.",
            "",
            "| hazard | scenes | exact | refused | MISREAD |",
            "|---|---:|---:|---:|---:|",
        ]
        for hazard, c in s["by_hazard"].items():
            lines.append(f"| {hazard} | {outcome_cells(c)} |")
        lines.append("")
    if report.get("dome"):
        d = report["dome"]
        o, n, t = d["outcomes"], d["scenes"], d["outcomes_with_touching_dice"]
        nt = sum(t.values())
        lines += [
            f"Shaker dome: {n} scenes of 3-7 dice, mostly touching (`dome_scene`), in turn at tables of "
            f"die sides {', '.join(d['by_table_die_side'])} px, each calibrated from 40 photos of its dome "
            f"with the dice apart (values only): exact {pct(o.get('exact', 0), n)}, "
            f"refused {pct(o.get('refused', 0), n)}, MISREAD {pct(o.get('MISREAD', 0), n)}; the {nt} with "
            f"touching dice: exact {pct(t.get('exact', 0), nt)}, MISREAD {pct(t.get('MISREAD', 0), nt)}. "
            f"CPU per frame: median {d['cpu_ms_median']} ms, p95 {d['cpu_ms_p95']} ms.",
            "",
            "| dice touching another | scenes | exact | refused | MISREAD | refusals |",
            "|---:|---:|---:|---:|---:|---|",
        ]
        for count, c in d["by_touching_dice"].items():
            refusals = d["refusals_by_touching_dice"].get(count, {})
            lines.append(f"| {count} | {outcome_cells(c)} | {refusals} |")
        lines += [
            "",
            "| table's die side (px) | scenes | exact | refused | MISREAD |",
            "|---:|---:|---:|---:|---:|",
        ]
        for side, c in d["by_table_die_side"].items():
            lines.append(f"| {side} | {outcome_cells(c)} |")
        lines.append("")
    if report.get("speed"):
        sp = report["speed"]
        load = sp["load_average_1_5_15_min"]
        lines += [
            f"Speed, one core, {sp['frame']}, {sp['frames']} frames (the fastest of {sp['rounds_per_frame']} "
            f"reads of each): CPU median {sp['cpu_ms_median']} ms, p95 {sp['cpu_ms_p95']} ms; wall median "
            f"{sp['wall_ms_median']} ms, p95 {sp['wall_ms_p95']} ms (locating the dice "
            f"{sp['cpu_ms_locate_median']} ms, the faces {sp['cpu_ms_faces_median']} ms; the whole tray "
            f"segmented at once instead: {sp['cpu_ms_locate_whole_tray_median']} ms; scale {sp['scale']}, "
            f"tray {sp['tray_roi']}, pips left out {sp['max_pips_left_out']}). Load average (1, 5, 15 min) "
            f"{load['before']} before, {load['after']} after.",
            "",
        ]
        lines += [
            f"Against the fixed reference ({sp['reference_operation']}: median "
            f"{sp['reference_cpu_ms_median']} ms), timed in turn: a frame of three dice apart takes "
            f"{sp['ratio_to_reference_median']}x it "
            f"(median over frames); {sp['touching_frames']} frames with two dice touching: CPU median "
            f"{sp['touching_cpu_ms_median']} ms, p95 {sp['touching_cpu_ms_p95']} ms, "
            f"{sp['touching_ratio_to_reference_median']}x the reference.",
            "",
        ]
        for key, what in (
            ("shaker", "each table read with its own calibration"),
            ("shaker_one_calibration_across_sizes", "one calibration fitted across all sizes (no table's)"),
        ):
            sh = sp.get(key)
            if not sh:
                continue
            sides = ", ".join(
                f"{low:g}" if low == high else f"{low:g}-{high:g}" for low, high in sh["die_sides_px"]
            )
            lines += [
                f"The shaker's own frames, {what}: {sh['frames']} frames of three dice at rest in the dome, "
                f"die sides {sides} px, in turn (dice touching another per frame: "
                f"{sh['dice_touching_another']}): "
                f"CPU median {sh['cpu_ms_median']} ms, p95 {sh['cpu_ms_p95']} ms, "
                f"{sh['ratio_to_reference_median']}x the reference (median over frames; the reference "
                f"timed in turn with them: median {sh['reference_cpu_ms_median']} ms)"
                + (
                    f"; the reader of {sp['against_commit']}: CPU median {sh['against_cpu_ms_median']}"
                    f" ms, per frame {sh['speedup_median_of_frames']}x as long (median)."
                    if sh.get("against_cpu_ms_median") is not None
                    else "."
                ),
                "",
            ]
        if sp.get("against_commit"):
            lines += [
                f"The reader of {sp['against_commit']}, reading each frame in turn with this one: CPU median "
                f"{sp['against_cpu_ms_median']} ms, p95 {sp['against_cpu_ms_p95']} ms; per frame "
                f"{sp['speedup_median_of_frames']}x as long (median); the touching frames: CPU median "
                f"{sp['against_touching_cpu_ms_median']} ms, per frame "
                f"{sp['touching_speedup_median_of_frames']}x as long (median).",
                "",
            ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__)
    dice_accuracy.add_data_arguments(parser)
    parser.add_argument("--parts", default="real,synthetic,dome,speed")
    parser.add_argument("--scenes", type=int, default=2000)
    parser.add_argument("--dome-scenes", type=int, default=2000, help="dome: scenes in the shaker's dome")
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        metavar="STEM",
        help="write STEM.json and STEM.md (default: bench/results/dice-table.json and .md, or dice-speed.* "
        "for --parts speed alone; the next run replaces them)",
    )
    parser.add_argument("--against", default=None, help="speed: also time the reader of this commit, in turn")
    parser.add_argument("--samples", type=Path, default=None, help="samples: a table's SAMPLES.csv")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    # the speed alone goes to its own file: it must not replace the accuracy results
    name = "dice-speed" if parts == {"speed"} else "dice-table"
    report: dict[str, Any] = common.header(
        name,
        common.now(),
        common.machine(opencv=cv2.__version__, numpy=np.__version__),
        measured=(*dice_accuracy.DICE_SOURCES, "bench/dice_table.py"),
        what="the dice reader as a table uses it: calibrated from values, whole frames; the time per frame",
    )
    if "real" in parts:
        report["dataset_sources"] = dice_accuracy.dataset_commits(args.data)
    if "real" in parts:
        report["real"] = []
        for dataset in args.datasets.split(","):
            print(f"{dataset}: calibrating from values and measuring two folds...", file=sys.stderr)
            report["real"].append(run_real(args.data, dataset))
    if "samples" in parts:
        if args.samples is None:
            parser.error("--parts samples needs --samples SAMPLES.csv")
        print(
            f"samples: calibrating from values and measuring two folds of {args.samples}...", file=sys.stderr
        )
        try:
            report["samples"] = run_samples(args.samples)
        except CalibrationError as exc:  # the SAMPLES.csv itself: a missing photo, a value that is not 1-6
            print(f"dice_table.py: {exc}", file=sys.stderr)
            return 2
    tables: dict[float, DiceCalibration] = {}
    if parts & {"dome", "speed"}:
        print("dome: calibrating each table from 40 photos of dice apart (values only)...", file=sys.stderr)
        tables = {side: dome_calibration((side, side)) for side in DOME_TABLES}
        report["dome_calibrations"] = {
            f"{side:g}": cal.model_dump(mode="json") for side, cal in tables.items()
        }
    if "dome" in parts:
        print(f"dome: {args.dome_scenes} scenes...", file=sys.stderr)
        report["dome"] = run_dome({side: DiceReader(cal) for side, cal in tables.items()}, args.dome_scenes)
    if parts & {"synthetic", "speed"}:
        print("synthetic: calibrating from 40 photos (values only)...", file=sys.stderr)
        calibration = synthetic_calibration()
        report["synthetic_calibration"] = calibration.model_dump(mode="json")
        reader = DiceReader(calibration)
        if "speed" in parts:
            print("speed: calibrating the dome from 40 photos of every size...", file=sys.stderr)
            across = dome_calibration()
            report["dome_calibration_across_sizes"] = across.model_dump(mode="json")
            shaker = (
                {(side, side): DiceReader(cal) for side, cal in tables.items()},
                {DOME_SIDES: DiceReader(across)},
            )
            report["speed"] = run_speed(reader, against=args.against, shaker=shaker)
        if "synthetic" in parts:
            print(f"synthetic: {args.scenes} scenes...", file=sys.stderr)
            report["synthetic"] = run_synthetic(reader, args.scenes)
    text = markdown(report)
    common.write_result(name, report, args.output, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
