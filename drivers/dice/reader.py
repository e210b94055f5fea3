"""Reading the dice from one camera image, with classical image processing only (OpenCV, numpy).

Pure: an image in, a `DiceResult` out; no camera, no clock, no files. All thresholds come from a
`DiceCalibration`, fitted from labelled photographs of the table's own dice (`calibration.dice`).

Method, in the order the checks run:

1. Dice are segmented against the background: the background colour is estimated locally (a coarse median
   filter, so that uneven light does not matter) and a pixel belongs to a die when its Lab colour is far
   enough from it. Specks are removed; each blob's convex hull is the die (pips are not die-coloured).
2. Each blob is checked as a die: cut by the edge of the view; touching another die (twice a die's area, or
   at least 1.5 dice's pixels and not convex once pip-sized notches are closed, or as oblong as two dice
   edge to edge; fewer pixels make one die, however ragged its outline: it is judged as one); too large (a
   stacked die is nearer the camera) or too small (partly hidden); not square from above (cocked).
3. Inside a die, pips are the small blobs that differ from the die's own lightness (black-hat for dark pips,
   top-hat for light ones, so shading across the die does not matter); a pip must have a pip's size and be
   round. Seen at an angle a die shows pips of its side faces too: the outermost pips are tried left out
   one by one, and a left-out pip must then lie off the fitted face. If two different values fit: refused;
   so too when a mark a little too flat to be a pip, counted as one, puts the pips where another face's
   pips would be.
4. The pips must form the legal pattern of a face 1-6: their centres are fitted to the canonical 3x3 pip grid
   of that face, over every pairing (similarity for 2-3 pips, affine for 4-6, so a face seen slightly from
   the side still fits). The fit error must be small; the grid must have this face's size relative to the
   die (a design spaces its 6 pips tighter than its 4: a 6 with two pips missed is no 4), be centred on the
   die and not be squashed (a tilted face is a cocked die); 2 and 3 pips must lie on a face diagonal; the
   pips of one face must be alike in size and colour (glare and marbling are not).
5. Every grid position the face leaves empty must BE empty (a pip too faint to be found still leaves a mark:
   a 6 must not read as 4, a 5 as 4, a 3 as 2), and the rest of the face must be clean.
6. The die must be sharp (Laplacian spread over the die relative to its contrast): a blurred image is refused.
   (This is judged first: blur explains pips not found, or smeared together.) A die refused for another
   reason and much less sharp than the calibration's dice (`BLUR_EVIDENCE`) is reported as blurred too.

Before step 1 the frame is cut to the calibrated tray region (`roi`); the dice are read at the calibrated
`scale` (a die about 48 px wide). For speed, where dice may be is found first in the tray shrunk to a die of
about 12 px, against a lower contrast than step 1's (so that no blob step 1 would find is missed); steps 1-6
then run in a window around each such place only, cut on the pixel grid the whole tray would have at
`scale` (if a blob reaches a window's side that is not the tray's, the whole tray is segmented instead).
Boxes and pip centres in the results are in the frame's own pixels.

A blob cut by the edge of the tray region is not read (it may be a die partly out of view); it refuses the
frame unless the expected number of dice were all read whole, when it cannot be one of them. A blob no whole
die's shape makes (`no_die_makes`: a speck, a sliver) inside the view is named in a refusal, but the
refusal's reason and count are the dice's: a cable's ragged outline does not make a frame "touching".

Touching dice (`split_touching`): a blob refused in step 2 as touching (or, ragged or oblong, not read as
one die) is tried as 2-7 dice of one size (the blob's area shared among them, or the calibrated die's side),
each a square fitted to the blob (`_fit_squares`), each then read by steps 3-6 as a die alone in its square
(the squares as first placed; fitted again, each with all the others in place, only when those do not
explain the blob and its dice). The split is accepted only when it explains every edge (each square on the
blob, no die overlapping another, nothing of the blob left over but its soft outline) and every pip (every
pip-like mark on the dice is a pip of a die read), and when no other number or size of dice explains the
blob with other values; else the blob is refused as touching, with why.
Dice against the rim (`off_the_rim`): in a blob at the edge of the view, the parts left once everything
narrower than half a die is taken away, wholly inside the view, are read the same way; only dice read count.
A round tray (`tray_circle`, a shaker's dome) is read with everything outside its circle painted as the felt
along its rim.

Public API (see also `drivers.dice` and `drivers.dice.table`):

    DiceReader(calibration).read(frame, expect=3) -> AcceptedDice | DiceRefusal
    AcceptedDice(values, dice, confidence, roi, frame)      # .total
    DiceRefusal(reason: RefusalReason, detail, dice, roi, frame)
    DieReading(value, confidence, box, pips, reason, problem, pip_centres)

A calibration of another version than `CALIBRATION_VERSION` is refused when it is loaded (fit it again).

A die is read only when every check passes; its confidence is the smallest remaining margin of the checks
(1 = every measurement in the middle of its calibrated range, 0 = one of them at its limit), and it must reach
the calibrated minimum. The result is readable only when every die is read and the count is the expected one.
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
import sys
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import cv2
import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field, field_validator

CALIBRATION_KIND = "tablectl.calibration.dice"
CALIBRATION_VERSION = 2  # 2: `scale` and `max_pips_left_out`; version 1 files must be fitted again
#: a die refused for any reason and less sharp than this fraction of the calibration's median is reported as
#: blurred: a diagnosis only (the limit that refuses is `min_sharpness`); a die smeared in one direction
#: (still moving) keeps about 60% of its sharpness by this measure
BLUR_EVIDENCE = 0.7

Box = tuple[int, int, int, int]  # x, y, w, h in the image
Pixels = NDArray[Any]  # an image or a mask; OpenCV's own typing of its results is looser than numpy's
Polarity = Literal["dark", "light", "any"]

# The canonical pip grid of a face: positions (x, y) in {-1, 0, 1}^2, pips of a face at their usual places.
GRID: tuple[tuple[int, int], ...] = tuple((x, y) for y in (-1, 0, 1) for x in (-1, 0, 1))
FACES: dict[int, tuple[tuple[int, int], ...]] = {
    1: ((0, 0),),
    2: ((-1, -1), (1, 1)),
    3: ((-1, -1), (0, 0), (1, 1)),
    4: ((-1, -1), (1, -1), (-1, 1), (1, 1)),
    5: ((-1, -1), (1, -1), (0, 0), (-1, 1), (1, 1)),
    6: ((-1, -1), (-1, 0), (-1, 1), (1, -1), (1, 0), (1, 1)),
}
PIP_SPACING_LEAST = 0.2  # a pip grid unit is at least this many die sides on any die (usually 0.25-0.3)
CLEAN_FACE_EXTENT = 1.35  # checked for stray marks up to here: inside the face even when seen at an angle
# the face reaches about 1.6-1.8 grid units from its centre; marks inside 1.5 are on it
FACE_HALF_EXTENT = 1.5
NOISE_SIDE_FRACTION = 0.45  # blobs smaller than this fraction of the smallest die are specks, not dice
TOUCHING_AREA_RATIO = 1.8  # a blob this many times a usual die's area is two dice (a stacked die: ~1.3)
SIDE_BY_SIDE_ASPECT = 1.75  # an oblong this long (and large enough for two) is two dice edge to edge
ONE_DIE_MOST = 1.5  # a blob of less than this many usual dice is at most one die: two make twice its area
NO_DIE_AREA = 0.5  # a blob smaller than this many usual dice is no die (a die half hidden is refused anyway)
NO_DIE_ASPECT = 3.5  # nor is a sliver this oblong (three dice in a row make 3) of less than two dice's area
# a pip-sized mark at least this fraction of the least pip roundness is nearly a pip: a reading that it would
# make another legal face is doubted (refused as ambiguous)
NEAR_PIP_ROUNDNESS = 0.8
MAX_PIPS_LEFT_OUT = 6  # side-face pips tried away from the top face (a die seen at an angle shows 2 sides)
# Where the dice are is found in the tray shrunk so that a die is about this wide (a die is then ~150 pixels,
# not ~2,300); each die is then segmented and read in a window around it at the calibrated scale only
LOCATE_SIDE_PX = 12.0
BACKGROUND_SIDE_PX = 6.0  # the background is estimated with a die about this wide
# a place is looked at when it is this fraction of the die contrast away from the background: below the
# reader's own threshold, so that every blob the reader would find lies in a window (more windows cost time,
# never a reading)
LOCATE_CONTRAST_FRACTION = 0.6
# a window reaches this many die sides beyond what was located: room for the reader's own margin around a
# die (0.15 sides) and its smoothing
WINDOW_MARGIN_SIDES = 0.2
MAX_GRID_STEP = 16  # view pixels a window may grow by on each side to be sampled exactly as the whole view
# Touching dice: a blob refused as touching is tried as 2 to `SPLIT_MOST_DICE` dice of one size (its area
# shared among them), each a square fitted where it covers the blob best; every die is then read alone
SPLIT_MOST_DICE = 7
# a blob at the edge of the view is looked into once parts narrower than this many die sides are taken away
# (the rim; its own die keeps its square, with its corners rounded)
RIM_OPENING = 0.5
SPLIT_ANGLE_STEP = 5.0  # degrees between the turns tried for a die's square, before finer ones about the best
# a die's first square is searched at the turns within this many steps of the angle of the blob's outline
# about its corner, then turn by turn further while the best is at an end of those tried (the outline can
# mislead, as where dice touch): a few turns of the 18 on touching dice, and mostly the square a search of
# all 18 finds, the others about as good (bench/DICE.md: a one-off comparison, and what it changed in the
# readings)
SPLIT_TURNS_AROUND = 1
# the finer turns tried about the best coarse one, in coarse steps: halfway to its neighbours. Quarter steps
# as well, each about the best so far, took twice as long and read 6 fewer of the dome's 2,000 scenes
# (bench/DICE.md)
SPLIT_FINE_TURNS = (-0.5, 0.5)
SPLIT_OUTLINE_REACH = 0.5  # sides about the corner whose outline gives the die's angle
# every turn is tried when the outline's angle there is less dominant than this (0: no direction, 1: one):
# a ragged outline, or a corner where dice touch
SPLIT_OUTLINE_WEAK = 0.4
SPLIT_SQUARE_COVER = 0.85  # least share of a fitted square on the blob (its corners are rounded: ~0.98)
SPLIT_LEFT_OVER = 0.08  # most of the blob, in dice, that no fitted square covers (the seams, the outline)
SPLIT_OVERLAP = 0.05  # most a die may overlap another, in dice (dice do not pass through dice)
# a blob reaches past its dice by about this share of a side (soft edges, smoothing): a die's square fitted to
# the blob is that much larger than the die
SPLIT_OUTLINE = 0.15
# the squares' turns and places are searched at this scale (0.5: 1.4x as fast, and fewer dice read)
SPLIT_SEARCH_SCALE = 1.0
# passes fitting each die's square again with the others in place (the first pass not the last die's, which
# was placed with them all: refitting it too read no more, bench/DICE.md), made only when the squares as first
# placed do not explain the blob and its dice (most splits need none)
SPLIT_REFITS = 1
# sides of dice in one frame differ by less than this share (one camera; a webcam at a slant sees nearer dice
# larger: at 0.12 one matteop65 photo of touching dice was no longer read)
SPLIT_SIZE_SPREAD = 0.2
# OpenCV's morphology is fastest on rows a whole number of this many bytes long (its widest SIMD registers)
MORPHOLOGY_BLOCK = 32
ROUND_TRAY_MARGIN = 0.3  # die sides a round tray's view reaches past its circle's bounding box
# the least and most share of a blob that the n dice it is tried as fill (n side^2 / area): more where
# touching dice's soft outlines overlap, less where gaps between dice closer than a pip are filled. Every
# split read on the real and generated sets filled 0.80-1.15 of its blob; three touching dice tried as two
# of the usual side fill about 0.7 of theirs, a try that only costs time (bench/DICE.md)
SPLIT_FILL = (0.78, 1.15)
# a blob's dice are tried at the side that shares its area and at the usual side, unless these are this close
# (touching dice share 3-4% less than the usual side, and both are tried: at 0.05 the dome read 10 of 2000
# scenes fewer; bench/DICE.md)
SPLIT_SIDES_ALIKE = 0.03
SPLIT_CORNER = 0.12  # corner radius / side of the square a split die is read in (a die's corners are round)


Square = tuple[float, float, float, float]  # a split die's square: x, y, angle, its share on the blob
# the squares fitted to one blob, by side, the squares already placed and the turn searched about
FittedSquares = dict[tuple[float, tuple[Square, ...], float | None], Square | str]


@dataclass(frozen=True)
class SplitSquares:
    """The squares that explain a blob of touching dice (`_fit_squares`), and the masks of them its check
    drew, in the blob's pixels: where the squares lie, and their cores (without the blob's soft outline)."""

    squares: list[tuple[float, float, float]]  # x, y, angle of each die's square
    on_squares: Pixels
    cores: Pixels


class DiceCalibration(BaseModel):
    """Everything the reader needs to know about one camera and one type of dice. JSON-serialisable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @field_validator("version")
    @classmethod
    def _this_version(cls, value: int) -> int:
        if value != CALIBRATION_VERSION:
            raise ValueError(
                f"dice calibration version {value}; this tablectl reads version {CALIBRATION_VERSION}: "
                "fit it again with `tablectl calibrate dice`"
            )
        return value

    @field_validator("pip_unit_ratio", "min_face_aspect")
    @classmethod
    def _one_per_face(cls, value: tuple[object, ...]) -> tuple[object, ...]:
        if len(value) != 6:
            raise ValueError("one entry per face value 1-6")
        return value

    @field_validator("split_side_px")
    @classmethod
    def _a_range_of_sides(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        # a range no die fits would split no touching dice at all, with nothing said of why
        if value is not None and not 0.0 < value[0] <= value[1]:
            raise ValueError("the smallest side, more than 0, then the largest")
        return value

    kind: str = CALIBRATION_KIND
    version: int = CALIBRATION_VERSION
    created_utc: str = ""
    roi: tuple[int, int, int, int] | None = None  # x, y, w, h of the tray; None = the whole image
    # a round tray (a shaker's dome): its centre x, y and radius in the frame; what lies outside it (the
    # rim, the machine) is read as the felt next to it, so a die against the rim is a blob of its own
    tray_circle: tuple[float, float, float] | None = None
    # the tray is read resized by this factor (a die about `READ_SIDE_PX` wide: the pips stay several pixels
    # wide, the work shrinks with the square of it); every size in pixels below is at this scale
    scale: float = Field(default=1.0, gt=0.0, le=1.0)

    # dice against the background
    die_side_px: tuple[float, float] = (20.0, 120.0)  # accepted range of sqrt(die blob area)
    # the sides a blob of touching dice is tried as dice of (`split_touching`): the calibration's dice seen
    # alone, with a narrower margin than `die_side_px`'s. A table's camera sees one set of dice at one
    # distance, and every side tried is a hypothesis fitted and read: 3 dice make the area of 4 dice 0.87
    # times as wide, 2 dice of 1.22 times. None (a file fitted before this was kept): `die_side_px`.
    split_side_px: tuple[float, float] | None = None
    die_side_median: float = 50.0  # the usual die
    die_contrast: float = 20.0  # Lab distance from the local background that makes a pixel "die"
    shadow_weight: float = (
        0.0  # weight of "darker than the background" (0: dice are lighter; shadows ignored)
    )
    background_kernel_sides: float = 4.0  # the background median filter spans this many die sides
    max_die_aspect: float = 1.5  # long/short side of the blob's rotated rectangle
    min_die_solidity: float = 0.85  # blob area / convex hull area

    # pips
    pip_polarity: Polarity = "dark"
    pip_contrast: float = 25.0  # least black-hat/top-hat level of a pip (Lab L units, 0-255 scale)
    pip_area_ratio: tuple[float, float] = (0.004, 0.08)  # pip area / die blob area
    one_pip_area_ratio: tuple[float, float] = (0.004, 0.12)  # the same for the pip of a 1 (often larger)
    min_pip_roundness: float = 0.5  # minor/major axis of a pip
    max_pip_area_spread: float = 2.5  # largest/smallest pip of one face
    max_pip_colour_spread: float = 0.5  # pips of one face share a colour; glare and marbling do not

    # the face
    # pip grid unit (px) / die side (px), for a face of 1 (the grid assumed around its pip), 2, ..., 6 pips:
    # each design of dice spaces its 6 pips more tightly than its 4, so a 6 missing two pips is no 4
    pip_unit_ratio: tuple[tuple[float, float], ...] = ((0.18, 0.40),) * 6
    max_layout_error: float = 0.2  # rms distance of pips from their grid positions, in grid units
    # smaller/larger singular value of the fitted grid (1 = seen square-on), for 1, ..., 6 pips (1-3: 1)
    min_face_aspect: tuple[float, ...] = (0.7,) * 6
    max_diagonal_angle: float = 20.0  # degrees off the face diagonal allowed for 2 and 3 pips
    max_centre_offset: float = 0.2  # face centre from the die blob's centre, in die sides
    max_empty_level: float = 0.35  # mark at a grid position the face leaves empty, relative to the pips
    max_clutter_level: float = 0.5  # strongest mark anywhere else on the face, relative to the pips
    # pips tried left out as side-face pips (a camera at a slant sees side faces; straight above, none do)
    max_pips_left_out: int = Field(default=MAX_PIPS_LEFT_OUT, ge=0, le=MAX_PIPS_LEFT_OUT)

    # the image
    min_sharpness: float = 5.0  # Laplacian spread over the die / its contrast, x100 (see `_sharpness`)
    typical_sharpness: float = 10.0  # the calibration dice's median: a die this sharp has a full margin
    min_confidence: float = 0.1

    fitted_on: dict[str, Any] = Field(default_factory=dict)  # what the calibration was made from


#: Why a frame was not read (the dice are re-shaken), most basic first: what the flow may tell the dealer.
RefusalReason = Literal[
    "image",  # not an image, or the calibrated tray is not in it
    "moving",  # the dice were not still over the frames asked for
    "touching",  # two dice touch: one blob
    "stacked",  # a die on another (nearer the camera: too large), or one partly under another
    "cocked",  # a die leaning: not square from above, or its face tilted
    "edge",  # a die cut by the edge of the tray region
    "count",  # another number of dice than expected
    "blurred",  # the image is not sharp enough to read
    "unclear",  # pips not in a legal pattern, marks, too faint, ambiguous, low confidence
]
REFUSAL_ORDER: tuple[RefusalReason, ...] = (
    "image",
    "moving",
    "touching",
    "stacked",
    "cocked",
    "edge",
    "count",
    "blurred",
    "unclear",
)


@dataclass(frozen=True)
class DieReading:
    """One die: its value with the evidence, or why it could not be read. Coordinates are the frame's."""

    value: int | None  # 1-6; None = unreadable
    confidence: float  # 0..1: the smallest margin of every check (0 when unreadable)
    box: Box  # x, y, w, h of the die in the frame
    pips: int  # pips found on the face
    reason: str = ""  # "" when read; else why not, for a person
    problem: RefusalReason | None = None  # None when read; else the kind of refusal
    pip_centres: tuple[tuple[float, float], ...] = ()  # (x, y) of each pip of the value read

    @property
    def centre(self) -> tuple[float, float]:
        x, y, w, h = self.box
        return (x + w / 2, y + h / 2)


@dataclass(frozen=True)
class AcceptedDice:
    """A frame read: as many dice as expected, flat and apart, each read above the least confidence."""

    values: tuple[int, ...]  # left to right in the frame
    dice: tuple[DieReading, ...]  # the evidence, in the same order
    confidence: float  # the least confident die's
    roi: Box | None = None  # the tray region that was read (frame coordinates); None = the whole frame
    frame: str = ""  # the frame's capture file when it came from a captured `Frame` (an audit reference)

    readable = True
    reason = ""
    detail = ""

    @property
    def total(self) -> int:
        return sum(self.values)


@dataclass(frozen=True)
class DiceRefusal:
    """A frame not read: re-shake. `reason` is the kind; `detail` says what was seen (log, dealer)."""

    reason: RefusalReason
    detail: str
    dice: tuple[DieReading, ...] = ()  # what was found, read or not, left to right
    roi: Box | None = None
    frame: str = ""

    readable = False
    values = None


DiceResult = AcceptedDice | DiceRefusal


# --- internal measurements ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DieRegion:
    """One die-coloured blob: where it is and its shape."""

    box: Box
    mask: Pixels  # the blob's convex hull, filled, the size of `box`
    area: float
    centre: tuple[float, float]  # image coordinates
    angle: float  # degrees, of the blob's rotated rectangle
    aspect: float
    at_edge: bool
    # the blob as found (not its hull), for `solidity`; its area / the hull's is a lower bound of `solidity`
    contour: Pixels = field(repr=False, compare=False)
    notch: int  # pip-sized notches in the outline are closed before `solidity` is measured
    least_solidity: float

    @property
    def side(self) -> float:
        return math.sqrt(self.area)

    @functools.cached_property
    def solidity(self) -> float:
        """Blob area / convex hull area, once notches narrower than `notch` (pip-sized) are closed: pips on
        the rim (dark, so "not die") bite into a die's outline; the gap where two dice meet is wider. Measured
        only when asked (a closing per blob): a reading asks only when `least_solidity` is not enough."""
        x, y, w, h = self.box
        pad = self.notch
        blob = np.zeros((h + 2 * pad, w + 2 * pad), np.uint8)
        cv2.drawContours(blob, [self.contour - np.array([x - pad, y - pad], np.int32)], -1, 1, cv2.FILLED)
        closed = _morphed(blob, cv2.MORPH_CLOSE, _disc(pad))
        return min(1.0, cv2.countNonZero(closed) / self.area) if self.area > 0 else 0.0


@dataclass(frozen=True)
class PipBlob:
    centre: tuple[float, float]  # image coordinates
    area: float
    roundness: float
    level: float  # mean black-hat/top-hat response
    colour: tuple[float, float, float] = (0.0, 0.0, 0.0)  # mean Lab


@dataclass
class FaceMeasure:
    """Everything measured on one die for one pip polarity, before any acceptance threshold."""

    polarity: str
    pips: list[PipBlob] = field(default_factory=list)
    strays: list[PipBlob] = field(default_factory=list)  # marks that are not pips (size/shape)
    left_out: int = 0  # pips left out as side-face pips (they are among `strays`)
    near_pips: int = (
        0  # marks counted as pips though a little too flat (to doubt a reading, never to make one)
    )
    value: int | None = None  # pattern fitted to the pip count, if 1-6 pips
    layout_error: float = math.inf
    unit_ratio: float = 0.0
    face_aspect: float = 0.0
    diagonal_angle: float = 0.0
    centre_offset: float = math.inf
    empty_level: float = math.inf
    clutter_level: float = math.inf
    stray_on_face: bool = False
    off_die: bool = False
    pip_level: float = 0.0
    pip_area_spread: float = 1.0
    pip_area_range: tuple[float, float] = (0.0, 0.0)  # smallest and largest pip / die blob area
    colour_spread: float = 0.0  # how far the pips' colours are apart, relative to pip vs die colour
    sharpness: float = 0.0


@dataclass(frozen=True)
class PipResponses:
    """The black-hat (dark pips) and top-hat (light pips) of the lightness of a part of a view, with a disc
    `kernel` pixels wide: worked out once for a blob of touching dice, and cut for each die read in it (a
    die's own window would need the same work again on most of the same pixels)."""

    origin: tuple[int, int]  # the view coordinates of the part's top-left pixel
    kernel: int
    by_polarity: dict[str, Pixels]

    def cut(self, polarity: str, box: tuple[int, int, int, int], kernel: int) -> Pixels | None:
        """A copy of the response of `box` (left, top, right, bottom in the view), or None when the part does
        not hold it all or was worked out with another kernel."""
        response = self.by_polarity.get(polarity)
        left, top, right, bottom = box
        x0, y0 = left - self.origin[0], top - self.origin[1]
        if response is None or kernel != self.kernel or x0 < 0 or y0 < 0:
            return None
        if x0 + right - left > response.shape[1] or y0 + bottom - top > response.shape[0]:
            return None
        return response[y0 : y0 + bottom - top, x0 : x0 + right - left].copy()


# --- the reader -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    """What the reader works on: the tray region of a frame, resized by the calibration's scale, in Lab."""

    lab: Pixels
    origin: tuple[int, int] = (0, 0)  # the frame coordinates of the view's top-left pixel
    scale: float = 1.0  # view pixels per frame pixel

    def to_frame(self, point: tuple[float, float]) -> tuple[float, float]:
        return (point[0] / self.scale + self.origin[0], point[1] / self.scale + self.origin[1])

    def to_view(self, point: tuple[float, float]) -> tuple[float, float]:
        return ((point[0] - self.origin[0]) * self.scale, (point[1] - self.origin[1]) * self.scale)

    def box_to_frame(self, box: Box) -> Box:
        x, y, w, h = box
        left, top = self.to_frame((x, y))
        return (round(left), round(top), max(1, round(w / self.scale)), max(1, round(h / self.scale)))


class DiceReader:
    """Reads the dice of one camera frame with one calibration. Pure and thread-safe (no state per call)."""

    def __init__(self, calibration: DiceCalibration) -> None:
        self.calibration = calibration

    # public ---------------------------------------------------------------------------------------

    def read(
        self, frame: Any, expect: int | None = 3, *, whole_tray: bool = False
    ) -> AcceptedDice | DiceRefusal:
        """Read the dice of a frame: a `drivers.camera.Frame` or a BGR/grey uint8 image.

        `expect`: how many dice must lie in the tray (None: any number, at least one). Returns the values
        with their evidence, or a refusal with its reason; never raises for a bad image. `whole_tray`:
        segment the whole tray at once rather than a window per die (slower; what the windows are checked
        against)."""
        image = getattr(frame, "image", frame)
        reference = str(getattr(frame, "file", "") or "")
        located = self.locate(image, whole=whole_tray)
        if isinstance(located, str):
            return DiceRefusal("image", located, frame=reference)
        readings: list[DieReading] = []
        no_die: list[DieReading] = []  # blobs no die of this table makes: passed over like those at the edge
        not_dice: list[DieReading] = []  # of those, inside the view: not in a refusal's reason
        for view, region in located:
            if region.at_edge and not self.no_die_makes(region):
                # dice lying against the rim (or a bright band along it) are one blob with it
                readings.extend(self.off_the_rim(view.lab, region, view))
        first = [(view, region, self.read_region(view.lab, region, view)) for view, region in located]
        # the dice read alone say how large a die is in this frame: touching dice are split into dice of it
        alone = [region.side for _, region, reading in first if reading.value is not None]
        for view, region, reading in first:
            # a blob of one die's pixels, ragged or oblong, not read as one die may still be two small dice
            may_touch = reading.problem == "touching" or (
                reading.value is None and (self.ragged(region) or self.oblong(region))
            )
            if may_touch and not self.no_die_makes(region):
                split = self.split_touching(view.lab, region, view, alone)
                if isinstance(split, tuple):
                    readings.extend(split)
                    continue
                if split and reading.problem == "touching":
                    reading = replace(reading, reason=f"touching another die ({split})")
            if reading.value is None and self.no_die_makes(region) and not region.at_edge:
                not_dice.append(reading)  # (a die cut by the view's edge may show as any shape)
            if reading.value is None and (self.no_die_makes(region) or self.blank(view.lab, region)):
                no_die.append(reading)
            readings.append(reading)
        readings.sort(key=lambda reading: reading.box[0] + reading.box[2] / 2)
        return _combine(tuple(readings), expect, self.calibration.roi, reference, no_die, not_dice)

    def blank(self, lab: Pixels, region: DieRegion) -> bool:
        """Whether a blob of at most one die's size shows not one pip-like mark (with either polarity the
        calibration allows): every face of a die has one, so the blob is clutter of die colour (a key, a cup,
        a sleeve). A larger blob is not judged so: its pips are looked for at the scale of one die its size,
        so two touching dice's pips would look too small to be pips."""
        cal = self.calibration
        if region.side > cal.die_side_px[1]:
            return False
        return all(not measure.pips for measure in self.measure_face(lab, region))

    def no_die_makes(self, region: DieRegion) -> bool:
        """Whether no die (nor two or three touching) makes a blob of this shape: smaller than half a die, or
        a sliver longer than three dice in a row are for their width (a shadow, a rim, clutter in view)."""
        usual_area = self.calibration.die_side_median**2
        return region.area < NO_DIE_AREA * usual_area or (
            region.aspect >= NO_DIE_ASPECT and region.area < 2 * usual_area
        )

    def locate(self, image: object, *, whole: bool = False) -> list[tuple[View, DieRegion]] | str:
        """Every die-coloured blob of the tray with the view it was found in; or why the image has none.

        The tray is shrunk to find where dice may be (`LOCATE_SIDE_PX`); each place is then segmented by
        `find_dice` in a window of the tray at the calibrated scale, as the whole tray would be. A blob cut by
        a window's side (not the tray's) means the windows were too small for it: then the whole tray is
        segmented. `whole`: segment the whole tray at once (the reference the windows must agree with)."""
        tray = self._tray_cut(image, tray=True)
        if isinstance(tray, str):
            return tray
        pixels, origin, round_tray = tray
        cal = self.calibration
        frame_side = cal.die_side_median / cal.scale  # the usual die, in frame pixels
        if whole or frame_side < 2.0 * LOCATE_SIDE_PX or pixels.ndim not in (2, 3):
            return self._locate_whole(image)
        factor = frame_side / LOCATE_SIDE_PX
        # a round tray is painted once shrunk, not before (painting the whole cut took as long as the shrink)
        coarse, coarse_scale = _shrink(pixels, factor) if round_tray is None else round_tray.shrunk(factor)
        coarse_lab = to_lab(coarse)
        if coarse_lab is None:
            return "not a colour or grey image"
        background = self._background(coarse_lab, frame_side * coarse_scale)
        height, width = pixels.shape[:2]
        background_scale = background.shape[1] / width  # background pixels per frame pixel
        places = self._die_places(coarse_lab, background, coarse_scale)
        margin = WINDOW_MARGIN_SIDES * frame_side
        windows = _merged(
            [
                (
                    max(0, math.floor(x / coarse_scale - margin)),
                    max(0, math.floor(y / coarse_scale - margin)),
                    min(width, math.ceil((x + w) / coarse_scale + margin)),
                    min(height, math.ceil((y + h) / coarse_scale + margin)),
                )
                for x, y, w, h in places
            ]
        )
        # the whole tray's view, as `view` makes it: each window is cut on its grid
        view_width, view_height = max(1, round(width * cal.scale)), max(1, round(height * cal.scale))
        located: list[tuple[View, DieRegion]] = []
        for window in windows:
            left, right, view_left, view_right = _on_view_grid(window[0], window[2], width, view_width)
            top, bottom, view_top, view_bottom = _on_view_grid(window[1], window[3], height, view_height)
            part = (
                pixels[top:bottom, left:right]
                if round_tray is None
                else round_tray.window(top, bottom, left, right)
            )
            size = (view_right - view_left, view_bottom - view_top)
            if size != (right - left, bottom - top):
                part = _area_resized(part, size)
            lab = to_lab(part)
            if lab is None:
                return "not a colour or grey image"
            scale_x, scale_y = size[0] / (right - left), size[1] / (bottom - top)
            # the background at each window pixel, from the same estimate for the whole tray
            to_background = np.array(
                [
                    [background_scale / scale_x, 0.0, (left + 0.5 / scale_x) * background_scale - 0.5],
                    [0.0, background_scale / scale_y, (top + 0.5 / scale_y) * background_scale - 0.5],
                ]
            )
            window_background = cv2.warpAffine(
                background,
                to_background,
                size,
                flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                borderMode=cv2.BORDER_REPLICATE,
            )
            view = View(lab, (origin[0] + left, origin[1] + top), scale_x)
            tray_sides = (left == 0, top == 0, right == width, bottom == height)
            for region in self._regions(lab, window_background):
                if region.at_edge and _cut_inside(region, size, tray_sides):
                    return self._locate_whole(image)
                located.append((view, region))
        return located

    def _locate_whole(self, image: object) -> list[tuple[View, DieRegion]] | str:
        view = self.view(image)
        if isinstance(view, str):
            return view
        return [(view, region) for region in self.find_dice(view.lab)]

    def _die_places(self, lab: Pixels, background: Pixels, scale: float) -> list[Box]:
        """Boxes (in `lab`, the tray shrunk by `scale` from the frame) of everything that may be a die:
        further from the background than a fraction of the die contrast, and larger than a fraction of a
        speck the reader drops. Opened by 3 px once closed: a die is about 12 px across there, and glints,
        the felt's texture and noise that pass the lower contrast are specks and threads a pixel or two wide
        (each would be a window to segment)."""
        cal = self.calibration
        height, width = lab.shape[:2]
        near = cv2.resize(background, (width, height), interpolation=cv2.INTER_LINEAR)
        least = LOCATE_CONTRAST_FRACTION * cal.die_contrast
        far = _die_distance2(lab, near, cal.shadow_weight) > least**2
        mask = cv2.morphologyEx(far.astype(np.uint8), cv2.MORPH_CLOSE, _disc(3))
        mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, _disc(3))
        count, _, stats, _ = _components(mask)
        view_to_coarse = scale / cal.scale
        speck = (cal.die_side_px[0] * NOISE_SIDE_FRACTION * view_to_coarse) ** 2
        return [
            (
                int(stats[index, cv2.CC_STAT_LEFT]),
                int(stats[index, cv2.CC_STAT_TOP]),
                int(stats[index, cv2.CC_STAT_WIDTH]),
                int(stats[index, cv2.CC_STAT_HEIGHT]),
            )
            for index in range(1, count)
            if stats[index, cv2.CC_STAT_AREA] >= 0.25 * speck
        ]

    def view(self, image: object, *, tray: bool = True) -> View | str:
        """The part of `image` the reader reads (the calibrated tray unless `tray` is False), at the
        calibrated scale, in Lab; or why there is none."""
        cropped = self._tray(image, tray=tray)
        if isinstance(cropped, str):
            return cropped
        image, origin = cropped
        scale = self.calibration.scale
        if scale != 1.0 and image.ndim in (2, 3):
            width = image.shape[1]
            size = (max(1, round(width * scale)), max(1, round(image.shape[0] * scale)))
            image = _area_resized(image, size)
            scale = size[0] / width  # as resized, to the pixel
        lab = to_lab(image)
        if lab is None:
            return "not a colour or grey image"
        return View(lab, origin, scale)

    def _tray(self, image: object, *, tray: bool) -> tuple[Pixels, tuple[int, int]] | str:
        """The tray region of `image` (all of it unless `tray`) at the frame's scale, with its top-left
        corner in the frame, a round tray's outside painted as felt (`RoundTray`); or why there is none."""
        cut = self._tray_cut(image, tray=tray)
        if isinstance(cut, str):
            return cut
        pixels, origin, round_tray = cut
        return (pixels if round_tray is None else round_tray.painted()), origin

    def _tray_cut(
        self, image: object, *, tray: bool
    ) -> tuple[Pixels, tuple[int, int], RoundTray | None] | str:
        """`_tray`'s region as it is in `image` (a view of it, not painted), with the round tray to paint
        what is read of it when the calibration has one; or why there is none."""
        if not isinstance(image, np.ndarray) or image.size == 0 or image.dtype != np.uint8:
            return "not a colour or grey image"
        origin = (0, 0)
        roi = self.calibration.roi if tray else None
        circle = self.calibration.tray_circle if tray else None
        if roi is not None:
            x, y, w, h = roi
            if image.shape[0] < y + h or image.shape[1] < x + w:
                cut = image[y : y + h, x : x + w]
                if cut.size == 0:
                    return "the calibrated tray area is outside the image"
                return f"the image ({_size(cut)} from {x},{y}) does not hold the calibrated tray {w}x{h}"
            if circle is not None and image.ndim in (2, 3):
                # a round tray: nothing lies beyond its wall, so a die against it is whole; the view reaches a
                # little past the circle (painted as felt) so that such a die is not at the view's edge
                margin = math.ceil(
                    ROUND_TRAY_MARGIN * self.calibration.die_side_median / self.calibration.scale
                )
                x, y = max(0, x - margin), max(0, y - margin)
                w = min(image.shape[1], roi[0] + roi[2] + margin) - x
                h = min(image.shape[0], roi[1] + roi[3] + margin) - y
            image = image[y : y + h, x : x + w]
            origin = (x, y)
        if circle is not None and image.ndim in (2, 3):
            return image, origin, RoundTray(image, circle, origin)
        return image, origin, None

    def read_die_at(self, image: np.ndarray, point: tuple[float, float]) -> DieReading:
        """Read only the die under `point` (image coordinates), e.g. in a crop centred on one die.

        Other dice are ignored unless they touch this one, and the calibrated tray area is not applied.
        Nothing about the die's value is given away: the point only says which blob to read. For measuring
        and calibrating; the table reads whole frames with `read`."""
        view = self.view(image, tray=False)
        if isinstance(view, str):
            return DieReading(None, 0.0, (0, 0, 0, 0), 0, view, "image")
        regions = self.find_dice(view.lab)
        chosen = _region_at(regions, view.to_view(point))
        if chosen is None:
            box = (round(point[0]), round(point[1]), 0, 0)
            return DieReading(None, 0.0, box, 0, "no die there", "count")
        return self.read_region(view.lab, chosen, view)

    # touching dice --------------------------------------------------------------------------------

    def off_the_rim(self, lab: Pixels, region: DieRegion, view: View) -> list[DieReading]:
        """The dice read in a blob at the edge of the view, in the parts of it that lie wholly inside the view
        once everything narrower than half a die is taken away: dice against the tray's rim or the dome's (a
        thin band of die colour along the edge), alone or touching. Only dice read are returned: a part that
        is not read, whatever it is (a die unread, a bright band along the rim), stays part of the blob at
        the edge, which is passed over only when the expected dice are all read, so leaving a part out can
        only leave a die unread and the frame refused."""
        cal = self.calibration
        x, y, w, h = region.box
        blob = np.zeros((h, w), np.uint8)
        cv2.drawContours(blob, [region.contour - np.array([x, y], np.int32)], -1, 1, cv2.FILLED)
        opened = _morphed(blob, cv2.MORPH_OPEN, _disc(_odd(round(cal.die_side_median * RIM_OPENING))))
        contours, _ = cv2.findContours(opened, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        height, width = lab.shape[:2]
        read: list[DieReading] = []
        for contour in contours:
            part = _region(contour + np.array([x, y], np.int32), width, height, region.notch)
            px, py, pw, ph = part.box
            # inside the view: clear of its edge by a pixel (the rim the part was cut from lies between)
            if not (px > 1 and py > 1 and px + pw < width - 1 and py + ph < height - 1):
                continue
            problem = self.region_problem(part)
            if not problem:
                reading = self.read_region(lab, part, view)
                if reading.value is not None:
                    read.append(reading)
            elif problem.startswith("touching") and not self.no_die_makes(part):
                split = self.split_touching(lab, part, view)
                if isinstance(split, tuple):
                    read.extend(split)
        return read

    def split_touching(
        self, lab: Pixels, region: DieRegion, view: View, alone: list[float] | None = None
    ) -> tuple[DieReading, ...] | str:
        """The dice of a blob of two or more touching dice, each read as a die alone; or why not ("" when no
        number of dice of the calibrated size makes a blob of this area).

        For each number of dice n the blob's area allows (`_split_sizes`: a side sqrt(area / n), or the usual
        die's, within the calibrated sizes for splitting, `split_side_px`), n squares of that side are fitted
        (`_fit_squares`: as first placed, then, when those do not explain the blob and its dice, refitted).
        The split must explain every edge (each square on the blob, the squares apart, nothing of the blob
        left over) and every pip (each die read by `read_region`, as a die alone, and every pip-like mark of
        the blob a pip of a die read). Two splits that both explain the blob and read differently: refused."""
        cal = self.calibration
        low, high = cal.split_side_px or cal.die_side_px
        if alone:  # dice read alone in the same frame: these dice are their size (trying fewer sizes is safe)
            usual = statistics.median(alone)
            low, high = (
                max(low, (1.0 - SPLIT_SIZE_SPREAD) * usual),
                min(high, (1.0 + SPLIT_SIZE_SPREAD) * usual),
            )
        if region.at_edge:
            return ""
        x, y, w, h = region.box
        pad = region.notch
        blob: Pixels = np.zeros((h + 2 * pad, w + 2 * pad), np.uint8)
        cv2.drawContours(blob, [region.contour - np.array([x - pad, y - pad], np.int32)], -1, 1, cv2.FILLED)
        # pips on the outline (dark, so "not die") bite into it: closed, as for a die's solidity
        blob = _morphed(blob, cv2.MORPH_CLOSE, _disc(pad))
        area = cv2.countNonZero(blob)
        hull = np.zeros_like(blob)
        hull[pad : pad + h, pad : pad + w] = region.mask
        origin = (x - pad, y - pad)
        found: list[tuple[DieReading, ...]] = []
        why: list[str] = []
        fitted: FittedSquares = {}  # numbers of dice of one side fit their first squares alike
        by_kernel: dict[int, PipResponses] = {}  # sides of one pip kernel have the same responses
        for count, side in _split_sizes(area, cal.die_side_median, (low, high)):
            failed = ""
            # the squares as first placed, when they explain the blob and its dice; else refitted (each die
            # again with all the others in place), which most splits do not need (tried once with no refits)
            for refits in dict.fromkeys((0, SPLIT_REFITS)):
                split = _fit_squares(blob, side, count, fitted, refits)
                if isinstance(split, str):
                    failed = split
                    continue
                kernel = _pip_kernel(side)
                if kernel not in by_kernel:
                    by_kernel[kernel] = self._pip_responses(lab, origin, blob.shape, side)
                responses = by_kernel[kernel]
                dice = self._read_squares(lab, split.squares, side, hull, origin, region, view, responses)
                if isinstance(dice, str):
                    failed = dice
                    continue
                failed = self._unexplained_pips(
                    lab, blob & split.on_squares, split.cores, origin, side, dice, view, responses
                )
                if not failed:
                    found.append(dice)
                    break
            if failed:
                why.append(f"{count} dice of {side:.0f} px: {failed}")
        readings = {(len(dice), tuple(sorted(die.value or 0 for die in dice))) for dice in found}
        if len(readings) == 1:  # one reading, whichever size of die found it
            return found[0]
        if found:
            return "as " + " or ".join(f"{count} dice {values}" for count, values in sorted(readings))
        return "; ".join(why)

    def _read_squares(
        self,
        lab: Pixels,
        squares: list[tuple[float, float, float]],
        side: float,
        hull: Pixels,
        origin: tuple[int, int],
        region: DieRegion,
        view: View,
        responses: PipResponses,
    ) -> tuple[DieReading, ...] | str:
        """Each fitted square (x, y, angle in the blob's own pixels) read as a die alone: its region is the
        square with rounded corners, within the blob's hull; or why one was not read."""
        height, width = lab.shape[:2]
        readings = []
        for number, (cx, cy, angle) in enumerate(squares, 1):
            outline = rounded_square((cx + origin[0], cy + origin[1]), side, angle, SPLIT_CORNER)
            contour = np.round(outline).astype(np.int32).reshape(-1, 1, 2)
            left, top, box_w, box_h = cv2.boundingRect(contour)
            left, top = max(0, left), max(0, top)
            right, bottom = min(width, left + box_w), min(height, top + box_h)
            if right <= left or bottom <= top:
                return f"die {number} out of view"
            mask = np.zeros((bottom - top, right - left), np.uint8)
            cv2.drawContours(mask, [contour - np.array([left, top], np.int32)], -1, 1, cv2.FILLED)
            # within the blob's hull: the square's own corners may reach past a die's rounder ones
            hull_left, hull_top = left - origin[0], top - origin[1]
            inside = np.zeros_like(mask)
            hx0, hy0 = max(0, hull_left), max(0, hull_top)
            hx1, hy1 = (
                min(hull.shape[1], hull_left + mask.shape[1]),
                min(hull.shape[0], hull_top + mask.shape[0]),
            )
            if hx1 > hx0 and hy1 > hy0:
                inside[hy0 - hull_top : hy1 - hull_top, hx0 - hull_left : hx1 - hull_left] = hull[
                    hy0:hy1, hx0:hx1
                ]
            mask &= inside
            die_area = float(cv2.countNonZero(mask))
            if die_area == 0:
                return f"die {number} off the blob"
            die_region = DieRegion(
                box=(left, top, right - left, bottom - top),
                mask=mask,
                area=die_area,
                centre=(cx + origin[0], cy + origin[1]),
                angle=angle,
                aspect=1.0,
                at_edge=region.at_edge,
                contour=contour,
                notch=region.notch,
                least_solidity=1.0,
            )
            reading = self.read_region(lab, die_region, view, responses)
            if reading.value is None:
                return f"die {number}: {reading.reason}"
            readings.append(reading)
        return tuple(readings)

    def _pip_responses(
        self, lab: Pixels, origin: tuple[int, int], shape: tuple[int, ...], side: float
    ) -> PipResponses:
        """The pip responses (`PipResponses`) of the part of the view a blob's window (`origin`, `shape`)
        holds, for dice of `side`."""
        x0, y0 = origin
        vx0, vy0 = max(0, x0), max(0, y0)
        vx1, vy1 = min(lab.shape[1], x0 + shape[1]), min(lab.shape[0], y0 + shape[0])
        lightness = np.ascontiguousarray(lab[vy0:vy1, vx0:vx1, 0])
        kernel = _pip_kernel(side)
        by_polarity = {polarity: _pip_response(lightness, polarity, kernel) for polarity in self.polarities()}
        return PipResponses((vx0, vy0), kernel, by_polarity)

    def polarities(self) -> tuple[str, ...]:
        """The pip polarities the calibration allows: "dark" pips, "light" ones, or both."""
        pip_polarity = self.calibration.pip_polarity
        return ("dark", "light") if pip_polarity == "any" else (pip_polarity,)

    @staticmethod
    def _tray_colour(
        colour: NDArray[np.float64], pip_colours: NDArray[np.float64], tray: NDArray[np.float64]
    ) -> bool:
        """Whether a mark's mean Lab colour is nearer the tray's than the median of the dice's pips'."""
        pip_colour = np.median(pip_colours, axis=0)
        return bool(np.linalg.norm(colour - tray) < np.linalg.norm(colour - pip_colour))

    def _unexplained_pips(
        self,
        lab: Pixels,
        blob: Pixels,
        cores: Pixels,
        origin: tuple[int, int],
        side: float,
        dice: tuple[DieReading, ...],
        view: View,
        responses: PipResponses,
    ) -> str:
        """Empty when every pip-like mark on the blob's dice (`blob`: the part of the blob the dice's squares
        cover; the rest is strips too narrow for a pip, checked by `_fit_squares`), of either polarity the
        calibration allows, round nearly enough to be a pip and of a pip's size, is a pip of one of the dice
        read; else which mark is not. One mark only is no pip: the tray seen through the gap between two
        dice at an angle (which segmentation closes), that is, a mark off every die's core (`cores`: the
        squares without the blob's soft outline) whose colour is nearer the tray's around the blob than the
        dice's pips'."""
        cal = self.calibration
        x0, y0 = origin
        height, width = blob.shape
        vx0, vy0 = max(0, x0), max(0, y0)
        vx1, vy1 = min(lab.shape[1], x0 + width), min(lab.shape[0], y0 + height)
        inner = _morphed(
            blob[vy0 - y0 : vy1 - y0, vx0 - x0 : vx1 - x0],
            cv2.MORPH_ERODE,
            _disc(_odd(max(3, round(side * 0.08)))),
        )
        if not cv2.countNonZero(inner):
            return ""
        pips = [view.to_view(pip) for die in dice for pip in die.pip_centres]
        reach = 0.5 * PIP_SPACING_LEAST * side
        die_area = side * side
        low_area = min(cal.pip_area_ratio[0], cal.one_pip_area_ratio[0]) * die_area
        high_area = max(cal.pip_area_ratio[1], cal.one_pip_area_ratio[1]) * die_area
        window_blob = blob[vy0 - y0 : vy1 - y0, vx0 - x0 : vx1 - x0]
        known: list[NDArray[np.float64]] = []

        def tray() -> NDArray[np.float64]:
            """The median colour just around the blob (measured when first asked for)."""
            if not known:
                around = _morphed(window_blob, cv2.MORPH_DILATE, _disc(_odd(max(3, round(side * 0.15))))) & (
                    window_blob == 0
                )
                pixels = lab[vy0:vy1, vx0:vx1][around > 0]
                known.append(np.median(pixels, axis=0) if len(pixels) else np.full(3, np.inf))
            return known[0]

        for polarity in self.polarities():
            response = responses.by_polarity[polarity].copy()
            response[inner == 0] = 0
            (peak,) = _histogram_percentiles(response, 0, inner, (99.5,))
            threshold = max(cal.pip_contrast, 0.4 * peak)
            binary = (response > threshold).astype(np.uint8)
            count, labels, stats, centroids = _components(binary)
            if count <= 1:
                continue
            areas = stats[:, cv2.CC_STAT_AREA].astype(np.float64)
            centres = [(x + vx0, y + vy0) for x, y in centroids.tolist()]
            sized = [
                index
                for index, area in enumerate(areas.tolist())
                if index and 0.5 * low_area <= area <= high_area
            ]
            on_pips = {
                index for index in sized if any(math.dist(centres[index], pip) <= reach for pip in pips)
            }
            if len(on_pips) == len(sized):
                # every mark of a pip's size lies on a pip read, whatever its shape: none is unexplained (the
                # shapes and colours, a pass over the blob's pixels, are worked out only when one may be)
                continue
            roundness, _, colours = _blob_statistics(
                labels, count, areas, response.astype(np.float32), lab[vy0:vy1, vx0:vx1]
            )
            least_round = NEAR_PIP_ROUNDNESS * cal.min_pip_roundness
            marks = [(index, centres[index]) for index in sized if roundness[index] >= least_round]
            pip_marks = [index for index, _ in marks if index in on_pips]
            for index, mark in marks:
                if index in pip_marks:
                    continue
                x, y = round(mark[0]) - x0, round(mark[1]) - y0
                on_core = 0 <= y < cores.shape[0] and 0 <= x < cores.shape[1] and cores[y, x]
                if (
                    not on_core
                    and pip_marks
                    and self._tray_colour(colours[index], colours[pip_marks], tray())
                ):
                    continue
                return f"a pip-like mark at {_rounded(view.to_frame(mark))} on no die's face"
        return ""

    # segmentation ---------------------------------------------------------------------------------

    def find_dice(self, lab: Pixels) -> list[DieRegion]:
        """Die-coloured blobs of a Lab image (specks dropped, pips filled)."""
        height, width = lab.shape[:2]
        small = self._background(lab, self.calibration.die_side_median)
        return self._regions(lab, cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR))

    def _background(self, lab: Pixels, die_side: float) -> Pixels:
        """The local background colour of a Lab image where a die is `die_side` pixels wide: a median over
        a few die sides (so uneven light does not matter), of the image shrunk to a die of
        `BACKGROUND_SIDE_PX`; at that size."""
        cal = self.calibration
        height, width = lab.shape[:2]
        factor = max(1.0, die_side / BACKGROUND_SIDE_PX)
        small = _area_resized(lab, (max(1, round(width / factor)), max(1, round(height / factor))))
        kernel = _odd(
            min(
                max(3, round(cal.background_kernel_sides * BACKGROUND_SIDE_PX)),
                2 * (min(small.shape[:2]) // 2) - 1,
            )
        )
        median: Pixels = cv2.medianBlur(np.ascontiguousarray(small), kernel)  # each channel's own median
        return median

    def _regions(self, lab: Pixels, background: Pixels) -> list[DieRegion]:
        """The blobs of a Lab image far enough from its `background` (the same size) to be dice."""
        cal = self.calibration
        height, width = lab.shape[:2]
        typical = cal.die_side_median
        smooth = cv2.GaussianBlur(lab, (0, 0), max(0.6, typical * 0.03))
        mask: Pixels = (_die_distance2(smooth, background, cal.shadow_weight) > cal.die_contrast**2).astype(
            np.uint8
        )
        # closing first: a pip at the rim of a face (dark, so "not die") must not cut the die in two
        closing = _disc(_odd(max(3, round(cal.die_side_px[0] * 0.15))))
        opening = _disc(_odd(max(3, round(cal.die_side_px[0] * 0.12))))
        mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, closing)
        mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, opening)
        contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        smallest = (cal.die_side_px[0] * NOISE_SIDE_FRACTION) ** 2
        notch = _odd(max(3, round(typical * 0.3)))
        regions: list[DieRegion] = []
        for contour in contours:
            if cv2.contourArea(contour) < smallest * 0.5:
                continue
            region = _region(contour, width, height, notch)
            if region.area >= smallest:
                regions.append(region)
        return regions

    # one die ----------------------------------------------------------------------------------------

    def read_region(
        self, lab: Pixels, region: DieRegion, view: View | None = None, responses: PipResponses | None = None
    ) -> DieReading:
        """Read one blob found by `find_dice` in the Lab image `lab` (of `view`: its box and pips are given in
        the frame's coordinates); `responses`: see `measure_face`."""
        view = view or View(lab)
        box = view.box_to_frame(region.box)
        problem = self.region_problem(region)
        if problem:
            return DieReading(None, 0.0, box, 0, problem, _problem_of(problem))
        measures = self.measure_face(lab, region, doubts=True, responses=responses)
        judged = [(measure, *self.judge(measure)) for measure in measures]
        good = [(m, v, confidence) for m, v, confidence, _ in judged if v is not None and not m.near_pips]
        values = sorted({value for _, value, _ in good})
        # a mark just too flat to be a pip, with which the pips lie where another face's would: either may be
        # right (whatever else that face's checks say: a face's pattern is the evidence of its value)
        doubts = {m.value for m in measures if m.near_pips and m.value is not None and self.pattern_fits(m)}
        if len(values) == 1 and doubts - set(values):
            values = sorted(doubts | set(values))
        if len(values) == 1:
            measure, value, confidence = max(good, key=lambda item: item[2])
            pips = tuple(_rounded(view.to_frame(pip.centre)) for pip in measure.pips)
            return DieReading(value, round(confidence, 4), box, len(measure.pips), "", None, pips)
        if values:
            shown = "/".join(str(value) for value in values)
            return DieReading(None, 0.0, box, 0, f"ambiguous: could be {shown}", "unclear")
        # the reason given is the whole face's (no pip left out), of the pip polarity that found pips
        whole = [item for item in judged if item[0].left_out == 0 and not item[0].near_pips]
        measure, _, _, reason = next((item for item in whole if item[0].pips), whole[0])
        return DieReading(None, 0.0, box, len(measure.pips), reason, _problem_of(reason))

    def ragged(self, region: DieRegion) -> bool:
        """Whether a blob's outline is not a die's (convex, once pip-sized notches are closed)."""
        least = self.calibration.min_die_solidity
        return region.least_solidity < least and region.solidity < least

    def oblong(self, region: DieRegion) -> bool:
        """Whether a blob is as long for its width as two dice edge to edge (or a cocked die seen from a
        slant: its top face foreshortened, a side face beside it)."""
        return region.aspect >= min(SIDE_BY_SIDE_ASPECT, self.calibration.max_die_aspect)

    def region_problem(self, region: DieRegion) -> str:
        """Why this blob cannot be one die lying flat ("" if it can)."""
        cal = self.calibration
        low, high = cal.die_side_px
        if region.at_edge:
            return "at the edge of the view"
        usual_area = cal.die_side_median**2
        pixels = region.area * region.least_solidity  # the blob's own, not its hull's: what dice are made of
        # twice a usual die, and well beyond the largest single die (where the dice's size varies a lot)
        too_big = pixels > max(TOUCHING_AREA_RATIO * usual_area, 1.3 * high * high)
        # two dice touching make a ragged outline, or a convex oblong edge to edge, of at least ONE_DIE_MOST
        # dice's pixels; with fewer the blob is one die's (its side seen at a slant, a shadow or clutter
        # against it; a cocked die's outline is oblong too): judged as one die, every check on
        may_be_two = pixels >= ONE_DIE_MOST * usual_area
        if too_big or (may_be_two and (self.ragged(region) or self.oblong(region))):
            return "touching another die"
        if region.aspect > cal.max_die_aspect:
            return f"die not square from above ({region.aspect:.2f}): cocked"
        if region.side > high:
            return f"die too large ({region.side:.0f} px): stacked"
        if region.side < low:
            return f"die too small ({region.side:.0f} px): partly hidden, or not a die"
        return ""

    def measure_face(
        self, lab: Pixels, region: DieRegion, *, doubts: bool = False, responses: PipResponses | None = None
    ) -> list[FaceMeasure]:
        """Pips and pattern measurements of one die, for each pip polarity the calibration allows; with
        `doubts`, also the face with the marks a little too flat to be pips counted as pips (`near_pips`).
        `responses`: the pip responses of the blob the die was split from, cut for the die where they hold
        its window and were worked out with its kernel."""
        side = region.side
        x, y, w, h = region.box
        margin = max(2, round(side * 0.15))
        x0, y0 = max(0, x - margin), max(0, y - margin)
        x1, y1 = min(lab.shape[1], x + w + margin), min(lab.shape[0], y + h + margin)
        lightness = np.ascontiguousarray(lab[y0:y1, x0:x1, 0])
        die = np.zeros(lightness.shape, np.uint8)
        die[y - y0 : y - y0 + h, x - x0 : x - x0 + w] = region.mask
        inner = _morphed(die, cv2.MORPH_ERODE, _disc(_odd(max(3, round(side * 0.08)))))
        sharpness = _sharpness(lightness, _morphed(die, cv2.MORPH_DILATE, _disc(5)))
        kernel = _pip_kernel(side)
        measures = []
        for polarity in self.polarities():
            response = None if responses is None else responses.cut(polarity, (x0, y0, x1, y1), kernel)
            if response is None:
                response = _pip_response(lightness, polarity, kernel)
            response[inner == 0] = 0
            window = lab[y0:y1, x0:x1]
            faces = self._face_from_response(response, inner, window, region, (x0, y0), polarity, doubts)
            for measure in faces:
                measure.sharpness = sharpness
                measures.append(measure)
        return measures

    def _face_from_response(
        self,
        response: Pixels,
        inner: Pixels,
        colours: Pixels,
        region: DieRegion,
        origin: tuple[int, int],
        polarity: str,
        doubts: bool = False,
    ) -> list[FaceMeasure]:
        """Pip candidates, then one measurement per candidate top face. `response`: the 8-bit black-hat
        (top-hat) of the die's lightness, 0 off `inner`.

        Seen at an angle, a die shows pips of its side faces too. Candidates are tried as the top face with
        the outermost pips left out one by one (the pips left out must then lie off the fitted face)."""
        cal = self.calibration
        if not cv2.countNonZero(inner):
            return [FaceMeasure(polarity=polarity)]
        # from the histogram of the 8-bit response: the same value as a percentile of its pixels on the die
        (peak,) = _histogram_percentiles(response, 0, inner, (99.5,))
        response = response.astype(np.float32)
        threshold = max(cal.pip_contrast, 0.4 * peak)
        binary = (response > threshold).astype(np.uint8)
        count, labels, stats, centroids = _components(binary)

        measured: list[NDArray[np.float64] | None] = []

        def body() -> NDArray[np.float64] | None:
            """The die's own colour (median of the face off the pips), measured when first asked for: only
            faces of 2 pips or more need it."""
            if not measured:
                background = ((inner > 0) & (binary == 0)).astype(np.uint8)
                if background.any():
                    median = [_histogram_percentiles(colours, c, background, (50.0,))[0] for c in range(3)]
                    measured.append(np.array(median))
                else:
                    measured.append(None)
            return measured[0]

        low_area = min(cal.pip_area_ratio[0], cal.one_pip_area_ratio[0]) * region.area
        high_area = max(cal.pip_area_ratio[1], cal.one_pip_area_ratio[1]) * region.area
        areas = stats[:, cv2.CC_STAT_AREA].astype(np.float64)
        # a speck of noise, too small to hide a pip, is no candidate
        area_list = areas.tolist()
        candidates = [index for index in range(1, count) if area_list[index] >= low_area * 0.3]
        pips: list[PipBlob] = []
        strays: list[PipBlob] = []
        if candidates:
            # Python floats (roundness and levels come as lists): indexing numpy arrays element by element
            # costs more than the blobs
            roundness_list, level_list, blob_colours = _blob_statistics(
                labels, count, areas, response, colours
            )
            centre_list, colour_list = centroids.tolist(), blob_colours.tolist()
            for index in candidates:
                x, y = centre_list[index]
                light, a, b = colour_list[index]
                blob = PipBlob(
                    centre=(x + origin[0], y + origin[1]),
                    area=area_list[index],
                    roundness=roundness_list[index],
                    level=level_list[index],
                    colour=(light, a, b),
                )
                if low_area <= blob.area <= high_area and blob.roundness >= cal.min_pip_roundness:
                    pips.append(blob)
                else:
                    strays.append(blob)
        # outermost (and flattest) first: those are the likeliest to be on a side face
        pips.sort(key=lambda pip: math.dist(pip.centre, region.centre) / region.side + (1.0 - pip.roundness))
        if not pips:
            return [FaceMeasure(polarity=polarity, strays=strays)]
        measures = []
        for left_out in range(len(pips)):
            kept = pips[left_out:]
            measure = FaceMeasure(
                polarity=polarity, pips=kept, strays=strays + pips[:left_out], left_out=left_out
            )
            if len(kept) <= 6:
                self._measure_pattern(measure, response, inner, region, origin)
                measure.colour_spread = _colour_spread(kept, body() if len(kept) >= 2 else None)
            measures.append(measure)
            if left_out >= cal.max_pips_left_out:
                break
        # the roundness limit is a sharp line: a pip a little flatter than it (blur, a slant) is a stray, and
        # the rest may then form another legal face (a 2 with a flat pip reads as 1)
        near = [
            blob
            for blob in strays
            if low_area <= blob.area <= high_area
            and blob.roundness >= NEAR_PIP_ROUNDNESS * cal.min_pip_roundness
        ]
        if doubts and near and len(pips) + len(near) <= 6:
            others = [blob for blob in strays if blob not in near]
            measure = FaceMeasure(polarity=polarity, pips=pips + near, strays=others, near_pips=len(near))
            self._measure_pattern(measure, response, inner, region, origin)
            measure.colour_spread = _colour_spread(measure.pips, body() if len(measure.pips) >= 2 else None)
            measures.append(measure)
        return measures

    def _measure_pattern(
        self,
        measure: FaceMeasure,
        response: Pixels,
        inner: Pixels,
        region: DieRegion,
        origin: tuple[int, int],
    ) -> None:
        cal = self.calibration
        measure.pip_level = float(statistics.median(pip.level for pip in measure.pips))
        areas = [pip.area for pip in measure.pips]
        measure.pip_area_spread = max(areas) / min(areas)
        measure.pip_area_range = (min(areas) / region.area, max(areas) / region.area)
        points = np.array([pip.centre for pip in measure.pips], np.float64)
        value = len(measure.pips)
        side = region.side
        if value == 1:
            unit = side * 0.5 * (cal.pip_unit_ratio[0][0] + cal.pip_unit_ratio[0][1])
            theta = math.radians(region.angle)
            matrix = unit * np.array(
                [[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]]
            )
            translation = points[0]
            measure.layout_error = 0.0
            measure.unit_ratio = unit / side
            measure.face_aspect = 1.0
        else:
            matrix, translation, error = _fit_face(points, FACES[value])
            measure.layout_error = error
            measure.unit_ratio = math.sqrt(abs(_determinant(matrix))) / side
            measure.face_aspect = _singular_ratio(matrix)
            if value in (2, 3):
                measure.diagonal_angle = _diagonal_angle(points, region.angle)
        measure.value = value
        measure.centre_offset = math.dist(tuple(translation), region.centre) / side
        pip_radius = math.sqrt(statistics.median(areas) / math.pi)
        measure.empty_level, measure.clutter_level, measure.off_die = _empty_level(
            response, inner, origin, matrix, translation, points, FACES[value], pip_radius, measure.pip_level
        )
        measure.stray_on_face = _marks_on_face(measure.strays, matrix, translation)

    def pattern_fits(self, measure: FaceMeasure) -> bool:
        """Whether 2-6 pips lie where the pips of that face would: fitted to its grid, on a diagonal (2-3),
        the face's size for this die, on the die's centre. Nothing about marks, tilt, light or focus."""
        cal = self.calibration
        pips = len(measure.pips)
        if not 2 <= pips <= 6 or measure.off_die:
            return False
        low_unit, high_unit = cal.pip_unit_ratio[pips - 1]
        return (
            measure.layout_error < cal.max_layout_error
            and (pips > 3 or measure.diagonal_angle < cal.max_diagonal_angle)
            and low_unit < measure.unit_ratio < high_unit
            and measure.centre_offset < cal.max_centre_offset
        )

    def judge(self, measure: FaceMeasure) -> tuple[int | None, float, str]:
        """Accept or refuse one measured face: (value, confidence, "") or (None, 0, why)."""
        value, confidence, why = self._judge(measure)
        if value is None and measure.sharpness < self.calibration.typical_sharpness * BLUR_EVIDENCE:
            # refused for whatever reason, and much blurrier than the calibration's dice: blur is the likely
            # cause (a camera out of focus, dice still moving), and the thing to tell a technician
            why = "blurred"
        return value, confidence, why

    def _judge(self, measure: FaceMeasure) -> tuple[int | None, float, str]:
        cal = self.calibration
        pips = len(measure.pips)
        if measure.sharpness < cal.min_sharpness:  # first: blur explains pips missed or smeared together
            return None, 0.0, "blurred"
        if pips == 0:
            return None, 0.0, "no pips found"
        if pips > 6:
            return None, 0.0, f"pip count {pips}"
        if measure.off_die:
            return None, 0.0, "pips not in a legal pattern (pattern runs off the die)"
        if measure.stray_on_face:
            return None, 0.0, "a mark on the face that is not a pip"
        if measure.pip_level < cal.pip_contrast:
            return None, 0.0, "pips too faint"
        low_area, high_area = cal.one_pip_area_ratio if pips == 1 else cal.pip_area_ratio
        if measure.pip_area_range[0] < low_area or measure.pip_area_range[1] > high_area:
            return None, 0.0, "pips the wrong size for this die"
        low_unit, high_unit = cal.pip_unit_ratio[pips - 1]
        min_aspect = cal.min_face_aspect[pips - 1]
        # margin of each check: 1 = in the middle of its calibrated range, 0 = at its limit; in order of how
        # basic a failure is (the first failed one is the reason given)
        grid_middle, grid_half = (low_unit + high_unit) / 2, (high_unit - low_unit) / 2
        sharpness_span = max(1e-6, cal.typical_sharpness - cal.min_sharpness)
        margins = {
            "layout": 1.0 - measure.layout_error / cal.max_layout_error,
            "diagonal": 1.0 - measure.diagonal_angle / cal.max_diagonal_angle if pips in (2, 3) else 1.0,
            "grid size": 1.0 - abs(measure.unit_ratio - grid_middle) / grid_half,
            "centre": 1.0 - measure.centre_offset / cal.max_centre_offset,
            "tilt": 1.0 if pips <= 3 else (measure.face_aspect - min_aspect) / max(1e-6, 1.0 - min_aspect),
            "pip size": 1.0 - (measure.pip_area_spread - 1.0) / (cal.max_pip_area_spread - 1.0),
            "pip colour": 1.0 - measure.colour_spread / cal.max_pip_colour_spread,
            "empty positions": 1.0 - measure.empty_level / cal.max_empty_level,
            "clean face": 1.0 - measure.clutter_level / cal.max_clutter_level,
            # full margins: a die as sharp as the calibration's median; pips twice the least contrast
            "sharpness": min(1.0, (measure.sharpness - cal.min_sharpness) / sharpness_span),
            "contrast": min(1.0, (measure.pip_level - cal.pip_contrast) / cal.pip_contrast),
        }
        if pips == 1:  # a lone pip has no pattern: its grid is assumed from the die, so these say nothing
            for name in ("layout", "grid size", "tilt", "pip size", "pip colour"):
                del margins[name]
        failed = [name for name in margins if margins[name] <= 0.0]
        if failed:  # the most basic failure is the reason (a wrong pattern explains a mark in an empty place)
            return None, 0.0, _refusal(failed[0], pips)
        weakest = min(margins, key=lambda name: margins[name])
        confidence = margins[weakest]
        if confidence < cal.min_confidence:
            return None, 0.0, f"low confidence {confidence:.2f} ({weakest})"
        return pips, min(1.0, confidence), ""


# --- helpers --------------------------------------------------------------------------------------------


def _refusal(check: str, pips: int) -> str:
    reasons = {
        "layout": f"{pips} pips not in a legal pattern",
        "pip size": "pips of different sizes",
        "pip colour": "pips of different colours",
        "grid size": f"{pips} pips not in a legal pattern (wrong spacing for this die)",
        "tilt": "face tilted: cocked",
        "centre": f"{pips} pips not in a legal pattern (off the die's centre)",
        "empty positions": "a mark where no pip should be",
        "clean face": "marks on the face between the pips",
        "sharpness": "blurred",
        "contrast": "pips too faint",
        "diagonal": f"{pips} pips not on a face diagonal",
    }
    return reasons[check]


def _problem_of(reason: str) -> RefusalReason:
    """The kind of refusal a die's reason belongs to (the reasons are written in this module)."""
    if reason.startswith("touching"):
        return "touching"
    if reason.startswith("die too large"):
        return "stacked"
    if reason.endswith("cocked"):
        return "cocked"
    if reason.startswith("at the edge"):
        return "edge"
    if reason == "blurred":
        return "blurred"
    return "unclear"


def _combine(
    readings: tuple[DieReading, ...],
    expect: int | None,
    roi: Box | None,
    frame: str,
    no_die: list[DieReading] | None = None,
    not_dice: list[DieReading] | None = None,
) -> AcceptedDice | DiceRefusal:
    passable = {id(r) for r in no_die or ()}
    # with no number of dice expected, nothing says that a small blob is not a die half hidden: it refuses
    shapeless = {id(r) for r in not_dice or ()} if expect is not None else set()
    read = tuple(r for r in readings if r.value is not None)
    if (
        expect
        and len(read) == expect
        and all(r.problem == "edge" or id(r) in passable for r in readings if r.value is None)
    ):
        # every die the table has is read, each whole in view and past every check: a blob cut by the edge of
        # the view is then no die of this table (the tray's rim, a shadow; beyond a view without a tray, the
        # desk), nor is a blob no die makes (`DiceReader.no_die_makes`: a speck, a sliver; `DiceReader.blank`:
        # not one pip). A die at the edge is one of `expect`: then fewer are read, and the frame is refused
        # (a refusal names every blob and the most basic reason among them: a blurred die that shows no pip
        # is still a blurred die).
        readings = read
    unreadable = [(i, r) for i, r in enumerate(readings, 1) if r.value is None]
    details = [f"die {i}: {r.reason}" for i, r in unreadable]
    # a blob no die's shape makes (a speck, a sliver) is named in the details but is no die: the reason and
    # the count are the dice's (a shadow's ragged outline must not make a frame of cocked dice "touching")
    problems: set[RefusalReason] = {r.problem or "unclear" for _, r in unreadable if id(r) not in shapeless}
    found = sum(1 for r in readings if id(r) not in shapeless)
    if expect is not None and found != expect:
        details.insert(0, f"{found} dice found, {expect} expected")
        problems.add("count")
    if not found and expect is None:
        details.append("no dice found")
        problems.add("count")
    if problems:
        reason = min(problems, key=REFUSAL_ORDER.index)
        return DiceRefusal(reason, "; ".join(details), readings, roi, frame)
    values = tuple(r.value for r in readings if r.value is not None)
    confidence = min(r.confidence for r in readings)
    return AcceptedDice(values, readings, confidence, roi, frame)


def _die_distance2(lab: Pixels, background: Pixels, shadow_weight: float) -> Pixels:
    """Squared Lab distance of each pixel from the background; darker than the background counts only
    `shadow_weight` as much (0: dice are lighter, and shadows are not dice)."""
    if shadow_weight in (0.0, 1.0):
        # the weights the calibration fits, by OpenCV in float32, half the time of numpy's passes: with 8-bit
        # channels every difference, square and sum of three is a whole number below 2^24, exact in float32
        # whatever the order of the work (the same values as the general way below)
        diff = cv2.subtract(lab, background, dtype=cv2.CV_32F)
        if shadow_weight == 0.0:
            lightness = diff[:, :, 0]
            np.maximum(lightness, 0.0, out=lightness)
        squares = cv2.multiply(diff, diff)
        summed: Pixels = cv2.transform(squares, _CHANNEL_SUM)
        return summed
    diff = lab.astype(np.float32) - background.astype(np.float32)
    lightness = np.where(diff[:, :, 0] > 0, diff[:, :, 0], diff[:, :, 0] * shadow_weight)
    distance2: Pixels = lightness**2 + diff[:, :, 1] ** 2 + diff[:, :, 2] ** 2
    return distance2


_CHANNEL_SUM = np.ones((1, 3), np.float32)
_CHANNEL_SUM.flags.writeable = False


_EPSILON = sys.float_info.epsilon  # OpenCV's DBL_EPSILON


def _area_resized(image: Pixels, size: tuple[int, int]) -> Pixels:
    """`cv2.resize(image, size, interpolation=cv2.INTER_AREA)` of an 8-bit image: the same pixels, faster.
    Shrinking by a ratio that is not whole on both axes, OpenCV sums each pixel's area weights in float32
    and rounds the sum once to 8 bits; it does the same sums about 1.4x as fast on a float32 image, and
    `convertScaleAbs` rounds as it does (checked against OpenCV in the tests). Other resizes (whole ratios,
    enlarging) are OpenCV's own."""
    height, width = image.shape[:2]
    # OpenCV's own test for its paths (`resize`): the inverse scales, from the scales as it works them out
    scale_x, scale_y = 1.0 / (size[0] / width), 1.0 / (size[1] / height)
    whole = abs(scale_x - round(scale_x)) < _EPSILON and abs(scale_y - round(scale_y)) < _EPSILON
    if whole or scale_x < 1.0 or scale_y < 1.0 or image.dtype != np.uint8:
        return cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    return cv2.convertScaleAbs(cv2.resize(image.astype(np.float32), size, interpolation=cv2.INTER_AREA))


def _shrink(image: Pixels, factor: float) -> tuple[Pixels, float]:
    """`image` shrunk by about `factor` (pixel areas averaged), with the scale reached (new px per old px).
    Halvings first: OpenCV averages 2x2 blocks far faster than arbitrary areas; the last step is small."""
    scale = 1.0
    while factor * scale >= 2.0 and min(image.shape[:2]) >= 4:
        height, width = image.shape[0] // 2 * 2, image.shape[1] // 2 * 2
        image = cv2.resize(image[:height, :width], (width // 2, height // 2), interpolation=cv2.INTER_AREA)
        scale /= 2.0
    rest = factor * scale  # below 2: bilinear samples every pixel, and is far cheaper than area weights
    width = max(1, round(image.shape[1] / rest))
    height = max(1, round(image.shape[0] / rest))
    scale *= width / image.shape[1]
    return cv2.resize(image, (width, height), interpolation=cv2.INTER_LINEAR), scale


def _merged(boxes: list[tuple[int, int, int, int]]) -> list[tuple[int, int, int, int]]:
    """Boxes (left, top, right, bottom) that overlap joined into one, until none overlap: each blob is then
    segmented in one window only."""
    merged = list(boxes)
    joined = True
    while joined:
        joined = False
        for i, j in itertools.combinations(range(len(merged)), 2):
            a, b = merged[i], merged[j]
            if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                merged[i] = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                del merged[j]
                joined = True
                break
    return merged


def _on_view_grid(low: int, high: int, length: int, view_length: int) -> tuple[int, int, int, int]:
    """Frame bounds [low, high) on one axis, moved out to boundaries between pixels of the whole tray's view
    (`length` frame pixels shrunk to `view_length`): a window shrunk alone is then sampled as the whole view
    would be, exactly when its bounds fall on whole frame pixels (every `numerator` view pixels of the
    reduced ratio, when that is short), else to within a frame pixel. Returns the frame and view bounds."""
    numerator = view_length // math.gcd(view_length, length)  # of the reduced ratio (`Fraction` is slower)
    step = numerator if numerator <= MAX_GRID_STEP else 1
    view_low = (low * view_length // length) // step * step
    view_high = min(view_length, _ceil_div(_ceil_div(high * view_length, length), step) * step)

    def to_frame(view: int) -> int:
        return (2 * view * length + view_length) // (2 * view_length)  # rounded

    return to_frame(view_low), to_frame(view_high), view_low, view_high


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def _cut_inside(region: DieRegion, size: tuple[int, int], tray_sides: tuple[bool, bool, bool, bool]) -> bool:
    """Whether a blob touches a side of its window that is not a side of the tray."""
    x, y, w, h = region.box
    touches = (x <= 0, y <= 0, x + w >= size[0], y + h >= size[1])
    return any(touch and not side for touch, side in zip(touches, tray_sides, strict=True))


def _split_sizes(area: float, usual: float, sides: tuple[float, float]) -> list[tuple[int, float]]:
    """(number of dice, side) to try a blob of `area` as: 2 to `SPLIT_MOST_DICE` dice sharing its area, and
    as many dice of the usual side as about fill it (gaps between dice closer than a pip are filled: a
    blob may be larger than its dice); only sides within the calibrated ones."""
    tries = []
    for count in range(2, SPLIT_MOST_DICE + 1):
        shared = math.sqrt(area / count)
        for side in (shared, usual) if abs(shared - usual) > SPLIT_SIDES_ALIKE * usual else (shared,):
            if sides[0] <= side <= sides[1] and SPLIT_FILL[0] <= count * side * side / area <= SPLIT_FILL[1]:
                tries.append((count, side))
    return tries


def _fit_squares(
    blob: Pixels, side: float, count: int, fitted: FittedSquares | None = None, refits: int = SPLIT_REFITS
) -> SplitSquares | str:
    """`count` squares of `side` (x, y of the centre, angle in degrees; in `blob`'s pixels) that together
    explain the blob, with the masks the check drew of them (`SplitSquares`), or why there are none. Each is
    fitted by `_fit_square` to what the others leave of the blob: first one after the other, then, in each of
    `refits` passes, each but the last again with all the others in place (a die placed early, with little of
    the blob known to be its neighbours', moves to where they leave room; the last was placed with them
    all). Explained: each square lies on the blob, no die overlaps another, and nothing of the blob is left
    over but strips narrower than a sixth of a die (its soft outline, and gaps between dice closer than a
    pip, which segmentation fills).
    `fitted`: the squares fitted to this blob so far, by what they were fitted to (more dice of the same
    side begin with the same squares), kept for the next call."""
    # the turns and places may be searched smaller (`SPLIT_SEARCH_SCALE`: at half size, a quarter of the
    # work, but fewer splits read), then each square is centred and measured at full size
    small_side = side * SPLIT_SEARCH_SCALE
    small = blob
    if SPLIT_SEARCH_SCALE != 1.0:
        shrunk = cv2.resize(
            blob.astype(np.float32),
            None,
            fx=SPLIT_SEARCH_SCALE,
            fy=SPLIT_SEARCH_SCALE,
            interpolation=cv2.INTER_AREA,
        )
        small = (shrunk >= 0.5).astype(np.uint8)
    known: FittedSquares = {} if fitted is None else fitted

    def fit(others: list[Square], near: float | None = None) -> Square | str:
        key = (small_side, tuple(others), near)
        if key not in known:
            known[key] = _fit_square(small, small_side, others, near)
        return known[key]

    found: list[Square] = []
    for number in range(1, count + 1):
        square = fit(found)
        if isinstance(square, str):
            return f"die {number}: {square}"
        found.append(square)
    for refit in range(refits):
        # the last die was placed with every other die in place already: the first pass refits the others
        for index in range(count - 1 if refit == 0 else count):
            square = fit(found[:index] + found[index + 1 :], found[index][2])
            if not isinstance(square, str):
                found[index] = square
    # a small pixel's centre is the centre of the full pixels it averages
    to_full = 1.0 / SPLIT_SEARCH_SCALE
    squares = _centred(
        blob, side, [((x + 0.5) * to_full - 0.5, (y + 0.5) * to_full - 0.5, a, 0.0) for x, y, a, _ in found]
    )
    die_area = side * side
    placed = np.zeros(blob.shape, np.uint8)
    cores = np.zeros(blob.shape, np.uint8)
    core_side = side * (1.0 - SPLIT_OUTLINE)
    for number, (x, y, angle, _) in enumerate(squares, 1):
        square_mask = _square_mask(blob.shape, x, y, side, angle)
        share = np.count_nonzero(square_mask & blob) / max(1, cv2.countNonZero(square_mask))
        if share < SPLIT_SQUARE_COVER:
            return f"die {number}: no square of {side:.0f} px on the blob ({share:.2f} of it at best)"
        # the die itself: a blob reaches past its dice by a pixel or two (soft edges), so does the square
        core = _square_mask(blob.shape, x, y, core_side, angle)
        overlap = cv2.countNonZero(core & cores) / die_area
        if overlap > SPLIT_OVERLAP:
            return f"die {number} overlaps another ({overlap:.2f} of a die)"
        cores |= core
        placed |= square_mask
    uncovered = _morphed(blob & (placed == 0), cv2.MORPH_OPEN, _disc(_odd(max(3, round(side / 6)))))
    left_over = cv2.countNonZero(uncovered) / die_area
    if left_over > SPLIT_LEFT_OVER:
        return f"{left_over:.2f} of a die left over"
    return SplitSquares([(x, y, angle) for x, y, angle, _ in squares], placed, cores)


def _centred(
    blob: Pixels, side: float, squares: list[tuple[float, float, float, float]]
) -> list[tuple[float, float, float, float]]:
    """Each square moved to the centre of the blob's pixels it holds that are nearer its centre than any
    other's: a square is fitted against the blob's outline, which reaches past the dice, and a die between
    two others has no outline of its own along the row."""
    xs, ys = (values.astype(np.float64) for values in _nonzero(blob))
    # the nearest centre of each pixel (the first of equals: only a strictly nearer one takes a pixel over),
    # from one row of squared distances per square
    (x0, y0, _, _), *further = squares
    least = (xs - x0) ** 2 + (ys - y0) ** 2
    nearest = np.zeros(len(xs), np.intp)
    for index, (x, y, _, _) in enumerate(further, 1):
        distance2 = (xs - x) ** 2 + (ys - y) ** 2
        nearest[distance2 < least] = index
        np.minimum(least, distance2, out=least)
    moved = []
    for index, (x, y, angle, share) in enumerate(squares):
        # only the pixels nearest this square, then those within it (its own axes)
        mine = nearest == index
        dx, dy = xs[mine] - x, ys[mine] - y
        t = math.radians(angle)
        u = np.abs(dx * math.cos(t) + dy * math.sin(t))
        v = np.abs(-dx * math.sin(t) + dy * math.cos(t))
        inside = (u <= side / 2) & (v <= side / 2)
        count = int(np.count_nonzero(inside))
        if count < 0.5 * side * side:
            moved.append((x, y, angle, share))
            continue
        # pixel coordinates are whole numbers: their sums are exact, whatever the order of adding
        centre_x = float(xs[mine][inside].sum() / count)
        centre_y = float(ys[mine][inside].sum() / count)
        moved.append((centre_x, centre_y, angle, share))
    return moved


@functools.lru_cache(maxsize=256)
def _square_corners(x: float, y: float, side: float, angle: float) -> NDArray[np.int32]:
    """The corners of a square of `side` centred on (x, y) turned by `angle` degrees, to the pixel. (Cached:
    a split's squares are drawn again and again, as the others of each square fitted after them and to check
    the split.)"""
    corners: NDArray[np.int32] = np.round(cv2.boxPoints(((x, y), (side, side), angle))).astype(np.int32)
    corners.flags.writeable = False
    return corners


def _square_mask(shape: tuple[int, ...], x: float, y: float, side: float, angle: float) -> Pixels:
    mask = np.zeros(shape[:2], np.uint8)
    cv2.fillConvexPoly(mask, _square_corners(x, y, side, angle), 1)
    return mask


def _fit_square(
    blob: Pixels, side: float, others: list[tuple[float, float, float, float]], near: float | None = None
) -> tuple[float, float, float, float] | str:
    """The square of `side` (x, y, angle, its share on the blob) that lies most on the blob and on what the
    `others` leave of it, among those, of the turns tried (`SPLIT_ANGLE_STEP` apart, about the angle of the
    blob's outline near that point and on while the best is at an end, then `SPLIT_FINE_TURNS` about the best
    of those; only `near` and the fine turns about it when given), that
    hold the point of that rest farthest from the others (from the blob's centre when there are none): a
    corner of one die, which only that die's square holds while lying on the blob."""
    if others:
        remaining = blob.copy()
        for x, y, angle, _ in others:
            cv2.fillConvexPoly(remaining, _square_corners(x, y, side, angle), 0)
        # slivers the others' squares leave of their dice are no die
        remaining = _morphed(remaining, cv2.MORPH_OPEN, _disc(_odd(max(3, round(side * 0.2)))))
        anchors = [(x, y) for x, y, _, _ in others]
    else:
        remaining = blob
        anchors = []
    xs, ys = _nonzero(remaining)
    if len(xs) < 0.5 * side * side:
        return "nothing left for it"
    if not anchors:
        # whole numbers, summed exactly: the same values as `mean`, without its cost
        anchors = [(int(xs.sum()) / len(xs), int(ys.sum()) / len(ys))]
    # the squared distance to the nearest anchor (products, not powers: the same values, fewer passes)
    (ax, ay), *further = anchors
    dx, dy = xs - ax, ys - ay
    distance2 = dx * dx + dy * dy
    for ax, ay in further:
        dx, dy = xs - ax, ys - ay
        distance2 = np.minimum(distance2, dx * dx + dy * dy)
    far = int(np.argmax(distance2))
    px, py = float(xs[far]), float(ys[far])
    span = math.ceil(side)
    window = 2 * span + 1
    box = max(3, round(side))
    half = box // 2
    # the blob and what the others leave of it, added (the rest is part of the blob: 2 there, 1 on the rest
    # of the blob): one warp, and a square's score, its pixels on the blob plus those on the rest, is one sum
    pair = blob + remaining
    # squares holding p: centres within half a side of it (the middle of the window); a square's sum is read
    # off the turned window's integral image, for every centre at once (the box's first row and column: `a`)
    first, count = span - 2 * half, 2 * half + 1
    a, b = slice(first, first + count), slice(first + box, first + box + count)
    # the turns about the outline's angle (a die is the same turned by 90 degrees), then finer about the best;
    # or only `near`
    coarse = _coarse_turns(blob, px, py, side) if near is None else [near]
    to_blob = np.empty((2, 3))

    def turn_window(angle: float, turned: Pixels, sums: NDArray[np.int32]) -> tuple[float, float]:
        """`pair` seen from p turned by `angle` into `turned`, its integral image into `sums`; (cos, sin)."""
        t = math.radians(angle)
        cos, sin = math.cos(t), math.sin(t)
        # window pixel (u, v) is blob point p + R(angle) (u - span, v - span): the square's axes upright
        to_blob[0] = cos, -sin, px - span * cos + span * sin
        to_blob[1] = sin, cos, py - span * sin - span * cos
        cv2.warpAffine(
            pair, to_blob, (window, window), dst=turned, flags=cv2.INTER_NEAREST | cv2.WARP_INVERSE_MAP
        )
        cv2.integral(turned, sum=sums)
        return cos, sin

    def place(angle: float, cos: float, sin: float, u: int, v: int) -> tuple[float, float, float]:
        du, dv = float(u - half), float(v - half)
        return (px + du * cos - dv * sin, py + du * sin + dv * cos, angle)

    # each coarse turn's window, (cos, sin), every square's score and the best of them
    tried: dict[float, tuple[Pixels, tuple[float, float], NDArray[np.int32], int]] = {}

    def score_turns(angles: list[float]) -> None:
        """Score the squares of `angles` at once: their windows and integral images side by side."""
        turned_all = np.empty((len(angles), window, window), np.uint8)
        sums_all = np.empty((len(angles), window + 1, window + 1), np.int32)
        turns = [turn_window(angle, turned_all[i], sums_all[i]) for i, angle in enumerate(angles)]
        # the best lies on the blob and takes most of what is still unexplained (of squares alike on the
        # blob, as along a row of dice, the one clear of the others)
        scores = sums_all[:, b, b] - sums_all[:, a, b]
        scores -= sums_all[:, b, a]
        scores += sums_all[:, a, a]
        tops = scores.reshape(len(angles), -1).max(axis=1)
        for i, angle in enumerate(angles):
            tried[angle] = (turned_all[i], turns[i], scores[i], int(tops[i]))

    score_turns(coarse)
    low, high = coarse[0], coarse[-1]
    while near is None and len(tried) < round(90.0 / SPLIT_ANGLE_STEP):
        # the best (or one as good) at an end of the turns tried: the scores may rise beyond it, one more turn
        # that way
        top = max(entry[3] for entry in tried.values())
        more: list[float] = []
        if tried[low][3] == top:
            low = (low - SPLIT_ANGLE_STEP) % 90.0
            more.append(low)
        if tried[high][3] == top:
            high = (high + SPLIT_ANGLE_STEP) % 90.0
            if high not in more:
                more.append(high)
        if not more:
            break
        score_turns(more)
    # the first best in order of turn, then row by row: as a search of the turns in order, keeping only a
    # strictly better square, finds (`max` keeps the first of equals)
    angle = max(sorted(tried), key=lambda turn: tried[turn][3])
    turned_best, cos_sin, scores, best_score = tried[angle]
    v, u = divmod(int(np.argmax(scores)), count)
    best = place(angle, *cos_sin, u, v)
    cover = np.count_nonzero(turned_best[first + v : first + v + box, first + u : first + u + box])
    # then the turns halfway to the coarse ones either side of the best
    turned = np.empty((window, window), np.uint8)
    sums = np.empty((window + 1, window + 1), np.int32)
    score = np.empty((count, count), np.int32)
    coarse_best = angle
    for offset in SPLIT_FINE_TURNS:
        angle = coarse_best + SPLIT_ANGLE_STEP * offset
        cos, sin = turn_window(angle, turned, sums)
        np.subtract(sums[b, b], sums[a, b], out=score)
        score -= sums[b, a]
        score += sums[a, a]
        top = int(score.max())
        if top > best_score:  # where it lies is looked up only then (a finer turn is seldom better)
            best_score = top
            v, u = divmod(int(np.argmax(score)), count)
            best = place(angle, cos, sin, u, v)
            cover = np.count_nonzero(turned[first + v : first + v + box, first + u : first + u + box])
    x, y, angle = best
    return x, y, angle, float(cover) / (box * box)


def _outline_angle(blob: Pixels, px: float, py: float, side: float) -> tuple[float, float]:
    """The angle (degrees, 0 to 90) of the blob's outline within `SPLIT_OUTLINE_REACH` sides of (px, py),
    and how dominant it is (0: no direction, 1: one direction and its right angle only)."""
    reach = math.ceil(SPLIT_OUTLINE_REACH * side) + 2
    x0, y0 = int(px) - reach, int(py) - reach
    around = np.zeros((2 * reach + 1, 2 * reach + 1), np.float32)
    height, width = blob.shape[:2]
    left, top = max(0, x0), max(0, y0)
    right, bottom = min(width, x0 + 2 * reach + 1), min(height, y0 + 2 * reach + 1)
    around[top - y0 : bottom - y0, left - x0 : right - x0] = blob[top:bottom, left:right]
    # smoothed first: a binary outline's gradients lean to the pixel grid
    smooth = cv2.GaussianBlur(around, (0, 0), 1.0)
    gx = cv2.Sobel(smooth, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(smooth, cv2.CV_32F, 0, 1, ksize=3)
    # the gradients' angles times four (a square's edges are alike every 90 degrees) added as vectors: the
    # fourth power of gx + i gy, so weighted by the fourth power of its length (the outline's pixels most);
    # its square, (gx^2 - gy^2) + 2i gx gy, squared again and summed from three dot products
    c2 = (gx * gx - gy * gy).ravel()
    s2 = (gx * gy).ravel()  # half the square's imaginary part
    cc, ss, cs = float(np.dot(c2, c2)), 4.0 * float(np.dot(s2, s2)), 4.0 * float(np.dot(c2, s2))
    c4, s4, total = cc - ss, cs, cc + ss
    if total <= 0.0:
        return 0.0, 0.0
    return math.degrees(math.atan2(s4, c4)) / 4.0 % 90.0, math.hypot(c4, s4) / total


def _coarse_turns(blob: Pixels, px: float, py: float, side: float) -> list[float]:
    """The coarse turns (on the `SPLIT_ANGLE_STEP` grid, 0 to 90 degrees) to try first for the square
    holding (px, py), a die's corner on the blob's outline: the `SPLIT_TURNS_AROUND` steps either side of
    the outline's angle there, from the lowest turn about it to the highest (across 0 as needed); every
    turn, in order, when no angle dominates the outline there."""
    every = round(90.0 / SPLIT_ANGLE_STEP)
    angle, dominance = _outline_angle(blob, px, py, side)
    if dominance < SPLIT_OUTLINE_WEAK:
        return [step * SPLIT_ANGLE_STEP for step in range(every)]
    nearest = round(angle / SPLIT_ANGLE_STEP)
    offsets = range(-SPLIT_TURNS_AROUND, SPLIT_TURNS_AROUND + 1)
    return [(nearest + offset) % every * SPLIT_ANGLE_STEP for offset in offsets]


def _rounded(point: tuple[float, float]) -> tuple[float, float]:
    return (round(point[0], 1), round(point[1], 1))


def _size(image: Pixels) -> str:
    return f"{image.shape[1]}x{image.shape[0]}"


def to_lab(image: object) -> Pixels | None:
    """An 8-bit BGR, BGRA or grey image as 8-bit Lab (OpenCV's scale: L 0-255); None if it is not one."""
    if not isinstance(image, np.ndarray) or image.size == 0 or image.dtype != np.uint8:
        return None
    if image.ndim == 2:
        image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGR)
    elif image.ndim != 3 or image.shape[2] not in (3, 4):
        return None
    elif image.shape[2] == 4:
        image = cv2.cvtColor(image, cv2.COLOR_BGRA2BGR)
    return cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_BGR2LAB)


def rounded_square(
    centre: tuple[float, float], side: float, angle: float, corner: float = 0.14, slant: float = 1.0
) -> NDArray[np.float64]:
    """A die's outline: a square of `side` with corners rounded by `corner` sides, turned by `angle` degrees
    about its centre, its height times `slant`; (x, y) points."""
    half, radius = side / 2, side * corner
    # each corner's arc about its centre, 7 points from 0 to 90 degrees (the sines and cosines of the turns
    # are the same for every die: worked out once)
    near, far = half - radius, -half + radius
    arc_centres = np.array([[near, near], [far, near], [far, far], [near, far]]).repeat(7, axis=0)
    points = arc_centres + radius * _CORNER_ARCS
    t = math.radians(angle)
    rotation = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    return (points * np.array([1.0, slant])) @ rotation.T + np.array(centre)


_CORNER_ARCS = np.array(
    [
        (math.cos(math.radians(start + 15 * step)), math.sin(math.radians(start + 15 * step)))
        for start in (0, 90, 180, 270)
        for step in range(7)
    ]
)
_CORNER_ARCS.flags.writeable = False


def outside_as_felt(image: Pixels, circle: tuple[float, float, float], origin: tuple[int, int]) -> Pixels:
    """A copy of `image` (whose top-left pixel is `origin` in the frame) with everything outside the round
    tray `circle` painted the median colour of the felt along the inside of its rim."""
    return RoundTray(image, circle, origin).painted()


class RoundTray:
    """A tray cut of a frame (`image`, whose top-left pixel is `origin` in the frame) with a round tray
    `circle`: it is read with everything outside the circle painted the felt's median colour along the
    inside of its rim (nothing lies beyond the wall). Painting the whole cut takes as long as shrinking it
    to find the dice, so only what is read of it is painted: the whole (`painted`), a window of it (`window`,
    the same pixels), the cut shrunk (`shrunk`)."""

    def __init__(self, image: Pixels, circle: tuple[float, float, float], origin: tuple[int, int]) -> None:
        height, width = image.shape[:2]
        self.image = image
        self.circle = (circle[0] - origin[0], circle[1] - origin[1], circle[2])  # in the cut's pixels
        self.masks = _circle_masks(height, width, *self.circle)
        # no felt along the rim inside the cut (the circle lies beyond it): nothing is painted
        masks = self.masks
        if not len(masks.rim_ys):
            self.felt = None
            return
        if masks.rim_map is None:
            samples = image[masks.rim_ys, masks.rim_xs]
        else:
            # OpenCV's nearest-pixel remap: the same pixels as numpy's indexing, several times as fast
            samples = cv2.remap(image, masks.rim_map, None, cv2.INTER_NEAREST)
        self.felt = _median_uint8(samples.reshape(len(masks.rim_ys), *image.shape[2:]))

    def painted(self) -> Pixels:
        """A copy of the whole cut, painted."""
        if self.felt is None:
            return self.image.copy()
        return _painted(self.image, self.masks.inside, self.felt)

    def window(self, top: int, bottom: int, left: int, right: int) -> Pixels:
        """The painted cut's rows `top:bottom` and columns `left:right` (not empty): a view of the cut when
        they lie wholly inside the circle (its four corners do: a disc is convex), else a painted copy."""
        part = self.image[top:bottom, left:right]
        if self.felt is None:
            return part
        inside = self.masks.inside[top:bottom, left:right]
        if inside[0, 0] and inside[0, -1] and inside[-1, 0] and inside[-1, -1]:
            return part
        return _painted(part, inside, self.felt)

    def shrunk(self, factor: float) -> tuple[Pixels, float]:
        """The cut shrunk by `factor` as `_shrink` shrinks it (with the scale reached), then painted: each
        pixel averaged from the cut's pixels inside the circle only as it is, every other one the felt (one
        averaged across the rim loses its part inside, a sliver of the felt's edge to find dice in)."""
        shrunk, scale = _shrink(self.image, factor)
        if self.felt is None:
            return shrunk, scale
        height, width = self.image.shape[:2]
        return _painted(shrunk, _shrunk_inside(height, width, self.circle, factor), self.felt), scale


def _painted(image: Pixels, inside: Pixels, felt: Pixels) -> Pixels:
    """A copy of `image` with the felt's colour where `inside` is 0: OpenCV's fill and masked copy take a
    tenth of the time of numpy's assignment through a boolean mask (the same pixels)."""
    height, width = image.shape[:2]
    painted = np.empty_like(image)
    if painted.ndim == 2:
        painted.fill(int(felt))
    else:
        cv2.rectangle(painted, (0, 0), (width - 1, height - 1), [int(value) for value in felt], cv2.FILLED)
    cv2.copyTo(image, inside, painted)
    return painted


def _median_uint8(samples: Pixels) -> Pixels:
    """Each channel's median of uint8 `samples` (one row per sample) as `np.median(samples, axis=0)` cast to
    uint8 gives it (of an even count, the mean of the two middle values, rounded down), from each channel's
    histogram (`_histogram_percentiles`): `np.median` (a sort) takes more than twice as long on a few thousand
    samples."""
    column = samples.reshape(len(samples), 1, -1)  # an image one pixel wide, its channels the samples'
    medians = [
        int(_histogram_percentiles(column, channel, None, (50.0,))[0]) for channel in range(column.shape[2])
    ]
    median: Pixels = np.array(medians, np.uint8).reshape(samples.shape[1:])
    return median


@dataclass(frozen=True)
class CircleMasks:
    """Where a round tray's circle lies in an image of its size (`_circle_masks`)."""

    inside: Pixels  # 1 for the pixels inside the circle
    # a sample of the pixels just inside its rim (the felt along the rim): their rows and columns, and the
    # same as a map for `cv2.remap` (x, y of each, in a column), None in an image too large for it
    rim_ys: NDArray[np.intp]
    rim_xs: NDArray[np.intp]
    rim_map: Pixels | None


@functools.lru_cache(maxsize=8)
def _circle_masks(height: int, width: int, centre_x: float, centre_y: float, radius: float) -> CircleMasks:
    """The masks of a circle in an image of `height` x `width` (cached: one per calibration and size)."""
    ys, xs = np.ogrid[0:height, 0:width]
    distance2 = (xs - centre_x) ** 2 + (ys - centre_y) ** 2
    inside: Pixels = (distance2 <= radius * radius).astype(np.uint8)
    rim = (distance2 <= radius * radius) & (distance2 > (0.96 * radius) ** 2)
    rim &= (xs + ys) % 7 == 0  # a sample is enough for a median
    rim_ys, rim_xs = np.nonzero(rim)
    rim_map = None
    # `cv2.remap` takes no image, nor map, with a side of 32767 pixels or more
    if max(height, width, len(rim_ys)) < np.iinfo(np.int16).max:
        rim_map = np.stack([rim_xs, rim_ys], axis=1).astype(np.int16).reshape(-1, 1, 2)
    for array in (inside, rim_ys, rim_xs, rim_map):
        if array is not None:
            array.flags.writeable = False
    return CircleMasks(inside, rim_ys, rim_xs, rim_map)


@functools.lru_cache(maxsize=8)
def _shrunk_inside(height: int, width: int, circle: tuple[float, float, float], factor: float) -> Pixels:
    """1 for the pixels of an image of `height` x `width` shrunk by `factor` (`_shrink`) that are averaged
    from its pixels inside `circle` only (cached: one per calibration and size)."""
    inside = _circle_masks(height, width, *circle).inside
    shrunk, _ = _shrink(inside * np.uint8(255), factor)
    mask: Pixels = (shrunk == 255).astype(np.uint8)
    mask.flags.writeable = False
    return mask


def _pip_kernel(side: float) -> int:
    """The width of the disc a die of `side` pixels has its pips found with: wider than a pip, narrower than
    the gap between pips (a blob's responses are cut for a die only when both were worked out with it)."""
    return _odd(max(3, round(side * 0.45)))


def _pip_response(lightness: Pixels, polarity: str, kernel: int) -> Pixels:
    """The black-hat (dark pips) or top-hat (light pips) of 8-bit lightness with a disc `kernel` wide."""
    operation = cv2.MORPH_BLACKHAT if polarity == "dark" else cv2.MORPH_TOPHAT
    return _morphed(lightness, operation, _disc(kernel))


def _odd(size: int) -> int:
    return max(1, size) | 1


@functools.lru_cache(maxsize=64)
def _disc(size: int) -> Pixels:
    # cached: a few sizes per calibration, asked for several times per die
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (size, size))
    disc.flags.writeable = False
    return disc


def _morphed(image: Pixels, operation: int, kernel: Pixels) -> Pixels:
    """`cv2.morphologyEx(image, operation, kernel)` for an erosion, a dilation, an opening, a closing, a
    black-hat or a top-hat of a one-channel 8-bit image: the same pixels, faster. OpenCV runs a kernel that
    is not a rectangle several times as fast on rows a whole number of SIMD blocks long (rows of 93 pixels:
    2-3x the time of 96), so the rows are lengthened by columns that hold what OpenCV's own border stands
    for in each step (the most for an erosion, the least for a dilation); the pixels of the image come out
    the same. (Segmentation's small kernels, 3-7 px, gain nothing by it and call OpenCV directly.)"""
    if operation in (cv2.MORPH_BLACKHAT, cv2.MORPH_TOPHAT):
        # as OpenCV makes them: the closing less the image, the image less the opening (never below 0: a
        # closing is never darker than the image, an opening never lighter)
        if operation == cv2.MORPH_BLACKHAT:
            return cv2.subtract(_morphed(image, cv2.MORPH_CLOSE, kernel), image)
        return cv2.subtract(image, _morphed(image, cv2.MORPH_OPEN, kernel))
    steps = {
        cv2.MORPH_OPEN: (cv2.erode, cv2.dilate),
        cv2.MORPH_CLOSE: (cv2.dilate, cv2.erode),
        cv2.MORPH_ERODE: (cv2.erode,),
        cv2.MORPH_DILATE: (cv2.dilate,),
    }.get(operation)
    height, width = image.shape[:2]
    wide = _ceil_div(width, MORPHOLOGY_BLOCK) * MORPHOLOGY_BLOCK
    if wide == width or steps is None or image.ndim != 2 or image.dtype != np.uint8:
        return cv2.morphologyEx(image, operation, kernel)
    work: Pixels = np.empty((height, wide), np.uint8)
    work[:, :width] = image
    for step in steps:
        work[:, width:] = 255 if step is cv2.erode else 0
        work = step(work, kernel)
    return work[:, :width]


def _components(mask: Pixels) -> tuple[int, Pixels, Pixels, Pixels]:
    """`cv2.connectedComponentsWithStats(mask, connectivity=8)`: the same labels, statistics and centroids
    (checked in the tests), by the block-based algorithm (BBDT): OpenCV's default (Spaghetti) takes about
    three times as long with statistics on the small masks read here."""
    count, labels, stats, centroids = cv2.connectedComponentsWithStatsWithAlgorithm(
        mask, 8, cv2.CV_32S, cv2.CCL_BBDT
    )
    return int(count), labels, stats, centroids


def _region(contour: Pixels, width: int, height: int, notch: int) -> DieRegion:
    """A blob as a die: its convex hull (a die is convex; a pip on its rim must not bite into it)."""
    x, y, w, h = cv2.boundingRect(contour)
    hull = cv2.convexHull(contour)
    mask = np.zeros((h, w), np.uint8)
    cv2.drawContours(mask, [hull - np.array([x, y], np.int32)], -1, 1, thickness=cv2.FILLED)
    moments = cv2.moments(mask, binaryImage=True)
    area = float(moments["m00"])
    (_, _), (rect_w, rect_h), angle = cv2.minAreaRect(contour)
    blob = np.zeros((h, w), np.uint8)
    cv2.drawContours(blob, [contour - np.array([x, y], np.int32)], -1, 1, thickness=cv2.FILLED)
    return DieRegion(
        box=(x, y, w, h),
        mask=mask,
        area=area,
        centre=(moments["m10"] / area + x, moments["m01"] / area + y) if area > 0 else (x + w / 2, y + h / 2),
        angle=float(angle),
        aspect=max(rect_w, rect_h) / max(1e-6, min(rect_w, rect_h)),
        at_edge=x <= 0 or y <= 0 or x + w >= width or y + h >= height,
        contour=contour,
        notch=notch,
        # closing only adds pixels: the blob's own area bounds the solidity from below
        least_solidity=min(1.0, cv2.countNonZero(blob) / area) if area > 0 else 0.0,
    )


def _region_at(regions: list[DieRegion], point: tuple[float, float]) -> DieRegion | None:
    px, py = point
    for region in regions:
        x, y, w, h = region.box
        if x <= px < x + w and y <= py < y + h and region.mask[int(py) - y, int(px) - x]:
            return region
    near = [r for r in regions if math.dist(r.centre, point) < 0.5 * r.side]
    return min(near, key=lambda r: math.dist(r.centre, point)) if near else None


def _blob_statistics(
    labels: Pixels, count: int, areas: NDArray[np.float64], response: Pixels, colours: Pixels
) -> tuple[list[float], list[float], NDArray[np.float64]]:
    """Per labelled blob, in one pass over its pixels (one numpy call per statistic, not one per blob):
    roundness (minor/major axis of its pixel spread, 1 below 3 pixels), mean response, mean Lab colour."""
    xs, ys = _nonzero(labels)
    ids = labels[ys, xs]
    size = np.maximum(areas, 1.0)
    # every statistic's per-pixel values side by side, summed per blob by one `np.bincount` (bin: blob and
    # statistic): each sum adds the same values in the same order as one `np.bincount` per statistic would
    values = np.empty((len(xs), _STATISTICS), np.float64)
    x, y = values[:, 0], values[:, 1]
    x[:], y[:] = xs, ys
    np.multiply(x, x, out=values[:, 2])
    np.multiply(y, y, out=values[:, 3])
    np.multiply(x, y, out=values[:, 4])
    values[:, 5] = response[ys, xs]
    values[:, 6:] = colours[ys, xs]
    bins = (ids[:, None] * _STATISTICS + _STATISTIC_BINS).ravel()
    sums = np.bincount(bins, weights=values.ravel(), minlength=count * _STATISTICS)
    means = sums.reshape(count, _STATISTICS) / size[:, None]
    # the roundness of each blob in Python floats: a few blobs, and a dozen numpy calls would cost more than
    # the arithmetic (the same operations in the same order: the same values)
    roundness = []
    for (mean_x, mean_y, mean_xx, mean_yy, mean_xy), area in zip(
        means[:, :5].tolist(), areas.tolist(), strict=True
    ):
        # sample covariance (n - 1), plus the variance of a pixel's own quantisation (1/12)
        weight, spread = max(area, 1.0), max(area - 1.0, 1.0)
        xx = (mean_xx - mean_x * mean_x) * weight / spread + 1.0 / 12.0
        yy = (mean_yy - mean_y * mean_y) * weight / spread + 1.0 / 12.0
        xy = (mean_xy - mean_x * mean_y) * weight / spread
        half_trace, half_gap = (xx + yy) / 2.0, (xx - yy) / 2.0
        gap = math.sqrt(half_gap * half_gap + xy * xy)
        low, high = max(half_trace - gap, 0.0), half_trace + gap
        roundness.append(math.sqrt(low / max(high, 1e-12)) if area >= 3 and high > 0 else 1.0)
    return roundness, means[:, 5].tolist(), means[:, 6:]


_STATISTICS = 9  # x, y, x * x, y * y, x * y, response, L, a, b
_STATISTIC_BINS = np.arange(_STATISTICS)
_STATISTIC_BINS.flags.writeable = False


def _nonzero(image: Pixels) -> tuple[Pixels, Pixels]:
    """The x and y of every nonzero pixel of a one-channel image, row by row: `np.nonzero` (as y, x), from
    OpenCV's scan, about four times as fast on a die's few thousand pixels."""
    points = cv2.findNonZero(image)
    if points is None:  # no pixel set
        return np.empty(0, np.int32), np.empty(0, np.int32)
    points = points.reshape(-1, 2)
    return points[:, 0], points[:, 1]


def _histogram_percentiles(
    image: Pixels, channel: int, mask: Pixels | None, percents: tuple[float, ...]
) -> list[float]:
    """`np.percentile` (linear interpolation) of one channel of an 8-bit image where `mask` is set (all of it
    if None), from its histogram: one OpenCV call instead of a sort."""
    # the array's own methods: numpy's functions of the same name add a call's overhead (called per die)
    cumulative = cv2.calcHist([image], [channel], mask, [256], [0, 256]).cumsum()
    total = int(cumulative[-1])
    if total == 0:
        raise ValueError("no values")
    positions = [percent / 100.0 * (total - 1) for percent in percents]
    ranks = []
    for position in positions:
        low = math.floor(position)
        ranks += [low, min(low + 1, total - 1)]
    # the value of rank r (from 0) is the first whose cumulative count exceeds r (counts are whole numbers,
    # exact in float32 below 2^24 pixels, as the cumulative counts themselves are); all ranks in one call
    values = cumulative.searchsorted(ranks, "right").tolist()
    result = []
    for index, position in enumerate(positions):
        low_value, high_value = values[2 * index], values[2 * index + 1]
        result.append(float(low_value) + float(high_value - low_value) * (position - math.floor(position)))
    return result


def _determinant(matrix: NDArray[np.float64]) -> float:
    return float(matrix[0, 0] * matrix[1, 1] - matrix[0, 1] * matrix[1, 0])


def _inverse(matrix: NDArray[np.float64]) -> NDArray[np.float64] | None:
    """The inverse of a 2x2 matrix; None if it is singular."""
    determinant = _determinant(matrix)
    if determinant == 0.0:
        return None
    return np.array([[matrix[1, 1], -matrix[0, 1]], [-matrix[1, 0], matrix[0, 0]]]) / determinant


def _singular_ratio(matrix: NDArray[np.float64]) -> float:
    """Smaller / larger singular value of a 2x2 matrix (1: it maps a square to a square), in closed form:
    their squares sum to the squared entries and multiply to the squared determinant."""
    squares = float((matrix**2).sum())
    determinant = abs(_determinant(matrix))
    larger2 = (squares + math.sqrt(max(0.0, squares * squares - 4.0 * determinant * determinant))) / 2.0
    return determinant / larger2 if larger2 > 0.0 else 0.0


def _colour_spread(pips: list[PipBlob], body: Pixels | None) -> float:
    """Largest distance of a pip's colour from the pips' median colour, relative to how far that is from the
    die's own colour (0: all pips alike)."""
    if len(pips) < 2 or body is None:
        return 0.0
    colours = np.array([pip.colour for pip in pips], np.float64)
    ordered = np.sort(colours, axis=0)
    median = (ordered[(len(pips) - 1) // 2] + ordered[len(pips) // 2]) / 2.0
    # `np.linalg.norm`'s own arithmetic (the root of a dot product; of a sum of squares along the rows),
    # without its checks' cost per call
    gap = median - body
    contrast = max(10.0, math.sqrt(float(gap.dot(gap))))
    apart = colours - median
    return math.sqrt(float(np.maximum.reduce(np.add.reduce(apart * apart, axis=1)))) / contrast


def _sharpness(lightness: Pixels, where: Pixels) -> float:
    """Laplacian spread over the die relative to its contrast: a blur of width s divides it by about s^2,
    whatever the light and the die's colours."""
    if not cv2.countNonZero(where):
        return 0.0
    laplacian = cv2.Laplacian(lightness, cv2.CV_32F)
    _, spread = cv2.meanStdDev(laplacian, mask=where)
    low, high = _histogram_percentiles(lightness, 0, where, (2.0, 98.0))
    return float(100.0 * float(spread[0, 0]) / max(8.0, high - low))


_PERMUTATIONS: dict[int, NDArray[np.intp]] = {
    n: np.array(list(itertools.permutations(range(n))), np.intp) for n in range(2, 7)
}


@functools.lru_cache(maxsize=8)
def _affine_fit_operators(
    face: tuple[tuple[int, int], ...],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """For every pairing of pips with the face's grid positions, the two linear maps of the least-squares
    affine fit (pips centred): the pips -> the fitted matrix's rows, and the pips -> the fit's residuals.
    They depend on the face only, so a fit is two matrix products over all pairings at once."""
    canonical = np.array(face, np.float64)
    permuted = canonical[_PERMUTATIONS[len(face)]]  # (pairings, n, 2)
    to_matrix = permuted @ np.linalg.inv(canonical.T @ canonical)  # matrix = observed.T @ to_matrix
    hat = to_matrix @ permuted.transpose(0, 2, 1)  # fitted = hat @ observed
    residual = np.eye(len(face))[None, :, :] - hat
    to_matrix.flags.writeable = False
    residual.flags.writeable = False
    return to_matrix, residual


def _fit_face(
    points: NDArray[np.float64], face: tuple[tuple[int, int], ...]
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """Best map of the canonical face onto the pips, over every pairing of pips with grid positions.

    Similarity (rotation, scale, shift) for 2-3 pips, affine for 4-6 (a face seen slightly from the side is a
    parallelogram). Returns the 2x2 matrix, the shift (the face centre) and the rms error in grid units."""
    # sums divided by the count: what `mean` computes, without its overhead (a few pips, every die)
    centre = points.sum(axis=0) / len(points)  # every canonical face is centred: its pips average to (0, 0)
    observed = points - centre
    if len(face) <= 3:
        p, p_norm2 = _similarity_fit_grid(face)
        q = observed[:, 0] + 1j * observed[:, 1]
        scale = (np.conj(p) * q).sum(axis=1) / p_norm2
        residual = q[None, :] - scale[:, None] * p
        errors = np.sqrt((np.abs(residual) ** 2).sum(axis=1) / len(face)) / np.maximum(np.abs(scale), 1e-9)
        best = int(np.argmin(errors))
        a = scale[best]
        matrix = np.array([[a.real, -a.imag], [a.imag, a.real]])
        return matrix, centre, float(errors[best])
    to_matrix, to_residual = _affine_fit_operators(face)
    matrices = np.matmul(observed.T[None, :, :], to_matrix)  # (pairings, 2, 2)
    residual = np.matmul(to_residual, observed)  # (pairings, n, 2)
    determinants = matrices[:, 0, 0] * matrices[:, 1, 1] - matrices[:, 0, 1] * matrices[:, 1, 0]
    units = np.sqrt(np.maximum(np.abs(determinants), 1e-9))
    squares = residual**2
    # x^2 + y^2, as `sum(axis=2)` adds them, without its cost per pair (a reduction over an axis of 2 is slow:
    # 720 pairings of 6 pips)
    distances2 = squares[:, :, 0] + squares[:, :, 1]
    errors = np.sqrt(distances2.sum(axis=1) / len(face)) / units
    best = int(np.argmin(errors))
    return matrices[best], centre, float(errors[best])


@functools.lru_cache(maxsize=8)
def _similarity_fit_grid(
    face: tuple[tuple[int, int], ...],
) -> tuple[NDArray[np.complex128], NDArray[np.float64]]:
    """The grid positions of a face of 2-3 pips as complex numbers, for every pairing with the pips, and
    their squared norms summed per pairing: they depend on the face only."""
    permuted = np.array(face, np.float64)[_PERMUTATIONS[len(face)]]  # (pairings, n, 2)
    p = permuted[:, :, 0] + 1j * permuted[:, :, 1]
    p_norm2 = (np.abs(p) ** 2).sum(axis=1)
    p.flags.writeable = False
    p_norm2.flags.writeable = False
    return p, p_norm2


def _diagonal_angle(points: NDArray[np.float64], die_angle: float) -> float:
    """How far (degrees) the line through 2-3 pips is from a diagonal of the die's rectangle."""
    dx, dy = points[-1] - points[0]
    if len(points) == 3:
        order = np.argsort(points[:, 0] + points[:, 1] * 1e-3)
        dx, dy = points[order[-1]] - points[order[0]]
    direction = math.degrees(math.atan2(dy, dx))
    off = (direction - die_angle - 45.0) % 90.0
    return min(off, 90.0 - off)


def _empty_level(
    response: Pixels,
    inner: Pixels,
    origin: tuple[int, int],
    matrix: NDArray[np.float64],
    translation: NDArray[np.float64],
    pips: NDArray[np.float64],
    face: tuple[tuple[int, int], ...],
    pip_radius: float,
    pip_level: float,
) -> tuple[float, float, bool]:
    """How clean the face is where it has no pips, relative to the pips' own level: the strongest mark at a
    grid position the face leaves empty, the strongest mark anywhere else on the face; and whether a grid
    position falls off the die.

    A pip too faint to be found (a 6 read as 4, a 5 as 4, a 3 as 2, anything as 1) still leaves a mark at
    its grid position; texture, scratches and glare may be anywhere (a looser limit)."""
    # in Python floats: nine points, and numpy's cost per call would outweigh the arithmetic (a grid place's
    # coordinates are -1, 0 or 1, so each product is exact: the same values as the matrix product)
    (a, b), (c, d) = matrix.tolist()
    shift_x, shift_y = float(translation[0]) - origin[0], float(translation[1]) - origin[1]
    height, width = inner.shape[:2]
    # each grid position to the nearest pixel, halves to even (`round`)
    places = [(round(gx * a + gy * b + shift_x), round(gx * c + gy * d + shift_y)) for gx, gy in GRID]
    for x, y in places:
        if not (0 <= x < width and 0 <= y < height and inner.item(y, x)):
            return math.inf, math.inf, True
    determinant = a * d - b * c
    if determinant == 0.0:
        return math.inf, math.inf, True
    inverse = ((d / determinant, -b / determinant), (-c / determinant, a / determinant))
    size = _odd(max(3, round(pip_radius)))
    smooth = cv2.blur(response, (size, size))  # a mark must be pip-like in extent, not one bright pixel
    level = max(pip_level, 1e-6)
    # the strongest mark within a pixel of each empty grid position
    empty_places = _EMPTY_PLACES[face]
    if len(empty_places):
        around = cv2.dilate(smooth, _SQUARE3)
        empty = max(around.item(places[index][1], places[index][0]) for index in empty_places) / level
    else:
        empty = 0.0
    # only the pixels of the face's bounding box can be on it: the rest of the window is not looked at
    left, top, right, bottom = _face_bounds((a, b, c, d), (shift_x, shift_y), response.shape)
    # grid coordinates of every pixel, by broadcasting a row of x against a column of y
    xs = np.arange(left, right, dtype=np.float64)[None, :]
    ys = np.arange(top, bottom, dtype=np.float64)[:, None]
    dx, dy = xs - shift_x, ys - shift_y
    on_face = np.abs(inverse[0][0] * dx + inverse[0][1] * dy) <= CLEAN_FACE_EXTENT
    on_face &= np.abs(inverse[1][0] * dx + inverse[1][1] * dy) <= CLEAN_FACE_EXTENT
    on_face &= inner[top:bottom, left:right] > 0
    # away from every pip: all pips at once, each pixel's distance computed as for one pip at a time
    centres = pips - np.array(origin, np.float64)
    radius2 = (1.6 * pip_radius) ** 2
    far = (xs - centres[:, 0, None, None]) ** 2 + (ys - centres[:, 1, None, None]) ** 2 > radius2
    on_face &= far.all(axis=0)
    clutter = float(smooth[top:bottom, left:right][on_face].max()) / level if on_face.any() else 0.0
    return empty, max(clutter, empty), False


def _face_bounds(
    matrix: tuple[float, float, float, float], centre: tuple[float, float], shape: tuple[int, ...]
) -> tuple[int, int, int, int]:
    """Left, top, right, bottom (exclusive) of the pixels within `CLEAN_FACE_EXTENT` grid units of the face's
    `centre`, clipped to an image of `shape` (`matrix`: the face's map, row by row); a pixel wider on each
    side than the corners of the face, so that no pixel the inverse map puts on the face (to within
    rounding) is left out."""
    a, b, c, d = matrix
    centre_x, centre_y = centre
    # the farthest corner of the face from its centre, along x and along y
    reach_x, reach_y = CLEAN_FACE_EXTENT * (abs(a) + abs(b)), CLEAN_FACE_EXTENT * (abs(c) + abs(d))
    left, top = max(0, math.floor(centre_x - reach_x) - 1), max(0, math.floor(centre_y - reach_y) - 1)
    right = min(shape[1], math.ceil(centre_x + reach_x) + 2)
    bottom = min(shape[0], math.ceil(centre_y + reach_y) + 2)
    return left, top, max(left, right), max(top, bottom)


_EMPTY_PLACES: dict[tuple[tuple[int, int], ...], NDArray[np.intp]] = {
    face: np.array([index for index, place in enumerate(GRID) if place not in face], np.intp)
    for face in FACES.values()
}
_SQUARE3 = np.ones((3, 3), np.uint8)


def _marks_on_face(
    strays: list[PipBlob], matrix: NDArray[np.float64], translation: NDArray[np.float64]
) -> bool:
    if not strays:
        return False
    inverse = _inverse(matrix)
    if inverse is None:
        return True
    for mark in strays:
        u, v = inverse @ (np.array(mark.centre) - translation)
        if abs(u) <= FACE_HALF_EXTENT and abs(v) <= FACE_HALF_EXTENT:
            return True
    return False
