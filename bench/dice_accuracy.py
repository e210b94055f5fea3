"""How well the dice reader reads REAL photographs of dice: correct, confidently wrong, or abstained.

    python bench/dice_accuracy.py                       # both data sets, both folds, a few minutes
    python bench/dice_accuracy.py --datasets matteop65  # one data set
    python bench/dice_accuracy.py --help

For each data set separately the images are split in two halves, deterministically (see `split`): the reader
is calibrated on one half (`calibration.dice.calibrate`) and measured on the other, then the halves swap
(two folds; every image is measured exactly once, by a calibration that never saw it).

Two settings are measured on the held-out half:

- whole image: `DiceReader.read(image, expect=<number of labelled dice>)`, as the table reads its camera
  frame. Each labelled die is matched to the read die whose box holds the label's centre.
- one die at a time (closest to a sic bo table, which sees three dice of one known type): a square crop around
  each labelled die, 3 die sides wide, read with `read_die_at(crop, crop centre)`. The crop's size comes from
  the die's box (byler: boxes enclose the die) or is one size for the whole set (matteop65: boxes enclose only
  the pips, so their size would give the value away). The labels choose the crop and score the answer; the
  reader never sees them.

Per die: correct / WRONG (read with confidence, and wrong) / unreadable (abstained). Per image: all right /
any wrong / abstained. The number that matters at a table is the confident-wrong rate.

Labels: the published labels, and the same with the label errors listed in `ERRATA` corrected (each one was
looked at; the reason is given). Calibration uses the corrected labels; results are given against both.

Writes `bench/results/dice-accuracy.json` and `.md` (`--output` to change the stem).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from calibration.dice import LabelledDie, LabelledImage, calibrate, load_yolo_folder
from drivers.dice.reader import DiceCalibration, DiceReader, DieReading

if __package__:  # imported as `bench.dice_accuracy` (through bench/dice_table.py, by the tests)
    from bench import common
else:  # `python bench/dice_accuracy.py`: Python puts bench/ on the path
    import common

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "dice"
DATASETS = {"byler": "die", "matteop65": "pips"}  # data set -> what its label boxes enclose
MATTEOP_BLOCK = 10  # consecutive frames kept on one side of the split (they are near-duplicates)
CROP_SIDES = 3.0
SETTING_NAMES = {"crops": "one die (crop)", "images": "whole image"}

# Published labels that are wrong, found by looking at every die the reader read "wrong" with full
# confidence disabled, on both folds.
# (data set, image, index of the label line, published value, true value, why)
ERRATA: tuple[tuple[str, str, int, int, int, str], ...] = (
    (
        "matteop65",
        "valid_valid_56.jpg",
        2,
        4,
        1,
        "the box (13x9 px, right-hand die) holds a single pip in the middle of the top face: a 1",
    ),
    (
        "byler",
        "IMG_20191209_095954.jpg",
        2,
        2,
        3,
        "the green die left of centre shows three yellow pips on a diagonal: a 3 "
        "(the other die labelled 2 is one)",
    ),
)


@dataclass(frozen=True)
class Fold:
    calibration: list[LabelledImage]
    test: list[LabelledImage]


# --- data ---------------------------------------------------------------------------------------------


def split(dataset: str, examples: list[LabelledImage]) -> tuple[list[LabelledImage], list[LabelledImage]]:
    """Two halves. byler: by a hash of the file name. matteop65: frames are grouped by their name
    (`train_two_17` is frame 17 of `train_two`), cut into blocks of 10 consecutive frames, and whole blocks
    go to one half by a hash of the block's name, so near-duplicate neighbours never straddle the split."""
    halves: tuple[list[LabelledImage], list[LabelledImage]] = ([], [])
    for example in examples:
        if dataset == "matteop65":
            match = re.fullmatch(r"(.*)_(\d+)\.jpe?g", example.name)
            key = f"{match.group(1)}:{int(match.group(2)) // MATTEOP_BLOCK}" if match else example.name
        else:
            key = example.name
        halves[zlib.crc32(key.encode()) % 2].append(example)
    return halves


def apply_errata(dataset: str, examples: list[LabelledImage]) -> tuple[list[LabelledImage], int]:
    fixes = {
        (image, index): (published, true) for ds, image, index, published, true, _ in ERRATA if ds == dataset
    }
    corrected, applied = [], 0
    for example in examples:
        dice = list(example.dice)
        for index, die in enumerate(dice):
            fix = fixes.get((example.name, index))
            if fix is not None:
                if die.value != fix[0]:
                    raise SystemExit(
                        f"erratum for {dataset}/{example.name} line {index + 1} does not match the label"
                    )
                dice[index] = replace(die, value=fix[1])
                applied += 1
        corrected.append(replace(example, dice=tuple(dice)))
    return corrected, applied


def dataset_commits(data: Path) -> dict[str, str]:
    """The source commit of each data set, from the table in the data README."""
    commits = {}
    with contextlib.suppress(OSError):
        for line in (data / "README.md").read_text(encoding="utf-8").splitlines():
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if len(cells) >= 3 and re.fullmatch(r"[0-9a-f]{40}", cells[2]):
                commits[cells[0].rstrip("/")] = f"{cells[1]}@{cells[2]}"
    return commits


# --- scoring ------------------------------------------------------------------------------------------


def kind(truth: int, value: int | None) -> str:
    if value is None:
        return "unreadable"
    return "correct" if value == truth else "wrong"


def image_kind(kinds: list[str]) -> str:
    if "wrong" in kinds:
        return "any wrong"
    return "abstained" if "unreadable" in kinds else "all right"


def die_side(die: LabelledDie, fixed_side: float) -> float:
    side = die.die_side() if die.box_kind == "die" else None
    return side if side is not None else fixed_side


def crop_around(
    image: np.ndarray, centre: tuple[float, float], side: float
) -> tuple[np.ndarray, tuple[float, float]]:
    half = CROP_SIDES * side / 2
    x0, y0 = max(0, round(centre[0] - half)), max(0, round(centre[1] - half))
    x1, y1 = min(image.shape[1], round(centre[0] + half)), min(image.shape[0], round(centre[1] + half))
    return image[y0:y1, x0:x1], (centre[0] - x0, centre[1] - y0)


def match(reading: DieReading, die: LabelledDie) -> bool:
    x, y, w, h = reading.box
    cx, cy = die.centre
    return x <= cx < x + w and y <= cy < y + h


class Tally:
    """Counts of one setting (crops or whole images) against one set of labels."""

    def __init__(self) -> None:
        self.dice: Counter[str] = Counter()
        self.images: Counter[str] = Counter()
        self.wrong: list[dict[str, Any]] = []
        self.reasons: Counter[str] = Counter()
        self.by_confidence: Counter[str] = Counter()  # at no least confidence: "<bin> correct|wrong"

    def as_dict(self) -> dict[str, Any]:
        dice_total, image_total = sum(self.dice.values()), sum(self.images.values())
        return {
            "dice": dict(self.dice),
            "dice_rates": {k: round(v / dice_total, 4) for k, v in self.dice.items()} if dice_total else {},
            "images": dict(self.images),
            "image_rates": {k: round(v / image_total, 4) for k, v in self.images.items()}
            if image_total
            else {},
            "wrong_readings": self.wrong,
            "abstain_reasons": dict(self.reasons.most_common()),
            "without_least_confidence": dict(sorted(self.by_confidence.items())),
        }


def reason_key(reason: str) -> str:
    """Group reasons without their numbers ("die too small (41 px): ..." -> "die too small")."""
    return re.sub(r"\s*\(.*?\)|\s*[0-9.]+", "", reason.split(";")[0]).strip() or reason


def confidence_bin(confidence: float) -> str:
    low = min(0.9, math.floor(confidence * 10) / 10)
    return f"{low:.1f}-{low + 0.1:.1f}"


def measure_crops(
    reader: DiceReader,
    lenient: DiceReader,
    examples: list[LabelledImage],
    published: dict[str, LabelledImage],
    fixed_side: float,
    tallies: dict[str, Tally],
) -> tuple[int, float]:
    reads, seconds = 0, 0.0
    for example in examples:
        image = example.load()
        kinds: dict[str, list[str]] = {"corrected": [], "published": []}
        for index, die in enumerate(example.dice):
            crop, centre = crop_around(image, die.centre, die_side(die, fixed_side))
            started = time.perf_counter()
            reading = reader.read_die_at(crop, centre)
            seconds += time.perf_counter() - started
            reads += 1
            free = lenient.read_die_at(crop, centre)
            for labels, tally in (("corrected", tallies["corrected"]), ("published", tallies["published"])):
                truth = die.value if labels == "corrected" else published[example.name].dice[index].value
                outcome = kind(truth, reading.value)
                tally.dice[outcome] += 1
                kinds[labels].append(outcome)
                if outcome == "unreadable":
                    tally.reasons[reason_key(reading.reason)] += 1
                if outcome == "wrong":
                    tally.wrong.append(
                        {
                            "image": example.name,
                            "label_line": index + 1,
                            "label": truth,
                            "read": reading.value,
                            "confidence": reading.confidence,
                        }
                    )
                if free.value is not None:
                    tally.by_confidence[f"{confidence_bin(free.confidence)} {kind(truth, free.value)}"] += 1
        for labels in ("corrected", "published"):
            tallies[labels].images[image_kind(kinds[labels])] += 1
    return reads, seconds


def measure_images(
    reader: DiceReader,
    examples: list[LabelledImage],
    published: dict[str, LabelledImage],
    tallies: dict[str, Tally],
) -> tuple[int, float]:
    seconds = 0.0
    for example in examples:
        image = example.load()
        started = time.perf_counter()
        result = reader.read(image, expect=len(example.dice))
        seconds += time.perf_counter() - started
        for labels in ("corrected", "published"):
            tally = tallies[labels]
            truths = example.dice if labels == "corrected" else published[example.name].dice
            kinds = []
            for index, die in enumerate(truths):
                found = [reading for reading in result.dice if match(reading, die)]
                if len(found) != 1:
                    outcome = "unreadable"
                    tally.reasons["not found as one die" if not found else "two dice read there"] += 1
                else:
                    outcome = kind(die.value, found[0].value)
                    if outcome == "unreadable":
                        tally.reasons[reason_key(found[0].reason)] += 1
                if outcome == "wrong":
                    tally.wrong.append(
                        {
                            "image": example.name,
                            "label_line": index + 1,
                            "label": die.value,
                            "read": found[0].value,
                            "confidence": found[0].confidence,
                        }
                    )
                tally.dice[outcome] += 1
                kinds.append(outcome)
            phantoms = [r for r in result.dice if not any(match(r, die) for die in truths)]
            tally.dice["extra blobs read as dice"] += sum(1 for r in phantoms if r.value is not None)
            if result.readable:
                # a readable frame is either exactly right or a confident wrong answer for the whole round
                right = not phantoms and all(kind_ == "correct" for kind_ in kinds)
                tally.images["all right" if right else "any wrong"] += 1
            else:
                tally.images["abstained"] += 1
    return len(examples), seconds


# --- the run ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Photos:
    """A data set as the dice benchmarks measure it: its labelled photos with the errata applied, as
    published (by name), and split in halves."""

    dataset: str
    box_kind: str
    examples: list[LabelledImage]
    corrections: int
    published: dict[str, LabelledImage]
    halves: tuple[list[LabelledImage], list[LabelledImage]]

    def header(self) -> dict[str, Any]:
        return dataset_header(self.dataset, self.box_kind, self.examples, self.corrections)


def load_photos(data: Path, dataset: str) -> Photos:
    box_kind = DATASETS[dataset]
    folder = data / dataset
    published_examples = load_yolo_folder(folder / "images", folder / "labels", box_kind)  # type: ignore[arg-type]
    examples, corrections = apply_errata(dataset, published_examples)
    published = {example.name: example for example in published_examples}
    return Photos(dataset, box_kind, examples, corrections, published, split(dataset, examples))


def run_dataset(data: Path, dataset: str) -> dict[str, Any]:
    photos = load_photos(data, dataset)
    box_kind, published, halves = photos.box_kind, photos.published, photos.halves
    folds = [Fold(halves[0], halves[1]), Fold(halves[1], halves[0])]
    settings = ("crops", "images")
    tallies = {s: {labels: Tally() for labels in ("corrected", "published")} for s in settings}
    fold_reports = []
    timing = {
        "crop_reads": 0,
        "crop_seconds": 0.0,
        "image_reads": 0,
        "image_seconds": 0.0,
        "calibration_seconds": 0.0,
    }
    for number, fold in enumerate(folds, 1):
        started = time.perf_counter()
        calibration = calibrate(fold.calibration)
        timing["calibration_seconds"] += time.perf_counter() - started
        sides = [
            side for side in (die.die_side() for e in fold.calibration for die in e.dice) if side is not None
        ]
        fixed_side = float(np.median(sides))
        reader = DiceReader(calibration)
        lenient = DiceReader(calibration.model_copy(update={"min_confidence": 0.0}))
        fold_tallies = {s: {labels: Tally() for labels in ("corrected", "published")} for s in settings}
        reads, seconds = measure_crops(
            reader, lenient, fold.test, published, fixed_side, fold_tallies["crops"]
        )
        timing["crop_reads"] += reads
        timing["crop_seconds"] += seconds
        reads, seconds = measure_images(reader, fold.test, published, fold_tallies["images"])
        timing["image_reads"] += reads
        timing["image_seconds"] += seconds
        for setting in settings:
            for labels in ("corrected", "published"):
                merge(tallies[setting][labels], fold_tallies[setting][labels])
        fold_reports.append(
            {
                "fold": number,
                "calibration_images": sorted(e.name for e in fold.calibration),
                "test_images": len(fold.test),
                "test_dice": sum(len(e.dice) for e in fold.test),
                "crop_side_px": round(fixed_side, 1) if box_kind == "pips" else "from each die's box",
                "calibration": calibration.model_dump(mode="json"),
                "results": {s: fold_tallies[s]["corrected"].as_dict() for s in settings},
            }
        )
        print(
            f"  {dataset} fold {number}: calibrated on {len(fold.calibration)} images, "
            f"crops {dict(fold_tallies['crops']['corrected'].dice)}",
            file=sys.stderr,
        )
    return {
        **photos.header(),
        "folds": fold_reports,
        "results": {s: {labels: tallies[s][labels].as_dict() for labels in tallies[s]} for s in settings},
        "timing": {
            "calibration_seconds_per_fold": round(timing["calibration_seconds"] / 2, 1),
            "ms_per_crop": round(1000 * timing["crop_seconds"] / max(1, timing["crop_reads"]), 2),
            "ms_per_image": round(1000 * timing["image_seconds"] / max(1, timing["image_reads"]), 2),
        },
    }


def merge(into: Tally, other: Tally) -> None:
    into.dice.update(other.dice)
    into.images.update(other.images)
    into.wrong.extend(other.wrong)
    into.reasons.update(other.reasons)
    into.by_confidence.update(other.by_confidence)


def dataset_header(
    dataset: str, box_kind: str, examples: list[LabelledImage], corrections: int
) -> dict[str, Any]:
    """What a report says of the data set it measured (before its folds and results)."""
    return {
        "dataset": dataset,
        "box_kind": box_kind,
        "images": len(examples),
        "dice": sum(len(e.dice) for e in examples),
        "errata_applied": corrections,
        "split": split_description(dataset),
    }


def split_description(dataset: str) -> str:
    if dataset == "matteop65":
        return (
            f"blocks of {MATTEOP_BLOCK} consecutive frames of each name group "
            "(train_two_0-9, train_two_10-19, "
            "...), each block to half crc32('<group>:<block>') % 2; fold 1 calibrates on half 0 and measures "
            "half 1, fold 2 the other way round"
        )
    return (
        "each image to half crc32(<file name>) % 2; fold 1 calibrates on half 0 and measures half 1, "
        "fold 2 the other way round"
    )


# --- report -------------------------------------------------------------------------------------------


DICE_SOURCES = ("drivers/dice", "calibration/dice.py", "bench/dice_accuracy.py")


def tally_header(part: str) -> list[str]:
    """The head of a tally table (`tally_row`): `part` names the second column."""
    return [
        f"| data set | {part} | labels | dice | correct | WRONG | unreadable "
        "| images | all right | any wrong | abstained |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]


def tally_row(name: str, part: str, labels: str, tally: dict[str, Any]) -> str:
    """One row of a tally table: a `Tally.as_dict()` of data set `name`, setting or fold `part`."""
    dice, images = tally["dice"], tally["images"]
    total = sum(v for k, v in dice.items() if k in ("correct", "wrong", "unreadable"))
    image_total = sum(images.values())
    cells = [
        str(total),
        *(common.percent(dice.get(k, 0), total) for k in ("correct", "wrong", "unreadable")),
        str(image_total),
        *(common.percent(images.get(k, 0), image_total) for k in ("all right", "any wrong", "abstained")),
    ]
    return f"| {name} | {part} | {labels} | {' | '.join(cells)} |"


def machine_line(report: dict[str, Any], *extras: str) -> str:
    m = report["machine"]
    return common.machine_line(report, f"OpenCV {m['opencv']}", f"numpy {m['numpy']}", *extras)


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "# Dice reader accuracy on real photographs",
        "",
        machine_line(report),
        "",
        "Two folds per data set: calibrated on one half, measured on the other (every image measured once).",
        "WRONG = read with confidence and wrong. Labels: corrected = with the listed label errors fixed.",
        "",
        *tally_header("setting"),
    ]
    for result in report["datasets"]:
        for setting in ("crops", "images"):
            for labels in ("corrected", "published"):
                tally = result["results"][setting][labels]
                lines.append(tally_row(result["dataset"], SETTING_NAMES[setting], labels, tally))
    lines += [
        "",
        "Extra blobs read as dice in whole images (a die where no die is labelled): "
        + ", ".join(
            f"{r['dataset']} {r['results']['images']['corrected']['dice'].get('extra blobs read as dice', 0)}"
            for r in report["datasets"]
        ),
        "",
    ]
    lines += [
        "Timing (not a benchmark of speed; this machine, while measuring): "
        + "; ".join(
            f"{r['dataset']}: {r['timing']['ms_per_crop']} ms per crop, {r['timing']['ms_per_image']} ms "
            f"per whole image, {r['timing']['calibration_seconds_per_fold']} s per calibration"
            for r in report["datasets"]
        ),
        "",
    ]
    return "\n".join(lines)


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """`--data` (the photographs) and `--datasets` (which of them), as every dice benchmark takes them."""
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="the folder holding byler/ and matteop65/"
    )
    parser.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated (default: both)")


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(parser)
    common.add_output_argument(parser, "dice-accuracy", markdown=True)
    args = parser.parse_args(argv)
    names = [name for name in args.datasets.split(",") if name]
    unknown = [name for name in names if name not in DATASETS]
    if unknown:
        parser.error(f"unknown data set(s) {', '.join(unknown)}; known: {', '.join(DATASETS)}")
    if not args.data.is_dir():
        parser.error(f"{args.data}: no such folder (the dice photos; see --data)")
    report: dict[str, Any] = {
        **common.header(
            "dice-accuracy",
            common.now(),
            common.machine(opencv=cv2.__version__, numpy=np.__version__),
            measured=DICE_SOURCES,
            what="the dice reader on real labelled photos, calibrated on one half, measured on the other",
        ),
        "dataset_sources": dataset_commits(args.data),
        "calibration_format": f"{DiceCalibration().kind} v{DiceCalibration().version}",
        "errata": [
            {"dataset": d, "image": i, "label_line": n + 1, "published": p, "true": t, "why": w}
            for d, i, n, p, t, w in ERRATA
        ],
        "datasets": [],
    }
    for name in names:
        print(f"{name}: calibrating and measuring two folds...", file=sys.stderr)
        report["datasets"].append(run_dataset(args.data, name))
    text = markdown(report)
    output = common.write_result("dice-accuracy", report, args.output, text)
    print(text)
    print(f"\nWritten: {output} and its .md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
