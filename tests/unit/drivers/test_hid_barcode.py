"""The USB HID barcode scanner (`hid-barcode`): report decoding, the card session, the pyusb link.

Decoding and the session are pure and tested with reports written out byte by byte in the HID boot-keyboard
format a keyboard-mode scanner sends (`[modifiers, reserved, key1..key6]`). The link is tested through the
real `DeviceRunner` against `SimulatedScanner`, the device object a fake `usb.core.find` returns: real
`usb.core.USBError`s on unplug, the kernel driver detached, the interface claimed through `usb.util`.

Its unit tests; the integration ones are in `tests/integration/test_hid_barcode.py`."""

from __future__ import annotations

import asyncio
import errno
from typing import Any

import pytest
import usb.core
from hypothesis import given
from hypothesis import strategies as st

from controller.checks import runtime_problems
from controller.commands import parse_command
from controller.config import ConfigError
from controller.machine import MachineStep, TableMachine
from controller.table_build import TABLE_CONFIGS, build_core, build_session
from drivers.hid.keyboard import BarcodeDecoder, key_report, type_barcode
from drivers.hid.session import HidBarcodeSession, default_card_barcodes, frame
from drivers.hid.simulator import SimulatedScanner
from drivers.hid.usb import open_usb_hid, parse_usb_address
from drivers.readings import CardSeen, CardUnread, CutCardSeen, DeviceOffline, DeviceOnline, Reading
from drivers.registry import is_usb, link_opener, session_class
from drivers.session import DeviceCommand, UnknownDeviceCommand
from drivers.transport import LinkError

pytestmark = pytest.mark.unit

T0 = 1_700_000_000.0

# "SA" then Enter, as a scanner with key rollover sends it: shift+S; S still down as A goes down (shift
# held); S up; A up; Enter; all up.
SA_ROLLOVER = [
    "0200160000000000",
    "0200160400000000",
    "0200040000000000",
    "0000000000000000",
    "0000280000000000",
    "0000000000000000",
]
# "h10" in lower case (scanner set to lower case), one key at a time, right shift unused; keypad Enter.
H10_LOWER = [
    "00000b0000000000",
    "0000000000000000",
    "00001e0000000000",
    "0000000000000000",
    "0000270000000000",
    "0000000000000000",
    "0000580000000000",
    "0000000000000000",
]
# "DQ" with the RIGHT shift key (0x20).
DQ_RIGHT_SHIFT = ["2000070000000000", "0000000000000000", "2000140000000000", "0000000000000000"]
ENTER = ["0000280000000000", "0000000000000000"]


def reports(hexes: list[str]) -> list[bytes]:
    return [bytes.fromhex(h) for h in hexes]


# --- decoding ---------------------------------------------------------------------------------------------


def test_recorded_reports_decode_to_barcodes() -> None:
    decoder = BarcodeDecoder()
    assert decoder.feed_all(reports(SA_ROLLOVER)) == ["SA"]
    assert decoder.feed_all(reports(H10_LOWER)) == ["h10"]
    assert decoder.feed_all(reports(DQ_RIGHT_SHIFT + ENTER)) == ["DQ"]
    assert decoder.stats.barcodes == 3
    assert not decoder.stats.rejected


def test_a_key_counts_once_while_held_and_again_after_its_release() -> None:
    decoder = BarcodeDecoder()
    a = 0x04
    held = [key_report(a), key_report(a), key_report(a, 0, 0x05), key_report(0x05)]  # a (held) then b
    assert decoder.feed_all([*held, key_report(), key_report(a), key_report(), key_report(0x28)]) == ["aba"]


def test_several_new_keys_in_one_report_count_in_report_order() -> None:
    decoder = BarcodeDecoder()
    assert decoder.feed_all([key_report(0x16, 0x02, 0x04), key_report(), key_report(0x28)]) == ["SA"]


@pytest.mark.parametrize("rollover", [False, True])
@given(text=st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.", min_size=1, max_size=20))
def test_whatever_a_scanner_types_is_read_back(text: str, rollover: bool) -> None:
    assert BarcodeDecoder().feed_all(type_barcode(text, rollover=rollover)) == [text]


def test_bad_reports_are_counted_and_skipped() -> None:
    decoder = BarcodeDecoder()
    bad = [
        bytes(7),  # not a boot-keyboard report
        bytes.fromhex("0001040000000000"),  # reserved byte set
        bytes.fromhex("0000010101010101"),  # ErrorRollOver: too many keys down, says nothing
    ]
    typed = [key_report(0x16, 0x02), key_report(), key_report(0x04, 0x02), key_report(), key_report(0x28)]
    assert decoder.feed_all([typed[0], *bad, *typed[1:]]) == ["SA"]
    assert decoder.stats.rejected == {"report length": 1, "reserved byte set": 1, "error roll-over": 1}


def test_an_unknown_key_spoils_the_barcode_instead_of_vanishing() -> None:
    decoder = BarcodeDecoder()
    assert decoder.feed_all([key_report(0x16), key_report(0x3A), key_report(), key_report(0x28)]) == ["s?"]
    assert decoder.stats.rejected == {"unknown key": 1}


@given(st.lists(st.binary(min_size=0, max_size=12), max_size=40))
def test_any_bytes_never_raise(chunks: list[bytes]) -> None:
    decoder = BarcodeDecoder()
    decoder.feed_all(chunks)
    session = HidBarcodeSession("shoe")
    for chunk in chunks:
        session.data_received(chunk, 1.0)


# --- the session ------------------------------------------------------------------------------------------


def scan(session: HidBarcodeSession, barcode: str, now: float, *, rollover: bool = False) -> list[Reading]:
    data = b"".join(frame(report) for report in type_barcode(barcode, rollover=rollover))
    return session.data_received(data, now)


def cards_of(readings: list[Reading]) -> list[tuple[str, str, str | None]]:
    return [(r.code, r.ref, r.rescan_of) for r in readings if isinstance(r, CardSeen)]


def test_the_default_map_is_suit_then_rank() -> None:
    table = default_card_barcodes()
    assert len(table) == 52 and len(set(table.values())) == 52
    assert (table["SA"], table["H10"], table["DQ"], table["C2"]) == ("AS", "TH", "QD", "2C")


def test_scanned_cards_become_card_readings_with_the_barcode_as_raw() -> None:
    session = HidBarcodeSession("shoe")
    assert session.connection_made(0.0) == [
        DeviceOnline(device="shoe", time=0.0, detail="USB barcode scanner")
    ]
    (seen,) = scan(session, "H10", 1.0)
    assert seen == CardSeen(device="shoe", time=1.0, raw="barcode H10", code="TH", ref="1")
    # split anywhere: frames are reassembled
    data = b"".join(frame(r) for r in type_barcode("sa", rollover=True))
    readings = [r for i in range(0, len(data), 5) for r in session.data_received(data[i : i + 5], 2.0)]
    assert cards_of(readings) == [("AS", "2", None)]


def test_a_misread_is_an_unread_card_and_the_next_card_its_rescan() -> None:
    session = HidBarcodeSession("shoe")
    assert scan(session, "KS", 1.0) == [CardUnread(device="shoe", time=1.0, raw="barcode KS", ref="1")]
    # fails again: the same card's re-scan, not a new card out of the shoe
    again = [(r.ref, r.rescan_of) for r in scan(session, "XX1", 2.0) if isinstance(r, CardUnread)]
    assert again == [("1", "1")]
    assert cards_of(scan(session, "SK", 3.0)) == [("KS", "1", "1")]
    assert cards_of(scan(session, "SQ", 4.0)) == [("QS", "2", None)]
    assert session.stats.rejected == {"unknown barcode": 2}


def test_the_scanner_retriggering_on_one_card_is_one_card() -> None:
    session = HidBarcodeSession("shoe", same_code_guard=0.8)
    assert len(scan(session, "SA", 1.0)) == 1
    assert scan(session, "SA", 1.5) == []
    assert session.stats.duplicates == 1
    assert len(scan(session, "SA", 2.5)) == 1  # another copy of the card (an 8-deck shoe), later


def test_the_cut_card_and_a_custom_map() -> None:
    session = HidBarcodeSession("shoe", cards={"0001": "AS", "0052": "KC"}, cut_card="CUT")
    assert cards_of(scan(session, "0052", 1.0)) == [("KC", "1", None)]
    assert isinstance(scan(session, "CUT", 2.0)[0], CutCardSeen)
    assert isinstance(scan(session, "SA", 3.0)[0], CardUnread)  # not a barcode of these cards


def test_an_unfinished_barcode_is_dropped_after_the_timeout() -> None:
    session = HidBarcodeSession("shoe", barcode_timeout=0.5)
    partial_sa = b"".join(frame(r) for r in type_barcode("SA")[:-2])  # no Enter
    assert session.data_received(partial_sa, 1.0) == []
    assert session.next_deadline() == 1.5
    session.tick(1.4)
    assert session.next_deadline() == 1.5
    session.tick(1.5)
    assert session.next_deadline() is None
    assert session.stats.rejected == {"unfinished barcode": 1}
    assert cards_of(scan(session, "SK", 2.0)) == [("KS", "1", None)]


def test_unplugging_forgets_the_unfinished_barcode() -> None:
    session = HidBarcodeSession("shoe")
    session.data_received(b"".join(frame(r) for r in type_barcode("SA")[:2]), 1.0)
    assert session.connection_lost(1.1, "unplugged") == [
        DeviceOffline(device="shoe", time=1.1, reason="unplugged")
    ]
    assert cards_of(scan(session, "DQ", 2.0)) == [("QD", "1", None)]


def test_a_broken_frame_is_counted_not_guessed() -> None:
    session = HidBarcodeSession("shoe")
    assert session.data_received(bytes([0, 1, 2, 3]), 1.0) == []
    assert session.stats.rejected == {"bad frame": 1}
    assert cards_of(scan(session, "C10", 2.0)) == [("TC", "1", None)]


def test_a_card_flow_may_lock_and_unlock_a_scanner_which_has_no_gate() -> None:
    session = HidBarcodeSession("shoe")
    for name in ("lock", "unlock", "status"):
        assert session.command(DeviceCommand(name), 1.0) == []
    assert session.data_to_send() == b""
    with pytest.raises(UnknownDeviceCommand):
        session.command(DeviceCommand("shuffle"), 1.0)


def test_a_misread_the_table_paused_for_is_not_waited_for_and_one_it_took_is_through_a_pause() -> None:
    session = HidBarcodeSession("shoe")
    # the gate locked (bets are taken): the table cannot take the misread card; it pauses to hold it (lock
    # again), and the supervisor sets it aside: the next card barcode is a new card
    session.command(DeviceCommand("lock"), 0.5)
    assert [r.ref for r in scan(session, "XX1", 1.0)] == ["1"]
    session.command(DeviceCommand("lock"), 1.0)
    session.command(DeviceCommand("unlock"), 9.0)
    assert cards_of(scan(session, "H9", 10.0)) == [("9H", "2", None)]
    # the gate open: the table waits for the misread card's re-scan, across a pause and its resume
    assert [r.ref for r in scan(session, "XX2", 11.0)] == ["3"]
    session.command(DeviceCommand("lock"), 12.0)
    session.command(DeviceCommand("unlock"), 13.0)
    assert cards_of(scan(session, "SK", 14.0)) == [("KS", "3", "3")]
    # a misread while paused that the table takes at the resume (the gate opens) is waited for too
    session.command(DeviceCommand("lock"), 15.0)
    scan(session, "XX3", 16.0)
    session.command(DeviceCommand("unlock"), 17.0)
    session.command(DeviceCommand("lock"), 18.0)
    session.command(DeviceCommand("unlock"), 19.0)
    assert cards_of(scan(session, "SQ", 20.0)) == [("QS", "4", "4")]


class ScannerTable:
    """A baccarat table reading its cards with a USB scanner, driven as the service drives it: bytes into
    the session, the table core's requests back to it."""

    def __init__(self) -> None:
        table = {**scanner_table(), "game": {"betting_seconds": 5.0, "round_gap_seconds": 1.0}}
        config = TABLE_CONFIGS.from_dict(table, environ={})
        device = config.devices["shoe"]
        self.session = build_session("shoe", device.protocol, device.options)
        self.core = build_core(config)
        self.machine = TableMachine(self.core, {"shoe": self.session}, now=T0)
        self.now = T0
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.take(self.machine.link_opened("shoe", self.now))

    def take(self, step: MachineStep) -> MachineStep:
        assert not step.refused
        self.events += [(event.type, event.data) for event in step.events]
        return step

    def until(self, now: float) -> None:
        self.now = now
        while (step := self.machine.tick(now)) is not None:
            self.take(step)

    def scan(self, barcode: str) -> list[str]:
        self.now += 1.0
        data = b"".join(frame(report) for report in type_barcode(barcode))
        return [event.type for event in self.take(self.machine.feed("shoe", data, self.now)).events]

    def decide(self, name: str) -> None:
        step, _ = self.machine.command(parse_command("commands", name, {}, by="supervisor"), self.now)
        self.take(step)


@pytest.mark.parametrize("decision", ["resume", "void_round"])
def test_the_card_dealt_after_a_misread_was_set_aside_is_dealt_not_taken_for_its_rescan(
    decision: str,
) -> None:
    table = ScannerTable()
    table.until(T0)
    flow = table.core.flow
    assert flow.rounds.phase == "betting_open"
    # a card scanned while bets are taken, and misread: out of procedure, held for the supervisor
    assert table.scan("XX99") == ["round.paused"]
    table.decide(decision)
    assert [data["ref"] for kind, data in table.events if kind == "card.set_aside"] == ["1"]
    table.until(table.now + 10.0)  # betting closes (after a void: the next round opens, then closes)
    assert flow.rounds.phase == "betting_closed" and not table.core.paused
    # the next cards are the round's, dealt where the dealer put them
    assert table.scan("H9") == ["card.dealt"]
    assert table.scan("SK") == ["card.dealt"]
    assert [card.code for card in flow.player] == ["9H"] and [card.code for card in flow.banker] == ["KS"]
    assert not [kind for kind, _ in table.events if kind == "card.rejected"]
    assert [kind for kind, _ in table.events].count("round.paused") == 1
    # a misread the table takes (a card is expected) is still re-scanned after a pause
    assert table.scan("XX98") == ["card.unreadable"]
    table.decide("pause")
    table.decide("resume")
    assert table.scan("D4") == ["card.dealt"]
    dealt = [data for kind, data in table.events if kind == "card.dealt"][-1]
    assert (dealt["card"], dealt["position"], dealt["rescan"]) == ("4D", "player", True)


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"cards": {"SA": "A♠"}}, "not card codes"),
        ({"cards": {"sa": "AS", "SA": "AS"}}, "differ only in case"),
        ({"cut_card": "SA"}, "also a card's"),
        ({"barcode_timeout": 0}, "greater than 0"),
    ],
)
def test_options_that_cannot_work_are_refused(options: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        HidBarcodeSession("shoe", **options)  # type: ignore[arg-type]


# --- configuration ----------------------------------------------------------------------------------------


def scanner_table(port: str = "usb:05e0:1200:SCAN0001", **options: object) -> dict[str, object]:
    return {
        "table": {"table_id": "bac-01", "game": "baccarat", "data_dir": "/tmp/x"},
        "devices": {"shoe": {"protocol": "hid-barcode", "port": port, "options": options}},
    }


def test_a_card_game_reads_its_cards_with_a_barcode_scanner() -> None:
    config = TABLE_CONFIGS.from_dict(scanner_table(cut_card="CUT", same_code_guard=1.5), environ={})
    device = config.devices["shoe"]
    session = build_session("shoe", device.protocol, device.options)
    assert isinstance(session, HidBarcodeSession) and session.cut_card == "CUT"
    assert session_class("hid-barcode") is HidBarcodeSession
    assert is_usb("hid-barcode") and link_opener("hid-barcode") is open_usb_hid
    assert runtime_problems(config) == []
    with pytest.raises(ConfigError, match=r"devices\.shoe\.options\.cards"):
        TABLE_CONFIGS.from_dict(scanner_table(cards={"SA": "1S"}), environ={})


def test_check_config_names_a_usb_address_it_cannot_use() -> None:
    config = TABLE_CONFIGS.from_dict(scanner_table(port="/dev/ttyACM0"), environ={})
    (problem,) = runtime_problems(config)
    assert problem.startswith("devices.shoe.port: '/dev/ttyACM0' is not a USB device address: use usb:")
    assert parse_usb_address("usb:05E0:1200") == parse_usb_address("usb:05e0:1200")


async def test_a_scanner_is_found_by_its_serial_number_only() -> None:
    scanner = SimulatedScanner(serial="OTHER001")
    with pytest.raises(LinkError, match=r"usb:05e0:1200:SIM00001 not found \(is it plugged in"):
        await open_usb_hid("usb:05e0:1200:SIM00001", find=scanner.find)
    _reader, writer = await open_usb_hid("usb:05e0:1200", find=scanner.find)
    writer.close()
    await writer.wait_closed()


async def test_no_permission_says_to_install_the_udev_rule() -> None:
    scanner = SimulatedScanner()

    def refuse(interface: int) -> bool:
        raise usb.core.USBError("Access denied (insufficient permissions)", errno=errno.EACCES)

    scanner.is_kernel_driver_active = refuse  # type: ignore[method-assign]
    with pytest.raises(LinkError, match=r"no permission .* udev rule"):
        await open_usb_hid("usb:05e0:1200", find=scanner.find)
    with pytest.raises(LinkError, match="not a USB device address"):
        await open_usb_hid("/dev/ttyACM0", find=scanner.find)


async def test_closing_the_link_releases_the_scanner() -> None:
    scanner = SimulatedScanner()
    _reader, writer = await open_usb_hid("usb:05e0:1200", find=scanner.find)
    assert scanner.claimed == {0}
    writer.close()
    await writer.wait_closed()
    for _ in range(50):  # the worker leaves its blocking read within READ_TIMEOUT_MS
        if scanner.disposed:
            break
        await asyncio.sleep(0.02)
    assert scanner.disposed and scanner.claimed == set()
