"""What the tests of `test_table_state`, split by kind, share: `tests/unit/core/test_table_state.py`,
`tests/integration/test_table_state.py`."""

from __future__ import annotations

from typing import Any

from controller.games import game_spec, make_flow
from controller.runtime import TableCore


def fresh_core(game: str, **settings: Any) -> TableCore:
    spec = game_spec(game)
    flow = make_flow(game, "golden", spec.settings.model_validate(settings))
    return TableCore(table_id="golden", game=game, flow=flow, devices=list(spec.devices))
