"""Synthetic dice on a tray, with the ground truth: for tests, the benchmark and the demo.

Each die is a cube with the faces of a real die (opposite faces add up to 7), turned in 3D and seen straight
from above (orthographic), so a die lying flat shows one face and a cocked die shows its tilted top face,
foreshortened, and a side face with its pips. Faces are shaded by the light's direction, pips are round
marks on their face, dice cast a soft shadow; each die is drawn 4x larger and shrunk, so its edges are as soft
as a camera's. A stacked die lies on another and, being nearer the camera, looks larger.

    scene = random_scene(rng, dice=3)              # DiceScene: the dice, the hazard, the truth
    scene = dome_scene(rng)                        # 3-7 dice in a shaker's round dome, mostly touching
    image = render(scene, seed=1)                  # BGR uint8, 1280x720 by default
    scene.values, scene.readable                   # what a reader must answer (or refuse when not readable)

A `DiceScene` says whether it can be read (`readable`: every die flat, apart, in view) and the values a
reader must give then; in a scene that is not readable (cocked, stacked) any reading is wrong. Touching dice
and the photographic hazards (blur, dark, glare) may be read or refused, but a reading must be right.

`DiceRenderer(width=, height=)` is a renderer for `drivers.camera.sources.SyntheticSource` (and, named `dice`
by the camera's record in `drivers.registry`, for a camera's `port = "synthetic:dice"`): rounds of dice
rolling for some frames and then at rest; `scene_at(index)` is the truth of the frame `index`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import cv2
import numpy as np
from numpy.typing import NDArray

from drivers.camera.sources import TrayRenderer
from drivers.dice.reader import FACES

Image = NDArray[np.uint8]
Pose = Literal["flat", "cocked", "stacked"]
Hazard = Literal["none", "touching", "cocked", "stacked", "blur", "dark", "glare"]
#: scenes that no reader may read (the dice are re-shaken); touching dice lie flat, each may be read
UNREADABLE: frozenset[str] = frozenset({"cocked", "stacked"})
#: how often each hazard comes in `random_scene` by default
HAZARD_WEIGHTS: dict[Hazard, float] = {
    "none": 0.5,
    "touching": 0.1,
    "cocked": 0.1,
    "stacked": 0.08,
    "blur": 0.08,
    "dark": 0.07,
    "glare": 0.07,
}

CALM: dict[Hazard, float] = {"none": 1.0}  # scenes without a hazard

SUPERSAMPLE = 4
PIP_SPACING = 0.27  # pip grid unit / die side
PIP_RADIUS = 0.085  # / die side
CORNER = 0.14  # corner radius / die side
IVORY = np.array([228.0, 234.0, 238.0])  # BGR
INK = np.array([30.0, 26.0, 24.0])
RED_INK = np.array([40.0, 30.0, 170.0])


@dataclass(frozen=True)
class SceneDie:
    value: int  # the face on top
    centre: tuple[float, float]  # frame pixels
    side: float  # pixels, as seen when flat on the tray
    angle: float  # degrees, turn about the vertical
    pose: Pose = "flat"
    tilt: float = 0.0  # degrees off flat (cocked)
    side_value: int = 2  # the face beside the top one that a tilt shows (not value, not 7 - value)


@dataclass(frozen=True)
class DiceScene:
    dice: tuple[SceneDie, ...]
    hazard: Hazard = "none"
    blur: float = 0.0  # Gaussian sigma over the frame, pixels
    gain: float = 1.0  # exposure
    gradient: tuple[float, float] = (0.0, 0.0)  # light falling off across the frame (x, y), share
    glare: tuple[float, float, float, float] | None = None  # x, y, radius, strength of a bright spot
    noise: float = 2.0  # sensor noise sigma, grey levels
    light: tuple[float, float] = (0.3, -0.4)  # where the light comes from (x, y), relative to overhead
    red_pips: bool = False  # the 1 and the 4 in red, as on many sic bo dice
    dome: tuple[float, float, float] | None = None  # a shaker's dome seen from above: centre x, y and radius
    touching_dice: int = 0  # dice that touch another (a dome scene says; a tray scene's hazard does)

    @property
    def readable(self) -> bool:
        return self.hazard not in UNREADABLE

    @property
    def values(self) -> tuple[int, ...]:
        """The top faces left to right (what a reading of this scene must be)."""
        return tuple(d.value for d in sorted(self.dice, key=lambda d: d.centre[0]))


# --- scenes ---------------------------------------------------------------------------------------------


def tray_area(width: int, height: int) -> tuple[int, int, int, int]:
    """The felt of `TrayRenderer` (inside its rim): x, y, w, h."""
    rim = max(2, min(height, width) // 8)
    return (rim, rim, width - 2 * rim, height - 2 * rim)


def random_scene(
    rng: np.random.Generator,
    *,
    dice: int = 3,
    width: int = 1280,
    height: int = 720,
    side: tuple[float, float] = (58.0, 70.0),
    hazards: dict[Hazard, float] | None = None,
    hazard: Hazard | None = None,
    red_pips: bool = False,
) -> DiceScene:
    """A random scene of `dice` dice on the tray (1-7), with one hazard drawn from `hazards` (or `hazard`)."""
    if not 1 <= dice <= 7:
        raise ValueError("1 to 7 dice")
    weights = hazards or HAZARD_WEIGHTS
    if hazard is None:
        names = list(weights)
        p = np.array([weights[n] for n in names], float)
        hazard = names[int(rng.choice(len(names), p=p / p.sum()))]
    if dice == 1 and hazard in ("touching", "stacked"):
        hazard = "cocked"
    size = float(rng.uniform(*side))
    placed = _place(rng, dice, size, width, height)
    members = [
        SceneDie(
            int(rng.integers(1, 7)), centre, size * float(rng.uniform(0.97, 1.03)), float(rng.uniform(0, 90))
        )
        for centre in placed
    ]
    members = [replace(d, side_value=_beside(rng, d.value)) for d in members]
    scene = DiceScene(
        tuple(members),
        hazard,
        blur=float(rng.choice([0.0, rng.uniform(0.3, 0.9)])),
        gain=float(rng.uniform(0.85, 1.1)),
        gradient=(float(rng.uniform(-0.12, 0.12)), float(rng.uniform(-0.12, 0.12))),
        noise=float(rng.uniform(1.0, 3.5)),
        light=(float(rng.uniform(-0.5, 0.5)), float(rng.uniform(-0.5, 0.5))),
        red_pips=red_pips,
    )
    return _with_hazard(rng, scene)


def _beside(rng: np.random.Generator, value: int) -> int:
    return int(rng.choice([v for v in range(1, 7) if v not in (value, 7 - value)]))


def _place(
    rng: np.random.Generator, count: int, side: float, width: int, height: int
) -> list[tuple[float, float]]:
    """Centres at least 1.9 sides apart (so that no two dice touch, however turned), on the felt."""
    x, y, w, h = tray_area(width, height)
    margin = side * 1.2
    centres: list[tuple[float, float]] = []
    for _ in range(2000):
        if len(centres) == count:
            break
        point = (
            float(rng.uniform(x + margin, x + w - margin)),
            float(rng.uniform(y + margin, y + h - margin)),
        )
        if all(math.dist(point, c) >= 1.9 * side for c in centres):
            centres.append(point)
    if len(centres) < count:
        raise ValueError(f"{count} dice of {side:.0f} px do not fit apart on a {w}x{h} tray")
    return centres


def _with_hazard(rng: np.random.Generator, scene: DiceScene) -> DiceScene:
    dice = list(scene.dice)
    hazard = scene.hazard
    if hazard == "touching":
        # the second die pushed against the first, edge to edge, about the same turn
        first = dice[0]
        turn = first.angle + float(rng.uniform(-6, 6))
        direction = math.radians(first.angle + 90 * int(rng.integers(0, 4)))
        gap = first.side * float(rng.uniform(0.97, 1.0))
        centre = (first.centre[0] + gap * math.cos(direction), first.centre[1] + gap * math.sin(direction))
        dice[1] = replace(dice[1], centre=centre, angle=turn, side=first.side)
    elif hazard == "cocked":
        index = int(rng.integers(0, len(dice)))
        dice[index] = replace(dice[index], pose="cocked", tilt=float(rng.uniform(20, 40)))
    elif hazard == "stacked":
        lower = dice[0]
        direction = float(rng.uniform(0, 2 * math.pi))
        offset = lower.side * float(rng.uniform(0.15, 0.45))
        centre = (
            lower.centre[0] + offset * math.cos(direction),
            lower.centre[1] + offset * math.sin(direction),
        )
        dice[1] = replace(dice[1], centre=centre, pose="stacked", side=lower.side)
    elif hazard == "blur":
        return replace(scene, blur=float(rng.uniform(1.2, 4.0)))
    elif hazard == "dark":
        return replace(scene, gain=float(rng.uniform(0.2, 0.5)))
    elif hazard == "glare":
        target = dice[int(rng.integers(0, len(dice)))]
        spot = (
            target.centre[0] + float(rng.uniform(-0.4, 0.4)) * target.side,
            target.centre[1] + float(rng.uniform(-0.4, 0.4)) * target.side,
            target.side * float(rng.uniform(0.15, 0.6)),
            float(rng.uniform(60, 220)),
        )
        return replace(scene, glare=spot)
    return replace(scene, dice=tuple(dice))


# --- a shaker's dome -------------------------------------------------------------------------------------

DOME_RADIUS = 0.46  # of the frame's height
RIM_WIDTH = 0.02  # of the dome's radius: the metal ring the dome sits in
# grey levels the light's reflection on the glass adds to the felt (brighter than the die contrast, it is a
# die-coloured crescent, which a die lying on it joins)
REFLECTION = 6.0
TOUCH_GAP = 1.5  # pixels: dice closer than this touch (one blob)


def dome_scene(
    rng: np.random.Generator,
    *,
    dice: int | None = None,
    width: int = 1280,
    height: int = 720,
    side: tuple[float, float] = (58.0, 70.0),
    touching: float = 0.8,
    red_pips: bool = False,
) -> DiceScene:
    """Dice at rest in a sic bo shaker's dome, seen from above: 3-7 dice (`dice`) on the felt of a round dome,
    each die after the first laid against a die already there with probability `touching` (edge to edge or
    at any turn, as dice come to rest together), else apart; none crosses the rim. The dome's rim, its
    darker edge and the reflection of the light on its glass are drawn by `render`."""
    count = int(rng.integers(3, 8)) if dice is None else dice
    if not 1 <= count <= 7:
        raise ValueError("1 to 7 dice")
    size = float(rng.uniform(*side))
    radius = DOME_RADIUS * height
    centre = (width / 2, height / 2)  # the camera is fixed above the dome
    placed: list[SceneDie] = []
    for _ in range(count):
        placed.append(_dome_die(rng, placed, size, centre, radius, touching))
    members = tuple(replace(d, side_value=_beside(rng, d.value)) for d in placed)
    together = _touching(members)
    scene = DiceScene(
        members,
        "touching" if together else "none",
        blur=float(rng.choice([0.0, rng.uniform(0.3, 0.8)])),
        gain=float(rng.uniform(0.9, 1.08)),
        gradient=(float(rng.uniform(-0.06, 0.06)), float(rng.uniform(-0.06, 0.06))),
        noise=float(rng.uniform(1.0, 3.0)),
        light=(float(rng.uniform(-0.3, 0.3)), float(rng.uniform(-0.3, 0.3))),
        red_pips=red_pips,
        dome=(centre[0], centre[1], radius),
        touching_dice=together,
    )
    return scene


def _outline_at(centre: tuple[float, float], side: float, angle: float) -> NDArray[np.float32]:
    t = math.radians(angle)
    turn = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
    return ((_OUTLINE * side) @ turn.T + np.array(centre)).astype(np.float32)


def _overlap(a: NDArray[np.float32], b: NDArray[np.float32]) -> float:
    area, _ = cv2.intersectConvexConvex(a, b)
    return float(area)


def _dome_die(
    rng: np.random.Generator,
    placed: list[SceneDie],
    size: float,
    centre: tuple[float, float],
    radius: float,
    touching: float,
) -> SceneDie:
    """One more die in the dome: against a die already there (with probability `touching`), else apart."""
    reach = radius - 0.75 * size  # a die's corner is 0.71 sides from its centre: none crosses the rim
    for _ in range(200):
        side = size * float(rng.uniform(0.98, 1.02))
        angle = float(rng.uniform(0, 90))
        value = int(rng.integers(1, 7))
        if placed and rng.random() < touching:
            anchor = placed[int(rng.integers(0, len(placed)))]
            if rng.random() < 0.5:  # lying flush, about as turned as its neighbour
                angle = anchor.angle + float(rng.uniform(-5, 5))
            heading = float(rng.uniform(0, 2 * math.pi))
            near, far = 0.3 * size, 2.0 * size  # overlapping at `near`, apart at `far`: the contact between
            for _ in range(20):
                middle = (near + far) / 2
                point = (
                    anchor.centre[0] + middle * math.cos(heading),
                    anchor.centre[1] + middle * math.sin(heading),
                )
                mine = _outline_at(point, side, angle)
                if _overlap(mine, _outline_at(anchor.centre, anchor.side, anchor.angle)) > 0:
                    near = middle
                else:
                    far = middle
            distance = far + float(rng.uniform(0.0, 0.8))  # touching: at most a pixel apart
            point = (
                anchor.centre[0] + distance * math.cos(heading),
                anchor.centre[1] + distance * math.sin(heading),
            )
        else:
            turn, spread = float(rng.uniform(0, 2 * math.pi)), reach * math.sqrt(float(rng.uniform(0, 1)))
            point = (centre[0] + spread * math.cos(turn), centre[1] + spread * math.sin(turn))
        if math.dist(point, centre) > reach:
            continue
        mine = _outline_at(point, side, angle)
        # clear of every other die; a die not laid against another is a quarter of a side from all of them
        grown = _outline_at(point, side * 1.5, angle)
        others = [d for d in placed if math.dist(d.centre, point) > 0.3 * size]
        if len(others) != len(placed):
            continue
        clear = [_overlap(mine, _outline_at(d.centre, d.side, d.angle)) <= 0 for d in placed]
        apart = [_overlap(grown, _outline_at(d.centre, d.side, d.angle)) <= 0 for d in placed]
        if all(clear) and (sum(apart) >= len(placed) - 1 if placed and not all(apart) else True):
            return SceneDie(value, point, side, angle)
    raise ValueError(f"no room for another die of {size:.0f} px in the dome")


def _touching(dice: tuple[SceneDie, ...]) -> int:
    """How many of the dice touch another (closer than `TOUCH_GAP` pixels)."""
    together = set()
    for i, a in enumerate(dice):
        grown = _outline_at(a.centre, a.side + 2 * TOUCH_GAP, a.angle)
        for j in range(i + 1, len(dice)):
            b = dice[j]
            if _overlap(grown, _outline_at(b.centre, b.side, b.angle)) > 0:
                together |= {i, j}
    return len(together)


@functools.lru_cache(maxsize=4)
def _dome(width: int, height: int, centre_x: float, centre_y: float, radius: float) -> Image:
    """The empty dome from above: felt lit from the middle and darker toward the rim, the metal ring the
    dome sits in, the shaker's felt-covered base beyond it in the dome's shade, and the reflection of the
    light on the glass: a faint bright arc near the rim."""
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    distance = np.sqrt((xs - centre_x) ** 2 + (ys - centre_y) ** 2) / radius
    felt = 1.0 - 0.25 * np.clip(distance, 0, 1) ** 2
    image = np.empty((height, width, 3), np.float32)
    image[..., 0], image[..., 1], image[..., 2] = 40 * felt, 118 * felt, 48 * felt
    rim = (distance >= 1.0) & (distance < 1.0 + RIM_WIDTH)
    shine = 110 + 40 * np.cos(np.arctan2(ys - centre_y, xs - centre_x) - 0.8)
    for channel in range(3):
        image[..., channel][rim] = shine[rim]
    image[distance >= 1.0 + RIM_WIDTH] = (28, 30, 34)
    # the reflection of the light on the dome: a soft arc near the rim on the light's side
    angle = np.arctan2(ys - centre_y, xs - centre_x)
    arc = np.exp(-(((distance - 0.92) / 0.025) ** 2)) * np.clip(np.cos(angle + 2.2), 0, 1) ** 4
    image += (arc * (distance < 1.0) * REFLECTION)[..., None]
    return np.clip(image, 0, 255).astype(np.uint8)


# --- drawing --------------------------------------------------------------------------------------------


def render(
    scene: DiceScene, *, width: int = 1280, height: int = 720, seed: int = 0, tray: Image | None = None
) -> Image:
    """The scene as a BGR frame (the tray of `TrayRenderer` unless `tray` is given)."""
    if tray is not None:
        base = tray
    elif scene.dome is not None:
        base = _dome(width, height, *scene.dome)
    else:
        base = _tray(width, height)
    frame: NDArray[Any] = base.astype(np.float32)
    for die in sorted(scene.dice, key=lambda d: d.pose == "stacked"):  # a stacked die last: it is on top
        _draw_die(frame, die, scene)
    height, width = frame.shape[:2]
    if scene.gradient != (0.0, 0.0):
        across = np.linspace(-1.0, 1.0, width, dtype=np.float32) * scene.gradient[0]
        down = np.linspace(-1.0, 1.0, height, dtype=np.float32) * scene.gradient[1]
        frame *= (1.0 + across[None, :] + down[:, None])[..., None]
    if scene.glare is not None:
        gx, gy, radius, strength = scene.glare
        reach = 4 * radius
        x0, x1 = max(0, round(gx - reach)), min(width, round(gx + reach))
        y0, y1 = max(0, round(gy - reach)), min(height, round(gy + reach))
        xs = np.arange(x0, x1, dtype=np.float32)[None, :] - gx
        ys = np.arange(y0, y1, dtype=np.float32)[:, None] - gy
        frame[y0:y1, x0:x1] += (np.exp(-(xs * xs + ys * ys) / (2 * radius * radius)) * strength)[..., None]
    frame *= scene.gain
    if scene.blur > 0:
        frame = cv2.GaussianBlur(frame, (0, 0), scene.blur)
    # sensor noise: a window of a fixed field of Gaussian noise, at a place chosen by the seed (drawing fresh
    # noise for every frame would take most of the time of a render)
    pool = _noise(height, width)
    rng = np.random.default_rng(seed)
    dy, dx = int(rng.integers(0, NOISE_MARGIN)), int(rng.integers(0, NOISE_MARGIN))
    frame += pool[dy : dy + height, dx : dx + width] * np.float32(scene.noise)
    return np.clip(frame, 0, 255).astype(np.uint8)


NOISE_MARGIN = 64


@functools.lru_cache(maxsize=2)
def _noise(height: int, width: int) -> NDArray[np.float32]:
    pool = np.random.default_rng(20261201).standard_normal((height + NOISE_MARGIN, width + NOISE_MARGIN, 3))
    noise = pool.astype(np.float32)
    noise.flags.writeable = False
    return noise


@functools.lru_cache(maxsize=4)
def _tray(width: int, height: int) -> Image:
    image = TrayRenderer(width, height)(0, 0.0)
    image.flags.writeable = False
    return image


def _rotation(yaw: float, tilt: float, tilt_axis: float) -> NDArray[np.float64]:
    """Turn about the vertical by `yaw` after leaning by `tilt` about a horizontal axis at `tilt_axis`."""
    a, t, y = math.radians(tilt_axis), math.radians(tilt), math.radians(yaw)
    axis = np.array([math.cos(a), math.sin(a), 0.0])
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    lean = np.eye(3) + math.sin(t) * k + (1 - math.cos(t)) * (k @ k)
    turn = np.array([[math.cos(y), -math.sin(y), 0], [math.sin(y), math.cos(y), 0], [0, 0, 1]])
    return turn @ lean


def _faces(
    top: int, beside: int
) -> list[tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], int]]:
    """(normal, u axis, v axis, value) of the six faces, in the die's own frame (+z up)."""
    third = next(v for v in range(1, 7) if v not in (top, 7 - top, beside, 7 - beside))
    e = np.eye(3)
    return [
        (e[2], e[0], e[1], top),
        (-e[2], e[0], -e[1], 7 - top),
        (e[0], e[1], e[2], beside),
        (-e[0], -e[1], e[2], 7 - beside),
        (e[1], -e[0], e[2], third),
        (-e[1], e[0], e[2], 7 - third),
    ]


def _rounded_square(steps: int = 6) -> NDArray[np.float64]:
    """A unit square (-0.5..0.5) with rounded corners, as (u, v) points."""
    points = []
    inner = 0.5 - CORNER
    for cu, cv, start in (
        (inner, inner, 0),
        (-inner, inner, 90),
        (-inner, -inner, 180),
        (inner, -inner, 270),
    ):
        for step in range(steps + 1):
            a = math.radians(start + 90 * step / steps)
            points.append((cu + CORNER * math.cos(a), cv + CORNER * math.sin(a)))
    return np.array(points)


_OUTLINE = _rounded_square()
_CIRCLE = np.array([(math.cos(a), math.sin(a)) for a in np.linspace(0, 2 * math.pi, 20, endpoint=False)])


def _draw_die(frame: NDArray[np.float32], die: SceneDie, scene: DiceScene) -> None:
    side = die.side * (1.12 if die.pose == "stacked" else 1.0)  # a die on another is nearer the camera
    rotation = _rotation(die.angle, die.tilt, die.angle + 90.0 * (die.side_value % 4))
    light = np.array([scene.light[0], scene.light[1], 1.0])
    light /= np.linalg.norm(light)
    half = side * 1.3
    x0, y0 = round(die.centre[0] - half), round(die.centre[1] - half)
    size = round(2 * half)
    big = size * SUPERSAMPLE
    colour = np.zeros((big, big, 3), np.float32)
    alpha = np.zeros((big, big), np.float32)
    shadow = np.zeros((big, big), np.float32)

    def to_canvas(points3: NDArray[np.float64]) -> NDArray[np.int32]:
        projected = points3 @ rotation.T
        xy = (projected[:, :2] * side + np.array(die.centre) - np.array([x0, y0])) * SUPERSAMPLE
        return np.round(xy).astype(np.int32)

    visible = []
    for normal, u, v, value in _faces(die.value, die.side_value):
        facing = (rotation @ normal)[2]
        if facing <= 1e-3:
            continue
        visible.append((normal, u, v, value, facing))
    # the shadow: the whole outline, pushed away from the light
    hull = []
    for normal, u, v, _, _ in visible:
        hull.append(normal * 0.5 + _OUTLINE[:, :1] * u + _OUTLINE[:, 1:] * v)
    outline = cv2.convexHull(to_canvas(np.vstack(hull)))
    push = np.round(-np.array(scene.light) * side * 0.15 * SUPERSAMPLE + side * 0.04 * SUPERSAMPLE).astype(
        np.int32
    )
    cv2.fillPoly(shadow, [outline + push], 1.0)
    for normal, u, v, value, facing in visible:
        shade = 0.55 + 0.45 * max(0.0, float((rotation @ normal) @ light))
        face = normal * 0.5 + _OUTLINE[:, :1] * u + _OUTLINE[:, 1:] * v
        body = IVORY * shade * (0.85 + 0.15 * facing)
        cv2.fillPoly(colour, [to_canvas(face)], body.tolist())
        cv2.fillPoly(alpha, [to_canvas(face)], 1.0)
        edge = max(1, round(side * 0.025 * SUPERSAMPLE))
        cv2.polylines(colour, [to_canvas(face)], True, (body * 0.8).tolist(), edge)
        ink = (RED_INK if scene.red_pips and value in (1, 4) else INK) * shade
        for gu, gv in FACES[value]:
            centre = normal * 0.5 + u * gu * PIP_SPACING + v * gv * PIP_SPACING
            circle = centre + _CIRCLE[:, :1] * u * PIP_RADIUS + _CIRCLE[:, 1:] * v * PIP_RADIUS
            cv2.fillPoly(colour, [to_canvas(circle)], ink.tolist())
    _blend(
        frame,
        x0,
        y0,
        cv2.resize(colour, (size, size), interpolation=cv2.INTER_AREA),
        cv2.resize(alpha, (size, size), interpolation=cv2.INTER_AREA),
        cv2.GaussianBlur(cv2.resize(shadow, (size, size), interpolation=cv2.INTER_AREA), (0, 0), side * 0.06),
    )


def _blend(
    frame: NDArray[np.float32],
    x0: int,
    y0: int,
    colour: NDArray[Any],
    alpha: NDArray[Any],
    shadow: NDArray[Any],
) -> None:
    height, width = frame.shape[:2]
    size = alpha.shape[0]
    fx0, fy0 = max(0, x0), max(0, y0)
    fx1, fy1 = min(width, x0 + size), min(height, y0 + size)
    if fx0 >= fx1 or fy0 >= fy1:
        return
    window = (slice(fy0 - y0, fy1 - y0), slice(fx0 - x0, fx1 - x0))
    target = frame[fy0:fy1, fx0:fx1]
    a = alpha[window][..., None]
    target *= 1.0 - 0.45 * shadow[window][..., None]
    # the colour is drawn over black: shrunk, its edge pixels are already weighted by their coverage
    target[:] = target * (1.0 - a) + colour[window]


# --- a camera source's renderer ---------------------------------------------------------------------------


@dataclass
class DiceRenderer:
    """Rounds of dice for `SyntheticSource`: `roll_frames` frames of dice moving, then `rest_frames` at rest.

    Frame `index` belongs to round `index // (roll_frames + rest_frames)`; every round is a new random scene
    (`seed` + round). `scene_at(index)` is the truth of a frame (None while the dice roll)."""

    width: int = 1280
    height: int = 720
    dice: int = 3
    seed: int = 0
    roll_frames: int = 8
    rest_frames: int = 42
    hazards: dict[Hazard, float] | None = field(default_factory=lambda: dict(CALM))
    _cache: dict[int, DiceScene] = field(default_factory=dict, repr=False)
    _tray: Image | None = field(default=None, repr=False)

    def scene_of_round(self, number: int) -> DiceScene:
        scene = self._cache.get(number)
        if scene is None:
            rng = np.random.default_rng([self.seed, number])
            scene = random_scene(
                rng, dice=self.dice, width=self.width, height=self.height, hazards=self.hazards
            )
            self._cache = {number: scene}
        return scene

    def scene_at(self, index: int) -> DiceScene | None:
        number, phase = divmod(index, self.roll_frames + self.rest_frames)
        return None if phase < self.roll_frames else self.scene_of_round(number)

    def __call__(self, index: int, t: float) -> Image:
        if self._tray is None:
            self._tray = TrayRenderer(self.width, self.height)(0, 0.0)
        number, phase = divmod(index, self.roll_frames + self.rest_frames)
        scene = self.scene_of_round(number)
        if phase < self.roll_frames:  # still rolling: further back along a line, turning, slowing down
            left = self.roll_frames - phase
            moved = []
            for i, die in enumerate(scene.dice):
                heading = math.radians(37.0 * (i + 1) + 53.0 * number)
                step = 0.12 * die.side * left
                moved.append(
                    replace(
                        die,
                        centre=(
                            die.centre[0] + step * math.cos(heading),
                            die.centre[1] + step * math.sin(heading),
                        ),
                        angle=die.angle + 9.0 * left,
                    )
                )
            scene = replace(scene, dice=tuple(moved))
        return render(scene, width=self.width, height=self.height, seed=index, tray=self._tray)
