"""The camera's health rules, sans-IO: frame statistics and the time in, health readings out.

Like a `DeviceSession` for a camera: no thread, no clock, no OpenCV. The runner (or a test, or a replay) calls
`connection_made`, `frame_received` for every frame, `connection_lost` when the source fails, and `tick` when
`next_deadline()` has passed without a frame.

    state      input                                    readings                      next state
    --------   --------------------------------------   ---------------------------   ----------
    offline    a frame                                  DeviceOnline                  online
    online     no frame for frame_timeout_s             DeviceOffline                 offline
    online     frozen_frames identical frames           DeviceFault FROZEN            fault
    online     dark_frames black frames in a row        DeviceFault BLACK             fault
    online     covered_frames flat frames in a row      DeviceFault COVERED           fault
    fault      clear_frames good frames in a row        DeviceFaultCleared            online
    fault      no frame for frame_timeout_s             DeviceOffline                 offline
    any        the source failed (connection_lost)      DeviceOffline (once)          offline

A fault lasts until good frames clear it (one DeviceFault per fault, whatever else goes wrong meanwhile).
Going offline ends a fault, as the table runtime sees it: when frames flow again the camera is online and a
condition that persists raises a new fault. A frame is good when it is neither identical to the one before,
nor black, nor flat.
"""

from __future__ import annotations

from enum import Enum

from drivers.camera.frame import FrameStats
from drivers.camera.options import CameraOptions
from drivers.readings import DeviceFault, DeviceFaultCleared, DeviceOffline, DeviceOnline, Reading

FROZEN = "FROZEN"
BLACK = "BLACK"
COVERED = "COVERED"


class CameraHealth(Enum):
    OFFLINE = "offline"
    ONLINE = "online"
    FAULT = "fault"


class CameraMonitor:
    """Health of one camera device named `name` (its name in the table config)."""

    def __init__(self, name: str, options: CameraOptions | None = None) -> None:
        self.name = name
        self.options = options or CameraOptions()
        self.state = CameraHealth.OFFLINE
        self.fault_code: str | None = None
        self.frames = 0
        self._connected = False
        self._offline_reported = False
        self._last_seen: float | None = None  # last frame, or the connection when none came yet
        self._previous: FrameStats | None = None
        self._identical_run = 0
        self._dark_run = 0
        self._flat_run = 0
        self._good_run = 0

    # -- inputs ------------------------------------------------------------------------------------
    def connection_made(self, now: float) -> list[Reading]:
        """The source opened: frames are expected from now on (online comes with the first frame)."""
        self._connected = True
        self._last_seen = now
        return []

    def connection_lost(self, now: float, reason: str) -> list[Reading]:
        """The source failed or could not be opened. Reported offline once, not on every retry."""
        self._connected = False
        self._last_seen = None
        return self._go_offline(now, reason)

    def frame_received(self, stats: FrameStats, now: float) -> list[Reading]:
        out: list[Reading] = []
        self.frames += 1
        self._last_seen = now
        if self.state is CameraHealth.OFFLINE:
            self.state = CameraHealth.ONLINE
            self._offline_reported = False
            out.append(
                DeviceOnline(device=self.name, time=now, detail=f"camera {stats.width}x{stats.height}")
            )
        options = self.options
        difference = stats.difference(self._previous) if self._previous is not None else None
        self._previous = stats
        identical = difference is not None and difference <= options.frozen_max_diff
        dark = stats.brightness < options.dark_max_brightness
        flat = stats.contrast < options.covered_max_contrast
        self._identical_run = self._identical_run + 1 if identical else 0
        self._dark_run = self._dark_run + 1 if dark else 0
        self._flat_run = self._flat_run + 1 if flat else 0
        self._good_run = 0 if (identical or dark or flat) else self._good_run + 1

        if self.state is CameraHealth.ONLINE:
            fault = self._fault(stats)
            if fault is not None:
                code, reason = fault
                self.state, self.fault_code = CameraHealth.FAULT, code
                out.append(DeviceFault(device=self.name, time=now, code=code, reason=reason))
        elif self.state is CameraHealth.FAULT and self._good_run >= options.clear_frames:
            detail = f"{self.fault_code} cleared: {self._good_run} good frames"
            self.state, self.fault_code = CameraHealth.ONLINE, None
            out.append(DeviceFaultCleared(device=self.name, time=now, detail=detail))
        return out

    def tick(self, now: float) -> list[Reading]:
        """Call at `next_deadline()` (calling more often is harmless): reports a stream that stopped."""
        deadline = self.next_deadline()
        if deadline is None or now < deadline:
            return []
        timeout = self.options.frame_timeout_s
        reason = f"no frame for {timeout:g} s" if self.frames else f"no frame within {timeout:g} s of opening"
        return self._go_offline(now, reason)

    # -- outputs -----------------------------------------------------------------------------------
    def next_deadline(self) -> float | None:
        """When `tick` must be called if no frame arrives before; None when nothing is awaited."""
        if not self._connected or self._offline_reported or self._last_seen is None:
            return None
        return self._last_seen + self.options.frame_timeout_s

    # -- internals ---------------------------------------------------------------------------------
    def _fault(self, stats: FrameStats) -> tuple[str, str] | None:
        options = self.options
        if self._identical_run >= options.frozen_frames:
            return FROZEN, f"frozen stream: {self._identical_run} frames in a row identical to the last"
        if self._dark_run >= options.dark_frames:
            return BLACK, (
                f"black frame: {self._dark_run} frames in a row darker than {options.dark_max_brightness:g} "
                f"(now {stats.brightness:.1f}); lens covered or the light is off?"
            )
        if self._flat_run >= options.covered_frames:
            return COVERED, (
                f"covered: {self._flat_run} frames in a row show almost nothing "
                f"(contrast {stats.contrast:.1f}, below {options.covered_max_contrast:g}); "
                "lens covered, fogged or out of focus?"
            )
        return None

    def _go_offline(self, now: float, reason: str) -> list[Reading]:
        self.state, self.fault_code = CameraHealth.OFFLINE, None
        self._previous = None
        self._identical_run = self._dark_run = self._flat_run = self._good_run = 0
        if self._offline_reported:
            return []
        self._offline_reported = True
        return [DeviceOffline(device=self.name, time=now, reason=reason)]
