"""The console's screenshots in docs/: `python docs/screenshots.py` (Mosquitto and Chromium, as the tests).

A studio of 23 simulated tables (`controller.testing.studio_sim`) and one real `tablectl run` (bac-024, a
simulated shoe on TCP) share a Mosquitto; one simulated table goes offline (its Last Will), and bac-024's shoe
is unplugged after two cards, so it pauses; a supervisor tries to resume it while the shoe is still out (the
table refuses) and the console's page is photographed by headless Chromium: the grid, and the paused table.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from playwright.async_api import expect

from controller.testing.console import chromium, open_console, running_console
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, require_mosquitto, wait_until
from controller.testing.studio_sim import SimulatedStudio
from controller.testing.table_process import CARDS, TableProcess
from drivers.shoe.simulator import ShoeSimulator

DOCS = Path(__file__).resolve().parent
STUDIO = "lisbon-1"
ROOT = f"studio/{STUDIO}/table/bac-024"


async def deal(watch: MqttRecorder, shoe: ShoeSimulator, count: int) -> None:
    for _ in range(count):
        before = len(watch.on(f"{ROOT}/events/card.dealt"))
        await wait_until(shoe.draw, timeout=15, what="the shoe's gate to open")
        await watch.wait_for_count(f"{ROOT}/events/card.dealt", before + 1, timeout=15)


async def main() -> None:
    with tempfile.TemporaryDirectory() as workdir:
        tmp = Path(workdir)
        broker = MosquittoBroker(require_mosquitto(), tmp / "mosquitto", persistence=False)
        broker.start()
        studio = SimulatedStudio(broker.port, STUDIO, 23, round_seconds=20.0, prefix="bac")
        shoe = ShoeSimulator(cards=CARDS * 5, cut_position=None)
        # on TCP, as a shoe behind a serial server would be: no local path in what the page shows
        table = TableProcess(tmp, broker, "bac-024", await shoe.start_tcp(), studio=STUDIO)
        try:
            studio.start()
            async with (
                MqttRecorder(broker, [f"{ROOT}/#"]) as watch,
                running_console(broker.url, STUDIO) as console,
                chromium() as browser,
            ):
                page, errors = await open_console(
                    browser, console.url, "supervisor-desk-1", width=1600, height=900
                )
                table.start()
                await expect(page.locator("#grid .tile")).to_have_count(24, timeout=20_000)
                # bac-024 plays a round, then in the next one the shoe's cable is pulled after two cards
                await watch.wait_for_count(f"{ROOT}/events/round.betting_closed", 1, timeout=20)
                await deal(watch, shoe, 4)
                await watch.wait_for_count(f"{ROOT}/events/round.betting_closed", 2, timeout=20)
                await deal(watch, shoe, 2)
                await asyncio.sleep(25)  # the simulated tables play some rounds
                studio.go_offline("bac-017")
                await asyncio.sleep(3)
                await shoe.unplug()
                await watch.wait_for_count(f"{ROOT}/events/round.paused", 1, timeout=15)
                await asyncio.sleep(4)
                await page.screenshot(path=str(DOCS / "console-grid.png"))
                await page.locator('#grid .tile[data-table="bac-024"]').click()
                await page.click("#btn-resume")
                await expect(page.locator("#d-outcome")).to_have_attribute("data-status", "error")
                await asyncio.sleep(2)
                await page.screenshot(path=str(DOCS / "console-paused-table.png"))
                assert errors == [], errors
        finally:
            table.stop()
            await shoe.stop()
            studio.stop()
            broker.stop()
    print(f"written: {DOCS / 'console-grid.png'}, {DOCS / 'console-paused-table.png'}")


if __name__ == "__main__":
    asyncio.run(main())
