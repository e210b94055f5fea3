"""The camera's side of sic bo: "read the dice of cycle X" in, a `DiceRead` reading out (the I/O shell).

The game flow is pure: when the shaker reports the dice at rest it asks the camera device, by a device
request, `DeviceCommand("read_dice", {"cycle_id": X, "dice": 3})`. The service hands that request here,
and this station, off the flow's path:

1. grabs a still: the first frame the camera delivers after the request (`CameraRunner.grab`, after
   `grab_skip_frames`), which the camera's capture keeps as a PNG with its sha256 before it is used;
2. reads it with the dice reader (`drivers.dice.adapter`, the one module that knows the reader) in a worker
   thread: reading is CPU work and the event loop must keep serving the table;
3. delivers a `DiceRead` (values, or a refusal and why; the frame's file and sha256; the reader's evidence)
   through the camera runner, in order with the camera's health readings, and keeps it in the camera's
   capture, from which a replay feeds it back.

Nothing is guessed and nothing fails silently: no frame (camera offline, grab timed out, frame not kept) or no
reader configured is a refusal with the reason, which the flow treats like any unreadable dice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from numpy.typing import NDArray

from drivers.camera.frame import CameraError, Frame
from drivers.dice.adapter import Readout
from drivers.readings import DiceRead, Reading
from drivers.session import DeviceCommand, UnknownDeviceCommand

log = logging.getLogger(__name__)

READ_DICE = "read_dice"


class Camera(Protocol):
    """What the station needs of a camera device (`drivers.camera.CameraRunner`)."""

    name: str

    async def grab(self, *, timeout: float | None = None) -> Frame: ...

    async def deliver(self, readings: list[Reading]) -> None: ...


Reader = Callable[[NDArray[Any], int], Readout]


class DiceStation:
    """Serves `read_dice` requests for one camera. `reader` is None when no calibration is configured."""

    def __init__(self, camera: Camera, reader: Reader | None, *, clock: Callable[[], float]) -> None:
        self.camera = camera
        self.reader = reader
        self.clock = clock
        self._tasks: set[asyncio.Task[None]] = set()

    def request(self, command: DeviceCommand) -> None:
        """Start serving a request (returns at once). UnknownDeviceCommand if this is not one."""
        if command.name != READ_DICE:
            raise UnknownDeviceCommand(f"camera {self.camera.name!r} has no command {command.name!r}")
        cycle_id = command.args.get("cycle_id")
        expected = command.args.get("dice", 3)
        if not isinstance(cycle_id, str) or not cycle_id:
            raise UnknownDeviceCommand(f"{READ_DICE} needs the shake's 'cycle_id', not {cycle_id!r}")
        if not isinstance(expected, int) or isinstance(expected, bool) or not 1 <= expected <= 10:
            raise UnknownDeviceCommand(f"{READ_DICE} needs a number of 'dice', not {expected!r}")
        loop = asyncio.get_running_loop()
        task = loop.create_task(self._serve(cycle_id, expected), name=f"dice-{cycle_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def read(self, cycle_id: str, expected: int = 3) -> DiceRead:
        """Grab, keep and read one frame for `cycle_id` (without delivering it)."""
        name = self.camera.name
        try:
            frame = await self.camera.grab()
        except CameraError as exc:
            return DiceRead(device=name, time=self.clock(), cycle_id=cycle_id, values=None, reason=str(exc))
        if self.reader is None:
            readout = Readout(None, f"no dice reader: set devices.{name}.options.dice_calibration", ())
        else:
            try:
                readout = await asyncio.to_thread(self.reader, frame.image, expected)
            except Exception as exc:  # a reader bug must not stop the table: a refusal, and the log
                log.exception("%s: the dice reader failed on frame %d", name, frame.seq)
                readout = Readout(None, f"the dice reader failed: {exc!r}", ())
        return DiceRead(
            device=name,
            time=self.clock(),
            cycle_id=cycle_id,
            values=readout.values,
            reason=readout.reason,
            frame=frame.file,
            sha256=frame.sha256,
            dice=readout.dice,
            raw=f"frame {frame.seq}",
        )

    async def _serve(self, cycle_id: str, expected: int) -> None:
        reading = await self.read(cycle_id, expected)
        try:
            await self.camera.deliver([reading])
        except Exception:
            # not committed (the journal failed): the service is stopping; the flow's read timeout covers it
            log.exception("%s: the dice reading of cycle %s was not delivered", self.camera.name, cycle_id)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
