"""Cammegh SlingShot2 (SS2) wheel controller protocol, without I/O: bytes in, typed messages out.

Every packet to and from the controller starts with `*` and ends with CR and/or LF; the one exception is the
winning-number line (`" 9"`, `"25"`, `"00"`...), which port 1 sends bare the moment the ball rests in a
pocket. Real lines arrive cut in any chunking, with CR, LF, CRLF or LFCR, and with line noise (fragments of
lines, bytes before a `*`). `WheelFramer` turns that stream into messages and returns what it cannot read as
`ParseError` values: nothing in this module raises on device input.

Host commands are built by the `encode_*` functions; the wheel accepts CR or LF, we send CRLF as it does.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import lru_cache

# --- vocabulary ----------------------------------------------------------------------------------------

#: The longest packet we know (`*C OK : Completed (...)`, version strings) is a few dozen characters; a
#: "line" much longer than this is noise or a lost line end, and is dropped instead of buffered.
MAX_LINE_CHARS = 120

HOST_LINE_END = b"\r\n"

_PRINTABLE = frozenset(range(0x20, 0x7F))
_DIGITS = frozenset("0123456789")


class WheelState(enum.IntEnum):
    """The `State` field of the status message."""

    BEFORE_GAME = 1  # wheel started / ready
    PLACE_BETS = 2  # a new game: the wheel positions to fire the ball (waits for *u in user-start mode)
    BALL_IN_RIM = 3  # ball launched and seen in the track
    NO_MORE_BETS = 4  # ball slowed to the no-more-bets threshold
    WINNING_NUMBER = 5  # ball in a pocket, three sensors agree
    CLOSED = 6  # table closed / powered down
    BALL_NOT_DETECTED = 7  # ball not seen in the track (optional, firmware 2.52+)


class WarningFlags(enum.IntFlag):
    """The `Warning flags` hex digit: a sum, so several warnings can show at once (`A` = 8 + 2)."""

    BALL_NOT_DETECTED = 1
    SAME_DIRECTION = 2  # ball turning with the rotor in state 3: miss-spin (misfire, ball hit an object)
    SENSOR_OR_MOTOR = 4  # sensor broken on/off, motor or encoder fault / disconnected
    LAUNCH_FAILED = 8  # failed ball launch, the controller is retrying


NO_WARNINGS = WarningFlags(0)


class OperatingMode(enum.IntFlag):
    """The `*o <mode>` bits. Unknown bits a wheel reports are kept (IntFlag boundary KEEP)."""

    REVERSE_EACH_GAME = 1
    USER_GAME_START = 2
    MODIFY_SPEED_AFTER_NO_MORE_BETS = 4
    DISABLE_SINGLE_WINNING_LINE = 16
    AUTOMATIC_STATUS = 128
    ERRORS_DURING_PLAY = 256
    GAMES_PER_HOUR_DELAY_5_TO_1 = 1024
    DELAY_5_TO_2 = 2048


#: The vendor's documented defaults.
ARCADE_AUTOMATIC_MODE = OperatingMode(1157)
NON_ARCADE_MODE = OperatingMode(1159)  # typical with a game server
NON_ARCADE_CLOCKWISE_MODE = OperatingMode(1158)


class Direction(enum.IntEnum):
    """The `Wheel direction` field."""

    CLOCKWISE = 0
    ANTICLOCKWISE = 1

    @property
    def reading_name(self) -> str:
        """The spelling the readings use."""
        return "clockwise" if self is Direction.CLOCKWISE else "anticlockwise"


#: Self-test / `*F` error codes in words an operator can act on.
ERROR_CODES: dict[int, str] = {
    0: "no errors",
    1: "hardware fault",
    2: "no ball detected",
    3: "no ball position detected",
    4: "ball direction not correct",
    5: "motor not driving the wheel correctly",
    6: "encoder failed or wheel not calibrated",
    7: "cannot play clockwise (no air jets / not calibrated)",
    8: "cannot play anti-clockwise",
    11: "sensor 1 stuck on",
    12: "sensor 2 stuck on",
    13: "sensor 3 stuck on",
    21: "sensor 1 broken off (cannot see the ball)",
    22: "sensor 2 broken off (cannot see the ball)",
    23: "sensor 3 broken off (cannot see the ball)",
    100: "test timed out",
}


def describe_error_code(code: int) -> str:
    """`21` -> `sensor 1 broken off (cannot see the ball)`; unknown codes say so instead of guessing."""
    return ERROR_CODES.get(code, f"unknown error code {code} (not one of the SS2's documented codes)")


def parse_pocket(text: str) -> str | None:
    """A winning number as the wheel writes it (`" 9"`, `"25"`, `"00"`, `"000"`, `"0000"`) -> `"9"`...

    Returns None for anything else, including leading zeros (`"05"`) and numbers above 36: the wheel pads
    with a space, so such text is a damaged line, not a pocket.
    """
    if text in ("00", "000", "0000"):
        return text
    if len(text) != 2:
        return None
    first, second = text[0], text[1]
    if second not in _DIGITS:
        return None
    if first == " ":
        return second
    if first in "123" and int(text) <= 36:
        return text
    return None


def pocket_text(number: str) -> str:
    """The wire form of a pocket: `"9"` -> `" 9"`, `"25"` -> `"25"`, `"00"` stays."""
    if parse_pocket(number) == number and len(number) >= 2:
        return number
    if len(number) == 1 and number in _DIGITS:
        return f" {number}"
    raise ValueError(f"{number!r} is not a roulette pocket")


# --- messages from the wheel -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WheelStatus:
    """`*X;<state>;<spin>;<winning>;<flags>;<speed>;<direction>`."""

    state: WheelState
    spin: int
    winning: str | None  # the last winning number ("9", "25", "00"), None before the first result
    flags: WarningFlags
    speed: int  # rotor rpm x 10
    direction: Direction
    raw: str

    @property
    def rotor_rpm(self) -> float:
        return self.speed / 10

    @property
    def direction_name(self) -> str:
        return self.direction.reading_name


@dataclass(frozen=True, slots=True)
class WinningNumberLine:
    """The bare winning-number line (port 1, unless mode bit 16 disables it)."""

    number: str  # normalised: "9", "25", "0", "00", "000", "0000"
    raw: str


@dataclass(frozen=True, slots=True)
class PowerReply:
    """`*P OK` (done) or `*P NO` (refused, e.g. already in that state or a fault latched)."""

    accepted: bool
    raw: str


@dataclass(frozen=True, slots=True)
class RestartReply:
    """`*R OK`: the wheel acknowledged a void and restarts the game."""

    raw: str


@dataclass(frozen=True, slots=True)
class UserStartReply:
    """`*u OK`."""

    raw: str


@dataclass(frozen=True, slots=True)
class ModeReply:
    """`*o <mode>` (mode set) or `*o BUSY` (refused: the wheel is not idle)."""

    mode: OperatingMode | None
    busy: bool
    raw: str


@dataclass(frozen=True, slots=True)
class SelfTestReply:
    """`*F <code>` (several codes may follow each other), `*F 0` (no errors) or `*F BUSY` (not idle)."""

    codes: tuple[int, ...]
    busy: bool
    raw: str

    @property
    def passed(self) -> bool:
        return not self.busy and self.codes == (0,)


@dataclass(frozen=True, slots=True)
class SetupReply:
    """`*T <x> <value>`. The wheel may answer a query in the other letter case (`*T S` -> `*T s ...`)."""

    parameter: str
    value: str  # the rest of the line, as sent (some parameters have several numbers)
    raw: str


@dataclass(frozen=True, slots=True)
class CalibrationProgress:
    """`*C OK : <text>` while the sensor calibration runs."""

    text: str
    raw: str


@dataclass(frozen=True, slots=True)
class CalibrationBall:
    """`*C BALL : OK Clockwise` or `*C BALL : No ball direction found`."""

    found: bool
    text: str
    raw: str


@dataclass(frozen=True, slots=True)
class CalibrationCompleted:
    """`*C OK : Completed (<s1>, <s2>, <s3>)`: the three sensor positions, as the wheel wrote them."""

    positions: tuple[str, ...]
    raw: str


@dataclass(frozen=True, slots=True)
class CalibrationFailed:
    """`*C FAIL : Sensor(s) <list> Broken` (or another failure text)."""

    broken_sensors: tuple[int, ...]
    text: str
    raw: str


@dataclass(frozen=True, slots=True)
class Identity:
    """`*K CAM`."""

    name: str
    raw: str


@dataclass(frozen=True, slots=True)
class FirmwareVersion:
    """`*S <version>`, `*V <version>`, `*v <version>`."""

    kind: str  # "S", "V" or "v"
    version: str
    raw: str


@dataclass(frozen=True, slots=True)
class UnhandledReply:
    """A well-formed `*<letter> ...` packet this driver does not interpret (e.g. `*O ...`, `*Y;...`)."""

    command: str
    text: str
    raw: str


@dataclass(frozen=True, slots=True)
class ParseError:
    """A line (or the noise before a `*`) that is not a message. `reason` is the stats counter name.

    `whole_line` is False for bytes discarded in front of a packet that was itself read fine.
    """

    reason: str
    raw: str
    whole_line: bool = True


WheelMessage = (
    WheelStatus
    | WinningNumberLine
    | PowerReply
    | RestartReply
    | UserStartReply
    | ModeReply
    | SelfTestReply
    | SetupReply
    | CalibrationProgress
    | CalibrationBall
    | CalibrationCompleted
    | CalibrationFailed
    | Identity
    | FirmwareVersion
    | UnhandledReply
)

# Why a line was rejected: the names operators see in the session's stats.
REASON_NOISE_BEFORE_PACKET = "noise before '*'"
REASON_NON_PRINTABLE = "non-printable characters"
REASON_TOO_LONG = "line too long"
REASON_UNRECOGNISED = "unrecognised line"
REASON_MALFORMED_STATUS = "malformed status"


def _malformed(command: str) -> str:
    return f"malformed *{command} reply"


# --- parsing ------------------------------------------------------------------------------------------------

_STATUS = re.compile(r"\*X;([1-7]);([0-9]{3});([ 0-9]{2,4});([0-9A-Fa-f]);([0-9]{3});([01])")
_NUMBERS = re.compile(r"[0-9]+")
#: a sensor's number in `*C FAIL` (the wheel has three). A longer run of digits is a damaged line: refused
#: here rather than handed to int(), which raises past 4,300 digits whatever the line-length limit is.
MAX_SENSOR_DIGITS = 3


def _parse_status(line: str) -> WheelStatus | ParseError:
    match = _STATUS.fullmatch(line)
    if match is None:
        return ParseError(REASON_MALFORMED_STATUS, line)
    state, spin, winning_text, flags, speed, direction = match.groups()
    if winning_text == "  ":
        winning = None
    else:
        winning = parse_pocket(winning_text)
        if winning is None:
            return ParseError(REASON_MALFORMED_STATUS, line)
    return WheelStatus(
        state=WheelState(int(state)),
        spin=int(spin),
        winning=winning,
        flags=WarningFlags(int(flags, 16)),
        speed=int(speed),
        direction=Direction(int(direction)),
        raw=line,
    )


def _parse_calibration(rest: str, line: str) -> WheelMessage | ParseError:
    head, colon, text = rest.partition(":")
    head, text = head.strip(), text.strip()
    if not colon:
        return ParseError(_malformed("C"), line)
    if head == "BALL":
        return CalibrationBall(found=text.upper().startswith("OK"), text=text, raw=line)
    if head == "FAIL":
        sensors: tuple[int, ...] = ()
        if "sensor" in text.lower():
            numbers = _NUMBERS.findall(text)
            if any(len(n) > MAX_SENSOR_DIGITS for n in numbers):
                return ParseError(_malformed("C"), line)
            sensors = tuple(int(n) for n in numbers)
        return CalibrationFailed(broken_sensors=sensors, text=text, raw=line)
    if head == "OK":
        if text.startswith("Completed"):
            inside = text[len("Completed") :].strip()
            if not (inside.startswith("(") and inside.endswith(")")):
                return ParseError(_malformed("C"), line)
            positions = tuple(p.strip() for p in inside[1:-1].split(","))
            if not positions or any(not p for p in positions):
                return ParseError(_malformed("C"), line)
            return CalibrationCompleted(positions=positions, raw=line)
        return CalibrationProgress(text=text, raw=line)
    return ParseError(_malformed("C"), line)


def _parse_packet(line: str) -> WheelMessage | ParseError:
    """A printable line starting with `*`."""
    line = line.rstrip(" ")
    if len(line) < 2 or not line[1].isalpha():
        return ParseError(REASON_UNRECOGNISED, line)
    command = line[1]
    if command == "X":
        return _parse_status(line)
    rest = line[2:].strip(" ")
    if command == "P":
        if rest in ("OK", "NO"):
            return PowerReply(accepted=rest == "OK", raw=line)
        return ParseError(_malformed("P"), line)
    if command == "R":
        return RestartReply(raw=line) if rest == "OK" else ParseError(_malformed("R"), line)
    if command == "u":
        return UserStartReply(raw=line) if rest == "OK" else ParseError(_malformed("u"), line)
    if command == "o":
        if rest == "BUSY":
            return ModeReply(mode=None, busy=True, raw=line)
        if rest and set(rest) <= _DIGITS and len(rest) <= 6:
            return ModeReply(mode=OperatingMode(int(rest)), busy=False, raw=line)
        return ParseError(_malformed("o"), line)
    if command == "F":
        if rest == "BUSY":
            return SelfTestReply(codes=(), busy=True, raw=line)
        parts = rest.split()
        if parts and all(set(p) <= _DIGITS and len(p) <= 4 for p in parts):
            return SelfTestReply(codes=tuple(int(p) for p in parts), busy=False, raw=line)
        return ParseError(_malformed("F"), line)
    if command == "T":
        parameter, _, value = rest.partition(" ")
        if len(parameter) == 1 and parameter.isalpha():
            return SetupReply(parameter=parameter, value=value.strip(" "), raw=line)
        return ParseError(_malformed("T"), line)
    if command == "C":
        return _parse_calibration(rest, line)
    if command == "K":
        return Identity(name=rest, raw=line) if rest else ParseError(_malformed("K"), line)
    if command in ("S", "V", "v"):
        return (
            FirmwareVersion(kind=command, version=rest, raw=line)
            if rest
            else ParseError(_malformed(command), line)
        )
    return UnhandledReply(command=command, text=rest, raw=line)


@lru_cache(maxsize=1024)
def parse_line(line: str) -> WheelMessage | ParseError:
    """One line without its line end (leading spaces matter: `" 9"` is a winning number).

    Pure, and its results are immutable, so it is cached: a wheel repeats the same status line many times a
    second while nothing changes (polls, automatic status), and parsing it again would give the same."""
    if not line:
        return ParseError(REASON_UNRECOGNISED, line)
    if any(ord(ch) not in _PRINTABLE for ch in line):
        return ParseError(REASON_NON_PRINTABLE, line)
    if line.startswith("*"):
        return _parse_packet(line)
    number = parse_pocket(line)
    if number is not None:
        return WinningNumberLine(number=number, raw=line)
    return ParseError(REASON_UNRECOGNISED, line)


def _text(data: bytes) -> str:
    # latin-1 maps every byte to one character, so noise stays visible (and countable) in `raw`.
    return data.decode("latin-1")


class WheelFramer:
    """Split the wheel's byte stream into messages, whatever the chunking and line ends.

    CR and LF each end a line (so CRLF and LFCR give one line and an ignored empty one). Bytes before the
    last `*` of a line are noise (a fragment of a line cut by a glitch) and are reported, then the packet
    is read from its `*`. A bare line must be a winning number exactly: no resynchronisation is possible
    inside two characters, so damaged ones are rejected. Over-long lines are dropped up to the next line
    end, so one burst of garbage costs at most one message.
    """

    def __init__(self, max_line: int = MAX_LINE_CHARS) -> None:
        self.max_line = max_line
        self._buffer = bytearray()
        self._discarding = False  # inside an over-long line: drop until the next line end

    def reset(self) -> None:
        """Forget a partial line (the link was closed)."""
        self._buffer.clear()
        self._discarding = False

    def feed(self, data: bytes) -> list[WheelMessage | ParseError]:
        out: list[WheelMessage | ParseError] = []
        self._buffer += data
        while True:
            end = self._line_end()
            if end < 0:
                if len(self._buffer) > self.max_line:
                    if not self._discarding:
                        out.append(ParseError(REASON_TOO_LONG, _text(bytes(self._buffer[: self.max_line]))))
                    self._discarding = True
                    self._buffer.clear()
                return out
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if self._discarding:
                self._discarding = False  # the tail of an over-long line
                continue
            if not line:
                continue  # the second half of CRLF / LFCR, or an empty line
            out.extend(self._frame(line))

    def _line_end(self) -> int:
        cr = self._buffer.find(b"\r")
        lf = self._buffer.find(b"\n")
        if cr < 0:
            return lf
        if lf < 0:
            return cr
        return min(cr, lf)

    def _frame(self, line: bytes) -> list[WheelMessage | ParseError]:
        if len(line) > self.max_line:
            return [ParseError(REASON_TOO_LONG, _text(line[: self.max_line]))]
        star = line.rfind(b"*")
        if star <= 0:
            return [parse_line(_text(line))]
        noise = ParseError(REASON_NOISE_BEFORE_PACKET, _text(line[:star]), whole_line=False)
        return [noise, parse_line(_text(line[star:]))]


# --- host commands -----------------------------------------------------------------------------------------


def encode_command(text: str) -> bytes:
    """`*...` + CRLF. Refuses text that would not be one packet (no `*`, control bytes, line ends)."""
    raw = text.encode("ascii")
    if not raw.startswith(b"*") or len(raw) < 2 or any(byte not in _PRINTABLE for byte in raw):
        raise ValueError(f"not a host command: {text!r}")
    return raw + HOST_LINE_END


def encode_status_poll() -> bytes:
    """`*X`: ask for one status message (polls at least 100 ms apart)."""
    return encode_command("*X")


def encode_power(on: bool) -> bytes:
    """`*P 1` power up (the rotor starts) / `*P 0` power down to idle (state 6)."""
    return encode_command("*P 1" if on else "*P 0")


def encode_restart_game() -> bytes:
    """`*R`: restart the game after a void (acknowledges it); the wheel re-spins from state 2."""
    return encode_command("*R")


def encode_user_start(direction: Direction) -> bytes:
    """`*u 1` clockwise / `*u 3` anticlockwise (from firmware 2.52): start the next game (mode bit 2)."""
    return encode_command("*u 1" if direction is Direction.CLOCKWISE else "*u 3")


def encode_set_mode(mode: int) -> bytes:
    """`*o <mode>`: the operating mode (stored in the wheel's non-volatile memory)."""
    if not 0 <= int(mode) <= 65535:
        raise ValueError(f"operating mode {mode} out of range")
    return encode_command(f"*o {int(mode)}")


def encode_self_test() -> bytes:
    """`*F`: run the self-test (wheel idle; up to 5 minutes)."""
    return encode_command("*F")


def encode_setup(parameter: str, value: str | None = None) -> bytes:
    """`*T <x>` reads a setup parameter, `*T <x> <value>` sets it (`*T f` stores to flash)."""
    if len(parameter) != 1 or not parameter.isascii() or not parameter.isalpha():
        raise ValueError(f"a setup parameter is one letter, not {parameter!r}")
    return encode_command(f"*T {parameter}" if value is None else f"*T {parameter} {value}")


def encode_store_setup() -> bytes:
    """`*T f`: store the setup parameters to flash."""
    return encode_setup("f")


def encode_calibrate_sensors() -> bytes:
    """`*C`: calibrate the sensor positions (wheel idle, ball fixed in the middle of pocket 0)."""
    return encode_command("*C")


def encode_identify() -> bytes:
    """`*K`: the wheel answers `*K CAM`."""
    return encode_command("*K")


def encode_firmware_version(kind: str = "S") -> bytes:
    """`*S`, `*V` or `*v`: firmware versions."""
    if kind not in ("S", "V", "v"):
        raise ValueError(f"no version query *{kind}")
    return encode_command(f"*{kind}")
