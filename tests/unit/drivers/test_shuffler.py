"""The `shuffler-line` driver, what only the shuffler does: its shuffles judged by their counts, its errors,
and the simulated shuffler against it, sans-IO (what every line device does is in `test_line_devices.py`).

Checksums are computed by the tests (`controller.testing.line_wire.frame`), not taken from the code under
test.

Its unit tests; the integration ones are in `tests/integration/test_shuffler.py`."""

from __future__ import annotations

from typing import Any

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
    Reading,
    ShuffleDone,
    ShuffleFailed,
)
from drivers.session import DeviceCommand
from drivers.shuffler.protocol import (
    Err,
)
from drivers.shuffler.session import ShufflerSession
from drivers.shuffler.simulator import ShufflerDevice, ShufflerFaults

pytestmark = pytest.mark.unit


# --- the message table ---------------------------------------------------------------------------------


def test_count_fields_validity() -> None:
    assert Err(5, "E02", "COUNT_MISMATCH 416 415", 416, 415).count_fields_valid
    assert not Err(10, "E02", "COUNT_MISMATCH 416 many").count_fields_valid
    assert Err(4, "E01", "JAM").count_fields_valid
    assert Err.count_mismatch(3, 52, 51) == Err(3, "E02", "COUNT_MISMATCH 52 51", 52, 51)


# --- the host session, sans-IO ---------------------------------------------------------------------------


def connected(now: float = 0.0) -> ShufflerSession:
    return line_wire.hello_received(ShufflerSession("shuffler1"), "SIMSHUF 1.0.0 SIM0002", now)


def failed_and_faulted(body: str, now: float, code: str, reason: str, **failure: Any) -> list[Reading]:
    """What a failed shuffle's line reads as: the failure (and what else it names), the fault it latches."""
    return [
        ShuffleFailed(device="shuffler1", time=now, raw=raw(body), code=code, reason=reason, **failure),
        DeviceFault(device="shuffler1", time=now, raw=raw(body), code=code, reason=reason),
    ]


def test_done_with_the_right_count_is_a_usable_deck_once_and_every_copy_is_acked() -> None:
    session = connected()
    body = "DONE 0007 S-1 8 416"
    assert session.data_received(frame(body), 1.0) == [
        ShuffleDone(device="shuffler1", time=1.0, raw=raw(body), shuffle_id="S-1", decks=8, cards=416)
    ]
    assert session.data_received(frame(body) + frame(body), 1.25) == []  # retransmissions
    assert sent(session) == ["ACK 0007"] * 3
    assert session.stats.duplicates == 2
    assert session.stats.rejected == {}


@pytest.mark.parametrize(("decks", "cards"), [(8, 415), (8, 417), (1, 51), (1, 53), (1, 0), (2, 52)])
def test_done_with_a_wrong_count_is_a_failure_never_a_deck(decks: int, cards: int) -> None:
    session = connected()
    session.command(DeviceCommand("shuffle", {"shuffle_id": "S-2", "decks": decks}), 0.5)
    assert sent(session) == [f"SHUFFLE S-2 {decks}"]
    body = f"DONE 0008 S-2 {decks} {cards}"
    readings = session.data_received(frame(body), 1.0)
    expected = decks * 52
    reason = (
        f"shuffle S-2 counted {cards} cards, expected {expected} ({decks} x 52): the deck must not be used"
    )
    assert readings == failed_and_faulted(
        body, 1.0, "COUNT_MISMATCH", reason, expected=expected, actual=cards, shuffle_id="S-2"
    )
    assert not any(isinstance(r, ShuffleDone) for r in readings)
    assert sent(session) == ["ACK 0008"]  # acknowledged, or the shuffler would repeat it forever
    assert session.data_received(frame(body), 1.25) == []
    # The shuffler sees nothing wrong and says READY: that does not make the deck usable.
    assert session.data_received(frame("STATE READY"), 1.3) == [
        DeviceStatus(device="shuffler1", time=1.3, raw=raw("STATE READY"), state="READY")
    ]
    assert session.faulted
    # Only once the deck has left the output tray is the shuffler usable again.
    assert session.data_received(frame("STATE IDLE"), 9.0) == [
        DeviceStatus(device="shuffler1", time=9.0, raw=raw("STATE IDLE"), state="IDLE"),
        DeviceFaultCleared(device="shuffler1", time=9.0, raw=raw("STATE IDLE"), detail="IDLE"),
    ]
    assert not session.faulted


def test_err_count_mismatch_is_parsed_and_cleared_by_reset() -> None:
    session = connected()
    session.command(DeviceCommand("shuffle", {"shuffle_id": 17, "decks": 8}), 0.5)
    assert sent(session) == ["SHUFFLE 17 8"]
    body = "ERR 0002 E02 COUNT_MISMATCH 416 414"
    assert session.data_received(frame(body), 3.0) == failed_and_faulted(
        body, 3.0, "E02", "COUNT_MISMATCH 416 414", expected=416, actual=414, shuffle_id="17"
    )
    assert sent(session) == ["ACK 0002"]
    # the STATE ERROR that follows is the same fault: not reported twice
    assert [type(r) for r in session.data_received(frame("STATE ERROR"), 3.1)] == [DeviceStatus]
    session.command(DeviceCommand("reset"), 4.0)
    assert sent(session) == ["RESET"]
    readings = session.data_received(frame("STATE LOADING"), 4.1)
    assert [type(r).__name__ for r in readings] == ["DeviceStatus", "DeviceFaultCleared"]
    assert session.stats.rejected == {}


def test_err_with_unreadable_counts_is_still_a_failure_and_is_counted() -> None:
    session = connected()
    body = "ERR 0003 E02 COUNT_MISMATCH lots 12"
    readings = session.data_received(frame(body), 1.0)
    assert readings == failed_and_faulted(
        body, 1.0, "E02", "COUNT_MISMATCH lots 12", expected=None, actual=None, shuffle_id=""
    )
    assert sent(session) == ["ACK 0003"]
    assert session.stats.rejected == {"malformed count mismatch": 1}


@pytest.mark.parametrize(
    ("code", "text"), [("E01", "JAM"), ("E04", "INPUT_EMPTY"), ("E05", "MOTOR"), ("E42", "NEW THING")]
)
def test_errors_are_failures_and_faults(code: str, text: str) -> None:
    session = connected()
    session.command(DeviceCommand("shuffle", {"shuffle_id": "S-3", "decks": 1}), 0.5)
    session.data_to_send()
    body = f"ERR 0004 {code} {text}"
    assert session.data_received(frame(body), 2.0) == failed_and_faulted(
        body, 2.0, code, text, shuffle_id="S-3"
    )
    assert session.requested_shuffle is None
    assert sent(session) == ["ACK 0004"]


def test_an_abort_forgets_the_requested_shuffle() -> None:
    session = connected()
    session.command(DeviceCommand("shuffle", {"shuffle_id": "S-9", "decks": 1}), 1.0)
    assert session.requested_shuffle is not None
    session.command(DeviceCommand("abort"), 1.0)
    assert sent(session) == ["SHUFFLE S-9 1", "ABORT"]
    assert session.requested_shuffle is None


@settings(max_examples=200, deadline=None)
@given(
    shuffles=st.lists(st.tuples(st.integers(1, 8), st.integers(-2, 2)), max_size=15),
    repeats=st.lists(st.integers(1, 3), max_size=15),
    noise=st.lists(st.one_of(st.none(), line_noise), max_size=15),
    cuts=st.lists(st.integers(min_value=0), max_size=30),
)
def test_every_done_is_judged_once_by_its_count_among_noise_and_copies(
    shuffles: list[tuple[int, int]], repeats: list[int], noise: list[bytes | None], cuts: list[int]
) -> None:
    stream = bytearray(frame("HELLO S 1 X"))
    copies = [repeats[i] if i < len(repeats) else 1 for i in range(len(shuffles))]
    bursts = 0
    for index, (decks, off_by) in enumerate(shuffles):
        stream += frame(f"DONE {index:04d} s{index} {decks} {decks * 52 + off_by}") * copies[index]
        burst = noise[index] if index < len(noise) else None
        if burst is not None:
            stream += burst + b"\r\n"
            bursts += 1
    session = ShufflerSession("shuffler1")
    session.connection_made(0.0)
    session.data_to_send()
    readings: list[Reading] = []
    for piece in chunked(bytes(stream), cuts):
        readings += session.data_received(piece, 1.0)
    outcomes = [
        (r.shuffle_id, "done") if isinstance(r, ShuffleDone) else (r.shuffle_id, "failed")
        for r in readings
        if isinstance(r, ShuffleDone | ShuffleFailed)
    ]
    assert outcomes == [(f"s{i}", "done" if off == 0 else "failed") for i, (_, off) in enumerate(shuffles)]
    assert sent(session) == [f"ACK {i:04d}" for i in range(len(shuffles)) for _ in range(copies[i])]
    assert session.stats.duplicates == sum(copies) - len(shuffles)
    assert session.stats.rejected_total == bursts


# --- the simulated shuffler against the session, sans-IO (times passed in) ------------------------------


class Wire(LineWire):
    """Connects a ShufflerDevice and a ShufflerSession directly; `step` moves bytes both ways at `now`."""

    def __init__(self, device: ShufflerDevice, deliver_acks: bool = True) -> None:
        super().__init__(device, ShufflerSession("shuffler1"), deliver_acks)


def test_simulated_shuffle_takes_its_time_and_is_retransmitted_until_acked() -> None:
    device = ShufflerDevice(speed=10.0)  # (4 s + 6 s per deck) / 10: one deck takes 1.0 s
    assert device.shuffle_seconds(1) == pytest.approx(1.0)
    wire = Wire(device, deliver_acks=False)
    assert wire.step(0.0) == frame("HELLO SIMSHUF 1.0.0 SIM0002")
    assert wire.step(0.05) == frame("STATE IDLE")  # the answer to the session's STATUS?
    assert device.load(52, 0.1)
    assert wire.step(0.1) == frame("STATE LOADING")
    wire.send("shuffle", shuffle_id="A1", decks=1)
    assert wire.step(0.15) == b""  # the SHUFFLE reaches the shuffler at 0.15
    assert wire.step(0.2) == frame("STATE SHUFFLING")
    assert device.shuffling
    assert wire.step(1.1) == frame("HB 1")  # 0.95 s into the shuffle: not done
    assert wire.step(1.15) == frame("DONE 0001 A1 1 52")
    assert wire.step(1.2) == b""  # stop-and-wait: STATE READY waits behind the unacknowledged DONE
    assert wire.step(1.4) == frame("DONE 0001 A1 1 52")  # 250 ms later, same seq
    assert wire.step(1.65) == frame("DONE 0001 A1 1 52")
    wire.deliver_acks = True
    assert wire.step(1.9) == frame("DONE 0001 A1 1 52")  # this copy's ACK reaches the shuffler
    assert wire.step(1.95) == frame("STATE READY")
    assert wire.of(ShuffleDone) == [
        ShuffleDone(
            device="shuffler1", time=1.15, raw=raw("DONE 0001 A1 1 52"), shuffle_id="A1", decks=1, cards=52
        )
    ]
    assert wire.session.stats.duplicates == 3
    assert device.shuffles[0].outcome == "done"
    assert device.take_output(2.1) == 52
    wire.run(0.1)
    assert wire.states()[-1] == "IDLE"


def test_simulated_jam_then_reset_then_a_good_shuffle() -> None:
    device = ShufflerDevice(speed=20.0)
    wire = Wire(device)
    wire.run(0.1)
    device.load(8 * 52, wire.now)
    device.jam_next()
    wire.send("shuffle", shuffle_id="J1", decks=8)
    wire.run(device.shuffle_seconds(8) / 2 + 0.2)
    [failed] = wire.of(ShuffleFailed)
    assert (failed.code, failed.reason, failed.shuffle_id) == ("E01", "JAM", "J1")
    assert [(f.code, f.reason) for f in wire.of(DeviceFault)] == [("E01", "JAM")]
    assert device.state == "ERROR"
    wire.send("shuffle", shuffle_id="J2", decks=8)  # refused in ERROR: answered with STATE ERROR
    wire.run(0.2)
    assert wire.states()[-1] == "ERROR"
    wire.send("reset")
    wire.run(0.2)
    assert wire.states()[-1] == "LOADING"  # the cards are back in the input tray
    assert len(wire.of(DeviceFaultCleared)) == 1
    wire.send("shuffle", shuffle_id="J3", decks=8)
    wire.run(device.shuffle_seconds(8) + 0.3)
    assert [(d.shuffle_id, d.cards) for d in wire.of(ShuffleDone)] == [("J3", 416)]
    assert [r.outcome for r in device.shuffles] == ["E01", "done"]
    assert [r.shuffle_id for r in device.shuffles] == ["J1", "J3"]


@pytest.mark.parametrize(
    ("loaded", "miscount", "checks_count", "expected"),
    [
        (51, 0, False, ("COUNT_MISMATCH", 52, 51)),  # the dealer lost a card
        (52, 1, False, ("COUNT_MISMATCH", 52, 53)),  # the counting sensor saw one too many
        (53, 0, True, ("E02", 52, 53)),  # the firmware checks the count itself
    ],
)
def test_simulated_count_mismatch_is_never_a_usable_deck(
    loaded: int, miscount: int, checks_count: bool, expected: tuple[str, int, int]
) -> None:
    device = ShufflerDevice(speed=20.0, checks_count=checks_count)
    wire = Wire(device)
    wire.run(0.1)
    device.load(loaded, wire.now)
    if miscount:
        device.miscount_next(miscount)
    wire.send("shuffle", shuffle_id="C1", decks=1)
    wire.run(device.shuffle_seconds(1) + 0.3)
    assert wire.of(ShuffleDone) == []
    [failed] = wire.of(ShuffleFailed)
    assert (failed.code, failed.expected, failed.actual, failed.shuffle_id) == (*expected, "C1")
    assert [fault.code for fault in wire.of(DeviceFault)] == [expected[0]]
    assert wire.session.faulted
    assert wire.of(DeviceFaultCleared) == []
    if checks_count:
        wire.send("reset")
    else:
        device.take_output(wire.now)  # the dealer removes the bad deck
    wire.run(0.2)
    assert len(wire.of(DeviceFaultCleared)) == 1
    assert not wire.session.faulted


def test_simulated_door_abort_and_empty_input() -> None:
    device = ShufflerDevice(speed=20.0)
    wire = Wire(device)
    wire.run(0.1)
    wire.send("shuffle", shuffle_id="E1", decks=1)  # nothing loaded
    wire.run(0.2)
    assert [(f.code, f.reason) for f in wire.of(ShuffleFailed)] == [("E04", "INPUT_EMPTY")]
    wire.send("reset")
    wire.run(0.1)
    assert device.load(52, wire.now)
    wire.run(0.1)
    assert device.state == "LOADING"

    wire.send("shuffle", shuffle_id="D1", decks=1)
    wire.run(0.1)
    device.open_door(wire.now)
    wire.run(0.2)
    assert [(f.code, f.reason) for f in wire.of(ShuffleFailed)][-1] == ("E03", "DOOR_OPEN")
    assert wire.states()[-1] == "DOOR_OPEN"
    wire.send("reset")  # refused while the door is open
    wire.run(0.2)
    assert wire.states()[-1] == "DOOR_OPEN"
    device.close_door(wire.now)
    wire.run(0.1)
    assert wire.states()[-1] == "ERROR"
    wire.send("reset")
    wire.run(0.1)
    assert wire.states()[-1] == "LOADING"

    wire.send("shuffle", shuffle_id="A1", decks=1)
    wire.run(0.2)
    wire.send("abort")
    wire.run(device.shuffle_seconds(1) + 0.3)  # well past when it would have finished
    assert wire.of(ShuffleDone) == []
    assert wire.states()[-1] == "LOADING"
    assert [r.outcome for r in device.shuffles] == ["E04", "E03", "aborted"]
    assert wire.session.requested_shuffle is None
    assert wire.of(DeviceFaultCleared) and not wire.session.faulted


def test_simulated_shuffles_through_spoiled_lines_come_out_exactly_once() -> None:
    faults = ShufflerFaults(
        jam_rate=0.15,
        motor_rate=0.1,
        miscount_rate=0.15,
        bad_checksum_rate=0.3,
        noise_rate=0.2,
        duplicate_rate=0.3,
        seed=4,
    )
    device = ShufflerDevice(speed=40.0, faults=faults)
    wire = Wire(device)
    wire.run(0.2)
    for number in range(30):
        device.load(2 * 52, wire.now)
        wire.send("shuffle", shuffle_id=f"R{number}", decks=2)
        wire.run(device.shuffle_seconds(2) + 1.0)
        if device.state == "ERROR":
            wire.send("reset")
            wire.run(0.5)
        device.take_output(wire.now)
        if device.input_cards:  # a failed shuffle left its cards in the input tray
            device.input_cards = 0
        wire.run(0.5)
    outcomes = {r.shuffle_id: r.outcome for r in device.shuffles}
    done = {d.shuffle_id for d in wire.of(ShuffleDone)}
    failed = {f.shuffle_id: f.code for f in wire.of(ShuffleFailed)}
    assert len(wire.of(ShuffleDone)) == len(done)  # exactly once each
    assert len(wire.of(ShuffleFailed)) == len(failed)
    assert done == {i for i, o in outcomes.items() if o == "done" and i not in failed}
    assert {i: c for i, c in failed.items() if c != "COUNT_MISMATCH"} == {
        i: o for i, o in outcomes.items() if o not in ("done",)
    }
    miscounted = {r.shuffle_id for r in device.shuffles if r.outcome == "done" and r.counted != 104}
    assert {i for i, c in failed.items() if c == "COUNT_MISMATCH"} == miscounted
    assert done and miscounted and len(failed) > len(miscounted)  # every path was taken
    line_wire.assert_only_spoiled_lines_rejected(wire.session, device)
    assert not wire.of(DeviceOffline)
