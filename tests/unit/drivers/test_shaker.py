"""The `shaker-line` driver: message table, host session, simulated shaker, and both on a real pty.

Checksums are computed by the tests (`controller.testing.line_wire.frame`), not taken from the code under
test.

Its unit tests; the integration ones are in `tests/integration/test_shaker.py`."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from controller.testing import line_wire
from controller.testing.line_wire import LineWire, bodies, chunked, frame, line_noise, raw, sent
from drivers.readings import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceOffline,
    DeviceStatus,
    DiceAtRest,
    Reading,
)
from drivers.registry import session_class, simulator_class
from drivers.session import DeviceCommand, UnknownDeviceCommand
from drivers.shaker.protocol import (
    Ack,
    AtRest,
    Fault,
    Heartbeat,
    Hello,
    Light,
    ParseFailure,
    Shake,
    State,
    StatusQuery,
    parse_device_message,
    parse_host_message,
)
from drivers.shaker.session import ShakerSession
from drivers.shaker.simulator import ShakerDevice, ShakerFaults, ShakerSimulator

pytestmark = pytest.mark.unit

MALFORMED = ParseFailure("malformed fields")
UNKNOWN = ParseFailure("unknown message")


# --- the message table ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("STATE IDLE", State("IDLE")),
        ("STATE SHAKING", State("SHAKING")),
        ("STATE SETTLING", State("SETTLING")),
        ("STATE AT_REST", State("AT_REST")),
        ("STATE DOME_OPEN", State("DOME_OPEN")),
        ("STATE FAULT", State("FAULT")),
        ("AT_REST 0001 C-1", AtRest(1, "C-1")),
        ("AT_REST 9999 20240601.17", AtRest(9999, "20240601.17")),
        ("FAULT 0002 M01 MOTOR", Fault(2, "M01", "MOTOR")),
        ("FAULT 0003 M02 DOME_NOT_CLOSED", Fault(3, "M02", "DOME_NOT_CLOSED")),
        ("FAULT 0004 M03 VIBRATION_SENSOR", Fault(4, "M03", "VIBRATION_SENSOR")),
        ("FAULT 0005 M04 LIGHT", Fault(5, "M04", "LIGHT")),
        ("FAULT 0006 M99 DOME LIFT BLOCKED", Fault(6, "M99", "DOME LIFT BLOCKED")),
        ("HB 7", Heartbeat(7)),
        ("HELLO SHAKER-X 2.0 SN5", Hello("SHAKER-X", "2.0", "SN5")),
    ],
)
def test_parse_device_messages(body: str, message: object) -> None:
    assert parse_device_message(body) == message


@pytest.mark.parametrize(
    ("body", "failure"),
    [
        ("STATE", MALFORMED),
        ("STATE ROLLING", MALFORMED),
        ("AT_REST 0001", MALFORMED),
        ("AT_REST 1 C-1", MALFORMED),
        ("AT_REST 0001 C-1 extra", MALFORMED),
        ("AT_REST 0001 " + "C" * 33, MALFORMED),
        ("AT_REST  0001 C-1", MALFORMED),
        ("FAULT 0001 M01", MALFORMED),
        ("FAULT M01 MOTOR", MALFORMED),  # the shoe's FAULT has no seq; the shaker's has
        ("FAULT", MALFORMED),
        ("HB", MALFORMED),
        ("ATREST 0001 C-1", UNKNOWN),
        ("at_rest 0001 C-1", UNKNOWN),
        ("ACK 0001", UNKNOWN),
        ("SHAKE C-1 3", UNKNOWN),
    ],
)
def test_malformed_device_messages(body: str, failure: ParseFailure) -> None:
    assert parse_device_message(body) == failure


def test_encodings_are_exact_and_round_trip() -> None:
    assert AtRest(12, "C-7").encode() == frame("AT_REST 0012 C-7")
    assert Fault(3, "M02", "DOME_NOT_CLOSED").encode() == frame("FAULT 0003 M02 DOME_NOT_CLOSED")
    # one checksum spelled out: the XOR of the bytes of "LIGHT ON"
    expected = 0
    for char in "LIGHT ON":
        expected ^= ord(char)
    assert Light(True).encode() == b"LIGHT ON*%02X\r\n" % expected
    messages: list[Any] = [
        AtRest(0, "x"),
        Fault(9999, "M03", "VIBRATION_SENSOR"),
        State("SETTLING"),
        Heartbeat(3),
        Hello("M", "F", "S"),
    ]
    for message in messages:
        [body] = bodies(message.encode())
        assert parse_device_message(body) == message


def test_host_messages() -> None:
    assert parse_host_message("ACK 0001") == Ack(1)
    assert parse_host_message("SHAKE C-1 3") == Shake("C-1", 3)
    assert parse_host_message("LIGHT ON") == Light(True)
    assert parse_host_message("LIGHT OFF") == Light(False)
    assert parse_host_message("STATUS?") == StatusQuery()
    for bad in ["SHAKE C-1", "SHAKE C-1 0", "SHAKE C-1 10", "SHAKE C-1 x", "LIGHT DIM", "LIGHT", "ACK 1"]:
        assert parse_host_message(bad) == MALFORMED, bad
    assert parse_host_message("ROLL C-1") == UNKNOWN
    assert Shake("C-1").encode() == frame("SHAKE C-1 3")  # three pushes unless told otherwise
    assert Light(False).encode() == frame("LIGHT OFF")
    assert StatusQuery().encode() == frame("STATUS?")
    for cycle_id, pushes in [("", 3), ("a b", 3), ("a*b", 3), ("c" * 33, 3), ("C", 0), ("C", 10)]:
        with pytest.raises(ValueError):
            Shake(cycle_id, pushes).encode()


@settings(max_examples=300, deadline=None)
@given(body=st.text(max_size=80))
@example(body="HB " + "1" * 5000)  # past int()'s 4,300 digits: refused, never raised
def test_parsers_never_raise(body: str) -> None:
    result = parse_device_message(body)
    if isinstance(result, AtRest):
        assert result.cycle_id and " " not in result.cycle_id
    parse_host_message(body)


# --- the host session, sans-IO ---------------------------------------------------------------------------


def connected(now: float = 0.0) -> ShakerSession:
    return line_wire.hello_received(ShakerSession("shaker1"), "SIMSHAKE 1.0.0 SIM0003", now)


def test_registry_knows_the_shaker() -> None:
    assert session_class("shaker-line") is ShakerSession
    assert simulator_class("shaker-line") is ShakerSimulator


def test_connection_made_asks_for_status_and_hello_brings_online() -> None:
    session = ShakerSession("shaker1")
    assert session.protocol == "shaker-line"
    line_wire.assert_asks_status_then_online_on_hello(session, "shaker1", "SIMSHAKE 1.0.0 SIM0003", 1.0, 1.5)


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


def test_states() -> None:
    session = connected()
    for state in ["IDLE", "SHAKING", "SETTLING", "AT_REST", "DOME_OPEN"]:
        assert session.data_received(frame(f"STATE {state}"), 1.0) == [
            DeviceStatus(device="shaker1", time=1.0, raw=raw(f"STATE {state}"), state=state)
        ]
    # a STATE FAULT without a FAULT message before it (e.g. the answer to STATUS? after a reconnect)
    assert session.data_received(frame("STATE FAULT"), 2.0) == [
        DeviceStatus(device="shaker1", time=2.0, raw=raw("STATE FAULT"), state="FAULT"),
        DeviceFault(
            device="shaker1", time=2.0, raw=raw("STATE FAULT"), code="FAULT", reason="shaker reports a fault"
        ),
    ]
    assert [type(r) for r in session.data_received(frame("STATE FAULT"), 2.5)] == [DeviceStatus]
    readings = session.data_received(frame("STATE AT_REST"), 3.0)
    assert [type(r).__name__ for r in readings] == ["DeviceStatus", "DeviceFaultCleared"]
    assert sent(session) == []


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"AT_REST 0001 C-1*00\r\n", "bad checksum"),
        (b"AT_REST 0001 C-1\r\n", "missing checksum"),
        (frame("DICE 0001 C-1"), "unknown message"),
        (frame("AT_REST 01 C-1"), "malformed fields"),
        (frame("FAULT 0001 M01"), "malformed fields"),
        (frame("STATE ROLLING"), "malformed fields"),
        *line_wire.GARBAGE_LINES,
    ],
)
def test_bad_lines_are_counted_never_interpreted(data: bytes, reason: str) -> None:
    session = connected()
    line_wire.assert_counted_not_read(session, data, reason)
    assert [type(r) for r in session.data_received(frame("AT_REST 0002 C-2"), 1.1)] == [DiceAtRest]


def test_commands() -> None:
    session = connected()
    for command, body in [
        (DeviceCommand("shake", {"cycle_id": "C-1"}), "SHAKE C-1 3"),
        (DeviceCommand("shake", {"cycle_id": 77, "pushes": 5}), "SHAKE 77 5"),
        (DeviceCommand("shake", {"pushes": 2}), "SHAKE 1000 2"),  # no id: the time in ms
        (DeviceCommand("light", {"on": True}), "LIGHT ON"),
        (DeviceCommand("light", {"on": False}), "LIGHT OFF"),
        (DeviceCommand("status"), "STATUS?"),
    ]:
        assert session.command(command, 1.0) == []
        assert sent(session) == [body]
    bad: list[tuple[str, dict[str, Any]]] = [
        ("shake", {"cycle_id": "C 1"}),
        ("shake", {"cycle_id": ""}),
        ("shake", {"cycle_id": False}),
        ("shake", {"cycle_id": "C", "pushes": 0}),
        ("shake", {"cycle_id": "C", "pushes": 10}),
        ("shake", {"cycle_id": "C", "pushes": "3"}),
        ("light", {}),
        ("light", {"on": "yes"}),
        ("light", {"on": 1}),
        ("shuffle", {}),
    ]
    for name, args in bad:
        with pytest.raises(UnknownDeviceCommand):
            session.command(DeviceCommand(name, args), 1.0)
    assert session.data_to_send() == b""


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(min_value=0), max_size=30))
def test_arbitrary_bytes_never_raise(data: bytes, cuts: list[int]) -> None:
    session = ShakerSession("shaker1")
    session.connection_made(0.0)
    line_wire.readings_in_pieces(session, data, cuts)
    assert session.stats.bytes_received == len(data)


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


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=2000), cuts=st.lists(st.integers(min_value=0), max_size=20))
def test_the_simulated_shaker_survives_any_host_bytes(data: bytes, cuts: list[int]) -> None:
    device = ShakerDevice(speed=50.0)
    device.connected(0.0)
    # the line end resynchronises the shaker after whatever garbage came before the SHAKE
    line_wire.feed_in_pieces(device, data + b"\n" + frame("SHAKE Z 1"), cuts)
    assert [(cycle.cycle_id, cycle.outcome) for cycle in device.cycles] == [("Z", "at_rest")]


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
