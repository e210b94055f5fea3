"""What the tests of `test_panel`, split by kind, share: `tests/unit/core/test_panel.py`,
`tests/integration/test_panel.py`, `tests/e2e/test_panel.py`."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from controller.config import PanelSettings
from controller.events import Envelope
from controller.panel import serve_panel
from controller.panel.app import new_auth
from controller.panel.auth import PanelAuth
from controller.pins import hash_pin
from controller.service import TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import HOST, MosquittoBroker, free_port
from drivers.shoe.simulator import ShoeSimulator
from drivers.wheel.simulator import WheelSimulator

# Player 9S, Banker 8D (read as NOREAD, entered by hand), Player KC, Banker 5H
CARDS = ["9S", "8D", "KC", "5H", "2C", "3D", "4H", "TS", "AS", "QD"]
ONE_DECK = [rank + suit for suit in "SHDC" for rank in "A23456789TJQK"]
# the dealer who signs in on the panel; every action is recorded in this name
DEALER, PIN = "d7", "2468"
DEALER_IDENTITY = f"dealer:{DEALER}"
PIN_HASH = hash_pin(PIN)


@dataclass
class Table:
    service: TableService
    device: Any  # the ShoeSimulator, or the WheelSimulator for roulette
    url: str
    settings: PanelSettings
    auth: PanelAuth  # one per service process: kept when the panel alone restarts
    events: list[Envelope] = field(default_factory=list)
    panel: asyncio.Task[None] | None = None

    def start_panel(self) -> None:
        self.panel = asyncio.create_task(serve_panel(self.service, self.settings, auth=self.auth))

    async def stop_panel(self) -> None:
        assert self.panel is not None
        self.panel.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self.panel, 10)

    async def wait_panel_up(self) -> None:
        async with httpx.AsyncClient(base_url=self.url) as client:
            for _ in range(500):
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get("/api/state")).status_code == 200:
                        return
                await asyncio.sleep(0.02)
        raise AssertionError("the panel did not come up")

    def event_types(self) -> list[str]:
        return [e.type for e in self.events]


TableFactory = Callable[..., Awaitable[Table]]


@pytest.fixture
async def start_table(tmp_path: Path, mosquitto: MosquittoBroker) -> AsyncIterator[TableFactory]:
    started: list[tuple[Table, asyncio.Task[None]]] = []

    async def start(
        betting_seconds: float = 1.0,
        game: str = "baccarat",
        cut_position: int | None = None,
        settings: dict[str, Any] | None = None,
        cards: list[str] | None = None,
    ) -> Table:
        device: Any
        game_settings: dict[str, Any]
        if game == "baccarat":
            device = ShoeSimulator(cards=cards or CARDS * 2, cut_position=cut_position)
            name, protocol, game_settings = "shoe", "shoe-line", {"decks": 1}
        elif game in ("andar_bahar", "stud"):
            # one deck, no cut card: these games take a fresh deck every round
            device = ShoeSimulator(cards=cards or ONE_DECK, cut_position=None)
            name, protocol, game_settings = "shoe", "shoe-line", {}
        else:
            device = WheelSimulator(seed=11, speed=10.0, boot_seconds=0.5)
            name, protocol, game_settings = "wheel", "cammegh-ss2", {}
        port_path = await device.start_pty(str(tmp_path / f"{name}.pty"))
        config = TABLE_CONFIGS.from_dict(
            {
                "table": {
                    "studio_id": "s1",
                    "table_id": f"{game[:3]}-panel",
                    "game": game,
                    "data_dir": str(tmp_path / "data"),
                },
                "broker": {"url": mosquitto.url},
                "devices": {name: {"protocol": protocol, "port": port_path}},
                "game": {
                    "betting_seconds": betting_seconds,
                    "round_gap_seconds": 0.5,
                    **game_settings,
                    **(settings or {}),
                },
            },
            environ={},
            source="test",
        )
        service = TableService(config)
        port = free_port()
        settings = PanelSettings(host=HOST, port=port, allowed_hosts=[HOST], dealers={DEALER: PIN_HASH})
        table = Table(service, device, f"http://{HOST}:{port}", settings, new_auth(settings))
        service.listeners.append(table.events.append)
        running = asyncio.create_task(service.run())
        started.append((table, running))
        table.start_panel()
        await table.wait_panel_up()
        return table

    yield start
    for table, running in started:
        if table.panel is not None and not table.panel.done():
            await table.stop_panel()
        table.service.stop()
        await asyncio.wait_for(running, 10)
        await table.device.stop()


@contextlib.asynccontextmanager
async def dealer_client(table: Table) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client that does what the panel's page does: the page's token and Origin on every POST, and
    a dealer's sign-in (its session cookie)."""
    async with httpx.AsyncClient(base_url=table.url, timeout=10) as client:
        page = await client.get("/")
        match = re.search(r'<meta name="panel-token" content="([^"]+)">', page.text)
        assert match is not None, page.text
        client.headers.update({"origin": table.url, "x-panel-token": match.group(1)})
        signed_in = await client.post("/api/session", json={"dealer": DEALER, "pin": PIN})
        assert signed_in.status_code == 200, signed_in.text
        yield client
