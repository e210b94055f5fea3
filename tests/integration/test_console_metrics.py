"""The console's `/metrics` against a real Mosquitto: the tables whose Last Will came as the broker went down
are counted apart from the tables that are offline (`tablectl_console_tables_offline_with_broker`). The
sign-in's and the sessions' gauges are checked in test_console_security.py."""

from __future__ import annotations

import asyncio

import pytest

from controller.console.model import WILL_WITH_BROKER_LOSS_SECONDS
from controller.testing.console import console_client, running_console
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until

pytestmark = pytest.mark.integration

STUDIO = "s1"
TABLES = ("t1", "t2", "t3", "t4")


def gauge(scrape: str, name: str) -> float:
    """The value of the console's gauge `name` for the studio, from a scrape."""
    prefix = f'{name}{{studio="{STUDIO}"}} '
    (line,) = [line for line in scrape.splitlines() if line.startswith(prefix)]
    return float(line.removeprefix(prefix))


async def test_wills_that_come_as_the_broker_goes_down_are_counted_apart_from_offline_tables(
    mosquitto: MosquittoBroker,
) -> None:
    # Before, this gauge was only ever seen at 0.
    async with (
        MqttRecorder(mosquitto, []) as tables,
        running_console(mosquitto.url, STUDIO) as running,
        console_client(running.url, "supervisor-a", "") as page,
    ):
        (session,) = running.console.sessions.values()
        model = session.model

        def links() -> dict[str, str]:
            return {t: (model.summary(t) or {}).get("link", "") for t in TABLES}

        for table in TABLES:
            tables.publish(
                f"studio/{STUDIO}/table/{table}/status", {"status": "online", "boot": 1}, retain=True
            )
        await wait_until(lambda: set(links().values()) == {"online"}, timeout=10, what="the tables online")
        # t4 died long before the broker went down: offline, and counted as offline
        tables.publish(f"studio/{STUDIO}/table/t4/status", {"status": "offline", "boot": 1}, retain=True)
        await wait_until(lambda: links()["t4"] == "offline", timeout=10, what="t4 offline")
        await asyncio.sleep(WILL_WITH_BROKER_LOSS_SECONDS + 0.5)
        # the broker stops: the Wills of t1 and t2 reach the console just before it loses the broker
        for table in ("t1", "t2"):
            tables.publish(
                f"studio/{STUDIO}/table/{table}/status", {"status": "offline", "boot": 1}, retain=True
            )
        await wait_until(lambda: links()["t2"] != "online", timeout=2, what="the Wills")
        mosquitto.stop()
        await wait_until(
            lambda: not session.link.connected, timeout=10, what="the console to lose the broker"
        )

        scrape = (await page.get("/metrics")).text
        assert gauge(scrape, "tablectl_console_tables_offline_with_broker") == 2.0, scrape
        assert gauge(scrape, "tablectl_console_tables_offline") == 1.0, scrape
        assert links() == {"t1": "unknown", "t2": "unknown", "t3": "online", "t4": "offline"}
