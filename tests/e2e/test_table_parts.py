"""The table's run as the composition root, through `tablectl demo`: a demo whose panel cannot listen plays
on without it.

Its e2e tests; the integration ones are in `tests/integration/test_table_parts.py`."""

from __future__ import annotations

import asyncio
import io

import pytest

from controller import demo as demo_module
from tests.helpers import table_parts as shared

pytestmark = pytest.mark.e2e
taken_port = shared.taken_port  # a fixture (tests/helpers/table_parts.py)


@pytest.mark.timeout(90)
async def test_a_demo_whose_panel_cannot_listen_plays_on_without_it(
    monkeypatch: pytest.MonkeyPatch, taken_port: int
) -> None:
    """Two demos started at once may both find the same panel port free; the one that loses the bind plays
    on without its panel, as it did before the panel was a part of the table's run."""
    monkeypatch.setattr(demo_module, "port_is_free", lambda port: True)  # the look said free; the bind fails
    out = io.StringIO()
    code = await asyncio.wait_for(
        demo_module.run_demo(
            "baccarat", 1, as_json=True, mqtt_url=None, faults=False, out=out, panel_port=taken_port
        ),
        80,
    )
    assert code == 0
    assert '"round.closed"' in out.getvalue()
