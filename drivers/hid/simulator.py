"""A simulated keyboard-mode USB barcode scanner, as pyusb shows one: for tests and a table without one.

`SimulatedScanner` is the device object `usb.core.find` would return (the attributes and methods of
`usb.core.Device` that `drivers.hid.usb` uses: ids, `serial_number`, `is_kernel_driver_active`,
`detach_kernel_driver`, `set_configuration`, `read`), plus the context `usb.util.claim_interface`,
`release_interface` and `dispose_resources` call. Its `find` is a drop-in for `usb.core.find`.
Like the machine: `read` blocks until a report comes or its timeout passes (`USBTimeoutError`), and raises
`USBError` (ENODEV) once unplugged; a replugged scanner has its kernel keyboard driver bound again.

The operator's side: `scan("SA")` types a barcode the way a scanner does (`drivers.hid.keyboard`), and
`send_report(raw)` sends any report at all (a recorded one, a broken one).
"""

from __future__ import annotations

import errno
import queue
import threading
from array import array
from typing import Any

import usb.core

from drivers.hid.keyboard import type_barcode

_UNPLUGGED = b""


class _Context:
    """What `usb.util`'s claim / release / dispose functions call on a device (`device._ctx`)."""

    def __init__(self, scanner: SimulatedScanner) -> None:
        self.scanner = scanner

    def managed_claim_interface(self, device: Any, interface: Any) -> None:
        self.scanner._require_plugged()
        self.scanner.claimed.add(int(interface))

    def managed_release_interface(self, device: Any, interface: Any) -> None:
        self.scanner.claimed.discard(int(interface))

    def dispose(self, device: Any, close_handle: bool = True) -> None:
        self.scanner.claimed.clear()
        self.scanner.disposed += 1


class SimulatedScanner:
    def __init__(
        self,
        vendor: int = 0x05E0,
        product: int = 0x1200,
        serial: str = "SIM00001",
        *,
        rollover: bool = False,
        endpoint: int = 0x81,
    ) -> None:
        self.idVendor = vendor
        self.idProduct = product
        self._serial = serial
        self.rollover = rollover
        self.endpoint = endpoint
        self.plugged = True
        self.kernel_driver_active = True  # the kernel's keyboard driver binds a new HID keyboard
        self.configured = False
        self.claimed: set[int] = set()
        self.detached = 0
        self.disposed = 0
        self.opened = threading.Event()  # set when someone claimed it
        self._ctx = _Context(self)
        self._reports: queue.Queue[bytes] = queue.Queue()

    # -- usb.core.find ---------------------------------------------------------------------------------
    def find(self, find_all: bool = False, **match: Any) -> Any:
        present = self.plugged and all(getattr(self, key, None) == value for key, value in match.items())
        if find_all:
            return iter([self] if present else [])
        return self if present else None

    # -- usb.core.Device --------------------------------------------------------------------------------
    @property
    def serial_number(self) -> str:
        self._require_plugged()
        return self._serial

    def is_kernel_driver_active(self, interface: int) -> bool:
        self._require_plugged()
        return self.kernel_driver_active

    def detach_kernel_driver(self, interface: int) -> None:
        self._require_plugged()
        self.kernel_driver_active = False
        self.detached += 1

    def set_configuration(self, configuration: Any = None) -> None:
        self._require_plugged()
        self.configured = True

    def read(self, endpoint: int, size_or_buffer: int, timeout: int | None = None) -> array[int]:
        self._require_plugged()
        if endpoint != self.endpoint:
            raise usb.core.USBError("Invalid parameter", errno=errno.EINVAL)
        if 0 not in self.claimed:
            self.claimed.add(0)  # pyusb claims the interface itself on the first transfer
        try:
            report = self._reports.get(timeout=None if not timeout else timeout / 1000)
        except queue.Empty:
            raise usb.core.USBTimeoutError("Operation timed out", errno=errno.ETIMEDOUT) from None
        if report is _UNPLUGGED:
            self._require_plugged()
        return array("B", report)

    # -- the operator ------------------------------------------------------------------------------------
    def scan(self, barcode: str) -> None:
        """Type `barcode` then Enter, as the scanner does when it reads a card."""
        for report in type_barcode(barcode, rollover=self.rollover):
            self._reports.put(report)

    def send_report(self, report: bytes) -> None:
        self._reports.put(bytes(report) or bytes(8))

    def unplug(self) -> None:
        self.plugged = False
        self.claimed.clear()
        self._reports.put(_UNPLUGGED)  # wakes a blocked read, which then fails as on a pulled cable

    def replug(self) -> None:
        self._reports = queue.Queue()
        self.plugged = True
        self.kernel_driver_active = True
        self.configured = False

    def _require_plugged(self) -> None:
        if not self.plugged:
            raise usb.core.USBError("No such device (it may have been disconnected)", errno=errno.ENODEV)
