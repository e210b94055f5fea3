"""ShoeSession, pure: bytes and times in, readings and ACKs out (no port, no clock).

What every line session does (STATUS? then HELLO, states and faults, bad lines, commands, arbitrary bytes)
is checked for the shoe with the other line devices in `test_line_devices.py`; here, what the shoe does:
cards, no-reads and re-scans, the cut card, de-duplication across a reconnect, the watchdog."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.testing.line_wire import (
    assert_only_spoiled_lines_rejected,
    chunked,
)
from drivers.line.framing import FrameError, LineFramer, encode_line, parse_frame
from drivers.readings import (
    CardSeen,
    CardUnread,
    CutCardSeen,
    DeviceFault,
    DeviceFaultCleared,
    DeviceOffline,
    DeviceOnline,
    DeviceStatus,
    Reading,
)
from drivers.session import DeviceCommand
from drivers.shoe.protocol import RANKS, SUITS
from drivers.shoe.session import ShoeSession
from drivers.shoe.simulator import ShoeDevice, ShoeFaults

pytestmark = pytest.mark.unit


def line(body: str) -> bytes:
    return encode_line(body)


def raw(body: str) -> str:
    return encode_line(body).rstrip(b"\r\n").decode("ascii")


def connected_shoe(now: float = 0.0) -> ShoeSession:
    shoe = ShoeSession("shoe1")
    shoe.connection_made(now)
    shoe.data_to_send()  # the STATUS? query, checked in its own test
    return shoe


def sent_lines(shoe: ShoeSession) -> list[str]:
    framer = LineFramer()
    bodies = []
    for frame in framer.feed(shoe.data_to_send()):
        body = parse_frame(frame)
        assert isinstance(body, str), f"the session sent a bad frame {frame!r}"
        bodies.append(body)
    return bodies


def test_card_is_acked_and_reported_with_its_raw_line() -> None:
    shoe = connected_shoe()
    shoe.data_received(line("HELLO S 1 X"), 0.1)
    readings = shoe.data_received(line("CARD 0042 TH"), 1.0)
    assert readings == [CardSeen(device="shoe1", time=1.0, raw="CARD 0042 TH*0E", code="TH", ref="0042")]
    assert sent_lines(shoe) == ["ACK 0042"]


def test_a_reading_of_an_acknowledged_line_carries_the_line_as_its_acknowledgement_key() -> None:
    shoe = ShoeSession("shoe1")
    shoe.connection_made(0.0)
    # the first line after the connection brings the shoe online: both readings come from the card's line
    online, card = shoe.data_received(line("CARD 0007 9S"), 0.5)
    assert isinstance(online, DeviceOnline) and isinstance(card, CardSeen)
    assert online.ack == card.ack == raw("CARD 0007 9S")
    # a message sent once (no seq) is acknowledged by nobody
    status, fault = shoe.data_received(line("STATE COVER_OPEN"), 1.0)
    assert isinstance(status, DeviceStatus) and isinstance(fault, DeviceFault)
    assert status.ack == fault.ack == ""
    # the key is not part of what was read
    assert card == CardSeen(device="shoe1", time=0.5, raw=raw("CARD 0007 9S"), code="9S", ref="0007")


def test_duplicates_are_acked_every_time_but_reported_once() -> None:
    shoe = connected_shoe()
    shoe.data_received(line("HB 0"), 0.1)
    first = shoe.data_received(line("CARD 0001 AS"), 1.0)
    assert [r.code for r in first if isinstance(r, CardSeen)] == ["AS"]
    # retransmission (its ACK was lost), then a copy duplicated on the line
    assert shoe.data_received(line("CARD 0001 AS") + line("CARD 0001 AS"), 1.25) == []
    assert sent_lines(shoe) == ["ACK 0001", "ACK 0001", "ACK 0001"]
    assert shoe.stats.duplicates == 2
    # the next seq is a new card, even with the same code (an 8-deck shoe holds each card 8 times)
    assert [r.code for r in shoe.data_received(line("CARD 0002 AS"), 2.0) if isinstance(r, CardSeen)] == [
        "AS"
    ]


def test_dedup_window_survives_a_reconnect() -> None:
    shoe = connected_shoe()
    shoe.data_received(line("HB 0"), 0.1)
    assert len(shoe.data_received(line("CARD 0005 9C"), 1.0)) == 1
    shoe.data_to_send()
    assert shoe.connection_lost(2.0, "unplugged") == [
        DeviceOffline(device="shoe1", time=2.0, reason="unplugged")
    ]
    shoe.connection_made(3.0)
    shoe.data_to_send()
    # after the replug the shoe retransmits the card whose ACK it never got
    readings = shoe.data_received(line("HELLO S 1 X") + line("CARD 0005 9C"), 3.1)
    assert [type(r) for r in readings] == [DeviceOnline]
    assert sent_lines(shoe) == ["ACK 0005"]
    assert shoe.stats.duplicates == 1


def test_seq_wraps_from_9999_to_0000() -> None:
    shoe = connected_shoe()
    shoe.data_received(line("HB 0"), 0.1)
    readings = shoe.data_received(line("CARD 9999 KH") + line("CARD 0000 QH"), 1.0)
    assert [(r.ref, r.code) for r in readings if isinstance(r, CardSeen)] == [("9999", "KH"), ("0000", "QH")]


def test_noread_then_rescan_with_the_same_seq() -> None:
    shoe = connected_shoe()
    shoe.data_received(line("HB 0"), 0.1)
    assert shoe.data_received(line("NOREAD 0010"), 1.0) == [
        CardUnread(device="shoe1", time=1.0, raw=raw("NOREAD 0010"), ref="0010")
    ]
    assert shoe.data_received(line("NOREAD 0010"), 1.25) == []  # retransmission
    assert shoe.data_received(line("RESCAN 0010 7D"), 5.0) == [
        CardSeen(device="shoe1", time=5.0, raw=raw("RESCAN 0010 7D"), code="7D", ref="0010", rescan_of="0010")
    ]
    assert shoe.data_received(line("RESCAN 0010 7D"), 5.25) == []
    assert sent_lines(shoe) == ["ACK 0010"] * 4
    assert shoe.stats.duplicates == 2


@pytest.mark.parametrize("body", ["CARD 0003 XX", "CARD 0003 1H", "RESCAN 0003 AZ", "CARD 0003 10S"])
def test_bad_card_code_is_acked_counted_and_unread(body: str) -> None:
    shoe = connected_shoe()
    shoe.data_received(line("HB 0"), 0.1)
    readings = shoe.data_received(line(body), 1.0)
    # a RESCAN that misreads is the same card read again, never a new card out of the shoe
    rescan_of = "0003" if body.startswith("RESCAN") else None
    assert readings == [CardUnread(device="shoe1", time=1.0, raw=raw(body), ref="0003", rescan_of=rescan_of)]
    assert not any(isinstance(r, CardSeen) for r in readings)
    assert sent_lines(shoe) == ["ACK 0003"]  # or the shoe would retransmit the misread forever
    assert shoe.stats.rejected == {"bad card code": 1}
    assert shoe.data_received(line(body), 1.25) == []  # its retransmission is a duplicate
    assert sent_lines(shoe) == ["ACK 0003"]
    assert shoe.stats.rejected == {"bad card code": 1}


def test_cut_card() -> None:
    shoe = connected_shoe()
    shoe.data_received(line("HB 0"), 0.1)
    assert shoe.data_received(line("CUT 0100"), 1.0) == [
        CutCardSeen(device="shoe1", time=1.0, raw=raw("CUT 0100"), ref="0100")
    ]
    assert sent_lines(shoe) == ["ACK 0100"]


def test_watchdog_offline_after_3_s_of_silence_and_online_on_next_line() -> None:
    shoe = connected_shoe(100.0)
    shoe.data_received(line("HELLO S 1 X"), 100.2)
    assert shoe.tick(103.1) == []  # 2.9 s of silence
    shoe.data_received(b"HB", 103.1)  # any byte counts, even half a line
    assert shoe.tick(106.0) == []
    assert shoe.tick(106.1) == [
        DeviceOffline(device="shoe1", time=106.1, reason="no data from device for 3 s")
    ]
    assert not shoe.online
    assert shoe.tick(110.0) == []  # reported once
    # noise proves bytes arrive, not that the device talks: still offline
    assert shoe.data_received(b"\xff\xfe\r\n", 111.0) == []
    assert not shoe.online
    readings = shoe.data_received(line("HB 11"), 112.0)
    assert readings == [DeviceOnline(device="shoe1", time=112.0, raw=raw("HB 11"))]
    # online again: a valid card line right after an outage brings it online and is reported too
    shoe.tick(115.5)
    readings = shoe.data_received(line("CARD 0009 JS"), 116.0)
    assert [type(r) for r in readings] == [DeviceOnline, CardSeen]


def test_watchdog_reports_a_device_silent_from_the_start_once() -> None:
    shoe = connected_shoe(0.0)
    assert shoe.tick(2.99) == []
    assert shoe.tick(3.0) == [DeviceOffline(device="shoe1", time=3.0, reason="no data from device for 3 s")]
    assert shoe.tick(9.0) == []


def test_no_watchdog_while_disconnected() -> None:
    shoe = connected_shoe(0.0)
    shoe.data_received(line("HB 0"), 0.5)
    shoe.connection_lost(1.0, "port gone")
    assert shoe.tick(10.0) == []


# --- property tests ----------------------------------------------------------------------------------


codes = st.builds(lambda r, s: r + s, st.sampled_from(RANKS), st.sampled_from(SUITS))
noise = st.binary(min_size=1, max_size=60).filter(
    lambda n: b"\n" not in n and isinstance(parse_frame(n.removesuffix(b"\r")), FrameError)
)


@settings(max_examples=300, deadline=None)
@given(
    cards=st.lists(codes, max_size=30),
    noise_after=st.lists(st.one_of(st.none(), noise), max_size=30),
    repeats=st.lists(st.integers(1, 3), max_size=30),
    cuts=st.lists(st.integers(min_value=0), max_size=40),
)
def test_cards_among_noise_and_duplicates_come_out_once_in_order(
    cards: list[str], noise_after: list[bytes | None], repeats: list[int], cuts: list[int]
) -> None:
    stream = bytearray(line("HELLO S 1 X"))
    expected_noise = 0
    for index, code in enumerate(cards):
        copies = repeats[index] if index < len(repeats) else 1
        stream += line(f"CARD {index:04d} {code}") * copies
        burst = noise_after[index] if index < len(noise_after) else None
        if burst is not None:
            stream += burst + b"\r\n"
            expected_noise += 1
    shoe = connected_shoe()
    seen: list[Reading] = []
    for piece in chunked(bytes(stream), cuts):
        seen += shoe.data_received(piece, 1.0)
    assert [r.code for r in seen if isinstance(r, CardSeen)] == cards
    assert [r.ref for r in seen if isinstance(r, CardSeen)] == [f"{i:04d}" for i in range(len(cards))]
    assert shoe.stats.rejected_total == expected_noise
    total_copies = sum(repeats[i] if i < len(repeats) else 1 for i in range(len(cards)))
    assert sent_lines(shoe) == [
        f"ACK {i:04d}" for i in range(len(cards)) for _ in range(repeats[i] if i < len(repeats) else 1)
    ]
    assert shoe.stats.duplicates == total_copies - len(cards)


# --- the simulated shoe core against the session, sans-IO (times passed in) ----------------------------


class Wire:
    """Connects a ShoeDevice and a ShoeSession directly; `step` moves bytes both ways at time `now`."""

    def __init__(self, device: ShoeDevice, deliver_acks: bool = True) -> None:
        self.device = device
        self.session = ShoeSession("shoe1")
        self.deliver_acks = deliver_acks
        self.readings: list[Reading] = []
        self.device.connected(0.0)
        self.session.connection_made(0.0)

    def step(self, now: float) -> bytes:
        emitted = self.device.poll(now)
        self.readings += self.session.data_received(emitted, now)
        self.readings += self.session.tick(now)
        to_device = self.session.data_to_send()
        if self.deliver_acks:
            self.device.receive(to_device, now)
        return emitted

    def run(self, start: float, end: float, step: float = 0.05) -> None:
        now = start
        while now < end:
            self.step(now)
            now = round(now + step, 6)


def test_simulated_shoe_hello_heartbeat_and_retransmission_timing() -> None:
    wire = Wire(ShoeDevice(cards=["AS", "2S"]), deliver_acks=False)
    assert wire.step(0.0) == line("HELLO SIMSHOE 1.0.0 SIM0001")
    assert wire.device.draw(0.1)
    assert wire.step(0.1) == line("CARD 0001 AS")
    assert wire.step(0.3) == b""
    assert wire.step(0.35) == line("CARD 0001 AS")  # 250 ms later, same seq
    assert wire.step(1.0) == line("HB 1") + line("CARD 0001 AS")
    assert [type(r) for r in wire.readings] == [DeviceOnline, CardSeen]  # duplicates dropped
    assert wire.session.stats.duplicates == 2
    # once the ACKs reach the shoe, it moves on to the next card
    wire.deliver_acks = True
    assert wire.device.draw(1.1)
    assert wire.step(1.1) == b""  # still waiting for ACK 0001 (stop-and-wait keeps the order)
    assert wire.step(1.25) == line("CARD 0001 AS")  # ACKed this time: the shoe is free
    assert wire.step(1.26) == line("CARD 0002 2S")
    assert wire.step(1.27) == line("STATE EMPTY")  # never before the last card
    assert [r.code for r in wire.readings if isinstance(r, CardSeen)] == ["AS", "2S"]


def test_simulated_shoe_deals_a_whole_shoe_through_spoiled_lines_exactly_once() -> None:
    faults = ShoeFaults(bad_checksum_rate=0.3, noise_rate=0.2, duplicate_rate=0.3, noread_rate=0.1, seed=9)
    device = ShoeDevice(decks=1, seed=4, faults=faults)
    wire = Wire(device)
    now = 0.0
    while device.remaining:
        assert device.draw(now)
        while device.unread:
            wire.run(now, now + 0.5)
            now += 0.5
            assert device.rescan(now)
        wire.run(now, now + 0.3)
        now += 0.3
    wire.run(now, now + 3.0)
    cards = [r.code for r in wire.readings if isinstance(r, CardSeen)]
    assert cards == device.cards  # every card once, in order, none invented
    assert len(set(cards)) == 52
    cut_at = next(i for i, r in enumerate(wire.readings) if isinstance(r, CutCardSeen))
    cards_before_cut = sum(1 for r in wire.readings[:cut_at] if isinstance(r, CardSeen))
    assert cards_before_cut == 52 - 16
    assert_only_spoiled_lines_rejected(wire.session, device)
    assert not any(isinstance(r, DeviceOffline) for r in wire.readings)


def test_simulated_shoe_lock_status_and_faults() -> None:
    device = ShoeDevice(cards=["AS", "KH"])
    wire = Wire(device)
    wire.step(0.0)
    wire.session.command(DeviceCommand("lock"), 0.1)
    wire.step(0.1)
    wire.step(0.15)
    assert device.locked
    assert not device.draw(0.2)
    assert device.remaining == 2
    wire.session.command(DeviceCommand("status"), 0.3)
    wire.step(0.3)
    wire.step(0.35)
    device.fault("F03")
    wire.step(0.4)
    assert not device.draw(0.45)
    device.clear_fault()
    wire.step(0.5)
    statuses = [r.state for r in wire.readings if isinstance(r, DeviceStatus)]
    # connection_made's STATUS?, then LOCK, STATUS?, the jam, and the recovery
    assert statuses == ["READY", "LOCKED", "LOCKED", "FAULT", "LOCKED"]
    faults = [(r.code, r.reason) for r in wire.readings if isinstance(r, DeviceFault)]
    assert faults == [("F03", "JAM")]
    assert [type(r) for r in wire.readings if isinstance(r, DeviceFaultCleared)] == [DeviceFaultCleared]
    assert [line.text for line in device.received] == ["STATUS?", "LOCK", "STATUS?"]


def test_simulated_shoe_seq_wraps() -> None:
    device = ShoeDevice(cards=["AS", "2S", "3S"], first_seq=9999)
    wire = Wire(device)
    for index in range(3):
        assert device.draw(index * 0.5)
        wire.run(index * 0.5, index * 0.5 + 0.5)
    assert [(r.ref, r.code) for r in wire.readings if isinstance(r, CardSeen)] == [
        ("9999", "AS"),
        ("0000", "2S"),
        ("0001", "3S"),
    ]
