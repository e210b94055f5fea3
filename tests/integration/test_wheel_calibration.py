"""Wheel calibration tools against the simulated SS2 on a real pseudo-terminal: `*C`, `*T c`/`*T f`/`*T C`,
`*F`, the operator's prompts, and the JSON records.

Its integration tests; the unit ones are in `tests/unit/calibration/test_wheel_calibration.py`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from calibration.wheel import (
    SCHEMA,
    CalibrationCancelled,
    CalibrationError,
    SensorCalibration,
    WheelConsole,
    WheelIdentity,
    calibrate_sensors,
    check_firing_position,
    identify,
    run_self_test,
    set_firing_position,
)
from calibration.wheel_cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, run_procedure
from drivers.transport import open_serial
from drivers.wheel.protocol import WheelState
from drivers.wheel.simulator import WheelSimulator
from tests.helpers.wheel_calibration import parse, run_cli

pytestmark = pytest.mark.integration

SPEED = 10.0  # calibration steps of 50 ms, a self-test of 0.3 s


BOOT_SECONDS = 0.2


def make_simulator(**options: Any) -> WheelSimulator:
    return WheelSimulator(seed=1, speed=SPEED, boot_seconds=BOOT_SECONDS, **options)


async def started(**options: Any) -> WheelSimulator:
    """A simulated wheel on a pty, switched on and past its boot."""
    simulator = make_simulator(**options)
    await simulator.start_pty()
    await asyncio.sleep(BOOT_SECONDS + 0.05)
    return simulator


@pytest.fixture
async def wheel() -> AsyncIterator[WheelSimulator]:
    simulator = await started()
    try:
        yield simulator
    finally:
        await simulator.stop()


async def connect(simulator: WheelSimulator, reply_timeout: float = 3.0) -> WheelConsole:
    reader, writer = await open_serial(simulator.url, baudrate=9600)
    return WheelConsole(reader, writer, reply_timeout=reply_timeout)


class Operator:
    """Answers the prompts from a script and remembers what it was asked and shown."""

    def __init__(self, *answers: bool) -> None:
        self.answers = list(answers)
        self.questions: list[str] = []
        self.shown: list[str] = []

    def ask(self, question: str) -> bool:
        self.questions.append(question)
        return self.answers.pop(0)

    def show(self, text: str) -> None:
        self.shown.append(text)


# --- sensor calibration -------------------------------------------------------------------------------------


async def test_sensor_calibration_succeeds() -> None:
    wheel = make_simulator()
    await wheel.start_pty()  # and talk to it at once, while it still boots
    console = await connect(wheel)
    try:
        identity = await identify(console)  # sent while the wheel still boots: repeated until it answers
        assert identity == WheelIdentity(name="CAM", firmware={"S": "SS2 2.52"})
        operator = Operator(True)
        result = await calibrate_sensors(console, operator.ask, operator.show)
    finally:
        await console.close()
        await wheel.stop()
    assert [line for _, line in wheel.device.received][:1] == ["*K"]  # heard only once it had booted
    assert operator.questions == [
        "Fix the ball in the middle of pocket 0 (it must not move). Ready to calibrate?"
    ]
    assert result.ok
    assert result.positions == ("127", "1151", "2175")
    assert result.message == "sensors calibrated at positions 127, 1151, 2175"
    assert operator.shown == [
        "wheel: *C OK : Calibrating sensor positions",
        "wheel: *C BALL : OK Clockwise",
        "wheel: *C OK : Completed (127, 1151, 2175)",
    ]
    assert "*C" in [line for _, line in wheel.device.received]


async def calibrate_agreeing(simulator: WheelSimulator) -> SensorCalibration:
    """The sensor calibration of `simulator`'s wheel, the operator saying yes to every question."""
    console = await connect(simulator)
    try:
        await identify(console)
        return await calibrate_sensors(console, lambda q: True, lambda t: None)
    finally:
        await console.close()
        await simulator.stop()


async def test_sensor_calibration_reports_broken_sensors() -> None:
    result = await calibrate_agreeing(await started(calibration_broken_sensors=(1, 3)))
    assert not result.ok
    assert result.broken_sensors == (1, 3)
    assert result.message == "sensor(s) 1, 3 broken: clean or replace, then calibrate again"
    assert result.as_record()["broken_sensors"] == [1, 3]


async def test_sensor_calibration_without_the_ball() -> None:
    result = await calibrate_agreeing(await started(ball_on_zero=False))
    assert not result.ok
    assert result.ball == "not found"
    assert result.message == "the wheel found no ball: is it fixed in the middle of pocket 0?"


async def test_a_running_wheel_is_powered_down_first_if_the_operator_agrees(wheel: WheelSimulator) -> None:
    console = await connect(wheel)
    try:
        await identify(console)
        await console.send(b"*P 1\r\n")
        await asyncio.sleep(0.2)
        assert wheel.device.state is not WheelState.CLOSED
        operator = Operator(False)
        with pytest.raises(CalibrationCancelled):
            await calibrate_sensors(console, operator.ask, operator.show)
        assert operator.questions == ["Power the wheel down now (no game must be in progress)?"]
        assert "*C" not in [line for _, line in wheel.device.received]
        operator = Operator(True, True)
        result = await calibrate_sensors(console, operator.ask, operator.show)
    finally:
        await console.close()
    assert result.ok
    assert "The wheel is powered down." in operator.shown
    assert "*P 0" in [line for _, line in wheel.device.received]


# --- firing position ----------------------------------------------------------------------------------------


async def test_firing_position_set_and_check(wheel: WheelSimulator) -> None:
    console = await connect(wheel)
    try:
        await identify(console)
        before = await check_firing_position(console, lambda t: None)
        operator = Operator(True)
        result = await set_firing_position(console, operator.ask, operator.show, "140")
        after = await check_firing_position(console, lambda t: None)
    finally:
        await console.close()
    assert before.stored == "112"
    assert operator.questions == [
        "Turn the rotor by hand until pocket 0 is at the ball firing position. Done?"
    ]
    assert result.ok and result.stored == "140"
    assert result.message == "ball firing position 140 stored to flash"
    assert after.message == "stored ball firing position: 140"
    host_lines = [line for _, line in wheel.device.received]
    assert host_lines[-4:] == ["*T c 140", "*T f", "*T C", "*T C"]


async def test_firing_position_cancelled_changes_nothing(wheel: WheelSimulator) -> None:
    console = await connect(wheel)
    try:
        await identify(console)
        with pytest.raises(CalibrationCancelled):
            await set_firing_position(console, lambda q: False, lambda t: None, "140")
    finally:
        await console.close()
    assert wheel.device.setup["c"] == "112"
    assert not any(line.startswith("*T c") for _, line in wheel.device.received)


# --- self-test ----------------------------------------------------------------------------------------------


async def test_self_test_passes(wheel: WheelSimulator) -> None:
    console = await connect(wheel)
    try:
        await identify(console)
        operator = Operator()
        outcome = await run_self_test(console, operator.ask, operator.show)
    finally:
        await console.close()
    assert outcome.ok and outcome.codes == [] and outcome.message == "no errors"
    assert operator.shown[-1] == "0: no errors"


async def test_self_test_prints_every_code_in_words() -> None:
    simulator = await started(self_test_codes=(21, 13, 5))
    console = await connect(simulator)
    try:
        await identify(console)
        operator = Operator()
        outcome = await run_self_test(console, operator.ask, operator.show, settle=0.5)
    finally:
        await console.close()
        await simulator.stop()
    assert not outcome.ok
    assert outcome.codes == [21, 13, 5]
    assert outcome.described() == [
        "21: sensor 1 broken off (cannot see the ball)",
        "13: sensor 3 stuck on",
        "5: motor not driving the wheel correctly",
    ]
    assert outcome.message == "3 problem(s) found"
    assert operator.shown[-3:] == outcome.described()


async def test_a_silent_wheel_is_reported(wheel: WheelSimulator) -> None:
    wheel.silence(True)
    console = await connect(wheel, reply_timeout=0.6)
    try:
        with pytest.raises(CalibrationError, match=r"did not answer '\*K' within 0.6 s"):
            await identify(console)
    finally:
        await console.close()


def only_record(directory: Path) -> dict[str, Any]:
    files = sorted(directory.glob("*.json"))
    assert len(files) == 1, files
    record: dict[str, Any] = json.loads(files[0].read_text())
    return record


async def test_cli_wheel_sensors(wheel: WheelSimulator, tmp_path: Path) -> None:
    code, shown = await run_cli(["wheel-sensors", "--port", wheel.url, "--out", str(tmp_path)])
    assert code == EXIT_OK
    assert shown[0] == f"Wheel on {wheel.url}: CAM, firmware SS2 2.52"
    assert "OK: sensors calibrated at positions 127, 1151, 2175" in shown
    record = only_record(tmp_path)
    assert record["schema"] == SCHEMA and record["schema_version"] == 1
    assert record["kind"] == "wheel-sensors" and record["ok"] is True
    assert record["wheel"] == {"identity": "CAM", "firmware": {"S": "SS2 2.52"}}
    assert record["result"]["sensor_positions"] == ["127", "1151", "2175"]
    assert record["result"]["wheel_lines"][-1] == "*C OK : Completed (127, 1151, 2175)"


async def test_cli_wheel_firing_set_and_check(wheel: WheelSimulator, tmp_path: Path) -> None:
    code, shown = await run_cli(
        ["wheel-firing", "set", "--port", wheel.url, "--value", "96", "--out", str(tmp_path / "set")]
    )
    assert code == EXIT_OK
    assert "OK: ball firing position 96 stored to flash" in shown
    assert only_record(tmp_path / "set")["result"]["stored_position"] == "96"
    code, shown = await run_cli(
        ["wheel-firing", "check", "--port", wheel.url, "--out", str(tmp_path / "check")]
    )
    assert code == EXIT_OK
    assert "stored ball firing position: 96" in shown
    record = only_record(tmp_path / "check")
    assert record["kind"] == "wheel-firing-check" and record["result"]["stored_position"] == "96"


async def test_cli_wheel_selftest_with_errors(tmp_path: Path) -> None:
    simulator = await started(self_test_codes=(22,))
    try:
        args = parse(
            ["wheel-selftest", "--port", simulator.url, "--out", str(tmp_path), "--yes", "--settle", "0.5"]
        )
        shown: list[str] = []
        code = await run_procedure(args, args.procedure, show=shown.append)
    finally:
        await simulator.stop()
    assert code == EXIT_FAILED
    assert "22: sensor 2 broken off (cannot see the ball)" in shown
    assert "  22: sensor 2 broken off (cannot see the ball)" in shown
    record = only_record(tmp_path)
    assert record["kind"] == "wheel-selftest" and record["ok"] is False
    assert record["result"]["codes"] == [{"code": 22, "meaning": "sensor 2 broken off (cannot see the ball)"}]


async def test_cli_cancelled_writes_no_record(wheel: WheelSimulator, tmp_path: Path) -> None:
    argv = ["wheel-sensors", "--port", wheel.url, "--out", str(tmp_path)]
    code, shown = await run_cli(argv, ask=lambda q: False)
    assert code == EXIT_USAGE
    assert shown[-1] == "Cancelled: nothing was changed on the wheel."
    assert list(tmp_path.glob("*.json")) == []
