"""The dealer's touch panel, its pure parts: a slow screen only gets the latest state and never blocks the
service; the page needs no network beyond its own static files.

Its unit tests; the integration ones are in `tests/integration/test_panel.py`, the e2e ones in
`tests/e2e/test_panel.py`."""

from __future__ import annotations

import asyncio

import pytest

from controller.panel import app as panel_app
from controller.panel.app import StateSubscription

pytestmark = pytest.mark.unit


# Andar Bahar: the game card 7H, then 20 cards without a 7 alternating Andar, Bahar, ..., then 7S to
# Andar (the 21st card): Andar wins with 11 cards against 10 — a long round, to see two long rows.
AB_NO_SEVENS = ["2C", "TD", "KS", "3H", "QD", "4C", "JH", "5S", "9D", "6C"]


async def test_a_slow_screen_only_gets_the_latest_state_and_never_blocks_the_service() -> None:
    subscription = StateSubscription()
    for number in range(1000):  # far more than any queue would hold: offer never waits nor raises
        subscription.offer({"n": number})
    assert await asyncio.wait_for(subscription.next(), 1) == {"n": 999}
    waiting = asyncio.create_task(subscription.next())
    await asyncio.sleep(0.01)
    assert not waiting.done(), "an already sent state must not be sent again"
    subscription.offer({"n": 1000})
    assert await asyncio.wait_for(waiting, 1) == {"n": 1000}


async def test_the_panel_app_needs_no_network_beyond_itself() -> None:
    """The page references only its own static files (no CDN): it must work with the studio network down."""
    static = panel_app.STATIC_DIR
    html = (static / "index.html").read_text()
    for text in (html, (static / "panel.css").read_text(), (static / "panel.js").read_text()):
        assert "http://" not in text and "https://" not in text and "//cdn" not in text
    assert 'src="/static/panel.js"' in html and 'href="/static/panel.css"' in html
