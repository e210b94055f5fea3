"""The `shaker-line` driver, what only the shaker does: its cycles and faults (FAULT carries a seq), and the
simulated shaker against it, sans-IO (what every line device does is in `test_line_devices.py`).

Checksums are computed by the tests (`controller.testing.line_wire.frame`), not taken from the code under
test.

Its unit tests; the integration ones are in `tests/integration/test_shaker.py`."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.testing import line_wire
from controller.testing.line_wire import LineWire, chunked, frame, line_noise, raw, sent
from drivers.readings import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceOffline,
    DeviceStatus,
    DiceAtRest,
    Reading,
)
from drivers.shaker.session import ShakerSession
from drivers.shaker.simulator import ShakerDevice, ShakerFaults

pytestmark = pytest.mark.unit


# --- the message table ---------------------------------------------------------------------------------


# --- the host session, sans-IO ---------------------------------------------------------------------------


def connected(now: float = 0.0) -> ShakerSession:
    return line_wire.hello_received(ShakerSession("shaker1"), "SIMSHAKE 1.0.0 SIM0003", now)


def test_at_rest_is_reported_once_and_every_copy_is_acked() -> None:
    session = connected()
    body = "AT_REST 0042 C-9"
    assert session.data_received(frame(body), 2.0) == [
        DiceAtRest(device="shaker1", time=2.0, raw=raw(body), cycle_id="C-9")
    ]
    for copy in range(3):
        assert session.data_received(frame(body), 2.25 + copy * 0.25) == []
    assert sent(session) == ["ACK 0042"] * 4
    assert session.stats.duplicates == 3
    # a new cycle with the next seq is a new reading
    assert [type(r) for r in session.data_received(frame("AT_REST 0043 C-10"), 9.0)] == [DiceAtRest]


@pytest.mark.parametrize(
    ("code", "text"),
    [
        ("M01", "MOTOR"),
        ("M02", "DOME_NOT_CLOSED"),
        ("M03", "VIBRATION_SENSOR"),
        ("M04", "LIGHT"),
        ("M09", "X Y"),
    ],
)
def test_faults_are_reported_once_and_cleared(code: str, text: str) -> None:
    session = connected()
    body = f"FAULT 0005 {code} {text}"
    assert session.data_received(frame(body), 1.0) == [
        DeviceFault(device="shaker1", time=1.0, raw=raw(body), code=code, reason=text)
    ]
    assert session.data_received(frame(body), 1.25) == []  # retransmission
    assert sent(session) == ["ACK 0005", "ACK 0005"]
    assert session.data_received(frame("STATE FAULT"), 1.3) == [
        DeviceStatus(device="shaker1", time=1.3, raw=raw("STATE FAULT"), state="FAULT")
    ]
    assert session.data_received(frame("STATE DOME_OPEN"), 2.0) == [
        DeviceStatus(device="shaker1", time=2.0, raw=raw("STATE DOME_OPEN"), state="DOME_OPEN")
    ]
    assert session.data_received(frame("STATE IDLE"), 3.0) == [
        DeviceStatus(device="shaker1", time=3.0, raw=raw("STATE IDLE"), state="IDLE"),
        DeviceFaultCleared(device="shaker1", time=3.0, raw=raw("STATE IDLE"), detail="IDLE"),
    ]


@settings(max_examples=200, deadline=None)
@given(
    cycles=st.integers(0, 20),
    repeats=st.lists(st.integers(1, 4), max_size=20),
    noise=st.lists(st.one_of(st.none(), line_noise), max_size=20),
    cuts=st.lists(st.integers(min_value=0), max_size=30),
)
def test_each_cycle_is_at_rest_once_among_noise_and_copies(
    cycles: int, repeats: list[int], noise: list[bytes | None], cuts: list[int]
) -> None:
    copies = [repeats[i] if i < len(repeats) else 1 for i in range(cycles)]
    stream = bytearray(frame("HELLO S 1 X"))
    bursts = 0
    for index in range(cycles):
        stream += frame("STATE SHAKING") + frame("STATE SETTLING")
        stream += frame(f"AT_REST {(9998 + index) % 10000:04d} c{index}") * copies[index]
        burst = noise[index] if index < len(noise) else None
        if burst is not None:
            stream += burst + b"\r\n"
            bursts += 1
    session = ShakerSession("shaker1")
    session.connection_made(0.0)
    session.data_to_send()
    readings: list[Reading] = []
    for piece in chunked(bytes(stream), cuts):
        readings += session.data_received(piece, 1.0)
    assert [r.cycle_id for r in readings if isinstance(r, DiceAtRest)] == [f"c{i}" for i in range(cycles)]
    assert sent(session) == [f"ACK {(9998 + i) % 10000:04d}" for i in range(cycles) for _ in range(copies[i])]
    assert session.stats.duplicates == sum(copies) - cycles
    assert session.stats.rejected_total == bursts


# --- the simulated shaker against the session, sans-IO (times passed in) --------------------------------


class Wire(LineWire):
    """Connects a ShakerDevice and a ShakerSession directly; `step` moves bytes both ways at `now`."""

    def __init__(self, device: ShakerDevice, deliver_acks: bool = True) -> None:
        super().__init__(device, ShakerSession("shaker1"), deliver_acks)


def test_simulated_cycle_timing_and_retransmission_until_acked() -> None:
    device = ShakerDevice(speed=2.0)  # a push 0.4 s, settling 0.75 s
    assert device.cycle_seconds(3) == pytest.approx(1.95)
    wire = Wire(device, deliver_acks=False)
    assert wire.step(0.0) == frame("HELLO SIMSHAKE 1.0.0 SIM0003")
    assert wire.step(0.05) == frame("STATE IDLE")
    wire.send("shake", cycle_id="K1")
    assert wire.step(0.1) == b""  # SHAKE K1 3 reaches the shaker at 0.1
    assert wire.step(0.15) == frame("STATE SHAKING")
    assert wire.step(1.25) == frame("HB 1")  # three pushes end at 0.1 + 3 x 0.4 = 1.3
    assert wire.step(1.35) == frame("STATE SETTLING")
    assert wire.step(2.0) == b""  # still settling until 1.3 + 0.75 = 2.05
    assert wire.step(2.1) == frame("AT_REST 0001 K1")
    assert wire.step(2.15) == b""  # STATE AT_REST waits behind the unacknowledged AT_REST
    assert wire.step(2.35) == frame("HB 2") + frame("AT_REST 0001 K1")  # 250 ms later, same seq
    wire.deliver_acks = True
    assert wire.step(2.6) == frame("AT_REST 0001 K1")  # this copy's ACK reaches the shaker
    assert wire.step(2.65) == frame("STATE AT_REST")
    assert wire.of(DiceAtRest) == [
        DiceAtRest(device="shaker1", time=2.1, raw=raw("AT_REST 0001 K1"), cycle_id="K1")
    ]
    assert wire.states() == ["IDLE", "SHAKING", "SETTLING", "AT_REST"]
    [cycle] = device.cycles
    assert (cycle.cycle_id, cycle.pushes, cycle.outcome) == ("K1", 3, "at_rest")
    assert cycle.ended_at == pytest.approx(2.05)  # when the dice stopped, not when the shaker was polled
    assert cycle.dice is not None and len(cycle.dice) == 3 and all(1 <= d <= 6 for d in cycle.dice)


def test_simulated_busy_shaker_refuses_a_second_shake() -> None:
    device = ShakerDevice(speed=10.0)
    wire = Wire(device)
    wire.run(0.1)
    wire.send("shake", cycle_id="B1", pushes=2)
    wire.run(0.1)
    wire.send("shake", cycle_id="B2", pushes=2)  # while B1 shakes: answered with STATE SHAKING
    wire.run(1.0)
    assert [r.cycle_id for r in wire.of(DiceAtRest)] == ["B1"]
    assert [c.cycle_id for c in device.cycles] == ["B1"]
    assert wire.states() == ["IDLE", "SHAKING", "SHAKING", "SETTLING", "AT_REST"]
    wire.send("shake", cycle_id="B3", pushes=1)  # from AT_REST a new cycle starts
    wire.run(1.0)
    assert [r.cycle_id for r in wire.of(DiceAtRest)] == ["B1", "B3"]


def test_simulated_faults() -> None:
    device = ShakerDevice(speed=10.0)
    wire = Wire(device)
    wire.run(0.1)

    device.motor_fault_next()
    wire.send("shake", cycle_id="F1")
    wire.run(1.0)
    assert [(f.code, f.reason) for f in wire.of(DeviceFault)] == [("M01", "MOTOR")]
    assert wire.states()[-1] == "FAULT"
    wire.send("shake", cycle_id="F2")  # refused in FAULT
    wire.run(0.3)
    device.clear_fault(wire.now)
    wire.run(0.1)
    assert len(wire.of(DeviceFaultCleared)) == 1

    device.sensor_fault_next()
    wire.send("shake", cycle_id="F3")
    wire.run(1.0)
    assert wire.of(DeviceFault)[-1].code == "M03"
    device.clear_fault(wire.now)
    wire.run(0.1)

    device.open_dome(wire.now)
    wire.run(0.1)
    assert wire.states()[-1] == "DOME_OPEN"
    assert len(wire.of(DeviceFault)) == 2  # an open dome is a state, not a fault
    wire.send("shake", cycle_id="F4")
    wire.run(0.3)
    assert (wire.of(DeviceFault)[-1].code, wire.of(DeviceFault)[-1].reason) == ("M02", "DOME_NOT_CLOSED")
    device.close_dome(wire.now)
    wire.run(0.1)
    assert wire.states()[-1] == "IDLE"

    wire.send("light", on=True)
    wire.run(0.1)
    assert device.light_on
    device.break_light(wire.now)
    wire.run(0.2)
    assert wire.of(DeviceFault)[-1].code == "M04"
    device.clear_fault(wire.now)
    wire.run(0.1)

    wire.send("shake", cycle_id="F5")
    wire.run(0.1)
    device.open_dome(wire.now)  # lifted mid-cycle: the dice are spilled
    wire.run(0.3)
    assert wire.of(DeviceFault)[-1].code == "M02"
    device.close_dome(wire.now)
    wire.run(0.1)

    assert wire.of(DiceAtRest) == []  # no faulted cycle ever came to rest
    assert [(c.cycle_id, c.outcome) for c in device.cycles] == [
        ("F1", "M01"),
        ("F3", "M03"),
        ("F4", "M02"),
        ("F5", "M02"),
    ]
    assert len(wire.of(DeviceFaultCleared)) == 5
    assert not wire.session.active_fault


def test_simulated_cycles_through_spoiled_lines_rest_exactly_once() -> None:
    faults = ShakerFaults(
        motor_rate=0.1, sensor_rate=0.1, bad_checksum_rate=0.3, noise_rate=0.2, duplicate_rate=0.3, seed=6
    )
    device = ShakerDevice(speed=20.0, faults=faults)
    wire = Wire(device)
    wire.run(0.2)
    for number in range(40):
        wire.send("shake", cycle_id=f"R{number}")
        wire.run(device.cycle_seconds(3) + 0.8)
        if device.fault_code is not None:
            device.clear_fault(wire.now)
            wire.run(0.3)
    rested = [c.cycle_id for c in device.cycles if c.outcome == "at_rest"]
    assert [r.cycle_id for r in wire.of(DiceAtRest)] == rested
    faulted = [c.outcome for c in device.cycles if c.outcome != "at_rest"]
    assert [f.code for f in wire.of(DeviceFault)] == faulted
    assert rested and "M01" in faulted and "M03" in faulted
    line_wire.assert_only_spoiled_lines_rejected(wire.session, device)
    assert not wire.of(DeviceOffline)


def test_the_dice_depend_on_the_seed_only() -> None:
    def dice(seed: int, faults: ShakerFaults) -> list[tuple[int, ...] | None]:
        device = ShakerDevice(speed=100.0, seed=seed, faults=faults)
        wire = Wire(device)
        for number in range(5):
            wire.send("shake", cycle_id=f"D{number}")
            wire.run(0.3)
        return [cycle.dice for cycle in device.cycles]

    first = dice(1, ShakerFaults())
    assert all(values is not None for values in first)
    assert dice(1, ShakerFaults(noise_rate=0.5, seed=9)) == first
    assert dice(2, ShakerFaults()) != first
