"""The camera runner (drivers.camera.runner): worker thread, health readings in order, reconnection, grab().

Real sources throughout: the synthetic camera, and OpenCV's VideoCapture on a video file that disappears and
comes back. Real time, so the bounds are generous.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from drivers.camera import (
    CameraCaptureWriter,
    CameraError,
    CameraOptions,
    CameraRunner,
    FrameSource,
    HealthRecord,
    SyntheticSource,
    VideoSource,
    captured_frames,
    make_source,
    read_camera_capture,
)
from drivers.camera.frame import measure
from drivers.readings import DeviceFault, DeviceFaultCleared, DeviceOffline, DeviceOnline, Reading

pytestmark = pytest.mark.unit

FAST = CameraOptions(
    frame_timeout_s=0.5,
    frozen_frames=5,
    dark_frames=3,
    covered_frames=3,
    clear_frames=2,
    reconnect_min_s=0.05,
    reconnect_max_s=0.2,
    grab_timeout_s=2.0,
)
WAIT = 10.0  # generous: the machine is shared


class Recorder:
    """An on_readings callback that keeps what it got and checks deliveries never overlap."""

    def __init__(self, delay: float = 0.0) -> None:
        self.readings: list[Reading] = []
        self.delay = delay
        self.busy = False
        self.overlapped = False

    async def __call__(self, readings: list[Reading]) -> None:
        if self.busy:
            self.overlapped = True
        self.busy = True
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            self.readings.extend(readings)
        finally:
            self.busy = False

    def kinds(self) -> list[str]:
        return [
            f"fault {r.code}" if isinstance(r, DeviceFault) else type(r).__name__.removeprefix("Device")
            for r in self.readings
        ]

    async def until(self, predicate: Callable[[list[str]], bool], timeout: float = WAIT) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self.kinds()):
            if time.monotonic() > deadline:
                raise AssertionError(f"not seen in {timeout} s; readings so far: {self.kinds()}")
            await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def running(runner: CameraRunner) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(runner.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def synthetic(fps: float = 50) -> SyntheticSource:
    return SyntheticSource(width=64, height=48, fps=fps)


async def test_health_story_of_a_synthetic_camera_in_order() -> None:
    source = synthetic()
    recorder = Recorder(delay=0.005)  # a slow consumer must not reorder or overlap deliveries
    runner = CameraRunner("cam", lambda: source, options=FAST, on_readings=recorder)
    async with running(runner):
        await recorder.until(lambda k: k == ["Online"])
        assert runner.connected and runner.latest is not None
        source.mode = "covered"
        await recorder.until(lambda k: k[-1] == "fault COVERED")
        source.mode = "normal"
        await recorder.until(lambda k: k[-1] == "FaultCleared")
        source.mode = "frozen"
        await recorder.until(lambda k: k[-1] == "fault FROZEN")
        source.mode = "black"  # another failure during the fault: no second fault
        await asyncio.sleep(0.2)
        source.mode = "normal"
        await recorder.until(lambda k: k[-1] == "FaultCleared")
        source.unplugged = True
        await recorder.until(lambda k: k[-1] == "Offline")
        await asyncio.sleep(0.5)  # the runner keeps retrying, but reports the outage once
        source.unplugged = False
        await recorder.until(lambda k: k[-1] == "Online")
    assert recorder.kinds() == [
        "Online",
        "fault COVERED",
        "FaultCleared",
        "fault FROZEN",
        "FaultCleared",
        "Offline",
        "Online",
    ]
    assert not recorder.overlapped
    times = [r.time for r in recorder.readings]
    assert times == sorted(times)
    assert all(r.device == "cam" for r in recorder.readings)
    offline = recorder.readings[5]
    assert isinstance(offline, DeviceOffline) and "unplugged" in offline.reason
    assert source.opened == 2  # the same object reopened once it was plugged back (attempts failed before)
    cleared = recorder.readings[2]
    assert isinstance(cleared, DeviceFaultCleared) and cleared.detail.startswith("COVERED cleared")


async def test_a_real_video_source_that_disappears_and_comes_back(tmp_path: Path) -> None:
    video = tmp_path / "camera.avi"
    made: list[VideoSource] = []

    def factory() -> FrameSource:
        made.append(VideoSource(str(video)))
        return made[-1]

    recorder = Recorder()
    runner = CameraRunner("cam", factory, options=FAST, on_readings=recorder)
    async with running(runner):
        await recorder.until(lambda k: k == ["Offline"])  # no camera yet
        first = recorder.readings[0]
        assert isinstance(first, DeviceOffline) and "cannot be opened" in first.reason
        attempts = len(made)
        await asyncio.sleep(0.5)
        assert len(made) > attempts  # still trying
        frames = [np.random.default_rng(n).integers(0, 256, (48, 64, 3), dtype=np.uint8) for n in range(10)]
        writer = cv2.VideoWriter(str(tmp_path / "writing.avi"), cv2.VideoWriter_fourcc(*"MJPG"), 10, (64, 48))
        for frame in frames:
            writer.write(frame)
        writer.release()
        (tmp_path / "writing.avi").rename(video)  # the camera is back
        await recorder.until(lambda k: k[:3] == ["Offline", "Online", "Offline"])
    ended = recorder.readings[2]
    assert isinstance(ended, DeviceOffline) and "gave no frame" in ended.reason  # the end of the file
    assert all(not source.is_open for source in made)  # every source the worker opened, it closed


class HangingSource(FrameSource):
    """A camera whose read blocks until released: the stream stalled without an error."""

    description = "hanging camera"

    def __init__(self) -> None:
        self.flowing = threading.Event()
        self.flowing.set()
        self.closed = threading.Event()
        self._rng = np.random.default_rng(0)

    def open(self) -> None:
        self.closed.clear()

    def read(self) -> np.ndarray:
        self.flowing.wait()
        time.sleep(0.02)
        return self._rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)

    def close(self) -> None:
        self.closed.set()


async def test_a_stalled_stream_is_offline_after_the_frame_timeout_and_online_when_it_flows() -> None:
    source = HangingSource()
    recorder = Recorder()
    runner = CameraRunner("cam", lambda: source, options=FAST, on_readings=recorder)
    async with running(runner):
        await recorder.until(lambda k: k == ["Online"])
        source.flowing.clear()
        stalled_at = time.time()
        await recorder.until(lambda k: k == ["Online", "Offline"])
        offline = recorder.readings[1]
        assert isinstance(offline, DeviceOffline) and offline.reason == "no frame for 0.5 s"
        assert offline.time - stalled_at == pytest.approx(0.5, abs=0.4)
        assert runner.next_deadline() is None
        source.flowing.set()
        await recorder.until(lambda k: k == ["Online", "Offline", "Online"])
        assert runner.next_deadline() is not None
    assert source.closed.wait(WAIT)  # cancelled: the worker closes its source after its last read


async def test_a_first_frame_read_before_the_open_deadline_but_taken_after_it_keeps_time_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first frame is read (and stamped) just before `frame_timeout_s` after the source opened, but its
    measurement reaches the event loop after that deadline ran: offline, then online. The online is stamped
    when it is taken, not before the offline: the capture's times keep the order the table took them in,
    which is the order a replay takes them in (by time). Otherwise the replay would see the camera online,
    then offline, and pause a table that never paused."""
    source = HangingSource()
    source.flowing.clear()
    first_measure = threading.Event()

    def slow_first_measure(image: Any, columns: int) -> Any:
        if not first_measure.is_set():
            first_measure.set()
            time.sleep(0.35)  # the frame is stamped; the loop sees it only after the 0.5 s deadline
        return measure(image, columns)

    monkeypatch.setattr("drivers.camera.runner.measure", slow_first_measure)
    recorder = Recorder()
    runner = CameraRunner("cam", lambda: source, options=FAST, on_readings=recorder)
    async with running(runner):
        await asyncio.sleep(0.3)
        source.flowing.set()  # read at about 0.32 s, stamped then, taken at about 0.67 s
        await recorder.until(lambda k: k[:2] == ["Offline", "Online"])
    times = [reading.time for reading in recorder.readings]
    assert times == sorted(times), recorder.kinds()


async def test_grab_gives_a_fresh_frame_and_keeps_it_in_the_capture(tmp_path: Path) -> None:
    source = synthetic(fps=30)
    recorder = Recorder()
    capture = CameraCaptureWriter(tmp_path / "camera.jsonl")
    runner = CameraRunner("cam", lambda: source, options=FAST, on_readings=recorder, capture=capture)
    async with running(runner):
        await recorder.until(lambda k: k == ["Online"])
        await asyncio.sleep(0.1)
        before = runner.latest
        assert before is not None
        asked = time.time()
        frame = await runner.grab()
        assert frame.seq > before.seq and frame.time >= asked  # taken after the request
        assert frame.image.shape == (48, 64, 3)
        again = await runner.grab()
        assert again.seq > frame.seq
    capture.close()
    reading = frame.reading("cam")
    assert (reading.device, reading.width, reading.height, reading.seq) == ("cam", 64, 48, frame.seq)
    assert reading.file == frame.file and reading.sha256 == frame.sha256 and len(frame.sha256) == 64
    records = read_camera_capture(tmp_path / "camera.jsonl")  # verifies every sha256
    stored = captured_frames(records)
    assert [r.file for r in stored] == [frame.file, again.file]
    assert np.array_equal(stored[0].load(), frame.image)
    assert [r.kind for r in records if isinstance(r, HealthRecord)] == ["DeviceOnline"]


async def test_grab_skips_frames_when_asked_and_fails_clearly_without_frames() -> None:
    source = synthetic(fps=50)
    options = FAST.model_copy(update={"grab_skip_frames": 3})
    runner = CameraRunner("cam", lambda: source, options=options, on_readings=Recorder())
    async with running(runner):
        first = await runner.grab()
        assert first.file == "" and first.sha256 == ""  # no capture configured
        latest = runner.latest
        assert latest is not None
        later = await runner.grab()
        assert later.seq >= latest.seq + 4
        source.unplugged = True
        await asyncio.sleep(0.2)
        with pytest.raises(CameraError, match=r"'cam' gave no frame within 0\.3 s \(.*unplugged"):
            await runner.grab(timeout=0.3)


async def test_the_runner_survives_a_bad_factory_and_a_failing_consumer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls = 0
    source = synthetic()

    def factory() -> FrameSource:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise OSError("no such camera model")
        return source

    delivered: list[Reading] = []

    async def on_readings(readings: list[Reading]) -> None:
        delivered.extend(readings)
        if isinstance(readings[0], DeviceOffline):
            raise RuntimeError("the journal is full")

    runner = CameraRunner("cam", factory, options=FAST, on_readings=on_readings)
    async with running(runner):
        deadline = time.monotonic() + WAIT
        while not any(isinstance(r, DeviceOnline) for r in delivered):
            assert time.monotonic() < deadline, delivered
            await asyncio.sleep(0.01)
    assert isinstance(delivered[0], DeviceOffline)
    assert "camera source cannot be made: no such camera model" in delivered[0].reason
    assert "delivering 1 readings failed" in caplog.text


async def test_a_stream_urls_password_reaches_no_reading_log_or_capture(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "CamPassw0rd"
    url = f"rtsp://admin:{secret}@127.0.0.1:9/stream1"  # nothing listens on port 9
    options = FAST.model_copy(update={"open_timeout_s": 1.0})
    recorder = Recorder()
    capture = CameraCaptureWriter(tmp_path / "camera.jsonl")
    runner = CameraRunner(
        "cam", lambda: make_source(url, options), options=options, on_readings=recorder, capture=capture
    )
    with caplog.at_level(logging.INFO, logger="drivers.camera.runner"):
        async with running(runner):
            await recorder.until(lambda k: k == ["Offline"])
    capture.close()
    offline = recorder.readings[0]
    assert isinstance(offline, DeviceOffline) and "rtsp://***@127.0.0.1:9/***" in offline.reason
    assert secret not in offline.reason
    assert "rtsp://***@127.0.0.1:9/***" in caplog.text and secret not in caplog.text
    assert secret not in (tmp_path / "camera.jsonl").read_text()


def test_backoff_doubles_up_to_its_cap_and_resets() -> None:
    from drivers.backoff import Backoff

    backoff = Backoff(0.2, 1.0)
    assert [backoff.next() for _ in range(5)] == [0.2, 0.4, 0.8, 1.0, 1.0]
    backoff.reset()
    assert backoff.next() == 0.2
    with pytest.raises(ValueError, match="minimum <= maximum"):
        Backoff(2, 1)
