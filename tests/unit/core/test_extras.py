"""The extras hold what only some tables need: OpenCV, numpy and amqtt are not runtime dependencies
(pyproject.toml).

Its unit tests; the integration ones are in `tests/integration/test_extras.py`, the e2e ones in
`tests/e2e/test_extras.py`."""

from __future__ import annotations

import tomllib

import pytest

from tests.helpers.paths import REPO

pytestmark = pytest.mark.unit


def test_the_extras_hold_what_only_some_tables_need() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    runtime = " ".join(project["dependencies"])
    for package in ("opencv", "numpy", "amqtt"):
        assert package not in runtime
    extras = project["optional-dependencies"]
    assert any(d.startswith("opencv-python-headless") for d in extras["camera"])
    assert any(d.startswith("numpy") for d in extras["camera"])
    assert any(d.startswith("amqtt") for d in extras["demo"])
    assert "tablectl[camera]" in extras["demo"]  # the sic bo demo reads dice from its camera
    assert "tablectl[camera,demo]" in extras["test"]
