"""The dealer's touch panel: a small web app served by the table service, shown by a kiosk browser.

The page is static (no framework, no CDN: it must work with the studio network down). It reads the table's
public state — the same snapshot MQTT subscribers get, which never holds a secret — once from `/api/state`
and then live from `/api/stream` (Server-Sent Events). The dealer acts through `/api/commands/<name>` and
`/api/inputs/<name>`, which go through the same validation as MQTT commands, always in the dealer's name.

The panel is the dealer, not a supervisor: it may pause (call the supervisor), enter a card by hand, load a
new shoe and close betting. Resuming, voiding, device maintenance and bus commands stay with the
supervisors, over MQTT.

There is no login: bind the panel to 127.0.0.1 (the kiosk browser runs on the table PC). Requests from a
page of another origin are refused, so a web page opened elsewhere on the PC cannot drive the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from controller.commands import BUS_COMMANDS, INPUTS, TABLE_COMMANDS, CommandError, parse_command
from controller.service import TableService

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"

#: what the dealer may do from the panel, by kind; every other known name is a supervisor's
DEALER_ACTIONS: dict[str, frozenset[str]] = {
    "commands": frozenset({"pause", "manual_card", "new_shoe"}),
    "inputs": frozenset({"close_betting"}),
}
#: recorded as the sender of every panel command, whatever the payload claims
PANEL_SENDER = "panel"
#: an SSE comment this often keeps the connection (and anything in between) from timing it out
HEARTBEAT_SECONDS = 15.0
#: how long the browser waits before reconnecting a dropped stream
RECONNECT_MILLISECONDS = 2000
#: a command body is a few dozen bytes; anything this large is not from the panel
MAX_BODY_BYTES = 16 * 1024

_KNOWN: dict[str, set[str]] = {
    "commands": set(TABLE_COMMANDS) | set(BUS_COMMANDS),
    "inputs": set(INPUTS),
}
_SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    # Everything comes from this server: no CDN, no inline script, so an injected string cannot run.
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        b"frame-ancestors 'none'; form-action 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


class PanelError(RuntimeError):
    """The panel cannot run (e.g. its port is taken); worded for the operator."""


# -- live state fan-out ---------------------------------------------------------------------------------


class StateSubscription:
    """One screen's feed. Holds only the newest state not sent yet: a slow or stalled browser skips
    intermediate states (each one is a full snapshot) and can never make the service wait or grow memory."""

    def __init__(self) -> None:
        self._latest: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=1)

    def offer(self, state: dict[str, Any]) -> None:
        """A service state listener: called on the event loop, must not block."""
        if self._latest.full():
            self._latest.get_nowait()
        self._latest.put_nowait(state)

    async def next(self) -> dict[str, Any]:
        return await self._latest.get()


class StateHub:
    """Connects browser streams to the service's state listeners, and ends them all at shutdown."""

    def __init__(self, service: TableService) -> None:
        self.service = service
        self.closing = asyncio.Event()
        #: the screens watching now (diagnostics)
        self.subscriptions: set[StateSubscription] = set()

    @contextlib.contextmanager
    def subscribe(self) -> Iterator[StateSubscription]:
        subscription = StateSubscription()
        self.service.state_listeners.append(subscription.offer)
        self.subscriptions.add(subscription)
        try:
            subscription.offer(self.service.public_state())
            yield subscription
        finally:
            self.subscriptions.discard(subscription)
            with contextlib.suppress(ValueError):
                self.service.state_listeners.remove(subscription.offer)

    def close(self) -> None:
        self.closing.set()


def sse_event(state: dict[str, Any]) -> bytes:
    # json.dumps never emits a raw newline, so the whole state fits one `data:` line
    return b"event: state\ndata: " + json.dumps(state, ensure_ascii=False).encode() + b"\n\n"


class EventStreamResponse(Response):
    """`text/event-stream` of the table state until the browser goes away or the panel shuts down.

    Written at the ASGI level because a stream that waits for the next state must notice a disconnect
    itself (the server only reports it through `receive`), or every closed tab would leak a listener.
    """

    media_type = "text/event-stream"

    def __init__(self, hub: StateHub) -> None:
        # not Response.__init__: it would declare `content-length: 0` for an endless body
        self.hub = hub
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-store"),
            (b"x-accel-buffering", b"no"),  # a reverse proxy, if any, must not buffer the stream
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with self.hub.subscribe() as subscription:
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            tasks = [
                asyncio.create_task(self._send_states(subscription, send)),
                asyncio.create_task(self._until_disconnected(receive)),
                asyncio.create_task(self.hub.closing.wait()),
            ]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.debug("panel stream ended: %r", task.exception())
        with contextlib.suppress(Exception):  # the browser may be gone already
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_states(self, subscription: StateSubscription, send: Send) -> None:
        await self._body(send, f"retry: {RECONNECT_MILLISECONDS}\n\n".encode())
        while True:
            try:
                state = await asyncio.wait_for(subscription.next(), HEARTBEAT_SECONDS)
            except TimeoutError:
                await self._body(send, b": heartbeat\n\n")
                continue
            await self._body(send, sse_event(state))

    @staticmethod
    async def _body(send: Send, chunk: bytes) -> None:
        await send({"type": "http.response.body", "body": chunk, "more_body": True})

    @staticmethod
    async def _until_disconnected(receive: Receive) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass


# -- commands -------------------------------------------------------------------------------------------


def _error(status: int, message: str, transaction: Any = None) -> JSONResponse:
    return JSONResponse({"status": "error", "transaction": transaction, "error": message}, status_code=status)


def _same_origin(request: Request) -> bool:
    """Browsers send Origin on a POST; a page from elsewhere must not drive the table through the kiosk PC.
    Tools without a browser (curl, tests) send none and are let through: they are not a CSRF vector."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc == request.headers.get("host")


async def _read_body(request: Request) -> bytes | None:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return None
    return bytes(body)


async def _command(request: Request, service: TableService, kind: str) -> JSONResponse:
    name = request.path_params["name"]
    if not _same_origin(request):
        return _error(403, "requests from another web page are refused")
    if name in _KNOWN[kind] and name not in DEALER_ACTIONS[kind]:
        allowed = ", ".join(sorted(DEALER_ACTIONS["commands"] | DEALER_ACTIONS["inputs"]))
        return _error(
            403,
            f"{name} is for the supervisors (over MQTT), not the dealer's panel; the panel can: {allowed}",
        )
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        # also what makes a cross-site form or text/plain post impossible (browsers preflight JSON)
        return _error(415, "send the payload as Content-Type: application/json")
    body = await _read_body(request)
    if body is None:
        return _error(413, f"the payload is larger than {MAX_BODY_BYTES} bytes")
    try:
        payload = json.loads(body) if body.strip() else {}
    except ValueError as exc:
        return _error(400, f"the payload is not valid JSON: {exc}")
    transaction = payload.get("transaction") if isinstance(payload, dict) else None
    if isinstance(payload, dict):
        # the panel stands at the table: whatever it claims, the sender on record is the dealer's panel
        payload = {key: value for key, value in payload.items() if key != "by"}
    try:
        command = parse_command(kind, name, payload, by=PANEL_SENDER)
        reply = await service.handle_command(command)
    except CommandError as exc:
        return _error(400, str(exc), transaction)
    except Exception:
        log.exception("panel %s/%s failed", kind, name)
        return _error(500, "internal error in the controller (see its log); call the supervisor", transaction)
    return JSONResponse({"status": "ok", "transaction": command.transaction, "data": reply})


# -- the app --------------------------------------------------------------------------------------------


class PanelHeaders:
    """Security headers on every response; API answers are never cached and the page is revalidated, so a
    kiosk picks up a new panel after an upgrade without anyone clearing its cache."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {key.lower() for key, _ in headers}
                headers += [(k, v) for k, v in _SECURITY_HEADERS if k not in present]
                if b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-cache"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def create_app(service: TableService) -> Starlette:
    hub = StateHub(service)

    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")

    async def state(request: Request) -> Response:
        return JSONResponse(service.public_state(), headers={"cache-control": "no-store"})

    async def stream(request: Request) -> Response:
        return EventStreamResponse(hub)

    async def command(request: Request) -> Response:
        return await _command(request, service, "commands")

    async def table_input(request: Request) -> Response:
        return await _command(request, service, "inputs")

    app = Starlette(
        routes=[
            Route("/", page, methods=["GET"]),
            Route("/api/state", state, methods=["GET"]),
            Route("/api/stream", stream, methods=["GET"]),
            Route("/api/commands/{name}", command, methods=["POST"]),
            Route("/api/inputs/{name}", table_input, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        middleware=[Middleware(PanelHeaders)],
    )
    app.state.hub = hub
    return app


class _PanelServer(uvicorn.Server):
    """uvicorn without its signal handling: the table service owns SIGTERM/SIGINT (a clean stop of the
    whole table), and the panel is stopped by cancelling `serve_panel`."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def serve_panel(service: TableService, host: str, port: int) -> None:
    """Serve the panel until cancelled. Raises PanelError if it cannot listen on host:port."""
    app = create_app(service)
    server = _PanelServer(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            log_config=None,  # keep the service's logging setup
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=2,
        )
    )
    try:
        await server.serve()
    except SystemExit:
        # uvicorn exits the process when it cannot bind; the table must rather say why and stop cleanly
        raise PanelError(f"the dealer panel cannot listen on {host}:{port} (port in use?)") from None
    except asyncio.CancelledError:
        app.state.hub.close()  # open streams end, so the graceful shutdown does not wait on them
        if hasattr(server, "servers"):  # it was listening
            server.should_exit = True
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.shutdown(), 5)
        raise
