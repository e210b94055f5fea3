"""Serve a simulated device on a real pseudo-terminal or a TCP socket: drivers are tested through real ports.

A simulated device is a sans-IO core (`SimulatedDevice`): bytes from the host and the time go in, the
bytes the device emits come out of `poll`. `SimulatedPort` is the only part that does I/O: it owns a pty
(the host opens its slave path exactly like `/dev/ttyACM0`) or a TCP server (the host opens
`socket://host:port`, like a serial-over-IP converter), and it can pull the cable (`unplug`/`replug`), mute
the device (`silence`) and put noise on the line (`inject`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import tty
from collections.abc import Callable
from typing import Protocol, Self

log = logging.getLogger(__name__)

# A real UART loses bytes when nobody reads them; so does this port, instead of buffering without bound.
_MAX_PENDING_BYTES = 64 * 1024


class SimulatedDevice(Protocol):
    """A device without I/O. Time is passed in, so the same core runs in real time or in a fast test."""

    def connected(self, now: float) -> None:
        """Power-up or (re)plug: e.g. queue HELLO."""

    def receive(self, data: bytes, now: float) -> None:
        """Bytes from the host."""

    def poll(self, now: float) -> bytes:
        """Bytes the device emits now (heartbeats, retransmissions, timed state changes)."""


class SimulatedPort:
    """Serve one `SimulatedDevice` on a pty or a TCP port, in the running asyncio loop."""

    def __init__(
        self,
        device: SimulatedDevice,
        *,
        clock: Callable[[], float] = time.time,
        poll_interval: float = 0.01,
    ) -> None:
        self.device = device
        self.clock = clock
        self.poll_interval = poll_interval
        #: how long the port may sleep between polls when the device says when it is next due
        #: (`next_deadline`) and nothing is waiting to be written: `poll_interval` (a fixed period) unless set
        #: longer, as `tablectl simulate` does (an idle simulator woke 100 times a second). Bytes from the
        #: host, an action on the device and a plug wake it at once.
        self.idle_sleep = poll_interval
        self._wake: asyncio.Event | None = None
        self._mode: str | None = None  # "pty" | "tcp"
        self._silenced = False
        self._plugged = False
        self._pending = bytearray()
        self._poll_task: asyncio.Task[None] | None = None
        # pty
        self._master_fd: int | None = None
        self._slave_fd: int | None = None
        self._slave_path: str | None = None
        self._link_path: str | None = None
        # tcp
        self._server: asyncio.Server | None = None
        self._host = "127.0.0.1"
        self._port = 0
        self._clients: set[asyncio.StreamWriter] = set()
        self._client_tasks: set[asyncio.Task[None]] = set()

    # -- public API --------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """What a host opens: the link path (or slave path) of the pty, or `socket://host:port`."""
        if self._mode == "tcp":
            return f"socket://{self._host}:{self._port}"
        if self._link_path is not None:
            return self._link_path
        if self._slave_path is None:
            raise RuntimeError("the simulated port is not started")
        return self._slave_path

    @property
    def plugged(self) -> bool:
        return self._plugged

    async def start_pty(self, link_path: str | None = None) -> str:
        """Open a pty and return the path a host opens (a symlink kept on the current /dev/pts/N if given)."""
        self._require_not_started()
        self._mode = "pty"
        self._link_path = link_path
        self._open_pty()
        self.device.connected(self.clock())
        self._start_polling()
        return self.url

    async def start_tcp(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on TCP and return `socket://host:port`. The device 'powers up' when a host connects."""
        self._require_not_started()
        self._mode = "tcp"
        self._host = host
        self._port = port
        await self._open_server()
        self._start_polling()
        return self.url

    async def unplug(self) -> None:
        """Pull the cable: the host's read fails and (pty) the port path disappears."""
        if not self._plugged:
            return
        self._plugged = False
        self._pending.clear()
        if self._mode == "pty":
            self._close_pty()
        elif self._mode == "tcp":
            await self._close_server()

    async def replug(self) -> None:
        """Plug the cable back in: a new pty behind the same link path (or a new listener).

        The device stays powered (its unacknowledged messages survive) and announces itself again.
        """
        if self._plugged:
            return
        if self._mode == "pty":
            self._open_pty()
            self.device.connected(self.clock())
            self._wake_poller()
        elif self._mode == "tcp":
            await self._open_server()
        else:
            raise RuntimeError("the simulated port is not started")

    def silence(self, on: bool) -> None:
        """While silenced the device's bytes are not delivered (the port stays open, the line is quiet)."""
        self._silenced = on

    def inject(self, data: bytes) -> None:
        """Put raw bytes on the line (noise, hand-made bad lines), as if the device had sent them."""
        self._deliver(data)

    def pump(self) -> None:
        """Poll the device now instead of waiting for the next poll tick (keeps tests short)."""
        emitted = self.device.poll(self.clock())
        if emitted and not self._silenced:
            self._deliver(emitted)
        self._flush_pending()
        self._wake_poller()

    def _wake_poller(self) -> None:
        """Something may have moved the device's next deadline: the poll loop looks again now."""
        if self._wake is not None:
            self._wake.set()

    async def stop(self) -> None:
        if self._poll_task is not None:
            self._poll_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poll_task
            self._poll_task = None
        if self._mode == "pty":
            self._close_pty()
            if self._link_path is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._link_path)
        elif self._mode == "tcp":
            await self._close_server()
        self._plugged = False

    async def __aenter__(self) -> SimulatedPort:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # -- polling -----------------------------------------------------------------------------------
    def _require_not_started(self) -> None:
        if self._mode is not None:
            raise RuntimeError("the simulated port is already started")

    def _start_polling(self) -> None:
        self._poll_task = asyncio.get_running_loop().create_task(self._poll_loop())

    async def _poll_loop(self) -> None:
        self._wake = asyncio.Event()
        while True:
            self._wake.clear()
            try:
                self.pump()
            except Exception:  # a simulator bug must not silently stop the line; make it visible
                log.exception("simulated device poll failed")
            self._wake.clear()  # this very poll is not news
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._sleep_for())

    def _sleep_for(self) -> float:
        """Until the device's next deadline, between `poll_interval` and `idle_sleep`; the fixed period if
        the device cannot say (the wheel's simulator) or bytes still wait for the host to read them."""
        deadline_of = getattr(self.device, "next_deadline", None)
        if self.idle_sleep <= self.poll_interval or deadline_of is None or self._pending:
            return self.poll_interval
        due = deadline_of()
        if due is None:
            return self.idle_sleep
        return min(self.idle_sleep, max(self.poll_interval, due - self.clock()))

    def _deliver(self, data: bytes) -> None:
        if not self._plugged or not data:
            return
        self._pending += data
        if len(self._pending) > _MAX_PENDING_BYTES:
            del self._pending[: len(self._pending) - _MAX_PENDING_BYTES]
        self._flush_pending()

    def _flush_pending(self) -> None:
        if not self._pending or not self._plugged:
            return
        if self._mode == "pty" and self._master_fd is not None:
            try:
                written = os.write(self._master_fd, self._pending)
            except BlockingIOError:
                return  # the host is not reading; try again at the next poll
            except OSError:
                log.debug("write to pty master failed", exc_info=True)
                return
            del self._pending[:written]
        elif self._mode == "tcp":
            data = bytes(self._pending)
            self._pending.clear()
            for writer in list(self._clients):
                if not writer.is_closing():
                    writer.write(data)

    def _from_host(self, data: bytes) -> None:
        if data:
            self.device.receive(data, self.clock())
            self._wake_poller()

    # -- pty -----------------------------------------------------------------------------------------
    def _open_pty(self) -> None:
        master_fd, slave_fd = os.openpty()
        # Raw mode: no echo, no CR/LF translation, every byte passes unchanged in both directions.
        tty.setraw(slave_fd)
        os.set_blocking(master_fd, False)
        self._master_fd = master_fd
        # We keep a slave fd open ourselves so the master does not report EIO while no host has the port open.
        self._slave_fd = slave_fd
        self._slave_path = os.ttyname(slave_fd)
        if self._link_path is not None:
            # Repoint atomically: a host retrying to open the link never sees it missing once it is back.
            tmp = f"{self._link_path}.{os.getpid()}.tmp"
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            os.symlink(self._slave_path, tmp)
            os.replace(tmp, self._link_path)
        asyncio.get_running_loop().add_reader(master_fd, self._on_master_readable)
        self._plugged = True

    def _close_pty(self) -> None:
        if self._master_fd is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._master_fd)
            with contextlib.suppress(OSError):
                os.close(self._master_fd)
            self._master_fd = None
        if self._slave_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._slave_fd)
            self._slave_fd = None
        if self._link_path is not None:
            # An unplugged USB device's /dev node disappears; so does our link.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._link_path)

    def _on_master_readable(self) -> None:
        if self._master_fd is None:
            return
        try:
            data = os.read(self._master_fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            # Cannot happen while we hold a slave fd; if it does, stop watching rather than spin on it.
            log.warning("read from pty master failed; host bytes are no longer read", exc_info=True)
            asyncio.get_running_loop().remove_reader(self._master_fd)
            return
        self._from_host(data)

    # -- tcp -----------------------------------------------------------------------------------------
    async def _open_server(self) -> None:
        self._server = await asyncio.start_server(self._serve_client, self._host, self._port)
        # Remember the port actually bound, so a replug listens on the same address.
        self._port = self._server.sockets[0].getsockname()[1]
        self._plugged = True

    async def _close_server(self) -> None:
        if self._server is not None:
            self._server.close()
        # Closing our end ends each client handler's read with EOF; cancelling the handlers instead would
        # make asyncio's server log the cancellation as an error.
        for writer in list(self._clients):
            writer.close()
        if self._client_tasks:
            await asyncio.wait(list(self._client_tasks), timeout=1.0)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
        self._clients.clear()

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._client_tasks.add(task)
        self._clients.add(writer)
        # A host connecting to a serial-over-IP device is the moment the device is "plugged" for it.
        self.device.connected(self.clock())
        self.pump()
        try:
            while True:
                data = await reader.read(4096)
                if not data:
                    break
                self._from_host(data)
        except (ConnectionError, OSError):
            pass
        finally:
            self._clients.discard(writer)
            writer.close()
            if task is not None:
                self._client_tasks.discard(task)


class PortedSimulator:
    """What every device simulator offers besides its device's own actions: the port it is served on.

    Subclasses set `self.port` (a `SimulatedPort` around their pure device core) and add the dealer's or
    the machine's actions (draw a card, inject a fault...).
    """

    port: SimulatedPort

    @property
    def url(self) -> str:
        return self.port.url

    async def start_pty(self, link_path: str | None = None) -> str:
        return await self.port.start_pty(link_path)

    async def start_tcp(self, host: str = "127.0.0.1", port: int = 0) -> str:
        return await self.port.start_tcp(host, port)

    async def unplug(self) -> None:
        await self.port.unplug()

    async def replug(self) -> None:
        await self.port.replug()

    def silence(self, on: bool) -> None:
        self.port.silence(on)

    def inject(self, data: bytes) -> None:
        self.port.inject(data)

    def pump(self) -> None:
        self.port.pump()

    async def stop(self) -> None:
        await self.port.stop()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()
