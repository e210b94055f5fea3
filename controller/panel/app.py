"""The dealer's touch panel: a small web app served by the table service, shown by a kiosk browser.

The page is static (no framework, no CDN: it must work with the studio network down). It reads the table's
public state — the same snapshot MQTT subscribers get, which never holds a secret — from `/api/state`,
and live from `/api/stream` (Server-Sent Events) once a dealer is signed in. The dealer acts through
`/api/commands/<name>` and `/api/inputs/<name>`, which go through the same validation as MQTT commands,
always in the dealer's name.

The panel is the dealer, not a supervisor: it may pause (call the supervisor), enter a card by hand, load a
new shoe and close betting. Resuming, voiding, device maintenance and bus commands stay with the
supervisors, over MQTT.

Who may use it (see `PanelGuard` and `controller.panel.auth`): requests must name one of the configured
host names and the panel's port (`Host`), so a DNS-rebinding page cannot reach it under a name of its own;
every POST must come from the panel's own origin (`Origin`, required) and carry the token embedded in the
page served at this boot (`X-Panel-Token`); and acting on the table needs a dealer signed in with a PIN
(`[panel.dealers]`), in whose name (`dealer:<id>`) each command is recorded. Wrong PINs are rate-limited,
and live streams need a signed-in dealer and are capped (`max_streams`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, Protocol

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from controller.commands import BUS_COMMANDS, INPUTS, TABLE_COMMANDS, CommandError, parse_command
from controller.config import PanelSettings
from controller.panel.auth import PanelAuth, SignInError
from controller.pins import DEALER_ID_PATTERN
from controller.service import TableService
from controller.web.json_body import BadRequestBody, read_json
from controller.web.server import REJECTIONS, embedded_server, serve_until_cancelled
from drivers.waiting import with_timeout

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"

#: what the dealer may do from the panel, by kind; every other known name is a supervisor's
DEALER_ACTIONS: dict[str, frozenset[str]] = {
    "commands": frozenset({"pause", "manual_card", "new_shoe", "shuffle"}),
    "inputs": frozenset({"close_betting"}),
}
#: the sender on record of a panel command: the signed-in dealer, whatever the payload claims
IDENTITY_PREFIX = "dealer:"
SESSION_COOKIE = "tablectl_panel"
TOKEN_HEADER = "x-panel-token"
#: in index.html, replaced by this boot's values when the page is served
TOKEN_PLACEHOLDER = "__PANEL_TOKEN__"
BOOT_PLACEHOLDER = "__PANEL_BOOT__"
#: connections uvicorn accepts beyond the live streams before answering 503 itself (the page, its files,
#: commands, a few stale keep-alives): no flood of connections can exhaust the service's file descriptors
EXTRA_CONNECTIONS = 32
#: methods that change nothing; every other one needs Origin and the page token
SAFE_METHODS = frozenset({"GET", "HEAD"})
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

    def __init__(self, service: TableService, *, max_streams: int = 16, boot_id: str = "") -> None:
        self.service = service
        self.max_streams = max_streams
        #: sent to each new stream: a page from another boot reloads itself (its token is stale)
        self.boot_id = boot_id
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

    def __init__(self, hub: StateHub, signed_in: Callable[[], bool]) -> None:
        # not Response.__init__: it would declare `content-length: 0` for an endless body
        self.hub = hub
        #: asked before each message: the stream ends with the dealer's session (sign-out, expiry)
        self.signed_in = signed_in
        self.status_code = 200
        self.background = None
        self.raw_headers = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-store"),
            (b"x-accel-buffering", b"no"),  # a reverse proxy, if any, must not buffer the stream
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # checked and subscribed with no await in between: concurrent requests cannot overshoot the cap
        if len(self.hub.subscriptions) >= self.hub.max_streams:
            log.warning("panel: %d live streams already; one more refused", len(self.hub.subscriptions))
            refused = _error(503, "too many panel screens are open; close one")
            refused.headers["retry-after"] = "5"
            await refused(scope, receive, send)
            return
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
        first = True
        while True:
            try:
                state = await with_timeout(subscription.next(), HEARTBEAT_SECONDS)
            except TimeoutError:
                if not self.signed_in():
                    return
                await self._body(send, b": heartbeat\n\n")
                continue
            if not self.signed_in():
                return
            await self._body(send, sse_event(state))
            if first:
                await self._body(send, f"event: boot\ndata: {json.dumps(self.hub.boot_id)}\n\n".encode())
                first = False

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


def _refused_body(exc: BadRequestBody, transaction: Any = None) -> JSONResponse:
    """A body the panel will not read (too large, too slow, not JSON, too deep): a 4xx, counted, no
    traceback."""
    REJECTIONS.count("panel", exc.reason, f"refused a request body: {exc}")
    return _error(exc.status, str(exc), transaction)


async def _command(request: Request, service: TableService, auth: PanelAuth, kind: str) -> JSONResponse:
    name = request.path_params["name"]
    dealer = auth.dealer_for(request.cookies.get(SESSION_COOKIE))
    if dealer is None:
        return _error(401, "sign in first (dealer id and PIN)")
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
    try:
        payload = await read_json(request, MAX_BODY_BYTES)
    except BadRequestBody as exc:
        return _refused_body(exc)
    transaction = payload.get("transaction") if isinstance(payload, dict) else None
    if isinstance(payload, dict):
        # whatever the payload claims, the sender on record is the signed-in dealer
        payload = {key: value for key, value in payload.items() if key != "by"}
    try:
        command = parse_command(kind, name, payload, by=IDENTITY_PREFIX + dealer)
        reply = await service.handle_command(command)
    except CommandError as exc:
        return _error(400, str(exc), transaction)
    except Exception:
        log.exception("panel %s/%s failed", kind, name)
        return _error(500, "internal error in the controller (see its log); call the supervisor", transaction)
    return JSONResponse({"status": "ok", "transaction": command.transaction, "data": reply})


# -- camera frames ---------------------------------------------------------------------------------------

#: a frame file as the camera capture names it (`drivers.camera.capture`): no path, PNG only
_FRAME_NAME = re.compile(r"[0-9]{8}-[0-9TZ.]+\.png")


def _camera_frame(service: TableService, device: str, name: str) -> Response:
    """A frame a camera kept (sic bo: the one the dice were read from), from that camera's capture folder."""
    camera = service.cameras.get(device)
    capture = getattr(camera, "capture", None)
    if capture is None or not _FRAME_NAME.fullmatch(name):
        return _error(404, "no such frame")
    path = capture.frames_dir / name
    if not path.is_file():
        return _error(404, "no such frame")
    # a kept frame never changes (its sha256 is in the result): it may be cached
    return FileResponse(path, media_type="image/png", headers={"cache-control": "private, max-age=3600"})


# -- dealer sign-in --------------------------------------------------------------------------------------


async def _sign_in(request: Request, auth: PanelAuth, settings: PanelSettings) -> Response:
    usage = 'send {"dealer": "<id>", "pin": "<digits>"} as JSON'
    try:
        payload = await read_json(request, MAX_BODY_BYTES)
    except BadRequestBody as exc:
        refused = _refused_body(exc)
        return _error(400, usage) if exc.reason == "not_json" else refused
    if not isinstance(payload, dict) or not payload:
        return _error(400, usage)
    dealer, pin = payload.get("dealer"), payload.get("pin")
    if not isinstance(dealer, str) or not isinstance(pin, str) or not DEALER_ID_PATTERN.match(dealer):
        return _error(400, "enter your dealer id and PIN")
    try:
        # one check at a time: parallel guesses must not all pass the limiter before the first one fails
        async with auth.checking:
            auth.before_sign_in(dealer)
            # the hash takes tens of milliseconds of CPU: off the loop, so the table does not wait on it
            matched = await asyncio.to_thread(auth.check_pin, dealer, pin)
            session_id = auth.after_check(dealer, matched)
    except SignInError as exc:
        if exc.status == 401:
            log.warning("panel: wrong PIN or unknown dealer id %r", dealer)
        refused = _error(exc.status, str(exc))
        if exc.retry_after is not None:
            refused.headers["retry-after"] = str(int(exc.retry_after) + 1)
        return refused
    log.info("panel: dealer %s signed in", dealer)
    response = JSONResponse({"status": "ok", "dealer": dealer})
    response.set_cookie(
        SESSION_COOKIE,
        session_id,
        max_age=int(settings.session_hours * 3600),
        path="/",
        httponly=True,
        samesite="strict",
    )
    return response


def _sign_out(request: Request, auth: PanelAuth) -> Response:
    auth.sign_out(request.cookies.get(SESSION_COOKIE))
    response = JSONResponse({"status": "ok", "dealer": None})
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
    return response


class GuardedPageSettings(Protocol):
    """Where a guarded page is served: the panel's settings, the console's."""

    @property
    def port(self) -> int: ...
    @property
    def allowed_hosts(self) -> list[str]: ...
    @property
    def scheme(self) -> str: ...


class PageGuard:
    """Refuses, before any route runs: a `Host` that is not one of the page's names and port (DNS
    rebinding: the attacker controls both `Host` and `Origin`, so comparing them proves nothing); and any
    request but a GET or HEAD without the page's own `Origin` or without the token of the page served at this
    start. The panel's and the console's pages are guarded alike: each names its page, the header its page
    sends the token in, and how it answers an error."""

    page: ClassVar[str]
    token_header: ClassVar[str]
    error: Callable[[int, str], Response]

    def __init__(
        self, app: ASGIApp, settings: GuardedPageSettings, token_ok: Callable[[str | None], bool]
    ) -> None:
        self.app = app
        self.token_ok = token_ok
        default_port = 443 if settings.scheme == "https" else 80
        self.hosts = {f"{name}:{settings.port}" for name in settings.allowed_hosts}
        if settings.port == default_port:
            self.hosts |= set(settings.allowed_hosts)
        self.origins = {f"{settings.scheme}://{host}" for host in self.hosts}

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        if headers.get("host", "").lower() not in self.hosts:
            return 421, f"unknown host name for this {self.page} (see [{self.page}] allowed_hosts)"
        if scope["method"] in SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is None or origin.lower() not in self.origins:
            return 403, "requests from another web page are refused"
        if not self.token_ok(headers.get(self.token_header)):
            # the page was served by an earlier start of the service (or not by this service at all)
            return 403, "stale page: reload it"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(scope)
            if refusal is not None:
                await self.error(*refusal)(scope, receive, send)
                return
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)


class PanelGuard(PageGuard):
    """The panel's page: the token of the page served at this boot (`auth.token_ok`)."""

    page = "panel"
    token_header = TOKEN_HEADER
    error = staticmethod(_error)


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


def create_app(
    service: TableService, settings: PanelSettings | None = None, auth: PanelAuth | None = None
) -> Starlette:
    """The panel's ASGI app. `auth` lives as long as the service process (one per boot); a new one is
    made if not given."""
    settings = settings or PanelSettings()
    if auth is None:
        auth = new_auth(settings)
    hub = StateHub(service, max_streams=settings.max_streams, boot_id=auth.boot_id)
    page_html = (
        (STATIC_DIR / "index.html")
        .read_text(encoding="utf-8")
        .replace(TOKEN_PLACEHOLDER, auth.page_token)
        .replace(BOOT_PLACEHOLDER, auth.boot_id)
    )

    async def page(request: Request) -> Response:
        # no-store: the page holds this boot's token
        return HTMLResponse(page_html, headers={"cache-control": "no-store"})

    async def state(request: Request) -> Response:
        return JSONResponse(service.public_state(), headers={"cache-control": "no-store"})

    async def stream(request: Request) -> Response:
        # a live stream holds a connection for as long as it is open: only a signed-in dealer gets one, so
        # nobody else can take the screens' slots (`max_streams`); the page shows `/api/state` until then
        session_id = request.cookies.get(SESSION_COOKIE)
        if auth.dealer_for(session_id) is None:
            REJECTIONS.count("panel", "stream_without_session", "refused a live stream without a sign-in")
            return _error(401, "sign in first (dealer id and PIN)")
        return EventStreamResponse(hub, lambda: auth.dealer_for(session_id) is not None)

    async def session(request: Request) -> Response:
        if request.method == "GET":
            dealer = auth.dealer_for(request.cookies.get(SESSION_COOKIE))
            return JSONResponse({"dealer": dealer, "dealers_configured": bool(auth.dealers)})
        if request.method == "DELETE":
            return _sign_out(request, auth)
        return await _sign_in(request, auth, settings)

    async def frame(request: Request) -> Response:
        return _camera_frame(service, request.path_params["device"], request.path_params["name"])

    async def command(request: Request) -> Response:
        return await _command(request, service, auth, "commands")

    async def table_input(request: Request) -> Response:
        return await _command(request, service, auth, "inputs")

    app = Starlette(
        routes=[
            Route("/", page, methods=["GET"]),
            Route("/api/state", state, methods=["GET"]),
            Route("/api/stream", stream, methods=["GET"]),
            Route("/api/session", session, methods=["GET", "POST", "DELETE"]),
            Route("/api/frames/{device}/{name}", frame, methods=["GET"]),
            Route("/api/commands/{name}", command, methods=["POST"]),
            Route("/api/inputs/{name}", table_input, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        middleware=[
            Middleware(PanelHeaders),
            Middleware(PanelGuard, settings=settings, token_ok=auth.token_ok),
        ],
    )
    app.state.hub = hub
    app.state.auth = auth
    return app


def new_auth(settings: PanelSettings) -> PanelAuth:
    """The sign-in state of one boot of the service (keep it for the process's life)."""
    return PanelAuth(
        settings.dealers,
        session_seconds=settings.session_hours * 3600,
        pin_attempts=settings.pin_attempts,
        pin_lockout_seconds=settings.pin_lockout_seconds,
    )


async def serve_panel(
    service: TableService, settings: PanelSettings, *, auth: PanelAuth | None = None
) -> None:
    """Serve the panel until cancelled. Raises PanelError if it cannot listen on its host:port."""
    host, port = settings.host, settings.port
    app = create_app(service, settings, auth)
    if not settings.dealers:
        log.warning("panel: no dealers in [panel.dealers]: the panel shows the table, nobody can act on it")
    server = embedded_server(
        app,
        name="panel",
        host=host,
        port=port,
        limit_concurrency=settings.max_streams + EXTRA_CONNECTIONS,
        timeout_graceful_shutdown=2,
    )
    await serve_until_cancelled(
        server,
        cannot_listen=PanelError(f"the dealer panel cannot listen on {host}:{port} (port in use?)"),
        # open streams end, so the graceful shutdown does not wait on them
        on_cancel=app.state.hub.close,
    )
