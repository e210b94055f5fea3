"""The contract of the line devices: the shoe (`shoe-line`), the shuffler (`shuffler-line`) and the shaker
(`shaker-line`) speak the same framing (`drivers/line/`), and each test here runs over all three (one suite
over several implementations, as python-can runs its tests over each interface).

Per device, `LineDevice` holds what its protocol says: its message table, its host messages, its bad lines,
its commands and its states. What only one device does (a shoe's cards, a shuffler's counts, a shaker's
cycles) is tested in its own module: `test_shoe_session.py`, `test_shoe_protocol.py`, `test_shuffler.py`,
`test_shaker.py`.

Checksums are computed by the tests (`controller.testing.line_wire.frame`), not taken from the code under
test."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from controller.testing import line_wire
from controller.testing.line_wire import bodies, frame, raw, sent
from drivers.line.device import LineDeviceCore
from drivers.line.protocol import Ack, Heartbeat, Hello, ParseFailure, State, StatusQuery
from drivers.line.session import LineDeviceSession
from drivers.readings import (
    CardSeen,
    DeviceFault,
    DeviceFaultCleared,
    DeviceStatus,
    DiceAtRest,
    Reading,
    ShuffleDone,
    ShuffleFailed,
)
from drivers.registry import session_class, simulator_class
from drivers.session import DeviceCommand, UnknownDeviceCommand
from drivers.shaker import protocol as shaker
from drivers.shaker.session import ShakerSession
from drivers.shaker.simulator import ShakerDevice, ShakerSimulator
from drivers.shoe import protocol as shoe
from drivers.shoe.session import ShoeSession
from drivers.shoe.simulator import ShoeDevice, ShoeSimulator
from drivers.shuffler import protocol as shuffler
from drivers.shuffler.session import ShufflerSession
from drivers.shuffler.simulator import ShufflerDevice, ShufflerSimulator

pytestmark = pytest.mark.unit

MALFORMED = ParseFailure("malformed fields")
UNKNOWN = ParseFailure("unknown message")


def spelled_out(body: str) -> bytes:
    """`body` framed with its checksum computed here, byte by byte: the XOR of its bytes."""
    return b"%s*%02X\r\n" % (body.encode("ascii"), reduce(lambda a, b: a ^ b, body.encode("ascii"), 0))


@dataclass(frozen=True)
class LineDevice:
    """One line device as the contract sees it: its protocol's tables and how a session of it starts."""

    protocol: str
    name: str  # the device's name in its readings
    session: type[LineDeviceSession[Any]]
    simulator: type[Any]
    hello: str  # what its simulator says after HELLO
    parse_device: Callable[[str], object]
    parse_host: Callable[[str], object]
    online: Callable[[LineDeviceSession[Any]], None]  # brings a connected session online (STATUS? taken)
    #: every device message: its body and what it parses to; malformed and unknown ones
    device_messages: list[tuple[str, object]]
    malformed_device_messages: list[tuple[str, ParseFailure]]
    #: encodings spelled out (the message and the body framed by the test), one checksum computed byte by
    #: byte, and messages that must come back from their own encoding
    encodings: list[tuple[Any, str]]
    spelled: tuple[Any, bytes]
    round_trips: list[Any]
    #: host messages: parsed, malformed, unknown, encoded (some with their checksum spelled out), and ones
    #: that refuse to be encoded
    host_messages: list[tuple[str, object]]
    malformed_host_messages: list[str]
    unknown_host_messages: list[str]
    host_encodings: list[tuple[Any, str]]
    host_spelled: list[tuple[Any, bytes]]
    unencodable: list[Any]
    #: what must hold of whatever a parser returns, for any text
    check_parsed: Callable[[object], None]
    #: what must hold of any reading made from arbitrary bytes
    check_reading: Callable[[Reading], None]
    #: lines no session of this device reads, with the reason each is counted under, and the good line
    #: (with the kind of reading it makes) read normally after one
    bad_lines: list[tuple[bytes, str]]
    good_line: tuple[str, type[Reading]]
    #: (command, the body it sends) and commands refused (with what the refusal names, if it must)
    commands: list[tuple[DeviceCommand, str]]
    bad_commands: list[tuple[DeviceCommand, str | None]]
    #: a script of lines at their times and the (kind, detail) of each reading they make; what it ACKs
    states: list[tuple[str, float, list[tuple[str, str]]]]
    states_acked: list[str]
    #: a simulated device ready for `command_line`, and what it did with it (`did`)
    device: Callable[[], LineDeviceCore[Any, Any]]
    command_line: str
    did: Callable[[Any], object]
    done: object

    def connected(self) -> LineDeviceSession[Any]:
        session = self.session(self.name)
        session.connection_made(0.0)
        session.data_to_send()  # the STATUS? query, checked in its own test
        self.online(session)
        return session

    def __str__(self) -> str:
        return self.protocol


def hello_at_0(hello: str) -> Callable[[LineDeviceSession[Any]], None]:
    def online(session: LineDeviceSession[Any]) -> None:
        session.data_received(frame(f"HELLO {hello}"), 0.0)

    return online


def heartbeat_at_0_1(session: LineDeviceSession[Any]) -> None:
    session.data_received(frame("HB 0"), 0.1)


def card_codes_are_valid(result: object) -> None:
    if isinstance(result, shoe.Card | shoe.Rescan):
        assert shoe.is_card_code(result.code)  # a Card always holds a valid card, whatever the input


def dones_count_decks(result: object) -> None:
    if isinstance(result, shuffler.Done):
        assert result.decks >= 1 and 0 <= result.cards <= 9999


def cycles_are_one_word(result: object) -> None:
    if isinstance(result, shaker.AtRest):
        assert result.cycle_id and " " not in result.cycle_id


def seen_cards_are_cards(reading: Reading) -> None:
    if isinstance(reading, CardSeen):  # only a valid, checksummed card line can produce a card
        assert reading.code[0] in shoe.RANKS and reading.code[1] in shoe.SUITS


def done_decks_are_whole(reading: Reading) -> None:
    if isinstance(reading, ShuffleDone):  # only a checksummed DONE with the right count
        assert reading.cards == reading.decks * 52


def anything(_: object) -> None:
    pass


def loaded_shuffler() -> ShufflerDevice:
    device = ShufflerDevice(speed=100.0)
    assert device.load(52, 0.0)
    return device


SHOE = LineDevice(
    protocol="shoe-line",
    name="shoe1",
    session=ShoeSession,
    simulator=ShoeSimulator,
    hello="SIMSHOE 1.0.0 SIM0001",
    parse_device=shoe.parse_device_message,
    parse_host=shoe.parse_host_message,
    online=heartbeat_at_0_1,
    device_messages=[
        ("CARD 0042 TH", shoe.Card(42, "TH")),
        ("CARD 9999 AS", shoe.Card(9999, "AS")),
        ("NOREAD 0007", shoe.NoRead(7)),
        ("RESCAN 0007 QD", shoe.Rescan(7, "QD")),
        ("CUT 0000", shoe.Cut(0)),
        ("STATE READY", State("READY")),
        ("STATE EMPTY", State("EMPTY")),
        ("STATE COVER_OPEN", State("COVER_OPEN")),
        ("STATE LOCKED", State("LOCKED")),
        ("STATE FAULT", State("FAULT")),
        ("FAULT F03 JAM", shoe.Fault("F03", "JAM")),
        ("FAULT F09 LIGHT BARRIER", shoe.Fault("F09", "LIGHT BARRIER")),
        ("HB 3600", Heartbeat(3600)),
        ("HELLO SHOE-X 2.1 SN123", Hello("SHOE-X", "2.1", "SN123")),
        ("CARD 0042 XX", shoe.InvalidCardRead(42, "CARD", "XX")),
        ("CARD 0042 1S", shoe.InvalidCardRead(42, "CARD", "1S")),
        ("RESCAN 0042 10H", shoe.InvalidCardRead(42, "RESCAN", "10H")),
        ("CARD 0042 th", shoe.InvalidCardRead(42, "CARD", "th")),
    ],
    malformed_device_messages=[
        ("CARD 42 TH", MALFORMED),
        ("CARD 0042", MALFORMED),
        ("CARD 0042 TH extra", MALFORMED),
        ("CARD  0042 TH", MALFORMED),
        ("CARD 0042 TH ", MALFORMED),
        ("NOREAD", MALFORMED),
        ("NOREAD 00x7", MALFORMED),
        ("CUT 0001 0002", MALFORMED),
        ("STATE OPEN", MALFORMED),
        ("STATE", MALFORMED),
        ("FAULT F03", MALFORMED),
        ("HB", MALFORMED),
        ("DEAL 0001 AS", UNKNOWN),
        ("card 0001 AS", UNKNOWN),
        ("ACK 0001", UNKNOWN),  # a host message coming from the device
    ],
    encodings=[],
    spelled=(shoe.Card(42, "TH"), b"CARD 0042 TH*0E\r\n"),
    round_trips=[
        shoe.Card(42, "TH"),
        shoe.NoRead(1),
        shoe.Rescan(1, "2C"),
        shoe.Cut(9999),
        State("LOCKED"),
        shoe.Fault("F01", "READER_DIRTY"),
        Heartbeat(5),
        Hello("M", "F", "S"),
    ],
    host_messages=[
        ("ACK 0042", Ack(42)),
        ("LOCK", shoe.Lock()),
        ("UNLOCK", shoe.Unlock()),
        ("STATUS?", StatusQuery()),
    ],
    malformed_host_messages=["ACK 42", "ACK"],
    unknown_host_messages=["SHUFFLE 1 8"],
    host_encodings=[(Ack(42), "ACK 0042"), (StatusQuery(), "STATUS?"), (shoe.Unlock(), "UNLOCK")],
    host_spelled=[(shoe.Lock(), b"LOCK*" + b"%02X" % (ord("L") ^ ord("O") ^ ord("C") ^ ord("K")) + b"\r\n")],
    unencodable=[],
    check_parsed=card_codes_are_valid,
    check_reading=seen_cards_are_cards,
    bad_lines=[
        (b"CARD 0042 TH*2E\r\n", "bad checksum"),
        (b"CARD 0042 TH\r\n", "missing checksum"),
        (frame("DEAL 0042 TH"), "unknown message"),
        (frame("CARD 42 TH"), "malformed fields"),
        (frame("STATE SLEEPING"), "malformed fields"),
    ],
    good_line=("CARD 0001 2S", CardSeen),
    commands=[
        (DeviceCommand("lock"), "LOCK"),
        (DeviceCommand("unlock"), "UNLOCK"),
        (DeviceCommand("status"), "STATUS?"),
    ],
    bad_commands=[(DeviceCommand("shuffle"), "shuffle")],
    states=[
        ("STATE READY", 1, [("status", "READY")]),
        ("STATE COVER_OPEN", 2, [("status", "COVER_OPEN"), ("fault", "COVER_OPEN: shoe cover is open")]),
        ("STATE COVER_OPEN", 3, [("status", "COVER_OPEN")]),  # answer to STATUS?: no second fault
        ("STATE READY", 4, [("status", "READY"), ("cleared", "READY")]),
        ("STATE READY", 5, [("status", "READY")]),
        ("FAULT F03 JAM", 6, [("fault", "F03: JAM")]),
        ("STATE FAULT", 7, [("status", "FAULT")]),  # the F03 fault is already reported
        ("STATE EMPTY", 8, [("status", "EMPTY")]),  # not operational yet
        ("STATE LOCKED", 9, [("status", "LOCKED"), ("cleared", "LOCKED")]),
        ("STATE FAULT", 10, [("status", "FAULT"), ("fault", "FAULT: shoe reports a fault")]),
        ("STATE READY", 11, [("status", "READY"), ("cleared", "READY")]),
    ],
    states_acked=[],  # STATE/FAULT carry no seq: nothing to ACK
    device=lambda: ShoeDevice(cards=["AS"]),
    command_line="LOCK",
    did=lambda device: device.locked,
    done=True,
)

SHUFFLER = LineDevice(
    protocol="shuffler-line",
    name="shuffler1",
    session=ShufflerSession,
    simulator=ShufflerSimulator,
    hello="SIMSHUF 1.0.0 SIM0002",
    parse_device=shuffler.parse_device_message,
    parse_host=shuffler.parse_host_message,
    online=hello_at_0("SIMSHUF 1.0.0 SIM0002"),
    device_messages=[
        ("STATE IDLE", State("IDLE")),
        ("STATE LOADING", State("LOADING")),
        ("STATE SHUFFLING", State("SHUFFLING")),
        ("STATE READY", State("READY")),
        ("STATE DOOR_OPEN", State("DOOR_OPEN")),
        ("STATE ERROR", State("ERROR")),
        ("DONE 0001 S-17 8 416", shuffler.Done(1, "S-17", 8, 416)),
        ("DONE 9999 42 1 51", shuffler.Done(9999, "42", 1, 51)),
        ("DONE 0003 r1 1 0", shuffler.Done(3, "r1", 1, 0)),
        ("ERR 0004 E01 JAM", shuffler.Err(4, "E01", "JAM")),
        ("ERR 0005 E02 COUNT_MISMATCH 416 415", shuffler.Err(5, "E02", "COUNT_MISMATCH 416 415", 416, 415)),
        ("ERR 0006 E03 DOOR_OPEN", shuffler.Err(6, "E03", "DOOR_OPEN")),
        ("ERR 0007 E04 INPUT_EMPTY", shuffler.Err(7, "E04", "INPUT_EMPTY")),
        ("ERR 0008 E05 MOTOR", shuffler.Err(8, "E05", "MOTOR")),
        ("ERR 0009 E77 GRIPPER STUCK OPEN", shuffler.Err(9, "E77", "GRIPPER STUCK OPEN")),
        # an E02 whose counts cannot be read is still an error (reported), just without the counts
        ("ERR 0010 E02 COUNT_MISMATCH 416 many", shuffler.Err(10, "E02", "COUNT_MISMATCH 416 many")),
        ("ERR 0011 E02 COUNT_MISMATCH", shuffler.Err(11, "E02", "COUNT_MISMATCH")),
        ("HB 12", Heartbeat(12)),
        ("HELLO SHUF-X 3.2 SN9", Hello("SHUF-X", "3.2", "SN9")),
    ],
    malformed_device_messages=[
        ("STATE", MALFORMED),
        ("STATE BUSY", MALFORMED),
        ("STATE IDLE IDLE", MALFORMED),
        ("DONE 1 S1 8 416", MALFORMED),
        ("DONE 0001 S1 8", MALFORMED),
        ("DONE 0001 S1 8 416 1", MALFORMED),
        ("DONE 0001 S1 0 0", MALFORMED),  # zero decks is no shuffle
        ("DONE 0001 S1 eight 416", MALFORMED),
        ("DONE 0001 S1 8 41x", MALFORMED),
        ("DONE 0001 S1 8 -416", MALFORMED),
        ("DONE 0001 S1 100 5200", MALFORMED),
        ("DONE 0001 S1 8 10000", MALFORMED),
        ("DONE 0001 " + "X" * 33 + " 8 416", MALFORMED),
        ("DONE  0001 S1 8 416", MALFORMED),
        ("DONE 0001 S1 8 416 ", MALFORMED),
        ("ERR 0001 E01", MALFORMED),
        ("ERR 01 E01 JAM", MALFORMED),
        ("ERR", MALFORMED),
        ("HB x", MALFORMED),
        ("HELLO A B", MALFORMED),
        ("SHUFFLED 0001 S1 8 416", UNKNOWN),
        ("done 0001 S1 8 416", UNKNOWN),
        ("ACK 0001", UNKNOWN),  # a host message coming from the device
        ("SHUFFLE S1 8", UNKNOWN),
    ],
    encodings=[
        (shuffler.Done(1, "S-17", 8, 416), "DONE 0001 S-17 8 416"),
        (shuffler.Err.count_mismatch(12, 416, 415), "ERR 0012 E02 COUNT_MISMATCH 416 415"),
        (shuffler.Err(4, "E01", "JAM"), "ERR 0004 E01 JAM"),
        (State("READY"), "STATE READY"),
    ],
    spelled=(shuffler.Reset(), b"RESET*%02X\r\n" % (ord("R") ^ ord("E") ^ ord("S") ^ ord("E") ^ ord("T"))),
    round_trips=[
        shuffler.Done(1, "a", 1, 52),
        shuffler.Err(2, "E05", "MOTOR"),
        shuffler.Err.count_mismatch(3, 104, 103),
        State("DOOR_OPEN"),
        Heartbeat(0),
        Hello("M", "F", "S"),
    ],
    host_messages=[
        ("ACK 0042", Ack(42)),
        ("SHUFFLE S-1 8", shuffler.Shuffle("S-1", 8)),
        ("ABORT", shuffler.Abort()),
        ("RESET", shuffler.Reset()),
        ("STATUS?", StatusQuery()),
    ],
    malformed_host_messages=[
        "SHUFFLE S-1",
        "SHUFFLE S-1 0",
        "SHUFFLE S-1 x",
        "SHUFFLE S-1 8 1",
        "ACK 42",
        "SHUFFLE  S 1",
    ],
    unknown_host_messages=["LOCK"],
    host_encodings=[
        (shuffler.Shuffle("S-1", 8), "SHUFFLE S-1 8"),
        (shuffler.Abort(), "ABORT"),
        (StatusQuery(), "STATUS?"),
    ],
    host_spelled=[],
    unencodable=[
        shuffler.Shuffle(shuffle_id, decks)
        for shuffle_id, decks in [("", 1), ("a b", 1), ("a*b", 1), ("x" * 33, 1), ("S", 0), ("S", 100)]
    ],
    check_parsed=dones_count_decks,
    check_reading=done_decks_are_whole,
    bad_lines=[
        (b"DONE 0001 S1 8 416*00\r\n", "bad checksum"),
        (b"DONE 0001 S1 8 416*5g\r\n", "bad checksum"),
        (b"DONE 0001 S1 8 416\r\n", "missing checksum"),
        (frame("FINISHED 0001 S1 8 416"), "unknown message"),
        (frame("DONE 0001 S1 8 4l6"), "malformed fields"),
        (frame("DONE 1 S1 8 416"), "malformed fields"),
        (frame("ERR 0001 E01"), "malformed fields"),
        (frame("STATE JAMMED"), "malformed fields"),
    ],
    good_line=("DONE 0002 S1 1 52", ShuffleDone),
    commands=[
        (DeviceCommand("shuffle", {"shuffle_id": "S-9", "decks": 1}), "SHUFFLE S-9 1"),
        (DeviceCommand("shuffle", {"shuffle_id": 12, "decks": 8}), "SHUFFLE 12 8"),
        (DeviceCommand("shuffle", {"decks": 1}), "SHUFFLE 1000 1"),  # no id: the time in ms
        (DeviceCommand("abort"), "ABORT"),
        (DeviceCommand("reset"), "RESET"),
        (DeviceCommand("status"), "STATUS?"),
    ],
    bad_commands=[
        *(
            (DeviceCommand("shuffle", args), None)
            for args in [
                {"shuffle_id": "S 1", "decks": 1},
                {"shuffle_id": "S*1", "decks": 1},
                {"shuffle_id": "", "decks": 1},
                {"shuffle_id": True, "decks": 1},
                {"shuffle_id": "S", "decks": 0},
                {"shuffle_id": "S", "decks": 100},
                {"shuffle_id": "S", "decks": True},
                {"shuffle_id": "S", "decks": "8"},
                {"shuffle_id": "S"},
            ]
        ),
        (DeviceCommand("lock"), "lock"),
    ],
    states=[
        ("STATE IDLE", 1, [("status", "IDLE")]),
        ("STATE LOADING", 2, [("status", "LOADING")]),
        ("STATE SHUFFLING", 3, [("status", "SHUFFLING")]),
        ("ERR 0001 E03 DOOR_OPEN", 4, [("failed", "E03"), ("fault", "E03: DOOR_OPEN")]),
        ("STATE DOOR_OPEN", 5, [("status", "DOOR_OPEN")]),  # the same fault, once
        ("STATE ERROR", 6, [("status", "ERROR")]),  # door closed, error still to reset
        ("STATE LOADING", 7, [("status", "LOADING"), ("cleared", "LOADING")]),
        ("STATE DOOR_OPEN", 8, [("status", "DOOR_OPEN"), ("fault", "DOOR_OPEN: shuffler door is open")]),
        ("STATE DOOR_OPEN", 9, [("status", "DOOR_OPEN")]),  # answer to STATUS?: no second fault
        ("STATE READY", 10, [("status", "READY"), ("cleared", "READY")]),
        ("STATE ERROR", 11, [("status", "ERROR"), ("fault", "ERROR: shuffler reports an error")]),
        (
            "STATE DOOR_OPEN",
            12,
            [("status", "DOOR_OPEN"), ("fault", "DOOR_OPEN: shuffler door is open")],  # on top of the error
        ),
        ("STATE IDLE", 13, [("status", "IDLE"), ("cleared", "IDLE")]),
    ],
    states_acked=["ACK 0001"],  # STATE carries no seq: nothing else to ACK
    device=loaded_shuffler,
    command_line="SHUFFLE Z 1",
    did=lambda device: [(record.shuffle_id, record.outcome) for record in device.shuffles],
    done=[("Z", "done")],
)

SHAKER = LineDevice(
    protocol="shaker-line",
    name="shaker1",
    session=ShakerSession,
    simulator=ShakerSimulator,
    hello="SIMSHAKE 1.0.0 SIM0003",
    parse_device=shaker.parse_device_message,
    parse_host=shaker.parse_host_message,
    online=hello_at_0("SIMSHAKE 1.0.0 SIM0003"),
    device_messages=[
        ("STATE IDLE", State("IDLE")),
        ("STATE SHAKING", State("SHAKING")),
        ("STATE SETTLING", State("SETTLING")),
        ("STATE AT_REST", State("AT_REST")),
        ("STATE DOME_OPEN", State("DOME_OPEN")),
        ("STATE FAULT", State("FAULT")),
        ("AT_REST 0001 C-1", shaker.AtRest(1, "C-1")),
        ("AT_REST 9999 20240601.17", shaker.AtRest(9999, "20240601.17")),
        ("FAULT 0002 M01 MOTOR", shaker.Fault(2, "M01", "MOTOR")),
        ("FAULT 0003 M02 DOME_NOT_CLOSED", shaker.Fault(3, "M02", "DOME_NOT_CLOSED")),
        ("FAULT 0004 M03 VIBRATION_SENSOR", shaker.Fault(4, "M03", "VIBRATION_SENSOR")),
        ("FAULT 0005 M04 LIGHT", shaker.Fault(5, "M04", "LIGHT")),
        ("FAULT 0006 M99 DOME LIFT BLOCKED", shaker.Fault(6, "M99", "DOME LIFT BLOCKED")),
        ("HB 7", Heartbeat(7)),
        ("HELLO SHAKER-X 2.0 SN5", Hello("SHAKER-X", "2.0", "SN5")),
    ],
    malformed_device_messages=[
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
    encodings=[
        (shaker.AtRest(12, "C-7"), "AT_REST 0012 C-7"),
        (shaker.Fault(3, "M02", "DOME_NOT_CLOSED"), "FAULT 0003 M02 DOME_NOT_CLOSED"),
    ],
    spelled=(shaker.Light(True), spelled_out("LIGHT ON")),
    round_trips=[
        shaker.AtRest(0, "x"),
        shaker.Fault(9999, "M03", "VIBRATION_SENSOR"),
        State("SETTLING"),
        Heartbeat(3),
        Hello("M", "F", "S"),
    ],
    host_messages=[
        ("ACK 0001", Ack(1)),
        ("SHAKE C-1 3", shaker.Shake("C-1", 3)),
        ("LIGHT ON", shaker.Light(True)),
        ("LIGHT OFF", shaker.Light(False)),
        ("STATUS?", StatusQuery()),
    ],
    malformed_host_messages=[
        "SHAKE C-1",
        "SHAKE C-1 0",
        "SHAKE C-1 10",
        "SHAKE C-1 x",
        "LIGHT DIM",
        "LIGHT",
        "ACK 1",
    ],
    unknown_host_messages=["ROLL C-1"],
    host_encodings=[
        (shaker.Shake("C-1"), "SHAKE C-1 3"),  # three pushes unless told otherwise
        (shaker.Light(False), "LIGHT OFF"),
        (StatusQuery(), "STATUS?"),
    ],
    host_spelled=[],
    unencodable=[
        shaker.Shake(cycle_id, pushes)
        for cycle_id, pushes in [("", 3), ("a b", 3), ("a*b", 3), ("c" * 33, 3), ("C", 0), ("C", 10)]
    ],
    check_parsed=cycles_are_one_word,
    check_reading=anything,
    bad_lines=[
        (b"AT_REST 0001 C-1*00\r\n", "bad checksum"),
        (b"AT_REST 0001 C-1\r\n", "missing checksum"),
        (frame("DICE 0001 C-1"), "unknown message"),
        (frame("AT_REST 01 C-1"), "malformed fields"),
        (frame("FAULT 0001 M01"), "malformed fields"),
        (frame("STATE ROLLING"), "malformed fields"),
    ],
    good_line=("AT_REST 0002 C-2", DiceAtRest),
    commands=[
        (DeviceCommand("shake", {"cycle_id": "C-1"}), "SHAKE C-1 3"),
        (DeviceCommand("shake", {"cycle_id": 77, "pushes": 5}), "SHAKE 77 5"),
        (DeviceCommand("shake", {"pushes": 2}), "SHAKE 1000 2"),  # no id: the time in ms
        (DeviceCommand("light", {"on": True}), "LIGHT ON"),
        (DeviceCommand("light", {"on": False}), "LIGHT OFF"),
        (DeviceCommand("status"), "STATUS?"),
    ],
    bad_commands=[
        (DeviceCommand(name, args), None)
        for name, args in [
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
    ],
    states=[
        *(
            (f"STATE {state}", 1.0, [("status", state)])
            for state in ["IDLE", "SHAKING", "SETTLING", "AT_REST", "DOME_OPEN"]
        ),
        # a STATE FAULT without a FAULT message before it (e.g. the answer to STATUS? after a reconnect)
        ("STATE FAULT", 2.0, [("status", "FAULT"), ("fault", "FAULT: shaker reports a fault")]),
        ("STATE FAULT", 2.5, [("status", "FAULT")]),
        ("STATE AT_REST", 3.0, [("status", "AT_REST"), ("cleared", "AT_REST")]),
    ],
    states_acked=[],
    device=lambda: ShakerDevice(speed=50.0),
    command_line="SHAKE Z 1",
    did=lambda device: [(cycle.cycle_id, cycle.outcome) for cycle in device.cycles],
    done=[("Z", "at_rest")],
)

DEVICES = [SHOE, SHUFFLER, SHAKER]
each_device = pytest.mark.parametrize("device", DEVICES, ids=str)


def per_device(rows: Callable[[LineDevice], list[Any]]) -> list[Any]:
    """Each device's rows as parameters (the device first), named by its protocol."""
    return [
        pytest.param(device, *row, id=f"{device}-{row[0] if isinstance(row[0], str) else index}")
        for device in DEVICES
        for index, row in enumerate(rows(device))
    ]


# --- the message tables ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("device", "body", "message"), per_device(lambda d: d.device_messages))
def test_parse_device_messages(device: LineDevice, body: str, message: object) -> None:
    assert device.parse_device(body) == message


@pytest.mark.parametrize(("device", "body", "failure"), per_device(lambda d: d.malformed_device_messages))
def test_malformed_device_messages(device: LineDevice, body: str, failure: ParseFailure) -> None:
    assert device.parse_device(body) == failure


@each_device
def test_encodings_are_exact_and_round_trip(device: LineDevice) -> None:
    for message, body in device.encodings:
        assert message.encode() == frame(body)
    message, spelled = device.spelled  # one checksum spelled out
    assert message.encode() == spelled
    for message in device.round_trips:
        line = message.encode()
        assert line.endswith(b"\r\n")
        [body] = bodies(line)
        assert device.parse_device(body) == message


@each_device
def test_host_messages(device: LineDevice) -> None:
    for body, message in device.host_messages:
        assert device.parse_host(body) == message
    for bad in device.malformed_host_messages:
        assert device.parse_host(bad) == MALFORMED, bad
    for unknown in device.unknown_host_messages:
        assert device.parse_host(unknown) == UNKNOWN
    for message, body in device.host_encodings:
        assert message.encode() == frame(body)
    for message, spelled in device.host_spelled:
        assert message.encode() == spelled
    for message in device.unencodable:
        with pytest.raises(ValueError):
            message.encode()


@each_device
@settings(max_examples=300, deadline=None)
@given(body=st.text(max_size=80))
@example(body="HB " + "1" * 5000)  # past int()'s 4,300 digits: refused, never raised
def test_parsers_never_raise(device: LineDevice, body: str) -> None:
    device.check_parsed(device.parse_device(body))
    device.parse_host(body)


# --- the host session, sans-IO ---------------------------------------------------------------------------


@each_device
def test_registry_knows_the_device(device: LineDevice) -> None:
    assert session_class(device.protocol) is device.session
    assert simulator_class(device.protocol) is device.simulator


@each_device
def test_connection_made_asks_for_status_and_hello_brings_online(device: LineDevice) -> None:
    session = device.session(device.name)
    assert session.protocol == device.protocol
    line_wire.assert_asks_status_then_online_on_hello(session, device.name, device.hello, 10.0, 10.5)
    assert session.online
    # A heartbeat says nothing new.
    assert session.data_received(frame("HB 1"), 11.0) == []
    assert session.uptime_s == 1


@each_device
def test_states_faults_and_clearing(device: LineDevice) -> None:
    session = device.connected()

    def kinds(body: str, now: float) -> list[tuple[str, str]]:
        out = []
        for reading in session.data_received(frame(body), now):
            assert (reading.device, reading.time, reading.raw) == (device.name, now, raw(body))
            if isinstance(reading, DeviceStatus):
                out.append(("status", reading.state))
            elif isinstance(reading, DeviceFault):
                out.append(("fault", f"{reading.code}: {reading.reason}"))
            elif isinstance(reading, DeviceFaultCleared):
                out.append(("cleared", reading.detail))
            elif isinstance(reading, ShuffleFailed):
                out.append(("failed", reading.code))
            else:
                raise AssertionError(reading)
        return out

    for body, now, expected in device.states:
        assert kinds(body, now) == expected, (body, now)
    assert sent(session) == device.states_acked


@pytest.mark.parametrize(
    ("device", "data", "reason"), per_device(lambda d: [*d.bad_lines, *line_wire.GARBAGE_LINES])
)
def test_bad_lines_are_counted_never_interpreted(device: LineDevice, data: bytes, reason: str) -> None:
    session = device.connected()
    line_wire.assert_counted_not_read(session, data, reason)
    # and the next good line is read normally
    body, kind = device.good_line
    assert [type(r) for r in session.data_received(frame(body), 1.1)] == [kind]


@each_device
def test_commands(device: LineDevice) -> None:
    session = device.connected()
    for command, body in device.commands:
        assert session.command(command, 1.0) == []
        assert sent(session) == [body]
    for command, named in device.bad_commands:
        with pytest.raises(UnknownDeviceCommand, match=named):
            session.command(command, 1.0)
    assert session.data_to_send() == b""


@each_device
@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=3000), cuts=st.lists(st.integers(min_value=0), max_size=30))
def test_arbitrary_bytes_never_raise(device: LineDevice, data: bytes, cuts: list[int]) -> None:
    session = device.session(device.name)
    session.connection_made(0.0)
    for reading in line_wire.readings_in_pieces(session, data, cuts):
        device.check_reading(reading)
    assert session.stats.bytes_received == len(data)


# --- the simulated device, sans-IO ----------------------------------------------------------------------


@each_device
@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=2000), cuts=st.lists(st.integers(min_value=0), max_size=20))
def test_the_simulated_device_survives_any_host_bytes(
    device: LineDevice, data: bytes, cuts: list[int]
) -> None:
    simulated = device.device()
    simulated.connected(0.0)
    # the line end resynchronises the device after whatever garbage came before the command
    line_wire.feed_in_pieces(simulated, data + b"\n" + frame(device.command_line), cuts)
    assert device.did(simulated) == device.done
