"""Signed-in sessions by id (the dealer's panel: dealers; the console: supervisors), in the order they
signed in: each expires at its own time, and a cap ends the oldest first. What else a session holds (the
console's broker connection) is its app's: `on_end` hears of every session that ends."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar


class SignedIn(Protocol):
    @property
    def user(self) -> str: ...
    @property
    def expires(self) -> float: ...


S = TypeVar("S", bound=SignedIn)


def new_session_id() -> str:
    """A session id (the session cookie's value): unguessable."""
    return secrets.token_urlsafe(32)


class Sessions(dict[str, S]):
    """The signed-in sessions by id, the oldest first; `end` is the one way one goes (sign-out, expiry, a
    cap), and `on_end(session, why)` hears of it."""

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_end: Callable[[S, str], None] = lambda session, why: None,
    ) -> None:
        super().__init__()
        self.clock = clock
        self.on_end = on_end

    def find(self, session_id: str | None) -> S | None:
        """The session of that id, unless there is none or it expired (then it ends)."""
        if not session_id:
            return None
        session = self.get(session_id)
        if session is not None and session.expires <= self.clock():
            self.end(session_id, "it expired")
            return None
        return session

    def of_user(self, user: str) -> list[str]:
        """`user`'s session ids, the oldest first."""
        return [session_id for session_id, session in self.items() if session.user == user]

    def end(self, session_id: str, why: str) -> S | None:
        """Ends the session of that id (if any) and returns it."""
        session = self.pop(session_id, None)
        if session is not None:
            self.on_end(session, why)
        return session

    def end_expired(self) -> None:
        now = self.clock()
        for session_id, session in list(self.items()):
            if session.expires <= now:
                self.end(session_id, "it expired")

    def end_oldest(self, session_ids: Iterable[str], keep: int, why: str) -> None:
        """Ends all of `session_ids` (the oldest first) but the `keep` newest."""
        ordered = list(session_ids)
        for session_id in ordered[: max(0, len(ordered) - keep)]:
            self.end(session_id, why)
