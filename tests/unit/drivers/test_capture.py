"""Raw-traffic captures: JSON Lines written per record, read back byte-exact; raw dumps; clear errors."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.capture import CaptureError, CaptureRecord, CaptureWriter, read_capture, read_capture_counted

pytestmark = pytest.mark.unit


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
def test_a_damaged_line_is_skipped_counted_and_named_by_its_line_number(
    tmp_path: Path, bad_line: str, message: str
) -> None:
    # read past it: one damaged line (a torn write, a stray edit) does not make the whole capture unreadable
    path = tmp_path / "c.jsonl"
    good = '{"t": 1, "dir": "rx", "data": "A"}'
    path.write_text(f"{good}\n{good}\n{bad_line}\n{good}\n")
    contents = read_capture_counted(path)
    assert contents.records == [CaptureRecord(1.0, "rx", b"A")] * 3
    (damaged,) = contents.damaged
    assert damaged.startswith(f"{path}:3:") and message in damaged
    assert read_capture(path) == contents.records


def test_a_line_that_is_not_utf8_is_skipped_and_named(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"t": 1, "dir": "rx", "data": "A"}\n{"t": 1, "dir": "rx", "data": "\xff"}\n')
    contents = read_capture_counted(path)
    assert contents.records == [CaptureRecord(1.0, "rx", b"A")]
    assert [line.split(": ", 1)[1] for line in contents.damaged] == ["not UTF-8 text"]
    assert contents.damaged[0].startswith(f"{path}:2:")


def test_a_file_with_no_record_at_all_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"not": "a record"}\n{"t": 1, "dir": "in"}\n')
    with pytest.raises(CaptureError, match="no line is a capture record"):
        read_capture(path)


def test_a_torn_line_from_an_older_writer_costs_that_line_only(tmp_path: Path) -> None:
    # what a writer that appended after a partial write left: the torn record and the next one on one line
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"t": 1, "dir": "rx", "data": "A"}\n{"t": 2, "dir": "rx", "da{"t": 3, "dir": "rx", "data": "C"}\n'
        '{"t": 4, "dir": "rx", "data": "D"}\n'
    )
    contents = read_capture_counted(path)
    assert [r.data for r in contents.records] == [b"A", b"D"] and len(contents.damaged) == 1


class FullDisk:
    """The capture file's writes fail with ENOSPC while `full` is set: after taking `partial` bytes of the
    record (a partial write), or none; the real write otherwise."""

    def __init__(self, writer: CaptureWriter, partial: int) -> None:
        assert writer._file is not None
        self.file = writer._file
        self.partial = partial
        self.full = False
        self.real_write = self.file.write
        writer._file = self  # type: ignore[assignment]

    def write(self, data: bytes) -> int:
        if not self.full:
            return self.real_write(data)
        if self.partial and len(data) > self.partial:
            taken: int = self.real_write(data[: self.partial])
            self.partial_taken = True
            return taken
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self) -> int:
        return self.file.fileno()

    def close(self) -> None:
        self.file.close()


@pytest.mark.parametrize("partial", [0, 7])
def test_a_full_disk_leaves_no_torn_line_and_the_capture_goes_on_with_a_gap_record(
    tmp_path: Path, partial: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("drivers.capture.RETRY_SECONDS", 0.0)
    path = tmp_path / "shoe.jsonl"
    writer = CaptureWriter(path)
    writer.story("meta", {"game": "baccarat"}, 10.0)
    writer.rx(b"CARD 0001 7D*66\r\n", 11.0)
    disk = FullDisk(writer, partial)
    disk.full = True
    for n in range(5):  # the disk is full: nothing whole can be written, and nothing torn stays
        writer.rx(b"CARD 000%d 8S*00\r\n" % (n + 2), 12.0 + n)
    assert path.read_bytes().endswith(b"\n") and len(path.read_bytes().splitlines()) == 2
    disk.full = False  # space returns
    writer.rx(b"CARD 0007 9H*00\r\n", 20.0)
    writer.close()
    contents = read_capture_counted(path)
    assert contents.damaged == []
    assert [r.direction for r in contents.records] == ["meta", "rx", "gap", "rx"]
    assert contents.gaps == [
        {"since": 12.0, "until": 20.0, "lost": 5, "reason": "[Errno 28] No space left on device"}
    ]
    assert contents.records[-1].data == b"CARD 0007 9H*00\r\n"
    assert writer.lost == 5
    # a replay reads it: the gap is reported, not a reason to refuse the file
    assert [r.direction for r in read_capture(path)] == ["meta", "rx", "rx"]


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
