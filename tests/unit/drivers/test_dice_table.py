"""The dice reader as the table uses it: calibrated from photos labelled with values only (through the CLI),
a synthetic suite with every hazard (never a confident misread), the evidence of a reading, refusal reasons,
stillness over frames, the camera source's renderer, `tablectl dice read`, and the calibration version.

Its unit tests; the integration ones are in `tests/integration/test_dice_table.py`."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest.mock import patch

import cv2
import numpy as np
import pytest

from calibration.dice import CalibrationError, ValueSample, calibrate_from_samples, load, load_samples
from drivers.camera.sources import SyntheticSource
from drivers.dice import reader as reader_module
from drivers.dice.reader import AcceptedDice, DiceCalibration, DiceReader, DiceRefusal
from drivers.dice.stillness import Stillness
from drivers.dice.synthetic import DiceRenderer, DiceScene, dome_scene, random_scene, render, tray_area
from drivers.dice.table import read_at_rest, read_still
from tests.helpers import dice_table as shared
from tests.helpers.dice_table import SAMPLES, calibrate_tool, write_samples

fitted = shared.fitted  # a fixture (tests/helpers/dice_table.py)

# the reader calibrates from photographs (module fixtures of seconds): slow, as a whole
pytestmark = [pytest.mark.unit, pytest.mark.slow]


@pytest.fixture(scope="module")
def calibration(fitted: tuple[Path, list[str]]) -> DiceCalibration:
    return load(fitted[0])


@pytest.fixture(scope="module")
def reader(calibration: DiceCalibration) -> DiceReader:
    return DiceReader(calibration)


# --- calibration from values only --------------------------------------------------------------------------


@pytest.mark.slow
def test_values_only_calibration_finds_the_tray_the_dice_and_reads_its_samples(
    fitted: tuple[Path, list[str]], calibration: DiceCalibration
) -> None:
    _, lines = fitted
    x, y, w, h = calibration.roi or (0, 0, 0, 0)
    tx, ty, tw, th = tray_area(1280, 720)
    assert tx <= x <= tx + 12 and ty <= y <= ty + 12  # the felt, not its rim
    assert tw - 24 <= w <= tw and th - 24 <= h <= th
    assert 0.6 < calibration.scale < 0.9  # dice drawn 58-70 px wide, read about 48 px wide
    assert calibration.pip_polarity == "dark"
    back = calibration.fitted_on["readback"]
    assert back["images"] == SAMPLES and back["misread"] == 0
    assert back["exact"] >= 0.6 * SAMPLES, (
        back
    )  # the others have touching or cocked dice, or 7 close together
    assert calibration.fitted_on["mode"] == "values"
    assert any(line.startswith("Read back whole") for line in lines)
    assert lines[-1].startswith("Calibration written:")


@pytest.mark.slow
def test_the_calibration_file_is_never_replaced(fitted: tuple[Path, list[str]], tmp_path: Path) -> None:
    out, _ = fitted
    csv_path = write_samples(tmp_path, 2, seed=1)
    status, lines = calibrate_tool(["dice", "--samples", str(csv_path), "--out", str(out)])
    assert status == 2 and "exists" in lines[-1]


def test_samples_csv_errors(tmp_path: Path) -> None:
    bad = tmp_path / "SAMPLES.csv"
    bad.write_text("image,values\nnowhere.png,3 4\n")
    with pytest.raises(CalibrationError, match="no image"):
        load_samples(bad)
    cv2.imwrite(str(tmp_path / "a.png"), np.zeros((4, 4, 3), np.uint8))
    bad.write_text("image,values\na.png,3 9\n")
    with pytest.raises(CalibrationError, match="1-6"):
        load_samples(bad)
    bad.write_text("file,value\na.png,3\n")
    with pytest.raises(CalibrationError, match="image,values"):
        load_samples(bad)
    status, lines = calibrate_tool(["dice", "--samples", str(bad), "--images", str(tmp_path)])
    assert status == 2 and "either --samples" in lines[-1]


def test_another_calibration_version_is_refused_with_what_to_do(
    calibration: DiceCalibration, tmp_path: Path
) -> None:
    old = calibration.model_dump(mode="json") | {"version": 1}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    with pytest.raises(CalibrationError, match=r"version 1; this tablectl reads version 2"):
        load(path)
    with pytest.raises(ValueError, match="fit it again"):
        DiceCalibration.model_validate(old)


# --- the synthetic suite ------------------------------------------------------------------------------------


def judge(scene: DiceScene, result: AcceptedDice | DiceRefusal) -> str:
    """Each die read must be the drawn die under its box, with its value (order is the reader's business)."""
    if isinstance(result, DiceRefusal):
        return "refused"
    if not scene.readable:
        return "accepted a hazard"
    if len(result.dice) != len(scene.dice):
        return "MISREAD"
    # the drawn die nearest each die read (boxes of touching dice turned 45 degrees hold each other's centres)
    matched = set()
    for die in result.dice:
        nearest = min(scene.dice, key=lambda d: math.dist(d.centre, die.centre))
        if math.dist(nearest.centre, die.centre) > 0.5 * nearest.side or nearest.value != die.value:
            return "MISREAD"
        matched.add(id(nearest))
    return "right" if len(matched) == len(scene.dice) else "MISREAD"


@pytest.mark.slow
def test_synthetic_suite_never_a_confident_misread(reader: DiceReader) -> None:
    """Hundreds of scenes, 1-7 dice, every hazard: read right or refused; the calm ones mostly read."""
    rng = np.random.default_rng(2026)
    outcomes: Counter[str] = Counter()
    calm: Counter[str] = Counter()
    for index in range(300):
        scene = random_scene(rng, dice=3 if index % 3 else int(rng.integers(1, 8)))
        outcome = judge(scene, reader.read(render(scene, seed=index), expect=len(scene.dice)))
        outcomes[outcome] += 1
        if scene.hazard == "none" and len(scene.dice) == 3:
            calm[outcome] += 1
    assert outcomes["MISREAD"] == 0 and outcomes["accepted a hazard"] == 0, outcomes
    assert calm["right"] >= 0.8 * sum(calm.values()), calm


@pytest.mark.slow
def test_calm_frames_at_the_soft_end_of_focus_are_read(reader: DiceReader) -> None:
    """The calibration's sharpness limit lies below its own photos' softest dice, with a margin: a calm frame
    as soft as the softest of them is read, not refused (refusing the blurriest 5% of the calibration's dice,
    as the limit once did, read 2 of these 30)."""
    rng = np.random.default_rng(77)
    outcomes: Counter[str] = Counter()
    for index in range(30):
        scene = random_scene(rng, hazard="none")
        soft = replace(scene, blur=float(rng.uniform(0.8, 0.9)))  # calm scenes draw 0 or 0.3-0.9
        outcomes[judge(soft, reader.read(render(soft, seed=index), expect=3))] += 1
    assert outcomes["right"] >= 28, outcomes


@pytest.mark.slow
def test_each_die_read_in_its_window_as_in_the_whole_tray(reader: DiceReader) -> None:
    """The fast way (the dice located in the shrunk tray, each segmented in a window) reads as segmenting the
    whole tray at once: the same outcome for nearly every scene (a die near a confidence limit may land on
    either side of it: its window is resampled on a slightly other grid), and never other values."""
    rng = np.random.default_rng(20261202)
    same = 0
    scenes = 150
    for index in range(scenes):
        scene = random_scene(rng, dice=3 if index % 2 else int(rng.integers(1, 8)))
        image = render(scene, seed=index)
        fast = reader.read(image, expect=len(scene.dice))
        whole = reader.read(image, expect=len(scene.dice), whole_tray=True)
        if fast.readable and whole.readable:
            assert fast.values == whole.values, (index, fast, whole)
        same += (fast.values, fast.reason) == (whole.values, whole.reason)
    assert same >= 0.95 * scenes, same  # measured: 294 of 300 scenes


@pytest.mark.parametrize(
    ("hazard", "usual", "others"),
    [
        # mostly "unclear": the side face's pips spoil the top face's pattern before the tilt is measured
        ("cocked", "unclear", {"cocked"}),
        ("stacked", "count", {"stacked", "touching", "cocked"}),  # the die below is hidden: two dice
        ("blur", "blurred", {"unclear"}),
    ],
)
def test_hazards_are_refused_with_their_reason(
    reader: DiceReader, hazard: Any, usual: str, others: set[str]
) -> None:
    rng = np.random.default_rng(11)
    seen: Counter[str] = Counter()
    for index in range(12):
        scene = random_scene(rng, hazard=hazard)
        result = reader.read(render(scene, seed=index))
        assert isinstance(result, DiceRefusal), (hazard, index, result)
        seen[result.reason] += 1
    assert set(seen) <= {usual, *others}, seen
    assert seen[usual] >= 4, seen


def test_touching_dice_are_read_apart_or_refused_never_misread(reader: DiceReader) -> None:
    rng = np.random.default_rng(11)
    seen: Counter[str] = Counter()
    for index in range(12):
        scene = random_scene(rng, hazard="touching")
        seen[judge(scene, reader.read(render(scene, seed=index)))] += 1
    assert seen["MISREAD"] == 0, seen
    assert seen["right"] >= 8, seen  # measured: 10 of 12 (the others end at the tray's edge, or are refused)


def test_dome_scenes_have_touching_dice_inside_the_dome() -> None:
    rng = np.random.default_rng(4)
    touching = 0
    for _ in range(30):
        scene = dome_scene(rng)
        assert scene.dome is not None and 3 <= len(scene.dice) <= 7
        centre_x, centre_y, radius = scene.dome
        for die in scene.dice:  # a die's corner is 0.71 sides from its centre: none on the rim
            assert math.dist(die.centre, (centre_x, centre_y)) + 0.71 * die.side < radius
        touching += scene.touching_dice > 0
        assert scene.hazard == ("touching" if scene.touching_dice else "none")
    assert touching >= 24, touching  # mostly touching
    apart = dome_scene(rng, touching=0.0, dice=5)
    assert apart.touching_dice <= 2  # placed apart (a die may still land against one by chance)


@pytest.mark.slow
def test_dome_scenes_read_right_or_refused() -> None:
    """A shaker's dome: calibrated from photos of the dice spread apart, then mostly touching dice read."""
    rng = np.random.default_rng(5)
    photos = [dome_scene(rng, touching=0.0) for _ in range(30)]
    samples = [
        ValueSample(render(scene, seed=100 + index), tuple(d.value for d in scene.dice), f"d{index}")
        for index, scene in enumerate(photos)
    ]
    dome_reader = DiceReader(calibrate_from_samples(samples))
    assert dome_reader.calibration.tray_circle is not None
    rng = np.random.default_rng(8)
    seen: Counter[str] = Counter()
    for index in range(25):
        scene = dome_scene(rng)
        seen[judge(scene, dome_reader.read(render(scene, seed=index), expect=len(scene.dice)))] += 1
    assert seen["MISREAD"] == 0, seen
    assert seen["right"] >= 12, seen


def _dome_table(side: float, photos: int = 30) -> DiceCalibration:
    """A shaker's table of one die size, calibrated from photos of its dome with the dice apart."""
    rng = np.random.default_rng(5)
    scenes = [dome_scene(rng, touching=0.0, side=(side, side)) for _ in range(photos)]
    return calibrate_from_samples(
        [
            ValueSample(render(scene, seed=100 + index), tuple(d.value for d in scene.dice), f"d{index}")
            for index, scene in enumerate(scenes)
        ]
    )


def test_touching_dice_are_tried_only_as_dice_of_the_tables_size() -> None:
    """A table of one die size: a blob of three touching dice is tried as three dice only, and read right:
    not as four smaller dice, which the wider range a die alone is accepted in still allows (a calibration
    without the split's sizes, a file fitted before they were kept, tries them), nor as two of the usual
    size, which would fill too little of it."""
    table = _dome_table(64.0)
    assert table.split_side_px is not None
    low, high = table.split_side_px
    assert table.die_side_px[0] < low < table.die_side_median < high < table.die_side_px[1]
    rng = np.random.default_rng(21)
    scenes = [dome_scene(rng, dice=3, side=(64.0, 64.0)) for _ in range(40)]
    touching = [(index, scene) for index, scene in enumerate(scenes) if scene.touching_dice == 3][:8]
    assert len(touching) >= 6
    tried: dict[str, list[set[int]]] = {}
    for label, calibration in (
        ("table", table),
        ("before", table.model_copy(update={"split_side_px": None})),
    ):
        reader = DiceReader(calibration)
        counts: dict[tuple[Any, bytes], set[int]] = {}  # the numbers of dice each blob was tried as
        real_fit = reader_module._fit_squares

        def counting(
            blob: Any,
            side: float,
            count: int,
            *rest: Any,
            counts: dict[tuple[Any, bytes], set[int]] = counts,
            fit: Any = real_fit,
        ) -> Any:
            counts.setdefault((blob.shape, blob.tobytes()), set()).add(count)
            return fit(blob, side, count, *rest)

        seen: Counter[str] = Counter()
        with patch.object(reader_module, "_fit_squares", counting):
            for index, scene in touching:
                seen[judge(scene, reader.read(render(scene, seed=index)))] += 1
        assert seen["MISREAD"] == 0, (label, seen)
        if label == "table":
            assert seen["right"] >= len(touching) - 1, seen
        tried[label] = list(counts.values())
    assert tried["table"] and all(numbers == {3} for numbers in tried["table"]), tried
    assert any(4 in numbers for numbers in tried["before"]), tried  # what the narrower sizes save


def test_a_reading_carries_its_evidence(reader: DiceReader) -> None:
    rng = np.random.default_rng(3)
    scene = random_scene(rng, hazard="none")
    while len(set(scene.values)) < 3:
        scene = random_scene(rng, hazard="none")
    result = reader.read(render(scene, seed=3), expect=3)
    assert isinstance(result, AcceptedDice), result
    assert result.values == scene.values and result.total == sum(scene.values)
    assert result.roi == reader.calibration.roi
    assert (
        result.confidence == min(die.confidence for die in result.dice) >= reader.calibration.min_confidence
    )
    truth = sorted(scene.dice, key=lambda d: d.centre[0])
    for die, drawn in zip(result.dice, truth, strict=True):
        x, y, w, h = die.box  # frame coordinates, not the tray's or the shrunk view's
        assert x <= drawn.centre[0] <= x + w and y <= drawn.centre[1] <= y + h
        assert 0.8 * drawn.side <= max(w, h) <= 1.6 * drawn.side
        assert len(die.pip_centres) == die.value == drawn.value
        for px, py in die.pip_centres:
            assert np.hypot(px - drawn.centre[0], py - drawn.centre[1]) < 0.5 * drawn.side
    wrong_count = reader.read(render(scene, seed=3), expect=2)
    assert isinstance(wrong_count, DiceRefusal) and wrong_count.reason == "count"
    assert [d.value for d in wrong_count.dice] == list(scene.values)  # read, but not as many as expected


def test_up_to_seven_dice(reader: DiceReader) -> None:
    rng = np.random.default_rng(7)
    read = 0
    for index in range(6):
        scene = random_scene(rng, dice=7, hazard="none")
        result = reader.read(render(scene, seed=index), expect=7)
        assert judge(scene, result) in ("right", "refused")
        read += isinstance(result, AcceptedDice)
    assert read >= 3


def test_a_frame_without_the_tray_is_refused(reader: DiceReader) -> None:
    refusal = reader.read(np.zeros((100, 100, 3), np.uint8))
    assert isinstance(refusal, DiceRefusal) and refusal.reason == "image"
    assert "does not hold the calibrated tray" in refusal.detail


# --- stillness and the camera source ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_stillness_waits_for_the_dice_to_rest(reader: DiceReader, seed: int) -> None:
    renderer = DiceRenderer(seed=seed, roll_frames=6, rest_frames=10)
    source = SyntheticSource(renderer, width=1280, height=720, fps=None, noise=2)
    stillness = Stillness.for_calibration(reader.calibration)
    frames: list[int] = []
    with source:

        def stream() -> Any:
            for index in range(16):
                frames.append(index)
                yield source.read()

        result = read_still(stream(), reader, stillness=stillness)
    scene = renderer.scene_at(frames[-1])
    assert scene is not None and renderer.scene_at(5) is None
    assert frames[-1] == 6 + stillness.frames - 1  # the first frame at rest, and two more like it
    assert judge(scene, result) in ("right", "refused")
    assert seed != 5 or judge(scene, result) == "right"


def test_dice_that_never_stop_are_moving(reader: DiceReader) -> None:
    renderer = DiceRenderer(seed=4, roll_frames=20, rest_frames=10)
    frames = (renderer(index, 0.0) for index in range(20))
    result = read_still(frames, reader, max_frames=12)
    assert isinstance(result, DiceRefusal) and result.reason == "moving"


def test_stillness_ignores_sensor_noise_and_sees_a_creeping_die() -> None:
    scene = random_scene(np.random.default_rng(1), hazard="none")
    still = Stillness(frames=3, max_changed=0.001)
    checks = [still.update(render(scene, seed=seed)) for seed in range(4)]
    assert [c.still for c in checks] == [False, False, True, True]
    creeping = Stillness(frames=3, max_changed=0.001)
    die = scene.dice[0]
    for step in range(8):  # a die sliding 2 px a frame: little between neighbours, a lot over a run
        moved = replace(scene, dice=(replace(die, centre=(die.centre[0] + 2 * step, die.centre[1])),))
        assert not creeping.update(render(moved, seed=step)).still


async def test_read_at_rest_grabs_until_still(reader: DiceReader) -> None:
    renderer = DiceRenderer(seed=9, roll_frames=4, rest_frames=20)
    grabbed = 0

    async def grab() -> Any:
        nonlocal grabbed
        grabbed += 1
        return renderer(grabbed - 1, 0.0)

    result = await read_at_rest(grab, reader)
    scene = renderer.scene_at(grabbed - 1)
    assert scene is not None and grabbed == 4 + 3
    assert judge(scene, result) in ("right", "refused")


def test_the_camera_record_names_the_dice_renderer_for_a_config_string() -> None:
    from drivers.camera.options import CameraOptions
    from drivers.camera.sources import make_source
    from drivers.registry import protocol

    renderers = protocol("camera").renderers
    source = make_source("synthetic:dice", CameraOptions(width=640, height=360), renderers=renderers)
    assert isinstance(source, SyntheticSource) and isinstance(source.renderer, DiceRenderer)
    with source:
        assert source.read().shape == (360, 640, 3)
