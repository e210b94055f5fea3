"""The console's screenshots in docs/: `python docs/screenshots.py` (Mosquitto and Chromium, as the tests).

A studio of 199 simulated tables (`controller.testing.studio_sim`) and one real `tablectl run` (bac-200, a
simulated shoe on TCP) share a Mosquitto; one simulated table goes offline (its Last Will), and bac-200's shoe
is unplugged after two cards, so it pauses; the console's page is photographed by headless Chromium at
1920x1080: the grid, the wall (all 200 tables on one screen), and the paused table (Resume not offered while
the shoe is out: the pause says what it waits for).
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
TABLE = "bac-200"
ROOT = f"studio/{STUDIO}/table/{TABLE}"


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
        studio = SimulatedStudio(broker.port, STUDIO, 199, round_seconds=20.0, prefix="bac")
        shoe = ShoeSimulator(cards=CARDS * 5, cut_position=None)
        # on TCP, as a shoe behind a serial server would be: no local path in what the page shows
        table = TableProcess(tmp, broker, TABLE, await shoe.start_tcp(), studio=STUDIO)
        try:
            studio.start()
            async with (
                MqttRecorder(broker, [f"{ROOT}/#"]) as watch,
                running_console(broker.url, STUDIO) as console,
                chromium() as browser,
            ):
                page, errors = await open_console(
                    browser, console.url, "supervisor-desk-1", width=1920, height=1080
                )
                table.start()
                await expect(page.locator("#grid .tile")).to_have_count(200, timeout=20_000)
                # bac-200 plays a round, then in the next one the shoe's cable is pulled after two cards
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
                await page.click("#btn-wall")
                await asyncio.sleep(1)
                await page.screenshot(path=str(DOCS / "console-wall.png"))
                await page.click("#btn-wall")
                await page.locator(f'#grid .tile[data-table="{TABLE}"]').click()
                await expect(page.locator("#btn-resume")).to_be_disabled()
                await expect(page.locator("#d-pause-waits")).to_contain_text("Waiting for the shoe")
                await asyncio.sleep(2)
                await page.screenshot(path=str(DOCS / "console-paused-table.png"))
                assert errors == [], errors
        finally:
            table.stop()
            await shoe.stop()
            studio.stop()
            broker.stop()
    print(
        "written:",
        ", ".join(
            str(DOCS / name) for name in ("console-grid.png", "console-wall.png", "console-paused-table.png")
        ),
    )


if __name__ == "__main__":
    asyncio.run(main())
