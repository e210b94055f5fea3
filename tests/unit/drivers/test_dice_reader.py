"""The dice reader on synthetic dice drawn with OpenCV (exact expectations, including every refusal) and on
real photographs (a correctness bound: no confident wrong reading, and at least so many read)."""

from __future__ import annotations

import itertools
import math
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any
from unittest.mock import patch

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from calibration.dice import calibrate, load_yolo_folder
from drivers.dice.reader import (
    FACES,
    SPLIT_REFITS,
    DiceCalibration,
    DiceReader,
    DiceRefusal,
    DiceResult,
    FaceMeasure,
    PipBlob,
    PipResponses,
    RoundTray,
    _area_resized,
    _blob_statistics,
    _centred,
    _coarse_turns,
    _components,
    _die_distance2,
    _disc,
    _empty_level,
    _fit_face,
    _fit_square,
    _fit_squares,
    _histogram_percentiles,
    _median_uint8,
    _merged,
    _morphed,
    _nonzero,
    _outline_angle,
    _shrink,
    _singular_ratio,
    _split_sizes,
    outside_as_felt,
    rounded_square,
)
from tests.helpers.dice_scenes import (
    DATA,
    IVORY,
    PIP_SPACING,
    SIDE,
    THREE,
    Pips,
    crop_reading,
    die,
    rotation,
    scene,
    training_set,
)

# the reader calibrates from photographs (module fixtures of seconds): slow, as a whole
pytestmark = [pytest.mark.unit, pytest.mark.slow]


@pytest.fixture(scope="module")
def calibration() -> DiceCalibration:
    return calibrate(training_set())


@pytest.fixture(scope="module")
def reader(calibration: DiceCalibration) -> DiceReader:
    return DiceReader(calibration)


# --- synthetic: what must be read ------------------------------------------------------------------------


@pytest.mark.slow
def test_three_dice_are_read_left_to_right(reader: DiceReader) -> None:
    shuffled = [THREE[2], THREE[0], THREE[1]]  # drawing order does not matter; image order does
    result = reader.read(scene(shuffled))
    assert result.readable
    assert result.values == (2, 5, 6)
    assert result.reason == ""
    assert [d.pips for d in result.dice] == [2, 5, 6]
    assert all(
        d.reason == "" and reader.calibration.min_confidence <= d.confidence <= 1.0 for d in result.dice
    )
    for reading, spec in zip(result.dice, THREE, strict=True):
        x, y, w, h = reading.box
        assert x <= spec["centre"][0] < x + w and y <= spec["centre"][1] < y + h


@pytest.mark.parametrize("angle", [0, 15, 30, 45, 60, 75, 89])
def test_every_face_at_every_rotation(reader: DiceReader, angle: float) -> None:
    for value in range(1, 7):
        result = reader.read(scene([die((160, 120), value, angle)], size=(320, 240)), expect=1)
        assert result.values == (value,), (value, angle, result.reason)


@pytest.mark.parametrize(
    "values",
    [(1, 1, 1), (6, 6, 6), (1, 2, 3), (4, 5, 6), (3, 6, 2), (5, 1, 4)],
    ids=lambda v: "-".join(map(str, v)),
)
def test_triples_and_mixed_rounds(reader: DiceReader, values: tuple[int, int, int]) -> None:
    dice = [die((120 + 200 * i, 160 + 80 * i), value, 20 * i + 5) for i, value in enumerate(values)]
    result = reader.read(scene(dice, seed=sum(values)))
    assert result.readable and result.values == values


def test_a_grey_image_is_read_too(reader: DiceReader) -> None:
    grey = cv2.cvtColor(scene([die((160, 120), 4, 30)], size=(320, 240)), cv2.COLOR_BGR2GRAY)
    # the die must still stand out from the felt in lightness alone; it does (ivory on dark green)
    assert reader.read(grey, expect=1).values == (4,)


def test_expected_none_accepts_any_count(reader: DiceReader) -> None:
    result = reader.read(scene(THREE[:2]), expect=None)
    assert result.readable and result.values == (2, 5)


# --- synthetic: what must be refused, and why --------------------------------------------------------------


def reasons(result: DiceResult) -> list[str]:
    return [d.reason for d in result.dice]


def test_two_touching_dice_are_split_and_read_apart(reader: DiceReader) -> None:
    dice = [die((150, 200), 3), die((150 + SIDE + 1, 200), 4), die((450, 300), 6, 20)]
    result = reader.read(scene(dice))
    assert result.readable and result.values == (3, 4, 6), result
    first, second = result.dice[:2]
    assert math.dist(first.centre, (150, 200)) < 5 and math.dist(second.centre, (150 + SIDE + 1, 200)) < 5


def test_two_dice_touching_at_an_angle_are_split_and_read_apart(reader: DiceReader) -> None:
    dice = [die((150, 200), 3, 40), die((150 + SIDE * 0.95, 200 + SIDE * 0.3), 4, 10), die((450, 300), 6, 20)]
    result = reader.read(scene(dice))
    assert result.readable and result.values == (3, 4, 6), result


def test_three_touching_dice_in_a_row_are_read(reader: DiceReader) -> None:
    dice = [die((150 + i * (SIDE + 1), 220), value, 3) for i, value in enumerate((5, 2, 6))]
    result = reader.read(scene(dice))
    assert result.readable and result.values == (5, 2, 6), result


def test_a_split_is_refitted_only_when_its_squares_as_first_placed_do_not_explain_it(
    reader: DiceReader,
) -> None:
    """Three dice in a row: the squares as first placed explain the blob and its dice, so no square is
    fitted again. When they do not (here their dice are made unreadable once), the squares are fitted again,
    each with all the others in place, and read."""
    dice = [die((150 + i * (SIDE + 1), 220), value, 3) for i, value in enumerate((5, 2, 6))]
    image = scene(dice)
    refits: list[int] = []  # the refitting passes of each split fitted
    real_fit, real_sizes, real_read = _fit_squares, _split_sizes, DiceReader._read_squares

    def recording(blob: Any, side: float, count: int, *rest: Any) -> Any:
        refits.append(rest[1] if len(rest) > 1 else SPLIT_REFITS)
        return real_fit(blob, side, count, *rest)

    def three_of_one_size(*args: Any) -> Any:  # one size of die only: each fitting is that split's
        return [size for size in real_sizes(*args) if size[0] == 3][:1]

    reads: list[int] = []

    def unreadable_once(self: DiceReader, *args: Any) -> Any:
        reads.append(len(args[1]))
        return "die 1: made unreadable" if len(reads) == 1 else real_read(self, *args)

    with (
        patch("drivers.dice.reader._fit_squares", recording),
        patch("drivers.dice.reader._split_sizes", three_of_one_size),
    ):
        result = reader.read(image)
        assert result.readable and result.values == (5, 2, 6), result
        assert refits == [0], refits
        refits.clear()
        with patch.object(DiceReader, "_read_squares", unreadable_once):
            result = reader.read(image)
    assert result.readable and result.values == (5, 2, 6), result
    assert SPLIT_REFITS >= 1 and refits == [0, SPLIT_REFITS] and reads == [3, 3], (refits, reads)


@pytest.mark.parametrize("glint", [3, 4, 6])
def test_glints_open_no_window_to_look_for_dice_in(reader: DiceReader, glint: int) -> None:
    """Where dice may be is found in the tray shrunk to a die of about 12 px: glints up to a tenth of a die
    wide show there as specks a pixel or two wide, which are no place a die may be. Each die opens one
    window, and 25 glints about them none."""
    dice = [die((150, 200), 3), die((320, 260), 4, 20), die((500, 150), 6, 35)]
    image = scene(dice)
    rng = np.random.default_rng(glint)
    glints = 0
    while glints < 25:
        x, y = int(rng.integers(10, 620)), int(rng.integers(10, 460))
        if min(math.dist((x, y), spec["centre"]) for spec in dice) > SIDE + 10:
            image[y : y + glint, x : x + glint] = 240
            glints += 1
    windows: list[tuple[int, ...]] = []
    real_regions = DiceReader._regions

    def recording(self: DiceReader, lab: Any, background: Any) -> Any:
        windows.append(lab.shape)
        return real_regions(self, lab, background)

    with patch.object(DiceReader, "_regions", recording):
        result = reader.read(image)
    assert result.readable and result.values == (3, 4, 6), result
    assert len(windows) == 3, windows


def test_a_blob_s_pip_responses_are_cut_for_each_die_only_where_they_hold_it() -> None:
    """The responses worked out for a blob are cut for a die (as a copy: the die's reading masks it) only
    where they hold the die's whole window and were worked out with the die's kernel."""
    dark = np.arange(60 * 80, dtype=np.uint32).reshape(60, 80).astype(np.uint8)
    responses = PipResponses((10, 20), 21, {"dark": dark})
    cut = responses.cut("dark", (15, 25, 45, 50), 21)
    assert cut is not None and np.array_equal(cut, dark[5:30, 5:35])
    cut[:] = 0
    assert dark[5:30, 5:35].any()  # a copy
    assert responses.cut("dark", (10, 20, 90, 80), 21) is not None  # the whole part
    assert responses.cut("dark", (9, 25, 45, 50), 21) is None  # left of it
    assert responses.cut("dark", (15, 25, 91, 50), 21) is None  # right of it
    assert responses.cut("dark", (15, 25, 45, 81), 21) is None  # below it
    assert responses.cut("dark", (15, 25, 45, 50), 19) is None  # another kernel
    assert responses.cut("light", (15, 25, 45, 50), 21) is None  # not worked out


def test_touching_dice_read_with_their_blob_s_responses_read_as_with_their_own(reader: DiceReader) -> None:
    """Each die split from a blob is read from the blob's pip responses, cut for it: here it reads as it
    does with the responses of its own window (more of the view around a die's window changes no pip in
    it; `bench/DICE.md` has the same check on the benchmark's sets)."""
    dice = [die((150 + i * (SIDE + 1), 220), value, 3) for i, value in enumerate((5, 2, 6))]
    image = scene(dice)
    shared = reader.read(image)
    with patch.object(PipResponses, "cut", lambda *args: None):
        own = reader.read(image)
    assert shared.readable and shared.values == (5, 2, 6), shared
    assert shared == own
    cuts: list[bool] = []
    real_cut = PipResponses.cut

    def recording(self: PipResponses, *args: Any) -> Any:
        cut = real_cut(self, *args)
        cuts.append(cut is not None)
        return cut

    with patch.object(PipResponses, "cut", recording):
        reader.read(image)
    # two sizes of dice are tried here: most dice are read from their blob's responses (a die whose kernel
    # differs from its blob's by its rounded side reads from its own)
    assert cuts.count(True) >= 3, cuts


def test_a_split_that_leaves_a_pip_unexplained_is_refused(reader: DiceReader) -> None:
    """Two dice side by side and a third pip-like mark on the seam between them: each die alone may read,
    but the mark is on no die's face."""
    dice = [die((150, 200), 2), die((150 + SIDE + 1, 200), 4), die((450, 300), 6, 20)]
    image = scene(dice)
    cv2.circle(image, (round(150 + SIDE / 2 + 0.5), 200), round(0.085 * SIDE), (30, 26, 24), -1, cv2.LINE_AA)
    result = reader.read(image)
    assert not result.readable and result.reason == "touching", result


def test_the_pips_check_works_out_marks_shapes_only_when_one_lies_off_the_pips(reader: DiceReader) -> None:
    """The check that every pip-like mark of a split blob is a pip of a die read passes over the marks' shapes
    and colours (a pass over the blob's pixels) when every mark of a pip's size lies on a pip read; a mark
    off them is still judged, and refuses the split."""
    judged: list[str] = []

    def recording(*args: Any) -> Any:
        judged.append(sys._getframe(1).f_code.co_name)  # the function that asked
        return _blob_statistics(*args)

    touching = [die((150, 200), 2), die((150 + SIDE + 1, 200), 4), die((450, 300), 6, 20)]
    with patch("drivers.dice.reader._blob_statistics", recording):
        result = reader.read(scene(touching))
        assert result.readable and sorted(result.values) == [2, 4, 6], result
        assert "_unexplained_pips" not in judged and "_face_from_response" in judged
        image = scene(touching)
        cv2.circle(
            image, (round(150 + SIDE / 2 + 0.5), 200), round(0.085 * SIDE), (30, 26, 24), -1, cv2.LINE_AA
        )
        result = reader.read(image)
    assert not result.readable and result.reason == "touching", result
    assert "_unexplained_pips" in judged


def test_a_split_into_dice_of_the_wrong_size_is_refused(reader: DiceReader) -> None:
    """An oblong blob one and a half dice long is no number of dice of the calibrated size."""
    image = scene([die((450, 300), 6, 20)])
    cv2.rectangle(image, (100, 170), (100 + round(1.5 * SIDE), 170 + round(SIDE)), IVORY, -1)
    result = reader.read(image, expect=2)
    assert not result.readable, result


@given(st.integers(0, 2**32 - 1))
def test_a_square_is_centred_on_the_blob_s_pixels_it_holds_nearest_it(seed: int) -> None:
    """Against the plain way: pixel by pixel, its nearest square (the first of equals), whether it lies in
    that square (its own axes), and each square's mean of those (unmoved when they are under half a die)."""
    rng = np.random.default_rng(seed)
    height, width = (int(size) for size in rng.integers(4, 90, 2))
    blob = (rng.random((height, width)) < rng.random()).astype(np.uint8)
    assume(blob.any())
    side = float(rng.uniform(3, 40))
    squares = [
        (float(rng.uniform(0, width)), float(rng.uniform(0, height)), float(rng.uniform(0, 90)), 0.9)
        for _ in range(int(rng.integers(1, 5)))
    ]
    held: list[list[tuple[int, int]]] = [[] for _ in squares]
    for y, x in zip(*np.nonzero(blob), strict=True):
        distances = [(x - sx) ** 2 + (y - sy) ** 2 for sx, sy, _, _ in squares]
        index = distances.index(min(distances))
        sx, sy, angle, _ = squares[index]
        t = math.radians(angle)
        u = (x - sx) * math.cos(t) + (y - sy) * math.sin(t)
        v = -(x - sx) * math.sin(t) + (y - sy) * math.cos(t)
        if abs(u) <= side / 2 and abs(v) <= side / 2:
            held[index].append((int(x), int(y)))
    moved = _centred(blob, side, squares)
    for (x, y, angle, share), pixels, (mx, my, m_angle, m_share) in zip(squares, held, moved, strict=True):
        assert (m_angle, m_share) == (angle, share)
        if len(pixels) < 0.5 * side * side:
            assert (mx, my) == (x, y)
        else:
            assert mx == pytest.approx(sum(p[0] for p in pixels) / len(pixels), abs=1e-9)
            assert my == pytest.approx(sum(p[1] for p in pixels) / len(pixels), abs=1e-9)


def test_a_die_s_outline_is_a_square_with_rounded_corners() -> None:
    """Unturned, its outline spans the side both ways, each corner an arc of `corner` sides about a centre
    that far in from both edges; turned and slanted, it is that outline turned about its centre."""
    side, corner = 40.0, 0.12
    outline = rounded_square((100.0, 50.0), side, 0.0, corner)
    assert outline.shape == (28, 2)
    assert np.allclose(outline.min(axis=0), (80.0, 30.0)) and np.allclose(outline.max(axis=0), (120.0, 70.0))
    radius = side * corner
    for arc, (sx, sy) in zip(outline.reshape(4, 7, 2), ((1, 1), (-1, 1), (-1, -1), (1, -1)), strict=True):
        centre = (100.0 + sx * (side / 2 - radius), 50.0 + sy * (side / 2 - radius))
        assert np.allclose(np.hypot(arc[:, 0] - centre[0], arc[:, 1] - centre[1]), radius)
    turned = rounded_square((100.0, 50.0), side, 30.0, corner, slant=0.5)
    t = math.radians(30.0)
    flat = (outline - (100.0, 50.0)) * (1.0, 0.5)
    expected = flat @ np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]]).T + (100.0, 50.0)
    assert np.allclose(turned, expected)


def test_fitting_squares_to_touching_dice_masks() -> None:
    side = 40.0
    blob = np.zeros((80, 140), np.uint8)
    blob[20:60, 10:50] = 1
    blob[20:60, 50:90] = 1
    split = _fit_squares(blob, side, 2)
    assert not isinstance(split, str), split
    centres = sorted((round(x), round(y)) for x, y, _ in split.squares)
    assert all(math.dist(a, b) <= 2 for a, b in zip(centres, [(30, 40), (70, 40)], strict=True)), centres
    # the masks of the squares, drawn to check the split, come with it: the squares cover the blob, and
    # their cores (without the soft outline) lie within them
    assert np.count_nonzero(split.on_squares & blob) >= 0.95 * np.count_nonzero(blob)
    assert not np.any(split.cores & (split.on_squares == 0))
    assert 0.6 < np.count_nonzero(split.cores) / np.count_nonzero(split.on_squares) < 0.8
    assert isinstance(_fit_squares(blob, side, 3), str)  # three dice of 40 px do not make it
    l_shape = blob.copy()
    l_shape[60:80, 50:90] = 0
    l_shape = np.pad(l_shape, ((0, 40), (0, 0)))
    l_shape[60:100, 50:90] = 1
    fitted = _fit_squares(l_shape, side, 3)
    assert not isinstance(fitted, str), fitted
    oblong = np.zeros((80, 140), np.uint8)
    oblong[20:60, 10:70] = 1  # one and a half dice
    assert isinstance(_fit_squares(oblong, side, 2), str)


def test_every_die_but_the_last_placed_is_fitted_again_with_the_others_in_place() -> None:
    """Three dice in an L: after one square each (each with those before it in place), the first two are
    fitted again with all the others in place; the last was placed with them all already."""
    side = 40.0
    blob = np.zeros((120, 140), np.uint8)
    blob[20:60, 10:50] = 1
    blob[20:60, 50:90] = 1
    blob[60:100, 50:90] = 1
    calls: list[tuple[int, float | None]] = []  # (squares in place, the turn searched about) of each fit

    def recording(small: Any, small_side: float, others: Any, near: float | None = None) -> Any:
        calls.append((len(others), near))
        return _fit_square(small, small_side, others, near)

    with patch("drivers.dice.reader._fit_square", recording):
        fitted = _fit_squares(blob, side, 3)
    assert not isinstance(fitted, str), fitted
    placed = [others for others, near in calls if near is None]
    refitted = [others for others, near in calls if near is not None]
    assert placed == [0, 1, 2] and refitted == [2, 2], calls


def test_a_die_s_square_is_found_halfway_between_the_coarse_turns() -> None:
    """A die turned halfway between two coarse turns is found at its own turn; a refit (about a known turn)
    tries that turn and the two halfway to its neighbours, nothing more."""
    side = 40.0
    blob = _turned_square((120, 120), (60.0, 60.0), side, 12.5)
    found = _fit_square(blob, side, [])
    assert not isinstance(found, str), found
    assert found[2] % 90.0 == 12.5 and found[3] > 0.95, found
    turns: list[Any] = []
    real_warp = cv2.warpAffine

    def recording(source: Any, matrix: Any, *args: Any, **kwargs: Any) -> Any:
        turns.append(round(math.degrees(math.atan2(matrix[1][0], matrix[0][0])), 6))
        return real_warp(source, matrix, *args, **kwargs)

    with patch("drivers.dice.reader.cv2.warpAffine", recording):
        refit = _fit_square(blob, side, [], near=10.0)
    assert not isinstance(refit, str) and refit[2] == 12.5, refit
    assert sorted(turns) == [7.5, 10.0, 12.5], turns


def _turned_square(
    shape: tuple[int, int], centre: tuple[float, float], side: float, angle: float
) -> np.ndarray:
    mask = np.zeros(shape, np.uint8)
    corners = cv2.boxPoints((centre, (side, side), angle))
    cv2.fillConvexPoly(mask, np.round(corners).astype(np.int32), 1)
    return mask


@pytest.mark.parametrize("angle", [0.0, 12.0, 27.0, 41.0, 63.0, 88.0])
def test_the_outline_about_a_corner_gives_the_die_s_turn(angle: float) -> None:
    side = 40.0
    blob = _turned_square((120, 120), (60.0, 60.0), side, angle)
    corner = cv2.boxPoints(((60.0, 60.0), (side, side), angle))[0]
    found, dominance = _outline_angle(blob, float(corner[0]), float(corner[1]), side)
    # folded onto 0-90 both ways round (a square is the same turned by 90 degrees)
    error = min(abs(found - angle % 90.0), 90.0 - abs(found - angle % 90.0))
    assert error <= 2.5, (found, angle)
    assert dominance > 0.4
    # the turns tried first hold the die's own, on the search's grid
    assert any(
        min(abs(turn - angle % 90.0), 90.0 - abs(turn - angle % 90.0)) <= 2.5
        for turn in _coarse_turns(blob, float(corner[0]), float(corner[1]), side)
    )


def test_a_round_outline_has_no_turn_and_every_turn_is_tried() -> None:
    disc = np.zeros((120, 120), np.uint8)
    cv2.circle(disc, (60, 60), 30, 1, cv2.FILLED)
    _, dominance = _outline_angle(disc, 90.0, 60.0, 40.0)
    assert dominance < 0.4
    assert len(_coarse_turns(disc, 90.0, 60.0, 40.0)) == 18


@pytest.mark.parametrize("seed", range(12))
def test_the_square_found_from_the_outline_is_the_one_every_turn_finds(seed: int) -> None:
    """Two touching dice at random turns: the search that starts at the outline's angle finds the same
    square as the search of every turn (the outline only says where to start)."""
    rng = np.random.default_rng(seed)
    side = float(rng.uniform(30, 50))
    first = float(rng.uniform(0, 90))
    second = float(rng.uniform(0, 90))
    blob = _turned_square((160, 220), (70.0, 80.0), side, first)
    # the second die against the first, along x
    gap = side * (0.5 * (abs(math.cos(math.radians(first))) + abs(math.sin(math.radians(first)))))
    gap += side * (0.5 * (abs(math.cos(math.radians(second))) + abs(math.sin(math.radians(second)))))
    blob |= _turned_square(blob.shape, (70.0 + gap - 2.0, 80.0), side, second)
    narrowed = _fit_square(blob, side, [])
    every = np.arange(0.0, 90.0, 5.0).tolist()
    with patch("drivers.dice.reader._coarse_turns", lambda *args: every):
        full = _fit_square(blob, side, [])
    assert not isinstance(narrowed, str) and not isinstance(full, str)
    assert narrowed[3] >= full[3] - 0.02, (narrowed, full)  # as much on the blob
    assert math.dist(narrowed[:2], full[:2]) <= 2.0, (narrowed, full)


def test_a_blank_die_coloured_blob_is_no_die_once_every_expected_die_is_read(reader: DiceReader) -> None:
    """Every face of a die has a pip: a die-coloured blob with no pip-like mark in it (a cup, a key, a
    sleeve in view) is no die of the table when the expected dice are all read; reading any number of dice
    it may be a die whose pips were missed, so the frame is refused."""
    image = scene(THREE)
    image[380:440, 300:360] = IVORY  # a die's size, no pips
    result = reader.read(image, expect=3)
    assert result.readable and result.values == (2, 5, 6), result
    assert not reader.read(image, expect=4).readable
    assert not reader.read(image, expect=None).readable


def test_a_sliver_beside_the_dice_is_named_but_is_not_the_frames_reason(reader: DiceReader) -> None:
    """A ragged sliver of die colour (a cable, a shadow's edge) is not convex, which once made the whole
    frame "touching". No die makes it: the refusal names it, but its reason and count are the dice's."""
    image = scene(THREE[:2])
    cv2.line(image, (450, 350), (500, 350), IVORY, 6)
    cv2.line(image, (500, 350), (500, 320), IVORY, 6)
    refused = reader.read(image, expect=3)
    assert isinstance(refused, DiceRefusal) and refused.reason == "count", refused
    assert refused.detail.startswith("2 dice found, 3 expected"), refused.detail
    assert [d.value for d in refused.dice] == [2, 5, None]
    # reading any number of dice, nothing says it is no die half hidden: it still refuses, on its own
    assert not reader.read(image, expect=None).readable


def test_one_die_with_something_thin_against_it_is_judged_as_one_die(reader: DiceReader) -> None:
    """A blob of one die's pixels cannot be two dice, however ragged its outline: it is judged as one die
    (here not square from above), never refused as touching dice, and never read as two."""
    image = scene(THREE)
    for start, end in (((340, 262), (392, 262)), ((392, 262), (392, 215))):
        cv2.line(image, start, end, IVORY, 4)
    result = reader.read(image, expect=3)
    assert isinstance(result, DiceRefusal) and result.reason == "cocked", result
    assert [d.value for d in result.dice] == [2, None, 6]
    assert "touching" not in result.detail


def test_two_small_dice_edge_to_edge_not_read_as_one_die_are_split(reader: DiceReader) -> None:
    """Two dice a little smaller than the usual one, edge to edge, make fewer pixels than one and a half
    usual dice: the blob is judged as one die first (an oblong: cocked), and, not read so, tried as two.
    Dice smaller than the calibration's dice (drawn 54-66 px) by more than the split's margin are no dice of
    this table: not split, the blob is refused."""
    for fraction, readable in ((0.86, True), (0.8, False)):
        side = SIDE * fraction
        pair = [die((300, 240), 3, 0, side=side), die((300 + side, 240), 5, 0, side=side)]
        result = reader.read(scene([*pair, die((480, 330), 6, 20)]), expect=3)
        assert result.readable == readable, (fraction, result)
        if readable:
            assert result.values == (3, 5, 6), result


def test_a_blurred_image_is_refused(reader: DiceReader) -> None:
    for blurred in (
        cv2.GaussianBlur(scene(THREE), (0, 0), 3),
        cv2.blur(scene(THREE), (9, 1)),
    ):  # focus, motion
        result = reader.read(blurred)
        assert not result.readable
        assert reasons(result) == ["blurred"] * 3
        assert result.reason == "blurred"
        assert result.detail == "die 1: blurred; die 2: blurred; die 3: blurred"


def test_a_die_with_seven_pips_is_refused(reader: DiceReader) -> None:
    seven = die((150, 200), 6, 10, pips=(*FACES[6], (0, 0)))
    result = reader.read(scene([seven, THREE[1], THREE[2]]))
    assert not result.readable
    assert reasons(result) == ["pip count 7", "", ""]
    assert result.dice[0].pips == 7 and result.dice[0].value is None and result.dice[0].confidence == 0.0
    assert [d.value for d in result.dice[1:]] == [5, 6]


@pytest.mark.parametrize(("value", "into"), [(2, 3), (4, 5)])
def test_a_smudge_where_a_pip_would_make_another_face_is_no_pip(
    reader: DiceReader, value: int, into: int
) -> None:
    """A pip-coloured round mark at the centre of a 2 (a 4), where a 3 (a 5) has a pip, of up to half a
    pip's area: never read as the other face; the frame is refused. (Measured once on these scenes: refused
    up to 0.6 of a pip's area, read as a pip from 0.7: the pips' sizes must differ by at most the
    calibrated spread, 1.5 times, and at this size a mark of most of a pip cannot be told from one.)"""
    rng = np.random.default_rng(value)
    for share in (0.2, 0.3, 0.4, 0.5):
        for trial in range(3):
            angle, side = float(rng.uniform(0, 90)), float(rng.uniform(50, 70))
            marked = die((160, 220), value, angle, side, marks=[(0, 0, share)])
            result = reader.read(scene([marked, THREE[1], THREE[2]], seed=trial))
            assert not result.readable, (share, trial, result.values)
            assert result.dice[0].value != into


@pytest.mark.parametrize(
    ("pips", "why"),
    [
        (((-1, -1), (0, 0), (1, -1)), "3 pips not in a legal pattern"),  # a V, not a diagonal
        (((-1, 0), (1, 0)), "2 pips not on a face diagonal"),  # a 2 along an edge
        (((-1, -1), (1, -1), (-1, 1), (1, 1), (0, 1)), "5 pips not in a legal pattern"),
        (
            ((-1, -1), (1, -1), (-1, 1), (1, 1), (0, 0), (0, 1)),
            "6 pips not in a legal pattern",
        ),  # a 5 and one more
    ],
)
def test_illegal_pip_patterns_are_refused(reader: DiceReader, pips: Pips, why: str) -> None:
    rows_of_three = reader.read(scene([die((160, 120), 6, 20 + 90)], size=(320, 240)), expect=1)
    assert rows_of_three.values == (6,)  # a 6 turned a quarter is still a 6 (its rows are columns)
    result = reader.read(scene([die((160, 120), 1, 20, pips=pips)], size=(320, 240)), expect=1)
    assert not result.readable
    assert reasons(result) == [why]


def test_only_two_dice_is_refused(reader: DiceReader) -> None:
    result = reader.read(scene(THREE[:2]))
    assert not result.readable and result.values is None
    assert result.reason == "count" and result.detail == "2 dice found, 3 expected"
    assert [d.value for d in result.dice] == [2, 5]  # both read, the count is what is wrong


def test_four_dice_is_refused(reader: DiceReader) -> None:
    result = reader.read(scene([*THREE, die((320, 420), 1, 5)]))
    assert not result.readable and result.reason == "count" and result.detail == "4 dice found, 3 expected"


def test_no_dice_at_all(reader: DiceReader) -> None:
    empty = scene([])
    assert reader.read(empty).detail == "0 dice found, 3 expected"
    assert reader.read(empty, expect=None).detail == "no dice found"
    assert reader.read(empty, expect=None).reason == "count"


def test_a_die_cut_by_the_edge_of_the_view_is_refused(reader: DiceReader) -> None:
    result = reader.read(scene([*THREE[:2], die((630, 300), 4, 10)]))
    assert not result.readable
    assert reasons(result) == ["", "", "at the edge of the view"]


def test_something_cut_by_the_edge_is_no_die_once_every_expected_die_is_read(reader: DiceReader) -> None:
    """A die-coloured blob cut by the edge of the view (a rim, a shadow, the desk beyond a view without a
    tray): with the expected number of dice read whole, it is no die of the table; otherwise it may be one."""
    image = scene(THREE)
    image[150:330, 600:] = IVORY  # not die-shaped, and cut by the right edge
    result = reader.read(image, expect=3)
    assert result.readable and result.values == (2, 5, 6), result
    assert len(result.dice) == 3
    for expect in (None, 4):  # any number of dice, or one more than read: the blob may be a die
        refused = reader.read(image, expect=expect)
        assert isinstance(refused, DiceRefusal) and refused.reason == "edge", (expect, refused)
    # one of the expected dice at the edge: fewer read than expected
    cut = reader.read(scene([*THREE[:2], die((630, 300), 4, 10)]), expect=3)
    assert isinstance(cut, DiceRefusal) and cut.reason == "edge", cut


def test_a_die_too_large_or_too_small_is_refused(reader: DiceReader) -> None:
    # a stacked die is nearer the camera, so larger; a die half under another is smaller
    large = reader.read(scene([die((320, 240), 5, 10, side=SIDE * 1.3)]), expect=1)
    assert large.dice[0].reason.startswith("die too large") and large.dice[0].reason.endswith("stacked")
    assert large.reason == "stacked"
    small = reader.read(scene([die((320, 240), 5, 10, side=SIDE * 0.6)]), expect=1)
    assert small.dice[0].reason.startswith("die too small")


def test_a_squashed_die_is_cocked(reader: DiceReader) -> None:
    image = scene([die((320, 240), 4, 0)])
    squashed = cv2.resize(image, (640, 300), interpolation=cv2.INTER_AREA)  # seen from a slant
    result = reader.read(squashed, expect=1)
    assert not result.readable
    assert "cocked" in result.dice[0].reason and result.reason == "cocked"


def test_a_faint_extra_mark_on_a_face_is_refused(reader: DiceReader) -> None:
    # a 4 whose centre shows a faint grey mark: a 5 with a worn pip? Not guessed.
    image = scene([die((160, 120), 4, 0)], size=(320, 240))
    cv2.circle(image, (160, 120), 5, (150, 150, 150), -1, cv2.LINE_AA)
    result = reader.read(image, expect=1)
    assert not result.readable and result.dice[0].value is None


@pytest.mark.parametrize(
    "image",
    [
        None,
        "image",
        np.zeros((0, 0, 3), np.uint8),
        np.zeros((40, 40, 3), np.float32),
        np.zeros((4, 4, 2), np.uint8),
    ],
    ids=["none", "text", "empty", "float", "two-channel"],
)
def test_what_is_not_an_image_is_refused_not_raised(reader: DiceReader, image: Any) -> None:
    result = reader.read(image)
    assert result == DiceRefusal("image", "not a colour or grey image")


def test_a_roi_outside_the_image_is_refused(calibration: DiceCalibration) -> None:
    reader = DiceReader(calibration.model_copy(update={"roi": (1000, 1000, 50, 50)}))
    refusal = reader.read(scene(THREE))
    assert refusal.reason == "image" and refusal.detail == "the calibrated tray area is outside the image"


def test_the_roi_limits_where_dice_are_looked_for(calibration: DiceCalibration) -> None:
    reader = DiceReader(calibration.model_copy(update={"roi": (0, 0, 400, 480)}))
    result = reader.read(scene([*THREE[:2], die((560, 240), 3)]), expect=2)
    assert result.values == (2, 5)  # the third die is outside the tray area


# --- synthetic: never a confident wrong reading -----------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.integers(1, 6),
    angle=st.floats(0, 90),
    side=st.floats(40, 85),
    x=st.floats(70, 250),
    y=st.floats(70, 170),
    blur=st.one_of(st.just(0.0), st.floats(0.3, 3.0)),
    gain=st.floats(0.6, 1.25),
    mark=st.one_of(
        st.none(),
        # a smudge anywhere on or near the die, clearly darker than the die (25-70% of its lightness)
        st.tuples(st.floats(-0.6, 0.6), st.floats(-0.6, 0.6), st.floats(0.03, 0.12), st.floats(0.25, 0.7)),
        # a pip-dark dot between the pip places (a dark dot ON a pip place would make another legal face)
        st.tuples(
            st.sampled_from([-1.5, -0.5, 0.5, 1.5]).map(lambda u: u * PIP_SPACING),
            st.sampled_from([-1.5, -0.5, 0.5, 1.5]).map(lambda u: u * PIP_SPACING),
            st.floats(0.04, 0.09),
            st.floats(0.08, 0.25),
        ),
    ),
    seed=st.integers(0, 1000),
)
def test_never_a_confident_wrong_value(
    reader: DiceReader,
    value: int,
    angle: float,
    side: float,
    x: float,
    y: float,
    blur: float,
    gain: float,
    mark: tuple[float, float, float, float] | None,
    seed: int,
) -> None:
    """Any turn, place, size, focus, exposure, a stray mark on or near the die: read right, or refused."""
    if mark is not None and value in (2, 4):
        dx, dy, radius, darkness = mark
        # a smudge as dark and as large as a pip on the centre of a 2 or a 4 IS a 3 or a 5 to any eye (found
        # by this test: a 2 with such a dot read as 3); the second strategy keeps dots off pip places too.
        # Judged on the circle as drawn, its radius rounded to the pixel: 0.0625 of a 56 px die draws the
        # same 4 px dot as 0.07 does (found by this test too: that 2 read as 3, by the reader before as well)
        drawn = max(1, round(radius * side))
        assume(not (abs(dx) < 0.1 and abs(dy) < 0.1 and drawn >= round(0.07 * side) and darkness <= 0.4))
    image = scene([die((x, y), value, angle, side)], size=(320, 240), seed=seed)
    if blur:
        image = cv2.GaussianBlur(image, (0, 0), blur)
    image = np.clip(image.astype(np.float32) * gain, 0, 255).astype(np.uint8)
    if mark is not None:
        dx, dy, radius, darkness = mark
        ox, oy = rotation(angle) @ np.array([dx, dy]) * side
        centre = (round(x + ox), round(y + oy))
        grey = round(darkness * IVORY[0] * gain)
        cv2.circle(image, centre, max(1, round(radius * side)), (grey, grey, grey), -1, cv2.LINE_AA)
    result = reader.read(image, expect=1)
    if result.readable:
        assert result.values == (value,)
    else:
        assert result.values is None and result.reason


def test_plain_faces_over_sizes_and_angles_are_mostly_read(reader: DiceReader) -> None:
    """The counterpart of the property above: refusing everything would pass it; this bounds the refusals."""
    outcomes: Counter[str] = Counter()
    rng = np.random.default_rng(3)
    for index in range(60):
        value, angle, side = index % 6 + 1, rng.uniform(0, 90), rng.uniform(54, 66)
        result = reader.read(
            scene([die((160, 120), value, angle, side)], size=(320, 240), seed=index), expect=1
        )
        outcomes["right" if result.values == (value,) else "refused" if not result.readable else "wrong"] += 1
    assert outcomes["wrong"] == 0
    assert outcomes["right"] >= 57, outcomes


# --- real photographs ------------------------------------------------------------------------------------


def real_data(name: str) -> Path:
    folder = DATA / name
    if not (folder / "images").is_dir():
        message = f"the real dice photos are not at {folder} (the repository is checked out next to shared/)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return folder


@pytest.mark.slow
def test_real_webcam_photos_no_confident_wrong_reading() -> None:
    """matteop65 (white dice, webcam at a slant): calibrated on frames 0-11 of each `train_*` sequence, read
    on frames 30-39 (far from the calibration frames, so no near-duplicates)."""
    folder = real_data("matteop65")
    examples = load_yolo_folder(folder / "images", folder / "labels", "pips")

    def frame(name: str) -> int:
        match = re.fullmatch(r"train_[a-z]+_(\d+)\.jpg", name)
        return int(match.group(1)) if match else -1

    fitting = [e for e in examples if 0 <= frame(e.name) < 12]
    held_out = [e for e in examples if 30 <= frame(e.name) < 40]
    assert len(fitting) == 66 and len(held_out) == 60
    calibration = calibrate(fitting)
    reader = DiceReader(calibration)
    side = float(np.median([s for s in (d.die_side() for e in fitting for d in e.dice) if s is not None]))
    outcomes: Counter[str] = Counter()
    for example in held_out:
        image = example.load()
        for labelled_die in example.dice:
            value = crop_reading(reader, image, labelled_die.centre, side)
            outcomes[
                "unreadable" if value is None else "right" if value == labelled_die.value else "wrong"
            ] += 1
    total = sum(outcomes.values())
    assert total == 231
    assert outcomes["wrong"] == 0, outcomes
    assert outcomes["right"] >= 0.75 * total, outcomes  # measured: 199 of 231 (86%), read at scale 0.66


# --- the fast measurements against plain numpy ----------------------------------------------------------


def test_histogram_percentiles_are_numpys() -> None:
    rng = np.random.default_rng(3)
    for size in (1, 2, 7, 400):
        image = rng.integers(0, 256, (size, 3, 3), dtype=np.uint8)
        mask = (rng.random((size, 3)) < 0.7).astype(np.uint8)
        mask[0, 0] = 1
        for channel in range(3):
            values = image[:, :, channel][mask > 0]
            expected = np.percentile(values, (2.0, 50.0, 98.0, 99.5))
            got = _histogram_percentiles(image, channel, mask, (2.0, 50.0, 98.0, 99.5))
            assert np.allclose(got, expected), (size, channel, got, expected)


def test_components_are_opencvs_default() -> None:
    """The connected components by the faster algorithm: the default's labels, statistics and centroids."""
    rng = np.random.default_rng(8)
    for trial in range(300):
        height, width = (int(side) for side in rng.integers(1, 200, 2))
        if trial % 2:
            mask = (rng.random((height, width)) < rng.random()).astype(np.uint8)
        else:  # blobs, as pips and dice are
            noise = rng.random((height, width)).astype(np.float32)
            mask = (cv2.GaussianBlur(noise, (0, 0), float(rng.uniform(0.5, 4.0))) > 0.5).astype(np.uint8)
        expected = cv2.connectedComponentsWithStats(mask, connectivity=8)
        got = _components(mask)
        assert got[0] == expected[0]
        for ours, theirs in zip(got[1:], expected[1:], strict=True):
            assert np.array_equal(ours, theirs, equal_nan=ours.dtype.kind == "f")


@pytest.mark.parametrize(
    "operation",
    [
        cv2.MORPH_ERODE,
        cv2.MORPH_DILATE,
        cv2.MORPH_OPEN,
        cv2.MORPH_CLOSE,
        cv2.MORPH_BLACKHAT,
        cv2.MORPH_TOPHAT,
    ],
)
def test_morphology_on_widened_rows_is_opencvs(operation: int) -> None:
    """Each operation with the rows widened to whole SIMD blocks: OpenCV's pixels, border included, on masks
    and grey windows of every width about the block's, even and odd discs, and views of a larger image."""
    rng = np.random.default_rng(operation)
    for trial in range(150):
        height, width = int(rng.integers(1, 90)), int(rng.integers(1, 140))
        if trial % 3 == 0:
            image = (rng.random((height, width)) < rng.random()).astype(np.uint8)
        else:
            image = rng.integers(0, 256, (height, width + 7), dtype=np.uint8)[:, 3 : 3 + width]
        kernel = _disc(int(rng.integers(1, 26)))
        expected = cv2.morphologyEx(image, operation, kernel)
        assert np.array_equal(_morphed(image, operation, kernel), expected), (trial, height, width)


@given(
    st.integers(1, 300),
    st.integers(1, 300),
    st.floats(0.2, 1.6),
    st.sampled_from([(), (3,), (4,)]),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_area_resize_is_opencvs(
    height: int, width: int, scale: float, channels: tuple[int, ...], view: bool, seed: int
) -> None:
    """A resize by area (`_area_resized`, in float32 where it shrinks by a ratio not whole on both axes):
    OpenCV's 8-bit pixels, for every ratio, whole halvings and enlarging included, of images and of views
    of a larger one."""
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, (height, width + 5, *channels), dtype=np.uint8)
    image = image[:, 2 : 2 + width] if view else np.ascontiguousarray(image[:, :width])
    if rng.random() < 0.2:  # whole ratios: OpenCV's fast path for halvings and the like
        whole = int(rng.integers(1, 5))
        size = (max(1, width // whole), max(1, height // whole))
    else:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
    expected = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    got = _area_resized(image, size)
    assert got.dtype == np.uint8 and np.array_equal(got, expected), (image.shape, size)


def _plain_empty_level(
    response: np.ndarray,
    inner: np.ndarray,
    origin: tuple[int, int],
    matrix: np.ndarray,
    translation: np.ndarray,
    pips: np.ndarray,
    face: tuple[tuple[int, int], ...],
    pip_radius: float,
    pip_level: float,
) -> tuple[float, float, bool]:
    """`_empty_level` written plainly: every pixel of the window, the grid by a matrix product."""
    shift = translation - np.array(origin, np.float64)
    places = np.rint(np.array(GRID_PLACES, np.float64) @ matrix.T + shift).astype(int)
    height, width = inner.shape
    for x, y in places:
        if not (0 <= x < width and 0 <= y < height and inner[y, x]):
            return math.inf, math.inf, True
    if np.linalg.det(matrix) == 0.0:
        return math.inf, math.inf, True
    size = max(3, round(pip_radius)) | 1
    smooth = cv2.blur(response, (size, size))
    level = max(pip_level, 1e-6)
    empty = [
        smooth[max(0, y - 1) : y + 2, max(0, x - 1) : x + 2].max()
        for (x, y), place in zip(places, GRID_PLACES, strict=True)
        if place not in face
    ]
    empty_level = float(max(empty)) / level if empty else 0.0
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    grid = np.linalg.inv(matrix) @ np.stack([xs.ravel() - shift[0], ys.ravel() - shift[1]])
    on_face = (np.abs(grid) <= 1.35).all(axis=0).reshape(height, width) & (inner > 0)
    for px, py in pips - np.array(origin, np.float64):
        on_face &= (xs - px) ** 2 + (ys - py) ** 2 > (1.6 * pip_radius) ** 2
    clutter = float(smooth[on_face].max()) / level if on_face.any() else 0.0
    return empty_level, max(clutter, empty_level), False


GRID_PLACES = [(x, y) for y in (-1, 0, 1) for x in (-1, 0, 1)]


@given(st.sampled_from(range(1, 7)), st.integers(0, 2**32 - 1))
def test_clean_face_check_is_the_plain_one(value: int, seed: int) -> None:
    """The clean-face check (`_empty_level`: the strongest mark at an empty grid place, and anywhere on the
    face off the pips), worked out on the face's box in Python floats: the plain computation's values, for
    faces turned, slanted, off the window's edge and off the die."""
    rng = np.random.default_rng(seed)
    height, width = (int(side) for side in rng.integers(30, 80, 2))
    response = rng.integers(0, 256, (height, width), dtype=np.uint8).astype(np.float32)
    # the die: a disc about the window's centre (a grid place beyond it is off the die)
    ys, xs = np.mgrid[0:height, 0:width]
    reach = rng.uniform(0.4, 0.8) * min(height, width)
    inner = ((xs - width / 2) ** 2 + (ys - height / 2) ** 2 <= reach**2).astype(np.uint8)
    angle, unit = rng.uniform(0, math.tau), rng.uniform(0.08, 0.3) * min(height, width)
    slant = rng.uniform(0.8, 1.0)
    cos, sin = math.cos(angle), math.sin(angle)
    matrix = unit * np.array([[cos, -sin * slant], [sin, cos]])
    origin = (int(rng.integers(0, 50)), int(rng.integers(0, 50)))
    centre = rng.normal((width / 2, height / 2), min(height, width) / 10)
    translation = np.array(origin, np.float64) + centre
    face = FACES[value]
    pips = translation + np.array(face, np.float64) @ matrix.T + rng.normal(0, 0.5, (value, 2))
    pip_radius, pip_level = rng.uniform(1.0, 5.0), rng.uniform(10.0, 200.0)
    arguments = (response, inner, origin, matrix, translation, pips, face, pip_radius, pip_level)
    assert _empty_level(*arguments) == _plain_empty_level(*arguments)


@given(
    st.integers(1, 400),
    st.sampled_from([(), (1,), (3,)]),
    st.integers(0, 2**32 - 1),
)
def test_felt_median_is_numpys(count: int, channels: tuple[int, ...], seed: int) -> None:
    """The felt's colour: numpy's median cast to uint8, for odd and even counts (the mean of two middle
    values rounded down) of one or three channels, narrow or full ranges of values."""
    rng = np.random.default_rng(seed)
    low = int(rng.integers(0, 256))
    samples = rng.integers(low, min(256, low + int(rng.integers(1, 257))), (count, *channels), dtype=np.uint8)
    expected = np.median(samples, axis=0).astype(np.uint8)
    got = _median_uint8(samples)
    assert got.dtype == np.uint8 and np.array_equal(got, expected)


@given(st.sampled_from([(), (3,)]), st.integers(0, 2**32 - 1))
def test_a_round_tray_s_windows_are_the_painted_tray_s(channels: tuple[int, ...], seed: int) -> None:
    """A round tray painted: outside the circle the median of the felt along the inside of its rim (worked
    out here with numpy), inside it the image; and a window painted on its own is that part of the whole
    painted, to the pixel: windows inside the circle, across its rim and wholly outside it."""
    rng = np.random.default_rng(seed)
    height, width = (int(size) for size in rng.integers(8, 120, 2))
    image = rng.integers(0, 256, (height, width, *channels), dtype=np.uint8)
    origin = (int(rng.integers(0, 50)), int(rng.integers(0, 50)))
    circle = (
        origin[0] + float(rng.uniform(0, width)),
        origin[1] + float(rng.uniform(0, height)),
        float(rng.uniform(3, max(height, width))),
    )
    ys, xs = np.mgrid[0:height, 0:width]
    distance2 = (xs + origin[0] - circle[0]) ** 2 + (ys + origin[1] - circle[1]) ** 2
    inside = distance2 <= circle[2] ** 2
    rim = inside & (distance2 > (0.96 * circle[2]) ** 2) & ((xs + ys) % 7 == 0)
    expected = image.copy()
    if rim.any():
        expected[~inside] = np.median(image[rim], axis=0).astype(np.uint8)
    tray = RoundTray(image, circle, origin)
    whole = tray.painted()
    assert np.array_equal(whole, expected)
    assert np.array_equal(outside_as_felt(image, circle, origin), expected)
    for _ in range(20):
        top, bottom = sorted(int(value) for value in rng.choice(height + 1, 2, replace=False))
        left, right = sorted(int(value) for value in rng.choice(width + 1, 2, replace=False))
        assert np.array_equal(tray.window(top, bottom, left, right), whole[top:bottom, left:right])


@pytest.mark.parametrize(
    ("height", "width", "circle"),
    [
        (6, 33_000, (32_768.0, 2.5, 40.0)),  # an image too wide: its rim on both sides of column 32767
        (2_200, 2_200, (1_100.0, 1_100.0, 1_050.0)),  # more rim samples than a map may have rows
    ],
)
def test_a_round_tray_too_large_for_opencv_s_remap_finds_its_felt_the_same(
    height: int, width: int, circle: tuple[float, float, float]
) -> None:
    """The rim's sample is picked by OpenCV's remap, which takes no image, nor map, with a side of 32767
    pixels or more: there it is picked by numpy, and the felt is the median of the same pixels, with no
    error."""
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    ys, xs = np.ogrid[0:height, 0:width]
    distance2 = (xs - circle[0]) ** 2 + (ys - circle[1]) ** 2
    rim = (distance2 <= circle[2] ** 2) & (distance2 > (0.96 * circle[2]) ** 2) & ((xs + ys) % 7 == 0)
    assert width > 32_767 or np.count_nonzero(rim) > 32_767
    tray = RoundTray(image, circle, (0, 0))
    assert tray.felt is not None
    assert np.array_equal(tray.felt, np.median(image[rim], axis=0).astype(np.uint8))


@pytest.mark.parametrize("factor", [2.0, 5.4, 7.9])
def test_a_round_tray_shrunk_is_painted_where_it_averages_the_outside(factor: float) -> None:
    """The tray shrunk to find dice (`_shrink`), then painted: a pixel keeps what it averaged only where every
    pixel it averaged lies inside the circle; every other one is the felt, none a mix of the two."""
    height, width = 300, 340
    origin = (10, 20)
    circle = (origin[0] + 170.3, origin[1] + 148.6, 131.0)
    ys, xs = np.mgrid[0:height, 0:width]
    outside = (xs + origin[0] - circle[0]) ** 2 + (ys + origin[1] - circle[1]) ** 2 > circle[2] ** 2
    image = np.where(outside, 250, 0).astype(np.uint8)[:, :, None].repeat(3, axis=2)
    image[:, :, 1] = 90  # a channel alike inside and outside, for the felt's colour
    tray = RoundTray(image, circle, origin)
    assert tray.felt is not None and tray.felt.tolist() == [0, 90, 0]  # the rim's inside
    shrunk, scale = _shrink(image, factor)
    painted, painted_scale = tray.shrunk(factor)
    assert painted_scale == scale and painted.shape == shrunk.shape
    kept = np.all(painted == shrunk, axis=2)
    # kept: nothing of the outside in it; painted: the felt; and most of the circle's inside is kept
    assert np.all(painted[kept][:, 0] == 0)
    assert np.all(painted[~kept] == tray.felt)
    wholly_inside = shrunk[:, :, 0] == 0
    assert np.count_nonzero(kept & wholly_inside) >= 0.9 * np.count_nonzero(wholly_inside) > 200 / factor
    # a pixel averaged across the rim (neither all outside nor all inside) is painted, not a mix
    across = (shrunk[:, :, 0] > 0) & (shrunk[:, :, 0] < 250)
    assert np.any(across) and np.all(painted[across] == tray.felt)


@given(st.sampled_from([0.0, 1.0, 0.5]), st.integers(0, 2**32 - 1))
def test_a_pixel_s_distance_from_the_background_is_the_plain_sum_of_squares(weight: float, seed: int) -> None:
    """Each pixel's squared Lab distance from the background, darker counting `weight` as much: what the
    plain float arithmetic gives, to the bit, for OpenCV's way (weights 0 and 1) as for numpy's."""
    rng = np.random.default_rng(seed)
    height, width = (int(size) for size in rng.integers(1, 90, 2))
    lab = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    background = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    diff = lab.astype(np.float64) - background.astype(np.float64)
    lightness = np.where(diff[:, :, 0] > 0, diff[:, :, 0], diff[:, :, 0] * weight)
    expected = lightness**2 + diff[:, :, 1] ** 2 + diff[:, :, 2] ** 2
    got = _die_distance2(lab, background, weight)
    assert got.shape == (height, width) and got.dtype == np.float32
    assert np.array_equal(got.astype(np.float64), expected)


def test_a_blob_is_tried_as_the_dice_that_fill_it() -> None:
    """The numbers and sides of dice a blob is tried as: at the side that shares the blob's area, and at the
    usual side unless that is within 3% of it; never fewer dice than fill enough of the blob, nor sides
    outside the table's."""
    usual, sides = 40.0, (36.0, 44.0)
    assert _split_sizes(3 * (0.98 * usual) ** 2, usual, sides) == [(3, pytest.approx(0.98 * usual))]
    three_touching = 3 * (0.96 * usual) ** 2  # touching dice's outlines overlap: the blob is smaller
    assert _split_sizes(three_touching, usual, sides) == [(3, pytest.approx(0.96 * usual)), (3, usual)]
    two_with_gaps = 2 * usual**2 / 0.85
    assert _split_sizes(two_with_gaps, usual, sides) == [
        (2, pytest.approx(usual / math.sqrt(0.85))),
        (2, usual),
    ]
    # three dice of the usual side, tightly together: not two of that side (they would fill 0.7 of it)
    assert all(count == 3 for count, _ in _split_sizes(2.85 * usual**2, usual, sides))
    assert _split_sizes(2 * (0.85 * usual) ** 2, usual, sides) == []  # two dice smaller than the table's


def test_nonzero_is_numpys() -> None:
    rng = np.random.default_rng(9)
    for trial in range(200):
        height, width = (int(side) for side in rng.integers(1, 120, 2))
        labels = (rng.random((height, width)) < rng.random() * (trial % 4 > 0)).astype(np.int32)
        labels *= rng.integers(1, 50, (height, width), dtype=np.int32)
        xs, ys = _nonzero(labels)
        expected_ys, expected_xs = np.nonzero(labels)
        assert np.array_equal(xs, expected_xs) and np.array_equal(ys, expected_ys)


def test_blob_statistics_are_each_blobs_own() -> None:
    rng = np.random.default_rng(4)
    binary = (rng.random((40, 50)) < 0.3).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(binary, connectivity=8)
    response = rng.random((40, 50)).astype(np.float32)
    colours = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    areas = stats[:, cv2.CC_STAT_AREA].astype(np.float64)
    roundness, levels, blob_colours = _blob_statistics(labels, count, areas, response, colours)
    for index in range(1, count):
        ys, xs = np.nonzero(labels == index)
        if xs.size >= 3:
            covariance = np.cov(np.vstack([xs, ys]).astype(np.float64)) + np.eye(2) / 12.0
            low, high = np.linalg.eigvalsh(covariance)
            assert roundness[index] == pytest.approx(math.sqrt(max(low, 0.0) / high), abs=1e-9)
        else:
            assert roundness[index] == 1.0
        assert levels[index] == pytest.approx(float(response[ys, xs].astype(np.float64).mean()))
        assert np.allclose(blob_colours[index], colours[ys, xs].mean(axis=0))


def test_the_affine_fit_is_the_least_squares_fit_of_the_best_pairing() -> None:
    """Against a plain least-squares fit of every pairing of pips with grid places, one at a time."""
    rng = np.random.default_rng(5)
    for value in (4, 5, 6):
        face = FACES[value]
        canonical = np.array(face, np.float64)
        for _ in range(5):
            matrix = rng.normal(0, 10, (2, 2))
            points = canonical[rng.permutation(value)] @ matrix.T + rng.normal(0, 1.5, (value, 2)) + 40
            observed = points - points.mean(axis=0)
            best = math.inf
            for pairing in itertools.permutations(range(value)):
                placed = canonical[list(pairing)]
                fitted, *_ = np.linalg.lstsq(placed, observed, rcond=None)  # observed = placed @ fitted
                residual = observed - placed @ fitted
                unit = math.sqrt(max(abs(np.linalg.det(fitted)), 1e-9))
                best = min(best, math.sqrt((residual**2).sum(axis=1).mean()) / unit)
            _, centre, error = _fit_face(points, face)
            assert error == pytest.approx(best, rel=1e-9, abs=1e-12)
            assert np.allclose(centre, points.mean(axis=0))


def test_singular_ratio_is_numpys() -> None:
    rng = np.random.default_rng(6)
    for matrix in [
        *rng.normal(0, 5, (50, 2, 2)),
        np.eye(2),
        np.zeros((2, 2)),
        np.array([[1.0, 2.0], [2.0, 4.0]]),
    ]:
        singular = np.linalg.svd(matrix, compute_uv=False)
        expected = singular[1] / singular[0] if singular[0] > 0 else 0.0
        assert _singular_ratio(matrix) == pytest.approx(expected, abs=1e-9)


def test_merged_windows_do_not_overlap_and_cover_every_box() -> None:
    rng = np.random.default_rng(8)
    for _ in range(50):
        boxes = []
        for _ in range(int(rng.integers(0, 9))):
            left, top = int(rng.integers(0, 100)), int(rng.integers(0, 100))
            boxes.append((left, top, left + int(rng.integers(1, 30)), top + int(rng.integers(1, 30))))
        merged = _merged(boxes)
        for a, b in itertools.combinations(merged, 2):
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
        for box in boxes:
            assert any(
                m[0] <= box[0] and m[1] <= box[1] and box[2] <= m[2] and box[3] <= m[3] for m in merged
            )


def test_a_lone_pip_beside_a_nearly_round_mark_that_makes_another_face_is_ambiguous(
    reader: DiceReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The case of a real photo: a 2 whose second pip was a little too flat to count read as a 1 (the die's
    outline took in a side face, so the lone pip sat at its centre). When the pips, that mark counted, lie
    where another face's would, either may be right: the die is refused. Otherwise the 1 is read."""
    image = scene([die((320, 240), 1, 20)])
    view = reader.view(image)
    assert not isinstance(view, str)
    (region,) = reader.find_dice(view.lab)
    (one,) = [m for m in reader.measure_face(view.lab, region) if m.value == 1]
    lone = one.pips[0]
    flat = PipBlob(
        (lone.centre[0] + 20, lone.centre[1] + 20), lone.area, 0.9 * reader.calibration.min_pip_roundness, 80
    )
    one.strays = [flat]
    two = FaceMeasure(polarity=one.polarity, pips=[lone, flat], near_pips=1, value=2)
    monkeypatch.setattr(
        reader,
        "measure_face",
        lambda lab, measured, *, doubts=False, responses=None: [one, two] if doubts else [one],
    )
    for fits, expected in ((True, None), (False, 1)):
        monkeypatch.setattr(reader, "pattern_fits", lambda measure, fits=fits: fits)
        reading = reader.read_region(view.lab, region, view)
        assert reading.value == expected, (fits, reading)
        if expected is None:
            assert reading.reason == "ambiguous: could be 1/2"


def test_a_pattern_fits_where_the_pips_lie_as_a_face_s(reader: DiceReader) -> None:
    image = scene([die((320, 240), 2, 20), die((480, 240), 1, 0)])
    view = reader.view(image)
    assert not isinstance(view, str)
    two_region, one_region = sorted(reader.find_dice(view.lab), key=lambda r: r.centre[0])
    (two,) = [m for m in reader.measure_face(view.lab, two_region) if m.value == 2]
    assert reader.pattern_fits(two)
    (one,) = [m for m in reader.measure_face(view.lab, one_region) if m.value == 1]
    assert not reader.pattern_fits(one)  # a lone pip has no pattern
    # one pip of the 2 moved a third of the way to the other: no face's pattern
    moved = FaceMeasure(polarity=two.polarity, pips=list(two.pips))
    a, b = (np.array(pip.centre) for pip in two.pips)
    moved.pips[1] = PipBlob(tuple(b + (a - b) / 3), two.pips[1].area, 1.0, two.pips[1].level)
    empty = np.zeros((1, 1), np.float32)
    reader._measure_pattern(moved, empty, np.zeros((1, 1), np.uint8), two_region, (0, 0))
    assert not reader.pattern_fits(moved)
