"""What the tests of `test_retention`, split by kind, share: `tests/unit/core/test_retention.py`,
`tests/integration/test_retention.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.config import RetentionSettings
from controller.games.baccarat import BaccaratSettings

DAY = 86400.0


def settings(**fields: Any) -> RetentionSettings:
    return RetentionSettings.model_validate(fields)


# --- captures -----------------------------------------------------------------------------------------------


def capture_meta() -> dict[str, Any]:
    settings = BaccaratSettings(betting_closes_on_first_card=True).model_dump(mode="json")
    return {"game": "baccarat", "table_id": "t1", "settings": settings}


# --- configuration ------------------------------------------------------------------------------------------


def base_config(tmp_path: Path, **retention: Any) -> dict[str, Any]:
    return {
        "table": {"studio_id": "s1", "table_id": "t1", "game": "baccarat", "data_dir": str(tmp_path)},
        "devices": {"shoe": {"protocol": "shoe-line", "port": "/dev/null"}},
        "retention": retention,
    }
