"""What the tests of `test_extras`, split by kind, share: `tests/unit/core/test_extras.py`,
`tests/integration/test_extras.py`, `tests/e2e/test_extras.py`."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.paths import REPO

#: the packages of the extras: blocked in the child, as if not installed
EXTRA_MODULES = ("cv2", "numpy", "amqtt")

#: what runs first in the child: the packages named in BLOCKED cannot be imported, as if not installed
PRELUDE = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Block())
"""


def without_extras(
    code: str, *args: str, blocked: tuple[str, ...] = EXTRA_MODULES
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", f"BLOCKED = {blocked!r}\n" + PRELUDE + code, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def tablectl_without_extras(
    *args: str, blocked: tuple[str, ...] = EXTRA_MODULES
) -> subprocess.CompletedProcess[str]:
    code = "from controller.cli import main\nsys.exit(main(sys.argv[1:]))"
    return without_extras(code, *args, blocked=blocked)
