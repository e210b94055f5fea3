"""The reader's calibration for the demo's synthetic dice camera (`drivers.dice.shaker_scene`).

`examples()` draws labelled images of flat dice in that renderer's style, and `write_calibration()` fits the
reader to them and writes `drivers.dice.shaker_scene.CALIBRATION_FILE` (committed): `python -m
calibration.shaker_scene`. The time in the file is fixed; a refit on another machine may still differ in the
last digits of a few limits (floating point in OpenCV and numpy).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from calibration.dice import LabelledDie, LabelledImage, calibrate
from drivers.dice.shaker_scene import CALIBRATION_FILE, die_box, draw, layout_for


def examples(images: int = 30, seed: int = 11, width: int = 640, height: int = 480) -> list[LabelledImage]:
    """Labelled images of flat dice in the renderer's style (every face equally often)."""
    rng = np.random.default_rng(seed)
    values = [value for value in range(1, 7) for _ in range(images // 2)]
    rng.shuffle(values)
    out = []
    for index in range(images):
        layout = layout_for(values[index * 3 : index * 3 + 3], rng, width, height)
        labels = tuple(LabelledDie(die.value, die_box(die)) for die in layout.dice)
        image = draw(layout, width, height, seed=1000 + index)
        out.append(LabelledImage(image, labels, name=f"scene-{index}"))
    return out


def write_calibration(path: Path = CALIBRATION_FILE) -> Path:
    """Fit the reader to the renderer's dice and write the calibration."""
    fitted = calibrate(examples(), now=datetime(2027, 1, 1, tzinfo=UTC))
    path.write_text(json.dumps(fitted.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    return path


if __name__ == "__main__":
    print(write_calibration())
