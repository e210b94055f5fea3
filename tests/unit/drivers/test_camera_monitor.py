"""The camera's health rules (drivers.camera.monitor), on virtual time: no thread, no clock, no OpenCV."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from drivers.camera import BLACK, COVERED, FROZEN, CameraHealth, CameraMonitor, CameraOptions, measure
from drivers.camera.frame import FrameStats
from drivers.readings import DeviceFault, DeviceFaultCleared, DeviceOffline, DeviceOnline, Reading

pytestmark = pytest.mark.unit

OPTIONS = CameraOptions(frame_timeout_s=2.0, frozen_frames=5, dark_frames=3, covered_frames=4, clear_frames=2)
_rng = np.random.default_rng(7)
_SCENE = np.zeros((48, 64, 3), np.uint8)
_SCENE[:, 32:] = 180  # half bright: plenty of contrast


def noisy(base: np.ndarray, amplitude: int = 2) -> np.ndarray:
    noise = _rng.integers(-amplitude, amplitude + 1, size=base.shape, dtype=np.int16)
    return np.clip(base.astype(np.int16) + noise, 0, 255).astype(np.uint8)


def good() -> FrameStats:
    """A live camera looking at a still scene: the same picture, sensor noise on top."""
    return measure(noisy(_SCENE))


def black() -> FrameStats:
    return measure(noisy(np.zeros_like(_SCENE)))


def covered() -> FrameStats:
    return measure(noisy(np.full_like(_SCENE, 90)))


FROZEN_FRAME = measure(noisy(_SCENE))


class Table:
    """A monitor and a virtual clock: one frame every 1/25 s unless told otherwise."""

    def __init__(self, options: CameraOptions = OPTIONS) -> None:
        self.monitor = CameraMonitor("cam", options)
        self.now = 1000.0
        self.readings: list[Reading] = []

    def open(self) -> list[Reading]:
        return self._keep(self.monitor.connection_made(self.now))

    def frames(self, make, count: int = 1, interval: float = 0.04) -> list[Reading]:
        out: list[Reading] = []
        for _ in range(count):
            self.now += interval
            out += self.monitor.frame_received(make() if callable(make) else make, self.now)
        return self._keep(out)

    def wait(self, seconds: float) -> list[Reading]:
        self.now += seconds
        return self._keep(self.monitor.tick(self.now))

    def lose(self, reason: str = "unplugged") -> list[Reading]:
        return self._keep(self.monitor.connection_lost(self.now, reason))

    def _keep(self, out: list[Reading]) -> list[Reading]:
        self.readings += out
        return out


def kinds(readings: list[Reading]) -> list[str]:
    return [
        f"fault {r.code}" if isinstance(r, DeviceFault) else type(r).__name__.removeprefix("Device")
        for r in readings
    ]


# --- online / offline ---------------------------------------------------------------------------------


def test_no_frame_after_opening_is_offline_after_the_timeout() -> None:
    table = Table()
    assert table.monitor.next_deadline() is None  # nothing awaited before the source opens
    assert table.open() == []
    assert table.monitor.next_deadline() == pytest.approx(1002.0)
    assert table.wait(1.99) == []
    [offline] = table.wait(0.01)
    assert isinstance(offline, DeviceOffline)
    assert offline.reason == "no frame within 2 s of opening"
    assert offline.device == "cam" and offline.time == pytest.approx(1002.0)
    assert table.monitor.next_deadline() is None
    assert table.wait(60) == []  # reported once


def test_frames_flowing_are_online_and_a_stall_is_offline() -> None:
    table = Table()
    table.open()
    [online] = table.frames(good)
    assert isinstance(online, DeviceOnline) and online.detail == "camera 64x48"
    assert table.monitor.state is CameraHealth.ONLINE
    assert table.frames(good, 100) == []  # a still scene with sensor noise is not frozen
    assert table.monitor.next_deadline() == pytest.approx(table.now + 2.0)
    assert table.wait(1.9) == []
    assert kinds(table.wait(0.2)) == ["Offline"]
    assert table.readings[-1].reason == "no frame for 2 s"  # type: ignore[attr-defined]
    assert table.monitor.state is CameraHealth.OFFLINE
    assert kinds(table.frames(good)) == ["Online"]  # the stream came back


def test_a_source_that_fails_is_offline_once_whatever_the_retries() -> None:
    table = Table()
    [offline] = table.lose("camera '0' cannot be opened")
    assert isinstance(offline, DeviceOffline) and offline.reason == "camera '0' cannot be opened"
    assert table.lose("again") == []
    assert table.monitor.next_deadline() is None
    table.open()
    assert table.wait(5) == []  # already reported offline: no second report for the same outage
    assert kinds(table.frames(good)) == ["Online"]
    assert kinds(table.lose("gave no frame")) == ["Offline"]


def test_tick_early_or_repeated_is_harmless() -> None:
    table = Table()
    table.open()
    table.frames(good)
    for _ in range(10):
        assert table.wait(0.1) == []
        table.frames(good)


# --- faults -------------------------------------------------------------------------------------------


def test_frozen_stream_is_a_fault_until_frames_change_again() -> None:
    table = Table()
    table.open()
    table.frames(good, 3)
    assert table.frames(FROZEN_FRAME) == []  # the first of the run: not yet identical to the one before
    assert table.frames(FROZEN_FRAME, 4) == []  # 4 identical repeats: one short of frozen_frames
    [fault] = table.frames(FROZEN_FRAME)
    assert isinstance(fault, DeviceFault) and fault.code == FROZEN
    assert "5 frames in a row identical" in fault.reason
    assert table.monitor.state is CameraHealth.FAULT and table.monitor.fault_code == FROZEN
    assert table.frames(FROZEN_FRAME, 50) == []  # one fault, not one per frame
    assert table.frames(good) == []  # one good frame is not enough (clear_frames = 2)
    [cleared] = table.frames(good)
    assert isinstance(cleared, DeviceFaultCleared) and cleared.detail == "FROZEN cleared: 2 good frames"
    assert table.monitor.state is CameraHealth.ONLINE


def test_black_frames_are_a_fault() -> None:
    table = Table()
    table.open()
    table.frames(good, 2)
    assert table.frames(black, 2) == []
    [fault] = table.frames(black)
    assert isinstance(fault, DeviceFault) and fault.code == BLACK
    assert "3 frames in a row darker than 12" in fault.reason
    assert kinds(table.frames(good, 2)) == ["FaultCleared"]


def test_covered_lens_is_a_fault() -> None:
    table = Table()
    table.open()
    table.frames(good)
    assert table.frames(covered, 3) == []
    [fault] = table.frames(covered)
    assert isinstance(fault, DeviceFault) and fault.code == COVERED
    assert "contrast" in fault.reason


def test_a_bad_frame_while_recovering_restarts_the_count() -> None:
    table = Table()
    table.open()
    table.frames(black, 3)
    assert table.monitor.fault_code == BLACK
    assert table.frames(good) == []
    assert table.frames(black) == []  # the light flickered off again
    assert table.frames(good) == []
    assert kinds(table.frames(good)) == ["FaultCleared"]


def test_bad_frames_that_do_not_last_are_no_fault() -> None:
    table = Table()
    table.open()
    table.frames(good)
    for _ in range(20):  # a hand passing over the lens, the light blinking: never enough in a row
        table.frames(black, 2)  # (a black frame is flat too: it counts towards COVERED as well)
        table.frames(good)
        table.frames(covered, 3)
        table.frames(good)
        table.frames(FROZEN_FRAME, 4)
        table.frames(good)
    assert kinds(table.readings) == ["Online"]


def test_one_fault_at_a_time_whatever_else_goes_wrong() -> None:
    table = Table()
    table.open()
    table.frames(good)
    assert kinds(table.frames(covered, 4)) == ["fault COVERED"]
    assert table.frames(black, 10) == []  # the cover got darker: still the same fault
    assert table.monitor.fault_code == COVERED
    assert kinds(table.frames(good, 2)) == ["FaultCleared"]


def test_offline_ends_a_fault_and_a_lasting_condition_faults_again() -> None:
    # The runtime treats offline as replacing a fault; when the camera is back it must hear of it again.
    table = Table()
    table.open()
    table.frames(good)
    table.frames(covered, 4)
    assert kinds(table.wait(3)) == ["Offline"]
    assert table.monitor.fault_code is None
    assert kinds(table.frames(covered, 4)) == ["Online", "fault COVERED"]
    assert kinds(table.lose()) == ["Offline"]
    table.open()
    assert kinds(table.frames(good, 5)) == ["Online"]


def test_frame_size_change_is_not_frozen() -> None:
    table = Table()
    table.open()
    small = measure(noisy(_SCENE[:24, :32]))
    table.frames(good)
    assert table.frames(small) == []  # different grids: no comparison, no crash


# --- options ------------------------------------------------------------------------------------------


def test_options_defaults_and_validation() -> None:
    options = CameraOptions()
    assert options.frame_timeout_s == 2.0 and options.frozen_frames == 60 and options.clear_frames == 5
    assert CameraOptions.model_validate({"frozen_frames": 30, "dark_max_brightness": 20}).frozen_frames == 30
    with pytest.raises(ValidationError, match="extra"):
        CameraOptions.model_validate({"frozen_frame": 30})  # a typo in the config is an error
    with pytest.raises(ValidationError, match="reconnect_max_s"):
        CameraOptions(reconnect_min_s=2, reconnect_max_s=1)
    with pytest.raises(ValidationError):
        CameraOptions(frame_timeout_s=0)
    with pytest.raises(ValidationError):
        CameraOptions(frozen_frames=1)


def test_statistics_are_cheap_enough_for_30_fps() -> None:
    import time

    image = _rng.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    start = time.perf_counter()
    for _ in range(30):
        stats = measure(image)
    per_frame = (time.perf_counter() - start) / 30
    assert per_frame < 0.01  # about 0.2 ms measured; a 30 fps frame has 33 ms
    assert stats.grid.shape == (45, 80)


# --- any sequence -------------------------------------------------------------------------------------

EVENT = st.sampled_from(["good", "black", "covered", "frozen", "gap", "lost", "open"])


@settings(max_examples=200, deadline=None)
@given(st.lists(EVENT, max_size=80))
def test_any_sequence_gives_a_consistent_health_story(events: list[str]) -> None:
    table = Table()
    table.open()
    makers = {"good": good, "black": black, "covered": covered, "frozen": FROZEN_FRAME}
    for event in events:
        if event in makers:
            table.frames(makers[event], 2)
        elif event == "gap":
            table.wait(2.5)
        elif event == "lost":
            table.lose()
        else:
            table.open()
    status = "unknown"
    for reading in table.readings:
        if isinstance(reading, DeviceOnline):
            assert status in ("unknown", "offline")
            status = "online"
        elif isinstance(reading, DeviceOffline):
            assert status != "offline"
            status = "offline"
        elif isinstance(reading, DeviceFault):
            assert status == "online"
            status = "fault"
        else:
            assert isinstance(reading, DeviceFaultCleared)
            assert status == "fault"
            status = "online"
    assert table.monitor.state.value == ("offline" if status == "unknown" else status)
