"""The studio supervisor's console: a small web app (starlette + uvicorn, plain HTML/JS, no build step).

`tablectl console` serves one page that shows every table of a studio live and lets a supervisor act on a
paused round. The page's data comes from the studio's broker, read with the supervisor's own broker
credentials (`controller.console.link`): each signed-in supervisor has a broker connection of their own, and
every command goes out in their name (`commands/<name>/<their user>`), so the broker authenticates it and its
ACL decides. With `[broker] username` in the console's config there is no sign-in: the console is that user.

Updates reach the page as Server-Sent Events: `/api/stream` sends the summary of every table once, then only
the tables that changed, at most every `COALESCE_SECONDS` (a page never falls behind: a slow one skips
intermediate versions of a table). One table's details come from `/api/tables/<id>`.

Who may use it, as for the dealer's panel: only the configured host names (`Host`) are served, every POST
must come from the page's own origin and carry the token embedded in the page at this start of the console,
and the session cookie is HttpOnly and SameSite=Strict. Only the users `[console] sign_in_users` names
(`supervisor-*` by default) may sign in; refused sign-ins are rate-limited per user name and per client
address (never in all, so that a flood cannot keep every supervisor out); a user has at most
`max_sessions_per_user` sessions (a new sign-in ends their oldest, and its broker connection). The
console refuses to start where the supervisors' passwords would cross the network in clear
(`ConsoleConfig.exposures`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from controller.commands import CommandError, check_remote_identity, parse_command
from controller.console.link import USER_PATTERN, SignInRefused, StudioLink
from controller.console.metrics import ConsoleMetrics, MeteredSession
from controller.console.model import SharedEvents, StudioModel
from controller.console.settings import ConsoleConfig
from controller.events import iso_ms
from controller.web.event_stream import HEARTBEAT_SECONDS, EventStream, EventWriter, StreamSlots
from controller.web.json_body import BadRequestBody, body_refusal, read_json
from controller.web.page_app import page_app
from controller.web.page_guard import PageGuard
from controller.web.server import REJECTIONS, embedded_server, serve_until_cancelled
from controller.web.sessions import Sessions, new_session_id
from controller.web.sign_in import SessionCookie, SignInError, WrongSecretLimiter, sign_in_refusal
from drivers.waiting import wait_event

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"
SESSION_COOKIE = "tablectl_console"
TOKEN_HEADER = "x-console-token"
TOKEN_PLACEHOLDER = "__CONSOLE_TOKEN__"
BOOT_PLACEHOLDER = "__CONSOLE_BOOT__"
#: the commands the console sends (the supervisors'; the dealer's and the rules engine's are not here)
CONSOLE_COMMANDS = ("pause", "resume", "void_round", "device_action", "rebirth")
#: a page gets the changes at most this often (the first change after a quiet spell goes at once)
COALESCE_SECONDS = 0.05
MAX_BODY_BYTES = 16 * 1024
#: connections beyond the live streams before uvicorn answers 503 itself
EXTRA_CONNECTIONS = 32


class Notifier:
    """Wakes every stream of a session when its model changed (many messages, one wake-up each)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait(self, timeout: float) -> None:
        await wait_event(self._event, timeout)


@dataclass
class ConsoleSession:
    id: str
    user: str
    model: StudioModel
    link: StudioLink
    notifier: Notifier
    expires: float
    #: since when no page of this session has been open (its stream); None while one is
    idle_since: float | None = None
    streams: int = 0
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    async def close(self) -> None:
        self.closed.set()
        self.notifier.notify()
        await self.link.close()


class Console:
    """The console process's state: its settings, the signed-in sessions, this start's page token."""

    def __init__(self, config: ConsoleConfig, *, clock: Any = time.monotonic) -> None:
        self.config = config
        self.settings = config.console
        self.clock = clock
        self.page_token = secrets.token_urlsafe(32)
        #: this start's id, in the page and in /api/session: a page served by an earlier start (its token
        #: stale, its sign-in gone with that start's memory) sees it differ and reloads itself
        self.boot_id = secrets.token_hex(8)
        #: the signed-in sessions by id, the oldest first (not the one of a user in the config: `fixed`)
        self.sessions: Sessions[ConsoleSession] = Sessions(clock=clock, on_end=self._ended)
        self.fixed: ConsoleSession | None = None
        attempts, window = self.settings.sign_in_attempts, self.settings.sign_in_lockout_seconds
        # refused sign-ins are counted per user name and per client address, never in all: a flood against
        # one user, or from one client, must not keep out another supervisor signing in from elsewhere
        self.limiter = WrongSecretLimiter(attempts, window, overall=None, clock=clock)
        self.client_limiter = WrongSecretLimiter(4 * attempts, window, overall=None, clock=clock)
        self.signing_in = asyncio.Lock()
        self.stream_slots = StreamSlots(self.settings.max_streams)
        #: sessions ended whose broker connections are still closing (awaited when the console stops)
        self._closing: set[asyncio.Task[None]] = set()
        #: the tables' recent events, kept once for every session (each parses what its connection gets)
        self.shared_events = SharedEvents()

    def alive_sessions(self) -> list[MeteredSession]:
        """Every sign-in alive now: the signed-in sessions and the configured user's."""
        return [*self.sessions.values(), *([self.fixed] if self.fixed else [])]

    def _new_session(self, user: str, password: str | None) -> ConsoleSession:
        model = StudioModel(self.settings.studio_id, shared=self.shared_events)
        notifier = Notifier()
        link = StudioLink(
            self.config.broker,
            model,
            username=user,
            password=password,
            on_change=notifier.notify,
            reply_timeout=self.settings.reply_timeout_seconds,
        )
        now = self.clock()
        expires = now + self.settings.session_hours * 3600
        return ConsoleSession(new_session_id(), user, model, link, notifier, expires, idle_since=now)

    async def start(self) -> None:
        """With a user in the config: connect as that user now (SignInRefused if the broker says no)."""
        user = self.config.fixed_user
        if user is None:
            return
        password = self.config.broker.password
        session = self._new_session(user, password.get_secret_value() if password else None)
        session.expires = float("inf")
        await session.link.start()
        self.fixed = session

    async def close(self) -> None:
        for session_id in list(self.sessions):
            self.end_session(session_id, "the console stops")
        if self.fixed is not None:
            await self.fixed.close()
        self.fixed = None
        await asyncio.gather(*self._closing, return_exceptions=True)

    def end_session(self, session_id: str, why: str) -> ConsoleSession | None:
        """The one way a signed-in session ends (sign-out, expiry, the user's newer sign-ins, the console
        stopping): forgotten at once, its pages' streams told, its broker connection closed in the
        background (`_ended`). Returns it, or None if there was none."""
        return self.sessions.end(session_id, why)

    def _ended(self, session: ConsoleSession, why: str) -> None:
        log.info("console: %s's session ended: %s", session.user, why)
        task = asyncio.get_running_loop().create_task(session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def session_for(self, session_id: str | None) -> ConsoleSession | None:
        if self.fixed is not None:
            return self.fixed
        return self.sessions.find(session_id)

    def sessions_of(self, user: str) -> list[str]:
        """`user`'s session ids, the oldest first."""
        return self.sessions.of_user(user)

    async def sign_in(self, user: str, password: str, client: str = "") -> ConsoleSession:
        """Connect to the broker as `user` for the client at address `client`; raises SignInError when the
        allow-list, the limiter or the broker refuses."""
        if not USER_PATTERN.match(user):
            raise SignInError(400, "enter your broker user name")
        try:
            check_remote_identity(user)
        except CommandError as exc:
            raise SignInError(400, str(exc)) from None
        async with self.signing_in:
            waits = (self.limiter.retry_after(user), self.client_limiter.retry_after(client))
            wait = max(waits)
            if wait > 0:
                REJECTIONS.count("console", "sign_in_rate_limited", "refused a sign-in: too many refused")
                raise SignInError(429, f"too many refused sign-ins; try again in {int(wait) + 1} s", wait)
            if not self.settings.may_sign_in(user):
                # never asked of the broker: a table's or the rules engine's user is not a supervisor
                self.client_limiter.failed(client)
                REJECTIONS.count(
                    "console",
                    "sign_in_user_not_allowed",
                    f"refused the sign-in of {self._shown_user(user)}: not allowed",
                )
                raise SignInError(
                    403, "this user may not sign in on this console (see [console] sign_in_users)"
                )
            if len(self.sessions) >= self.settings.max_sessions:
                self.sessions.end_expired()
                self.end_abandoned()
            # a user at their own cap takes the place of their oldest session: that one needs no room
            at_own_cap = len(self.sessions_of(user)) >= self.settings.max_sessions_per_user
            if len(self.sessions) >= self.settings.max_sessions and not at_own_cap:
                raise SignInError(503, "too many supervisors are signed in on this console")
            session = self._new_session(user, password)
            try:
                await session.link.start()
            except SignInRefused as exc:
                if exc.unreachable:
                    raise SignInError(503, str(exc)) from None
                self.limiter.failed(user)
                self.client_limiter.failed(client)
                REJECTIONS.count(
                    "console",
                    "sign_in_refused",
                    f"the broker refused the sign-in of {self._shown_user(user)}",
                )
                # the broker's refusal repeats the user name: only one the allow-list names
                refusal = (
                    str(exc)
                    if self.settings.names_user(user)
                    else "the broker refused the user name or password"
                )
                raise SignInError(401, refusal) from None
            self.limiter.succeeded(user)
            # only now, once the password proved right: a wrong one must not end anyone's session
            self.sessions.end_oldest(
                self.sessions_of(user),
                self.settings.max_sessions_per_user - 1,
                "the same user signed in again (max_sessions_per_user)",
            )
            self.sessions[session.id] = session
            log.info("console: %s signed in", user)
            return session

    def _shown_user(self, user: str) -> str:
        """`user` as a refused sign-in logs it: a name the allow-list names, else only its length (a
        password typed in the name field must not reach the log)."""
        if self.settings.names_user(user):
            return repr(user)
        return f"an unknown user name ({len(user)} characters)"

    def sign_out(self, session_id: str | None) -> None:
        self.end_session(session_id or "", "signed out")

    def end_abandoned(self) -> None:
        """End the sessions whose pages are gone: none open for `page_gone_seconds` (a closed tab, a
        browser that crashed). Before, each held its broker connection and its place for session_hours,
        and 16 closed tabs kept every supervisor out."""
        cutoff = self.clock() - self.settings.page_gone_seconds
        for session_id, session in list(self.sessions.items()):
            if session.streams == 0 and session.idle_since is not None and session.idle_since <= cutoff:
                self.end_session(session_id, "no page of it was open (closed?)")

    async def housekeeping(self) -> None:
        while True:
            await asyncio.sleep(min(15.0, self.settings.page_gone_seconds / 3))
            self.sessions.end_expired()
            self.end_abandoned()


def _error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"status": "error", "error": message, **extra}, status_code=status)


# -- the live stream ----------


class UpdateStream(EventStream):
    """`/api/stream`: the summaries of all tables, then those that changed (`event: update`), until the
    browser goes away or the session ends."""

    server = "console"

    def __init__(self, console: Console, session: ConsoleSession) -> None:
        super().__init__(console.stream_slots, session.closed)
        self.console = console
        self.session = session

    def refused(self) -> Response:
        return _error(503, "too many console pages are open; close one")

    @contextlib.contextmanager
    def opened(self) -> Iterator[None]:
        self.session.streams += 1
        self.session.idle_since = None
        try:
            yield
        finally:
            self.session.streams -= 1
            if self.session.streams == 0:
                self.session.idle_since = self.console.clock()

    async def send_events(self, out: EventWriter) -> None:
        model = self.session.model
        sent: dict[str, int] = {}
        version = -1
        first = True
        while True:
            if model.version == version:
                await self.session.notifier.wait(HEARTBEAT_SECONDS)
                if model.version == version:
                    await out.heartbeat()
                    continue
            version = model.version
            changed = []
            for table_id, table in model.tables.items():
                if sent.get(table_id) != table.rev:
                    summary = model.summary(table_id)
                    if summary is not None:
                        changed.append(summary)
                        sent[table_id] = table.rev
            removed = [table_id for table_id in sent if table_id not in model.tables]
            for table_id in removed:
                del sent[table_id]
            link = model.link
            update = {
                "full": first,
                "now": iso_ms(time.time()),
                "user": self.session.user,
                "studio": model.studio_id,
                "link": {
                    "connected": link.connected,
                    "detail": link.detail,
                    "since": iso_ms(link.since) if link.since else None,
                },
                "tables": changed,
                "removed": removed,
            }
            first = False
            await out.event("update", json.dumps(update, separators=(",", ":"), ensure_ascii=False))
            await asyncio.sleep(COALESCE_SECONDS)


# -- the guard ----------


class ConsoleGuard(PageGuard):
    """The console's page: over HTTPS when it has a certificate; the token of the page served at this start
    of the console (`console.page_token`)."""

    page = "console"
    token_header = TOKEN_HEADER
    error = staticmethod(_error)


# -- the app ----------


def create_app(console: Console) -> Starlette:
    page_html = (
        (STATIC_DIR / "index.html")
        .read_text(encoding="utf-8")
        .replace(TOKEN_PLACEHOLDER, console.page_token)
        .replace(BOOT_PLACEHOLDER, console.boot_id)
    )
    cookie = SessionCookie(
        SESSION_COOKIE,
        max_age=int(console.settings.session_hours * 3600),
        secure=console.settings.scheme == "https",
    )

    def session_of(request: Request) -> ConsoleSession | None:
        return console.session_for(cookie.session_id(request))

    async def session(request: Request) -> Response:
        if request.method == "GET":
            current = session_of(request)
            return JSONResponse(
                {
                    "user": current.user if current else None,
                    "sign_in": console.fixed is None,
                    "studio": console.settings.studio_id,
                    "broker": console.config.broker.url,
                    "boot": console.boot_id,
                }
            )
        if request.method == "DELETE":
            if console.fixed is not None:
                return _error(400, "this console acts as the user in its config file: nobody signs out")
            console.sign_out(cookie.session_id(request))
            response = JSONResponse({"status": "ok", "user": None})
            cookie.clear(response)
            return response
        if console.fixed is not None:
            return _error(400, f"this console acts as {console.fixed.user} (its config file): no sign-in")
        usage = 'send {"username": "...", "password": "..."} as JSON'
        try:
            payload = await read_json(request, MAX_BODY_BYTES)
        except BadRequestBody as exc:
            return body_refusal("console", exc, _error, usage=usage)
        if not isinstance(payload, dict):
            return _error(400, usage)
        user, password = payload.get("username"), payload.get("password")
        if not isinstance(user, str) or not isinstance(password, str):
            return _error(400, "enter your broker user name and password")
        try:
            client = request.client.host if request.client else ""
            signed_in = await console.sign_in(user.strip(), password, client)
        except SignInError as exc:
            return sign_in_refusal(exc, _error)
        response = JSONResponse({"status": "ok", "user": signed_in.user})
        cookie.set(response, signed_in.id)
        return response

    async def stream(request: Request) -> Response:
        current = session_of(request)
        if current is None:
            return _error(401, "sign in first")
        return UpdateStream(console, current)

    async def table(request: Request) -> Response:
        current = session_of(request)
        if current is None:
            return _error(401, "sign in first")
        detail = current.model.detail(request.path_params["table"])
        if detail is None:
            return _error(404, "no such table (or it left)")
        return JSONResponse(detail, headers={"cache-control": "no-store"})

    async def command(request: Request) -> Response:
        current = session_of(request)
        if current is None:
            return _error(401, "sign in first")
        table_id, name = request.path_params["table"], request.path_params["name"]
        if name not in CONSOLE_COMMANDS:
            return _error(404, f"the console sends {', '.join(CONSOLE_COMMANDS)}; not {name!r}")
        try:
            payload = await read_json(request, MAX_BODY_BYTES)
        except BadRequestBody as exc:
            return body_refusal("console", exc, _error)
        if not isinstance(payload, dict):
            return _error(400, "the payload must be a JSON object")
        payload = {key: value for key, value in payload.items() if key not in ("by", "transaction")}
        if name == "void_round":
            reason = payload.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                return _error(400, "a void needs a reason")
            payload["reason"] = reason.strip()
        if name == "pause" and isinstance(payload.get("reason"), str):
            payload["reason"] = payload["reason"].strip() or "paused by supervisor"
        try:
            parse_command("commands", name, payload, by=current.user)  # the table checks it again
        except CommandError as exc:
            return _error(400, str(exc))
        if table_id not in current.model.tables:
            return _error(404, f"no table {table_id!r} in studio {console.settings.studio_id}")
        outcome = await current.link.send(table_id, name, payload)
        return JSONResponse(outcome)

    metrics = ConsoleMetrics(console.settings.studio_id, console.alive_sessions)

    async def metrics_page(request: Request) -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    async def dismiss(request: Request) -> Response:
        """A missing table (the broker held nothing of it after a reconnection) leaves this supervisor's
        grid; any other is refused: a table that is there cannot be dismissed."""
        current = session_of(request)
        if current is None:
            return _error(401, "sign in first")
        table_id = request.path_params["table"]
        if not current.model.dismiss(table_id):
            return _error(409, f"{table_id} is not missing: only a table not heard from can be dismissed")
        current.notifier.notify()
        return JSONResponse({"status": "ok"})

    return page_app(
        page_html,
        [
            Route("/api/session", session, methods=["GET", "POST", "DELETE"]),
            Route("/api/stream", stream, methods=["GET"]),
            Route("/api/tables/{table}", table, methods=["GET"]),
            Route("/api/tables/{table}/commands/{name}", command, methods=["POST"]),
            Route("/api/tables/{table}/dismiss", dismiss, methods=["POST"]),
            Route("/metrics", metrics_page, methods=["GET"]),
        ],
        static_dir=STATIC_DIR,
        guard=ConsoleGuard,
        settings=console.settings,
        page_token=console.page_token,
    )


class ConsoleError(RuntimeError):
    """The console cannot run (its port is taken, the broker refused its configured user)."""


async def serve_console(console: Console, *, started: asyncio.Event | None = None) -> None:
    """Serve the console until cancelled."""
    settings = console.settings
    for exposure in console.config.exposures():
        if not exposure.allowed:
            raise ConsoleError(exposure.refusal)
        log.warning("console: %s", exposure.warning)
    try:
        await console.start()
    except SignInRefused as exc:
        raise ConsoleError(f"broker user {console.config.fixed_user!r}: {exc}") from None
    app = create_app(console)
    server = embedded_server(
        app,
        name="console",
        host=settings.host,
        port=settings.port,
        limit_concurrency=settings.max_streams + EXTRA_CONNECTIONS,
        timeout_graceful_shutdown=2,
        ssl_certfile=str(settings.tls_cert_file) if settings.tls_cert_file else None,
        ssl_keyfile=str(settings.tls_key_file) if settings.tls_key_file else None,
    )
    housekeeping = asyncio.create_task(console.housekeeping())
    waiter = None
    if started is not None:

        async def announce() -> None:
            while not server.started:
                await asyncio.sleep(0.02)
            started.set()

        waiter = asyncio.create_task(announce())

    def close_sessions() -> None:
        for session in [*console.sessions.values(), *([console.fixed] if console.fixed else [])]:
            session.closed.set()

    try:
        await serve_until_cancelled(
            server,
            cannot_listen=ConsoleError(
                f"the console cannot listen on {settings.host}:{settings.port} (port in use?)"
            ),
            on_cancel=close_sessions,
        )
    finally:
        housekeeping.cancel()
        if waiter is not None:
            waiter.cancel()
        await console.close()
