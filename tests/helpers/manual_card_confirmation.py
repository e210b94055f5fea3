"""What the tests of `test_manual_card_confirmation`, split by kind, share:
`tests/unit/core/test_manual_card_confirmation.py`,
`tests/integration/test_manual_card_confirmation.py`."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def raw_config(tmp_path: Path, confirmation: str | None = None, **extra: Any) -> dict[str, Any]:
    table: dict[str, Any] = {
        "studio_id": "s1",
        "table_id": "t1",
        "game": "baccarat",
        "data_dir": str(tmp_path),
    }
    if confirmation is not None:
        table["manual_card_confirmation"] = confirmation
    return {
        "table": table,
        "devices": {"shoe": {"protocol": "shoe-line", "port": "/dev/null"}},
        "game": {"betting_seconds": 1.0, "round_gap_seconds": 0.5, "decks": 1},
        **extra,
    }
