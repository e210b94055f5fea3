"""uvicorn inside a tablectl process (the panel, the metrics endpoint, the console): started and stopped by
its caller, which owns the process's signals and its logging.

Each server caps its connections (`limit_concurrency`: no flood can exhaust the process's file
descriptors), and uvicorn counts an open connection against that cap whether or not it ever sends a request.
So a few dozen idle sockets would answer every real request with 503, for as long as they stay open.
`GuardedH11Protocol` makes sure an idle connection never holds a slot: a connection must send a whole
request head within `REQUEST_HEAD_SECONDS` of opening (or of its previous response), or it is closed; and
when the cap is reached, the connection that has waited longest without a request is closed to make room
for the new one (a browser's idle keep-alive reconnects by itself). Only connections with a request in
progress (a command, a live stream) can fill the cap, and those the apps cap and authenticate themselves.

What a server refuses is counted in `REJECTIONS` (the table's `/metrics` shows it) and logged at most once a
minute per server and reason, so that a flood of bad requests cannot flood the log either.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import h11
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

#: a client has this long to send a whole request head (method, path, headers) once connected or once its
#: previous response is sent; a browser sends one at once, a stalled or hostile socket is closed
REQUEST_HEAD_SECONDS = 5.0
#: an idle keep-alive connection is closed after this long (uvicorn's own timer)
KEEP_ALIVE_SECONDS = 5
#: a rejection of one kind is logged at most this often per server (each one is counted)
LOG_EVERY_SECONDS = 60.0


class Rejections:
    """Requests and connections the process's HTTP servers refused, by server and reason."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.counts: Counter[tuple[str, str]] = Counter()
        self.clock = clock
        self._logged: dict[tuple[str, str], float] = {}

    def count(self, server: str, reason: str, detail: str) -> None:
        key = (server, reason)
        self.counts[key] += 1
        now = self.clock()
        last = self._logged.get(key)
        if last is None or now - last >= LOG_EVERY_SECONDS:
            self._logged[key] = now
            log.warning("%s: %s (%d refused so far for this reason)", server, detail, self.counts[key])


#: one per process: a table's panel and metrics, or the console
REJECTIONS = Rejections()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with a deadline on the request head and room made by closing idle
    connections (see the module's docstring). `server_name` names the server in the rejection counts."""

    server_name: ClassVar[str] = "http"

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_deadline: asyncio.TimerHandle | None = None
        self._idle_since = self.loop.time()
        self._await_head(REQUEST_HEAD_SECONDS)
        self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a request head came in whole
            self._cancel_head_deadline()

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        # the connection is another protocol's from now on (the apps refuse websockets themselves)
        self._cancel_head_deadline()
        super().handle_websocket_upgrade(event)

    def on_response_complete(self) -> None:
        self._idle_since = self.loop.time()
        # uvicorn's keep-alive timer closes a connection that sends nothing more; this one closes a
        # connection that starts a request head and never finishes it (which stops the keep-alive timer)
        self._await_head(KEEP_ALIVE_SECONDS + REQUEST_HEAD_SECONDS)
        super().on_response_complete()

    @property
    def waiting_for_request(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _await_head(self, seconds: float) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(seconds, self._head_too_late)

    def _cancel_head_deadline(self) -> None:
        deadline = getattr(self, "_head_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self._head_deadline = None

    def _head_too_late(self) -> None:
        self._head_deadline = None
        if self.waiting_for_request and not self.transport.is_closing():
            REJECTIONS.count(
                self.server_name,
                "request_head_timeout",
                f"closed a connection that sent no whole request within {REQUEST_HEAD_SECONDS:g} s",
            )
            self._close()

    def _make_room(self) -> None:
        """At the cap, close the connections that have waited longest without a request; if every one is
        busy, uvicorn answers the new one's request with 503 as before."""
        limit = self.config.limit_concurrency
        if limit is None:
            return
        idle = sorted(
            (
                other
                for other in self.connections
                if other is not self and isinstance(other, GuardedH11Protocol) and other.waiting_for_request
            ),
            key=lambda other: other._idle_since,
        )
        while len(self.connections) >= limit and idle:
            oldest = idle.pop(0)
            REJECTIONS.count(
                self.server_name,
                "idle_connection_closed",
                f"{limit} connections open: closed the one idle longest to serve a new one",
            )
            oldest._close()
            # at once, not when the loop reports the connection lost: the new request is counted against
            # the cap before that
            self.connections.discard(oldest)

    def _close(self) -> None:
        self._cancel_head_deadline()
        with contextlib.suppress(h11.LocalProtocolError):
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()


def guarded_protocol(server_name: str) -> type[GuardedH11Protocol]:
    """The protocol class for one server (its name in the rejection counts and the log)."""
    return type(f"GuardedH11Protocol[{server_name}]", (GuardedH11Protocol,), {"server_name": server_name})


class _EmbeddedServer(uvicorn.Server):
    """uvicorn without its signal handling: the process owns SIGTERM/SIGINT (for a table, a clean stop of the
    whole table), and stops the server by cancelling `serve_until_cancelled`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def embedded_server(
    app: ASGIApp,
    *,
    name: str = "http",
    host: str,
    port: int,
    limit_concurrency: int,
    timeout_graceful_shutdown: int,
    **options: Any,
) -> uvicorn.Server:
    """A server for `app` that logs only warnings, through the process's own logging setup. `name` (panel,
    metrics, console) names it in the rejection counts."""
    return _EmbeddedServer(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            http=guarded_protocol(name),
            ws="none",  # no page uses websockets
            limit_concurrency=limit_concurrency,
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            log_level="warning",
            log_config=None,  # keep the process's logging setup
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=timeout_graceful_shutdown,
            **options,
        )
    )


async def serve_until_cancelled(
    server: uvicorn.Server, *, cannot_listen: Exception, on_cancel: Callable[[], None] | None = None
) -> None:
    """Serve until cancelled; then `on_cancel` (end what would hold up a graceful shutdown, such as open
    streams) and shut the server down. Raises `cannot_listen` if the server cannot listen on its address."""
    try:
        await server.serve()
    except SystemExit:
        # uvicorn exits the process when it cannot bind; the caller must rather say why and stop cleanly
        raise cannot_listen from None
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel()
        if hasattr(server, "servers"):  # it was listening
            server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.shutdown(), 5)
        raise
