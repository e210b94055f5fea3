"""A plain `pip install .` runs a card or roulette table: OpenCV, numpy (the `camera` extra) and amqtt (the
`demo` extra) are never imported on those paths. What needs one says so in one line.

Its e2e tests; the unit ones are in `tests/unit/core/test_extras.py`, integration ones are in
`tests/integration/test_extras.py`."""

from __future__ import annotations

import pytest

from tests.helpers.extras import tablectl_without_extras

pytestmark = pytest.mark.e2e


def test_a_card_demo_needs_amqtt_but_not_opencv() -> None:
    result = tablectl_without_extras("demo", "--game", "baccarat", "--rounds", "1", blocked=("cv2", "numpy"))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
