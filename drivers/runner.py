"""Drive one `DeviceSession` over a live link: open, read, tick, write, reconnect. The only I/O in a driver.

The session holds every protocol rule; the runner only moves bytes and time. It keeps going whatever
happens: a port that cannot be opened is retried with exponential backoff (reported offline once, not on
every attempt), a link that breaks is reopened, and an exception raised while handling bytes is logged with
the device name and the loop carries on.

Time: the session is ticked at its own `next_deadline()` (a watchdog, a retransmit, a poll), not on a
fixed period; the runner sleeps until then or until bytes arrive.

Acknowledgements are promises. What a session queues for its device in answer to bytes (the ACK of a card)
is written only after `on_readings` returned, i.e. after the table committed those readings to its journal;
if delivering them failed (the journal cannot be written), nothing the session queued in that step is sent,
so the device keeps the card and repeats it, and a crash in between loses nothing the device was told was
kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol

from drivers.capture import CaptureWriter
from drivers.readings import Reading
from drivers.session import DeviceCommand, DeviceSession
from drivers.transport import LinkError, open_serial
from drivers.waiting import wait_event

log = logging.getLogger(__name__)

_READ_SIZE = 4096
_CLOSE_TIMEOUT_S = 1.0


class OpenLink(Protocol):
    def __call__(
        self, url: str, baudrate: int = ..., **serial_kwargs: Any
    ) -> Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]: ...


class DeviceRunner:
    """Run `session` on the link at `url` until cancelled, delivering its readings in order."""

    def __init__(
        self,
        session: DeviceSession,
        url: str,
        *,
        baudrate: int = 115200,
        on_readings: Callable[[list[Reading]], Awaitable[None]],
        clock: Callable[[], float] = time.time,
        reconnect_min: float = 0.2,
        reconnect_max: float = 5.0,
        capture: CaptureWriter | None = None,
        open_link: OpenLink = open_serial,
    ) -> None:
        self.session = session
        self.url = url
        self.baudrate = baudrate
        self.on_readings = on_readings
        self.clock = clock
        self.reconnect_min = reconnect_min
        self.reconnect_max = reconnect_max
        self.capture = capture
        self.open_link = open_link
        self._writer: asyncio.StreamWriter | None = None
        # One session call + its delivery at a time: readings reach on_readings in the order they happened.
        self._lock = asyncio.Lock()
        # set after every session call: the session's next deadline may have moved
        self._deadline_moved = asyncio.Event()
        self.last_error: str | None = None

    @property
    def name(self) -> str:
        return self.session.name

    @property
    def connected(self) -> bool:
        return self._writer is not None

    # -- public ------------------------------------------------------------------------------------
    async def run(self) -> None:
        backoff = self.reconnect_min
        offline_reported = False
        while True:
            try:
                reader, writer = await self.open_link(self.url, baudrate=self.baudrate)
            except Exception as exc:  # LinkError normally; anything else must not end the runner either
                reason = str(exc) if isinstance(exc, LinkError) else f"cannot open {self.url}: {exc!r}"
                if not offline_reported:
                    log.warning("%s: %s; retrying", self.name, reason)
                    await self._link_event(
                        "lost", partial(self.session.connection_lost, reason=reason), reason
                    )
                    offline_reported = True
                elif reason != self.last_error:
                    log.warning("%s: %s", self.name, reason)
                self.last_error = reason
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.reconnect_max)
                continue

            log.info("%s: connected to %s", self.name, self.url)
            backoff = self.reconnect_min
            self.last_error = None
            self._writer = writer
            try:
                await self._link_event("open", self.session.connection_made)
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
            await self._link_event("lost", partial(self.session.connection_lost, reason=reason), reason)
            offline_reported = True
            # A device that drops the link right after it opens must not make us spin.
            await asyncio.sleep(self.reconnect_min)

    async def send(self, command: DeviceCommand) -> None:
        """Ask the device to do something. Sent now if connected, else as soon as the link is back."""
        await self._call(partial(self.session.command, command), swallow_errors=False)

    # -- internals ---------------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader) -> str:
        """Read until the link fails; return why it ended. Ticks run alongside."""
        ticker = asyncio.create_task(self._tick_loop())
        try:
            while True:
                try:
                    data = await reader.read(_READ_SIZE)
                except Exception as exc:  # SerialException, OSError: the port went away
                    return f"lost connection to {self.url}: {exc}"
                if not data:
                    return f"connection to {self.url} closed"
                now = self.clock()
                self._record("rx", data, now)
                await self._call(partial(self.session.data_received, data), now=now)
        finally:
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

    async def _link_event(self, event: str, step: Callable[[float], list[Reading]], reason: str = "") -> None:
        """The link opened or broke: recorded in the capture (replays re-enact it), then told the session."""
        now = self.clock()
        if self.capture is not None:
            info = {"event": event, "reason": reason} if reason else {"event": event}
            self._record_story("link", info, now)
        await self._call(step, now=now)

    def _record_story(self, direction: str, info: dict[str, Any], now: float) -> None:
        if self.capture is None:
            return
        try:
            self.capture.story(direction, info, now)
        except Exception:
            log.exception("%s: writing the capture failed; capture disabled", self.name)
            self.capture = None

    def _flush(self) -> None:
        writer = self._writer
        if writer is None or writer.is_closing():
            return  # keep the bytes queued in the session until the link is back
        data = self.session.data_to_send()
        if not data:
            return
        try:
            writer.write(data)
        except Exception as exc:
            # The read side notices a dead link and reconnects; the bytes are lost like on a pulled cable.
            log.warning("%s: write failed: %s", self.name, exc)
            return
        self._record("tx", data, self.clock())

    def _record(self, direction: str, data: bytes, now: float) -> None:
        if self.capture is None:
            return
        try:
            self.capture.write(direction, data, now)
        except Exception:
            log.exception("%s: writing the capture failed; capture disabled", self.name)
            self.capture = None

    async def _close(self, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            writer.close()
            await asyncio.wait_for(writer.wait_closed(), _CLOSE_TIMEOUT_S)
