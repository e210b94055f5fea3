"""`/metrics` of `tablectl console`, in the Prometheus text format: what a studio monitors of its console.

Served on the console's own address (its host names only, as the page), without a sign-in: it shows counts
and no names of people, no passwords, no tokens. The sessions (signed in, with a page open, abandoned),
the open pages, the broker connections that are up, the tables the console knows (the most any session
knows: each supervisor sees what the broker's ACL lets them), and the refused requests by reason — plus
the console process's own CPU seconds and memory, so that the cost of sessions x tables x time shows.
Read at scrape time; nothing is kept for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from controller.console.link import StudioLink
from controller.console.model import StudioModel
from controller.web.server import REJECTIONS


class MeteredSession(Protocol):
    """What the metrics read of a sign-in (the console's sessions are these, and more)."""

    @property
    def streams(self) -> int: ...
    @property
    def model(self) -> StudioModel: ...
    @property
    def link(self) -> StudioLink: ...


class ConsoleMetrics(Collector):
    """`studio`: the studio's id (its label); `sessions`: the sign-ins alive now, asked at each scrape."""

    def __init__(self, studio: str, sessions: Callable[[], list[MeteredSession]]) -> None:
        self.studio = studio
        self.sessions = sessions
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(self)
        ProcessCollector(registry=self.registry)  # process_cpu_seconds_total, process_resident_memory_bytes

    def collect(self) -> Iterator[Metric]:
        studio = self.studio
        sessions = self.sessions()

        def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, doc, labels=["studio"])
            family.add_metric([studio], value)
            return family

        yield gauge(
            "tablectl_console_sessions", "Sign-ins alive (the configured user's included)", len(sessions)
        )
        yield gauge(
            "tablectl_console_sessions_without_page",
            "Sign-ins with no page open (they end after page_gone_seconds)",
            sum(1 for s in sessions if s.streams == 0),
        )
        yield gauge(
            "tablectl_console_pages", "Console pages open (live streams)", sum(s.streams for s in sessions)
        )
        yield gauge(
            "tablectl_console_broker_connections_up",
            "Sign-ins whose broker connection is up",
            sum(1 for s in sessions if s.link.connected),
        )
        yield gauge(
            "tablectl_console_tables",
            "Tables the console knows (the most any sign-in sees)",
            max((len(s.model.tables) for s in sessions), default=0),
        )
        known = max(sessions, key=lambda s: len(s.model.tables), default=None)
        views = [] if known is None else [known.model.summary(t) for t in list(known.model.tables)]
        yield gauge(
            "tablectl_console_tables_offline",
            "Tables offline (their Last Will, or their own word) or missing (nothing of them on the broker)",
            sum(1 for v in views if v is not None and v["link"] in ("offline", "missing")),
        )
        yield gauge(
            "tablectl_console_tables_offline_with_broker",
            "Tables whose Last Will fired as the console lost the broker: the broker's shutdown, not theirs",
            sum(1 for v in views if v is not None and v["offline_with_broker"]),
        )
        refused = CounterMetricFamily(
            "tablectl_console_requests_refused",
            "Requests the console refused, by reason",
            labels=["studio", "reason"],
        )
        for (server, reason), count in sorted(REJECTIONS.counts.items()):
            if server == "console":
                refused.add_metric([studio, reason], count)
        yield refused

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
