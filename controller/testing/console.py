"""The supervisor's console in a test: served in-process on a free port, driven by a headless Chromium.

Needs playwright (with its Chromium), httpx, and through `mosquitto` paho-mqtt and pytest: pyproject's `test`
extra."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
from playwright.async_api import Browser, Page, async_playwright, expect

from controller.console.app import Console, serve_console
from controller.console.settings import console_config_from_dict
from controller.testing.mosquitto import HOST, free_port, require_binary

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass
class RunningConsole:
    console: Console
    url: str
    task: asyncio.Task[None]


@contextlib.asynccontextmanager
async def running_console(
    broker_url: str, studio: str, *, broker: dict[str, Any] | None = None, **console: Any
) -> AsyncIterator[RunningConsole]:
    port = console.pop("port", None) or free_port()  # a given port: a console started again on it
    config = console_config_from_dict(
        {
            "console": {"studio_id": studio, "host": HOST, "port": port, "allowed_hosts": [HOST], **console},
            "broker": {"url": broker_url, **(broker or {})},
        },
        environ={},
    )
    instance = Console(config)
    started = asyncio.Event()
    task = asyncio.create_task(serve_console(instance, started=started))
    waiting = asyncio.create_task(started.wait())
    await asyncio.wait([task, waiting], timeout=15, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()  # the console failed to start: say why
    assert started.is_set(), "the console did not start"
    try:
        yield RunningConsole(instance, f"http://{HOST}:{port}", task)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 10)


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    executable = require_binary("chromium", "/usr/bin")  # never a downloaded browser: the system's
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def open_console(
    browser: Browser, url: str, user: str | None, password: str = "", *, width: int = 1600, height: int = 1000
) -> tuple[Page, list[str]]:
    """The console page, signed in as `user` (None: the console's config names the user); and the list its
    uncaught JavaScript errors go to."""
    page = await browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    await page.goto(url)
    if user is not None:
        await page.fill("#si-user", user)
        await page.fill("#si-password", password)
        await page.click("#btn-sign-in")
        await expect(page.locator("#sign-in")).to_be_hidden()
    await expect(page.locator("#user-name")).to_contain_text("Signed in as")
    return page, errors


async def tile_order(page: Page) -> list[str]:
    """The tables in the order the grid shows them."""
    result: list[str] = await page.evaluate(
        """() => [...document.querySelectorAll('#grid .tile')]
            .sort((a, b) => Number(a.style.order) - Number(b.style.order))
            .map((tile) => tile.dataset.table)"""
    )
    return result


@contextlib.asynccontextmanager
async def console_client(url: str, user: str, password: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client that does what the page does (its token and Origin on every POST), signed in."""
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        page = await client.get("/")
        match = re.search(r'<meta name="console-token" content="([^"]+)">', page.text)
        assert match is not None, page.text
        client.headers.update({"origin": url, "x-console-token": match.group(1)})
        signed_in = await client.post("/api/session", json={"username": user, "password": password})
        assert signed_in.status_code == 200, signed_in.text
        yield client
