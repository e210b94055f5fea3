"""The dealer's touch panel's HTTP API against a real TableService (simulated shoe on a pty, real Mosquitto,
uvicorn): it refuses the supervisor's commands and bad bodies, and acts as the dealer.

Its integration tests; the unit ones are in `tests/unit/core/test_panel.py`, the e2e ones in
`tests/e2e/test_panel.py`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from controller.panel import app as panel_app
from controller.testing.mosquitto import wait_until
from tests.helpers import panel as shared
from tests.helpers.panel import DEALER_IDENTITY, TableFactory, dealer_client

pytestmark = pytest.mark.integration
start_table = shared.start_table  # a fixture (tests/helpers/panel.py)


# Andar Bahar: the game card 7H, then 20 cards without a 7 alternating Andar, Bahar, ..., then 7S to
# Andar (the 21st card): Andar wins with 11 cards against 10 — a long round, to see two long rows.
AB_NO_SEVENS = ["2C", "TD", "KS", "3H", "QD", "4C", "JH", "5S", "9D", "6C"]


# -- the HTTP API -----------------------------------------------------------------------------------------


async def read_sse_states(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    event = ""
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            event = line[len("event: ") :]
        elif line.startswith("data: ") and event == "state":
            yield json.loads(line[len("data: ") :])


async def test_api_refuses_supervisor_commands_and_bad_bodies_and_acts_as_the_dealer(
    start_table: TableFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = await start_table(betting_seconds=30.0)
    service = table.service
    async with dealer_client(table) as client:
        await wait_until(lambda: service.core.flow.rounds.phase == "betting_open", timeout=10)
        state = (await client.get("/api/state")).json()
        assert state["table_id"] == "bac-panel" and state["round_phase"] == "betting_open"
        current = service.public_state()
        # the public state, and the panel's explanation of a pause (none while the table plays)
        assert state.keys() == current.keys() | {"pause_explained"} and state["pause_explained"] is None
        stable = ("table_id", "game", "round_id", "round_phase", "paused", "prompt", "waiting_for_devices")
        assert {key: state[key] for key in stable} == {key: current[key] for key in stable}
        page = await client.get("/")
        assert page.status_code == 200 and "Dealer panel" in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert (await client.get("/static/panel.js")).status_code == 200

        for kind, name in [
            ("commands", "resume"),
            ("commands", "void_round"),
            ("commands", "device_action"),
            ("commands", "rebirth"),
            ("commands", "replay_events"),
        ]:
            refused = await client.post(f"/api/{kind}/{name}", json={})
            assert refused.status_code == 403, name
            assert refused.json()["status"] == "error"
            assert f"{name} is for the supervisors (over MQTT)" in refused.json()["error"]

        headers = {"content-type": "application/json"}
        bad = {
            "not json": (400, "the payload is not valid JSON"),
            "[1, 2]": (400, "payload must be a JSON object"),
            '{"reason": 5}': (400, "invalid pause: reason: Input should be a valid string"),
            '{"reason": "x", "force": true}': (400, "invalid pause: force: Extra inputs are not permitted"),
        }
        for body, (status, message) in bad.items():
            answer = await client.post("/api/commands/pause", content=body, headers=headers)
            assert (answer.status_code, answer.json()["status"]) == (status, "error"), body
            assert message in answer.json()["error"], answer.json()
        unknown = await client.post("/api/commands/explode", json={})
        assert unknown.status_code == 400 and "unknown command 'explode'" in unknown.json()["error"]
        text_plain = await client.post(
            "/api/commands/pause", content="{}", headers={"content-type": "text/plain"}
        )
        assert text_plain.status_code == 415
        foreign = await client.post("/api/commands/pause", json={}, headers={"origin": "http://evil.example"})
        assert foreign.status_code == 403
        rebound = await client.post(
            "/api/commands/pause",
            json={},
            headers={
                "host": f"evil.example:{table.settings.port}",
                "origin": f"http://evil.example:{table.settings.port}",
            },
        )
        assert rebound.status_code == 421
        without_token = await client.post("/api/commands/pause", json={}, headers={"x-panel-token": "guess"})
        assert without_token.status_code == 403
        assert (await client.get("/api/commands/pause")).status_code == 405
        assert not service.core.paused, "a refused command changed the table"

        # the live stream: the current state at once, then each new one; its listener goes with it
        listeners_before = len(service.state_listeners)
        async with client.stream("GET", "/api/stream") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            states = read_sse_states(stream)
            first = await anext(states)
            assert first["round_phase"] == "betting_open" and first["round_id"] == state["round_id"]
            assert len(service.state_listeners) == listeners_before + 1
            closed = await client.post("/api/inputs/close_betting", json={"by": "someone else"})
            assert closed.status_code == 200 and closed.json()["status"] == "ok", closed.json()
            assert closed.json()["data"]["state"]["prompt"] == "Deal to Player"
            async with asyncio.timeout(5):
                while (await anext(states))["prompt"] != "Deal to Player":
                    pass
            await states.aclose()  # a suspended reader would keep the response (and the server's stream) open
        # normally at once (the server sees the disconnect); at the latest when the next heartbeat (15 s)
        # cannot be written: rarely, on a loaded machine, the disconnect is only noticed then
        await wait_until(
            lambda: len(service.state_listeners) == listeners_before,
            timeout=20,
            what="the closed stream's listener to be removed",
        )

        # a quiet stream still says it is alive (every 15 s; shortened here)
        monkeypatch.setattr(panel_app, "HEARTBEAT_SECONDS", 0.05)
        async with client.stream("GET", "/api/stream") as stream:
            lines: list[str] = []
            async with asyncio.timeout(5):
                async for line in stream.aiter_lines():
                    lines.append(line)
                    if line == ": heartbeat":
                        break
        assert lines[:3] == ["retry: 2000", "", "event: state"]
        assert lines[4:6] == ["", "event: boot"]
        assert lines[-1] == ": heartbeat"

        # whoever the payload claims to be, the panel is the dealer
        paused = await client.post(
            "/api/commands/pause",
            json={"reason": "dealer needs help", "by": "supervisor:boss", "transaction": 7},
        )
        assert paused.status_code == 200, paused.json()
        assert paused.json()["transaction"] == 7
        assert paused.json()["data"]["state"]["pause"]["by"] == DEALER_IDENTITY
        assert paused.json()["data"]["state"]["prompt"] == "PAUSED: dealer needs help — call the supervisor"
        again = await client.post("/api/commands/pause", json={"transaction": "t2"})
        assert again.status_code == 400
        assert again.json() == {
            "status": "error",
            "transaction": "t2",
            "error": "the table is already paused",
        }
    assert [e.data["by"] for e in table.events if e.type == "round.paused"] == [DEALER_IDENTITY]
