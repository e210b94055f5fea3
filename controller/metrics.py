"""`/metrics`: the table service in the Prometheus text format, for a studio's Prometheus and Grafana.

Off by default; `[metrics] enabled = true` (host, port: 127.0.0.1:9464) serves it beside the table. What it
shows is read from the service at scrape time — the journal (outbox depth, oldest unacknowledged event, last
sequence, file size), the bus's counters, the core's pause and device health, the free disk — plus a few
counters kept from the journaled events themselves (the service's envelope listeners: every event the journal
commits passes there, in order), and the event loop's lag, sampled by a task of its own. The service is not
changed for it: `TableMetrics(service)` adds one listener; `serve_metrics` runs on the service's event loop,
so everything is read from the loop's own thread (the journal's SQLite connection is not shared).

Who can reach it: whoever reaches its address — it asks for no credentials, and shows nothing secret (no
password, no token; table and device names, counts and timings). On a loopback address (the default) it
answers only scrapes that name a loopback host (`Host`: 127.0.0.1, localhost, [::1]; `[metrics]
allowed_hosts` to change), so that a web page in the table PC's browser cannot read it under a rebound DNS
name; on any other address it answers every Host unless `allowed_hosts` names them (and says so at start),
and the studio keeps it to the monitoring network (a firewall rule for its Prometheus). A flood of scrapes
costs the table little: scrapes within `render_interval_seconds` of a render share it, the values are read
on the loop once per render and the text is formatted in a worker thread; idle connections never hold
one of its 16 connections (`controller.web.server`).

Every series carries `studio` and `table` labels (alerts and dashboards name the table without relabelling).
Free-text reasons are not label values (a supervisor's reason, a device's detail: unbounded): pauses and
voids are counted by cause, a small fixed set (see `pause_cause`, `void_cause`).

Metric names (all prefixed `tablectl_`): see `describe()` or docs/metrics.md.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from controller import __version__
from controller.config import MetricsSettings, is_loopback
from controller.events import Envelope
from controller.web.server import REJECTIONS, Rejections, embedded_server, serve_until_cancelled

if TYPE_CHECKING:
    from controller.service import TableService

log = logging.getLogger(__name__)

DEVICE_STATES = ("online", "offline", "fault")
#: event-loop lag histogram buckets (seconds): a healthy loop is well under a millisecond
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

# The text format's `<histogram>_created` sample is a series of its own (the time the process made the
# histogram) that the dashboard and the alert rules do not use. The flag is the client library's, for the
# whole process: the service's one registry is its only user.
disable_created_metrics()


#: the causes a pause is counted by, and a void; each has a series from the first scrape (at 0), so a rate
#: or an alert over them works before the first pause or void
DEVICE_PAUSE_CAUSES = ("device_offline", "device_fault")
TABLE_PAUSE_CAUSES = ("restart", "flow_error", "system", "dealer", "supervisor")
VOID_CAUSES = ("fault_before_start", "device", "system", "dealer", "supervisor")
#: the `device` label of a pause that concerns no device (never an empty label value)
NO_DEVICE = "none"


def pause_cause(data: dict[str, Any]) -> str:
    """A `round.paused` event's cause: device_offline, device_fault, restart, flow_error, system, dealer or
    supervisor."""
    by = str(data.get("by") or "")
    reason = str(data.get("reason") or "")
    if by == "device":
        device = str(data.get("device") or "")
        return "device_fault" if reason.startswith(f"{device} fault") else "device_offline"
    if by == "system":
        if reason.startswith("controller restarted"):
            return "restart"
        if reason.startswith("internal error"):
            return "flow_error"
        return "system"
    return _person(by)


def void_cause(data: dict[str, Any]) -> str:
    """A `round.voided` event's cause: fault_before_start, device, system, dealer or supervisor."""
    by = str(data.get("by") or "")
    if by == "system" and str(data.get("reason") or "").endswith("before the round started"):
        return "fault_before_start"
    if by in ("system", "device"):
        return by
    return _person(by)


def _person(by: str) -> str:
    return "dealer" if by.startswith("dealer:") or by == "panel" else "supervisor"


class TableMetrics(Collector):
    """The service's metrics, in their own registry (never the global one: one service, one registry)."""

    def __init__(
        self,
        service: TableService,
        *,
        clock: Callable[[], float] = time.time,
        render_interval: float = 1.0,
        rejections: Rejections = REJECTIONS,
    ) -> None:
        self.service = service
        self.clock = clock
        self.render_interval = render_interval
        self.rejections = rejections
        #: the last render, and when it was made (loop time); the render under way, shared by its scrapes
        self._rendered: tuple[float, bytes] | None = None
        self._rendering: asyncio.Future[bytes] | None = None
        #: how many renders were made (the cost of the scrapes)
        self.renders = 0
        config = service.config
        self.labels = {"studio": config.table.studio_id, "table": config.table.table_id}
        self.game = config.table.game
        self.events: Tally[str] = Tally()
        self.rejected: Tally[str] = Tally()
        self.held: Tally[str] = Tally()
        self.pauses: Tally[tuple[str, str]] = Tally()
        self.voids: Tally[str] = Tally()
        self.rounds: Tally[str] = Tally()
        self.last_result: float | None = None
        self.lag_seconds = 0.0
        # what is read from files and the journal before each scrape (`refresh`)
        self.outbox_depth = 0
        self.outbox_oldest: str | None = None
        self.journal_bytes = 0
        self.free_bytes: int | None = None
        self.registry = CollectorRegistry(auto_describe=True)
        self.lag = Histogram(
            "tablectl_event_loop_lag_seconds",
            "How late the event loop woke a task that slept (sampled); a stuck loop delays every event",
            labelnames=list(self.labels),
            buckets=LAG_BUCKETS,
            registry=self.registry,
        ).labels(**self.labels)
        self.registry.register(self)
        service.listeners.append(self.on_envelope)

    # --- fed by the service ----------------------------------------------------------------------------

    def on_envelope(self, envelope: Envelope) -> None:
        """A service listener: every journaled event, in order."""
        type_, data = envelope.type, envelope.data
        self.events[type_] += 1
        if type_ == "reading.rejected":
            self.rejected[str(data.get("device"))] += 1
        elif type_ == "reading.held":
            self.held[str(data.get("device"))] += 1
        elif type_ == "round.paused":
            self.pauses[(pause_cause(data), str(data.get("device") or NO_DEVICE))] += 1
        elif type_ == "round.voided":
            self.voids[void_cause(data)] += 1
            self.rounds["voided"] += 1
        elif type_ == "round.result":
            self.rounds["result"] += 1
            self.last_result = self.clock()

    async def sample_loop_lag(self, interval: float) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            await asyncio.sleep(interval)
            self.lag_seconds = max(0.0, loop.time() - started - interval)
            self.lag.observe(self.lag_seconds)

    async def refresh(self) -> None:
        """Read what a scrape shows from the journal and the disk (on the loop; statvfs in a thread)."""
        self.outbox_depth, self.outbox_oldest = self.service.journal.outbox_summary()
        path = self.service.journal_path
        self.journal_bytes = sum(_size(Path(f"{path}{suffix}")) for suffix in ("", "-wal", "-shm"))
        # every directory the table writes to (journal, archive, captures, camera frames)
        directories = self.service.housekeeping.directories() | {path.parent}
        try:
            self.free_bytes = await asyncio.to_thread(_free_bytes, directories)
        except OSError:
            self.free_bytes = None

    # --- the scrape ------------------------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        service, labels = self.service, self.labels
        names, values = list(labels), list(labels.values())

        def gauge(name: str, doc: str, value: float, **extra: str) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, doc, labels=[*names, *extra])
            family.add_metric([*values, *extra.values()], value)
            return family

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            family = CounterMetricFamily(name, doc, labels=names)
            family.add_metric(values, value)
            return family

        def tallied(name: str, doc: str, label: str, tally: Tally[str], known: Iterable[str] = ()) -> Metric:
            family = CounterMetricFamily(name, doc, labels=[*names, label])
            for key in sorted(set(tally) | set(known)):
                family.add_metric([*values, key], tally[key])
            return family

        info = GaugeMetricFamily(
            "tablectl_info",
            "The table: its game and the controller's version",
            labels=[*names, "game", "version"],
        )
        info.add_metric([*values, self.game, __version__], 1)
        yield info
        journal, bus, core = service.journal, service.bus, service.core
        yield gauge("tablectl_boot", "The journal's boot counter (restarts of the service)", journal.boot)
        yield tallied(
            "tablectl_events_journaled",
            "Events committed to the journal since the service started, by type",
            "type",
            self.events,
        )
        yield counter(
            "tablectl_events_published",
            "Events the broker acknowledged (PUBACK) since start",
            bus.stats.published,
        )
        yield counter(
            "tablectl_publish_refusals",
            "Event publishes the broker refused (MQTT 5 PUBACK reason code >= 0x80, e.g. its ACL)",
            bus.stats.refused,
        )
        yield counter("tablectl_events_replayed", "Events re-sent by replay_events", bus.stats.replayed)
        yield counter(
            "tablectl_commands_rejected",
            "Commands and inputs answered with an error",
            bus.stats.rejected_commands,
        )
        yield counter(
            "tablectl_command_internal_errors",
            "Commands and inputs that failed inside the table (answered 'internal error'): a bug",
            bus.stats.internal_errors,
        )
        yield counter(
            "tablectl_broker_reconnects", "Broker connections lost or not made", bus.stats.reconnects
        )
        yield counter(
            "tablectl_broker_session_taken_over",
            "Connections the broker closed because another client connected with the table's client id "
            "(MQTT 5 reason 0x8E): a second controller, or someone using the table's identity",
            bus.stats.sessions_taken_over,
        )
        yield gauge("tablectl_broker_connected", "1 while connected to the broker", int(bus.connected))
        yield gauge(
            "tablectl_delivery_refused",
            "1 while the broker refuses the table's events",
            int(bus.delivery_refused),
        )
        yield gauge(
            "tablectl_journal_last_sequence", "The last event sequence journaled", journal.last_sequence
        )
        yield gauge(
            "tablectl_outbox_events",
            "Events journaled, not yet acknowledged by the broker",
            self.outbox_depth,
        )
        yield gauge(
            "tablectl_outbox_oldest_timestamp_seconds",
            "When the oldest unacknowledged event was journaled, Unix time (0: the outbox is empty)",
            0.0 if self.outbox_oldest is None else _epoch(self.outbox_oldest),
        )
        yield gauge(
            "tablectl_journal_bytes",
            "The journal's size on disk (database, WAL, shared memory)",
            self.journal_bytes,
        )
        if self.free_bytes is not None:
            yield gauge(
                "tablectl_disk_free_bytes",
                "Free space on the file systems of the journal and the captures (the smallest)",
                self.free_bytes,
            )
        keeping = service.housekeeping
        if keeping.usage:  # measured by the last disk check (a directory scan per scrape would be too much)
            files = GaugeMetricFamily(
                "tablectl_table_files",
                "Files the table has written, by kind (journal, archive, captures, camera, frames)",
                labels=[*names, "kind"],
            )
            sizes = GaugeMetricFamily(
                "tablectl_table_files_bytes",
                "Bytes of the files the table has written, by kind, at the last disk check",
                labels=[*names, "kind"],
            )
            for kind, item in keeping.usage.items():
                files.add_metric([*values, kind], item.files)
                sizes.add_metric([*values, kind], item.bytes)
            yield files
            yield sizes
            exceeded = GaugeMetricFamily(
                "tablectl_retention_bound_exceeded",
                "1 while the files of a kind are over their retention bound (kept: still needed)",
                labels=[*names, "kind"],
            )
            for kind in ("archive", "captures", "frames"):
                exceeded.add_metric([*values, kind], int(kind in keeping.exceeded))
            yield exceeded
        pause = core.pause
        yield gauge("tablectl_paused", "1 while the table is paused", int(pause is not None))
        yield gauge(
            "tablectl_pause_started_timestamp_seconds",
            "When the current pause began, Unix time (0: not paused)",
            0.0 if pause is None else pause.since,
        )
        yield gauge(
            "tablectl_pause_held_readings",
            "Readings held now, in the current pause (their count so far: tablectl_readings_held_total)",
            len(core.held),
        )
        up = GaugeMetricFamily(
            "tablectl_device_up", "1 while the device is online", labels=[*names, "device"]
        )
        state = GaugeMetricFamily(
            "tablectl_device_state",
            "The device's health: 1 for its current state",
            labels=[*names, "device", "state"],
        )
        for name, health in core.devices.items():
            up.add_metric([*values, name], int(health.status == "online"))
            for candidate in DEVICE_STATES:
                state.add_metric([*values, name, candidate], int(health.status == candidate))
        yield up
        yield state
        devices = list(core.devices)
        yield tallied(
            "tablectl_readings_rejected",
            "Device readings rejected (device offline or in fault, unknown device, hold limit)",
            "device",
            self.rejected,
            devices,
        )
        yield tallied(
            "tablectl_readings_held",
            "Device readings held while the table was paused",
            "device",
            self.held,
            devices,
        )
        pauses = CounterMetricFamily(
            "tablectl_pauses", "Pauses, by cause (and device)", labels=[*names, "cause", "device"]
        )
        known_pauses = {(cause, device) for cause in DEVICE_PAUSE_CAUSES for device in devices}
        known_pauses |= {(cause, NO_DEVICE) for cause in TABLE_PAUSE_CAUSES}
        for cause, device in sorted(set(self.pauses) | known_pauses):
            pauses.add_metric([*values, cause, device], self.pauses[(cause, device)])
        yield pauses
        yield tallied("tablectl_voids", "Rounds voided, by cause", "cause", self.voids, VOID_CAUSES)
        rounds = CounterMetricFamily(
            "tablectl_rounds", "Rounds ended, by game and outcome", labels=[*names, "game", "outcome"]
        )
        for outcome in ("result", "voided"):
            rounds.add_metric([*values, self.game, outcome], self.rounds[outcome])
        yield rounds
        if self.last_result is not None:
            yield gauge(
                "tablectl_last_result_timestamp_seconds",
                "When the last round result was journaled",
                self.last_result,
            )
        yield gauge(
            "tablectl_event_loop_lag_last_seconds", "The last sampled event-loop lag", self.lag_seconds
        )
        refused = CounterMetricFamily(
            "tablectl_http_rejections",
            "Requests and connections the table's HTTP servers refused (panel, metrics), by reason",
            labels=[*names, "server", "reason"],
        )
        for (server, reason), count in sorted(self.rejections.counts.items()):
            if server in ("panel", "metrics"):
                refused.add_metric([*values, server, reason], count)
        yield refused

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    async def scrape(self) -> bytes:
        """The exposition text for a scrape: the last render if it is younger than `render_interval`, else
        a new one (shared by the scrapes that come while it is made)."""
        loop = asyncio.get_running_loop()
        if self._rendered is not None and loop.time() - self._rendered[0] < self.render_interval:
            return self._rendered[1]
        if self._rendering is None:
            self._rendering = asyncio.ensure_future(self._render())
            self._rendering.add_done_callback(self._rendered_one)
        # shielded: a scraper that goes away does not cancel the render the others wait for
        return await asyncio.shield(self._rendering)

    def _rendered_one(self, rendering: asyncio.Future[bytes]) -> None:
        self._rendering = None
        if not rendering.cancelled() and rendering.exception() is None:
            self._rendered = (asyncio.get_running_loop().time(), rendering.result())

    async def _render(self) -> bytes:
        self.renders += 1
        await self.refresh()
        # the values are read here, on the loop (the journal, the service's state are the loop's); only
        # formatting them, most of a render's time, goes to a worker thread
        families = _Snapshot(list(self.registry.collect()))
        return await asyncio.to_thread(generate_latest, families)


class _Snapshot:
    """Metric families read once, for `generate_latest` (which asks a registry-like for `collect()`)."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _free_bytes(directories: Iterable[Path]) -> int:
    return min(shutil.disk_usage(directory).free for directory in directories)


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def allowed_hosts(settings: MetricsSettings) -> set[str] | None:
    """The `Host` values a scrape may send (name:port, and the bare name on port 80), or None: any."""
    names = settings.allowed_hosts
    if names is None:
        if not is_loopback(settings.host):
            return None
        names = ["127.0.0.1", "localhost", "[::1]"]
    hosts = {f"{name}:{settings.port}" for name in names}
    if settings.port == 80:
        hosts |= set(names)
    return hosts


class HostGuard:
    """Refuses (421) a request whose `Host` is not one of `hosts`, as the panel does: a web page under a
    DNS name of its own (rebound to 127.0.0.1) cannot read or flood the endpoint from a browser."""

    def __init__(self, app: ASGIApp, hosts: set[str] | None) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.hosts is not None:
            host = next((v for k, v in scope["headers"] if k == b"host"), b"").decode("latin-1").lower()
            if host not in self.hosts:
                REJECTIONS.count("metrics", "unknown_host", "refused a scrape naming an unknown Host")
                refused = PlainTextResponse(
                    "unknown host name for /metrics (see [metrics] allowed_hosts)\n", 421
                )
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(metrics: TableMetrics, hosts: set[str] | None = None) -> Starlette:
    async def scrape(request: Request) -> Response:
        return Response(await metrics.scrape(), media_type=CONTENT_TYPE_LATEST)

    async def root(request: Request) -> Response:
        return PlainTextResponse("tablectl metrics: /metrics\n")

    return Starlette(
        routes=[Route("/metrics", scrape, methods=["GET"]), Route("/", root, methods=["GET"])],
        middleware=[Middleware(HostGuard, hosts=hosts)],
    )


class MetricsError(RuntimeError):
    """The metrics endpoint cannot run (its port is taken)."""


async def serve_metrics(metrics: TableMetrics, settings: MetricsSettings) -> None:
    """Serve `/metrics` and sample the loop's lag until cancelled. Raises MetricsError if it cannot listen."""
    metrics.render_interval = settings.render_interval_seconds
    hosts = allowed_hosts(settings)
    if hosts is None:
        log.warning(
            "metrics: served on %s with no [metrics] allowed_hosts: any Host is answered; keep the port to "
            "the monitoring network",
            settings.host,
        )
    server = embedded_server(
        create_app(metrics, hosts),
        name="metrics",
        host=settings.host,
        port=settings.port,
        limit_concurrency=16,
        timeout_graceful_shutdown=1,
    )
    sampler = asyncio.create_task(metrics.sample_loop_lag(settings.loop_lag_interval_seconds))
    try:
        await serve_until_cancelled(
            server,
            cannot_listen=MetricsError(
                f"metrics cannot listen on {settings.host}:{settings.port} (port in use?)"
            ),
        )
    finally:
        sampler.cancel()
