"""What the tests of `test_disk_full_start`, split by kind, share:
`tests/unit/core/test_disk_full_start.py`, `tests/integration/test_disk_full_start.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.table_build import TABLE_CONFIGS


class Notes:
    """What the service told systemd (sd_notify), in order."""

    def __init__(self) -> None:
        self.said: list[tuple[str, str]] = []

    def ready(self, status: str) -> bool:
        self.said.append(("READY", status))
        return True

    def status(self, status: str) -> bool:
        self.said.append(("STATUS", status))
        return True


def table_config(tmp_path: Path) -> Any:
    return TABLE_CONFIGS.from_dict(
        {
            "table": {
                "studio_id": "s1",
                "table_id": "b1",
                "game": "baccarat",
                "data_dir": str(tmp_path / "d"),
            },
            "broker": {"url": "mqtt://127.0.0.1:9"},
            "devices": {"shoe": {"protocol": "shoe-line", "port": "/dev/null"}},
        },
        environ={},
    )
