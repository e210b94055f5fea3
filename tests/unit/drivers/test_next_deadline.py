"""`next_deadline()`: ticking a session only at its deadlines gives what ticking it every 100 ms gives.

Each session type is driven twice over the same script of inputs: once the way the runner has always done
it (a tick every 100 ms, after the inputs of that instant), once ticking only at `next_deadline()` and at
each input. Readings (with their times) and the bytes sent (with the time they were queued) must be the same,
including the ones that only time produces: the watchdog's offline, the wheel's retries, polls and
timeouts. Inputs come on the 100 ms grid and every window is a multiple of 100 ms, so both runs can see each
timer expire at the very same instant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from drivers.line.framing import encode_line
from drivers.readings import DeviceFault, DeviceOffline, DeviceStatus, Reading
from drivers.session import DeviceCommand, DeviceSession
from drivers.shaker.session import ShakerSession
from drivers.shoe.session import ShoeSession
from drivers.shuffler.session import ShufflerSession
from drivers.wheel.session import WheelSession

pytestmark = pytest.mark.unit

T0 = 1_700_000_000.0  # an epoch time, as live: its float rounding is the live one


def at(k: int) -> float:
    """The time of 100 ms tick number k."""
    return T0 + k / 10


# A script step: ("connect",), ("lost", reason), ("data", bytes) or ("command", DeviceCommand).
Step = tuple[Any, ...]
Script = dict[int, list[Step]]


@dataclass
class Run:
    readings: list[Reading] = field(default_factory=list)
    sent: list[tuple[float, bytes]] = field(default_factory=list)
    ticks: int = 0

    def collect(self, session: DeviceSession, readings: list[Reading], now: float) -> None:
        self.readings += readings
        data = session.data_to_send()
        if data:
            self.sent.append((now, data))


def _apply(session: DeviceSession, step: Step, now: float) -> list[Reading]:
    kind = step[0]
    if kind == "connect":
        return session.connection_made(now)
    if kind == "lost":
        return session.connection_lost(now, step[1])
    if kind == "data":
        return session.data_received(step[1], now)
    if kind == "command":
        return session.command(step[1], now)
    raise AssertionError(step)


def every_100ms(make: Callable[[], DeviceSession], script: Script, end: int) -> Run:
    session, run = make(), Run()
    for k in range(end + 1):
        now = at(k)
        for step in script.get(k, []):
            run.collect(session, _apply(session, step, now), now)
        run.collect(session, session.tick(now), now)
        run.ticks += 1
    return run


def at_deadlines(
    make: Callable[[], DeviceSession], script: Script, end: int, readings_only: bool = False
) -> Run:
    """Tick at `next_deadline()` (as the live runner does), or with `readings_only` at
    `next_reading_deadline()` (as a replay does, whose bytes go nowhere)."""
    session, run = make(), Run()

    def due() -> float | None:
        return session.next_reading_deadline() if readings_only else session.next_deadline()

    def tick_until(limit: float) -> None:
        """Tick at every deadline before `limit`; each tick must move the deadline on."""
        while (deadline := due()) is not None and deadline < limit:
            run.collect(session, session.tick(deadline), deadline)
            run.ticks += 1
            after = due()
            assert after is None or after > deadline, f"tick at its deadline {deadline} left it at {after}"

    for k in sorted(script):
        now = at(k)
        tick_until(now)
        for step in script[k]:
            run.collect(session, _apply(session, step, now), now)
        run.collect(session, session.tick(now), now)  # the input's own wake-up
        run.ticks += 1
    tick_until(at(end) + 0.05)
    return run


def check_same(make: Callable[[], DeviceSession], script: Script, end: int) -> Run:
    polled = every_100ms(make, script, end)
    woken = at_deadlines(make, script, end)
    assert woken.readings == polled.readings
    assert woken.sent == polled.sent
    assert woken.ticks < polled.ticks / 3  # the point: far fewer wake-ups
    return woken


def line(body: str) -> Step:
    return ("data", encode_line(body))


def offline_times(readings: list[Reading]) -> list[float]:
    return [r.time for r in readings if isinstance(r, DeviceOffline)]


# --- line devices ---------------------------------------------------------------------------------------


def line_device_script(hello: str, messages: list[str], commands: list[DeviceCommand]) -> Script:
    """HELLO and heartbeats, the device's own messages, then silence (watchdog), a comeback, a lost link
    and a reconnect to a device that stays mute (already reported offline: not again)."""
    script: Script = {0: [("connect",)], 2: [line(f"HELLO {hello}")]}
    for k in (10, 20, 30):
        script.setdefault(k, []).append(line(f"HB {k // 10}"))
    for i, body in enumerate(messages):
        script.setdefault(31 + i, []).append(line(body))
    for i, command in enumerate(commands):
        script.setdefault(12 + i, []).append(("command", command))
    # silence from 31 + len(messages): the watchdog fires 3 s later
    script[95] = [line("HB 9")]
    script[96] = [line("HB 9")]  # a duplicate heartbeat changes nothing
    script[110] = [("lost", "port closed")]
    script[120] = [("connect",)]
    return script


LINE_CASES = {
    "shoe": (
        lambda: ShoeSession("shoe"),
        "SIMSHOE 1.0.0 SIM0001",
        ["CARD 0001 AS", "CARD 0001 AS", "NOREAD 0002", "RESCAN 0002 KH", "FAULT F03 JAM", "STATE FAULT"],
        [DeviceCommand("lock"), DeviceCommand("status")],
    ),
    "shuffler": (
        lambda: ShufflerSession("shuffler"),
        "SIMSHUF 1.0.0 SIM0002",
        ["STATE SHUFFLING", "DONE 0001 S-1 1 51", "STATE READY", "ERR 0002 E01 JAM", "STATE ERROR"],
        [DeviceCommand("shuffle", {"shuffle_id": "S-1", "decks": 1}), DeviceCommand("reset")],
    ),
    "shaker": (
        lambda: ShakerSession("shaker"),
        "SIMSHAKE 1.0.0 SIM0003",
        ["STATE SHAKING", "STATE SETTLING", "AT_REST 0001 C-1", "FAULT 0002 M01 MOTOR", "STATE FAULT"],
        [DeviceCommand("shake", {"cycle_id": "C-1"}), DeviceCommand("light", {"on": True})],
    ),
}


@pytest.mark.parametrize("device", sorted(LINE_CASES))
def test_line_session_ticked_at_its_deadlines_reads_the_same(device: str) -> None:
    make, hello, messages, commands = LINE_CASES[device]
    script = line_device_script(hello, messages, commands)
    run = check_same(make, script, end=200)
    silent_from = at(31 + len(messages) - 1)
    # the watchdog after the silence, then the lost link
    assert offline_times(run.readings) == [pytest.approx(silent_from + 3.0, abs=1e-6), at(110)]
    assert any(isinstance(r, DeviceFault) for r in run.readings)


def test_line_session_deadline_is_the_watchdog() -> None:
    session = ShoeSession("shoe")
    assert session.next_deadline() is None  # no port: nothing to time
    session.connection_made(at(0))
    assert session.next_deadline() == at(0) + 3.0  # silent from the very start counts too
    session.data_received(encode_line("HB 1"), at(7))
    assert session.next_deadline() == at(7) + 3.0
    assert session.tick(at(7) + 2.9) == []  # early: harmless
    assert [type(r) for r in session.tick(at(7) + 3.0)] == [DeviceOffline]
    assert session.next_deadline() is None  # reported once; the next byte re-arms it
    session.data_received(encode_line("HB 2"), at(50))
    assert session.next_deadline() == at(50) + 3.0
    session.connection_lost(at(51), "unplugged")
    assert session.next_deadline() is None


# --- the Cammegh SS2 wheel --------------------------------------------------------------------------------


def wheel_line(text: str) -> Step:
    return ("data", text.encode("latin-1") + b"\r\n")


def wheel_script() -> Script:
    script: Script = {0: [("connect",)]}

    def add(k: int, *steps: Step) -> None:
        script.setdefault(k, []).extend(steps)

    # Mute while booting: mode/power repeated every second, polls every 0.5 s, offline at 3 s.
    add(35, wheel_line("*o 1415"), wheel_line("*P OK"))
    add(36, wheel_line("*X;1;010;23;0;100;0"))
    add(40, wheel_line("*X;2;011;23;0;154;0"))
    add(50, wheel_line("*X;3;011;23;0;170;1"))
    add(60, wheel_line("*X;4;011;23;0;168;1"))
    # State 5 and no winning-number line: unconfirmed once its 1.5 s grace ends (a tick does it).
    add(70, wheel_line("*X;5;011; 7;0;165;1"))
    add(75, wheel_line("*X;5;011; 7;0;165;1"))  # repeated: the grace still counts from the first
    # The wheel's automatic status every 0.5 s: the polls stop while it is fresh, resume 1.5 s after.
    for k in range(90, 131, 5):
        add(k, wheel_line("*X;2;012; 7;0;154;0"))
    # A miss-spin: voided, `*R` repeated every 2 s while the status still shows it, then silence.
    add(150, wheel_line("*X;3;012; 7;2;170;1"))
    # A self-test nobody answers: given up after 5 minutes.
    add(161, ("command", DeviceCommand("self_test")))
    for k in range(210, 3300, 100):
        add(k, wheel_line("*X;1;012; 7;0;100;0"))
    return script


# The default polls (every 0.5 s) would wake the session at most other timers' instants anyway: a slow poll
# shows each timer on its own.
@pytest.mark.parametrize("poll_interval", [0.5, 2.5])
def test_wheel_session_ticked_at_its_deadlines_reads_the_same(poll_interval: float) -> None:
    run = check_same(lambda: WheelSession("wheel", poll_interval=poll_interval), wheel_script(), end=3400)
    texts = [(r.time, r.state) for r in run.readings if isinstance(r, DeviceStatus)]
    assert any("self-test gave no answer" in text for _, text in texts)
    faults = [(r.time, r.code) for r in run.readings if isinstance(r, DeviceFault)]
    assert (pytest.approx(at(70) + 1.5, abs=1e-6), "RESULT_UNCONFIRMED") in faults
    assert offline_times(run.readings)[0] == pytest.approx(at(0) + 3.0, abs=1e-6)
    sent = b"".join(data for _, data in run.sent)
    assert sent.count(b"*R\r\n") >= 2  # the void's acknowledgement, repeated by a timer


@pytest.mark.parametrize("poll_interval", [0.5, 2.5])
def test_wheel_woken_only_for_what_can_report_reads_the_same(poll_interval: float) -> None:
    # a replay sends nothing: skipping the polls and repeated requests must not change a single reading
    def make() -> WheelSession:
        return WheelSession("wheel", poll_interval=poll_interval)

    every = at_deadlines(make, wheel_script(), end=3400)
    replay = at_deadlines(make, wheel_script(), end=3400, readings_only=True)
    assert replay.readings == every.readings
    assert replay.ticks < every.ticks


def test_a_silent_wheel_costs_a_replay_no_wake_ups_and_keeps_no_growing_list() -> None:
    session = WheelSession("wheel", poll_interval=0.5)
    session.connection_made(T0)
    session.data_received(b"*X;6;001;  ;0;000;0\r\n", T0 + 0.1)
    first = session.next_reading_deadline()
    assert first == pytest.approx(T0 + 0.1 + 3.0)  # the link watchdog
    assert isinstance(session.tick(first)[0], DeviceOffline)
    assert session.next_reading_deadline() is None  # offline: only polls remain, which report nothing
    for k in range(1, 20_000):  # a live runner polls a silent wheel all night
        session.tick(first + k * 0.5)
        session.data_to_send()
    assert len(session._polls_in_flight) <= 10


def test_wheel_deadline_follows_its_timers() -> None:
    session = WheelSession("wheel", poll_interval=0.5)
    assert session.next_deadline() is None
    session.connection_made(at(0))
    # polled at once; next poll 0.5 s later comes before the handshake's retry and the link timeout
    assert session.next_deadline() == at(0) + 0.5
    session.tick(at(0) + 0.5)
    assert session.next_deadline() == at(0) + 1.0  # poll and handshake retry both due at 1 s
    session.data_to_send()
    assert session.tick(at(0) + 0.7) == []  # early: harmless, sends nothing
    assert session.data_to_send() == b""
