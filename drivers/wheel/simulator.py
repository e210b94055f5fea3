"""A simulated Cammegh SS2 wheel that behaves like the one in the field, faults included.

`WheelDevice` is the pure core (the `SimulatedDevice` protocol of `drivers.sim_port`): host bytes and the
time go in, the wheel's bytes come out of `poll`. It is mute for a couple of seconds after power-on, starts
closed (state 6), powers up on `*P 1`, refuses `*o` while a game runs, sends its status every 500 ms when the
mode says so (else answers `*X`), waits in state 2 for `*u` in user-start mode (as field wheels do: the
result is followed by state 2 at once, and the game only goes on when the host says so), drifts its rotor
between 16 and 25 rpm, alternates direction with mode bit 1, and sends the bare winning-number line on
entering state 5. Every duration is divided by `speed`, so a test can run a wheel eight times faster.

Faults are injected by one-shot methods (`miss_spin_next()`, `lose_ball_next()`...) or at random with the
rates of a `WheelFaults`. Every game is written to `games` (what the wheel really did), every line to `sent`
and `received`, so a test can hold the driver's readings against the truth.

`WheelSimulator` serves a `WheelDevice` on a pty or TCP through `drivers.sim_port.SimulatedPort`.
"""

from __future__ import annotations

import heapq
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from drivers.sim_port import PortedSimulator, SimulatedPort
from drivers.wheel.protocol import (
    ARCADE_AUTOMATIC_MODE,
    Direction,
    OperatingMode,
    WarningFlags,
    WheelState,
    pocket_text,
)

S = WheelState
EUROPEAN_POCKETS: tuple[str, ...] = tuple(str(n) for n in range(37))

#: Bytes that never occur in a real packet: noise made of them can never be read as a message.
_NOISE_BYTES = bytes([*range(0x01, 0x0A), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x80, 0x100)])


@dataclass(frozen=True)
class WheelTimings:
    """Seconds (at speed 1) for each phase, as (shortest, longest); drawn uniformly per game."""

    before_game: tuple[float, float] = (3.0, 5.0)  # state 1 after power-up
    games_per_hour_delay: tuple[float, float] = (2.0, 3.0)  # state 1 between games (mode bit 1024)
    positioning: tuple[float, float] = (5.0, 8.0)  # state 2: slow down, reverse, speed up, fire
    ball_in_rim: tuple[float, float] = (9.0, 11.0)  # state 3
    no_more_bets: tuple[float, float] = (4.0, 6.0)  # state 4
    winning_number: tuple[float, float] = (3.5, 4.5)  # state 5
    status_period: float = 0.5
    fault_to_power_down: float = 3.0  # a sensor or component fault: the wheel stops, then powers down
    lost_ball_power_down: float = 75.0  # flag 1 for this long: the wheel stops by itself
    self_test: float = 3.0  # a real self-test takes up to 5 minutes
    calibration_step: float = 0.5


@dataclass(frozen=True)
class WheelFaults:
    """Random faults, as probabilities per game (per line for noise). All off by default."""

    failed_launch_rate: float = 0.0  # flag 8 in state 2 while the controller retries, then it launches
    failed_launch_seconds: float = 4.0
    launch_flag_in_rim_rate: float = 0.0  # flag 8 at the start of state 3 (a false trigger if < 3 s)
    launch_flag_in_rim_seconds: float = 2.0
    miss_spin_rate: float = 0.0  # state 3 + flag 2, until the host sends *R
    lost_ball_rate: float = 0.0  # state 4 + flag 1 (or state 7), until *R or 75 s
    lost_ball_as_state_7: bool = False  # firmware 2.52+ may report state 7 instead
    sensor_fault_rate: float = 0.0  # flag 4, the game stops, the wheel powers down (latched until repair)
    error_code_rate: float = 0.0  # `*F <code>` (mode bit 256), then a power-down (latched until repair)
    error_codes: tuple[int, ...] = (5, 6, 21, 22, 23)
    power_down_rate: float = 0.0  # silent power-down to state 6 in the middle of a game
    mismatch_rate: float = 0.0  # the single line names another pocket than the status
    noise_rate: float = 0.0  # per line: garbage added around it (the line itself survives)
    corrupt_rate: float = 0.0  # per line: the line itself is damaged (unreadable) or loses its line end
    stuck_spin_rate: float = 0.0  # the spin counter does not advance for a new game


@dataclass
class SimulatedGame:
    """What the wheel really did in one game (a re-spin after *R is a new game with the same spin)."""

    index: int
    spin: int
    started_at: float
    direction: Direction = Direction.CLOCKWISE
    launched: bool = False
    number: str | None = None  # the pocket the ball came to rest in
    outcome: str = "in play"  # result | miss-spin | ball not detected | powered down | sensor fault | error N
    single_line: str | None = None  # the bare line as sent (before any line damage)
    single_line_mismatch: bool = False
    damaged_lines: int = 0  # lines of state 5 (single line or status) that left the wheel damaged


@dataclass
class _Pending:
    """One-shot faults for the coming game(s)."""

    failed_launch: float | None = None
    launch_flag_in_rim: float | None = None
    miss_spin: bool = False
    lost_ball: bool = False
    sensor_fault: bool = False
    error_code: int | None = None
    power_down: bool = False
    mismatch: bool = False
    stuck_spin: bool = False


class WheelDevice:
    """The pure simulated wheel controller (port 1: the one with the single winning-number line)."""

    def __init__(
        self,
        *,
        seed: int | None = None,
        speed: float = 1.0,
        mode: int = ARCADE_AUTOMATIC_MODE,
        boot_seconds: float = 2.0,
        numbers: Iterable[str | int] = (),
        pockets: Sequence[str] = EUROPEAN_POCKETS,
        faults: WheelFaults | None = None,
        timings: WheelTimings | None = None,
        self_test_codes: Sequence[int] = (),
        calibration_broken_sensors: Sequence[int] = (),
        ball_on_zero: bool = True,
        versions: dict[str, str] | None = None,
        setup: dict[str, str] | None = None,
        initial_spin: int = 1,
    ) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.rng = random.Random(seed)
        self.speed = speed
        self.mode = OperatingMode(int(mode))  # non-volatile: survives power cycles
        self.boot_seconds = boot_seconds
        self.pockets = tuple(pockets)
        self._scripted = [str(n) for n in numbers]
        self.faults = faults or WheelFaults()
        self.timings = timings or WheelTimings()
        self.self_test_codes = tuple(self_test_codes)
        self.calibration_broken_sensors = tuple(calibration_broken_sensors)
        self.ball_on_zero = ball_on_zero
        self.versions = {"S": "SS2 2.52", "V": "2.52", "v": "1.07", **(versions or {})}
        self.setup = {"c": "112", **(setup or {})}  # lower-case keys: the wheel answers in lower case
        # what the wheel shows
        self.state = S.CLOSED
        self.spin = initial_spin
        self.winning: str | None = None
        self.flags = WarningFlags(0)
        self.direction = Direction.CLOCKWISE
        self.rpm = 0.0
        self.latched_fault = False  # a component fault: *P 1 is refused until `repair()`
        # truth for tests
        self.games: list[SimulatedGame] = []
        self.sent: list[tuple[float, str]] = []  # lines as sent (damaged ones as damaged)
        self.received: list[tuple[float, str]] = []  # host lines
        self.powered_on = False

        self._target_rpm = 18.0
        self._boot_until: float | None = None
        self._out = bytearray()
        self._host_buffer = bytearray()
        self._events: list[tuple[float, int, int | None, Callable[[float], None]]] = []
        self._event_seq = 0
        self._epoch = 0  # bumped on every state change: events of an abandoned phase are ignored
        self._next_status_at: float | None = None
        self._last_poll_at: float | None = None
        self._waiting_for_user = False
        self._game: SimulatedGame | None = None
        self._pending = _Pending()
        self._busy_until: float | None = None  # self-test or calibration running
        self._spin_started = False  # the first game after power-on keeps the power-on spin number
        self._now = 0.0

    # -- SimulatedDevice -----------------------------------------------------------------------------

    def connected(self, now: float) -> None:
        """First call: mains power on (the controller boots). Later calls: the cable was plugged again."""
        if not self.powered_on:
            self.power_cycle(now)

    def receive(self, data: bytes, now: float) -> None:
        self._advance(now)
        if not self._ready(now):
            return  # still booting: the controller does not listen yet
        self._host_buffer += data
        while True:
            ends = [i for i in (self._host_buffer.find(b"\r"), self._host_buffer.find(b"\n")) if i >= 0]
            if not ends:
                if len(self._host_buffer) > 256:
                    self._host_buffer.clear()
                return
            end = min(ends)
            line = bytes(self._host_buffer[:end]).decode("latin-1")
            del self._host_buffer[: end + 1]
            if line:
                self.received.append((now, line))
                self._command(line.strip(), now)

    def poll(self, now: float) -> bytes:
        self._advance(now)
        out = bytes(self._out)
        self._out.clear()
        return out

    # -- operator and test hooks ---------------------------------------------------------------------------

    def power_cycle(self, now: float) -> None:
        """Mains off and on: the controller boots (mute), then sits closed in state 6."""
        self.powered_on = True
        self._now = now
        self._boot_until = now + self.boot_seconds
        self._events.clear()
        self._epoch += 1
        self._end_game("powered down")
        self.state = S.CLOSED
        self.flags = WarningFlags(WarningFlags.SENSOR_OR_MOTOR) if self.latched_fault else WarningFlags(0)
        self.rpm = 0.0
        self._waiting_for_user = False
        self._busy_until = None
        self._spin_started = False
        self._next_status_at = None
        self._out.clear()
        self._host_buffer.clear()

    def repair(self) -> None:
        """A technician fixed the component fault: the wheel can be powered up again."""
        self.latched_fault = False
        self.flags &= ~WarningFlags.SENSOR_OR_MOTOR

    def fail_next_launch(self, seconds: float | None = None) -> None:
        """The next launch fails (flag 8 in state 2) for `seconds`, then the ball goes."""
        self._pending.failed_launch = self.faults.failed_launch_seconds if seconds is None else seconds

    def flag_launch_in_rim_next(self, seconds: float | None = None) -> None:
        """Flag 8 shows during the first `seconds` of the next state 3."""
        default = self.faults.launch_flag_in_rim_seconds
        self._pending.launch_flag_in_rim = default if seconds is None else seconds

    def miss_spin_next(self) -> None:
        self._pending.miss_spin = True

    def lose_ball_next(self) -> None:
        self._pending.lost_ball = True

    def sensor_fault_next(self) -> None:
        self._pending.sensor_fault = True

    def error_code_next(self, code: int) -> None:
        self._pending.error_code = code

    def power_down_next(self) -> None:
        self._pending.power_down = True

    def mismatch_next(self) -> None:
        self._pending.mismatch = True

    def stick_spin_next(self) -> None:
        self._pending.stuck_spin = True

    def power_down(self, now: float) -> None:
        """Silent power-down now (as after a fault with mode bit 256 off)."""
        self._advance(now)
        self._enter(S.CLOSED, now)

    # -- time ----------------------------------------------------------------------------------------------

    def _ready(self, now: float) -> bool:
        return self._boot_until is not None and now >= self._boot_until

    def _scaled(self, seconds: float) -> float:
        return seconds / self.speed

    def _draw(self, bounds: tuple[float, float]) -> float:
        return self._scaled(self.rng.uniform(*bounds))

    def _at(self, when: float, action: Callable[[float], None], *, phase_bound: bool = True) -> None:
        self._event_seq += 1
        heapq.heappush(self._events, (when, self._event_seq, self._epoch if phase_bound else None, action))

    def _advance(self, now: float) -> None:
        if self._boot_until is None:
            return
        if self._next_status_at is None and now >= self._boot_until:
            self._next_status_at = self._boot_until
        while True:
            next_event = self._events[0][0] if self._events else None
            next_status = self._next_status_at
            candidates = [t for t in (next_event, next_status) if t is not None and t <= now]
            if not candidates:
                break
            when = min(candidates)
            self._now = when
            if next_event is not None and next_event == when:
                _, _, epoch, action = heapq.heappop(self._events)
                if epoch is None or epoch == self._epoch:
                    action(when)
                continue
            assert self._next_status_at is not None
            self._next_status_at += self._scaled(self.timings.status_period)
            self._drift_rotor()
            if self.mode & OperatingMode.AUTOMATIC_STATUS:
                self._emit(self._status_line(), when)
        self._now = now

    # -- output ----------------------------------------------------------------------------------------------

    def _status_line(self) -> str:
        winning = "  " if self.winning is None else pocket_text(self.winning)
        speed = min(999, round(self.rpm * 10))
        return (
            f"*X;{int(self.state)};{self.spin:03d};{winning};{int(self.flags):X};{speed:03d};"
            f"{int(self.direction)}"
        )

    def _emit(self, line: str, now: float, *, result_line: bool = False) -> None:
        data = line.encode("latin-1") + b"\r\n"
        faults = self.faults
        if faults.corrupt_rate and self.rng.random() < faults.corrupt_rate:
            data = self._damage(data)
            if result_line and self._game is not None:
                self._game.damaged_lines += 1
        if faults.noise_rate and self.rng.random() < faults.noise_rate:
            data = self._add_noise(data)
        self.sent.append((now, data.decode("latin-1").rstrip("\r\n")))
        self._out += data

    def _damage(self, data: bytes) -> bytes:
        line = bytearray(data[:-2])
        if self.rng.random() < 0.3:
            return bytes(line)  # the line end is lost: it runs into the next line
        line[self.rng.randrange(len(line))] = self.rng.choice(_NOISE_BYTES)
        return bytes(line) + b"\r\n"

    def _add_noise(self, data: bytes) -> bytes:
        garbage = bytes(self.rng.choice(_NOISE_BYTES) for _ in range(self.rng.randint(1, 6)))
        kind = self.rng.random()
        if kind < 0.4 and data.startswith(b"*"):
            return garbage + data  # a fragment in front of the packet
        if kind < 0.8:
            return garbage + b"\r\n" + data  # a line of garbage of its own
        return garbage * 40 + b"\n" + data  # a long burst (a cable being moved)

    # -- host commands ---------------------------------------------------------------------------------------

    def _command(self, line: str, now: float) -> None:
        if not line.startswith("*") or len(line) < 2:
            return
        command, rest = line[1], line[2:].strip()
        if command == "X":
            if self._last_poll_at is None or now - self._last_poll_at >= 0.1:  # faster polls are ignored
                self._last_poll_at = now
                self._emit(self._status_line(), now)
        elif command == "o":
            self._set_mode(rest, now)
        elif command == "P":
            self._power(rest, now)
        elif command == "R":
            self._emit("*R OK", now)
            self._restart(now)
        elif command == "u":
            self._emit("*u OK", now)
            if self.state is S.PLACE_BETS and self._waiting_for_user and rest in ("1", "3"):
                self._waiting_for_user = False
                self._begin_positioning(now, Direction.CLOCKWISE if rest == "1" else Direction.ANTICLOCKWISE)
        elif command == "F":
            self._self_test(now)
        elif command == "T":
            self._setup_parameter(rest, now)
        elif command == "C":
            self._calibrate(now)
        elif command == "K":
            self._emit("*K CAM", now)
        elif command in self.versions:
            self._emit(f"*{command} {self.versions[command]}", now)

    def _idle(self, now: float) -> bool:
        busy = self._busy_until is not None and now < self._busy_until
        return self.state in (S.BEFORE_GAME, S.CLOSED) and not busy

    def _set_mode(self, rest: str, now: float) -> None:
        if not rest.isdigit():
            return
        if not self._idle(now):
            self._emit("*o BUSY", now)
            return
        self.mode = OperatingMode(int(rest))
        self._emit(f"*o {int(self.mode)}", now)

    def _power(self, rest: str, now: float) -> None:
        if rest == "1":
            if self.state is not S.CLOSED or self.latched_fault:
                self._emit("*P NO", now)
                return
            self._emit("*P OK", now)
            self._enter(S.BEFORE_GAME, now)
        elif rest == "0":
            if self.state is S.CLOSED:
                self._emit("*P NO", now)
                return
            self._emit("*P OK", now)
            self._enter(S.CLOSED, now)

    def _restart(self, now: float) -> None:
        """`*R`: the host acknowledged a void; the wheel re-spins from state 2 (same spin number)."""
        if self.state not in (S.BALL_IN_RIM, S.NO_MORE_BETS, S.BALL_NOT_DETECTED):
            return
        self.flags &= ~(WarningFlags.SAME_DIRECTION | WarningFlags.BALL_NOT_DETECTED)
        if self._game is not None and self._game.outcome == "in play":
            self._game.outcome = "voided by host"
        self._enter(S.PLACE_BETS, now, respin=True)

    def _self_test(self, now: float) -> None:
        if self.state is not S.CLOSED or not self._idle(now):
            self._emit("*F BUSY", now)
            return
        done = now + self._scaled(self.timings.self_test)
        self._busy_until = done

        def report(at: float) -> None:
            for code in self.self_test_codes or (0,):
                self._emit(f"*F {code}", at)

        self._at(done, report, phase_bound=False)

    def _setup_parameter(self, rest: str, now: float) -> None:
        parameter, _, value = rest.partition(" ")
        if len(parameter) != 1:
            return
        key = parameter.lower()
        if key == "f":
            self._emit("*T f OK", now)
        elif value:
            self.setup[key] = value.strip()
            self._emit(f"*T {key} {self.setup[key]}", now)
        else:
            self._emit(f"*T {key} {self.setup.get(key, '0')}", now)

    def _calibrate(self, now: float) -> None:
        if self.state is not S.CLOSED or not self._idle(now):
            self._emit("*C FAIL : Wheel not idle", now)
            return
        step = self._scaled(self.timings.calibration_step)
        self._busy_until = now + 4 * step
        lines = ["*C OK : Calibrating sensor positions"]
        lines.append("*C BALL : OK Clockwise" if self.ball_on_zero else "*C BALL : No ball direction found")
        if not self.ball_on_zero:
            lines.append("*C FAIL : Ball not found")
        elif self.calibration_broken_sensors:
            listed = ", ".join(str(s) for s in self.calibration_broken_sensors)
            lines.append(f"*C FAIL : Sensor(s) {listed} Broken")
        else:
            lines.append("*C OK : Completed (127, 1151, 2175)")
        for index, text in enumerate(lines):
            self._at(now + (index + 1) * step, self._emitter(text), phase_bound=False)

    def _emitter(self, text: str) -> Callable[[float], None]:
        return lambda at: self._emit(text, at)

    # -- the game --------------------------------------------------------------------------------------------

    def _enter(self, state: WheelState, now: float, *, respin: bool = False) -> None:
        previous = self.state
        self.state = state
        self._epoch += 1
        if state is S.BEFORE_GAME:
            self.flags = WarningFlags(0)
            bounds = self.timings.before_game if previous is S.CLOSED else self.timings.games_per_hour_delay
            if previous is S.CLOSED:
                self._target_rpm = self.rng.uniform(16.0, 25.0)
            self._at(now + self._draw(bounds), lambda at: self._enter(S.PLACE_BETS, at))
        elif state is S.PLACE_BETS:
            self._new_game(now, respin=respin)
        elif state is S.BALL_IN_RIM:
            self._ball_in_rim(now)
        elif state is S.NO_MORE_BETS:
            self._no_more_bets(now)
        elif state is S.WINNING_NUMBER:
            self._winning_number(now)
        elif state is S.CLOSED:
            self._end_game("powered down")
            self._waiting_for_user = False
            self.flags = WarningFlags(WarningFlags.SENSOR_OR_MOTOR) if self.latched_fault else WarningFlags(0)
        elif state is S.BALL_NOT_DETECTED:
            pass

    def _new_game(self, now: float, *, respin: bool) -> None:
        pending = self._pending
        if not respin:
            stuck = pending.stuck_spin or self._chance(self.faults.stuck_spin_rate)
            pending.stuck_spin = False
            if self._spin_started and not stuck:
                self.spin = self.spin % 256 + 1
            self._spin_started = True
        self.flags = WarningFlags(0)
        self._game = SimulatedGame(index=len(self.games), spin=self.spin, started_at=now)
        self.games.append(self._game)
        if self.mode & OperatingMode.USER_GAME_START:
            self._waiting_for_user = True  # the rotor keeps turning; the host says when
            return
        direction = self.direction
        if self.mode & OperatingMode.REVERSE_EACH_GAME and not respin and len(self.games) > 1:
            direction = Direction(1 - int(self.direction))
        self._begin_positioning(now, direction)

    def _begin_positioning(self, now: float, direction: Direction) -> None:
        """State 2 after the start: slow to a stop, turn the requested way, speed up, fire the ball."""
        assert self._game is not None
        self._game.direction = direction
        self._target_rpm = 0.0
        duration = self._draw(self.timings.positioning)
        self._at(now + duration / 3, lambda at: self._turn(direction))
        self._at(now + duration / 2, lambda at: self._speed_up())
        fire_at = now + duration
        failed = self._pending.failed_launch
        if failed is None and self._chance(self.faults.failed_launch_rate):
            failed = self.faults.failed_launch_seconds
        self._pending.failed_launch = None
        if failed:
            self._at(fire_at, lambda at: self._set_flag(WarningFlags.LAUNCH_FAILED))
            fire_at += self._scaled(failed)
        self._at(fire_at, self._launch)

    def _turn(self, direction: Direction) -> None:
        self.direction = direction

    def _speed_up(self) -> None:
        self._target_rpm = self.rng.uniform(16.0, 25.0)

    def _launch(self, now: float) -> None:
        self.flags &= ~WarningFlags.LAUNCH_FAILED
        if self._game is not None:
            self._game.launched = True
        self._enter(S.BALL_IN_RIM, now)

    def _ball_in_rim(self, now: float) -> None:
        pending, faults = self._pending, self.faults
        flag_seconds = pending.launch_flag_in_rim
        if flag_seconds is None and self._chance(faults.launch_flag_in_rim_rate):
            flag_seconds = faults.launch_flag_in_rim_seconds
        pending.launch_flag_in_rim = None
        if flag_seconds:
            self._set_flag(WarningFlags.LAUNCH_FAILED)
            clear_at = now + self._scaled(flag_seconds)
            self._at(clear_at, lambda at: self._clear_flag(WarningFlags.LAUNCH_FAILED))
        if self._take("miss_spin", faults.miss_spin_rate):
            # The ball turns with the rotor: the wheel holds the game until the host acknowledges with *R.
            self._at(now + self._scaled(1.5), lambda at: self._miss_spin())
            return
        if self._take_component_fault(now):
            return
        self._at(now + self._draw(self.timings.ball_in_rim), lambda at: self._enter(S.NO_MORE_BETS, at))

    def _miss_spin(self) -> None:
        self._set_flag(WarningFlags.SAME_DIRECTION)
        if self._game is not None:
            self._game.outcome = "miss-spin"

    def _no_more_bets(self, now: float) -> None:
        faults = self.faults
        if self._take("lost_ball", faults.lost_ball_rate):
            self._at(now + self._scaled(1.0), lambda at: self._lose_ball(at))
            return
        if self._take_component_fault(now):
            return
        self._at(now + self._draw(self.timings.no_more_bets), lambda at: self._enter(S.WINNING_NUMBER, at))

    def _lose_ball(self, now: float) -> None:
        if self._game is not None:
            self._game.outcome = "ball not detected"
        if self.faults.lost_ball_as_state_7:
            self.state = S.BALL_NOT_DETECTED
            self._epoch += 1
        else:
            self._set_flag(WarningFlags.BALL_NOT_DETECTED)
        self._at(now + self._scaled(self.timings.lost_ball_power_down), lambda at: self._enter(S.CLOSED, at))

    def _take_component_fault(self, now: float) -> bool:
        """Maybe a fault stops this game here (states 3 and 4 share the chances)."""
        faults, pending = self.faults, self._pending
        half = 0.5  # each of states 3 and 4 draws half of a per-game rate
        if self._take("sensor_fault", faults.sensor_fault_rate * half):
            self._at(now + self._scaled(1.0), lambda at: self._sensor_fault(at))
            return True
        code = pending.error_code
        if code is None and self._chance(faults.error_code_rate * half):
            code = self.rng.choice(faults.error_codes)
        pending.error_code = None
        if code is not None:
            self._at(now + self._scaled(1.0), lambda at: self._error_code(code, at))
            return True
        if self._take("power_down", faults.power_down_rate * half):
            if self._game is not None:
                self._game.outcome = "powered down"
            self._at(now + self._scaled(1.0), lambda at: self._enter(S.CLOSED, at))
            return True
        return False

    def _sensor_fault(self, now: float) -> None:
        self.latched_fault = True
        self._set_flag(WarningFlags.SENSOR_OR_MOTOR)
        self.rpm = 0.0
        self._target_rpm = 0.0
        if self._game is not None:
            self._game.outcome = "sensor fault"
        self._at(now + self._scaled(self.timings.fault_to_power_down), lambda at: self._enter(S.CLOSED, at))

    def _error_code(self, code: int, now: float) -> None:
        self.latched_fault = True
        if self._game is not None:
            self._game.outcome = f"error {code}"
        if self.mode & OperatingMode.ERRORS_DURING_PLAY:
            self._emit(f"*F {code}", now)
        self._at(now + self._scaled(0.5), lambda at: self._enter(S.CLOSED, at))

    def _winning_number(self, now: float) -> None:
        number = self._scripted.pop(0) if self._scripted else self.rng.choice(self.pockets)
        self.winning = number
        game = self._game
        mismatch = self._take("mismatch", self.faults.mismatch_rate)
        line_number = self.rng.choice([p for p in self.pockets if p != number]) if mismatch else number
        if game is not None:
            game.number = number
            game.outcome = "result"
            game.single_line_mismatch = mismatch
        if not self.mode & OperatingMode.DISABLE_SINGLE_WINNING_LINE:
            line = pocket_text(line_number)
            if game is not None:
                game.single_line = line
            self._emit(line, now, result_line=True)
        after = S.BEFORE_GAME if self.mode & OperatingMode.GAMES_PER_HOUR_DELAY_5_TO_1 else S.PLACE_BETS
        self._at(now + self._draw(self.timings.winning_number), lambda at: self._enter(after, at))

    def _end_game(self, outcome: str) -> None:
        game = self._game
        if game is not None and game.outcome == "in play":
            game.outcome = outcome
        self._game = None

    # -- helpers ---------------------------------------------------------------------------------------------

    def _chance(self, rate: float) -> bool:
        return rate > 0 and self.rng.random() < rate

    def _take(self, name: str, rate: float) -> bool:
        """A one-shot fault if pending, else a random one."""
        if getattr(self._pending, name):
            setattr(self._pending, name, False)
            return True
        return self._chance(rate)

    def _set_flag(self, flag: WarningFlags) -> None:
        self.flags |= flag

    def _clear_flag(self, flag: WarningFlags) -> None:
        self.flags &= ~flag

    def _drift_rotor(self) -> None:
        """The rotor wanders around its target; it stops when closed and while turning round in state 2."""
        target = 0.0 if self.state is S.CLOSED else self._target_rpm
        if abs(target - self.rpm) > 1.0:
            self.rpm += max(-4.0, min(4.0, target - self.rpm))
        elif target > 0:
            self.rpm += self.rng.uniform(-0.15, 0.15) + (target - self.rpm) * 0.2
        else:
            self.rpm = 0.0
        self.rpm = max(0.0, self.rpm)


class WheelSimulator(PortedSimulator):
    """A `WheelDevice` served on a pseudo-terminal (or TCP), for the demo and end-to-end tests."""

    def __init__(
        self,
        *,
        seed: int | None = None,
        speed: float = 1.0,
        clock: Callable[[], float] = time.time,
        **device_options: Any,
    ) -> None:
        self.device = WheelDevice(seed=seed, speed=speed, **device_options)
        self.port = SimulatedPort(self.device, clock=clock)
