"""A card demo runs without the `camera` extra: `tablectl demo` in its own process needs amqtt but never
imports OpenCV or numpy.

Its e2e tests; the unit ones are in `tests/unit/core/test_extras.py`, the integration ones in
`tests/integration/test_extras.py`."""

from __future__ import annotations

import pytest

from tests.helpers.extras import tablectl_without_extras

pytestmark = pytest.mark.e2e


def test_a_card_demo_needs_amqtt_but_not_opencv() -> None:
    result = tablectl_without_extras("demo", "--game", "baccarat", "--rounds", "1", blocked=("cv2", "numpy"))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
