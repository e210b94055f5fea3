"""Who may reach a page and its API, before any route runs (the dealer's panel and the supervisors'
console alike): only the page's own host names and port (`Host`: DNS rebinding), and for anything but a GET
or HEAD only the page's own `Origin` and the token embedded in the page served at this start."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import ClassVar, Protocol

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

#: methods that change nothing; every other one needs Origin and the page token
SAFE_METHODS = frozenset({"GET", "HEAD"})


class GuardedPageSettings(Protocol):
    """Where a guarded page is served: the panel's settings, the console's."""

    @property
    def port(self) -> int: ...
    @property
    def allowed_hosts(self) -> list[str]: ...
    @property
    def scheme(self) -> str: ...


def token_matches(token: str | None, page_token: str) -> bool:
    """Whether a request's `token` is `page_token` (compared in constant time)."""
    return token is not None and hmac.compare_digest(token.encode(), page_token.encode())


class PageGuard:
    """Refuses, before any route runs: a `Host` that is not one of the page's names and port (DNS
    rebinding: the attacker controls both `Host` and `Origin`, so comparing them proves nothing); and any
    request but a GET or HEAD without the page's own `Origin` or without the token of the page served at this
    start. The panel's and the console's pages are guarded alike: each names its page, the header its page
    sends the token in, and how it answers an error."""

    page: ClassVar[str]
    token_header: ClassVar[str]
    error: Callable[[int, str], Response]

    def __init__(self, app: ASGIApp, settings: GuardedPageSettings, page_token: str) -> None:
        self.app = app
        self.page_token = page_token
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
        if not token_matches(headers.get(self.token_header), self.page_token):
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
