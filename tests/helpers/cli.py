"""What the tests of `test_cli`, split by kind, share: `tests/unit/core/test_cli.py`,
`tests/integration/test_cli.py`, `tests/e2e/test_cli.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import REPO


def tablectl(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "table.toml"
    path.write_text(text)
    return str(path)


GOOD = """
[table]
table_id = "bac-01"
game = "baccarat"
data_dir = "{data}"
[devices.shoe]
protocol = "{protocol}"
port = "{port}"
"""
