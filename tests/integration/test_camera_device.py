"""A camera is a device of the table like any other: configured in the TOML, its health reported and
published, and a covered camera pauses the round until it is fixed and a supervisor resumes.

Runs the real service in-process (pty shoe, synthetic camera source, real Mosquitto)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from controller.commands import Resume
from controller.events import Envelope
from controller.service import TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import MosquittoBroker, wait_until
from drivers.camera import SyntheticSource
from drivers.shoe.simulator import ShoeSimulator

pytestmark = pytest.mark.integration


async def test_a_covered_camera_pauses_the_round_and_its_recovery_lets_it_resume(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    shoe = ShoeSimulator(decks=8, seed=5)
    port = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": "s1", "table_id": "cam", "game": "baccarat", "data_dir": str(tmp_path)},
            "broker": {"url": mosquitto.url},
            "devices": {
                "shoe": {"protocol": "shoe-line", "port": port},
                "overhead": {
                    "protocol": "camera",
                    "port": "synthetic",
                    "options": {"covered_frames": 3, "clear_frames": 3, "fps": 20},
                },
            },
            "game": {"betting_seconds": 0.3, "round_gap_seconds": 0.3},
        },
        environ={},
        source="test",
    )
    service = TableService(config)
    source = SyntheticSource(fps=20)
    service.cameras["overhead"].source_factory = lambda: source  # the test holds the lens cap
    events: list[Envelope] = []
    service.listeners.append(events.append)
    running = asyncio.create_task(service.run())

    def devices() -> dict[str, str]:
        return {name: d["status"] for name, d in service.public_state()["devices"].items()}

    try:
        await wait_until(
            lambda: devices() == {"shoe": "online", "overhead": "online"},
            timeout=15,
            what="both devices online",
        )
        await wait_until(
            lambda: any(e.type == "round.betting_closed" for e in events), timeout=15, what="betting to close"
        )
        while not any(e.type == "card.dealt" for e in events):
            shoe.draw()
            await asyncio.sleep(0.15)
        source.mode = "covered"
        await wait_until(
            lambda: service.core.paused, timeout=15, what="the covered camera to pause the table"
        )
        pause = service.public_state()["pause"]
        assert pause["device"] == "overhead" and "overhead fault" in pause["reason"]
        fault = next(e for e in events if e.type == "device.fault")
        assert fault.data["device"] == "overhead" and fault.data["code"] == "COVERED"
        source.mode = "normal"
        await wait_until(lambda: devices()["overhead"] == "online", timeout=15, what="the camera to recover")
        await service.handle_command(Resume(by="supervisor:desk-1"))
        assert not service.core.paused
    finally:
        service.stop()
        await asyncio.wait_for(running, 10)
        await shoe.stop()
