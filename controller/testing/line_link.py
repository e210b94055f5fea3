"""A line device (shuffler, shaker) served by its simulator on a real pty and read through the real
DeviceRunner + session, recording every reading: the end-to-end harness their test suites share."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from drivers.line.device import LineSimulator
from drivers.readings import DeviceOnline, DeviceStatus, Reading
from drivers.runner import DeviceRunner
from drivers.session import DeviceCommand, DeviceSession


class RecordingLink:
    """A DeviceRunner with `session` on the link at `url`, recording every reading."""

    def __init__(self, session: DeviceSession, url: str) -> None:
        self.session: Any = session
        self.readings: list[Reading] = []
        self.runner = DeviceRunner(
            session,
            url,
            on_readings=self._on_readings,
            reconnect_min=0.05,
            reconnect_max=0.2,
        )

    async def _on_readings(self, readings: list[Reading]) -> None:
        self.readings += readings

    def of(self, kind: type[Reading]) -> list[Any]:
        return [r for r in self.readings if isinstance(r, kind)]

    async def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 5.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not condition():
            if loop.time() > deadline:
                raise AssertionError(f"timed out waiting for {what}; readings: {self.readings}")
            await asyncio.sleep(0.01)

    async def wait_for(self, kind: type[Reading], count: int = 1, timeout: float = 5.0) -> None:
        await self.wait_until(lambda: len(self.of(kind)) >= count, f"{count} x {kind.__name__}", timeout)

    async def send(self, name: str, **args: Any) -> None:
        await self.runner.send(DeviceCommand(name, args))


@contextlib.asynccontextmanager
async def served_on_pty(
    simulator: LineSimulator[Any], session: DeviceSession, link_path: str
) -> AsyncIterator[RecordingLink]:
    """Serve `simulator` on a pty, run `session` on it, yield once the host knows the device."""
    async with simulator:
        await simulator.start_pty(link_path)
        link = RecordingLink(session, simulator.url)
        task = asyncio.create_task(link.runner.run())
        try:
            await link.wait_for(DeviceOnline)
            await link.wait_for(DeviceStatus)  # the answer to STATUS?: the host knows where the device is
            yield link
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def acked(simulator: LineSimulator[Any]) -> list[str]:
    """The ACK lines the simulated device received from the host."""
    return [line.text for line in simulator.received if line.text.startswith("ACK ")]
