"""The simulated SS2 wheel, and long seeded runs of WheelSession against it with every injectable fault.

The long runs drive the pure `WheelDevice` and `WheelSession` on a simulated clock (hours of wheel time in a
second or two); one short run goes through a real pseudo-terminal with pyserial.

Its unit tests; the integration ones are in `tests/integration/test_wheel_simulator.py`."""

from __future__ import annotations

import itertools
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from drivers.readings import (
    DeviceFault,
    Reading,
    WheelGameStarted,
    WheelGameVoided,
    WheelIdle,
    WheelResult,
)
from drivers.session import DeviceCommand
from drivers.wheel.protocol import (
    ARCADE_AUTOMATIC_MODE,
    NON_ARCADE_MODE,
    OperatingMode,
    WheelFramer,
    WheelState,
    WheelStatus,
    WinningNumberLine,
)
from drivers.wheel.session import WheelSession
from drivers.wheel.simulator import SimulatedGame, WheelDevice, WheelFaults

pytestmark = pytest.mark.unit

T0 = 1_700_000_000.0


def talk(device: WheelDevice, t: float, *lines: str) -> None:
    device.receive(b"".join(line.encode() + b"\r\n" for line in lines), T0 + t)


def output(device: WheelDevice, t: float) -> list[Any]:
    return WheelFramer().feed(device.poll(T0 + t))


def replies(device: WheelDevice, t: float) -> list[str]:
    """What the device said at t, without its automatic status lines."""
    return [m.raw for m in output(device, t) if not isinstance(m, WheelStatus)]


def run_idle(device: WheelDevice, until: float, start: float = 0.0, step: float = 0.1) -> list[Any]:
    framer = WheelFramer()
    out: list[Any] = []
    t = start
    while t <= until:
        out += framer.feed(device.poll(T0 + t))
        t = round(t + step, 6)
    return out


# --- the device on its own ----------------------------------------------------------------------------------


def test_mute_while_booting_then_closed_with_automatic_status() -> None:
    device = WheelDevice(seed=1, boot_seconds=2.0)  # factory mode 1157: automatic status
    device.connected(T0)
    talk(device, 1.0, "*K", "*P 1")
    assert device.poll(T0 + 1.9) == b""
    assert device.received == []  # it did not even hear us
    statuses = [m for m in run_idle(device, 4.0, start=2.0) if isinstance(m, WheelStatus)]
    assert [s.raw for s in statuses] == ["*X;6;001;  ;0;000;0"] * 5  # 2.0, 2.5, ... 4.0
    talk(device, 4.1, "*K")
    assert [m.raw for m in output(device, 4.1)] == ["*K CAM"]


def test_without_automatic_status_it_answers_polls_only() -> None:
    device = WheelDevice(seed=1, mode=NON_ARCADE_MODE & ~OperatingMode.AUTOMATIC_STATUS, boot_seconds=0)
    device.connected(T0)
    assert run_idle(device, 3.0) == []
    talk(device, 3.0, "*X")
    talk(device, 3.05, "*X")  # polls closer than 100 ms apart are ignored
    assert [m.raw for m in output(device, 3.1)] == ["*X;6;001;  ;0;000;0"]


def test_mode_is_refused_while_playing() -> None:
    device = WheelDevice(seed=1, boot_seconds=0, mode=ARCADE_AUTOMATIC_MODE)
    device.connected(T0)
    talk(device, 0.1, "*o 1415", "*P 1")
    assert replies(device, 0.1) == ["*o 1415", "*P OK"]
    assert device.mode == 1415
    run_idle(device, 8.0, start=0.2)
    assert device.state is WheelState.PLACE_BETS  # user start: it waits here for *u
    talk(device, 8.1, "*o 1157")
    assert replies(device, 8.1) == ["*o BUSY"]
    talk(device, 8.2, "*P 1")
    assert replies(device, 8.2) == ["*P NO"]  # already running


def test_user_start_waits_in_state_2_and_automatic_start_does_not() -> None:
    waiting = WheelDevice(seed=2, boot_seconds=0, mode=1415)
    waiting.connected(T0)
    talk(waiting, 0.1, "*P 1")
    run_idle(waiting, 120.0, start=0.1)
    assert waiting.state is WheelState.PLACE_BETS and len(waiting.games) == 1
    talk(waiting, 120.1, "*u 3")
    messages = run_idle(waiting, 180.0, start=120.1)
    assert "*u OK" in [m.raw for m in messages]
    assert waiting.games[0].direction.reading_name == "anticlockwise"
    assert waiting.games[0].outcome == "result"

    automatic = WheelDevice(seed=2, boot_seconds=0, mode=1157)
    automatic.connected(T0)
    talk(automatic, 0.1, "*P 1")
    run_idle(automatic, 300.0, start=0.1)
    assert len(automatic.games) >= 8
    directions = [g.direction for g in automatic.games]
    assert all(a != b for a, b in itertools.pairwise(directions))  # mode bit 1


def test_single_line_on_entering_state_5_and_its_absence_with_bit_16() -> None:
    for mode, expect_line in ((1157, True), (1157 | 16, False)):
        device = WheelDevice(
            seed=3,
            boot_seconds=0,
            mode=mode,
            numbers=["9", "00", "25"],
            pockets=(*[str(n) for n in range(37)], "00"),
        )
        device.connected(T0)
        talk(device, 0.1, "*P 1")
        messages = run_idle(device, 200.0, start=0.1)
        lines = [m for m in messages if isinstance(m, WinningNumberLine)]
        assert [g.number for g in device.games[:3]] == ["9", "00", "25"]
        if expect_line:
            assert [line.raw for line in lines[:3]] == [" 9", "00", "25"]
            # the line comes before any status of state 5
            fives = [i for i, m in enumerate(messages) if isinstance(m, WheelStatus) and m.state == 5]
            first_five = fives[0]
            assert messages.index(lines[0]) < first_five
        else:
            assert lines == []


def test_seeded_runs_repeat_and_rotor_stays_in_range() -> None:
    def run(seed: int) -> WheelDevice:
        device = WheelDevice(seed=seed, boot_seconds=0, mode=1157)
        device.connected(T0)
        talk(device, 0.1, "*P 1")
        run_idle(device, 400.0, start=0.1)
        return device

    a, b, c = run(11), run(11), run(12)
    assert a.sent == b.sent
    assert a.sent != c.sent
    speeds = [
        m.speed
        for m in WheelFramer().feed("".join(line + "\r\n" for _, line in a.sent).encode("latin-1"))
        if isinstance(m, WheelStatus) and m.state in (3, 4, 5)
    ]
    assert speeds and all(150 <= s <= 260 for s in speeds)
    assert Counter(g.outcome for g in a.games[:-1]) == {"result": len(a.games) - 1}


def test_setup_calibration_and_self_test_answers() -> None:
    device = WheelDevice(seed=1, boot_seconds=0, self_test_codes=(21, 13), calibration_broken_sensors=(2,))
    device.connected(T0)
    talk(device, 0.1, "*T C", "*T c 140", "*T C", "*T f", "*S", "*V", "*v")
    assert replies(device, 0.1) == [
        "*T c 112",
        "*T c 140",
        "*T c 140",
        "*T f OK",
        "*S SS2 2.52",
        "*V 2.52",
        "*v 1.07",
    ]
    talk(device, 0.2, "*C")
    messages = [m.raw for m in run_idle(device, 3.0, start=0.2) if m.raw.startswith("*C")]
    assert messages == [
        "*C OK : Calibrating sensor positions",
        "*C BALL : OK Clockwise",
        "*C FAIL : Sensor(s) 2 Broken",
    ]
    talk(device, 3.1, "*F")
    messages = [m.raw for m in run_idle(device, 7.0, start=3.1) if m.raw.startswith("*F")]
    assert messages == ["*F 21", "*F 13"]
    talk(device, 7.1, "*P 1")
    talk(device, 7.2, "*F", "*C")
    assert replies(device, 7.2) == ["*P OK", "*F BUSY", "*C FAIL : Wheel not idle"]


# --- long runs: the session against the simulated wheel -----------------------------------------------------


@dataclass
class TableRun:
    """A host that behaves like a studio's: starts each game a second after the wheel shows state 2,
    alternating the direction, and (as the operator) repairs and powers up a wheel that stopped."""

    device: WheelDevice
    session: WheelSession = field(default_factory=lambda: WheelSession("wheel"))
    readings: list[Reading] = field(default_factory=list)

    def run(self, seconds: float, step: float = 0.1) -> list[Reading]:
        device, session = self.device, self.session
        t = T0
        device.connected(t)
        self.readings += session.connection_made(t)
        start_at: float | None = None
        power_up_at: float | None = None
        clockwise = True
        while t < T0 + seconds:
            t = round(t + step, 6)
            new = session.data_received(device.poll(t), t) + session.tick(t)
            for reading in new:
                if isinstance(reading, WheelGameStarted):
                    start_at = t + 1.0
                if isinstance(reading, WheelIdle) and reading.state == 6:
                    power_up_at = t + 5.0
            self.readings += new
            if start_at is not None and t >= start_at:
                direction = "clockwise" if clockwise else "anticlockwise"
                clockwise = not clockwise
                session.command(DeviceCommand("start_game", {"direction": direction}), t)
                start_at = None
            if power_up_at is not None and t >= power_up_at:
                device.repair()
                session.command(DeviceCommand("power", {"on": True}), t)
                power_up_at = None
            sent = session.data_to_send()
            if sent:
                device.receive(sent, t)
        return self.readings


def outcomes_per_game(readings: list[Reading]) -> list[list[tuple[str, ...]]]:
    """The readings that end a game, grouped by the game (a WheelGameStarted opens each)."""
    games: list[list[tuple[str, ...]]] = []
    for reading in readings:
        if isinstance(reading, WheelGameStarted):
            games.append([])
        elif isinstance(reading, WheelResult):
            assert games, "a result before any game started"
            games[-1].append(("result", reading.number, str(reading.spin)))
        elif isinstance(reading, WheelGameVoided):
            games[-1].append(("voided", reading.reason))
        elif isinstance(reading, DeviceFault) and reading.code.startswith("RESULT_"):
            games[-1].append(("fault", reading.code))
        elif isinstance(reading, WheelIdle) and reading.during_game:
            games[-1].append(("stopped",))
    return games


def expected_per_game(games: list[SimulatedGame]) -> list[list[tuple[str, ...]]]:
    expected: list[list[tuple[str, ...]]] = []
    for game in games:
        if game.outcome == "result":
            if game.single_line_mismatch:
                expected.append([("fault", "RESULT_MISMATCH")])
            else:
                assert game.number is not None
                expected.append([("result", game.number, str(game.spin))])
        elif game.outcome in ("miss-spin", "ball not detected"):
            expected.append([("voided", game.outcome)])
        else:
            assert game.outcome in ("powered down", "sensor fault") or game.outcome.startswith("error "), game
            expected.append([("stopped",)])
    return expected


def finished(device: WheelDevice) -> list[SimulatedGame]:
    return [g for g in device.games if g.outcome != "in play"]


def check_run(device: WheelDevice, readings: list[Reading]) -> None:
    games = finished(device)
    actual = outcomes_per_game(readings)[: len(games)]
    assert actual == expected_per_game(games)
    results = [r for r in readings if isinstance(r, WheelResult)]
    assert len(results) == sum(1 for g in games if g.outcome == "result" and not g.single_line_mismatch)


def test_long_run_without_faults() -> None:
    device = WheelDevice(seed=21, boot_seconds=2.0)
    readings = TableRun(device).run(3 * 3600)
    games = finished(device)
    assert len(games) > 250
    check_run(device, readings)
    assert not any(isinstance(r, DeviceFault) for r in readings)
    spins = [g.spin for g in games]
    assert spins[:3] == [1, 2, 3] and max(spins) == 256 and 1 in spins[256:]  # the counter wraps


@pytest.mark.parametrize(
    ("name", "faults"),
    [
        ("miss-spin", WheelFaults(miss_spin_rate=0.25)),
        ("lost ball", WheelFaults(lost_ball_rate=0.25)),
        ("lost ball as state 7", WheelFaults(lost_ball_rate=0.25, lost_ball_as_state_7=True)),
        ("failed launches", WheelFaults(failed_launch_rate=0.3, launch_flag_in_rim_rate=0.3)),
        ("sensor faults", WheelFaults(sensor_fault_rate=0.15)),
        ("error codes", WheelFaults(error_code_rate=0.15)),
        ("power-downs", WheelFaults(power_down_rate=0.15)),
        ("mismatches", WheelFaults(mismatch_rate=0.2)),
        ("stuck spin numbers", WheelFaults(stuck_spin_rate=0.5)),
        ("line noise", WheelFaults(noise_rate=0.2)),
        (
            "everything at once",
            WheelFaults(
                miss_spin_rate=0.08,
                lost_ball_rate=0.08,
                failed_launch_rate=0.1,
                launch_flag_in_rim_rate=0.1,
                sensor_fault_rate=0.04,
                error_code_rate=0.04,
                power_down_rate=0.04,
                mismatch_rate=0.05,
                stuck_spin_rate=0.3,
                noise_rate=0.1,
            ),
        ),
    ],
)
def test_long_run_with_faults(name: str, faults: WheelFaults) -> None:
    device = WheelDevice(seed=zlib.crc32(name.encode()), faults=faults)
    readings = TableRun(device).run(2 * 3600)
    games = finished(device)
    assert len(games) > 80
    kinds = Counter(g.outcome if not g.single_line_mismatch else "mismatch" for g in games)
    assert len(kinds) >= (1 if name in ("failed launches", "stuck spin numbers", "line noise") else 2), kinds
    check_run(device, readings)


def test_failed_launch_windows_against_the_simulator() -> None:
    device = WheelDevice(seed=4)
    run = TableRun(device)
    device.fail_next_launch(6.0)  # flag 8 in state 2 while retrying: not a fault
    run.run(60)
    device.flag_launch_in_rim_next(2.0)  # a false trigger in the first 3 s of state 3: ignored
    run.run(120)
    assert not any(isinstance(r, DeviceFault) for r in run.readings)
    device.flag_launch_in_rim_next(5.0)  # persists: a fault, cleared when the flag goes
    run.run(200)
    codes = [r.code for r in run.readings if isinstance(r, DeviceFault)]
    assert codes == ["LAUNCH_FAILED"]
    check_run(device, run.readings)


def test_miss_spin_is_voided_and_the_wheel_respins_after_star_r() -> None:
    device = WheelDevice(seed=6)
    device.miss_spin_next()
    readings = TableRun(device).run(150)
    assert [g.outcome for g in device.games[:2]] == ["miss-spin", "result"]
    assert device.games[0].spin == device.games[1].spin  # a re-spin keeps the spin number
    assert "*R" in [line for _, line in device.received]
    check_run(device, readings)


def test_destructive_line_damage_never_gives_a_wrong_or_second_result() -> None:
    device = WheelDevice(seed=8, faults=WheelFaults(corrupt_rate=0.08, noise_rate=0.05))
    readings = TableRun(device).run(2 * 3600)
    games = finished(device)
    per_game = outcomes_per_game(readings)
    assert len(per_game) >= len(games) * 0.9  # a damaged state-2 line only delays the start
    truth = {g.spin: g.number for g in games}  # spins do not repeat within this run
    results = [r for r in readings if isinstance(r, WheelResult)]
    assert len(results) > 0.6 * len(games)
    for result in results:
        assert result.number == truth[result.spin]
    assert len({r.spin for r in results}) == len(results)
    # every completed spin gave its result or an integrity fault that tells the operator
    integrity = [r for r in readings if isinstance(r, DeviceFault) and r.code.startswith("RESULT_")]
    completed = [g for g in games if g.outcome == "result"]
    assert len(results) + len(integrity) >= len(completed) - 1
