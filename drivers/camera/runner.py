"""Drive one camera: read frames in a worker thread, judge their health, hand out stills (the I/O shell).

`VideoCapture.read()` blocks, so a worker thread per connection opens the source, reads frames, measures them
(`drivers.camera.frame.measure`, cheap) and posts small events to the event loop; the pixels stay in one
"latest frame" slot. On the loop, the `CameraMonitor` turns the events into health readings, delivered to
`on_readings` in order, one delivery at a time (like `drivers.runner.DeviceRunner`). A source that fails is
reopened with exponential backoff; it is reported offline once, not on every attempt.

`grab()` is for whoever needs a still (the sic bo flow, when the shaker reports the dice at rest): the first
frame received after the call, written to the capture (if any) before it is returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

from drivers.backoff import Backoff
from drivers.camera.capture import CameraCaptureWriter
from drivers.camera.frame import CameraError, Frame, FrameSource, FrameStats, measure
from drivers.camera.monitor import CameraMonitor
from drivers.camera.options import CameraOptions
from drivers.readings import DeviceFault, DeviceFaultCleared, DeviceOffline, DeviceOnline, Reading
from drivers.waiting import with_timeout

log = logging.getLogger(__name__)

SourceFactory = Callable[[], FrameSource]
#: what the monitor reports; anything else a camera delivers is recorded as a reading
HEALTH_READINGS = (DeviceOnline, DeviceOffline, DeviceFault, DeviceFaultCleared)


@dataclass(frozen=True, slots=True)
class _Opened:
    description: str


@dataclass(frozen=True, slots=True)
class _FrameArrived:
    seq: int
    time: float
    stats: FrameStats


@dataclass(frozen=True, slots=True)
class _Failed:
    reason: str


_Event = _Opened | _FrameArrived | _Failed


class CameraRunner:
    """Run the camera `name` until cancelled: `runner.run()` in a task, `await runner.grab()` for stills."""

    def __init__(
        self,
        name: str,
        source_factory: SourceFactory,
        *,
        options: CameraOptions | None = None,
        on_readings: Callable[[list[Reading]], Awaitable[None]],
        clock: Callable[[], float] = time.time,
        capture: CameraCaptureWriter | None = None,
    ) -> None:
        self.name = name
        self.source_factory = source_factory
        self.options = options or CameraOptions()
        self.on_readings = on_readings
        self.clock = clock  # called from the worker thread too: it must be thread-safe (time.time is)
        self.capture = capture
        self.monitor = CameraMonitor(name, self.options)
        self.last_error: str | None = None
        self.connected = False
        self._lock = asyncio.Lock()  # one monitor step + its delivery at a time: readings stay in order
        #: the time of the last monitor step: its readings' times never go back (see `_call`)
        self._monitor_time = -math.inf
        self._frame_lock = threading.Lock()  # guards the latest frame, written by the worker
        self._latest: Frame | None = None
        self._seq = 0
        self._waiters: list[tuple[int, asyncio.Future[Frame]]] = []

    # -- public ------------------------------------------------------------------------------------
    @property
    def latest(self) -> Frame | None:
        """The last frame received (any age: see its `time`); None before the first."""
        with self._frame_lock:
            return self._latest

    def next_deadline(self) -> float | None:
        """When the monitor must look again if no frame comes (the runner does it itself)."""
        return self.monitor.next_deadline()

    async def run(self) -> None:
        backoff = Backoff(self.options.reconnect_min_s, self.options.reconnect_max_s)
        while True:
            stop = threading.Event()
            try:
                reason = await self._serve(stop, backoff)
            finally:
                stop.set()  # the worker closes the source as soon as its read returns
                self.connected = False
            if reason != self.last_error:
                log.warning("%s: %s; retrying", self.name, reason)
            self.last_error = reason
            await self._call(partial(self.monitor.connection_lost, reason=reason))
            await asyncio.sleep(backoff.next())

    async def grab(self, *, timeout: float | None = None) -> Frame:
        """The first frame received after this call (after `grab_skip_frames` more), kept in the capture.

        Raises CameraError when none comes within `timeout` (default `grab_timeout_s`).
        """
        loop = asyncio.get_running_loop()
        with self._frame_lock:
            target = self._seq + 1 + self.options.grab_skip_frames
        future: asyncio.Future[Frame] = loop.create_future()
        waiter = (target, future)
        self._waiters.append(waiter)
        limit = self.options.grab_timeout_s if timeout is None else timeout
        try:
            frame = await with_timeout(future, limit)
        except TimeoutError:
            why = f" ({self.last_error})" if self.last_error else ""
            raise CameraError(f"camera {self.name!r} gave no frame within {limit:g} s{why}") from None
        finally:
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
        if self.capture is not None:
            try:
                record = await asyncio.to_thread(self.capture.write_frame, frame.image, frame.time, frame.seq)
            except Exception as exc:
                # Unlike a byte capture this is the audit trail of a result: the caller must know.
                raise CameraError(
                    f"camera {self.name!r}: frame {frame.seq} could not be captured: {exc}"
                ) from exc
            frame = dataclasses.replace(frame, file=record.file, sha256=record.sha256)
        return frame

    async def deliver(self, readings: list[Reading]) -> None:
        """Deliver readings made from this camera's frames (sic bo's dice), in order with its health readings,
        and keep them in the capture. Raises what `on_readings` raises: the caller must know."""
        async with self._lock:
            self._record(readings)
            await self.on_readings(readings)

    # -- internals ---------------------------------------------------------------------------------
    async def _serve(self, stop: threading.Event, backoff: Backoff) -> str:
        """Open the source in a worker and follow its events until it fails; return why it ended."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[_Event] = asyncio.Queue()
        try:
            source = self.source_factory()
        except Exception as exc:
            return f"camera source cannot be made: {exc}"
        worker = threading.Thread(
            target=self._work, args=(source, stop, loop, events), name=f"camera-{self.name}", daemon=True
        )
        worker.start()
        first_frame = True
        while True:
            deadline = self.monitor.next_deadline()
            timeout = None if deadline is None else max(0.0, deadline - self.clock())
            try:
                event = await with_timeout(events.get(), timeout)
            except TimeoutError:
                await self._call(self.monitor.tick)
                continue
            if isinstance(event, _Failed):
                return event.reason
            if isinstance(event, _Opened):
                log.info("%s: opened %s", self.name, event.description)
                self.connected = True
                await self._call(self.monitor.connection_made)
                continue
            if first_frame:
                backoff.reset()  # a source that opens and then fails at once must not make us spin
                first_frame = False
            await self._call(partial(self.monitor.frame_received, event.stats), now=event.time)
            self._wake_grabbers()

    def _work(
        self,
        source: FrameSource,
        stop: threading.Event,
        loop: asyncio.AbstractEventLoop,
        events: asyncio.Queue[_Event],
    ) -> None:
        """The worker thread: everything that blocks. It owns `source` from open to close."""

        def post(event: _Event) -> bool:
            try:
                loop.call_soon_threadsafe(events.put_nowait, event)
            except RuntimeError:  # the loop is closed: nobody listens any more
                return False
            return True

        try:
            try:
                source.open()
            except Exception as exc:
                post(_Failed(str(exc) if isinstance(exc, CameraError) else f"{source.description}: {exc!r}"))
                return
            if not post(_Opened(source.description)):
                return
            columns = self.options.sample_columns
            while not stop.is_set():
                try:
                    image = source.read()
                    now = self.clock()
                    stats = measure(image, columns)
                except Exception as exc:
                    post(
                        _Failed(
                            str(exc) if isinstance(exc, CameraError) else f"{source.description}: {exc!r}"
                        )
                    )
                    return
                if stop.is_set():
                    return
                with self._frame_lock:
                    self._seq += 1
                    seq = self._seq
                    self._latest = Frame(image=image, time=now, seq=seq)
                if not post(_FrameArrived(seq, now, stats)):
                    return
        finally:
            with contextlib.suppress(Exception):
                source.close()

    def _wake_grabbers(self) -> None:
        frame = self.latest
        if frame is None:
            return
        for target, future in self._waiters:
            if frame.seq >= target and not future.done():
                future.set_result(frame)

    async def _call(self, step: Callable[[float], list[Reading]], *, now: float | None = None) -> None:
        """Run one monitor step and deliver its readings; never let a bug stop the camera."""
        async with self._lock:
            # A frame is stamped in the worker when it is read, and may reach the loop after a deadline that
            # ran already (no frame within `frame_timeout_s`): taken then, it is stamped then. So the
            # capture's times follow the order in which the table took the readings, and a replay (which
            # orders them by time) takes them in the same order as the live table did.
            at = max(self.clock() if now is None else now, self._monitor_time)
            self._monitor_time = at
            try:
                readings = step(at)
            except Exception:
                log.exception("%s: camera monitor error (input dropped, the camera keeps running)", self.name)
                return
            if not readings:
                return
            self._record(readings)
            try:
                await self.on_readings(readings)
            except Exception:
                log.exception("%s: delivering %d readings failed", self.name, len(readings))

    def _record(self, readings: list[Reading]) -> None:
        if self.capture is None:
            return
        try:
            for reading in readings:
                if isinstance(reading, HEALTH_READINGS):
                    self.capture.write_health(reading)
                else:
                    self.capture.write_reading(reading)
        except Exception:
            log.exception("%s: writing the camera capture failed", self.name)
