"""A page's app, as the dealer's panel and the supervisors' console are made: the page at `/` (it holds this
start's token, so it is never cached), the app's API routes, its static files and the shared ones
(`controller/web/static/`: `web.js`) under `/static/`, behind the security headers and the page guard."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from controller.web.page_guard import GuardedPageSettings, PageGuard
from controller.web.security_headers import SecurityHeaders

SHARED_DIR = Path(__file__).resolve().parent / "static"


def static_files(directory: Path) -> StaticFiles:
    """The files of `directory` and the shared ones (to mount at `/static`); a page's own file of the same
    name comes first."""
    return StaticFiles(directory=directory, packages=[("controller.web", SHARED_DIR.name)])


def page_app(
    page_html: str,
    routes: Sequence[BaseRoute],
    *,
    static_dir: Path,
    guard: type[PageGuard],
    settings: GuardedPageSettings,
    page_token: str,
) -> Starlette:
    """The app serving `page_html` at `/`, `routes`, and `static_dir` (with the shared files) at `/static`;
    every request passes `guard` (with the settings and the token of this start) first, and every answer
    carries the security headers, refusals included."""

    async def page(request: Request) -> Response:
        # no-store: the page holds this start's token
        return HTMLResponse(page_html, headers={"cache-control": "no-store"})

    return Starlette(
        routes=[
            Route("/", page, methods=["GET"]),
            *routes,
            Mount("/static", static_files(static_dir), name="static"),
        ],
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(guard, settings=settings, page_token=page_token),
        ],
    )
