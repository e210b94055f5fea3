"""Server-Sent Events, as the dealer's panel (the table's state) and the supervisors' console (the studio's
tables) stream them: at most so many streams open at once (each holds a connection for as long as it lasts;
one more is a 503 with `retry-after`), a heartbeat comment when there is nothing to say, and the end of the
stream as soon as the browser goes away, its sign-in ends or the server stops.

Written at the ASGI level because a stream that waits for its next message must notice a disconnect itself
(the server only reports it through `receive`), or every closed tab would leak what the stream holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import ClassVar

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

log = logging.getLogger(__name__)

#: an SSE comment this often keeps the connection (and anything in between) from timing it out
HEARTBEAT_SECONDS = 15.0
#: how long the browser waits before reconnecting a dropped stream
RECONNECT_MILLISECONDS = 2000
#: a stream refused because all are taken may be asked for again after this long
RETRY_AFTER_SECONDS = 5

HEADERS: list[tuple[bytes, bytes]] = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),  # a reverse proxy, if any, must not buffer the stream
]


class StreamSlots:
    """How many live streams a server has open, and how many it allows (`limit`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0

    @property
    def full(self) -> bool:
        return self.open >= self.limit

    @contextlib.contextmanager
    def taken(self) -> Iterator[None]:
        self.open += 1
        try:
            yield
        finally:
            self.open -= 1


class EventWriter:
    """What a stream writes: events (each one `data:` line) and heartbeats."""

    def __init__(self, send: Send) -> None:
        self._send = send

    async def write(self, chunk: bytes) -> None:
        await self._send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def event(self, name: str, data: str) -> None:
        """`data` must be one line (JSON from json.dumps is: it never emits a raw newline)."""
        await self.write(b"event: " + name.encode() + b"\ndata: " + data.encode() + b"\n\n")

    async def heartbeat(self) -> None:
        await self.write(b": heartbeat\n\n")


class EventStream(Response):
    """A `text/event-stream` response that lasts until the browser goes away, `ends` is set or
    `send_events` returns. A subclass says what it sends (`send_events`), what it holds while open
    (`opened`) and how it refuses a stream when every slot is taken (`refused`)."""

    media_type = "text/event-stream"
    #: in the log: whose stream ended
    server: ClassVar[str] = "http"

    def __init__(self, slots: StreamSlots, ends: asyncio.Event) -> None:
        # not Response.__init__: it would declare `content-length: 0` for an endless body
        self.slots = slots
        self.ends = ends
        self.status_code = 200
        self.background = None
        self.raw_headers = list(HEADERS)

    def refused(self) -> Response:
        """The answer when all `slots` are taken (sent with `retry-after`)."""
        raise NotImplementedError

    @contextlib.contextmanager
    def opened(self) -> Iterator[None]:
        """Held from the moment a slot is taken until the stream has ended."""
        yield

    async def send_events(self, out: EventWriter) -> None:
        """Write the stream's events until there is nothing more to say (or forever)."""
        raise NotImplementedError

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # checked and taken with no await in between: concurrent requests cannot overshoot the cap
        if self.slots.full:
            refused = self.refused()
            refused.headers["retry-after"] = str(RETRY_AFTER_SECONDS)
            await refused(scope, receive, send)
            return
        with self.slots.taken(), self.opened():
            await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
            tasks = [
                asyncio.create_task(self._send_all(EventWriter(send))),
                asyncio.create_task(_until_disconnected(receive)),
                asyncio.create_task(self.ends.wait()),
            ]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.debug("%s stream ended: %r", self.server, task.exception())
        with contextlib.suppress(Exception):  # the browser may be gone already
            await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _send_all(self, out: EventWriter) -> None:
        await out.write(f"retry: {RECONNECT_MILLISECONDS}\n\n".encode())
        await self.send_events(out)


async def _until_disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
