"""Line framing shared by the line devices: checksum, encoding, frame checks, and the stream framer."""

from __future__ import annotations

import itertools
from functools import reduce

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.line.framing import (
    MAX_LINE_BYTES,
    FrameError,
    Heartbeat,
    Hello,
    LineFramer,
    ParseFailure,
    checksum,
    encode_line,
    parse_common,
    parse_frame,
)

pytestmark = pytest.mark.unit


def xor_of(data: bytes) -> int:
    return reduce(lambda acc, byte: acc ^ byte, data, 0)


def test_checksum_is_xor_of_body_bytes_in_upper_hex() -> None:
    # Computed here, never copied from an example: `*2E` is deliberately not the checksum of this body.
    assert xor_of(b"CARD 0042 TH") == 0x0E
    assert checksum(b"CARD 0042 TH") == "0E"
    assert checksum(b"ACK 0042") == "6F"
    assert checksum(b"") == "00"
    assert checksum(b"\x0a") == "0A"  # two digits, upper case


def test_encode_line() -> None:
    assert encode_line("CARD 0042 TH") == b"CARD 0042 TH*0E\r\n"
    assert parse_frame(b"CARD 0042 TH*0E") == "CARD 0042 TH"
    for bad_body in ["", "A*B", "tab\there", "caf\u00e9"]:
        with pytest.raises(ValueError):
            encode_line(bad_body)


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"CARD 0042 TH*2E", "bad checksum"),
        (b"CARD 0042 TH*0e", "bad checksum"),  # checksum digits are upper case
        (b"CARD 0042 TH*E", "bad checksum"),
        (b"CARD 0042 TH*0E0", "bad checksum"),
        (b"CARD 0042 TH", "missing checksum"),
        (b"CARD 0042\x00TH*0E", "noise"),
        (b"\xff\xfe\x07", "noise"),
        (b"", "noise"),
    ],
)
def test_parse_frame_rejections(line: bytes, reason: str) -> None:
    result = parse_frame(line)
    assert result == FrameError(reason, line)


def test_framer_splits_lines_strips_cr_and_keeps_partial_lines() -> None:
    framer = LineFramer()
    assert framer.feed(b"HB 1*") == []
    assert framer.feed(b"xx\r\nHB 2*yy\nHB") == [b"HB 1*xx", b"HB 2*yy"]
    assert framer.feed(b" 3*zz\r") == []
    assert framer.feed(b"\n") == [b"HB 3*zz"]
    framer.feed(b"half a line")
    framer.reset()
    assert framer.feed(b"HB 4*ww\r\n") == [b"HB 4*ww"]


def test_framer_discards_overlong_line_and_resyncs() -> None:
    framer = LineFramer()
    exact = b"A" * MAX_LINE_BYTES
    assert framer.feed(exact + b"\r\n") == [exact]
    assert framer.too_long == 0
    garbage = b"G" * (MAX_LINE_BYTES * 3)
    assert framer.feed(garbage[:100]) == []
    assert framer.feed(garbage[100:] + b"tail\r\nHB 7*00\r\n") == [b"HB 7*00"]
    assert framer.too_long == 1
    assert framer.feed(b"B" * (MAX_LINE_BYTES + 1) + b"\n") == []
    assert framer.too_long == 2


def test_common_messages() -> None:
    assert parse_common("HELLO SIMSHOE 1.0.0 SIM0001") == Hello("SIMSHOE", "1.0.0", "SIM0001")
    assert parse_common("HB 12") == Heartbeat(12)
    assert parse_common("HB x") == ParseFailure("malformed fields")
    assert parse_common("HELLO only-two 1.0") == ParseFailure("malformed fields")
    assert parse_common("HB  12") == ParseFailure("malformed fields")
    # More digits than int() converts (4,300): a malformed line, whatever the framer's length limit
    assert parse_common("HB " + "9" * 5000) == ParseFailure("malformed fields")
    assert parse_common("HB 12345678901") == ParseFailure("malformed fields")
    assert parse_common("CARD 0001 AS") is None
    assert Hello("M", "F", "S").encode() == encode_line("HELLO M F S")


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=2000), cuts=st.lists(st.integers(min_value=0), max_size=30))
def test_framer_never_raises_and_lines_do_not_depend_on_chunking(data: bytes, cuts: list[int]) -> None:
    whole = LineFramer()
    expected = whole.feed(data)
    pieces = LineFramer()
    got: list[bytes] = []
    for piece in chunked(data, cuts):
        got += pieces.feed(piece)
    assert got == expected
    assert pieces.too_long == whole.too_long
    for line in got:
        assert len(line) <= MAX_LINE_BYTES
        assert b"\n" not in line
        parse_frame(line)  # must not raise either


bodies = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="*"),
    min_size=1,
    max_size=120,
)
noise_lines = st.binary(max_size=300).filter(
    lambda noise: b"\n" not in noise and isinstance(parse_frame(noise.removesuffix(b"\r")), FrameError)
)


@settings(max_examples=300, deadline=None)
@given(
    segments=st.lists(st.one_of(bodies, noise_lines)),  # str: a valid line's body, bytes: a noise burst
    cuts=st.lists(st.integers(min_value=0), max_size=40),
)
def test_valid_lines_among_noise_are_all_recovered(segments: list[str | bytes], cuts: list[int]) -> None:
    stream = bytearray()
    expected: list[str] = []
    for segment in segments:
        if isinstance(segment, str):
            stream += encode_line(segment)
            expected.append(segment)
        else:
            stream += segment + b"\r\n"
    framer = LineFramer()
    recovered: list[str] = []
    for piece in chunked(bytes(stream), cuts):
        for line in framer.feed(piece):
            frame = parse_frame(line)
            if isinstance(frame, str):
                recovered.append(frame)
    assert recovered == expected
