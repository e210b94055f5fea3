"""A simulated `shaker-line` dice shaker (an automatic sic bo shaker) that behaves like the machine.

`ShakerDevice` is the pure core (a `drivers.sim_port.SimulatedDevice` built on
`drivers.line.device.LineDeviceCore`: HELLO, HB every second, AT_REST/FAULT retransmitted every 250 ms until
ACKed, in order). The machine:

- `SHAKE <cycle_id> <pushes>` in IDLE or AT_REST starts a cycle: SHAKING for `pushes x push_s` seconds, then
  SETTLING for `settle_s` seconds while the vibration sensor waits for the dice to stop, then
  `AT_REST <seq> <cycle_id>` and `STATE AT_REST`. Every duration is divided by `speed`. The dice it rolled
  (repeatably, from `seed`) are kept in `cycles`: the truth a simulated camera can later show;
- a SHAKE it cannot start now (busy, or in FAULT) is answered with `STATE` only; a SHAKE while the dome is
  open is `FAULT <seq> M02 DOME_NOT_CLOSED` (closing the dome clears it);
- faults stop the cycle (no AT_REST for it) and hold the shaker in FAULT until `clear_fault()` (the
  technician): `M01 MOTOR` at the first push (`motor_fault_next()` or `ShakerFaults.motor_rate`),
  `M03 VIBRATION_SENSOR` when the dice should have come to rest (`sensor_fault_next()` or `sensor_rate`),
  `M04 LIGHT` when the light is switched on with a broken lamp (`break_light()`), or any code at once with
  `fault(code)`; opening the dome during a cycle spills it: M02;
- `LIGHT ON|OFF` switches the light (no answer, as on the reference machine), `STATUS?` is answered with
  `STATE`; whole lines can be spoiled on the wire (noise, bad checksums, duplicates) at the fault rates.

`ShakerSimulator` serves a `ShakerDevice` on a pty or TCP port (`drivers.line.device.LineSimulator`, which
adds `unplug()`/`replug()`/`silence()`/`inject()`); the operator's actions use the port's clock.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from drivers.line.device import LineDeviceCore, LineFaults, LineSimulator
from drivers.line.framing import Hello
from drivers.shaker.protocol import (
    FAULT_TEXTS,
    LINE_PROTOCOL,
    AtRest,
    Fault,
    HostMessage,
    Light,
    Shake,
)

#: Seconds at speed 1: one push of the lever shakes the dome for this long; then the dice need time to stop.
DEFAULT_PUSH_S = 0.8
DEFAULT_SETTLE_S = 1.5
_BUSY_PHASES = frozenset({"SHAKING", "SETTLING"})


@dataclass(frozen=True, slots=True)
class ShakerFaults(LineFaults):
    """Misbehaviour rates (0..1): the line's, and the machine's own; `seed` makes a run repeatable."""

    motor_rate: float = 0.0  # the motor fails at the first push (FAULT M01 MOTOR)
    sensor_rate: float = 0.0  # the vibration sensor never reports the dice still (FAULT M03)


@dataclass(slots=True)
class ShakeCycle:
    """One cycle as the machine really ran it. `outcome`: running, at_rest, or a fault code."""

    cycle_id: str
    pushes: int
    started_at: float
    dice: tuple[int, ...] | None = None
    outcome: str = "running"
    ended_at: float | None = None


class ShakerDevice(LineDeviceCore[HostMessage, ShakerFaults]):
    """The pure core of the simulated shaker. All times are passed in."""

    line_protocol = LINE_PROTOCOL

    def __init__(
        self,
        *,
        speed: float = 1.0,
        push_s: float = DEFAULT_PUSH_S,
        settle_s: float = DEFAULT_SETTLE_S,
        dice: int = 3,
        seed: int = 0,
        faults: ShakerFaults | None = None,
        model: str = "SIMSHAKE",
        firmware: str = "1.0.0",
        serial: str = "SIM0003",
        first_seq: int = 1,
    ) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        super().__init__(
            hello=Hello(model, firmware, serial), faults=faults or ShakerFaults(), first_seq=first_seq
        )
        self.speed = speed
        self.push_s = push_s
        self.settle_s = settle_s
        self.dice_count = dice
        self.phase = "IDLE"  # IDLE | SHAKING | SETTLING | AT_REST
        self.dome_open = False
        self.fault_code: str | None = None
        self.light_on = False
        self.light_broken = False
        self.cycles: list[ShakeCycle] = []
        self._running: ShakeCycle | None = None
        # The dice have their own generator: injected faults must not change what the dice show.
        self._dice_rng = random.Random(seed)

    # -- observation -------------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        if self.fault_code is not None:
            return "FAULT"
        if self.dome_open:
            return "DOME_OPEN"
        return self.phase

    def cycle_seconds(self, pushes: int) -> float:
        """How long a cycle of `pushes` pushes takes, settling included, at this device's speed."""
        return (pushes * self.push_s + self.settle_s) / self.speed

    # -- misbehaviour --------------------------------------------------------------------------------------
    def motor_fault_next(self) -> None:
        """The motor fails at the first push of the next cycle (one shot)."""
        self._arm_failure("M01")

    def sensor_fault_next(self) -> None:
        """The vibration sensor of the next cycle never reports the dice still (one shot)."""
        self._arm_failure("M03")

    def break_light(self, now: float) -> None:
        """The lamp under the dome fails: a fault now if it is on, else when it is next switched on."""
        self.light_broken = True
        if self.light_on:
            self.fault("M04", now)

    def fault(self, code: str, now: float, text: str | None = None) -> None:
        """Fault now with `code` (e.g. `M01`): the running cycle stops, FAULT then STATE FAULT are sent."""
        self._cancel_timers()
        cycle, self._running = self._running, None
        if cycle is not None:
            cycle.outcome = code
            cycle.ended_at = now
        self.phase = "IDLE"
        self.fault_code = code
        line_text = text or FAULT_TEXTS.get(code, "UNKNOWN")
        self._queue_seq_message(lambda seq: Fault(seq, code, line_text).encode(), now)
        self._say_state()

    def clear_fault(self, now: float) -> None:
        """The technician fixed the cause (motor, sensor, lamp)."""
        if self.fault_code is None:
            return
        self.fault_code = None
        self.light_broken = False
        self._say_state()

    # -- operator actions ------------------------------------------------------------------------------------
    def open_dome(self, now: float) -> None:
        """Lift the dome (to change dice, or by mistake): a running cycle is spilled (M02)."""
        if self.dome_open:
            return
        self.dome_open = True
        if self._running is not None:
            self.fault("M02", now)
            return
        self.phase = "IDLE"  # whatever was at rest may have been touched
        self._say_state()

    def close_dome(self, now: float) -> None:
        if not self.dome_open:
            return
        self.dome_open = False
        if self.fault_code == "M02":
            self.fault_code = None
        self._say_state()

    # -- LineDeviceCore --------------------------------------------------------------------------------------
    def host_message(self, message: HostMessage, now: float) -> None:
        if isinstance(message, Shake):
            self._start(message, now)
        elif isinstance(message, Light):
            self.light_on = message.on
            if message.on and self.light_broken and self.fault_code is None:
                self.fault("M04", now)

    # -- internals -------------------------------------------------------------------------------------------
    def _start(self, request: Shake, now: float) -> None:
        if self.fault_code is not None or self.phase in _BUSY_PHASES:
            self._say_state()  # refused: the host sees why
            return
        cycle = ShakeCycle(request.cycle_id, request.pushes, started_at=now)
        self.cycles.append(cycle)
        if self.dome_open:
            self.fault("M02", now)
            cycle.outcome, cycle.ended_at = "M02", now
            return
        failure = self._take_failure(("M01", self._faults.motor_rate), ("M03", self._faults.sensor_rate))
        self._running = cycle
        self.phase = "SHAKING"
        self._say_state()
        if failure == "M01":
            self._at(now + self.push_s / self.speed, lambda at: self.fault("M01", at))
            return
        shaken_at = now + request.pushes * self.push_s / self.speed
        self._at(shaken_at, lambda at: self._settle(cycle, at, sensor_fails=failure == "M03"))

    def _settle(self, cycle: ShakeCycle, at: float, *, sensor_fails: bool) -> None:
        if self._running is not cycle:
            return
        self.phase = "SETTLING"
        self._say_state()
        still_at = at + self.settle_s / self.speed
        if sensor_fails:
            self._at(still_at, lambda when: self.fault("M03", when))
        else:
            self._at(still_at, lambda when: self._come_to_rest(cycle, when))

    def _come_to_rest(self, cycle: ShakeCycle, at: float) -> None:
        if self._running is not cycle:
            return
        self._running = None
        cycle.dice = tuple(self._dice_rng.randint(1, 6) for _ in range(self.dice_count))
        cycle.outcome = "at_rest"
        cycle.ended_at = at
        self.phase = "AT_REST"
        self._queue_seq_message(lambda seq: AtRest(seq, cycle.cycle_id).encode(), at)
        self._say_state()


class ShakerSimulator(LineSimulator[ShakerDevice]):
    """A `ShakerDevice` served on a pty or TCP port; the operator's actions use the port's clock."""

    device_class = ShakerDevice

    # -- operator ------------------------------------------------------------------------------------------
    def open_dome(self) -> None:
        self._act(self.device.open_dome)

    def close_dome(self) -> None:
        self._act(self.device.close_dome)

    def fault(self, code: str, text: str | None = None) -> None:
        self._act(lambda now: self.device.fault(code, now, text))

    def clear_fault(self) -> None:
        self._act(self.device.clear_fault)

    def break_light(self) -> None:
        self._act(self.device.break_light)

    def motor_fault_next(self) -> None:
        self.device.motor_fault_next()

    def sensor_fault_next(self) -> None:
        self.device.sensor_fault_next()

    @property
    def cycles(self) -> list[ShakeCycle]:
        return self.device.cycles
