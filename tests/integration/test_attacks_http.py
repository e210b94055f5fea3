"""`bench/attacks_http.py` against real servers: a real TableService (simulated shoe on a pty) on a real
Mosquitto that authenticates every user, with its panel and `/metrics` on uvicorn, and the console. The
script runs in its own process (its flood must not run on the table's event loop) and every attack holds."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.config import MetricsSettings, PanelSettings
from controller.metrics import TableMetrics, serve_metrics
from controller.panel import serve_panel
from controller.pins import hash_pin
from controller.service import TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.console import running_console
from controller.testing.mosquitto import HOST, MosquittoBroker, free_port, running_secured_broker, wait_until
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration

PASSWORDS = {"table-t1": "table-pw", "supervisor-a": "a-pw"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[MosquittoBroker]:
    with running_secured_broker(
        tmp_path,
        PASSWORDS,
        "user table-t1\ntopic readwrite studio/#\n\nuser supervisor-a\ntopic read studio/#\n",
    ) as secured:
        yield secured


async def test_every_attack_of_the_script_holds_against_the_real_servers(
    tmp_path: Path, broker: MosquittoBroker
) -> None:
    shoe = ShoeSimulator(cards=["9S", "8D", "KC", "5H"] * 5, cut_position=None)
    port_path = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {
                "studio_id": "s1",
                "table_id": "t1",
                "game": "baccarat",
                "data_dir": str(tmp_path / "d"),
            },
            "broker": {"url": broker.url, "username": "table-t1", "password": PASSWORDS["table-t1"]},
            "devices": {"shoe": {"protocol": "shoe-line", "port": port_path}},
        },
        environ={},
    )
    service = TableService(config)
    panel = PanelSettings(host=HOST, port=free_port(), allowed_hosts=[HOST], dealers={"d1": hash_pin("2468")})
    metrics = MetricsSettings(enabled=True, host=HOST, port=free_port(), loop_lag_interval_seconds=0.05)
    running = asyncio.create_task(service.run())
    servers = [
        asyncio.create_task(serve_panel(service, panel)),
        asyncio.create_task(serve_metrics(TableMetrics(service), metrics)),
    ]
    try:
        await wait_until(lambda: service.bus.connected, timeout=10, what="the table on the broker")
        async with running_console(broker.url, "s1") as console:
            attack = await asyncio.create_subprocess_exec(
                sys.executable,
                "bench/attacks_http.py",
                "--panel",
                f"http://{HOST}:{panel.port}",
                "--metrics",
                f"http://{HOST}:{metrics.port}",
                "--console",
                console.url,
                "--console-user",
                "supervisor-a",
                "--console-password",
                PASSWORDS["supervisor-a"],
                "--flood-seconds",
                "2",
                cwd=REPO,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
            out, _ = await asyncio.wait_for(attack.communicate(), 90)
        report = out.decode()
        print(report)
        lines = report.splitlines()
        assert attack.returncode == 0, report
        assert len(lines) == 12 and all(line.startswith("held ") for line in lines), report
        assert not [line for line in lines if "skipped" in line], report
    finally:
        for task in servers:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        service.stop()
        await asyncio.wait_for(running, 10)
        await shoe.stop()
