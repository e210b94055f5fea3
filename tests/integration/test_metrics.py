"""`/metrics`: a real TableService with a simulated shoe on a pty and a real Mosquitto, scraped over HTTP and
read back with prometheus-client's own parser; `tablectl run` serving it; the example alert rules and
Grafana dashboard naming only metrics the service exposes.

Its integration tests; the unit ones are in `tests/unit/core/test_metrics.py`, the e2e ones in
`tests/e2e/test_metrics.py`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from controller.config import MetricsSettings
from controller.events import Envelope
from controller.metrics import TableMetrics, serve_metrics
from controller.service import TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import HOST, MosquittoBroker, free_port, wait_until
from controller.web.server import REJECTIONS
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers.metrics import CARDS, LABELS, Scrape
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration


async def scrape(url: str) -> Scrape:
    async with httpx.AsyncClient() as client:
        reply = await client.get(f"{url}/metrics")
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/plain; version=")  # the text format
    return Scrape(reply.text)


@contextlib.asynccontextmanager
async def table_with_metrics(
    tmp_path: Path, broker: MosquittoBroker, **metrics_settings: Any
) -> AsyncIterator[tuple[TableService, ShoeSimulator, str]]:
    shoe = ShoeSimulator(cards=CARDS * 5, cut_position=None)
    port_path = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {
                "studio_id": "s1",
                "table_id": "bac-m",
                "game": "baccarat",
                "data_dir": str(tmp_path / "data"),
            },
            "broker": {"url": broker.url, "keepalive": 5, "reconnect_max_seconds": 1.0},
            "devices": {"shoe": {"protocol": "shoe-line", "port": port_path}},
            "game": {"betting_seconds": 0.5, "round_gap_seconds": 0.5, "decks": 8},
        },
        environ={},
    )
    service = TableService(config)
    events: list[Envelope] = []
    service.listeners.append(events.append)
    # every scrape a new render, unless a test says otherwise: this test follows the table scrape by scrape
    settings = MetricsSettings(
        **{
            "enabled": True,
            "host": HOST,
            "port": free_port(),
            "loop_lag_interval_seconds": 0.05,
            "render_interval_seconds": 0,
            **metrics_settings,
        }
    )
    metrics = TableMetrics(service)
    running = asyncio.create_task(service.run())
    serving = asyncio.create_task(serve_metrics(metrics, settings))
    url = f"http://{HOST}:{settings.port}"
    try:
        await wait_until(lambda: service.bus.connected, timeout=10, what="the table on the broker")
        yield service, shoe, url
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        service.stop()
        await asyncio.wait_for(running, 10)
        await shoe.stop()


def events_of(service: TableService, type_: str) -> int:
    return sum(1 for envelope in service.journal.read(1) if envelope.type == type_)


async def test_metrics_follow_the_table_through_a_fault_and_a_broker_outage(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    async with table_with_metrics(tmp_path, mosquitto) as (service, shoe, url):
        await wait_until(
            lambda: events_of(service, "round.betting_closed") >= 1, timeout=15, what="betting closed"
        )
        await wait_until(shoe.draw, timeout=10, what="the gate to open")
        await wait_until(lambda: events_of(service, "card.dealt") >= 1, timeout=10, what="the card dealt")
        await wait_until(lambda: service.bus.stats.published >= service.journal.last_sequence, timeout=10)
        # acknowledged events leave the outbox in batches (every 50 ms or 500 events), after the PUBACKs
        await wait_until(lambda: service.journal.outbox_size() == 0, timeout=10, what="the outbox to drain")

        first = await scrape(url)
        (info,) = first.families["tablectl_info"].samples
        assert info.value == 1 and info.labels == {
            **LABELS,
            "game": "baccarat",
            "version": info.labels["version"],
        }
        assert first.value("tablectl_events_journaled_total", type="card.dealt") == 1
        assert first.value("tablectl_events_journaled_total", type="device.online") == 1
        assert first.value("tablectl_events_published_total") == service.journal.last_sequence
        assert first.value("tablectl_journal_last_sequence") == service.journal.last_sequence
        assert first.value("tablectl_outbox_events") == 0
        assert first.value("tablectl_outbox_oldest_timestamp_seconds") == 0
        assert first.value("tablectl_broker_connected") == 1
        assert first.value("tablectl_device_up", device="shoe") == 1
        assert first.value("tablectl_device_state", device="shoe", state="online") == 1
        assert first.value("tablectl_device_state", device="shoe", state="fault") == 0
        assert first.value("tablectl_paused") == 0
        assert first.value("tablectl_journal_bytes") > 0
        assert first.value("tablectl_disk_free_bytes") > 0
        # what the table's files take, by kind, as the last disk check measured them (one ran at start)
        await wait_until(lambda: bool(service.housekeeping.usage), timeout=10, what="a disk check")
        counted = await scrape(url)
        assert counted.value("tablectl_table_files", kind="journal") >= 1
        assert counted.value("tablectl_table_files_bytes", kind="journal") > 0
        assert counted.value("tablectl_retention_bound_exceeded", kind="frames") == 0
        assert first.value("tablectl_readings_rejected_total", device="shoe") == 0
        assert first.value("tablectl_publish_refusals_total") == 0
        # pauses and voids have their series before the first one, and no empty label value
        assert first.value("tablectl_pauses_total", cause="device_offline", device="shoe") == 0
        assert first.value("tablectl_pauses_total", cause="dealer", device="none") == 0
        assert first.value("tablectl_voids_total", cause="supervisor") == 0
        assert not [s for s in first.samples if "" in s.labels.values()]
        assert not [s.name for s in first.samples if s.name.endswith("_created")]
        assert first.value("tablectl_event_loop_lag_seconds_count") > 0
        assert first.families["tablectl_event_loop_lag_seconds"].type == "histogram"
        assert first.families["tablectl_events_published"].type == "counter"

        # the shoe's cable is pulled mid-round: the table pauses
        await shoe.unplug()
        await wait_until(lambda: service.core.paused, timeout=10, what="the pause")
        await asyncio.sleep(0.2)
        paused = await scrape(url)
        assert paused.value("tablectl_paused") == 1
        assert 0 < paused.value("tablectl_pause_started_timestamp_seconds") <= time.time()
        assert paused.value("tablectl_pauses_total", cause="device_offline", device="shoe") == 1
        assert paused.value("tablectl_device_up", device="shoe") == 0
        assert paused.value("tablectl_device_state", device="shoe", state="offline") == 1

        # the broker goes away: what the table journals meanwhile waits in the outbox, and says how long
        mosquitto.stop()
        await wait_until(lambda: not service.bus.connected, timeout=10, what="the table to lose the broker")
        await shoe.replug()  # device.online: journaled, not published
        await wait_until(
            lambda: service.core.devices["shoe"].status == "online", timeout=15, what="the shoe back"
        )
        await asyncio.sleep(1.0)
        outage = await scrape(url)
        assert outage.value("tablectl_broker_connected") == 0
        assert outage.value("tablectl_outbox_events") >= 1
        assert time.time() - outage.value("tablectl_outbox_oldest_timestamp_seconds") >= 0.9
        assert outage.value("tablectl_broker_reconnects_total") >= 1
        assert outage.value("tablectl_pause_held_readings") == 0

        mosquitto.start()
        await wait_until(lambda: service.bus.connected, timeout=15, what="the table back on the broker")
        await wait_until(
            lambda: service.journal.outbox_summary()[0] == 0, timeout=15, what="the outbox drained"
        )
        drained = await scrape(url)
        assert drained.value("tablectl_outbox_events") == 0
        assert drained.value("tablectl_outbox_oldest_timestamp_seconds") == 0


# -- the examples: every metric they name is one the service exposes ---------------------------------------


def exposed_names(tmp_path: Path) -> set[str]:
    """Every sample name a scrape can hold (a full set of label values does not matter here)."""
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {"table_id": "t1", "game": "baccarat", "data_dir": str(tmp_path / "d")},
            "devices": {"shoe": {"protocol": "shoe-line", "port": "/dev/null"}},
        },
        environ={},
    )
    service = TableService(config)
    try:
        metrics = TableMetrics(service)
        # one of each counter that has no series until its first event
        metrics.last_result = 1.0
        metrics.free_bytes = 1
        metrics.events["round.paused"] += 1
        metrics.pauses[("device_offline", "shoe")] += 1
        metrics.voids["supervisor"] += 1
        scraped = Scrape(metrics.exposition().decode())
    finally:
        service.journal.close()
    return {sample.name for sample in scraped.samples} | set(scraped.families)


def test_example_alert_rules_and_dashboard_name_only_exposed_metrics(tmp_path: Path) -> None:
    names = exposed_names(tmp_path)
    rules = yaml.safe_load((REPO / "examples" / "prometheus" / "tablectl-alerts.yml").read_text())
    alerts = {rule["alert"]: rule for group in rules["groups"] for rule in group["rules"]}
    expected = {
        "TablePausedTooLong",
        "OutboxEventsWaiting",
        "DeviceOffline",
        "DiskLow",
        "TableUpWithoutResults",
    }
    assert expected <= set(alerts)
    for rule in alerts.values():
        assert {"expr", "for", "labels", "annotations"} <= set(rule), rule
        used = set(re.findall(r"tablectl_[a-z_]+", rule["expr"]))
        assert used or rule["expr"].startswith('up{job="tablectl"}'), rule
        assert used <= names, (rule["alert"], used - names)
    dashboard = json.loads((REPO / "examples" / "grafana" / "tablectl-dashboard.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    assert len(exprs) >= 10
    used = {name for expr in exprs for name in re.findall(r"tablectl_[a-z_]+", expr)}
    assert used <= names, used - names
    assert dashboard["title"] and dashboard["templating"]["list"], "a studio and table selector"
    # the paused tables by name, not only their count; the journal and the free disk each on its own axis
    tables = [panel for panel in dashboard["panels"] if panel["type"] == "table"]
    assert any("tablectl_paused" in t["expr"] for panel in tables for t in panel["targets"]), tables
    for panel in dashboard["panels"]:
        text = " ".join(t["expr"] for t in panel.get("targets", []))
        assert not ("tablectl_journal_bytes" in text and "tablectl_disk_free_bytes" in text), panel["title"]


# -- what /metrics answers, and what a flood of scrapes costs the table -------------------------------------


async def test_on_the_loopback_metrics_answer_only_loopback_host_names(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    async with table_with_metrics(tmp_path, mosquitto) as (_, _, url), httpx.AsyncClient() as client:
        port = url.rpartition(":")[2]
        before = REJECTIONS.counts[("metrics", "unknown_host")]
        for host in (f"rebound.example:{port}", "127.0.0.1", f"127.0.0.1:{int(port) + 1}"):
            refused = await client.get(f"{url}/metrics", headers={"host": host})
            assert refused.status_code == 421 and "allowed_hosts" in refused.text, host
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
            assert (await client.get(f"{url}/metrics", headers={"host": host})).status_code == 200, host
        assert REJECTIONS.counts[("metrics", "unknown_host")] == before + 3
        # and the refusals are counted where the studio looks
        scraped = Scrape((await client.get(f"{url}/metrics")).text)
        assert scraped.value("tablectl_http_rejections_total", server="metrics", reason="unknown_host") >= 3


async def test_idle_connections_never_hold_the_metrics_slots(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    async with table_with_metrics(tmp_path, mosquitto) as (_, _, url):
        port = int(url.rpartition(":")[2])
        idle = [await asyncio.open_connection(HOST, port) for _ in range(16)]
        try:
            async with asyncio.timeout(3), httpx.AsyncClient() as client:
                assert (await client.get(f"{url}/metrics")).status_code == 200
        finally:
            for _, writer in idle:
                writer.close()


async def test_a_flood_of_scrapes_costs_one_render_per_interval(
    tmp_path: Path, mosquitto: MosquittoBroker
) -> None:
    """16 connections scraping as fast as they can, from another process (the flood's own work must not
    run on the table's loop): the table reads its values once per `render_interval_seconds`, whatever
    the number of scrapes. The event loop's lag during the flood is measured and printed (-s)."""
    async with table_with_metrics(tmp_path, mosquitto, render_interval_seconds=0.5) as (service, _, url):
        metrics_refreshes = 0
        # TableMetrics.refresh is what reads the journal and the disk for a render: count its calls
        original = TableMetrics.refresh

        async def counted(self: TableMetrics) -> None:
            nonlocal metrics_refreshes
            metrics_refreshes += 1
            await original(self)

        TableMetrics.refresh = counted  # type: ignore[method-assign]
        try:
            lags: list[float] = []
            loop = asyncio.get_running_loop()

            async def sample() -> None:
                while True:
                    started = loop.time()
                    await asyncio.sleep(0.005)
                    lags.append(loop.time() - started - 0.005)

            sampler = asyncio.create_task(sample())
            flood = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                "import asyncio; from bench.attacks_http import flood; "
                f"print(asyncio.run(flood({url!r}, 2.0)))",
                cwd=REPO,
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await asyncio.wait_for(flood.communicate(), 30)
            sampler.cancel()
        finally:
            TableMetrics.refresh = original  # type: ignore[method-assign]
        scrapes = int(out.decode().strip())
        assert scrapes >= 100, scrapes
        # 2 s of flood at one render per 0.5 s: 4 renders, 5 if it straddles one more interval
        assert metrics_refreshes <= 6, (metrics_refreshes, scrapes)
        lags.sort()
        print(
            f"\n{scrapes} scrapes in 2 s, {metrics_refreshes} renders; loop lag (5 ms sleeps): "
            f"median {lags[len(lags) // 2] * 1000:.1f} ms, p99 {lags[int(len(lags) * 0.99)] * 1000:.1f} ms, "
            f"max {lags[-1] * 1000:.1f} ms"
        )
        assert service.bus.connected
