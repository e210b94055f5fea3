"""The whole service as it runs on a table: `tablectl run` in its own process, a simulated shoe on a real pty,
a real Mosquitto. Crash recovery with kill -9 mid-round, the Last Will, commands (good and malformed), and an
outage of the broker while the game goes on — no event lost, reordered or invented."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from controller.replay import replay_file
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, free_port, wait_until
from controller.testing.table_process import (
    BASE,
    TABLE,
    ServiceProcess,
    draw,
    events,
    latest,
    table_shoe,
    wait_event,
    write_config,
)
from drivers.shoe.simulator import ShoeSimulator

pytestmark = pytest.mark.e2e


@pytest.fixture
async def shoe(tmp_path: Path) -> AsyncIterator[ShoeSimulator]:
    async with table_shoe(tmp_path) as simulator:
        yield simulator


async def panel_state(port: int, timeout: float = 10) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + timeout
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        while True:
            try:
                reply = await client.get("/api/state")
                result: dict[str, Any] = reply.json()
                return result
            except httpx.TransportError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(0.1)


async def test_kill_9_mid_round_then_resume_completes_the_same_round(
    tmp_path: Path, mosquitto: MosquittoBroker, shoe: ShoeSimulator
) -> None:
    panel_port = free_port()
    config = write_config(tmp_path, mosquitto, str(tmp_path / "shoe.pty"), panel_port)
    service = ServiceProcess(config, tmp_path / "service.log")
    async with MqttRecorder(mosquitto, [f"{BASE}/#"], client_id="e2e-watch", persistent=True) as watch:
        service.start()
        try:
            await watch.wait_for_message(
                f"{BASE}/status", lambda m: m.json()["status"] == "online", timeout=15
            )
            assert latest(watch, "status")["boot"] == 1
            assert (await panel_state(panel_port))["table_id"] == TABLE  # `tablectl run` serves the panel
            await wait_event(watch, "round.betting_closed")
            await draw(shoe, watch, 2)
            round_id = events(watch, "card.dealt")[-1]["subject"]

            service.kill9()
            offline = await watch.wait_for_message(
                f"{BASE}/status", lambda m: m.json()["status"] == "offline", timeout=15
            )
            assert offline.json()["boot"] == 1  # the Last Will carries the boot it was set by

            service.start()
            await watch.wait_for_message(
                f"{BASE}/status",
                lambda m: m.json() == {**m.json(), "status": "online", "boot": 2},
                timeout=15,
            )
            paused = (await wait_event(watch, "round.paused"))[-1]
            assert paused["subject"] == round_id
            assert paused["data"]["reason"] == "controller restarted mid-round"
            await watch.wait_for_message(
                f"{BASE}/devices/shoe", lambda m: m.json()["status"] == "online", timeout=15
            )
            state = latest(watch, "state")
            assert state["paused"] and state["round_id"] == round_id
            assert state["game_state"]["player"] == ["9S"] and state["game_state"]["banker"] == ["8D"]
            assert not shoe.draw(), "the shoe's gate must stay locked while the round is paused"

            # malformed commands change nothing
            watch.publish(f"{BASE}/commands/resume/supervisor", "not json")
            watch.publish(f"{BASE}/commands/resume/supervisor", {"transaction": "bad-1", "force": True})
            watch.publish(f"{BASE}/commands/void_round/supervisor", {"transaction": "bad-2", "round_id": 7})
            replies = await watch.wait_for_count(f"{BASE}/replies/#", 3, timeout=10)
            assert [r.json()["status"] for r in replies] == ["error"] * 3
            assert [r.json()["transaction"] for r in replies] == [None, "bad-1", "bad-2"]
            assert latest(watch, "state")["paused"]

            watch.publish(f"{BASE}/commands/resume/supervisor-desk-2", {"transaction": "ok-1"})
            reply = await watch.wait_for_message(
                f"{BASE}/replies/resume", lambda m: m.json()["transaction"] == "ok-1", timeout=10
            )
            assert reply.json()["status"] == "ok", reply.json()
            await draw(shoe, watch, 2)
            result = (await wait_event(watch, "round.result"))[-1]
        finally:
            assert service.stop() == 0, (tmp_path / "service.log").read_text()

        assert result["subject"] == round_id
        assert result["data"]["player"] == {"cards": ["9S", "KC"], "total": 9}
        assert result["data"]["banker"] == {"cards": ["8D", "5H"], "total": 3}
        assert result["data"]["winner"] == "player" and result["data"]["natural"] is True
        # a graceful stop says offline with the second boot's counter
        assert latest(watch, "status") == {**latest(watch, "status"), "status": "offline", "boot": 2}
        # every event, across the crash, exactly once by sequence, in order, none missing
        stream = events(watch)
        by_sequence = {int(e["sequence"]): e for e in stream}
        assert sorted(by_sequence) == list(range(1, max(by_sequence) + 1))
        ordered = [int(e["sequence"]) for e in stream]
        first_seen = [s for i, s in enumerate(ordered) if s not in ordered[:i]]
        assert first_seen == sorted(first_seen)
        for e in stream:  # a re-sent event is byte-identical but for `historical`
            assert {**e, "historical": False} == {**by_sequence[int(e["sequence"])], "historical": False}
        dealt = [e["data"]["card"] for e in by_sequence.values() if e["type"] == "card.dealt"]
        assert dealt == ["9S", "8D", "KC", "5H"]
        # the shoe's raw traffic was recorded across both runs, and replays to the same round
        replayed = list(replay_file("baccarat", "shoe-line", tmp_path / "data" / "shoe.jsonl"))
        replayed_results = [e.data for e in replayed if e.type == "round.result"]
        assert replayed_results[0]["player"] == result["data"]["player"]
        assert replayed_results[0]["banker"] == result["data"]["banker"]


async def test_broker_outage_loses_nothing_and_marks_late_events_historical(
    tmp_path: Path, mosquitto: MosquittoBroker, shoe: ShoeSimulator
) -> None:
    service = ServiceProcess(
        write_config(tmp_path, mosquitto, str(tmp_path / "shoe.pty")), tmp_path / "service.log"
    )
    async with MqttRecorder(
        mosquitto, [f"{BASE}/events/#"], client_id="e2e-outage", persistent=True
    ) as watch:
        service.start()
        try:
            await wait_event(watch, "round.betting_closed")
            await draw(shoe, watch, 1)
            mosquitto.stop()
            # the table plays on while the broker is away: three more cards complete the round
            for _ in range(3):
                await wait_until(shoe.draw, timeout=10, what="a draw")
                await asyncio.sleep(0.3)
            await asyncio.sleep(1.5)
            mosquitto.start()
            await wait_event(watch, "round.result", timeout=30)
        finally:
            assert service.stop() == 0, (tmp_path / "service.log").read_text()
    stream = events(watch)
    by_sequence = {int(e["sequence"]): e for e in stream}
    assert sorted(by_sequence) == list(range(1, max(by_sequence) + 1))
    dealt = [e for e in by_sequence.values() if e["type"] == "card.dealt"]
    assert [e["data"]["card"] for e in dealt] == ["9S", "8D", "KC", "5H"]
    assert dealt[0]["historical"] is False
    assert all(e["historical"] for e in dealt[1:]), "events recorded during the outage are historical"


async def test_shoe_unplugged_mid_round_pauses_locks_and_resumes(
    tmp_path: Path, mosquitto: MosquittoBroker, shoe: ShoeSimulator
) -> None:
    """A link loss pauses the round and the pause locks the very shoe whose runner reported the loss: the
    service must stay responsive (the shoe comes back online), and resume must complete the round."""
    service = ServiceProcess(
        write_config(tmp_path, mosquitto, str(tmp_path / "shoe.pty")), tmp_path / "service.log"
    )
    async with MqttRecorder(mosquitto, [f"{BASE}/#"], client_id="e2e-unplug") as watch:
        service.start()
        try:
            await wait_event(watch, "round.betting_closed")
            await draw(shoe, watch, 1)
            await shoe.unplug()
            paused = (await wait_event(watch, "round.paused"))[-1]
            assert paused["data"]["device"] == "shoe" and paused["data"]["by"] == "device"
            seen = len(watch.on(f"{BASE}/devices/shoe"))
            await shoe.replug()
            await wait_until(
                lambda: any(m.json()["status"] == "online" for m in watch.on(f"{BASE}/devices/shoe")[seen:]),
                timeout=15,
                what="the shoe back online after the replug",
            )
            await wait_until(lambda: shoe.locked, timeout=5, what="the paused table to lock the shoe's gate")
            watch.publish(f"{BASE}/commands/resume/supervisor", {"transaction": "u1"})
            reply = await watch.wait_for_message(
                f"{BASE}/replies/resume", lambda m: m.json()["transaction"] == "u1", timeout=10
            )
            assert reply.json()["status"] == "ok", reply.json()
            await draw(shoe, watch, 3)
            result = (await wait_event(watch, "round.result"))[-1]
        finally:
            assert service.stop() == 0, (tmp_path / "service.log").read_text()
    assert result["data"]["player"]["cards"] == ["9S", "KC"]
    assert result["data"]["banker"]["cards"] == ["8D", "5H"]
