"""A sic bo table's configuration: it must keep its camera frames.

Its unit tests; the integration ones are in `tests/integration/test_sicbo_table.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.config import ConfigError
from controller.table_build import TABLE_CONFIGS

pytestmark = pytest.mark.unit


def test_a_sicbo_table_must_keep_its_camera_frames(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"devices\.camera\.capture is missing: a sicbo table keeps"):
        TABLE_CONFIGS.from_dict(
            {
                "table": {"table_id": "sb", "game": "sicbo", "data_dir": str(tmp_path)},
                "devices": {
                    "shaker": {"protocol": "shaker-line", "port": "/dev/null"},
                    "camera": {"protocol": "camera", "port": "synthetic"},
                },
            },
            environ={},
        )
