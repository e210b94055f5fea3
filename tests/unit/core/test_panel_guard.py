"""Who may drive the dealer's panel, at the HTTP level: host names (DNS rebinding), Origin, the per-boot page
token, dealer sign-in with PINs (rate-limited), the identity recorded with each command, and the cap on live
streams. The app runs in-process (httpx's ASGI transport) against a stand-in for the table service, except
the stream cap, which needs a real server (uvicorn) and real sockets.

Its unit tests; the integration ones are in `tests/integration/test_panel_guard.py`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from controller.cli import main
from controller.config import ConfigError, PanelSettings
from controller.panel.app import create_app
from controller.panel.auth import PanelAuth
from controller.pins import PinHash, hash_pin
from controller.table_build import TABLE_CONFIGS
from controller.web import json_body
from tests.helpers.panel_guard import HASHES, PINS, FakeService

pytestmark = pytest.mark.unit

PORT = 18080
ORIGIN = f"http://127.0.0.1:{PORT}"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_settings(**overrides: Any) -> PanelSettings:
    return PanelSettings(**{"port": PORT, "dealers": HASHES, **overrides})


def make_auth(settings: PanelSettings, clock: Clock) -> PanelAuth:
    return PanelAuth(
        settings.dealers,
        session_seconds=settings.session_hours * 3600,
        pin_attempts=settings.pin_attempts,
        pin_lockout_seconds=settings.pin_lockout_seconds,
        clock=clock,
    )


@contextlib.asynccontextmanager
async def panel(**overrides: Any) -> AsyncIterator[tuple[httpx.AsyncClient, FakeService, PanelAuth, Clock]]:
    settings = make_settings(**overrides)
    clock = Clock()
    auth = make_auth(settings, clock)
    service = FakeService()
    app = create_app(service, settings, auth)  # type: ignore[arg-type]
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=ORIGIN) as client:
        yield client, service, auth, clock


def page_headers(auth: PanelAuth) -> dict[str, str]:
    """What the panel's own page sends with a POST."""
    return {"origin": ORIGIN, "x-panel-token": auth.page_token}


async def sign_in(client: httpx.AsyncClient, auth: PanelAuth, dealer: str, pin: str) -> httpx.Response:
    return await client.post("/api/session", json={"dealer": dealer, "pin": pin}, headers=page_headers(auth))


async def test_a_rebound_host_name_is_refused_even_with_a_matching_origin() -> None:
    async with panel() as (client, service, auth, _):
        assert (await sign_in(client, auth, "d1", PINS["d1"])).status_code == 200
        evil = {"host": f"evil.example:{PORT}", "origin": f"http://evil.example:{PORT}"}
        paused = await client.post("/api/commands/pause", json={}, headers={**page_headers(auth), **evil})
        assert paused.status_code == 421
        assert "unknown host name" in paused.json()["error"]
        for path in ("/", "/api/state", "/api/session", "/static/panel.js"):
            assert (await client.get(path, headers=evil)).status_code == 421, path
        wrong_port = {"host": f"127.0.0.1:{PORT + 1}"}
        assert (await client.get("/api/state", headers=wrong_port)).status_code == 421
        assert service.commands == []
        # the configured names (any case) at the panel's port are served
        for host in (f"127.0.0.1:{PORT}", f"LOCALHOST:{PORT}", f"[::1]:{PORT}"):
            assert (await client.get("/api/state", headers={"host": host})).status_code == 200, host


async def test_allowed_hosts_can_name_the_table_pc() -> None:
    async with panel(allowed_hosts=["Table-07.studio.lan"]) as (client, _, _, _):
        ok = await client.get("/api/state", headers={"host": f"table-07.studio.lan:{PORT}"})
        assert ok.status_code == 200
        assert (await client.get("/api/state")).status_code == 421  # 127.0.0.1 is no longer one of them


async def test_every_post_needs_the_panels_origin_and_this_boots_page_token() -> None:
    async with panel() as (client, service, auth, _):
        assert (await sign_in(client, auth, "d1", PINS["d1"])).status_code == 200
        token = {"x-panel-token": auth.page_token}
        for origin in (
            None,
            "null",
            "http://evil.example",
            f"http://127.0.0.1:{PORT + 1}",
            f"https://127.0.0.1:{PORT}",
        ):
            headers = dict(token) if origin is None else {**token, "origin": origin}
            refused = await client.post("/api/commands/pause", json={}, headers=headers)
            assert refused.status_code == 403, origin
            assert refused.json()["error"] == "requests from another web page are refused"
        other_boot = make_auth(make_settings(), Clock()).page_token
        for headers in ({"origin": ORIGIN}, {"origin": ORIGIN, "x-panel-token": other_boot}):
            stale = await client.post("/api/commands/pause", json={}, headers=headers)
            assert stale.status_code == 403 and stale.json()["error"] == "stale page: reload it"
            assert (await client.delete("/api/session", headers=headers)).status_code == 403
        assert service.commands == []
        # the page carries the token of this boot, and is never cached
        page = await client.get("/")
        assert f'<meta name="panel-token" content="{auth.page_token}">' in page.text
        assert f'<meta name="panel-boot" content="{auth.boot_id}">' in page.text
        assert page.headers["cache-control"] == "no-store"
        assert "__PANEL_TOKEN__" not in page.text
        ok = await client.post("/api/commands/pause", json={}, headers=page_headers(auth))
        assert ok.status_code == 200, ok.text


async def test_acting_needs_a_signed_in_dealer_whose_identity_is_recorded() -> None:
    async with panel() as (client, service, auth, clock):
        headers = page_headers(auth)
        unsigned = await client.post("/api/commands/pause", json={}, headers=headers)
        assert unsigned.status_code == 401 and "sign in first" in unsigned.json()["error"]
        assert (await client.get("/api/session")).json() == {"dealer": None, "dealers_configured": True}

        wrong = await sign_in(client, auth, "d1", "0000")
        assert wrong.status_code == 401 and wrong.json()["error"] == "unknown dealer or wrong PIN"
        unknown = await sign_in(client, auth, "nobody", PINS["d1"])
        assert unknown.status_code == 401 and unknown.json()["error"] == "unknown dealer or wrong PIN"
        assert "set-cookie" not in wrong.headers and "set-cookie" not in unknown.headers
        for bad in ({"dealer": "d1"}, {"dealer": "../x", "pin": "2468"}, {"dealer": 5, "pin": 5}):
            answer = await client.post("/api/session", json=bad, headers=headers)
            assert answer.status_code == 400, bad

        signed = await sign_in(client, auth, "d2", PINS["d2"])
        assert signed.status_code == 200 and signed.json() == {"status": "ok", "dealer": "d2"}
        cookie = signed.headers["set-cookie"]
        assert cookie.startswith("tablectl_panel=")
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/" in cookie
        assert (await client.get("/api/session")).json()["dealer"] == "d2"

        paused = await client.post(
            "/api/commands/pause", json={"reason": "help", "by": "supervisor:boss"}, headers=headers
        )
        assert paused.status_code == 200, paused.text
        closed = await client.post("/api/inputs/close_betting", json={}, headers=headers)
        assert closed.status_code == 200
        assert [(type(c).__name__, c.by) for c in service.commands] == [
            ("Pause", "dealer:d2"),
            ("CloseBetting", "dealer:d2"),
        ]
        # still only the dealer's actions, signed in or not
        assert (await client.post("/api/commands/resume", json={}, headers=headers)).status_code == 403

        # signing out ends the session at once
        out = await client.delete("/api/session", headers=headers)
        assert out.status_code == 200 and 'tablectl_panel=""' in out.headers["set-cookie"]
        assert (await client.post("/api/commands/pause", json={}, headers=headers)).status_code == 401

        # a session expires after session_hours, even if its cookie is kept
        assert (await sign_in(client, auth, "d1", PINS["d1"])).status_code == 200
        clock.now += 12 * 3600
        assert (await client.post("/api/commands/pause", json={}, headers=headers)).status_code == 401
        assert len(service.commands) == 2


async def test_wrong_pins_are_rate_limited_per_dealer_and_in_all() -> None:
    async with panel(pin_attempts=3, pin_lockout_seconds=60) as (client, _, auth, clock):
        wrong = await asyncio.gather(*(sign_in(client, auth, "d1", "1111") for _ in range(6)))
        assert sorted(answer.status_code for answer in wrong) == [401, 401, 401, 429, 429, 429]
        # locked: even the right PIN is not tried now
        locked = await sign_in(client, auth, "d1", PINS["d1"])
        assert locked.status_code == 429
        assert locked.json()["error"].startswith("too many wrong PINs: try again in")
        assert 1 <= int(locked.headers["retry-after"]) <= 61
        # guesses sent in parallel are checked one after the other: none gets past the limit
        parallel = await asyncio.gather(*(sign_in(client, auth, "d1", PINS["d1"]) for _ in range(5)))
        assert {answer.status_code for answer in parallel} == {429}
        # another dealer is not locked out by d1's failures
        assert (await sign_in(client, auth, "d2", PINS["d2"])).status_code == 200
        clock.now += 61
        assert (await sign_in(client, auth, "d1", PINS["d1"])).status_code == 200

        # guessing across made-up ids hits the overall limit (4 x pin_attempts)
        for number in range(12):
            assert (await sign_in(client, auth, f"x{number}", "1111")).status_code == 401
        assert (await sign_in(client, auth, "d2", PINS["d2"])).status_code == 429
        clock.now += 61
        assert (await sign_in(client, auth, "d2", PINS["d2"])).status_code == 200


async def test_a_refused_sign_in_logs_a_known_dealer_id_but_never_an_unknown_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with panel() as (client, _, auth, _):
        with caplog.at_level("WARNING", logger="controller.panel.app"):
            # the PIN typed in the dealer-id field: what was typed is not a dealer, and is not logged
            assert (await sign_in(client, auth, PINS["d2"], PINS["d2"])).status_code == 401
            assert (await sign_in(client, auth, "d1", "1111")).status_code == 401
    assert PINS["d2"] not in caplog.text
    assert "an unknown dealer id (5 characters)" in caplog.text
    assert "wrong PIN for dealer 'd1'" in caplog.text


async def test_with_no_dealers_configured_nobody_can_sign_in() -> None:
    async with panel(dealers={}) as (client, _, auth, _):
        assert (await client.get("/api/session")).json() == {"dealer": None, "dealers_configured": False}
        refused = await sign_in(client, auth, "d1", "2468")
        assert refused.status_code == 403 and "[panel.dealers]" in refused.json()["error"]


def test_pin_hashes_are_salted_scrypt_and_checked_in_constant_time() -> None:
    first, second = hash_pin("2468"), hash_pin("2468")
    assert first != second  # salted
    assert first.startswith("scrypt$14$8$1$")
    assert PinHash.parse(first).matches("2468") and not PinHash.parse(first).matches("2469")
    with pytest.raises(ValueError, match="4 to 12 digits"):
        hash_pin("12a4")
    with pytest.raises(ValueError, match="panel-hash-pin"):
        PinHash.parse("2468")


def test_panel_settings_validate_dealers_and_host_names() -> None:
    base = {
        "table": {"table_id": "t1", "game": "roulette"},
        "devices": {"wheel": {"protocol": "cammegh-ss2", "port": "/dev/null"}},
    }
    good = TABLE_CONFIGS.from_dict(
        {**base, "panel": {"dealers": HASHES, "allowed_hosts": ["Table-7"]}}, environ={}
    )
    assert good.panel.allowed_hosts == ["table-7"] and good.panel.max_streams == 16
    with pytest.raises(ConfigError, match=r"panel\.dealers: .*dealer d1: not a PIN hash"):
        TABLE_CONFIGS.from_dict({**base, "panel": {"dealers": {"d1": "2468"}}}, environ={})
    with pytest.raises(ConfigError, match="not a host name"):
        TABLE_CONFIGS.from_dict(
            {**base, "panel": {"allowed_hosts": ["http://evil.example:8080"]}}, environ={}
        )
    # an entry with user info is refused without repeating it: it may hold a password
    with pytest.raises(ConfigError, match=r"an entry with user info .* is not a host name") as refused:
        TABLE_CONFIGS.from_dict({**base, "panel": {"allowed_hosts": ["u:S3cr3tPW@h"]}}, environ={})
    assert "S3cr3tPW" not in str(refused.value)
    # a PIN hash can come from the environment instead of the file
    from_env = TABLE_CONFIGS.from_dict(base, environ={"TABLECTL__PANEL__DEALERS__D9": HASHES["d1"]})
    assert from_env.panel.dealers == {"d9": HASHES["d1"]}


def test_panel_hash_pin_prints_a_hash_for_the_config(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("97531\n"))
    assert main(["panel-hash-pin"]) == 0
    printed = capsys.readouterr().out.strip()
    assert PinHash.parse(printed).matches("97531")
    monkeypatch.setattr("sys.stdin", io.StringIO("12\n"))
    assert main(["panel-hash-pin"]) == 2
    assert "4 to 12 digits" in capsys.readouterr().err


def test_the_depth_check_skips_brackets_inside_strings() -> None:
    assert not json_body.json_depth_exceeded(b'{"reason": "' + b"[" * 100 + b'"}')
    assert not json_body.json_depth_exceeded(b'{"a": "x\\"' + b"[" * 100 + b'"}')
    assert json_body.json_depth_exceeded(b"[" * 33 + b"]" * 33)
    assert not json_body.json_depth_exceeded(b"[" * 32 + b"]" * 32)
