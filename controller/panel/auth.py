"""Who may act on the dealer's panel: PIN hashes, dealer sessions, the per-boot page token, and the
wrong-PIN limit (`controller.web.sign_in`'s limiter). No I/O here but the CPU-bound hash (called off the
event loop by the app).

The PIN hashes themselves (`tablectl panel-hash-pin` makes them for `[panel.dealers]`) are `controller.pins`.
"""

from __future__ import annotations

import asyncio
import functools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from controller.pins import PIN_PATTERN, PinHash, hash_pin
from controller.web.sessions import Sessions, new_session_id
from controller.web.sign_in import SignInError, WrongSecretLimiter

#: signed-in sessions kept at most (the oldest goes first): a handful of dealers share one panel
MAX_SESSIONS = 64


@functools.cache
def _dummy() -> PinHash:
    """Checked against when the dealer id is unknown, so that a wrong id takes as long as a wrong PIN.
    Made on first use, not at import: a scrypt hash costs ~0.1 s, and `tablectl run` imports this module
    (the CLI registers panel-hash-pin) whether or not the table has a panel."""
    return PinHash.parse(hash_pin("0000", salt=b"tablectl-no-dealer"))


@dataclass
class _Session:
    user: str  # the dealer's id
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
        self.limiter = WrongSecretLimiter(pin_attempts, pin_lockout_seconds, clock=clock)
        #: held around each PIN check (see the app's sign-in)
        self.checking = asyncio.Lock()
        self._sessions: Sessions[_Session] = Sessions(clock=clock)

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
        session_id = new_session_id()
        self._sessions[session_id] = _Session(dealer, self.clock() + self.session_seconds)
        self._sessions.end_oldest(self._sessions, MAX_SESSIONS, "too many sessions")
        return session_id

    def dealer_for(self, session_id: str | None) -> str | None:
        session = self._sessions.find(session_id)
        if session is None:
            return None
        if session.user not in self.dealers:
            self._sessions.end(session_id or "", "the dealer is no longer configured")
            return None
        return session.user

    def sign_out(self, session_id: str | None) -> None:
        self._sessions.end(session_id or "", "signed out")
