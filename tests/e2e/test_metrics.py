"""`/metrics` from `tablectl run` in its own process, when enabled in its configuration.

Its e2e tests; the unit ones are in `tests/unit/core/test_metrics.py`, the integration ones in
`tests/integration/test_metrics.py`."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from controller.testing.mosquitto import MosquittoBroker, free_port
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers.metrics import CARDS, Scrape
from tests.helpers.paths import REPO

pytestmark = pytest.mark.e2e


async def test_tablectl_run_serves_metrics_when_enabled(tmp_path: Path, mosquitto: MosquittoBroker) -> None:
    shoe = ShoeSimulator(cards=CARDS, cut_position=None)
    port_path = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    metrics_port = free_port()
    config = tmp_path / "table.toml"
    config.write_text(
        f"""
[table]
studio_id = "s1"
table_id = "bac-m"
game = "baccarat"
data_dir = "{tmp_path / "data"}"
[broker]
url = "{mosquitto.url}"
[devices.shoe]
protocol = "shoe-line"
port = "{port_path}"
[metrics]
enabled = true
port = {metrics_port}
"""
    )
    log = tmp_path / "service.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "run", "--config", str(config)],
            cwd=REPO,
            stdout=out,
            stderr=out,
        )
    try:
        text = ""
        async with httpx.AsyncClient() as client:
            for _ in range(200):
                with contextlib.suppress(httpx.TransportError):
                    reply = await client.get(f"http://127.0.0.1:{metrics_port}/metrics")
                    text = reply.text
                    if "tablectl_device_up" in text and 'state="online"} 1.0' in text:
                        break
                await asyncio.sleep(0.05)
        result = Scrape(text)
        assert result.value("tablectl_device_up", device="shoe") == 1, log.read_text()
        assert result.value("tablectl_boot") == 1
    finally:
        process.terminate()
        assert process.wait(15) == 0, log.read_text()
        await shoe.stop()
