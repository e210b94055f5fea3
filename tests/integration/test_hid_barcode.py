"""The USB HID barcode scanner's pyusb link through the real runner, against a simulated pyusb device: the
scanner is claimed from the kernel and its cards are read; unplugged it is offline, replugged read again.

Its integration tests; the unit ones are in `tests/unit/drivers/test_hid_barcode.py`."""

from __future__ import annotations

import asyncio
import contextlib
from functools import partial

import pytest

from drivers.hid.session import HidBarcodeSession
from drivers.hid.simulator import SimulatedScanner
from drivers.hid.usb import open_usb_hid
from drivers.readings import DeviceOffline, DeviceOnline, Reading
from drivers.runner import DeviceRunner
from tests.helpers.hid_barcode import seen

pytestmark = pytest.mark.integration


# --- the pyusb link, through the real runner ------------------------------------------------------------


class Collected:
    def __init__(self) -> None:
        self.readings: list[Reading] = []
        self.changed = asyncio.Event()

    async def __call__(self, readings: list[Reading]) -> None:
        self.readings += readings
        self.changed.set()

    async def until(self, predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
        async with asyncio.timeout(timeout):
            while not predicate(self.readings):
                self.changed.clear()
                await self.changed.wait()


@contextlib.asynccontextmanager
async def running(scanner: SimulatedScanner, address: str = "usb:05e0:1200:SIM00001"):  # type: ignore[no-untyped-def]
    collected = Collected()
    runner = DeviceRunner(
        HidBarcodeSession("shoe"),
        address,
        on_readings=collected,
        open_link=partial(open_usb_hid, find=scanner.find),
        reconnect_min=0.05,
        reconnect_max=0.2,
    )
    task = asyncio.create_task(runner.run())
    try:
        yield runner, collected
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_scanner_is_claimed_from_the_kernel_and_its_cards_are_read() -> None:
    scanner = SimulatedScanner(rollover=True)
    async with running(scanner) as (runner, collected):
        await collected.until(lambda r: any(isinstance(x, DeviceOnline) for x in r))
        assert (scanner.detached, scanner.configured, scanner.claimed) == (1, True, {0})
        assert not scanner.kernel_driver_active  # the codes no longer go to the focused window
        scanner.scan("SA")
        scanner.scan("h10")
        await collected.until(lambda r: len(seen(r)) == 2)
        assert seen(collected.readings) == ["AS", "TH"]
        assert runner.connected


async def test_an_unplugged_scanner_is_offline_and_read_again_once_replugged() -> None:
    scanner = SimulatedScanner()
    async with running(scanner) as (_runner, collected):
        await collected.until(lambda r: any(isinstance(x, DeviceOnline) for x in r))
        scanner.unplug()
        await collected.until(lambda r: any(isinstance(x, DeviceOffline) for x in r))
        (offline,) = [x for x in collected.readings if isinstance(x, DeviceOffline)]
        assert "unplugged or failed" in offline.reason and "No such device" in offline.reason
        await asyncio.sleep(0.3)  # retried with backoff meanwhile: still offline, reported once
        assert len([x for x in collected.readings if isinstance(x, DeviceOffline)]) == 1
        scanner.replug()
        await collected.until(lambda r: len([x for x in r if isinstance(x, DeviceOnline)]) == 2)
        assert scanner.detached == 2  # the kernel bound its keyboard driver again on replug
        scanner.scan("DQ")
        await collected.until(lambda r: seen(r) == ["QD"])
