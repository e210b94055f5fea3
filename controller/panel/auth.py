"""Who may act on the dealer's panel: PIN hashes, dealer sessions, the per-boot page token, and the
wrong-PIN limiter. No I/O here but the CPU-bound hash (called off the event loop by the app).

The PIN hashes themselves (`tablectl panel-hash-pin` makes them for `[panel.dealers]`) are `controller.pins`.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from controller.pins import PIN_PATTERN, PinHash, hash_pin

#: signed-in sessions kept at most (the oldest goes first): a handful of dealers share one panel
MAX_SESSIONS = 64


@functools.cache
def _dummy() -> PinHash:
    """Checked against when the dealer id is unknown, so that a wrong id takes as long as a wrong PIN.
    Made on first use, not at import: a scrypt hash costs ~0.1 s, and `tablectl run` imports this module
    (the CLI registers panel-hash-pin) whether or not the table has a panel."""
    return PinHash.parse(hash_pin("0000", salt=b"tablectl-no-dealer"))


class WrongPinLimiter:
    """At most `attempts` wrong PINs per dealer id, and `overall` x that in all (None: no overall limit),
    within `window` seconds; then sign-ins are refused (even with the right PIN) until the oldest failure is
    older than the window."""

    def __init__(
        self,
        attempts: int,
        window: float,
        *,
        overall: int | None = 4,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.attempts = attempts
        self.window = window
        self.overall = overall
        self.clock = clock
        self._by_dealer: dict[str, deque[float]] = {}
        self._all: deque[float] = deque()

    def _prune(self, failures: deque[float], now: float) -> None:
        while failures and failures[0] <= now - self.window:
            failures.popleft()

    def retry_after(self, dealer: str) -> float:
        """Seconds until `dealer` may try again; 0 if now."""
        now = self.clock()
        waits = [0.0]
        limits = [(self._by_dealer.get(dealer), self.attempts)]
        if self.overall is not None:
            limits.append((self._all, self.overall * self.attempts))
        for failures, limit in limits:
            if failures is None:
                continue
            self._prune(failures, now)
            if len(failures) >= limit:
                waits.append(failures[len(failures) - limit] + self.window - now)
        if dealer in self._by_dealer and not self._by_dealer[dealer]:
            del self._by_dealer[dealer]
        return max(waits)

    def failed(self, dealer: str) -> None:
        now = self.clock()
        if dealer not in self._by_dealer and len(self._by_dealer) >= 1024:
            # forget the ids whose failures are all older than the window, so that old failures never
            # merge new ids into one shared count
            for key, failures in list(self._by_dealer.items()):
                self._prune(failures, now)
                if not failures:
                    del self._by_dealer[key]
        if dealer not in self._by_dealer and len(self._by_dealer) >= 1024:
            # a flood of made-up ids within the window must not grow memory: they share one count
            dealer = "*"
        self._by_dealer.setdefault(dealer, deque()).append(now)
        if self.overall is not None:
            self._all.append(now)

    def succeeded(self, dealer: str) -> None:
        self._by_dealer.pop(dealer, None)


class SignInError(Exception):
    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


@dataclass
class _Session:
    dealer: str
    expires: float


class PanelAuth:
    """One per service process ("boot"): the token embedded in the page, and the signed-in dealers.

    A restart of the service makes new ones: the kiosk's page reloads itself and the dealer signs in again.
    """

    def __init__(
        self,
        dealers: dict[str, str],
        *,
        session_seconds: float,
        pin_attempts: int,
        pin_lockout_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.dealers = {dealer: PinHash.parse(encoded) for dealer, encoded in dealers.items()}
        self.session_seconds = session_seconds
        self.clock = clock
        #: embedded in the served page; every POST must carry it (X-Panel-Token)
        self.page_token = secrets.token_urlsafe(32)
        #: identifies this boot to the page, which reloads itself when it changes (a new token, no sessions)
        self.boot_id = secrets.token_hex(8)
        self.limiter = WrongPinLimiter(pin_attempts, pin_lockout_seconds, clock=clock)
        #: held around each PIN check (see the app's sign-in)
        self.checking = asyncio.Lock()
        self._sessions: OrderedDict[str, _Session] = OrderedDict()

    def token_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token.encode(), self.page_token.encode())

    def check_pin(self, dealer: str, pin: str) -> bool:
        """CPU-bound (scrypt): run it off the event loop."""
        known = self.dealers.get(dealer)
        matched = (known or _dummy()).matches(pin) if PIN_PATTERN.match(pin) else False
        return known is not None and matched

    def before_sign_in(self, dealer: str) -> None:
        """Raises SignInError if this sign-in must not even be tried."""
        if not self.dealers:
            raise SignInError(403, "no dealers are configured for this panel ([panel.dealers])")
        wait = self.limiter.retry_after(dealer)
        if wait > 0:
            raise SignInError(429, f"too many wrong PINs: try again in {int(wait) + 1} s", wait)

    def after_check(self, dealer: str, matched: bool) -> str:
        """Records the outcome; returns a new session id, or raises SignInError."""
        if not matched:
            self.limiter.failed(dealer)
            raise SignInError(401, "unknown dealer or wrong PIN")
        self.limiter.succeeded(dealer)
        session_id = secrets.token_urlsafe(32)
        self._sessions[session_id] = _Session(dealer, self.clock() + self.session_seconds)
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session_id

    def dealer_for(self, session_id: str | None) -> str | None:
        if not session_id:
            return None
        session = self._sessions.get(session_id)
        if session is None:
            return None
        if session.expires <= self.clock() or session.dealer not in self.dealers:
            del self._sessions[session_id]
            return None
        return session.dealer

    def sign_out(self, session_id: str | None) -> None:
        if session_id:
            self._sessions.pop(session_id, None)
