"""The live link to a device: open, read, write, reconnect. The only serial I/O in tablectl.

`Link` moves bytes and nothing else: it tells its user (a `LinkUser`) that the link opened, what bytes came
and that the link broke, in order, one at a time, and writes what it is given; it keeps the device's capture
of all of it. It keeps going whatever happens: a port that cannot be opened is retried with exponential
backoff (reported lost once, not on every attempt), a link that breaks is reopened, and an exception raised
while its user handles bytes is logged with the device name and the loop carries on.

A table's links all have one user, the table service: its machine (`controller.machine`) holds the sessions
and their deadlines. `DeviceRunner` is the other user, for one `DeviceSession` on its own (the drivers'
tests, `tablectl simulate`): it ticks the session at its own `next_deadline()` (a watchdog, a retransmit, a
poll), not on a fixed period, sleeping until then or until bytes arrive.

Acknowledgements are promises. What a session queues for its device in answer to bytes (the ACK of a card)
is written only after the readings were delivered, i.e. after the table committed them to its journal; if
delivering them failed (the journal cannot be written), nothing the session queued in that step is sent, so
the device keeps the card and repeats it, and a crash in between loses nothing the device was told was
kept. The table service keeps that promise with its machine's steps; `DeviceRunner` with `on_readings`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol, TypedDict, Unpack

from drivers.backoff import Backoff
from drivers.capture import CaptureWriter
from drivers.readings import Reading
from drivers.session import DeviceCommand, DeviceSession
from drivers.transport import LinkError, open_serial
from drivers.url_redaction import redact_urls_in
from drivers.waiting import wait_event

log = logging.getLogger(__name__)

_READ_SIZE = 4096
_CLOSE_TIMEOUT_S = 1.0


class OpenLink(Protocol):
    def __call__(
        self, url: str, baudrate: int = ..., **serial_kwargs: Any
    ) -> Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]: ...


class LinkUser(Protocol):
    """What a `Link` tells of the link, in order and one call at a time (each awaited before the next)."""

    async def link_opened(self, now: float) -> None: ...

    async def link_lost(self, now: float, reason: str) -> None: ...

    async def data_received(self, data: bytes, now: float) -> None: ...


class LinkOptions(TypedDict, total=False):
    """A `Link`'s settings besides its device, url, user and clock (its defaults are `Link`'s)."""

    baudrate: int
    reconnect_min: float
    reconnect_max: float
    capture: CaptureWriter | None
    open_link: OpenLink


class Link:
    """The link to device `name` at `url`, run until cancelled for `user`."""

    def __init__(
        self,
        name: str,
        url: str,
        user: LinkUser,
        *,
        baudrate: int = 115200,
        clock: Callable[[], float] = time.time,
        reconnect_min: float = 0.2,
        reconnect_max: float = 5.0,
        capture: CaptureWriter | None = None,
        open_link: OpenLink = open_serial,
    ) -> None:
        self.name = name
        self.url = url
        #: the address as logged and published: a network URL's user info never is
        self.shown_url = redact_urls_in(url)
        self.user = user
        self.baudrate = baudrate
        self.clock = clock
        self.reconnect_min = reconnect_min
        self.reconnect_max = reconnect_max
        self.capture = capture
        self.open_link = open_link
        self._writer: asyncio.StreamWriter | None = None
        # bytes given while the link was closing: written first once it is open again
        self._unsent = bytearray()
        self.last_error: str | None = None

    @property
    def connected(self) -> bool:
        return self._writer is not None

    @property
    def writable(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def run(self) -> None:
        backoff = Backoff(self.reconnect_min, self.reconnect_max)
        offline_reported = False
        while True:
            try:
                reader, writer = await self.open_link(self.url, baudrate=self.baudrate)
            except Exception as exc:  # LinkError normally; anything else must not end the link either
                shown = self.shown_url
                reason = (
                    str(exc)
                    if isinstance(exc, LinkError)
                    else f"cannot open {shown}: {repr(exc).replace(self.url, shown)}"
                )
                if not offline_reported:
                    log.warning("%s: %s; retrying", self.name, reason)
                    await self._lost(reason)
                    offline_reported = True
                elif reason != self.last_error:
                    log.warning("%s: %s", self.name, reason)
                self.last_error = reason
                await asyncio.sleep(backoff.next())
                continue

            log.info("%s: connected to %s", self.name, self.shown_url)
            backoff.reset()
            self.last_error = None
            self._writer = writer
            try:
                now = self.clock()
                self.record_story("link", {"event": "open"}, now)
                await self._tell(self.user.link_opened(now))
                reason = await self._serve(reader)
            finally:
                self._writer = None
                await self._close(writer)
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                # cancelled while closing the link, and 3.11's wait_for (in `_close`) returned normally
                raise asyncio.CancelledError
            log.warning("%s: %s; reconnecting", self.name, reason)
            self.last_error = reason
            await self._lost(reason)
            offline_reported = True
            # A device that drops the link right after it opens must not make us spin.
            await asyncio.sleep(self.reconnect_min)

    def write(self, data: bytes) -> None:
        """Write `data` to the device now; while the link is closing, once it is open again."""
        if not data:
            return
        writer = self._writer
        if writer is None or writer.is_closing():
            self._unsent += data
            return
        if self._unsent:
            data = bytes(self._unsent) + data
            self._unsent.clear()
        try:
            writer.write(data)
        except Exception as exc:
            # The read side notices a dead link and reconnects; the bytes are lost like on a pulled cable.
            log.warning("%s: write failed: %s", self.name, exc)
            return
        self._record("tx", data, self.clock())

    def record_story(self, direction: str, info: dict[str, Any], now: float) -> None:
        """Keep a record of what happened at the table in this link's capture (`link`, the table's `cmd`)."""
        self._capture(lambda capture: capture.story(direction, info, now))

    # -- internals ---------------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader) -> str:
        """Read until the link fails; return why it ended."""
        while True:
            try:
                data = await reader.read(_READ_SIZE)
            except Exception as exc:  # SerialException, OSError: the port went away
                return f"lost connection to {self.shown_url}: {str(exc).replace(self.url, self.shown_url)}"
            if not data:
                return f"connection to {self.shown_url} closed"
            now = self.clock()
            self._record("rx", data, now)
            await self._tell(self.user.data_received(data, now))

    async def _lost(self, reason: str) -> None:
        """The link broke (or cannot be opened): recorded in the capture (replays re-enact it), then told."""
        now = self.clock()
        self.record_story("link", {"event": "lost", "reason": reason}, now)
        await self._tell(self.user.link_lost(now, reason))

    async def _tell(self, told: Awaitable[None]) -> None:
        try:
            await told
        except Exception:
            log.exception("%s: error handling the link's input (dropped; the link keeps running)", self.name)

    def _record(self, direction: str, data: bytes, now: float) -> None:
        self._capture(lambda capture: capture.write(direction, data, now))

    def _capture(self, write: Callable[[CaptureWriter], object]) -> None:
        """Write to the capture, if any; a capture that fails is disabled, the link keeps running."""
        if self.capture is None:
            return
        try:
            write(self.capture)
        except Exception:
            log.exception("%s: writing the capture failed; capture disabled", self.name)
            self.capture = None

    async def _close(self, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            writer.close()
            await asyncio.wait_for(writer.wait_closed(), _CLOSE_TIMEOUT_S)


class DeviceRunner:
    """Run `session` on the link at `url` until cancelled, delivering its readings in order.

    `link_options` are the `Link`'s (baudrate, reconnect delays, capture, how the link is opened)."""

    def __init__(
        self,
        session: DeviceSession,
        url: str,
        *,
        on_readings: Callable[[list[Reading]], Awaitable[None]],
        clock: Callable[[], float] = time.time,
        **link_options: Unpack[LinkOptions],
    ) -> None:
        self.session = session
        self.on_readings = on_readings
        self.clock = clock
        self.link = Link(session.name, url, self, clock=clock, **link_options)
        # One session call + its delivery at a time: readings reach on_readings in the order they happened.
        self._lock = asyncio.Lock()
        # set after every session call: the session's next deadline may have moved
        self._deadline_moved = asyncio.Event()
        self._ticker: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.session.name

    @property
    def connected(self) -> bool:
        return self.link.connected

    @property
    def capture(self) -> CaptureWriter | None:
        return self.link.capture

    # -- public ------------------------------------------------------------------------------------
    async def run(self) -> None:
        try:
            await self.link.run()
        finally:
            await self._stop_ticking()

    async def send(self, command: DeviceCommand) -> None:
        """Ask the device to do something. Sent now if connected, else as soon as the link is back."""
        await self._call(partial(self.session.command, command), swallow_errors=False)

    # -- LinkUser ----------------------------------------------------------------------------------
    async def link_opened(self, now: float) -> None:
        await self._call(self.session.connection_made, now=now)
        # ticks run alongside the reads while the link is up
        self._ticker = asyncio.create_task(self._tick_loop())

    async def link_lost(self, now: float, reason: str) -> None:
        await self._stop_ticking()
        await self._call(partial(self.session.connection_lost, reason=reason), now=now)

    async def data_received(self, data: bytes, now: float) -> None:
        await self._call(partial(self.session.data_received, data), now=now)

    # -- internals ---------------------------------------------------------------------------------
    async def _stop_ticking(self) -> None:
        ticker, self._ticker = self._ticker, None
        if ticker is not None:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker

    async def _tick_loop(self) -> None:
        """Tick the session at its deadlines (timeouts, polls): sleep until the next one or until a call
        moved it."""
        while True:
            self._deadline_moved.clear()
            deadline = self.session.next_deadline()
            delay = None if deadline is None else deadline - self.clock()
            if delay is not None and delay <= 0:
                if not self.link.connected:
                    return  # the link is closing: its loss is told next
                await self._call(self.session.tick)
                continue
            await wait_event(self._deadline_moved, delay)

    async def _call(
        self,
        step: Callable[[float], list[Reading]],
        *,
        now: float | None = None,
        swallow_errors: bool = True,
    ) -> None:
        """Run one session step, deliver its readings, then send what it queued; never let a bug stop the
        loop. Bytes go out only after the readings were delivered (committed): see the module docstring."""
        async with self._lock:
            try:
                try:
                    readings = step(self.clock() if now is None else now)
                except Exception:
                    if not swallow_errors:
                        self._flush()  # a refused command queued nothing new; earlier bytes may go
                        raise
                    log.exception("%s: session error (input dropped, the link keeps running)", self.name)
                    readings = []
                if readings:
                    try:
                        await self.on_readings(readings)
                    except Exception as exc:
                        # Not committed: no acknowledgement may leave for these readings. The table commits
                        # all the readings of one step in one transaction, so none of them was.
                        dropped = len(self.session.data_to_send())
                        log.error(
                            "%s: none of the %d readings of this step was committed (%s); %d bytes for the "
                            "device withheld, so it repeats them",
                            self.name,
                            len(readings),
                            exc,
                            dropped,
                        )
                        return
                self._flush()
            finally:
                self._deadline_moved.set()

    def _flush(self) -> None:
        if self.link.writable:  # else the bytes stay queued in the session until the link is back
            self.link.write(self.session.data_to_send())
