"""The sign-in pieces the dealer's panel and the supervisors' console share: the refusal of a sign-in (with
its status and when to try again), the limiter of wrong secrets (a dealer's PIN, a supervisor's broker
password), and the session cookie. No I/O here (starlette is named for the types only)."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

#: the ids a limiter keeps a count of its own for, at the most; beyond, new ids share one count
MAX_COUNTED_KEYS = 1024


class SignInError(Exception):
    """A sign-in refused: the status to answer, a message for the page, and (when locked out) how many
    seconds until the next try."""

    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


def sign_in_refusal(exc: SignInError, error: Callable[[int, str], Response]) -> Response:
    """`error`'s answer to a refused sign-in; when locked out, with `retry-after` (whole seconds, rounded
    up)."""
    refused = error(exc.status, str(exc))
    if exc.retry_after is not None:
        refused.headers["retry-after"] = str(int(exc.retry_after) + 1)
    return refused


@dataclass
class WrongSecretLimiter:
    """At most `attempts` wrong secrets per key (a dealer id, a user name, a client address), and `overall` x
    that in all (None: no overall limit), within `window` seconds; then sign-ins are refused (even with the
    right secret) until the oldest failure is older than the window."""

    attempts: int
    window: float
    overall: int | None = 4
    clock: Callable[[], float] = time.monotonic
    _by_key: dict[str, deque[float]] = field(default_factory=dict, init=False, repr=False)
    _all: deque[float] = field(default_factory=deque, init=False, repr=False)

    def _prune(self, failures: deque[float], now: float) -> None:
        while failures and failures[0] <= now - self.window:
            failures.popleft()

    def retry_after(self, key: str) -> float:
        """Seconds until `key` may try again; 0 if now."""
        now = self.clock()
        waits = [0.0]
        limits = [(self._by_key.get(key), self.attempts)]
        if self.overall is not None:
            limits.append((self._all, self.overall * self.attempts))
        for failures, limit in limits:
            if failures is None:
                continue
            self._prune(failures, now)
            if len(failures) >= limit:
                waits.append(failures[len(failures) - limit] + self.window - now)
        if key in self._by_key and not self._by_key[key]:
            del self._by_key[key]
        return max(waits)

    def failed(self, key: str) -> None:
        now = self.clock()
        if key not in self._by_key and len(self._by_key) >= MAX_COUNTED_KEYS:
            # forget the keys whose failures are all older than the window, so that old failures never
            # merge new keys into one shared count
            for counted, failures in list(self._by_key.items()):
                self._prune(failures, now)
                if not failures:
                    del self._by_key[counted]
        if key not in self._by_key and len(self._by_key) >= MAX_COUNTED_KEYS:
            # a flood of made-up keys within the window must not grow memory: they share one count
            key = "*"
        self._by_key.setdefault(key, deque()).append(now)
        if self.overall is not None:
            self._all.append(now)

    def succeeded(self, key: str) -> None:
        self._by_key.pop(key, None)


@dataclass(frozen=True)
class SessionCookie:
    """The cookie that carries a session id: HttpOnly, SameSite=Strict, for the whole site; `secure` where
    the page is served over HTTPS."""

    name: str
    max_age: int
    secure: bool = False

    def session_id(self, request: Request) -> str | None:
        return request.cookies.get(self.name)

    def set(self, response: Response, session_id: str) -> None:
        response.set_cookie(
            self.name,
            session_id,
            max_age=self.max_age,
            path="/",
            httponly=True,
            samesite="strict",
            secure=self.secure,
        )

    def clear(self, response: Response) -> None:
        response.delete_cookie(self.name, path="/", httponly=True, samesite="strict", secure=self.secure)
