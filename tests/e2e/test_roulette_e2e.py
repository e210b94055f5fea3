"""Roulette end to end: `tablectl run` with a simulated SS2 wheel on a real pty and a real Mosquitto.

The wheel plays on its own; killing its link pauses the table; restoring it and resuming continues, and every
published result is a number the wheel really produced — none twice, none invented."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until
from controller.testing.table_process import ServiceProcess, write_table_config
from drivers.wheel.simulator import WheelSimulator

pytestmark = pytest.mark.e2e

TABLE = "rou-e2e"
BASE = f"studio/s1/table/{TABLE}"


def write_config(tmp_path: Path, broker: MosquittoBroker, port: str) -> Path:
    return write_table_config(
        tmp_path,
        broker,
        table_id=TABLE,
        game="roulette",
        device="wheel",
        protocol="cammegh-ss2",
        port=port,
        game_settings="betting_seconds = 1.0\nround_gap_seconds = 0.5",
    )


@pytest.fixture
async def wheel(tmp_path: Path) -> AsyncIterator[WheelSimulator]:
    simulator = WheelSimulator(seed=11, speed=10.0, boot_seconds=0.5)
    await simulator.start_pty(str(tmp_path / "wheel.pty"))
    yield simulator
    await simulator.stop()


def events(recorder: MqttRecorder, kind: str = "#") -> list[dict]:
    return [m.json() for m in recorder.on(f"{BASE}/events/{kind}")]


async def test_wheel_link_loss_pauses_and_resume_continues(
    tmp_path: Path, mosquitto: MosquittoBroker, wheel: WheelSimulator
) -> None:
    config = write_config(tmp_path, mosquitto, str(tmp_path / "wheel.pty"))
    service = ServiceProcess(config, tmp_path / "service.log")
    async with MqttRecorder(mosquitto, [f"{BASE}/#"], client_id="rou-watch", persistent=True) as watch:
        service.start()
        try:
            await watch.wait_for_count(f"{BASE}/events/round.result", 2, timeout=60)
            await wheel.unplug()
            await watch.wait_for_message(
                f"{BASE}/events/round.paused", lambda m: m.json()["data"]["device"] == "wheel", timeout=15
            )
            # the retained state follows the event on its own topic (no order across topics is promised)
            await watch.wait_for_message(f"{BASE}/state", lambda m: m.json()["paused"], timeout=5)
            seen = len(watch.on(f"{BASE}/devices/wheel"))
            await wheel.replug()
            await wait_until(
                lambda: any(m.json()["status"] == "online" for m in watch.on(f"{BASE}/devices/wheel")[seen:]),
                timeout=15,
                what="the wheel back online",
            )
            results_before = len(events(watch, "round.result"))
            watch.publish(f"{BASE}/commands/resume/supervisor", {"transaction": "r1"})
            reply = await watch.wait_for_message(
                f"{BASE}/replies/resume", lambda m: m.json()["transaction"] == "r1", timeout=10
            )
            assert reply.json()["status"] == "ok", reply.json()
            await watch.wait_for_count(f"{BASE}/events/round.result", results_before + 2, timeout=60)
        finally:
            assert service.stop() == 0, (tmp_path / "service.log").read_text()

    stream = {int(e["sequence"]): e for e in events(watch)}
    assert sorted(stream) == list(range(1, max(stream) + 1))
    results = [e for e in stream.values() if e["type"] == "round.result"]
    # one result per round, never twice for a round
    assert len({r["subject"] for r in results}) == len(results)
    # every published number is one the wheel really produced, in the order it produced them
    produced = [g.number for g in wheel.device.games if g.outcome == "result"]
    published = [str(r["data"]["number"]) for r in results]
    it = iter(produced)
    assert all(number in it for number in published), (published, produced)
    for r in results:
        assert r["data"]["color"] in ("red", "black", "green")
        assert r["data"]["direction"] in ("clockwise", "anticlockwise")
