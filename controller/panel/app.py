"""The dealer's touch panel: a small web app served by the table service, shown by a kiosk browser.

The page is static (no framework, no CDN: it must work with the studio network down). It reads the table's
public state — the same snapshot MQTT subscribers get, which never holds a secret — from `/api/state`,
and live from `/api/stream` (Server-Sent Events) once a dealer is signed in. The dealer acts through
`/api/commands/<name>` and `/api/inputs/<name>`, which go through the same validation as MQTT commands,
always in the dealer's name.

The panel is the dealer, not a supervisor: it may pause (call the supervisor), enter a card by hand, load a
new shoe and close betting. Resuming, voiding, device maintenance and bus commands stay with the
supervisors, over MQTT.

Who may use it (see `PanelGuard`, `controller.web.page_guard` and `controller.panel.auth`): requests must
name one of the configured host names and the panel's port (`Host`), so a DNS-rebinding page cannot reach
it under a name of its own; every POST must come from the panel's own origin (`Origin`, required) and carry
the token embedded in the page served at this boot (`X-Panel-Token`); and acting on the table needs a
dealer signed in with a PIN (`[panel.dealers]`), in whose name (`dealer:<id>`) each command is recorded.
Wrong PINs are rate-limited, and live streams need a signed-in dealer and are capped (`max_streams`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from controller.commands import BUS_COMMANDS, INPUTS, TABLE_COMMANDS, CommandError, parse_command
from controller.config import PanelSettings
from controller.panel.auth import PanelAuth
from controller.pause_reasons import DEALER_SENDER_PREFIX, explain_pause
from controller.pins import DEALER_ID_PATTERN
from controller.service import TableService
from controller.web.event_stream import HEARTBEAT_SECONDS, EventStream, EventWriter, StreamSlots
from controller.web.json_body import BadRequestBody, body_refusal, read_json
from controller.web.page_app import page_app
from controller.web.page_guard import PageGuard
from controller.web.server import REJECTIONS, embedded_server, serve_until_cancelled
from controller.web.sign_in import SessionCookie, SignInError, sign_in_refusal
from drivers.waiting import with_timeout

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"

#: what the dealer may do from the panel, by kind; every other known name is a supervisor's
DEALER_ACTIONS: dict[str, frozenset[str]] = {
    "commands": frozenset({"pause", "manual_card", "new_shoe", "shuffle"}),
    "inputs": frozenset({"close_betting"}),
}
#: the sender on record of a panel command: the signed-in dealer, whatever the payload claims
IDENTITY_PREFIX = DEALER_SENDER_PREFIX
SESSION_COOKIE = "tablectl_panel"
TOKEN_HEADER = "x-panel-token"
#: in index.html, replaced by this boot's values when the page is served
TOKEN_PLACEHOLDER = "__PANEL_TOKEN__"
BOOT_PLACEHOLDER = "__PANEL_BOOT__"
#: connections uvicorn accepts beyond the live streams before answering 503 itself (the page, its files,
#: commands, a few stale keep-alives): no flood of connections can exhaust the service's file descriptors
EXTRA_CONNECTIONS = 32
#: a command body is a few dozen bytes; anything this large is not from the panel
MAX_BODY_BYTES = 16 * 1024

_KNOWN: dict[str, set[str]] = {
    "commands": set(TABLE_COMMANDS) | set(BUS_COMMANDS),
    "inputs": set(INPUTS),
}


class PanelError(RuntimeError):
    """The panel cannot run (e.g. its port is taken); worded for the operator."""


def panel_state(state: dict[str, Any]) -> dict[str, Any]:
    """What a screen is sent: the public state plus its pause explained (`pause_explained`), worked out
    here from that same state so the banner never disagrees with the device chips beside it, and worded by
    `controller.pause_reasons` like the studio console's."""
    explained = explain_pause(state.get("pause") if state.get("paused") else None, state.get("devices"))
    return {**state, "pause_explained": None if explained is None else explained.public()}


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
        self.slots = StreamSlots(max_streams)
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


class StateStream(EventStream):
    """`/api/stream`: the table state (`event: state`, the newest one each time) until the browser goes
    away, the dealer's session ends (sign-out, expiry) or the panel shuts down; after the first state, this
    boot's id (`event: boot`)."""

    server = "panel"

    def __init__(self, hub: StateHub, signed_in: Callable[[], bool], heartbeat_seconds: float) -> None:
        super().__init__(hub.slots, hub.closing)
        self.hub = hub
        #: asked before each message: the stream ends with the dealer's session (sign-out, expiry)
        self.signed_in = signed_in
        self.heartbeat_seconds = heartbeat_seconds
        self._subscription: StateSubscription | None = None

    def refused(self) -> Response:
        log.warning("panel: %d live streams already; one more refused", self.hub.slots.open)
        return _error(503, "too many panel screens are open; close one")

    @contextlib.contextmanager
    def opened(self) -> Iterator[None]:
        with self.hub.subscribe() as self._subscription:
            yield

    async def send_events(self, out: EventWriter) -> None:
        assert self._subscription is not None
        first = True
        while True:
            try:
                state = await with_timeout(self._subscription.next(), self.heartbeat_seconds)
            except TimeoutError:
                if not self.signed_in():
                    return
                await out.heartbeat()
                continue
            if not self.signed_in():
                return
            await out.event("state", json.dumps(panel_state(state), ensure_ascii=False))
            if first:
                await out.event("boot", json.dumps(self.hub.boot_id))
                first = False


# -- commands -------------------------------------------------------------------------------------------


def _error(status: int, message: str, transaction: Any = None) -> JSONResponse:
    return JSONResponse({"status": "error", "transaction": transaction, "error": message}, status_code=status)


async def _command(
    request: Request, service: TableService, auth: PanelAuth, cookie: SessionCookie, kind: str
) -> Response:
    name = request.path_params["name"]
    dealer = auth.dealer_for(cookie.session_id(request))
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
        return body_refusal("panel", exc, _error)
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


async def _sign_in(request: Request, auth: PanelAuth, cookie: SessionCookie) -> Response:
    usage = 'send {"dealer": "<id>", "pin": "<digits>"} as JSON'
    try:
        payload = await read_json(request, MAX_BODY_BYTES)
    except BadRequestBody as exc:
        return body_refusal("panel", exc, _error, usage=usage)
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
        if exc.status == 401 and dealer in auth.dealers:
            log.warning("panel: wrong PIN for dealer %r", dealer)
        elif exc.status == 401:
            # not echoed: a dealer may have typed the PIN in the id field
            log.warning("panel: an unknown dealer id (%d characters)", len(dealer))
        return sign_in_refusal(exc, _error)
    log.info("panel: dealer %s signed in", dealer)
    response = JSONResponse({"status": "ok", "dealer": dealer})
    cookie.set(response, session_id)
    return response


def _sign_out(request: Request, auth: PanelAuth, cookie: SessionCookie) -> Response:
    auth.sign_out(cookie.session_id(request))
    response = JSONResponse({"status": "ok", "dealer": None})
    cookie.clear(response)
    return response


class PanelGuard(PageGuard):
    """The panel's page: the token of the page served at this boot (`auth.page_token`)."""

    page = "panel"
    token_header = TOKEN_HEADER
    error = staticmethod(_error)


# -- the app --------------------------------------------------------------------------------------------


def create_app(
    service: TableService, settings: PanelSettings | None = None, auth: PanelAuth | None = None
) -> Starlette:
    """The panel's ASGI app. `auth` lives as long as the service process (one per boot); a new one is
    made if not given."""
    settings = settings or PanelSettings()
    if auth is None:
        auth = new_auth(settings)
    hub = StateHub(service, max_streams=settings.max_streams, boot_id=auth.boot_id)
    cookie = SessionCookie(SESSION_COOKIE, max_age=int(settings.session_hours * 3600))
    page_html = (
        (STATIC_DIR / "index.html")
        .read_text(encoding="utf-8")
        .replace(TOKEN_PLACEHOLDER, auth.page_token)
        .replace(BOOT_PLACEHOLDER, auth.boot_id)
    )

    async def state(request: Request) -> Response:
        return JSONResponse(panel_state(service.public_state()), headers={"cache-control": "no-store"})

    async def stream(request: Request) -> Response:
        # a live stream holds a connection for as long as it is open: only a signed-in dealer gets one, so
        # nobody else can take the screens' slots (`max_streams`); the page shows `/api/state` until then
        session_id = cookie.session_id(request)
        if auth.dealer_for(session_id) is None:
            REJECTIONS.count("panel", "stream_without_session", "refused a live stream without a sign-in")
            return _error(401, "sign in first (dealer id and PIN)")
        return StateStream(hub, lambda: auth.dealer_for(session_id) is not None, HEARTBEAT_SECONDS)

    async def session(request: Request) -> Response:
        if request.method == "GET":
            dealer = auth.dealer_for(cookie.session_id(request))
            return JSONResponse({"dealer": dealer, "dealers_configured": bool(auth.dealers)})
        if request.method == "DELETE":
            return _sign_out(request, auth, cookie)
        return await _sign_in(request, auth, cookie)

    async def frame(request: Request) -> Response:
        return _camera_frame(service, request.path_params["device"], request.path_params["name"])

    async def command(request: Request) -> Response:
        return await _command(request, service, auth, cookie, "commands")

    async def table_input(request: Request) -> Response:
        return await _command(request, service, auth, cookie, "inputs")

    app = page_app(
        page_html,
        [
            Route("/api/state", state, methods=["GET"]),
            Route("/api/stream", stream, methods=["GET"]),
            Route("/api/session", session, methods=["GET", "POST", "DELETE"]),
            Route("/api/frames/{device}/{name}", frame, methods=["GET"]),
            Route("/api/commands/{name}", command, methods=["POST"]),
            Route("/api/inputs/{name}", table_input, methods=["POST"]),
        ],
        static_dir=STATIC_DIR,
        guard=PanelGuard,
        settings=settings,
        page_token=auth.page_token,
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
