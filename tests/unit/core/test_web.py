"""The pieces the dealer's panel and the supervisors' console share (`controller.web`), each on its own: the
page guard, the security headers, a client's JSON body, the Server-Sent Events stream, the sign-in pieces,
the sessions and the shared static files. The apps' own tests (test_panel_guard.py, test_console_*.py,
test_attacks_http.py) drive them through the panel and the console."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route

from controller.config import PanelSettings
from controller.console.app import STATIC_DIR as CONSOLE_STATIC
from controller.console.app import Console
from controller.console.app import create_app as console_app
from controller.console.settings import console_config_from_dict
from controller.panel.app import STATIC_DIR as PANEL_STATIC
from controller.panel.app import create_app as panel_app
from controller.web.event_stream import EventStream, EventWriter, StreamSlots
from controller.web.json_body import MAX_JSON_DEPTH, BadRequestBody, body_refusal, parse_json
from controller.web.page_app import SHARED_DIR, static_files
from controller.web.page_guard import PageGuard
from controller.web.security_headers import SecurityHeaders
from controller.web.server import REJECTIONS
from controller.web.sessions import Sessions
from controller.web.sign_in import (
    MAX_COUNTED_KEYS,
    SessionCookie,
    SignInError,
    WrongSecretLimiter,
    sign_in_refusal,
)

pytestmark = pytest.mark.unit

PORT = 18443
TOKEN = "this-start"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


# -- the page guard and the security headers -------------------------------------------------------------


class Settings:
    def __init__(self, port: int, scheme: str = "http", allowed_hosts: list[str] | None = None) -> None:
        self.port = port
        self.scheme = scheme
        self.allowed_hosts = allowed_hosts or ["127.0.0.1", "localhost"]


class Guard(PageGuard):
    page = "thing"
    token_header = "x-thing-token"
    error = staticmethod(error)


def guarded_app(settings: Settings) -> Starlette:
    async def hello(request: Request) -> Response:
        return PlainTextResponse("hello")

    async def cached(request: Request) -> Response:
        return PlainTextResponse("kept", headers={"cache-control": "max-age=60"})

    return Starlette(
        routes=[
            Route("/", hello, methods=["GET", "POST"]),
            Route("/cached", cached, methods=["GET"]),
        ],
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(Guard, settings=settings, page_token=TOKEN),
        ],
    )


def client(app: Any, base_url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)


async def test_the_guard_serves_only_its_host_names_and_port() -> None:
    async with client(guarded_app(Settings(PORT)), f"http://127.0.0.1:{PORT}") as http:
        assert (await http.get("/")).status_code == 200
        assert (await http.get("/", headers={"host": f"LOCALHOST:{PORT}"})).status_code == 200
        for host in (f"evil.example:{PORT}", f"127.0.0.1:{PORT + 1}", "127.0.0.1", ""):
            refused = await http.get("/", headers={"host": host})
            assert refused.status_code == 421, host
            assert refused.json() == {"error": "unknown host name for this thing (see [thing] allowed_hosts)"}


async def test_on_its_schemes_default_port_a_page_is_also_served_by_the_bare_name() -> None:
    async with client(guarded_app(Settings(443, "https")), "https://127.0.0.1") as http:
        assert (await http.get("/", headers={"host": "127.0.0.1"})).status_code == 200
        assert (await http.get("/", headers={"host": "127.0.0.1:443"})).status_code == 200
        ok = await http.post("/", headers={"origin": "https://127.0.0.1", "x-thing-token": TOKEN})
        assert ok.status_code == 200
        # the same name over plain http is another origin
        other = await http.post("/", headers={"origin": "http://127.0.0.1", "x-thing-token": TOKEN})
        assert other.status_code == 403


async def test_a_post_needs_the_pages_origin_and_this_starts_token() -> None:
    origin = f"http://127.0.0.1:{PORT}"
    async with client(guarded_app(Settings(PORT)), origin) as http:
        for headers in ({"x-thing-token": TOKEN}, {"origin": "http://evil.example", "x-thing-token": TOKEN}):
            refused = await http.post("/", headers=headers)
            assert refused.status_code == 403
            assert refused.json() == {"error": "requests from another web page are refused"}
        for headers in ({"origin": origin}, {"origin": origin, "x-thing-token": "an-earlier-start"}):
            stale = await http.post("/", headers=headers)
            assert stale.status_code == 403 and stale.json() == {"error": "stale page: reload it"}
        assert (
            await http.post("/", headers={"origin": origin.upper(), "x-thing-token": TOKEN})
        ).status_code == 200


async def test_the_guard_closes_a_websocket_at_once() -> None:
    guard = Guard(guarded_app(Settings(PORT)), Settings(PORT), TOKEN)
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        raise AssertionError("nothing is read from a refused websocket")

    await guard({"type": "websocket", "headers": [], "path": "/"}, receive, send)
    assert sent == [{"type": "websocket.close", "code": 1008}]


async def test_every_answer_carries_the_security_headers_and_a_cache_policy() -> None:
    async with client(guarded_app(Settings(PORT)), f"http://127.0.0.1:{PORT}") as http:
        for answer in (await http.get("/"), await http.get("/", headers={"host": "evil.example"})):
            assert answer.headers["content-security-policy"].startswith("default-src 'self';")
            assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["referrer-policy"] == "no-referrer"
            assert answer.headers["cache-control"] == "no-cache"
        # a response's own cache policy is kept
        assert (await http.get("/cached")).headers["cache-control"] == "max-age=60"


# -- a client's JSON body --------------------------------------------------------------------------------


def test_a_body_is_json_within_the_depth_limit_or_refused_with_its_reason() -> None:
    assert parse_json(b"") == {} and parse_json(b"  \n") == {}
    assert parse_json(b'{"a": [1, {"b": "]]]"}]}') == {"a": [1, {"b": "]]]"}]}
    assert parse_json(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is not None
    with pytest.raises(BadRequestBody) as deep:
        parse_json(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
    assert (deep.value.status, deep.value.reason) == (400, "too_deep")
    assert str(deep.value) == "the payload is nested deeper than 32 levels"
    for garbage in (b"{", b"\xff\xfe", b"pause"):
        with pytest.raises(BadRequestBody) as bad:
            parse_json(garbage)
        assert (bad.value.status, bad.value.reason) == (400, "not_json")
        assert str(bad.value).startswith("the payload is not valid JSON: ")


def test_a_refused_body_is_counted_and_answered_with_its_status_or_the_usage() -> None:
    too_large = BadRequestBody(413, "too_large", "the payload is larger than 16384 bytes")
    before = REJECTIONS.counts[("web-test", "too_large")]
    answer = body_refusal("web-test", too_large, error, usage="send a form")
    assert answer.status_code == 413
    assert json.loads(bytes(answer.body)) == {"error": "the payload is larger than 16384 bytes"}
    assert REJECTIONS.counts[("web-test", "too_large")] == before + 1
    not_json = BadRequestBody(400, "not_json", "the payload is not valid JSON: x")
    # a sign-in form that is not JSON is told what to send; any other body hears why it was refused
    assert json.loads(bytes(body_refusal("web-test", not_json, error, usage="send a form").body)) == {
        "error": "send a form"
    }
    assert json.loads(bytes(body_refusal("web-test", not_json, error).body)) == {
        "error": "the payload is not valid JSON: x"
    }
    assert REJECTIONS.counts[("web-test", "not_json")] >= 2


# -- the sign-in pieces ----------------------------------------------------------------------------------


def test_wrong_secrets_are_limited_per_key_and_in_all_within_the_window() -> None:
    clock = Clock()
    limiter = WrongSecretLimiter(3, 60, clock=clock)
    for _ in range(3):
        assert limiter.retry_after("d1") == 0
        limiter.failed("d1")
    assert limiter.retry_after("d1") == 60
    assert limiter.retry_after("d2") == 0  # another key is not locked out
    clock.now += 20
    assert limiter.retry_after("d1") == 40
    clock.now += 40
    assert limiter.retry_after("d1") == 0  # the oldest failure left the window
    limiter.failed("d1")
    limiter.succeeded("d1")  # the right secret forgets the key's failures
    assert limiter.retry_after("d1") == 0
    # the overall limit: 4 x attempts failures across any keys within the window
    for number in range(12):
        limiter.failed(f"x{number}")
    assert limiter.retry_after("d2") > 0
    clock.now += 61
    assert limiter.retry_after("d2") == 0


def test_without_an_overall_limit_a_flood_on_some_keys_locks_out_no_other() -> None:
    clock = Clock()
    limiter = WrongSecretLimiter(2, 60, overall=None, clock=clock)
    for number in range(100):
        limiter.failed(f"user-{number}")
        limiter.failed(f"user-{number}")
    assert limiter.retry_after("user-0") == 60
    assert limiter.retry_after("supervisor-a") == 0


def test_a_flood_of_made_up_keys_shares_one_count_and_never_grows_without_bound() -> None:
    clock = Clock()
    limiter = WrongSecretLimiter(1, 60, overall=None, clock=clock)
    for number in range(MAX_COUNTED_KEYS):
        limiter.failed(f"k{number}")
    limiter.failed("one-more")
    assert limiter.retry_after("*") == 60  # beyond the cap, new keys share one count
    assert len(limiter._by_key) == MAX_COUNTED_KEYS + 1
    # once the old failures are out of the window, new keys get counts of their own again
    clock.now += 61
    limiter.failed("later")
    assert limiter.retry_after("later") == 60 and limiter.retry_after("k0") == 0
    assert len(limiter._by_key) <= 2


def test_a_refused_sign_in_says_when_to_try_again_in_whole_seconds() -> None:
    locked = sign_in_refusal(SignInError(429, "too many", retry_after=4.2), error)
    assert locked.status_code == 429 and locked.headers["retry-after"] == "5"
    assert json.loads(bytes(locked.body)) == {"error": "too many"}
    wrong = sign_in_refusal(SignInError(401, "wrong"), error)
    assert wrong.status_code == 401 and "retry-after" not in wrong.headers


def test_the_session_cookie_is_httponly_strict_for_the_whole_site_and_secure_on_https() -> None:
    plain, secure = SessionCookie("tablectl_x", max_age=3600), SessionCookie("tablectl_x", 3600, secure=True)
    for cookie in (plain, secure):
        response = Response()
        cookie.set(response, "abc")
        (header,) = response.headers.getlist("set-cookie")
        assert header.startswith("tablectl_x=abc;")
        assert "HttpOnly" in header and "SameSite=strict" in header and "Path=/" in header
        assert "Max-Age=3600" in header
        assert ("Secure" in header) is cookie.secure
        cleared = Response()
        cookie.clear(cleared)
        (gone,) = cleared.headers.getlist("set-cookie")
        assert gone.startswith('tablectl_x="";') and "Max-Age=0" in gone and "HttpOnly" in gone
        assert ("Secure" in gone) is cookie.secure
    request = Request({"type": "http", "headers": [(b"cookie", b"other=1; tablectl_x=abc")]})
    assert plain.session_id(request) == "abc"
    assert plain.session_id(Request({"type": "http", "headers": []})) is None


# -- sessions --------------------------------------------------------------------------------------------


class Session:
    def __init__(self, user: str, expires: float) -> None:
        self.user = user
        self.expires = expires


def test_sessions_expire_and_every_end_is_heard_of() -> None:
    clock = Clock()
    ended: list[tuple[str, str]] = []
    sessions: Sessions[Session] = Sessions(clock=clock, on_end=lambda s, why: ended.append((s.user, why)))
    sessions["a1"] = Session("a", clock.now + 10)
    sessions["b1"] = Session("b", clock.now + 20)
    assert sessions.find("a1") is sessions["a1"]
    assert sessions.find(None) is None and sessions.find("") is None and sessions.find("nope") is None
    clock.now += 10
    assert sessions.find("a1") is None and "a1" not in sessions
    assert ended == [("a", "it expired")]
    sessions["c1"] = Session("c", clock.now + 5)
    clock.now += 10
    sessions.end_expired()
    assert sessions == {} and ended[1:] == [("b", "it expired"), ("c", "it expired")]
    assert sessions.end("gone", "signed out") is None and len(ended) == 3


def test_a_cap_ends_the_oldest_sessions_first() -> None:
    ended: list[str] = []
    sessions: Sessions[Session] = Sessions(on_end=lambda s, why: ended.append(why))
    for number in range(5):
        sessions[f"a{number}"] = Session("a" if number % 2 == 0 else "b", float("inf"))
    assert sessions.of_user("a") == ["a0", "a2", "a4"] and sessions.of_user("b") == ["a1", "a3"]
    sessions.end_oldest(sessions.of_user("a"), 1, "a signed in again")
    assert list(sessions) == ["a1", "a3", "a4"] and ended == ["a signed in again"] * 2
    sessions.end_oldest(sessions, 2, "too many sessions")
    assert list(sessions) == ["a3", "a4"]
    sessions.end_oldest(sessions, 5, "too many sessions")  # within the cap: nothing ends
    sessions.end_oldest(sessions.of_user("b"), 0, "signed out everywhere")
    assert list(sessions) == ["a4"]


# -- the event stream ------------------------------------------------------------------------------------


class Numbers(EventStream):
    """Sends `count` numbered events, then stays open with a heartbeat every 10 ms."""

    server = "web-test"

    def __init__(self, slots: StreamSlots, ends: asyncio.Event, count: int = 1) -> None:
        super().__init__(slots, ends)
        self.count = count
        self.holding = False

    def refused(self) -> Response:
        return error(503, "too many streams")

    @contextlib.contextmanager
    def opened(self) -> Iterator[None]:
        self.holding = True
        try:
            yield
        finally:
            self.holding = False

    async def send_events(self, out: EventWriter) -> None:
        number = 0
        while number < self.count:
            await out.event("number", json.dumps({"n": number}))
            number += 1
        while True:
            await asyncio.sleep(0.01)
            await out.heartbeat()


class Browser:
    """The ASGI side of one stream: what was sent, and a disconnect on demand."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.gone = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Any) -> None:
        self.messages.append(message)

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages if m["type"] == "http.response.body")


SCOPE: dict[str, Any] = {"type": "http", "method": "GET", "path": "/api/stream", "headers": []}


async def wait_for(condition: Any) -> None:
    async with asyncio.timeout(5):
        while not condition():
            await asyncio.sleep(0.005)


async def test_a_stream_sends_retry_its_events_and_heartbeats_and_ends_when_the_browser_goes() -> None:
    slots, browser = StreamSlots(2), Browser()
    stream = Numbers(slots, asyncio.Event(), count=2)
    task = asyncio.create_task(stream(SCOPE, browser.receive, browser.send))
    await wait_for(lambda: b": heartbeat" in browser.body)
    start = browser.messages[0]
    assert start["type"] == "http.response.start" and start["status"] == 200
    assert dict(start["headers"]) == {
        b"content-type": b"text/event-stream; charset=utf-8",
        b"cache-control": b"no-store",
        b"x-accel-buffering": b"no",
    }
    assert browser.body.startswith(
        b'retry: 2000\n\nevent: number\ndata: {"n": 0}\n\nevent: number\ndata: {"n": 1}\n\n: heartbeat\n\n'
    )
    assert slots.open == 1 and stream.holding
    browser.gone.set()
    await asyncio.wait_for(task, 5)
    assert slots.open == 0 and not stream.holding  # the slot and what the stream held are let go
    assert browser.messages[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


async def test_a_stream_ends_when_its_end_is_set() -> None:
    ends, browser, slots = asyncio.Event(), Browser(), StreamSlots(1)
    task = asyncio.create_task(Numbers(slots, ends)(SCOPE, browser.receive, browser.send))
    await wait_for(lambda: b"event: number" in browser.body)
    ends.set()
    await asyncio.wait_for(task, 5)
    assert slots.open == 0 and browser.messages[-1]["more_body"] is False


async def test_streams_beyond_the_slots_are_refused_with_503_and_retry_after() -> None:
    slots, ends = StreamSlots(1), asyncio.Event()
    first = Browser()
    task = asyncio.create_task(Numbers(slots, ends, count=0)(SCOPE, first.receive, first.send))
    await wait_for(lambda: slots.full)
    second = Browser()
    refused = Numbers(slots, ends)
    await refused(SCOPE, second.receive, second.send)
    start = second.messages[0]
    assert start["status"] == 503 and (b"retry-after", b"5") in start["headers"]
    assert json.loads(second.body) == {"error": "too many streams"}
    assert not refused.holding and slots.open == 1
    first.gone.set()
    await asyncio.wait_for(task, 5)
    assert not slots.full


# -- the shared static files -----------------------------------------------------------------------------


async def test_both_pages_load_the_shared_helper_before_their_own_script(tmp_path: Path) -> None:
    for static, own in ((PANEL_STATIC, "panel.js"), (CONSOLE_STATIC, "console.js")):
        html = (static / "index.html").read_text()
        shared, mine = html.index('<script src="/static/web.js" defer>'), html.index(f'src="/static/{own}"')
        assert shared < mine, static
    text = (SHARED_DIR / "web.js").read_text()
    assert "http://" not in text and "https://" not in text and "//cdn" not in text
    assert ".innerHTML" not in text

    # served under /static next to a page's own files; a page's own file of the same name comes first
    (tmp_path / "page.js").write_text("// the page's own")
    (tmp_path / "web.js").write_text("// the page's own web.js")
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    for directory, expected in ((tmp_path, "// the page's own web.js"), (plain_dir, text)):
        app = Starlette(routes=[Mount("/static", static_files(directory), name="static")])
        async with client(app, "http://127.0.0.1") as http:
            answer = await http.get("/static/web.js")
            assert answer.status_code == 200 and answer.text == expected
            assert (await http.get("/static/../web/sign_in.py")).status_code == 404
    app = Starlette(routes=[Mount("/static", static_files(tmp_path), name="static")])
    async with client(app, "http://127.0.0.1") as http:
        assert (await http.get("/static/page.js")).text == "// the page's own"
        assert (await http.get("/static/nothing.js")).status_code == 404


class FakeService:
    def __init__(self) -> None:
        self.state_listeners: list[Any] = []

    def public_state(self) -> dict[str, Any]:
        return {"table_id": "t1"}


async def test_the_panel_and_the_console_both_serve_the_shared_helper() -> None:
    panel = panel_app(FakeService(), PanelSettings(port=PORT))  # type: ignore[arg-type]
    config = console_config_from_dict(
        {
            "console": {"studio_id": "s1", "port": PORT, "allowed_hosts": ["127.0.0.1"]},
            "broker": {"url": "mqtt://127.0.0.1:1883"},
        },
        environ={},
    )
    console = console_app(Console(config))
    shared = (SHARED_DIR / "web.js").read_text()
    for app, own in ((panel, "panel.js"), (console, "console.js")):
        async with client(app, f"http://127.0.0.1:{PORT}") as http:
            answer = await http.get("/static/web.js")
            assert answer.status_code == 200 and answer.text == shared
            assert answer.headers["content-type"].startswith(("text/javascript", "application/javascript"))
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert (await http.get(f"/static/{own}")).status_code == 200
            page = await http.get("/")
            assert '<script src="/static/web.js" defer></script>' in page.text
