"""A soak of the supervisors' console: 20 minutes at 200 simulated tables with supervisors signing in, tabs
closed and never reopened, pauses and resumes, and broker restarts; the console's memory and CPU over time,
whether anyone was locked out, and whether every table is still listed at the end.

The rig, all on 127.0.0.1:

- **The broker**: one Mosquitto from the testing kit (`secured_broker`: a password file, an ACL, persistence
  on), on a free port. Each supervisor is a broker user with a password of its own, as in
  `examples/mosquitto/acl`; signing in on the console opens a broker connection in that name, so a wrong
  password is refused by the broker itself.
- **The tables**: `controller.testing.studio_sim` (the testing kit's simulated studio, the tables of
  `bench/console_latency.py`): per table the retained `status`, `state` and `devices/shoe` of a real table and
  baccarat rounds of 8 events, each followed by the retained state, a round every 30 s (a baccarat table's
  pace). One MQTT connection for all the tables (the broker user `studio-tables`), not 200 `tablectl run`
  processes: 200 of those do not fit on 2 cores (`bench/studio.py`: 50 take them). Every so often one table
  pauses (its shoe offline) and is resumed 20-60 s later.
- **The console**: the real `tablectl console` in its own process, with its default settings
  (`max_sessions` 16, `max_sessions_per_user` 1, `page_gone_seconds` 90).
- **The supervisors**, over HTTP as the page's script does it (the page's token and Origin on every POST, the
  session cookie, `/api/stream` read as Server-Sent Events):
  - desks that stay signed in for the whole run with their page open, reloading it every few minutes and
    opening a table's details now and then; one of them restarts its browser every 5 minutes and signs in
    again (the same user: the console ends the older sign-in);
  - one more desk in a real headless Chromium (`--no-browser` to leave it out), the page left open on the
    grid for the whole run;
  - passers-by, one every `--sign-in-every` seconds on average (each its own broker user), who sign in (one
    in five after a mistyped password, refused by the broker), watch the grid for 3-60 s or not at all,
    and close the tab: the stream dropped, no sign-out, never back. Over 20 minutes they are several times
    the console's 16 places: if a closed tab held its place, the console would fill and refuse everyone.
- **The broker restarts** twice, at 40% and 60% of the run, 5 s down each: first stopped cleanly and started
  again with its retained messages (persistence), then started without them (its persistence file deleted),
  the tables saying again what they are when they reconnect (docs/console.md: a table the broker held nothing
  of would be listed MISSING).

Measured: the console process's resident memory (VmRSS, and VmHWM for the peak) and CPU time (/proc/<pid>),
its open file descriptors and `/metrics` (sessions, pages, broker connections, tables) every
`--sample-every` seconds; the CPU % of one core per minute; whether memory and CPU stay bounded (the last
5 minutes against the first 5 after a 2-minute warm-up: RSS peak within 10% and a slope under 1 MiB/min, CPU
mean within 25% + 2 points); every sign-in refused with the right password (a lockout: must be 0) and every
desk that found itself signed out; how long the console took to have every session's broker connection and
every table back after each restart; at the end, the tables a supervisor who signs in then is shown (its
first full update), those each desk's page shows and the console's `/metrics` count, against the tables
publishing, and none of them MISSING.

Run: `python bench/console_soak.py` (20 minutes; `--minutes 2 --tables 20` to try it). A benchmark, not a
test: it asserts nothing, writes `bench/results/console_soak.json` and prints a Markdown summary; its exit
status is 1 when someone was locked out or a table was missing at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import common
import httpx

from controller.console.settings import ConsoleSettings
from controller.testing.console import chromium, open_console
from controller.testing.mosquitto import HOST, MosquittoBroker, free_port, secured_broker
from controller.testing.studio_sim import ROUND, SimulatedStudio

NAME = "console_soak"
STUDIO = "soak"
TABLES_USER = "studio-tables"
WALL_USER = "supervisor-wall"
FINAL_USER = "supervisor-last"
TOKEN = re.compile(r'<meta name="console-token" content="([^"]+)">')
METRIC = re.compile(r"^(\w+)(?:\{([^}]*)\})?\s+(\S+)$")
MIB = 1024.0
#: the windows compared for "bounded" (a shorter run scales them down: a tenth, and a quarter, of its length)
WARM_UP_SECONDS = 120.0
WINDOW_SECONDS = 300.0
#: where the broker restarts fall in the run, outside both windows compared
RESTARTS_AT = (0.4, 0.6)
#: the sign-ins the console holds at once, by default (the soak runs it with its defaults)
MAX_SESSIONS = ConsoleSettings().max_sessions


# --- the tables ----------------------------------------------------------------------------------------


class SoakStudio(SimulatedStudio):
    """The testing kit's simulated studio signed in to the broker as the tables' user, and able to resume a
    table it paused (the kit's tests only ever pause one)."""

    def __init__(self, port: int, count: int, password: str, *, round_seconds: float, seed: int) -> None:
        super().__init__(port, STUDIO, count, round_seconds=round_seconds, seed=seed)
        self._client.username_pw_set(TABLES_USER, password)

    def resume(self, table_id: str, by: str) -> None:
        """What a table publishes when a supervisor resumes it: `round.resumed`, its shoe back, its state."""
        with self._lock:
            table = self.tables[table_id]
            if table.paused is None:
                return
            table.paused = None
            table.shoe = "online"
            round_id = self._round_id(table)
            self._event(table, "round.resumed", {"round_id": round_id, "by": by}, round_id)
            self._publish(f"{self.root(table_id)}/devices/shoe", self._device(table), True)
            self._publish(f"{self.root(table_id)}/state", self._state(table), True)
            # its rounds go on from now, not in a burst of the events it would have published while paused
            table.next_at = time.monotonic() + self.round_seconds / len(ROUND)


def acl_text(supervisors: list[str]) -> str:
    """The example ACL's shape: the tables write their own topics and read their commands; each supervisor
    reads the studio and sends commands under their own name."""
    lines = [
        f"user {TABLES_USER}",
        f"topic write studio/{STUDIO}/table/#",
        f"topic read studio/{STUDIO}/table/+/commands/#",
        "",
    ]
    for user in supervisors:
        lines += [
            f"user {user}",
            "topic read studio/#",
            f"topic write studio/+/table/+/commands/+/{user}",
            "",
        ]
    return "\n".join(lines)


# --- what a page does, over HTTP -------------------------------------------------------------------------


@dataclass
class GridView:
    """The grid a page shows, from its stream: each table's link (online, offline, missing, unknown)."""

    links: dict[str, str] = field(default_factory=dict)
    updates: int = 0
    broker_connected: bool = False
    #: when the stream's first update came, and when the page first showed `expected` tables
    first_update_at: float | None = None
    complete_at: float | None = None

    def apply(self, update: dict[str, Any], expected: int) -> None:
        if update["full"]:
            self.links.clear()
        for table in update["tables"]:
            self.links[table["table_id"]] = table["link"]
        for table_id in update["removed"]:
            self.links.pop(table_id, None)
        self.broker_connected = bool(update["link"]["connected"])
        self.updates += 1
        now = time.monotonic()
        if self.first_update_at is None:
            self.first_update_at = now
        if self.complete_at is None and len(self.links) >= expected:
            self.complete_at = now

    def missing(self) -> list[str]:
        return sorted(table for table, link in self.links.items() if link == "missing")


class ConsoleTab:
    """One browser tab on the console, as its script uses it: the page (for its token), the sign-in, the
    session check on load, the stream, a table's details. Closing it drops its connections and nothing
    more: no sign-out, as when a tab is closed."""

    def __init__(self, url: str) -> None:
        self.url = url
        # a read timeout well over the stream's 15 s heartbeat: a stream that goes silent is a failure
        self.client = httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(30.0))

    async def load(self) -> None:
        page = await self.client.get("/")
        page.raise_for_status()
        match = TOKEN.search(page.text)
        if match is None:
            raise RuntimeError("the console's page has no token")
        self.client.headers.update({"origin": self.url, "x-console-token": match.group(1)})

    async def sign_in(self, user: str, password: str) -> httpx.Response:
        return await self.client.post("/api/session", json={"username": user, "password": password})

    async def signed_in_as(self) -> str | None:
        reply = await self.client.get("/api/session")
        user = reply.json().get("user")
        return user if isinstance(user, str) else None

    async def follow(self, view: GridView, expected: int) -> int:
        """Read the stream into `view` until it ends (the caller cancels it to close the page); the status
        the stream was answered with."""
        async with self.client.stream("GET", "/api/stream") as response:
            if response.status_code != 200:
                await response.aread()
                return response.status_code
            event = ""
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    event = line.removeprefix("event: ")
                elif line.startswith("data: ") and event == "update":
                    view.apply(json.loads(line.removeprefix("data: ")), expected)
        return 200

    async def detail(self, table_id: str) -> int:
        return (await self.client.get(f"/api/tables/{table_id}")).status_code

    async def close(self) -> None:
        await self.client.aclose()


# --- the run's bookkeeping -----------------------------------------------------------------------------


@dataclass
class Tally:
    began: float
    #: sign-ins with the right password, and those refused (each one a supervisor locked out)
    sign_ins: int = 0
    refused: list[dict[str, Any]] = field(default_factory=list)
    sign_in_ms: list[float] = field(default_factory=list)
    #: mistyped passwords: the broker must refuse them (401), and they must not lock anyone out
    wrong_passwords: int = 0
    wrong_passwords_not_refused: int = 0
    closed_tabs: int = 0
    closed_without_page: int = 0
    #: a page's stream refused although its sign-in was accepted, or a desk found signed out
    streams_refused: list[dict[str, Any]] = field(default_factory=list)
    desks_signed_out: list[dict[str, Any]] = field(default_factory=list)
    #: seconds from a passer-by's sign-in to their page showing every table
    studio_shown_seconds: list[float] = field(default_factory=list)
    page_reloads: int = 0
    browser_restarts: int = 0
    details: Counter[int] = field(default_factory=Counter)
    pauses: int = 0
    resumes: int = 0
    broker_restarts: list[dict[str, Any]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def elapsed(self) -> float:
        return round(time.monotonic() - self.began, 1)

    async def sign_in(self, tab: ConsoleTab, user: str, password: str) -> bool:
        """A sign-in with the right password; a refusal is recorded as a lockout."""
        self.sign_ins += 1
        started = time.monotonic()
        try:
            reply = await tab.sign_in(user, password)
        except httpx.HTTPError as exc:
            self.refused.append({"at_s": self.elapsed(), "user": user, "status": None, "error": repr(exc)})
            return False
        self.sign_in_ms.append((time.monotonic() - started) * 1000)
        if reply.status_code == 200:
            return True
        json_reply = reply.headers.get("content-type", "").startswith("application/json")
        error = reply.json().get("error") if json_reply else reply.text
        self.refused.append(
            {"at_s": self.elapsed(), "user": user, "status": reply.status_code, "error": error}
        )
        return False


@dataclass
class Sample:
    at_s: float
    rss_kb: int
    hwm_kb: int
    cpu_s: float
    fds: int
    threads: int
    #: /metrics: sessions, pages, broker connections up, tables known, tables offline or missing
    metrics: dict[str, float]


def read_metrics(text: str) -> dict[str, float]:
    """The console's gauges by name (the studio label dropped); the refused requests by `refused:<reason>`."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        match = METRIC.match(line)
        if match is None or not match.group(1).startswith("tablectl_console_"):
            continue
        name, labels, value = match.groups()
        key = name.removeprefix("tablectl_console_")
        if key == "requests_refused_total":
            reason = re.search(r'reason="([^"]*)"', labels or "")
            key = f"refused:{reason.group(1) if reason else '?'}"
        values[key] = float(value)
    return values


async def scrape(client: httpx.AsyncClient) -> dict[str, float]:
    return read_metrics((await client.get("/metrics")).text)


def process_sample(pid: int, began: float, metrics: dict[str, float]) -> Sample:
    status = common.proc_status(pid)
    threads = len(os.listdir(f"/proc/{pid}/task"))
    return Sample(
        at_s=round(time.monotonic() - began, 1),
        rss_kb=status["VmRSS"],
        hwm_kb=status["VmHWM"],
        cpu_s=round(common.cpu_seconds(pid), 2),
        fds=len(os.listdir(f"/proc/{pid}/fd")),
        threads=threads,
        metrics=metrics,
    )


# --- the actors ------------------------------------------------------------------------------------------


async def sampler(
    pid: int, url: str, tally: Tally, end_at: float, every: float, samples: list[Sample], loads: list[Any]
) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        next_load = 0.0
        while time.monotonic() < end_at:
            try:
                metrics = await scrape(client)
            except httpx.HTTPError as exc:
                tally.failures.append(f"{tally.elapsed()} s: /metrics did not answer: {exc!r}")
                metrics = {}
            samples.append(process_sample(pid, tally.began, metrics))
            if time.monotonic() >= next_load:
                loads.append({"at_s": tally.elapsed(), "load_average": common.load_average()})
                next_load = time.monotonic() + 60
            await asyncio.sleep(max(0.0, min(every, end_at - time.monotonic())))


async def desk(
    user: str,
    password: str,
    url: str,
    tally: Tally,
    end_at: float,
    expected: int,
    rng: random.Random,
    views: dict[str, GridView],
    *,
    restart_browser_every: float | None,
) -> None:
    """A supervisor at a desk: signed in all the run, the page open; it reloads now and then (the same
    sign-in) and opens a table's details; with `restart_browser_every`, the browser is closed and the
    supervisor signs in again that often."""
    tab = ConsoleTab(url)
    stream: asyncio.Task[int] | None = None
    try:
        await tab.load()
        signed_in = await tally.sign_in(tab, user, password)
        browser_restart_at = time.monotonic() + (restart_browser_every or float("inf"))
        while time.monotonic() < end_at:
            if not signed_in:
                await asyncio.sleep(5.0)  # the sign-in page: the supervisor tries again
                signed_in = await tally.sign_in(tab, user, password)
                continue
            view = GridView()
            views[user] = view
            stream = asyncio.create_task(tab.follow(view, expected))
            reload_at = min(time.monotonic() + rng.uniform(60, 180), end_at, browser_restart_at)
            while time.monotonic() < reload_at and not stream.done():
                await asyncio.sleep(max(0.0, min(rng.uniform(8, 20), reload_at - time.monotonic())))
                if view.links and time.monotonic() < reload_at:
                    tally.details[await tab.detail(rng.choice(sorted(view.links)))] += 1
            if stream.done():
                status = stream.result()
                tally.streams_refused.append({"at_s": tally.elapsed(), "user": user, "status": status})
            else:
                stream.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await stream
            if time.monotonic() >= end_at:
                break
            if time.monotonic() >= browser_restart_at:
                await tab.close()
                tally.browser_restarts += 1
                tab = ConsoleTab(url)
                await tab.load()
                signed_in = await tally.sign_in(tab, user, password)
                browser_restart_at = time.monotonic() + (restart_browser_every or float("inf"))
                continue
            # a reload: the page asks who is signed in, as its script does on load
            tally.page_reloads += 1
            await tab.load()
            if await tab.signed_in_as() != user:
                tally.desks_signed_out.append({"at_s": tally.elapsed(), "user": user})
                signed_in = await tally.sign_in(tab, user, password)
        # the last view stays open until the end's count
        view = GridView()
        views[user] = view
        stream = asyncio.create_task(tab.follow(view, expected))
        await asyncio.sleep(3600)  # cancelled by the run once the end is counted
    except httpx.HTTPError as exc:
        tally.failures.append(f"{tally.elapsed()} s: desk {user}: {exc!r}")
    finally:
        if stream is not None:
            stream.cancel()
        await tab.close()


async def passer_by(
    user: str, password: str, url: str, tally: Tally, expected: int, rng: random.Random
) -> None:
    """A supervisor who signs in (one in five after a typo), may watch the grid a while, and closes the tab
    without signing out: never back."""
    tab = ConsoleTab(url)
    try:
        await tab.load()
        if rng.random() < 0.2:
            tally.wrong_passwords += 1
            mistyped = await tab.sign_in(user, password + "x")
            if mistyped.status_code != 401:
                tally.wrong_passwords_not_refused += 1
        started = time.monotonic()
        if not await tally.sign_in(tab, user, password):
            return
        if rng.random() < 0.25:
            tally.closed_without_page += 1  # signed in, and the tab closed before the page showed anything
            return
        view = GridView()
        stream = asyncio.create_task(tab.follow(view, expected))
        await asyncio.sleep(rng.uniform(3, 60))
        if stream.done():
            tally.streams_refused.append({"at_s": tally.elapsed(), "user": user, "status": stream.result()})
        else:
            stream.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stream
        if view.complete_at is not None:
            tally.studio_shown_seconds.append(view.complete_at - started)
    except httpx.HTTPError as exc:
        tally.failures.append(f"{tally.elapsed()} s: {user}: {exc!r}")
    finally:
        tally.closed_tabs += 1
        await tab.close()


async def passers_by(
    users: list[str],
    passwords: dict[str, str],
    url: str,
    tally: Tally,
    expected: int,
    rng: random.Random,
    *,
    first_at: float,
    every: float,
) -> None:
    """One passer-by every `every` seconds on average (somewhere in each slot), each a user of their own."""
    running: set[asyncio.Task[None]] = set()
    for n, user in enumerate(users):
        at = first_at + (n + rng.random()) * every
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        task = asyncio.create_task(passer_by(user, passwords[user], url, tally, expected, rng))
        running.add(task)
        task.add_done_callback(running.discard)
    await asyncio.gather(*running)


async def pauses(studio: SoakStudio, tally: Tally, end_at: float, every: float, rng: random.Random) -> None:
    """Now and then a table's shoe goes offline (a paused round); a supervisor resumes it 20-60 s later."""
    resume_at: dict[str, float] = {}
    while time.monotonic() < end_at:
        await asyncio.sleep(max(0.0, min(rng.uniform(0.5, 1.5) * every, end_at - time.monotonic())))
        now = time.monotonic()
        for table_id, when in list(resume_at.items()):
            if when <= now:
                studio.resume(table_id, "supervisor-desk-1")
                tally.resumes += 1
                del resume_at[table_id]
        if now < end_at:
            table_id = rng.choice(sorted(set(studio.tables) - set(resume_at)))
            studio.pause(table_id)
            tally.pauses += 1
            resume_at[table_id] = now + rng.uniform(20, 60)


async def restart_broker(
    broker: MosquittoBroker, url: str, tally: Tally, expected: int, *, keep_retained: bool, down: float
) -> None:
    """Stop the broker, start it again on its port (with or without its retained messages), and time how
    long the console takes to have every sign-in's broker connection back and every table listed online."""
    at = tally.elapsed()
    await asyncio.to_thread(broker.stop)
    if not keep_retained:
        (broker.workdir / "mosquitto.db").unlink(missing_ok=True)
    await asyncio.sleep(down)
    await asyncio.to_thread(broker.start)
    started = time.monotonic()
    recovered: float | None = None
    last: dict[str, float] = {}
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        while time.monotonic() - started < 120:
            last = await scrape(client)
            if (
                last.get("broker_connections_up") == last.get("sessions")
                and last.get("tables") == expected
                and last.get("tables_offline") == 0
                and last.get("tables_offline_with_broker") == 0
            ):
                recovered = time.monotonic() - started
                break
            await asyncio.sleep(0.25)
    tally.broker_restarts.append(
        {
            "at_s": at,
            "retained_kept": keep_retained,
            "down_s": down,
            "console_recovered_s": None if recovered is None else round(recovered, 2),
            "metrics_then": last,
        }
    )


async def broker_restarts(
    broker: MosquittoBroker, url: str, tally: Tally, expected: int, duration: float, down: float
) -> None:
    for fraction, keep in zip(RESTARTS_AT, (True, False), strict=True):
        await asyncio.sleep(max(0.0, tally.began + fraction * duration - time.monotonic()))
        await restart_broker(broker, url, tally, expected, keep_retained=keep, down=down)


async def wall(
    url: str, password: str, tally: Tally, end_at: float, expected: int, result: dict[str, Any]
) -> None:
    """A real Chromium page on the grid, signed in once, left open all the run; at the end, what it shows."""
    async with chromium() as browser:
        try:
            page, errors = await open_console(browser, url, WALL_USER, password)
        except Exception as exc:  # its sign-in refused, or the page broken: said in the result
            tally.sign_ins += 1
            tally.refused.append(
                {"at_s": tally.elapsed(), "user": WALL_USER, "status": None, "error": repr(exc)}
            )
            return
        tally.sign_ins += 1
        await asyncio.sleep(max(0.0, end_at - time.monotonic()))
        result.update(
            {
                "tiles": await page.locator("#grid .tile").count(),
                "missing_tiles": await page.locator(".tile-link", has_text="MISSING").count(),
                "signed_in": await page.locator("#user-name").text_content(),
                "broker_lost_shown": await page.locator("#link-lost").is_visible(),
                "page_errors": errors,
                "expected": expected,
            }
        )


# --- the run -------------------------------------------------------------------------------------------


def start_console(broker: MosquittoBroker, port: int, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                *common.tablectl_command(),
                "-v",  # its sign-ins and ended sessions in its log, counted at the end
                "console",
                "--broker",
                broker.url,
                "--studio",
                STUDIO,
                "--port",
                str(port),
            ],
            cwd=common.REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def wait_listening(url: str, console: subprocess.Popen[bytes]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=2) as client:
        for _ in range(300):
            if console.poll() is not None:
                raise RuntimeError(f"tablectl console exited with {console.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get("/api/session")).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError("tablectl console did not listen within 30 s")


async def last_sign_in(url: str, password: str, tally: Tally, expected: int) -> dict[str, Any]:
    """What a supervisor signing in at the end is shown: the first full update of their page."""
    tab = ConsoleTab(url)
    try:
        await tab.load()
        if not await tally.sign_in(tab, FINAL_USER, password):
            return {"signed_in": False}
        view = GridView()
        stream = asyncio.create_task(tab.follow(view, expected))
        # its first update, then the retained topics a fresh broker connection is still reading
        deadline = time.monotonic() + 15
        while view.complete_at is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await asyncio.sleep(2.0)
        stream.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stream
        return {"signed_in": True, "tables": len(view.links), "links": dict(Counter(view.links.values()))}
    finally:
        await tab.close()


def cpu_per_minute(samples: list[Sample]) -> list[float]:
    """The console's CPU, % of one core, per whole minute of the run (between the samples nearest each
    minute's ends)."""
    minutes: list[float] = []
    if len(samples) < 2:
        return minutes
    # a minute whose end is within a few seconds of the last sample counts: the sampler stops at the end
    for minute in range(int((samples[-1].at_s + 10) // 60)):
        start = min(samples, key=lambda s: abs(s.at_s - 60 * minute))
        end = min(samples, key=lambda s: abs(s.at_s - 60 * (minute + 1)))
        if end.at_s > start.at_s:
            minutes.append(round(100 * (end.cpu_s - start.cpu_s) / (end.at_s - start.at_s), 1))
    return minutes


def window_figures(samples: list[Sample], start: float, end: float) -> dict[str, Any]:
    inside = [s for s in samples if start <= s.at_s <= end]
    if len(inside) < 2:
        return {"from_s": start, "to_s": end, "samples": len(inside)}
    minutes = [s.at_s / 60 for s in inside]
    rss = [s.rss_kb / MIB for s in inside]
    slope = statistics.linear_regression(minutes, rss).slope if len(set(minutes)) > 1 else 0.0
    seconds = inside[-1].at_s - inside[0].at_s
    return {
        "from_s": round(start, 1),
        "to_s": round(end, 1),
        "samples": len(inside),
        "rss_peak_mib": round(max(rss), 1),
        "rss_mean_mib": round(statistics.fmean(rss), 1),
        "rss_slope_mib_per_min": round(slope, 3),
        "cpu_mean_percent": round(100 * (inside[-1].cpu_s - inside[0].cpu_s) / seconds, 1),
        "sessions_mean": round(statistics.fmean(s.metrics.get("sessions", 0) for s in inside), 1),
        "pages_mean": round(statistics.fmean(s.metrics.get("pages", 0) for s in inside), 1),
        "fds_max": max(s.fds for s in inside),
    }


def boundedness(first: dict[str, Any], last: dict[str, Any]) -> dict[str, Any]:
    if "rss_peak_mib" not in first or "rss_peak_mib" not in last:
        return {"rss": None, "cpu": None, "rule": "too few samples"}
    rss = last["rss_peak_mib"] <= 1.10 * first["rss_peak_mib"] and last["rss_slope_mib_per_min"] < 1.0
    cpu = last["cpu_mean_percent"] <= 1.25 * first["cpu_mean_percent"] + 2.0
    return {
        "rss": rss,
        "cpu": cpu,
        "rule": "RSS: the last window's peak within 10% of the first window's and its slope under 1 MiB/min; "
        "CPU: the last window's mean at most 1.25x the first's + 2 points",
    }


def console_log_counts(log: Path) -> dict[str, Any]:
    text = log.read_text(errors="replace")
    ended = Counter(m.group(1) for m in re.finditer(r"session ended: (.+)", text))
    # what the console warned of, by message (its numbers and names blanked: one line per kind)
    warnings = Counter(
        re.sub(r"supervisor-[\w-]+", "<user>", re.sub(r"\d+(\.\d+)?", "N", m.group(1)))[:160]
        for m in re.finditer(r" (?:WARNING|ERROR|CRITICAL) (.+)", text)
    )
    return {
        "sign_ins": len(re.findall(r"console: \S+ signed in", text)),
        "sessions_ended": dict(ended),
        "warnings_and_errors": dict(warnings.most_common(20)),
        "errors": len(re.findall(r" (?:ERROR|CRITICAL) ", text)),
        "tracebacks": text.count("Traceback"),
    }


async def soak(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    duration = args.minutes * 60
    rng = random.Random(args.seed)
    desks = [f"supervisor-desk-{n}" for n in range(1, args.desks + 1)]
    visits = max(1, int((duration - 70) / args.sign_in_every))
    visitors = [f"supervisor-visit-{n:03d}" for n in range(1, visits + 1)]
    supervisors = [*desks, WALL_USER, FINAL_USER, *visitors]
    passwords = {user: secrets.token_urlsafe(12) for user in [TABLES_USER, *supervisors]}
    (workdir / "acl").write_text(acl_text(supervisors))
    broker = secured_broker(workdir / "broker", passwords, workdir / "acl")
    broker.start()
    studio = SoakStudio(
        broker.port, args.tables, passwords[TABLES_USER], round_seconds=args.round_seconds, seed=args.seed
    )
    studio.start()
    port = free_port()
    url = f"http://{HOST}:{port}"
    log = workdir / "console.log"
    console = start_console(broker, port, log)
    tally = Tally(began=time.monotonic())
    samples: list[Sample] = []
    loads: list[Any] = []
    views: dict[str, GridView] = {}
    wall_result: dict[str, Any] = {}
    final: dict[str, Any] = {}
    try:
        await wait_listening(url, console)
        tally.began = time.monotonic()
        end_at = tally.began + duration
        # the console before anyone signs in: its memory at rest
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            samples.append(process_sample(console.pid, tally.began, await scrape(client)))
        actors = [
            asyncio.create_task(sampler(console.pid, url, tally, end_at, args.sample_every, samples, loads)),
            asyncio.create_task(
                passers_by(
                    visitors,
                    passwords,
                    url,
                    tally,
                    args.tables,
                    rng,
                    first_at=tally.began + 10,
                    every=(duration - 70) / visits,
                )
            ),
            asyncio.create_task(pauses(studio, tally, end_at - 30, args.pause_every, rng)),
            asyncio.create_task(
                broker_restarts(broker, url, tally, args.tables, duration, args.broker_down_seconds)
            ),
        ]
        desk_tasks = [
            asyncio.create_task(
                desk(
                    user,
                    passwords[user],
                    url,
                    tally,
                    end_at,
                    args.tables,
                    random.Random(f"{args.seed}-{user}"),
                    views,
                    restart_browser_every=300.0 if n == 0 else None,
                )
            )
            for n, user in enumerate(desks)
        ]
        if args.browser:
            actors.append(
                asyncio.create_task(wall(url, passwords[WALL_USER], tally, end_at, args.tables, wall_result))
            )
        await asyncio.gather(*actors)
        # every actor's loop is bounded by end_at: the desks' last pages are open; count what they show
        final = await last_sign_in(url, passwords[FINAL_USER], tally, args.tables)
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            final_metrics = await scrape(client)
        samples.append(process_sample(console.pid, tally.began, final_metrics))
        desk_views = {
            user: {
                "tables": len(view.links),
                "missing": view.missing(),
                "broker_connected": view.broker_connected,
            }
            for user, view in views.items()
        }
        for task in desk_tasks:
            task.cancel()
        await asyncio.gather(*desk_tasks, return_exceptions=True)
    finally:
        console.terminate()
        try:
            console.wait(15)
        except subprocess.TimeoutExpired:
            console.kill()
            console.wait()
        studio.stop()
        broker.stop()

    publishing = sorted(studio.tables)
    warm_up = min(WARM_UP_SECONDS, 0.1 * duration)
    window = min(WINDOW_SECONDS, 0.25 * duration)
    first = window_figures(samples, warm_up, warm_up + window)
    last = window_figures(samples, duration - window, duration + 60)
    minutes = cpu_per_minute([s for s in samples if s.at_s <= duration + 1])
    rss = [s.rss_kb / MIB for s in samples]
    after_warm_up = next((s for s in samples if s.at_s >= warm_up), samples[-1])
    listed_final = final.get("tables")
    missing_final = final.get("links", {}).get("missing", 0)
    return {
        "settings": {key: value for key, value in vars(args).items() if key != "output"},
        "machine": common.machine_info(broker.binary),
        "load_average_1_5_15_min": common.load_average(),
        "load_average_per_minute": loads,
        "tables_publishing": len(publishing),
        "mqtt_messages_per_second": round(studio.published / max(1.0, time.monotonic() - tally.began), 1),
        "console": {
            "rss_start_mib": round(rss[0], 1),
            "rss_after_warm_up_mib": round(after_warm_up.rss_kb / MIB, 1),
            "rss_peak_mib": round(max(s.hwm_kb for s in samples) / MIB, 1),
            "rss_end_mib": round(rss[-1], 1),
            "cpu_percent_per_minute": minutes,
            "cpu_percent_mean": round(statistics.fmean(minutes), 1) if minutes else None,
            "cpu_percent_max_minute": max(minutes, default=None),
            "cpu_seconds_total": samples[-1].cpu_s,
            "fds_start": samples[0].fds,
            "fds_end": samples[-1].fds,
            "threads_end": samples[-1].threads,
            "sessions_max": max((s.metrics.get("sessions", 0) for s in samples), default=0),
            "pages_max": max((s.metrics.get("pages", 0) for s in samples), default=0),
            "first_window": first,
            "last_window": last,
            "bounded": boundedness(first, last),
            "log": console_log_counts(log),
        },
        "sign_ins": {
            "with_the_right_password": tally.sign_ins,
            "refused": len(tally.refused),
            "refusals": tally.refused,
            "sign_in_ms": common.summary(tally.sign_in_ms, digits=1),
            "wrong_passwords": tally.wrong_passwords,
            "wrong_passwords_not_refused": tally.wrong_passwords_not_refused,
            "closed_tabs": tally.closed_tabs,
            "closed_before_the_page_showed": tally.closed_without_page,
            "more_than_the_console_holds": tally.closed_tabs > MAX_SESSIONS,
            "streams_refused": tally.streams_refused,
            "desks_signed_out": tally.desks_signed_out,
            "page_reloads": tally.page_reloads,
            "browser_restarts": tally.browser_restarts,
            "sign_in_to_whole_studio_s": common.summary(tally.studio_shown_seconds, digits=2),
            "details_by_status": {str(status): count for status, count in sorted(tally.details.items())},
        },
        "tables": {
            "paused": tally.pauses,
            "resumed": tally.resumes,
            "broker_restarts": tally.broker_restarts,
            "final_sign_in": final,
            "final_metrics": {
                key: value for key, value in final_metrics.items() if not key.startswith("refused:")
            },
            "requests_refused": {
                key: value for key, value in final_metrics.items() if key.startswith("refused:")
            },
            "desk_views": desk_views,
            "wall": wall_result,
            "listed_at_end": listed_final,
            "missing_at_end": missing_final,
            "none_missing": listed_final == len(publishing) and missing_final == 0,
        },
        "failures": tally.failures,
        "samples": [
            {
                "at_s": s.at_s,
                "rss_kb": s.rss_kb,
                "cpu_s": s.cpu_s,
                "fds": s.fds,
                **{key: value for key, value in s.metrics.items() if not key.startswith("refused:")},
            }
            for s in samples
        ],
    }


def window_line(window: dict[str, Any]) -> str:
    return (
        f"{window.get('rss_peak_mib')} MiB, {window.get('rss_slope_mib_per_min')} MiB/min, "
        f"{window.get('cpu_mean_percent')} %, {window.get('sessions_mean')}"
    )


def markdown(report: dict[str, Any]) -> str:
    c, s, t = report["console"], report["sign_ins"], report["tables"]
    bounded = c["bounded"]
    first, last = c["first_window"], c["last_window"]

    def verdict(value: bool | None) -> str:
        return "n/a" if value is None else ("yes" if value else "**no**")

    restarts = "; ".join(
        f"{r['at_s']:.0f} s ({'retained kept' if r['retained_kept'] else 'retained lost'}): "
        f"back in {r['console_recovered_s']} s"
        for r in t["broker_restarts"]
    )
    wall = t["wall"]
    rows = [
        (
            "tables publishing (MQTT msg/s)",
            f"{report['tables_publishing']} ({report['mqtt_messages_per_second']})",
        ),
        (
            "console RSS start / after warm-up / peak / end",
            f"{c['rss_start_mib']} / {c['rss_after_warm_up_mib']} / "
            f"{c['rss_peak_mib']} / {c['rss_end_mib']} MiB",
        ),
        (
            "console CPU per minute, mean / max",
            f"{c['cpu_percent_mean']} / {c['cpu_percent_max_minute']} % of a core",
        ),
        (
            "first window (after warm-up): RSS peak, slope, CPU, sessions",
            window_line(first),
        ),
        (
            "last window: RSS peak, slope, CPU, sessions",
            window_line(last),
        ),
        ("bounded: RSS / CPU", f"{verdict(bounded['rss'])} / {verdict(bounded['cpu'])}"),
        ("file descriptors start / end", f"{c['fds_start']} / {c['fds_end']}"),
        (
            "sessions / pages at most",
            f"{c['sessions_max']:.0f} / {c['pages_max']:.0f} ({MAX_SESSIONS} places)",
        ),
        ("sign-ins with the right password / refused", f"{s['with_the_right_password']} / {s['refused']}"),
        (
            "closed tabs (never back) / mistyped passwords refused",
            f"{s['closed_tabs']} / "
            f"{s['wrong_passwords'] - s['wrong_passwords_not_refused']} of {s['wrong_passwords']}",
        ),
        (
            "desks signed out under them / streams refused",
            f"{len(s['desks_signed_out'])} / {len(s['streams_refused'])}",
        ),
        ("sign-in p50 / max", f"{s['sign_in_ms']['p50']} / {s['sign_in_ms']['max']} ms"),
        (
            "sign-in → every table on the page, p50 / max",
            f"{s['sign_in_to_whole_studio_s']['p50']} / {s['sign_in_to_whole_studio_s']['max']} s",
        ),
        ("broker restarts", restarts or "none"),
        ("pauses / resumes", f"{t['paused']} / {t['resumed']}"),
        (
            "tables listed at the end (last sign-in) / missing",
            f"{t['listed_at_end']} of {report['tables_publishing']} / {t['missing_at_end']}",
        ),
        ("desks' pages at the end", ", ".join(f"{v['tables']}" for v in t["desk_views"].values()) or "none"),
        (
            "Chromium page at the end: tiles / missing / page errors",
            f"{wall.get('tiles')} / {wall.get('missing_tiles')} / {len(wall.get('page_errors', []))}"
            if wall
            else "not run",
        ),
    ]
    lines = [
        f"Console soak: {report['settings']['minutes']:g} min, {report['tables_publishing']} tables.",
        "",
        "| | |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in rows),
        "",
        common.machine_line(report, f"load average at the end {report['load_average_1_5_15_min']}"),
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = common.parser(__doc__)
    parser.add_argument("--minutes", type=float, default=20.0, help="how long the soak runs")
    parser.add_argument("--tables", type=int, default=200, help="simulated tables")
    parser.add_argument(
        "--round-seconds", type=float, default=30.0, help="a round (8 events) every so many seconds per table"
    )
    parser.add_argument("--desks", type=int, default=3, help="supervisors signed in all the run over HTTP")
    parser.add_argument(
        "--sign-in-every",
        type=float,
        default=20.0,
        help="a passer-by (a sign-in, a tab then closed) every so many seconds on average",
    )
    parser.add_argument(
        "--pause-every", type=float, default=30.0, help="a table pauses every so many seconds"
    )
    parser.add_argument(
        "--broker-down-seconds", type=float, default=5.0, help="each broker restart's downtime"
    )
    parser.add_argument("--sample-every", type=float, default=5.0, help="seconds between /proc samples")
    parser.add_argument(
        "--browser",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="one more desk in a headless Chromium (the system's)",
    )
    parser.add_argument("--seed", type=int, default=20)
    common.add_output_argument(parser, NAME)
    return parser.parse_args(argv)


async def run(args: argparse.Namespace) -> int:
    started = common.now()
    print(f"console soak: {args.minutes:g} min, {args.tables} tables ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="tablectl-soak-") as workdir:
        figures = await soak(args, Path(workdir))
    machine = figures.pop("machine")
    report = {
        **common.header(
            NAME,
            started,
            machine,
            measured=["controller", "bench/console_soak.py"],
            what="the supervisors' console over a long run: RSS and CPU, sign-ins refused, tables listed",
        ),
        **figures,
    }
    output = common.write_result(NAME, report, args.output)
    print()
    print(markdown(report), end="")
    common.print_written(output, report)
    locked_out = report["sign_ins"]["refused"] or report["sign_ins"]["desks_signed_out"]
    return 1 if locked_out or not report["tables"]["none_missing"] else 0


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(run(parse_args(argv)))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
