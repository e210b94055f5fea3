"""The USB link of a HID barcode scanner, read with pyusb: the only I/O of `hid-barcode` (the session is
`drivers.hid.session`).

`open_usb_hid(address)` has the shape of `drivers.transport.open_serial`, so the ordinary `DeviceRunner` runs
a scanner like any device (readings in order, reconnection with exponential backoff, captures). It:

1. finds the device by vendor and product id, and serial number if the address names one
   (`usb:0c2e:0b61` or `usb:0c2e:0b61:SERIAL`, ids in hex as `lsusb` prints them);
2. detaches the kernel's keyboard driver from the interface, so the scanned codes stop being typed into
   whatever window has the focus, sets the configuration and claims the interface;
3. reads the interrupt IN endpoint in a worker thread (pyusb blocks), handing each report to the event loop
   framed as `length byte + report` (`drivers.hid.session.frame`), so report boundaries survive the stream;
4. on unplug (pyusb raises `USBError`: no such device, I/O error) ends the stream with a `LinkError`; the
   runner reports the scanner offline and opens it again with backoff until it is back.

`find` defaults to `usb.core.find`; a test or a simulator passes its own (`drivers.hid.simulator`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import usb.core
import usb.util

from drivers.hid.session import MAX_FRAME, frame
from drivers.transport import LinkError

log = logging.getLogger(__name__)

#: the interrupt IN endpoint of interface 0 of a keyboard-mode scanner
DEFAULT_ENDPOINT = 0x81
DEFAULT_INTERFACE = 0
#: a blocking read returns this often, so the worker notices a close in time
READ_TIMEOUT_MS = 100

_ADDRESS = re.compile(r"^usb:([0-9a-fA-F]{4}):([0-9a-fA-F]{4})(?::(\S+))?$")
Finder = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class UsbAddress:
    vendor: int
    product: int
    serial: str | None = None

    def __str__(self) -> str:
        serial = f":{self.serial}" if self.serial else ""
        return f"usb:{self.vendor:04x}:{self.product:04x}{serial}"


def parse_usb_address(text: str) -> UsbAddress:
    """`usb:VVVV:PPPP[:SERIAL]` -> UsbAddress; ValueError saying the expected form."""
    match = _ADDRESS.match(text.strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a USB device address: use usb:<vendor>:<product>[:<serial>], the ids in "
            "hex as `lsusb` prints them, e.g. usb:05e0:1200:SCAN0001"
        )
    vendor, product, serial = match.groups()
    return UsbAddress(int(vendor, 16), int(product, 16), serial)


def usb_address_problem(text: str) -> str | None:
    try:
        parse_usb_address(text)
    except ValueError as exc:
        return str(exc)
    return None


def _serial_of(device: Any) -> str | None:
    try:
        serial = device.serial_number
    except (usb.core.USBError, ValueError, NotImplementedError):
        return None  # no permission to read strings, or none: it cannot be the one the address names
    return serial if isinstance(serial, str) else None


def _describe_usb_error(address: UsbAddress, exc: usb.core.USBError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (
            f"no permission to open the USB barcode scanner {address} (install the udev rule that gives "
            "it to group tablectl: docs/operating.md, 'USB barcode scanner')"
        )
    if exc.errno == errno.EBUSY:
        return f"the USB barcode scanner {address} is busy (another program has claimed it)"
    return f"cannot open the USB barcode scanner {address}: {exc}"


class UsbHidLink(asyncio.Transport):
    """An opened scanner as an asyncio transport: a worker thread reads reports, the loop gets them framed.

    Writing is not supported by a scanner in keyboard mode and does nothing."""

    def __init__(
        self,
        device: Any,
        address: UsbAddress,
        protocol: asyncio.Protocol,
        loop: asyncio.AbstractEventLoop,
        *,
        interface: int,
        endpoint: int,
    ) -> None:
        super().__init__()
        self.device = device
        self.address = address
        self._protocol = protocol
        self._loop = loop
        self._interface = interface
        self._endpoint = endpoint
        self._stop = threading.Event()
        self._lost = False
        self._worker = threading.Thread(target=self._read_reports, name=f"usb-{address}", daemon=True)

    def start(self) -> None:
        self._protocol.connection_made(self)
        self._worker.start()

    # -- asyncio.Transport -------------------------------------------------------------------------
    def write(self, data: bytes | bytearray | memoryview) -> None:
        """A keyboard-mode scanner takes nothing from the host: the session never queues bytes."""

    def is_closing(self) -> bool:
        return self._stop.is_set()

    def close(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()  # the worker releases the device after its current read (at most READ_TIMEOUT_MS)
        self._connection_lost(None)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return str(self.address) if name == "peername" else default

    # -- the worker thread ---------------------------------------------------------------------------
    def _read_reports(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    report = self.device.read(self._endpoint, MAX_FRAME, timeout=READ_TIMEOUT_MS)
                except usb.core.USBTimeoutError:
                    continue  # no key: the scanner is idle
                except Exception as exc:  # USBError on unplug; anything else must end the link too
                    if not self._stop.is_set():
                        reason = f"USB barcode scanner {self.address} unplugged or failed: {exc}"
                        self._post(self._connection_lost, LinkError(reason))
                    return
                data = bytes(report)
                if data and not self._stop.is_set():
                    self._post(self._data, frame(data[:MAX_FRAME]))
        finally:
            self._release()

    def _post(self, callback: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens any more
            self._loop.call_soon_threadsafe(callback, *args)

    def _release(self) -> None:
        with contextlib.suppress(Exception):
            usb.util.release_interface(self.device, self._interface)
        with contextlib.suppress(Exception):
            usb.util.dispose_resources(self.device)

    # -- on the loop -----------------------------------------------------------------------------------
    def _data(self, data: bytes) -> None:
        if not self._lost:
            self._protocol.data_received(data)

    def _connection_lost(self, exc: Exception | None) -> None:
        if self._lost:
            return
        self._lost = True
        self._stop.set()
        self._protocol.connection_lost(exc)


def _open_device(find: Finder, address: UsbAddress, interface: int) -> Any:
    """Find, detach the kernel driver, configure and claim (blocking: run in a thread)."""
    try:
        found = list(find(find_all=True, idVendor=address.vendor, idProduct=address.product) or [])
    except usb.core.NoBackendError as exc:
        raise LinkError(f"cannot look for USB devices: no libusb ({exc}); install libusb-1.0-0") from exc
    if address.serial is not None:
        found = [device for device in found if _serial_of(device) == address.serial]
    if not found:
        raise LinkError(f"USB barcode scanner {address} not found (is it plugged in? `lsusb` lists it)")
    device = found[0]
    try:
        if device.is_kernel_driver_active(interface):
            device.detach_kernel_driver(interface)
        try:
            device.set_configuration()
        except usb.core.USBError as exc:
            if exc.errno != errno.EBUSY:  # already configured (by the kernel): that configuration is used
                raise
        usb.util.claim_interface(device, interface)
    except usb.core.USBError as exc:
        with contextlib.suppress(Exception):
            usb.util.dispose_resources(device)
        raise LinkError(_describe_usb_error(address, exc)) from exc
    return device


async def open_usb_hid(
    url: str,
    baudrate: int = 0,
    *,
    find: Finder | None = None,
    interface: int = DEFAULT_INTERFACE,
    endpoint: int = DEFAULT_ENDPOINT,
    **_ignored: Any,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open the scanner at `url` (`usb:VVVV:PPPP[:SERIAL]`) as (reader, writer); LinkError if it cannot be.

    `baudrate` is accepted for the runner's sake and means nothing on USB."""
    try:
        address = parse_usb_address(url)
    except ValueError as exc:
        raise LinkError(str(exc)) from None
    device = await asyncio.to_thread(_open_device, find or usb.core.find, address, interface)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    link = UsbHidLink(device, address, protocol, loop, interface=interface, endpoint=endpoint)
    link.start()
    log.info("opened USB barcode scanner %s", address)
    return reader, asyncio.StreamWriter(link, protocol, reader, loop)
