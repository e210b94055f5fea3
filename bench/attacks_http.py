"""Attacks on the HTTP side of a table and of the console, for a studio's security officer: run it against a
staging table and console, never a live one (it floods, and it pauses sign-ins on purpose).

    python bench/attacks_http.py --panel http://127.0.0.1:8080 --metrics http://127.0.0.1:9464 \\
        --console http://127.0.0.1:8090

Each target is optional. Each attack prints one line, `held` or `NOT held`, with what it saw; the exit code
is 1 if any did not hold (0 otherwise). What it does:

- panel: 48 idle sockets (its whole connection cap) and 3 half-sent request heads, then a real request must
  be answered within 3 s and the half-sent heads closed within 10 s; a live stream without a dealer's
  sign-in must be refused (401); a JSON body nested 8,000 deep must be a 400 on the sign-in and a 4xx on a
  command (a command needs a sign-in first);
- metrics: 16 idle sockets, then a scrape within 3 s; a scrape naming another Host must get 421 (on a
  loopback address); a flood of scrapes (16 connections, `--flood-seconds`) must not delay the table's event
  loop: it reads the table's own loop-lag histogram before and after, and fails if more than 5 % of the
  samples taken during the flood were over 25 ms (on a small staging table a render is cheap, and this
  holds with or without the render cache: what the cache bounds is the renders, one per interval);
- console: 64 idle sockets, then a real request within 3 s; a JSON body nested 8,000 deep must be a 400; the
  rules engine's user must be refused before its password is tried (403); wrong passwords from this client
  (for made-up supervisors) until the console pauses it, and then another user, signing in from another
  client address, must still be tried (401 for a wrong password, or 200 with `--console-user` and
  `--console-password`), not refused with 429: the second address is 127.0.0.2 when the console is on the
  loopback, or `--second-address`; without one that part is skipped.
  With `--console-user` and `--console-password` (a staging supervisor), it also signs that user in
  `--sessions-per-user` + 1 times and checks that the first session ended.

The console's sign-in attacks leave this client's address paused for a minute (that is what they test):
run them last, and not where a supervisor needs to sign in.

`run_attacks(args)` returns the outcomes as (attack, held, detail), for an umbrella script.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

Outcome = tuple[str, bool, str]
DEEP = "[" * 8000 + "]" * 8000
JSON = {"content-type": "application/json"}
#: what the servers accept at most (their connection caps: the panel 16 streams + 32, the console 32 + 32)
PANEL_CONNECTIONS = 48
METRICS_CONNECTIONS = 16
CONSOLE_CONNECTIONS = 64
PROBE_USER = "supervisor-attack-probe"


def host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)


def is_loopback(url: str) -> bool:
    host = host_port(url)[0]
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@contextlib.asynccontextmanager
async def idle_sockets(
    url: str, count: int, half_heads: int = 0
) -> AsyncIterator[list[asyncio.StreamReader]]:
    """`count` connections that send nothing, and `half_heads` that send half a request head; yields the
    readers of the latter."""
    host, port = host_port(url)
    ssl = urlsplit(url).scheme == "https" or None
    writers: list[asyncio.StreamWriter] = []
    readers: list[asyncio.StreamReader] = []
    try:
        for _ in range(count):
            writers.append((await asyncio.open_connection(host, port, ssl=ssl))[1])
        for _ in range(half_heads):
            reader, writer = await asyncio.open_connection(host, port, ssl=ssl)
            writer.write(f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\n".encode())
            await writer.drain()
            writers.append(writer)
            readers.append(reader)
        yield readers
    finally:
        for writer in writers:
            writer.close()


@contextlib.asynccontextmanager
async def page_client(
    url: str, token_meta: str, source: str | None = None
) -> AsyncIterator[httpx.AsyncClient]:
    """A client that sends what the page sends: its token (read from the page) and its Origin."""
    transport = httpx.AsyncHTTPTransport(local_address=source, verify=False) if source else None
    async with httpx.AsyncClient(base_url=url, timeout=10, transport=transport, verify=False) as client:
        page = await client.get("/")
        match = re.search(rf'<meta name="{token_meta}" content="([^"]+)">', page.text)
        client.headers.update({"origin": url, f"x-{token_meta}": match.group(1) if match else ""})
        yield client


async def answered_despite_idle_sockets(
    url: str, count: int, path: str, half_heads: int = 0
) -> tuple[bool, str]:
    async with idle_sockets(url, count, half_heads) as half:
        started = time.monotonic()
        try:
            async with httpx.AsyncClient(base_url=url, timeout=3, verify=False) as client:
                reply = await client.get(path)
        except httpx.HTTPError as exc:
            return False, f"with {count} idle sockets open, GET {path} failed: {exc!r}"
        took = time.monotonic() - started
        if reply.status_code != 200:
            return False, f"with {count} idle sockets open, GET {path} answered {reply.status_code}"
        detail = f"with {count} idle sockets open, GET {path} answered 200 in {took:.2f} s"
        if half:
            try:
                async with asyncio.timeout(10):
                    for reader in half:
                        await reader.read()
            except TimeoutError:
                return False, detail + f"; {len(half)} half-sent request heads still open after 10 s"
            detail += f"; {len(half)} half-sent heads closed after {time.monotonic() - started:.1f} s"
        return True, detail


def status_held(what: str, status: int, wanted: Callable[[int], bool]) -> tuple[bool, str]:
    return wanted(status), f"{what}: {status}"


# -- the panel ----------------------------------------------------------------------------------------------


async def panel_attacks(url: str) -> list[Outcome]:
    outcomes = [
        (
            "panel: idle and half-sent connections",
            *await answered_despite_idle_sockets(url, PANEL_CONNECTIONS, "/api/state", half_heads=3),
        )
    ]
    async with page_client(url, "panel-token") as client:
        try:
            async with asyncio.timeout(5):
                stream = await client.get("/api/stream")
            outcomes.append(
                (
                    "panel: live stream without a sign-in",
                    *status_held("GET /api/stream without a session", stream.status_code, lambda s: s == 401),
                )
            )
        except TimeoutError:
            outcomes.append(("panel: live stream without a sign-in", False, "a stream was opened (no 401)"))
        for path, wanted, what in (
            ("/api/session", lambda s: s == 400, "sign-in"),
            ("/api/commands/pause", lambda s: 400 <= s < 500, "command"),
        ):
            reply = await client.post(path, content=DEEP, headers=JSON)
            outcomes.append(
                (
                    f"panel: JSON nested 8,000 deep on the {what}",
                    *status_held(f"POST {path}", reply.status_code, wanted),
                )
            )
    return outcomes


# -- /metrics -----------------------------------------------------------------------------------------------


def lag_histogram(text: str) -> tuple[float, float]:
    """(samples, samples at most 25 ms) of the table's event-loop lag histogram in a scrape."""
    count = re.search(r"^tablectl_event_loop_lag_seconds_count\{[^}]*\} (\S+)$", text, re.M)
    within = re.search(r'^tablectl_event_loop_lag_seconds_bucket\{[^}]*le="0\.025"[^}]*\} (\S+)$', text, re.M)
    if count is None or within is None:
        raise ValueError("no tablectl_event_loop_lag_seconds histogram in the scrape")
    return float(count.group(1)), float(within.group(1))


async def flood(url: str, seconds: float, connections: int = METRICS_CONNECTIONS) -> int:
    """Scrape as fast as `connections` keep-alive connections can for `seconds`; the number of scrapes."""
    done = 0
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=url, timeout=10, limits=limits, verify=False) as client:
        deadline = time.monotonic() + seconds

        async def one() -> None:
            nonlocal done
            while time.monotonic() < deadline:
                with contextlib.suppress(httpx.HTTPError):
                    await client.get("/metrics")
                    done += 1

        await asyncio.gather(*(one() for _ in range(connections)))
    return done


async def metrics_attacks(url: str, flood_seconds: float) -> list[Outcome]:
    outcomes = [
        (
            "metrics: idle connections",
            *await answered_despite_idle_sockets(url, METRICS_CONNECTIONS, "/metrics"),
        )
    ]
    async with httpx.AsyncClient(base_url=url, timeout=10, verify=False) as client:
        foreign = await client.get("/metrics", headers={"host": f"rebound.example:{host_port(url)[1]}"})
        if is_loopback(url):
            outcomes.append(
                (
                    "metrics: a scrape naming another host",
                    *status_held(
                        "GET /metrics with Host: rebound.example", foreign.status_code, lambda s: s == 421
                    ),
                )
            )
        else:
            outcomes.append(
                (
                    "metrics: a scrape naming another host",
                    True,
                    f"skipped: not on the loopback, Host is checked only if [metrics] allowed_hosts is set "
                    f"(answered {foreign.status_code})",
                )
            )
        before = lag_histogram((await client.get("/metrics")).text)
        scrapes = await flood(url, flood_seconds)
        await asyncio.sleep(1.5)  # past the render interval: the next scrape is a new render
        after = lag_histogram((await client.get("/metrics")).text)
    samples = after[0] - before[0]
    slow = samples - (after[1] - before[1])
    share = slow / samples if samples else 1.0
    outcomes.append(
        (
            "metrics: a flood of scrapes",
            samples > 0 and share <= 0.05,
            f"{scrapes} scrapes in {flood_seconds:g} s over {METRICS_CONNECTIONS} connections; "
            f"{slow:.0f} of {samples:.0f} event-loop lag samples over 25 ms",
        )
    )
    return outcomes


# -- the console --------------------------------------------------------------------------------------------


async def console_attacks(args: argparse.Namespace) -> list[Outcome]:
    url: str = args.console
    outcomes = [
        ("console: idle connections", *await answered_despite_idle_sockets(url, CONSOLE_CONNECTIONS, "/"))
    ]
    second = args.second_address or ("127.0.0.2" if is_loopback(url) else None)
    async with page_client(url, "console-token") as client:
        reply = await client.post("/api/session", content=DEEP, headers=JSON)
        outcomes.append(
            (
                "console: JSON nested 8,000 deep on the sign-in",
                *status_held("POST /api/session", reply.status_code, lambda s: s == 400),
            )
        )
        fixed = (await client.get("/api/session")).json().get("sign_in") is False
        if fixed:
            outcomes.append(("console: sign-in attacks", True, "skipped: this console has no sign-in"))
            return outcomes
        reply = await client.post("/api/session", json={"username": "rules-engine", "password": "x"})
        outcomes.append(
            (
                "console: the rules engine's user signs in",
                *status_held("POST /api/session as rules-engine", reply.status_code, lambda s: s == 403),
            )
        )
        if args.console_user and args.console_password:
            outcomes.append(
                await session_cap(url, args.console_user, args.console_password, args.sessions_per_user)
            )
        # wrong passwords for made-up supervisors, from this client, until the console pauses it
        statuses = []
        for number in range(60):
            guess = {"username": f"{PROBE_USER}-{number}", "password": "guess"}
            statuses.append((await client.post("/api/session", json=guess)).status_code)
            if statuses[-1] == 429:
                break
        detail = f"{len(statuses) - 1} wrong passwords from this client, then {statuses[-1]}"
        if statuses[-1] != 429:
            outcomes.append(("console: a wrong-password flood", False, detail + " (never paused)"))
            return outcomes
        if second is None:
            outcomes.append(("console: a wrong-password flood", True, detail + "; skipped the second client"))
            return outcomes
    async with page_client(url, "console-token", source=second) as other:
        user = args.console_user or "supervisor-attack-other"
        password = args.console_password or "not-the-password"
        reply = await other.post("/api/session", json={"username": user, "password": password})
        wanted = 200 if args.console_user and args.console_password else 401
    outcomes.append(
        (
            "console: a wrong-password flood does not lock out another supervisor",
            reply.status_code == wanted,
            f"{detail}; {user} from {second}: {reply.status_code} (429 would be everyone locked out)",
        )
    )
    return outcomes


async def session_cap(url: str, user: str, password: str, per_user: int) -> Outcome:
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(page_client(url, "console-token")) for _ in range(per_user + 1)
        ]
        for client in clients:
            reply = await client.post("/api/session", json={"username": user, "password": password})
            if reply.status_code != 200:
                return (
                    "console: sessions per user",
                    False,
                    f"sign-in of {user} answered {reply.status_code}",
                )
        first = (await clients[0].get("/api/session")).json().get("user")
        last = (await clients[-1].get("/api/session")).json().get("user")
        for client in clients:  # leave no session behind
            with contextlib.suppress(httpx.HTTPError):
                await client.delete("/api/session")
        return (
            "console: sessions per user",
            first is None and last == user,
            f"{per_user + 1} sign-ins of {user}: the first session "
            + ("ended" if first is None else "is still open"),
        )


# -- running them ------------------------------------------------------------------------------------------


async def guarded(name: str, attack: Awaitable[list[Outcome]]) -> list[Outcome]:
    try:
        return await attack
    except (httpx.HTTPError, OSError, ValueError) as exc:
        return [(name, False, f"could not run: {exc!r}")]


async def run_attacks(args: argparse.Namespace) -> list[Outcome]:
    """Every attack for the targets `args` names (panel, metrics, console: URLs or None)."""
    outcomes: list[Outcome] = []
    if getattr(args, "panel", None):
        outcomes += await guarded("panel", panel_attacks(args.panel))
    if getattr(args, "metrics", None):
        outcomes += await guarded(
            "metrics", metrics_attacks(args.metrics, getattr(args, "flood_seconds", 3.0))
        )
    if getattr(args, "console", None):
        defaults: dict[str, Any] = {
            "second_address": None,
            "console_user": None,
            "console_password": None,
            "sessions_per_user": 1,
        }
        for key, value in defaults.items():
            if not hasattr(args, key):
                setattr(args, key, value)
        outcomes += await guarded("console", console_attacks(args))
    return outcomes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--panel", help="the dealer panel, http://host:port")
    parser.add_argument("--console", help="the supervisors' console, http(s)://host:port")
    parser.add_argument("--metrics", help="a table's metrics endpoint, http://host:port")
    parser.add_argument("--flood-seconds", type=float, default=3.0, help="how long to flood /metrics")
    parser.add_argument("--second-address", help="a second local address to sign in from (console)")
    parser.add_argument("--console-user", help="a staging supervisor's broker user (optional)")
    parser.add_argument("--console-password", help="that user's password (optional)")
    parser.add_argument(
        "--sessions-per-user", type=int, default=1, help="the console's max_sessions_per_user"
    )
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not (args.panel or args.console or args.metrics):
        parser.error("name at least one of --panel, --console, --metrics")
    return args


def main(argv: list[str] | None = None) -> int:
    outcomes = asyncio.run(run_attacks(parse_args(argv)))
    for name, held, detail in outcomes:
        print(f"{'held    ' if held else 'NOT held'}  {name}: {detail}")
    return 0 if all(held for _, held, _ in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
