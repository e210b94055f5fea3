"""Camera frame sources: importing the camera package does not import OpenCV (checked in a fresh
interpreter).

Its integration tests; the unit ones are in `tests/unit/drivers/test_camera_sources.py`."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def test_importing_the_camera_package_does_not_import_opencv() -> None:
    import subprocess
    import sys

    code = "import sys, drivers.camera; print('cv2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
