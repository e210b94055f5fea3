"""Raw-traffic captures: JSON Lines written per record, read back byte-exact; raw dumps; clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.capture import CaptureError, CaptureRecord, CaptureWriter, read_capture


def test_round_trip_of_every_byte_value(tmp_path: Path) -> None:
    path = tmp_path / "shoe.jsonl"
    every_byte = bytes(range(256))
    with CaptureWriter(path) as capture:
        capture.rx(b"CARD 0042 TH*0E\r\n", 1700000000.125)
        capture.tx(b"ACK 0042*6F\r\n", 1700000000.25)
        capture.write("rx", every_byte, 1700000001.0)
        # flushed per record: readable while the writer is still open
        assert len(read_capture(path)) == 3
    assert read_capture(path) == [
        CaptureRecord(1700000000.125, "rx", b"CARD 0042 TH*0E\r\n"),
        CaptureRecord(1700000000.25, "tx", b"ACK 0042*6F\r\n"),
        CaptureRecord(1700000001.0, "rx", every_byte),
    ]
    first = json.loads(path.read_text().splitlines()[0])
    assert first == {"t": 1700000000.125, "dir": "rx", "data": "CARD 0042 TH*0E\r\n"}


def test_writers_append(tmp_path: Path) -> None:
    path = tmp_path / "shoe.jsonl"
    with CaptureWriter(path) as capture:
        capture.rx(b"a", 1.0)
    with CaptureWriter(path) as capture:
        capture.rx(b"b", 2.0)
    assert [record.data for record in read_capture(path)] == [b"a", b"b"]


def test_writer_rejects_unknown_direction_and_use_after_close(tmp_path: Path) -> None:
    capture = CaptureWriter(tmp_path / "c.jsonl")
    with pytest.raises(ValueError, match="direction"):
        capture.write("up", b"x", 1.0)
    capture.close()
    with pytest.raises(ValueError, match="closed"):
        capture.rx(b"x", 1.0)


def test_raw_dump_is_one_rx_record(tmp_path: Path) -> None:
    path = tmp_path / "dump.bin"
    content = b"HB 1*47\r\n\xff\x00garbage\r\nCARD 0001 AS*06\r\n"
    path.write_bytes(content)
    assert read_capture(path) == [CaptureRecord(None, "rx", content)]


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert read_capture(path) == []


def test_blank_lines_are_ignored_and_t_may_be_null(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"t": 1, "dir": "rx", "data": "A"}\n\n{"t": null, "dir": "tx", "data": "B"}\n')
    assert read_capture(path) == [CaptureRecord(1.0, "rx", b"A"), CaptureRecord(None, "tx", b"B")]


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"t": 1, "dir": "rx", "data": "A"', "not a JSON record"),
        ('["rx", "A"]', "expected a JSON object"),
        ('{"t": "noon", "dir": "rx", "data": "A"}', "'t' must be a number"),
        ('{"t": true, "dir": "rx", "data": "A"}', "'t' must be a number"),
        ('{"t": 1, "dir": "in", "data": "A"}', "'dir' must be 'rx' or 'tx'"),
        ('{"t": 1, "dir": "rx", "data": 65}', "'data' must be a string"),
        ('{"t": 1, "dir": "rx", "data": "\\u20ac"}', "not bytes"),
    ],
)
def test_bad_jsonl_line_names_its_line_number(tmp_path: Path, bad_line: str, message: str) -> None:
    path = tmp_path / "c.jsonl"
    good = '{"t": 1, "dir": "rx", "data": "A"}'
    path.write_text(f"{good}\n{good}\n{bad_line}\n{good}\n")
    with pytest.raises(CaptureError, match=message) as error:
        read_capture(path)
    assert f"{path}:3:" in str(error.value)


def test_jsonl_that_is_not_utf8_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"t": 1, "dir": "rx", "data": "A"}\n{"t": 1, "dir": "rx", "data": "\xff"}\n')
    with pytest.raises(CaptureError, match=r":2: not UTF-8"):
        read_capture(path)


@settings(max_examples=200, deadline=None)
@given(
    records=st.lists(
        st.tuples(
            st.floats(min_value=0, max_value=4e9, allow_nan=False), st.sampled_from(["rx", "tx"]), st.binary()
        ),
        max_size=20,
    )
)
def test_any_records_round_trip(
    tmp_path_factory: pytest.TempPathFactory, records: list[tuple[float, str, bytes]]
) -> None:
    path = tmp_path_factory.mktemp("capture") / "c.jsonl"
    with CaptureWriter(path) as capture:
        for t, direction, data in records:
            capture.write(direction, data, t)
    assert read_capture(path) == [CaptureRecord(t, direction, data) for t, direction, data in records]
