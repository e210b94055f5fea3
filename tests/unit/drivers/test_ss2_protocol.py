"""Cammegh SS2 protocol: every packet the protocol defines, the host commands, and a framer that survives
real line noise (captured fragments like `00;0`), any line end and any chunking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.wheel.protocol import (
    NON_ARCADE_MODE,
    REASON_MALFORMED_STATUS,
    REASON_NOISE_BEFORE_PACKET,
    REASON_NON_PRINTABLE,
    REASON_TOO_LONG,
    REASON_UNRECOGNISED,
    CalibrationBall,
    CalibrationCompleted,
    CalibrationFailed,
    CalibrationProgress,
    Direction,
    FirmwareVersion,
    Identity,
    ModeReply,
    OperatingMode,
    ParseError,
    PowerReply,
    RestartReply,
    SelfTestReply,
    SetupReply,
    UnhandledReply,
    UserStartReply,
    WarningFlags,
    WheelFramer,
    WheelState,
    WheelStatus,
    WinningNumberLine,
    describe_error_code,
    encode_calibrate_sensors,
    encode_command,
    encode_firmware_version,
    encode_identify,
    encode_power,
    encode_restart_game,
    encode_self_test,
    encode_set_mode,
    encode_setup,
    encode_status_poll,
    encode_store_setup,
    encode_user_start,
    parse_line,
    parse_pocket,
    pocket_text,
)
from tests.helpers.wheel_example import VENDOR_EXAMPLE

pytestmark = pytest.mark.unit


# --- status ------------------------------------------------------------------------------------------------


def test_status_fields() -> None:
    status = parse_line("*X;5;011;25;0;165;1")
    assert status == WheelStatus(
        state=WheelState.WINNING_NUMBER,
        spin=11,
        winning="25",
        flags=WarningFlags(0),
        speed=165,
        direction=Direction.ANTICLOCKWISE,
        raw="*X;5;011;25;0;165;1",
    )
    assert isinstance(status, WheelStatus)
    assert status.rotor_rpm == 16.5
    assert status.direction_name == "anticlockwise"


@pytest.mark.parametrize(
    ("line", "winning"),
    [
        ("*X;2;001;  ;0;174;0", None),  # no result yet since power-on: two spaces
        ("*X;5;013; 6;0;177;1", "6"),
        ("*X;5;016; 0;0;149;0", "0"),
        ("*X;5;016;00;0;149;0", "00"),
        ("*X;5;016;000;0;149;0", "000"),
        ("*X;5;016;0000;0;149;0", "0000"),
    ],
)
def test_status_winning_field(line: str, winning: str | None) -> None:
    status = parse_line(line)
    assert isinstance(status, WheelStatus)
    assert status.winning == winning


@pytest.mark.parametrize(
    ("digit", "flags"),
    [
        ("0", WarningFlags(0)),
        ("1", WarningFlags.BALL_NOT_DETECTED),
        ("4", WarningFlags.SENSOR_OR_MOTOR),
        ("A", WarningFlags.LAUNCH_FAILED | WarningFlags.SAME_DIRECTION),
        ("a", WarningFlags.LAUNCH_FAILED | WarningFlags.SAME_DIRECTION),
        ("F", WarningFlags(15)),
    ],
)
def test_status_warning_flags_are_a_composite(digit: str, flags: WarningFlags) -> None:
    status = parse_line(f"*X;3;002;31;{digit};146;1")
    assert isinstance(status, WheelStatus)
    assert status.flags == flags
    if digit.upper() == "A":
        assert WarningFlags.LAUNCH_FAILED in status.flags and WarningFlags.SAME_DIRECTION in status.flags
        assert WarningFlags.SENSOR_OR_MOTOR not in status.flags


def test_state_7_ball_not_detected() -> None:
    status = parse_line("*X;7;004;24;0;166;0")
    assert isinstance(status, WheelStatus)
    assert status.state is WheelState.BALL_NOT_DETECTED


@pytest.mark.parametrize(
    "line",
    [
        "*X;8;011;25;0;165;1",  # no state 8
        "*X;0;011;25;0;165;1",
        "*X;5;11;25;0;165;1",  # spin is 3 digits
        "*X;5;011;05;0;165;1",  # the wheel pads with a space, never a zero
        "*X;5;011;37;0;165;1",  # no pocket 37
        "*X;5;011;25;G;165;1",  # flags are one hex digit
        "*X;5;011;25;0;16;1",  # speed is 3 digits
        "*X;5;011;25;0;165;2",  # direction 0 or 1
        "*X;5;011;25;0;165",  # field missing (a line cut short)
        "*X;5;011;25;0;165;1;9",  # extra field
        "*X:5:011:25:0:165:1",  # colons are not the wheel's separator
        "*X",
    ],
)
def test_malformed_status_is_rejected(line: str) -> None:
    assert parse_line(line) == ParseError(REASON_MALFORMED_STATUS, line)


# --- the single winning-number line -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "number"),
    [
        (" 9", "9"),
        ("25", "25"),
        (" 0", "0"),
        ("36", "36"),
        ("10", "10"),
        ("00", "00"),
        ("000", "000"),
        ("0000", "0000"),
    ],
)
def test_winning_number_line(line: str, number: str) -> None:
    assert parse_line(line) == WinningNumberLine(number=number, raw=line)
    assert parse_pocket(line) == number
    assert pocket_text(number) == line


@pytest.mark.parametrize("line", ["9", "05", "37", "  ", "1", "00;0", " 9 ", "99", "00000", "+5", "3 "])
def test_not_a_winning_number(line: str) -> None:
    assert parse_line(line) == ParseError(REASON_UNRECOGNISED, line)


def test_pocket_text_rejects_non_pockets() -> None:
    with pytest.raises(ValueError):
        pocket_text("37")


# --- replies ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("*P OK", PowerReply(accepted=True, raw="*P OK")),
        ("*P NO", PowerReply(accepted=False, raw="*P NO")),
        ("*R OK", RestartReply(raw="*R OK")),
        ("*u OK", UserStartReply(raw="*u OK")),
        ("*o 1159", ModeReply(mode=NON_ARCADE_MODE, busy=False, raw="*o 1159")),
        ("*o1158", ModeReply(mode=OperatingMode(1158), busy=False, raw="*o1158")),
        ("*o BUSY", ModeReply(mode=None, busy=True, raw="*o BUSY")),
        ("*F 0", SelfTestReply(codes=(0,), busy=False, raw="*F 0")),
        ("*F 21", SelfTestReply(codes=(21,), busy=False, raw="*F 21")),
        ("*F 11 23", SelfTestReply(codes=(11, 23), busy=False, raw="*F 11 23")),
        ("*F BUSY", SelfTestReply(codes=(), busy=True, raw="*F BUSY")),
        ("*T C 112", SetupReply(parameter="C", value="112", raw="*T C 112")),
        ("*T s 14.0 17.50000", SetupReply(parameter="s", value="14.0 17.50000", raw="*T s 14.0 17.50000")),
        ("*T f", SetupReply(parameter="f", value="", raw="*T f")),
        ("*K CAM", Identity(name="CAM", raw="*K CAM")),
        ("*S 2.52", FirmwareVersion(kind="S", version="2.52", raw="*S 2.52")),
        ("*V 1.10", FirmwareVersion(kind="V", version="1.10", raw="*V 1.10")),
        ("*v 3.0", FirmwareVersion(kind="v", version="3.0", raw="*v 3.0")),
        ("*O 6 1 60 1158", UnhandledReply(command="O", text="6 1 60 1158", raw="*O 6 1 60 1158")),
        ("*Y;1;012", UnhandledReply(command="Y", text=";1;012", raw="*Y;1;012")),
    ],
)
def test_replies(line: str, message: object) -> None:
    assert parse_line(line) == message


def test_operating_mode_bits() -> None:
    reply = parse_line("*o 1415")
    assert isinstance(reply, ModeReply) and reply.mode is not None
    mode = reply.mode
    assert OperatingMode.USER_GAME_START in mode
    assert OperatingMode.AUTOMATIC_STATUS in mode
    assert OperatingMode.ERRORS_DURING_PLAY in mode
    assert OperatingMode.DISABLE_SINGLE_WINNING_LINE not in mode
    assert int(mode) == 1 + 2 + 4 + 128 + 256 + 1024
    unknown_bit = parse_line("*o 1191")  # 1159 + 32: an undocumented bit is kept
    assert isinstance(unknown_bit, ModeReply) and unknown_bit.mode is not None
    assert int(unknown_bit.mode) == 1191


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("*C OK : Calibrating", CalibrationProgress(text="Calibrating", raw="*C OK : Calibrating")),
        (
            "*C BALL : OK Clockwise",
            CalibrationBall(found=True, text="OK Clockwise", raw="*C BALL : OK Clockwise"),
        ),
        (
            "*C BALL : No ball direction found",
            CalibrationBall(
                found=False, text="No ball direction found", raw="*C BALL : No ball direction found"
            ),
        ),
        (
            "*C OK : Completed (127, 1151, 2175)",
            CalibrationCompleted(
                positions=("127", "1151", "2175"), raw="*C OK : Completed (127, 1151, 2175)"
            ),
        ),
        (
            "*C FAIL : Sensor(s) 1, 3 Broken",
            CalibrationFailed(
                broken_sensors=(1, 3), text="Sensor(s) 1, 3 Broken", raw="*C FAIL : Sensor(s) 1, 3 Broken"
            ),
        ),
        (
            "*C FAIL : Wheel not idle",
            CalibrationFailed(broken_sensors=(), text="Wheel not idle", raw="*C FAIL : Wheel not idle"),
        ),
    ],
)
def test_calibration_lines(line: str, message: object) -> None:
    assert parse_line(line) == message


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("*P MAYBE", "malformed *P reply"),
        ("*R", "malformed *R reply"),
        ("*o 12a", "malformed *o reply"),
        ("*F x", "malformed *F reply"),
        ("*T", "malformed *T reply"),
        ("*C OK : Completed 1, 2", "malformed *C reply"),
        ("*C WHAT", "malformed *C reply"),
        # a sensor number past int()'s 4,300 digits: refused (parse_line itself, whatever the framer's limit)
        ("*C FAIL : Sensor(s) " + "1" * 5000 + " Broken", "malformed *C reply"),
        ("*K", "malformed *K reply"),
        ("*", REASON_UNRECOGNISED),
        ("*;X", REASON_UNRECOGNISED),
        ("*X;5;011;25;0;165;1\x00", REASON_NON_PRINTABLE),
    ],
)
def test_malformed_replies(line: str, reason: str) -> None:
    result = parse_line(line)
    assert isinstance(result, ParseError)
    assert result.reason == reason


def test_error_codes_in_words() -> None:
    assert describe_error_code(21) == "sensor 1 broken off (cannot see the ball)"
    assert describe_error_code(13) == "sensor 3 stuck on"
    assert describe_error_code(0) == "no errors"
    assert describe_error_code(100) == "test timed out"
    assert "unknown error code 42" in describe_error_code(42)


# --- host commands ------------------------------------------------------------------------------------------


def test_encoders() -> None:
    assert encode_status_poll() == b"*X\r\n"
    assert encode_power(True) == b"*P 1\r\n"
    assert encode_power(False) == b"*P 0\r\n"
    assert encode_restart_game() == b"*R\r\n"
    assert encode_user_start(Direction.CLOCKWISE) == b"*u 1\r\n"
    assert encode_user_start(Direction.ANTICLOCKWISE) == b"*u 3\r\n"
    assert encode_set_mode(1415) == b"*o 1415\r\n"
    assert encode_set_mode(NON_ARCADE_MODE) == b"*o 1159\r\n"
    assert encode_self_test() == b"*F\r\n"
    assert encode_setup("C") == b"*T C\r\n"
    assert encode_setup("c", "112") == b"*T c 112\r\n"
    assert encode_store_setup() == b"*T f\r\n"
    assert encode_calibrate_sensors() == b"*C\r\n"
    assert encode_identify() == b"*K\r\n"
    assert encode_firmware_version() == b"*S\r\n"
    assert encode_firmware_version("V") == b"*V\r\n"
    assert encode_firmware_version("v") == b"*v\r\n"


@pytest.mark.parametrize(
    "call",
    [
        lambda: encode_set_mode(-1),
        lambda: encode_set_mode(70000),
        lambda: encode_setup("cc"),
        lambda: encode_setup("1"),
        lambda: encode_firmware_version("Q"),
        lambda: encode_command("X"),
        lambda: encode_command("*X\r\n*P 0"),
        lambda: encode_command("*"),
    ],
)
def test_encoders_refuse_what_is_not_one_packet(call: object) -> None:
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]


# --- framing ------------------------------------------------------------------------------------------------


def _feed_all(data: bytes, chunks: list[int] | None = None) -> list[object]:
    framer = WheelFramer()
    if chunks is None:
        return list(framer.feed(data))
    out: list[object] = []
    position = 0
    for size in chunks:
        out.extend(framer.feed(data[position : position + size]))
        position += size
    out.extend(framer.feed(data[position:]))
    return out


@pytest.mark.parametrize("ending", [b"\r", b"\n", b"\r\n", b"\n\r"])
def test_every_line_end_gives_the_same_messages(ending: bytes) -> None:
    data = b"".join(line.encode() + ending for line in VENDOR_EXAMPLE)
    messages = _feed_all(data)
    assert [m.raw for m in messages] == VENDOR_EXAMPLE  # type: ignore[attr-defined]
    assert not any(isinstance(m, ParseError) for m in messages)


def test_byte_by_byte_is_the_same_as_all_at_once() -> None:
    data = b"".join(line.encode() + b"\r\n" for line in VENDOR_EXAMPLE)
    assert _feed_all(data, [1] * len(data)) == _feed_all(data)


def test_a_partial_line_waits_for_its_end() -> None:
    framer = WheelFramer()
    assert framer.feed(b"*X;4;011;23;") == []
    assert framer.feed(b"0;168;1") == []
    messages = framer.feed(b"\r\n2")
    assert [m.raw for m in messages] == ["*X;4;011;23;0;168;1"]
    assert framer.feed(b"5\r\n") == [WinningNumberLine(number="25", raw="25")]


def test_field_noise() -> None:
    """Fragments seen in a studio's capture: a lone `1`, `00;0`, and a status glued after noise."""
    data = b"1\r\n*X;2;002;31;0;146;1\r\n00;0\r\n\x00\x13*X;6;001;  ;4;000;0\r\n"
    messages = _feed_all(data)
    assert messages[0] == ParseError(REASON_UNRECOGNISED, "1")
    assert isinstance(messages[1], WheelStatus) and messages[1].spin == 2
    assert messages[2] == ParseError(REASON_UNRECOGNISED, "00;0")
    assert messages[3] == ParseError(REASON_NOISE_BEFORE_PACKET, "\x00\x13", whole_line=False)
    assert isinstance(messages[4], WheelStatus) and messages[4].flags == WarningFlags.SENSOR_OR_MOTOR
    assert len(messages) == 5


def test_two_packets_run_together_keep_the_last() -> None:
    # A lost line end: the first packet is only a fragment now, the complete one after it is read.
    messages = _feed_all(b"*X;5;0*X;5;011;25;0;165;1\r\n")
    assert messages[0] == ParseError(REASON_NOISE_BEFORE_PACKET, "*X;5;0", whole_line=False)
    assert isinstance(messages[1], WheelStatus)


def test_non_printable_bytes_reject_a_bare_line() -> None:
    assert _feed_all(b"2\x005\r\n") == [ParseError(REASON_NON_PRINTABLE, "2\x005")]


def test_over_long_line_is_dropped_and_the_framer_resynchronises() -> None:
    framer = WheelFramer(max_line=40)
    out = framer.feed(b"x" * 30)
    assert out == []
    out = framer.feed(b"y" * 30)
    assert out == [ParseError(REASON_TOO_LONG, "x" * 30 + "y" * 10)]
    out = framer.feed(b"z" * 100)  # still the same line: reported once
    assert out == []
    out = framer.feed(b"\r\n*X;1;001;  ;0;000;0\r\n")
    assert len(out) == 1 and isinstance(out[0], WheelStatus)


def test_reset_forgets_a_partial_line() -> None:
    framer = WheelFramer()
    framer.feed(b"*X;4;011")
    framer.reset()
    assert framer.feed(b";23;0;168;1\r\n") == [ParseError(REASON_UNRECOGNISED, ";23;0;168;1")]


# --- properties ---------------------------------------------------------------------------------------------

_chunk_sizes = st.lists(st.integers(min_value=1, max_value=40), max_size=60)


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=600), chunks=_chunk_sizes)
def test_arbitrary_bytes_never_raise_and_chunking_does_not_matter(data: bytes, chunks: list[int]) -> None:
    whole = _feed_all(data)
    assert _feed_all(data, chunks) == whole
    for item in whole:
        assert isinstance(item, ParseError) or hasattr(item, "raw")


_valid_lines = st.sampled_from(
    [*VENDOR_EXAMPLE, "*P OK", "*o BUSY", "*F 21", "*T c 112", "*C OK : Completed (1, 2, 3)", "*K CAM", " 0"]
)
# Noise that can never read as a line: it always holds a byte that no packet has, and no line end or `*`.
_noise = st.binary(min_size=1, max_size=20).map(lambda b: bytes(x for x in b if x not in b"\r\n*") + b"\x07")


@settings(max_examples=300, deadline=None)
@given(
    items=st.lists(st.one_of(_valid_lines, _noise), max_size=30),
    ending=st.sampled_from([b"\r", b"\n", b"\r\n", b"\n\r"]),
    chunks=_chunk_sizes,
)
def test_noise_lines_never_hide_or_alter_real_lines(
    items: list[str | bytes], ending: bytes, chunks: list[int]
) -> None:
    data = b"".join((item.encode() if isinstance(item, str) else item) + ending for item in items)
    messages = [m for m in _feed_all(data, chunks) if not isinstance(m, ParseError)]
    expected = [item for item in items if isinstance(item, str)]
    assert [m.raw for m in messages] == expected  # type: ignore[attr-defined]
