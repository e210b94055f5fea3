"""The dealer panel's screenshots in docs/: `python docs/panel_screenshots.py` (Mosquitto and Chromium).

One baccarat table (a real `TableService`, a simulated shoe on TCP, as behind a serial
server: no local path on screen) and its panel, signed in by a dealer
at 1280x800, photographed through a paused round: dealing, the shoe's cable pulled (the table pauses), the
shoe plugged back (still paused: the supervisor decides), and the panel's stream lost.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from playwright.async_api import Page, expect

from controller.config import PanelSettings
from controller.panel import serve_panel
from controller.panel.app import new_auth
from controller.pins import hash_pin
from controller.service import TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.console import chromium
from controller.testing.mosquitto import HOST, MosquittoBroker, free_port, require_mosquitto, wait_until
from drivers.shoe.simulator import ShoeSimulator

DOCS = Path(__file__).resolve().parent
CARDS = ["9S", "8D", "KC", "5H", "2C", "3D", "4H", "TS", "AS", "QD"]
DEALER, PIN = "d7", "2468"


async def shot(page: Page, name: str) -> None:
    await expect(page.locator(".toast")).to_have_count(0, timeout=10_000)  # "Signed in as …" has gone
    await asyncio.sleep(0.5)
    await page.screenshot(path=str(DOCS / name))
    print(f"written: {DOCS / name}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        tmp = Path(workdir)
        broker = MosquittoBroker(require_mosquitto(), tmp / "mosquitto", persistence=False)
        broker.start()
        shoe = ShoeSimulator(cards=CARDS * 4, cut_position=None)
        config = TABLE_CONFIGS.from_dict(
            {
                "table": {"studio_id": "s1", "table_id": "bac-07", "game": "baccarat", "data_dir": str(tmp)},
                "broker": {"url": broker.url},
                "devices": {"shoe": {"protocol": "shoe-line", "port": await shoe.start_tcp()}},
                "game": {"betting_seconds": 2.0, "round_gap_seconds": 0.5, "decks": 1},
            },
            environ={},
            source="screenshots",
        )
        service = TableService(config)
        port = free_port()
        settings = PanelSettings(host=HOST, port=port, allowed_hosts=[HOST], dealers={DEALER: hash_pin(PIN)})
        running = asyncio.create_task(service.run())
        panel = asyncio.create_task(serve_panel(service, settings, auth=new_auth(settings)))
        try:
            async with chromium() as browser:
                page = await browser.new_page(viewport={"width": 1280, "height": 800})
                await wait_until(lambda: not panel.done(), timeout=5, what="the panel")
                for _ in range(100):
                    try:
                        await page.goto(f"http://{HOST}:{port}/")
                        break
                    except Exception:  # not listening yet
                        await asyncio.sleep(0.1)
                await page.fill("#dealer-id", DEALER)
                await page.fill("#dealer-pin", PIN)
                await page.click("#btn-sign-in")
                await expect(page.locator("#prompt")).to_have_text("Deal to Player", timeout=15_000)
                for _ in range(2):
                    await wait_until(shoe.draw, timeout=10, what="the shoe's gate to open")
                await expect(page.locator("#positions .card")).to_have_count(2, timeout=10_000)
                await shot(page, "panel-dealing.png")
                await shoe.unplug()
                await expect(page.locator("#pause-banner")).to_be_visible(timeout=15_000)
                await shot(page, "panel-paused-shoe-out.png")
                await shoe.replug()
                await expect(page.locator('.chip[data-device="shoe"] .chip-status')).to_have_text(
                    "online", timeout=15_000
                )
                await shot(page, "panel-paused-shoe-back.png")
                panel.cancel()
                await expect(page.locator("#connection-lost")).to_be_visible(timeout=10_000)
                await shot(page, "panel-stream-lost.png")
        finally:
            panel.cancel()
            service.stop()
            await asyncio.wait_for(running, 10)
            await shoe.stop()
            broker.stop()


if __name__ == "__main__":
    asyncio.run(main())
