"""Cammegh SS2 wheel calibration: sensor positions (`*C`), ball firing position (`*T c`), self-test (`*F`).

These need an operator's hands (the wheel idle, the ball fixed in pocket 0, the rotor turned by hand), so
every step that needs them asks through an injectable `ask(question) -> bool`, and everything the wheel says
is shown through `show(text)`. The wheel is reached through a small `WheelConsole`: send one command, wait
for the reply lines that answer it (the wheel's automatic status lines are skipped), with a timeout.

Each run that got an answer from the wheel ends in a versioned JSON record in a directory (never overwriting
an older one), so a technician can show when the wheel was last calibrated and what it reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from drivers.wheel.protocol import (
    CalibrationBall,
    CalibrationCompleted,
    CalibrationFailed,
    CalibrationProgress,
    FirmwareVersion,
    Identity,
    ParseError,
    PowerReply,
    SelfTestReply,
    SetupReply,
    WheelFramer,
    WheelMessage,
    WheelState,
    WheelStatus,
    describe_error_code,
    encode_calibrate_sensors,
    encode_firmware_version,
    encode_identify,
    encode_power,
    encode_self_test,
    encode_setup,
    encode_status_poll,
    encode_store_setup,
)

SCHEMA = "tablectl.calibration.wheel"
SCHEMA_VERSION = 1
DEFAULT_RECORDS_DIR = "calibration-records"
SS2_BAUDRATE = 9600  # 8N1, no flow control

REPLY_TIMEOUT_S = 3.0
QUERY_REPEAT_S = 1.0
POWER_DOWN_TIMEOUT_S = 60.0  # the rotor takes a while to stop
CALIBRATION_TIMEOUT_S = 120.0
BALL_NOT_FOUND_SETTLE_S = 5.0  # after "No ball direction found", wait this long for a final line
SELF_TEST_TIMEOUT_S = 300.0  # the vendor's "up to 5 minutes"
SELF_TEST_SETTLE_S = 10.0  # after an error code, further codes may follow; then the test is over

Ask = Callable[[str], bool]
Show = Callable[[str], None]


class CalibrationError(Exception):
    """The procedure could not run (no answer, wheel busy...). The message tells the operator what to do."""


class CalibrationCancelled(CalibrationError):
    """The operator answered no."""


@dataclass
class WheelIdentity:
    name: str | None
    firmware: dict[str, str] = field(default_factory=dict)

    def as_record(self) -> dict[str, Any]:
        return {"identity": self.name, "firmware": dict(self.firmware)}


# --- talking to the wheel --------------------------------------------------------------------------------


class WheelConsole:
    """Send a command, await the lines that answer it. Everything else the wheel says is skipped."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        reply_timeout: float = REPLY_TIMEOUT_S,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.reply_timeout = reply_timeout
        self._framer = WheelFramer()
        self._queue: list[WheelMessage] = []
        self.rejected: list[ParseError] = []

    async def send(self, line: bytes) -> None:
        self.writer.write(line)
        await self.writer.drain()

    async def next_message(self, timeout: float) -> WheelMessage | None:
        """The next message from the wheel, or None when `timeout` passes without one."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self._queue:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            try:
                data = await asyncio.wait_for(self.reader.read(512), remaining)
            except TimeoutError:
                return None
            if not data:
                raise CalibrationError("the wheel's port closed (cable pulled?)")
            for item in self._framer.feed(data):
                if isinstance(item, ParseError):
                    self.rejected.append(item)
                else:
                    self._queue.append(item)
        return self._queue.pop(0)

    async def request(
        self,
        line: bytes,
        accept: Callable[[WheelMessage], bool],
        timeout: float | None = None,
        *,
        repeat: bool = False,
    ) -> WheelMessage:
        """Send `line` and return the first message `accept`s; CalibrationError if none within `timeout`.

        `repeat` sends a query again every second until answered (only for queries: `*K`, `*X`, `*T C`),
        because a wheel that was just switched on ignores what it hears while it boots.
        """
        timeout = self.reply_timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        found: WheelMessage | None = None
        while found is None:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            await self.send(line)
            found = await self.wait_for(accept, min(remaining, QUERY_REPEAT_S) if repeat else remaining)
        if found is None:
            command = line.decode("ascii").strip()
            raise CalibrationError(
                f"the wheel did not answer {command!r} within {timeout:g} s (is it on, and is this its "
                "serial port? SS2 speaks 9600 8N1)"
            )
        return found

    async def wait_for(self, accept: Callable[[WheelMessage], bool], timeout: float) -> WheelMessage | None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            message = await self.next_message(max(0.0, deadline - loop.time()))
            if message is None:
                return None
            if accept(message):
                return message

    async def status(self) -> WheelStatus:
        found = await self.request(encode_status_poll(), lambda m: isinstance(m, WheelStatus), repeat=True)
        assert isinstance(found, WheelStatus)
        return found

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()


async def identify(console: WheelConsole) -> WheelIdentity:
    """`*K` (must answer: it proves we talk to an SS2) and `*S` (firmware, if it answers)."""
    found = await console.request(encode_identify(), lambda m: isinstance(m, Identity), repeat=True)
    assert isinstance(found, Identity)
    identity = WheelIdentity(name=found.name)
    await console.send(encode_firmware_version("S"))
    version = await console.wait_for(
        lambda m: isinstance(m, FirmwareVersion) and m.kind == "S", console.reply_timeout
    )
    if isinstance(version, FirmwareVersion):
        identity.firmware["S"] = version.version
    return identity


def _confirm(ask: Ask, question: str) -> None:
    if not ask(question):
        raise CalibrationCancelled("cancelled by the operator")


async def ensure_idle(console: WheelConsole, ask: Ask, show: Show) -> None:
    """The wheel must be idle (state 6). Offer to power it down if it is not."""
    status = await console.status()
    if status.state is WheelState.CLOSED:
        return
    show(f"The wheel is running (state {int(status.state)}).")
    _confirm(ask, "Power the wheel down now (no game must be in progress)?")
    await console.request(encode_power(False), lambda m: isinstance(m, PowerReply))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + POWER_DOWN_TIMEOUT_S
    while loop.time() < deadline:
        status = await console.status()
        if status.state is WheelState.CLOSED:
            show("The wheel is powered down.")
            return
        await asyncio.sleep(0.5)
    raise CalibrationError("the wheel did not power down within a minute: check it and try again")


# --- procedures ---------------------------------------------------------------------------------------------


@dataclass
class SensorCalibration:
    ok: bool
    message: str
    positions: tuple[str, ...] = ()
    broken_sensors: tuple[int, ...] = ()
    ball: str | None = None
    lines: list[str] = field(default_factory=list)

    def as_record(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "message": self.message,
            "sensor_positions": list(self.positions),
            "broken_sensors": list(self.broken_sensors),
            "ball": self.ball,
            "wheel_lines": list(self.lines),
        }


async def calibrate_sensors(
    console: WheelConsole, ask: Ask, show: Show, *, timeout: float = CALIBRATION_TIMEOUT_S
) -> SensorCalibration:
    """Guided `*C`: wheel idle, ball fixed in the middle of pocket 0, then the wheel finds its sensors."""
    await ensure_idle(console, ask, show)
    _confirm(ask, "Fix the ball in the middle of pocket 0 (it must not move). Ready to calibrate?")
    await console.send(encode_calibrate_sensors())
    result = SensorCalibration(ok=False, message="")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        remaining = deadline - loop.time()
        if result.ball == "not found":
            remaining = min(remaining, BALL_NOT_FOUND_SETTLE_S)
        message = await console.wait_for(_is_calibration_line, max(0.0, remaining))
        if message is None:
            if result.ball == "not found":
                result.message = "the wheel found no ball: is it fixed in the middle of pocket 0?"
                return result
            raise CalibrationError(f"sensor calibration gave no result within {timeout:g} s")
        result.lines.append(message.raw)
        show(f"wheel: {message.raw}")
        if isinstance(message, CalibrationBall):
            result.ball = message.text if message.found else "not found"
        elif isinstance(message, CalibrationCompleted):
            result.ok = True
            result.positions = message.positions
            result.message = f"sensors calibrated at positions {', '.join(message.positions)}"
            return result
        elif isinstance(message, CalibrationFailed):
            result.broken_sensors = message.broken_sensors
            if message.broken_sensors:
                listed = ", ".join(str(s) for s in message.broken_sensors)
                result.message = f"sensor(s) {listed} broken: clean or replace, then calibrate again"
            elif result.ball == "not found":
                result.message = "the wheel found no ball: is it fixed in the middle of pocket 0?"
            else:
                result.message = f"calibration failed: {message.text}"
            return result


def _is_calibration_line(message: WheelMessage) -> bool:
    kinds = CalibrationProgress | CalibrationBall | CalibrationCompleted | CalibrationFailed
    return isinstance(message, kinds)


def _setup_reply(parameter: str) -> Callable[[WheelMessage], bool]:
    # The wheel answers a query in the other letter case (`*T S` -> `*T s ...`), so compare without case.
    return lambda m: isinstance(m, SetupReply) and m.parameter.lower() == parameter.lower()


@dataclass
class FiringPosition:
    ok: bool
    message: str
    stored: str | None = None
    requested: str | None = None

    def as_record(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "message": self.message,
            "stored_position": self.stored,
            "requested_position": self.requested,
        }


async def set_firing_position(console: WheelConsole, ask: Ask, show: Show, value: str) -> FiringPosition:
    """Operator turns pocket 0 to the firing position by hand; then `*T c <value>`, `*T f`, read back."""
    value = value.strip()
    if not value or any(ch.isspace() for ch in value):
        raise CalibrationError(f"the firing position must be one value, not {value!r}")
    await ensure_idle(console, ask, show)
    _confirm(ask, "Turn the rotor by hand until pocket 0 is at the ball firing position. Done?")
    reply = await console.request(encode_setup("c", value), _setup_reply("c"))
    assert isinstance(reply, SetupReply)
    show(f"wheel: {reply.raw}")
    if reply.value != value:
        return FiringPosition(
            ok=False,
            requested=value,
            stored=reply.value,
            message=f"the wheel answered {reply.value!r} to {value!r}: not stored",
        )
    stored = await console.request(encode_store_setup(), _setup_reply("f"))
    show(f"wheel: {stored.raw}")
    check = await check_firing_position(console, show)
    if check.stored != value:
        return FiringPosition(
            ok=False,
            requested=value,
            stored=check.stored,
            message=f"read back {check.stored!r} after storing {value!r}",
        )
    return FiringPosition(
        ok=True, requested=value, stored=check.stored, message=f"ball firing position {value} stored to flash"
    )


async def check_firing_position(console: WheelConsole, show: Show) -> FiringPosition:
    """`*T C`: the stored ball firing position."""
    reply = await console.request(encode_setup("C"), _setup_reply("c"), repeat=True)
    assert isinstance(reply, SetupReply)
    show(f"wheel: {reply.raw}")
    return FiringPosition(ok=True, stored=reply.value, message=f"stored ball firing position: {reply.value}")


@dataclass
class SelfTestOutcome:
    ok: bool
    message: str
    codes: list[int] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def described(self) -> list[str]:
        return [f"{code}: {describe_error_code(code)}" for code in self.codes]

    def as_record(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "message": self.message,
            "codes": [{"code": code, "meaning": describe_error_code(code)} for code in self.codes],
            "wheel_lines": list(self.lines),
        }


async def run_self_test(
    console: WheelConsole,
    ask: Ask,
    show: Show,
    *,
    timeout: float = SELF_TEST_TIMEOUT_S,
    settle: float = SELF_TEST_SETTLE_S,
) -> SelfTestOutcome:
    """`*F`: the wheel tests itself (up to 5 minutes) and reports `*F 0` or one `*F <code>` per problem."""
    await ensure_idle(console, ask, show)
    await console.send(encode_self_test())
    show(f"Self-test running (up to {timeout / 60:g} minutes)...")
    outcome = SelfTestOutcome(ok=False, message="")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        remaining = deadline - loop.time()
        if outcome.codes:
            remaining = min(remaining, settle)
        message = await console.wait_for(lambda m: isinstance(m, SelfTestReply), max(0.0, remaining))
        if message is None:
            if outcome.codes:
                outcome.message = f"{len(outcome.codes)} problem(s) found"
                return outcome
            raise CalibrationError(f"the self-test gave no answer within {timeout / 60:g} minutes")
        assert isinstance(message, SelfTestReply)
        outcome.lines.append(message.raw)
        if message.busy:
            raise CalibrationError("the wheel refused the self-test (busy): power it down and try again")
        for code in message.codes:
            show(f"{code}: {describe_error_code(code)}")
            if code == 0:
                if not outcome.codes:
                    outcome.ok = True
                    outcome.message = "no errors"
                    return outcome
                continue
            outcome.codes.append(code)
            if code == 100:
                outcome.message = "the self-test timed out"
                return outcome


# --- records ------------------------------------------------------------------------------------------------


def write_record(
    out_dir: str | Path,
    kind: str,
    *,
    port: str,
    identity: WheelIdentity,
    ok: bool,
    result: dict[str, Any],
    now: datetime | None = None,
) -> Path:
    """Write one calibration record as JSON; an existing file is never replaced (a suffix is added)."""
    when = now or datetime.now(UTC)
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    record = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "created_at": when.isoformat().replace("+00:00", "Z"),
        "port": port,
        "wheel": identity.as_record(),
        "ok": ok,
        "result": result,
    }
    stem = f"{kind}-{when.strftime('%Y%m%dT%H%M%S%fZ')}"
    text = json.dumps(record, indent=2) + "\n"
    for attempt in range(1, 1000):
        path = directory / (f"{stem}.json" if attempt == 1 else f"{stem}-{attempt}.json")
        try:
            with path.open("x", encoding="utf-8") as handle:  # "x": fails rather than overwrite
                handle.write(text)
        except FileExistsError:
            continue
        return path
    raise CalibrationError(f"cannot find a free record name for {stem} in {directory}")
