"""Who may drive the dealer's panel, where it takes a real server (uvicorn) and real sockets: live streams
are capped and need a signed-in dealer, idle or half-sent connections never keep the dealer out, a deeply
nested body is a 400 with a reason.

Its integration tests; the unit ones are in `tests/unit/core/test_panel_guard.py`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from controller.config import PanelSettings
from controller.panel import app as panel_app
from controller.panel.app import serve_panel
from controller.testing.mosquitto import HOST, free_port, wait_until
from controller.web import server
from controller.web.server import REJECTIONS
from tests.helpers.panel_guard import HASHES, PINS, FakeService

pytestmark = pytest.mark.integration


@contextlib.asynccontextmanager
async def served_panel(**overrides: Any) -> AsyncIterator[tuple[str, FakeService, PanelSettings]]:
    """The panel on a real uvicorn server on a free port (real sockets), with the dealers of PINS."""
    port = free_port()
    settings = PanelSettings(
        **{"host": HOST, "port": port, "allowed_hosts": [HOST], "dealers": HASHES, **overrides}
    )
    service = FakeService()
    task = asyncio.create_task(serve_panel(service, settings))  # type: ignore[arg-type]
    url = f"http://{HOST}:{port}"
    try:
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            for _ in range(500):
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get("/api/state")).status_code == 200:
                        break
                await asyncio.sleep(0.02)
        yield url, service, settings
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)


@contextlib.asynccontextmanager
async def page_client(url: str, dealer: str | None = None) -> AsyncIterator[httpx.AsyncClient]:
    """A client that sends what the panel's page sends (its token, its Origin); signed in as `dealer`."""
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        page = await client.get("/")
        match = re.search(r'<meta name="panel-token" content="([^"]+)">', page.text)
        assert match is not None, page.text
        client.headers.update({"origin": url, "x-panel-token": match.group(1)})
        if dealer is not None:
            signed = await client.post("/api/session", json={"dealer": dealer, "pin": PINS[dealer]})
            assert signed.status_code == 200, signed.text
        yield client


async def test_live_streams_are_capped_and_the_extra_ones_refused_with_503() -> None:
    async with served_panel(max_streams=2) as (url, service, _), page_client(url, "d1") as client:
        async with contextlib.AsyncExitStack() as streams:
            for _ in range(2):
                stream = await streams.enter_async_context(client.stream("GET", "/api/stream"))
                assert stream.status_code == 200
            await wait_until(lambda: len(service.state_listeners) == 2, timeout=5)
            refused = await client.get("/api/stream")
            assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
            assert "too many panel screens" in refused.json()["error"]
            assert len(service.state_listeners) == 2
            # the page and its API still answer while the streams are full
            assert (await client.get("/api/state")).status_code == 200
        # a closed stream makes room (at the latest when its next heartbeat cannot be written)
        await wait_until(lambda: not service.state_listeners, timeout=20, what="the streams to close")
        async with client.stream("GET", "/api/stream") as again:
            assert again.status_code == 200
            line = await anext(again.aiter_lines())
            assert re.fullmatch(r"retry: \d+", line)


async def test_the_live_stream_needs_a_signed_in_dealer_and_ends_with_the_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(panel_app, "HEARTBEAT_SECONDS", 0.1)
    async with served_panel() as (url, service, _):
        before = REJECTIONS.counts[("panel", "stream_without_session")]
        async with page_client(url) as anonymous, asyncio.timeout(5):  # (an open stream would never end)
            refused = await anonymous.get("/api/stream")
            assert refused.status_code == 401 and "sign in first" in refused.json()["error"]
            anonymous.cookies.set("tablectl_panel", "made-up")
            assert (await anonymous.get("/api/stream")).status_code == 401
        assert REJECTIONS.counts[("panel", "stream_without_session")] == before + 2
        assert service.state_listeners == []  # no slot was taken
        async with page_client(url, "d1") as client, client.stream("GET", "/api/stream") as stream:
            assert stream.status_code == 200
            lines = stream.aiter_lines()
            assert await anext(lines) == "retry: 2000"
            await wait_until(lambda: len(service.state_listeners) == 1, timeout=5)
            # signing out ends the stream too (at its next message at the latest: a heartbeat here)
            assert (await client.delete("/api/session")).status_code == 200
            async with asyncio.timeout(5):
                async for _ in lines:
                    pass
        await wait_until(lambda: not service.state_listeners, timeout=5, what="the stream to end")


async def test_idle_and_half_sent_connections_never_keep_the_dealer_out() -> None:
    """48 sockets that send nothing (the server's whole connection cap: 16 streams + 32) and a few that send
    half a request head: the dealer can still load the panel, sign in and pause at once, and the stalled
    sockets are closed within a few seconds."""
    async with served_panel() as (url, service, settings):
        limit = settings.max_streams + panel_app.EXTRA_CONNECTIONS
        assert limit == 48
        idle = [await asyncio.open_connection(HOST, settings.port) for _ in range(limit)]
        half = []
        for _ in range(3):
            reader, writer = await asyncio.open_connection(HOST, settings.port)
            writer.write(f"GET /api/state HTTP/1.1\r\nHost: {HOST}:{settings.port}\r\n".encode())
            await writer.drain()
            half.append((reader, writer))
        try:
            async with asyncio.timeout(3):
                async with page_client(url, "d1") as client:
                    assert (await client.get("/api/state")).status_code == 200
                    paused = await client.post("/api/commands/pause", json={"reason": "help"})
                    assert paused.status_code == 200, paused.text
            assert [type(c).__name__ for c in service.commands] == ["Pause"]
            # a connection that sent half a head is closed by the server, well within a few seconds
            async with asyncio.timeout(server.REQUEST_HEAD_SECONDS + 2):
                for reader, _ in half:
                    assert await reader.read() == b""
        finally:
            for _, writer in [*idle, *half]:
                writer.close()


async def test_a_deeply_nested_json_body_is_a_400_with_a_reason_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deep = "[" * 8000 + "]" * 8000
    async with served_panel() as (url, service, _), page_client(url, "d1") as client:
        before = REJECTIONS.counts[("panel", "too_deep")]
        with caplog.at_level(logging.DEBUG):
            for path in ("/api/session", "/api/commands/pause", "/api/inputs/close_betting"):
                answer = await client.post(path, content=deep, headers={"content-type": "application/json"})
                assert answer.status_code == 400, (path, answer.text)
                assert "nested deeper than 32 levels" in answer.json()["error"], answer.json()
            # a body nested within the limit is read as before (and refused for what it says)
            shallow = await client.post("/api/commands/pause", json={"reason": [[["x"]]]})
            assert shallow.status_code == 400 and "reason" in shallow.json()["error"]
        assert REJECTIONS.counts[("panel", "too_deep")] == before + 3
        assert service.commands == []
        assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
