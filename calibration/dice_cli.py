"""`tablectl calibrate dice | dice-check`: fit the dice camera's calibration from labelled photos; try it.

    tablectl calibrate dice --samples SAMPLES.csv [--roi X,Y,W,H] [--out CAL.json | DIR]
    tablectl calibrate dice --images DIR --labels DIR [--box die|pips] [--roi X,Y,W,H] [--out CAL.json | DIR]
    tablectl calibrate dice-check --calibration FILE [--expected 3] IMAGE...

`dice --samples` reads photos of the table's own dice labelled only with the values they show (SAMPLES.csv:
`image,values`, e.g. `shot-001.jpg,3 5 5`), finds the tray, the dice's size, colours and pips from them, fits
every threshold and reads every photo back whole as the table would. `dice --images --labels` reads images
with YOLO labels (`<image stem>.txt`, one `class cx cy w h` line per die, value =
class + 1),
fits every threshold, writes `dice-calibration-<UTC time>.json` into `--out` (never replacing an older file)
and prints what it fitted and how it reads the calibration images themselves, listing every die it read wrong
(often a wrong label: check them). `dice-check` reads images with a calibration file and prints what it sees.

Exit status: 0 done (dice-check: every image readable), 1 dice-check: some image not readable, 2 the tool
could not run (missing folder, no labels, unreadable file).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

# OpenCV and the dice code are imported by the tools themselves, not when `tablectl` builds its parser:
# every other command starts without loading them.
if TYPE_CHECKING:
    from drivers.dice.reader import DiceCalibration, DiceResult

#: what a dice tool says without the camera extra installed
CAMERA_NEEDS = "the dice reader needs OpenCV: pip install 'tablectl[camera]'"
EXIT_OK = 0
EXIT_NOT_READABLE = 1
EXIT_USAGE = 2
DEFAULT_RECORDS_DIR = "calibration-records"

Show = Callable[[str], None]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the dice tools under `tablectl calibrate`."""
    fit = subparsers.add_parser(
        "dice", help="fit the dice camera's calibration from labelled photos of the dice"
    )
    fit.add_argument(
        "--samples",
        type=Path,
        help="SAMPLES.csv: columns image,values (the face values a photo shows, space-separated, any order); "
        "image paths relative to the CSV",
    )
    fit.add_argument("--images", type=Path, help="folder of photos (with --labels: YOLO-labelled mode)")
    fit.add_argument("--labels", type=Path, help="folder of YOLO label files, one per photo")
    fit.add_argument(
        "--box",
        choices=("die", "pips"),
        default="die",
        help="what a label box encloses: the whole die (default) or only the top face's pips",
    )
    fit.add_argument(
        "--roi", type=_roi, default=None, help="X,Y,W,H: read only this part of the frame (the tray)"
    )
    fit.add_argument(
        "--out",
        type=Path,
        default=Path(DEFAULT_RECORDS_DIR),
        help="the calibration file (CAL.json; never replaced) or a folder for a time-stamped one",
    )
    fit.set_defaults(func=run_fit)

    check = subparsers.add_parser(
        "dice-check", help="read photos with a dice calibration and print what it sees"
    )
    check.add_argument("--calibration", required=True, type=Path, help="a dice-calibration-*.json file")
    check.add_argument(
        "--expected", type=int, default=3, help="how many dice must be seen (default 3; 0: any)"
    )
    check.add_argument("images", nargs="+", type=Path, metavar="IMAGE")
    check.set_defaults(func=run_check)


def _roi(text: str) -> tuple[int, int, int, int]:
    try:
        x, y, w, h = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected X,Y,W,H in pixels") from None
    if x < 0 or y < 0 or w <= 0 or h <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: X,Y must be >= 0 and W,H > 0")
    return (x, y, w, h)


def run_fit(args: argparse.Namespace, show: Show | None = None) -> int:
    from calibration.dice import CalibrationError, calibrate, load_yolo_folder

    say: Show = show or (lambda text: print(text, flush=True))
    if (args.samples is None) == (args.images is None and args.labels is None):
        say("tablectl: error: give either --samples SAMPLES.csv or --images DIR --labels DIR")
        return EXIT_USAGE
    if args.samples is not None:
        return run_fit_samples(args, say)
    for folder in (args.images, args.labels):
        if folder is None or not Path(folder).is_dir():
            say(f"tablectl: error: {folder}: no such folder (--images and --labels go together)")
            return EXIT_USAGE
    try:
        examples = load_yolo_folder(args.images, args.labels, args.box)
        say(f"Fitting on {len(examples)} images, {sum(len(e.dice) for e in examples)} labelled dice...")
        calibration = calibrate(examples, roi=args.roi)
        path = _write(calibration, args.out)
    except (CalibrationError, OSError) as exc:
        say(f"tablectl: error: {exc}")
        return EXIT_USAGE
    for line in describe(calibration):
        say(line)
    say(f"Read back on the calibration images, one die at a time: {readback(calibration)}")
    raised = calibration.fitted_on.get("wrong_without_least_confidence", [])
    if raised:
        say(
            f"The least confidence was raised to {calibration.min_confidence:.2f} by {len(raised)} "
            "calibration dice read otherwise than labelled (a wrong label costs readings: check these):"
        )
        for wrong in raised:
            x, y, w, h = wrong["box"]
            say(
                f"  {wrong['image']}: die at {x},{y} {w}x{h} labelled {wrong['label']}, read {wrong['read']} "
                f"(confidence {wrong['confidence']:.2f})"
            )
    for wrong in calibration.fitted_on.get("wrong_readings", []):
        say(
            f"  WRONG: {wrong['image']}: labelled {wrong['label']}, read {wrong['read']} "
            f"(confidence {wrong['confidence']:.2f}): check the label"
        )
    say(f"Calibration written: {path}")
    return EXIT_OK


def run_fit_samples(args: argparse.Namespace, say: Show) -> int:
    from calibration.dice import CalibrationError, calibrate_from_samples, load_samples

    try:
        samples = load_samples(args.samples)
        say(f"Fitting on {len(samples)} photos, {sum(len(s.values) for s in samples)} dice (values only)...")
        calibration = calibrate_from_samples(samples, roi=args.roi)
        path = _write(calibration, args.out)
    except (CalibrationError, OSError) as exc:
        say(f"tablectl: error: {exc}")
        return EXIT_USAGE
    fitted = calibration.fitted_on
    roi = calibration.roi
    say(
        "Tray: "
        + ("the whole frame" if roi is None else f"{roi[2]}x{roi[3]} at {roi[0]},{roi[1]}")
        + f"; read at scale {calibration.scale:g}"
    )
    for line in describe(calibration):
        say(line)
    say(
        f"Dice matched to their values in {fitted['samples_matched']} of {fitted['samples']} photos "
        "(the others: dice touching, cocked, or not all read)"
    )
    for wrong in fitted.get("contradicted_readings", []):
        say(
            f"  {wrong['image']}: a die read {wrong['read']} (confidence {wrong['confidence']:.2f}) "
            f"but the photo shows {' '.join(map(str, wrong['values']))}: check the line; "
            f"the least confidence is now {calibration.min_confidence:.2f}"
        )
    back = fitted["readback"]
    refusals = ", ".join(f"{n} {reason}" for reason, n in back["refusals"].items()) or "none"
    say(
        f"Read back whole, as the table reads: {back['exact']} of {back['images']} photos exact, "
        f"{back['refused']} refused ({refusals}), {back['misread']} misread"
    )
    for wrong in back["misreadings"]:
        say(f"  MISREAD: {wrong['image']}: shows {wrong['values']}, read {wrong['read']}: check the line")
    say(f"Calibration written: {path}")
    return EXIT_OK


def _write(calibration: DiceCalibration, out: Path) -> Path:
    """`out` ending in .json: that file (never replaced); else a folder for a time-stamped file."""
    from calibration.dice import CalibrationError, save, save_as

    if out.suffix.lower() != ".json":
        return save(calibration, out)
    if out.exists():
        raise CalibrationError(f"{out} exists: a calibration is never replaced; choose another name")
    return save_as(calibration, out)


def readback(calibration: DiceCalibration) -> str:
    fitted = calibration.fitted_on
    total = max(1, sum(int(fitted.get(k, 0)) for k in ("correct", "wrong", "unreadable")))
    parts = [
        f"{fitted.get(k, 0)} {k} ({100 * int(fitted.get(k, 0)) / total:.1f}%)"
        for k in ("correct", "wrong", "unreadable")
    ]
    images = [
        f"{fitted.get('images_' + k.replace(' ', '_'), 0)} {k}"
        for k in ("all right", "any wrong", "abstained")
    ]
    return f"{', '.join(parts)}; images: {', '.join(images)}"


def describe(calibration: DiceCalibration) -> list[str]:
    low, high = calibration.die_side_px
    units = ", ".join(f"{n}: {a:.2f}-{b:.2f}" for n, (a, b) in enumerate(calibration.pip_unit_ratio, 1))
    return [
        f"Dice {low:.0f}-{high:.0f} px wide, "
        f"at least {calibration.die_contrast:.0f} Lab units from the background"
        f"{'' if calibration.shadow_weight == 0 else ' (darker dice allowed)'}",
        f"Pips {calibration.pip_polarity}, contrast >= {calibration.pip_contrast:.0f}, "
        f"area {calibration.pip_area_ratio[0]:.3f}-{calibration.pip_area_ratio[1]:.3f} of the die, "
        f"round >= {calibration.min_pip_roundness:.2f}",
        f"Pip grid / die side by face: {units}",
        f"Fit error <= {calibration.max_layout_error:.2f} grid units, "
        f"centre <= {calibration.max_centre_offset:.2f} sides, "
        f"empty positions <= {calibration.max_empty_level:.2f}, "
        f"sharpness >= {calibration.min_sharpness:.1f}, "
        f"least confidence {calibration.min_confidence:.2f}",
    ]


def run_check(args: argparse.Namespace, show: Show | None = None) -> int:
    """`dice-check`: `read_photos`, each result in words."""
    say: Show = show or (lambda text: print(text, flush=True))

    def emit(path: Path, result: DiceResult, _ms: float) -> None:
        for line in format_result(str(path), result):
            say(line)

    expected = args.expected if args.expected > 0 else None
    return read_photos(
        args.calibration, args.images, expected, emit, lambda problem: say(f"tablectl: error: {problem}")
    )


def read_photos(
    calibration_file: Path,
    images: Sequence[Path],
    expect: int | None,
    emit: Callable[[Path, DiceResult, float], None],
    problem: Show,
) -> int:
    """Read each photo with a dice calibration, as the table reads a frame: `emit(path, result, ms)` each;
    EXIT_OK if every photo was read, EXIT_NOT_READABLE if some was refused, EXIT_USAGE (and `problem` told
    why) if the tool cannot run: no OpenCV, no calibration, a file that is not an image. The one reading loop
    of `tablectl dice read` (JSON lines) and `tablectl calibrate dice-check` (words)."""
    try:
        import cv2
    except ImportError:
        problem(CAMERA_NEEDS)
        return EXIT_USAGE
    from calibration.dice import CalibrationError, load
    from drivers.dice.reader import DiceReader

    try:
        calibration = load(calibration_file)
    except CalibrationError as exc:
        problem(str(exc))
        return EXIT_USAGE
    reader = DiceReader(calibration)
    status = EXIT_OK
    for path in images:
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            problem(f"{path}: not an image OpenCV can read")
            return EXIT_USAGE
        started = time.perf_counter()
        result = reader.read(image, expect=expect)
        emit(path, result, (time.perf_counter() - started) * 1000)
        if not result.readable:
            status = EXIT_NOT_READABLE
    return status


def format_result(name: str, result: DiceResult) -> list[str]:
    if result.readable and result.values is not None:
        total = sum(result.values)
        head = f"{name}: {' '.join(str(v) for v in result.values)} (total {total})"
    else:
        head = f"{name}: NOT READABLE ({result.reason}): {result.detail} (re-shake)"
    lines = [head]
    for number, die in enumerate(result.dice, 1):
        x, y, w, h = die.box
        seen = (
            f"{die.value} (confidence {die.confidence:.2f})" if die.value is not None else f"? {die.reason}"
        )
        lines.append(f"  die {number} at {x},{y} {w}x{h}: {seen}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (the same tools as `tablectl calibrate ...`)."""
    parser = argparse.ArgumentParser(prog="tablectl calibrate")
    register(parser.add_subparsers(dest="calibration", required=True, metavar="TOOL"))
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
