"""The shoe-line message table: parse every message, encode it back, reject malformed ones."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from drivers.line.framing import encode_line, parse_frame
from drivers.shoe.protocol import (
    RANKS,
    SUITS,
    Ack,
    Card,
    Cut,
    Fault,
    Heartbeat,
    Hello,
    InvalidCardRead,
    Lock,
    NoRead,
    ParseFailure,
    Rescan,
    State,
    StatusQuery,
    Unlock,
    is_card_code,
    parse_device_message,
    parse_host_message,
)

pytestmark = pytest.mark.unit

MALFORMED = ParseFailure("malformed fields")
UNKNOWN = ParseFailure("unknown message")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("CARD 0042 TH", Card(42, "TH")),
        ("CARD 9999 AS", Card(9999, "AS")),
        ("NOREAD 0007", NoRead(7)),
        ("RESCAN 0007 QD", Rescan(7, "QD")),
        ("CUT 0000", Cut(0)),
        ("STATE READY", State("READY")),
        ("STATE EMPTY", State("EMPTY")),
        ("STATE COVER_OPEN", State("COVER_OPEN")),
        ("STATE LOCKED", State("LOCKED")),
        ("STATE FAULT", State("FAULT")),
        ("FAULT F03 JAM", Fault("F03", "JAM")),
        ("FAULT F09 LIGHT BARRIER", Fault("F09", "LIGHT BARRIER")),
        ("HB 3600", Heartbeat(3600)),
        ("HELLO SHOE-X 2.1 SN123", Hello("SHOE-X", "2.1", "SN123")),
        ("CARD 0042 XX", InvalidCardRead(42, "CARD", "XX")),
        ("CARD 0042 1S", InvalidCardRead(42, "CARD", "1S")),
        ("RESCAN 0042 10H", InvalidCardRead(42, "RESCAN", "10H")),
        ("CARD 0042 th", InvalidCardRead(42, "CARD", "th")),
    ],
)
def test_parse_device_messages(body: str, message: object) -> None:
    assert parse_device_message(body) == message


@pytest.mark.parametrize(
    ("body", "failure"),
    [
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
)
def test_malformed_device_messages(body: str, failure: ParseFailure) -> None:
    assert parse_device_message(body) == failure


def test_encode_round_trips() -> None:
    messages: list[Card | NoRead | Rescan | Cut | State | Fault | Heartbeat | Hello] = [
        Card(42, "TH"),
        NoRead(1),
        Rescan(1, "2C"),
        Cut(9999),
        State("LOCKED"),
        Fault("F01", "READER_DIRTY"),
        Heartbeat(5),
        Hello("M", "F", "S"),
    ]
    for message in messages:
        line = message.encode()
        assert line.endswith(b"\r\n")
        body = parse_frame(line[:-2])
        assert isinstance(body, str)
        assert parse_device_message(body) == message
    assert Card(42, "TH").encode() == b"CARD 0042 TH*0E\r\n"


def test_host_messages() -> None:
    assert parse_host_message("ACK 0042") == Ack(42)
    assert parse_host_message("LOCK") == Lock()
    assert parse_host_message("UNLOCK") == Unlock()
    assert parse_host_message("STATUS?") == StatusQuery()
    assert parse_host_message("ACK 42") == MALFORMED
    assert parse_host_message("ACK") == MALFORMED
    assert parse_host_message("SHUFFLE 1 8") == UNKNOWN
    assert Ack(42).encode() == encode_line("ACK 0042")
    assert Lock().encode() == b"LOCK*" + b"%02X" % (ord("L") ^ ord("O") ^ ord("C") ^ ord("K")) + b"\r\n"
    assert StatusQuery().encode() == encode_line("STATUS?")
    assert Unlock().encode() == encode_line("UNLOCK")


def test_card_codes() -> None:
    valid = {rank + suit for rank in RANKS for suit in SUITS}
    assert len(valid) == 52
    assert all(is_card_code(code) for code in valid)
    assert not any(is_card_code(code) for code in ["", "A", "ASX", "1S", "AX", "as", "10H", "TS "])


@settings(max_examples=300, deadline=None)
@given(body=st.text(max_size=80))
@example(body="HB " + "1" * 5000)  # past int()'s 4,300 digits: refused, never raised
def test_parsers_never_raise(body: str) -> None:
    result = parse_device_message(body)
    if isinstance(result, Card | Rescan):
        assert is_card_code(result.code)  # a Card always holds a valid card, whatever the input
    parse_host_message(body)


@settings(max_examples=200, deadline=None)
@given(seq=st.integers(0, 9999), rank=st.sampled_from(RANKS), suit=st.sampled_from(SUITS))
def test_every_card_round_trips(seq: int, rank: str, suit: str) -> None:
    line = Card(seq, rank + suit).encode()
    body = parse_frame(line.rstrip(b"\r\n"))
    assert isinstance(body, str)
    assert parse_device_message(body) == Card(seq, rank + suit)
