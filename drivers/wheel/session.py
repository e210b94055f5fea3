"""Host side of a Cammegh SS2 wheel (`cammegh-ss2`): status lines in, wheel readings out, no I/O.

The wheel repeats the same status line every 500 ms, and its spin number does not reliably change between
games, so everything here follows state TRANSITIONS (`_PLAUSIBLE_NEXT` lists the ones the wheel makes).
The host rules are the vendor's:

- a result is the entry into state 5, published only when the bare winning-number line and the status's
  winning field agree (or on the status alone when the single line is off); once per entry into state 5,
  and only for a game in play (state 5 again after state 1 still shows the last game's number);
- flag 8 (failed launch) is ignored for the first 3 s of state 3, then it is a fault;
- state 3 with flag 2 is a miss-spin: the game is void and the host acknowledges with `*R` (the wheel then
  re-spins from state 2);
- state 4 with flag 1 (or state 7) is ignored for 5 s, then the game is void (acknowledged with `*R` too);
- flag 4, `*F <code>` during play and a power-down in the middle of a game are faults.

Conditions are judged on the status lines themselves (a line that arrives at 3 s into state 3 still showing
flag 8 is the evidence), never on the clock alone: a late line must not turn into a fault it did not show.
Times come in as arguments, like everything else: the live service and a replay drive the same object.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from pydantic import Field

from drivers.readings import (
    DeviceFault,
    DeviceFaultCleared,
    DeviceOffline,
    DeviceOnline,
    DeviceStatus,
    Reading,
    WheelBallLaunched,
    WheelGameStarted,
    WheelGameVoided,
    WheelIdle,
    WheelNoMoreBets,
    WheelResult,
)
from drivers.session import DeviceCommand, DeviceSession, SessionOptions, UnknownDeviceCommand
from drivers.wheel.protocol import (
    NON_ARCADE_MODE,
    Direction,
    FirmwareVersion,
    Identity,
    ModeReply,
    OperatingMode,
    ParseError,
    PowerReply,
    RestartReply,
    SelfTestReply,
    UnhandledReply,
    WarningFlags,
    WheelFramer,
    WheelMessage,
    WheelState,
    WheelStatus,
    WinningNumberLine,
    describe_error_code,
    encode_power,
    encode_restart_game,
    encode_self_test,
    encode_set_mode,
    encode_status_poll,
    encode_user_start,
)

#: The vendor's non-arcade default (1159: reverse each game, user game start, speed change after no more
#: bets, automatic status every 500 ms, games-per-hour delay) plus 256, so a component fault during play
#: arrives as a `*F <code>` we can name instead of only as a silent power-down.
DEFAULT_MODE = NON_ARCADE_MODE | OperatingMode.ERRORS_DURING_PLAY

# The vendor's windows.
LAUNCH_FLAG_GRACE_S = 3.0  # flag 8 in the first 3 s of state 3 is a false trigger
NO_BALL_GRACE_S = 5.0  # state 4 + flag 1 (or state 7): at least 10 status messages before voiding
SELF_TEST_LIMIT_S = 300.0

# Ours.
COMMAND_RETRY_S = 1.0  # an unanswered handshake command is sent again (the wheel is mute while booting)
BUSY_RETRY_S = 2.0  # `*o BUSY`: the wheel is in a game; ask again later
RESTART_RETRY_S = 2.0  # `*R` not acknowledged while the void condition still shows
POLL_REPLY_WINDOW_S = 1.0  # a `*X` unanswered for this long is forgotten
AUTO_STATUS_FRESH_S = 1.5  # automatic statuses come every 0.5 s; after this long without one, poll again
RESULT_LINE_GRACE_S = 1.5  # state 5 seen but no single line yet: the line normally precedes the status
LAUNCH_RETRY_LIMIT_S = 30.0  # flag 8 in state 2 (the wheel retrying the launch) for this long is a fault
POWER_REFUSALS_MAX = 3  # `*P NO` to a power-up while closed: stop insisting, tell the operator
# Epoch timestamps carry ~0.2 us of float error: a window of "5 s" must not fail by that much.
_TIME_EPSILON_S = 1e-3

# Fault codes (DeviceFault.code).
LAUNCH_FAILED = "LAUNCH_FAILED"
SENSOR_OR_MOTOR = "SENSOR_OR_MOTOR"
POWERED_DOWN = "POWERED_DOWN"
RESULT_MISMATCH = "RESULT_MISMATCH"
RESULT_UNCONFIRMED = "RESULT_UNCONFIRMED"
RESULT_MISSED = "RESULT_MISSED"
_RESULT_FAULTS = frozenset({RESULT_MISMATCH, RESULT_UNCONFIRMED, RESULT_MISSED})

S = WheelState
_GAME_STATES = frozenset({S.PLACE_BETS, S.BALL_IN_RIM, S.NO_MORE_BETS, S.WINNING_NUMBER, S.BALL_NOT_DETECTED})
_BALL_OUT_STATES = frozenset({S.BALL_IN_RIM, S.NO_MORE_BETS, S.BALL_NOT_DETECTED})
_PLAYING_STATES = frozenset({S.BEFORE_GAME, S.PLACE_BETS, S.BALL_IN_RIM, S.NO_MORE_BETS, S.WINNING_NUMBER})

# The transitions the wheel makes. Anything else (5 -> 4, 6 -> 5...) is more likely a damaged line than the
# wheel, so it is only believed when the next status confirms it. After a gap in the link anything goes.
_PLAUSIBLE_NEXT: dict[WheelState, frozenset[WheelState]] = {
    S.BEFORE_GAME: frozenset({S.PLACE_BETS, S.CLOSED, S.BALL_NOT_DETECTED}),
    S.PLACE_BETS: frozenset({S.BEFORE_GAME, S.BALL_IN_RIM, S.CLOSED, S.BALL_NOT_DETECTED}),
    S.BALL_IN_RIM: frozenset({S.PLACE_BETS, S.NO_MORE_BETS, S.CLOSED, S.BALL_NOT_DETECTED}),  # 3->2: re-spin
    S.NO_MORE_BETS: frozenset({S.PLACE_BETS, S.WINNING_NUMBER, S.CLOSED, S.BALL_NOT_DETECTED}),
    S.WINNING_NUMBER: frozenset({S.BEFORE_GAME, S.PLACE_BETS, S.CLOSED}),
    S.CLOSED: frozenset({S.BEFORE_GAME, S.PLACE_BETS}),
    S.BALL_NOT_DETECTED: frozenset(set(S) - {S.BALL_NOT_DETECTED}),
}

_DIRECTIONS = {"clockwise": Direction.CLOCKWISE, "anticlockwise": Direction.ANTICLOCKWISE}


@dataclass(slots=True)
class _Request:
    """A host command repeated until the wheel answers it."""

    line: bytes
    sent_at: float
    retry_after: float = COMMAND_RETRY_S


@dataclass(slots=True)
class _Game:
    """What the session knows about the wheel's current game."""

    open: bool = False  # started (or joined) and not yet ended by a result or a void
    voided: bool = False
    lines: list[WinningNumberLine] = field(default_factory=list)  # distinct single lines seen in this game
    result_done: bool = False  # the current entry into state 5 has been decided
    awaiting_line_since: float | None = None  # in state 5, waiting for the single line


class WheelOptions(SessionOptions):
    """`[devices.<name>.options]` of a `cammegh-ss2` wheel."""

    mode: int = Field(DEFAULT_MODE, ge=0, le=65535, description="the SS2 operating mode to set (`*o`)")
    poll_interval: float = Field(
        0.5, ge=0.1, description="seconds between `*X` polls (the wheel wants >= 0.1)"
    )
    single_line: bool | None = Field(
        None,
        description="check results against the single winning-number line (port 1 only); default: by mode",
    )
    user_start: bool = Field(True, description="the table starts each game (`*u`), not the wheel")
    link_timeout: float = Field(3.0, gt=0, description="seconds without a valid line before the link is down")


class WheelSession(DeviceSession):
    """Sans-IO driver of a Cammegh SS2 wheel. See the module docstring for the rules."""

    protocol = "cammegh-ss2"
    Options = WheelOptions

    def __init__(
        self,
        name: str,
        *,
        mode: int = DEFAULT_MODE,
        poll_interval: float = 0.5,
        single_line: bool | None = None,
        user_start: bool = True,
        link_timeout: float = 3.0,
    ) -> None:
        super().__init__(name)
        if poll_interval < 0.1:
            raise ValueError("poll_interval must be at least 0.1 s (the wheel wants polls 100 ms apart)")
        if link_timeout <= 0:
            raise ValueError("link_timeout must be positive")
        requested = OperatingMode(int(mode))
        # `user_start` decides who starts games, so it wins over the mode's bit 2.
        if user_start:
            requested |= OperatingMode.USER_GAME_START
        else:
            requested &= ~OperatingMode.USER_GAME_START
        self.mode = requested
        self.user_start = user_start
        # Only port 1 sends the single line: a wheel wired to port 2 or 3 needs single_line=False even when
        # the mode does not disable the line (which we leave alone: a display on port 1 may need it).
        line_disabled = bool(requested & OperatingMode.DISABLE_SINGLE_WINNING_LINE)
        self.single_line = not line_disabled if single_line is None else single_line
        self.poll_interval = poll_interval
        self.link_timeout = link_timeout
        # What the wheel told us about itself.
        self.reported_mode: OperatingMode | None = None
        self.identity: str | None = None
        self.firmware: dict[str, str] = {}
        self.last_status: WheelStatus | None = None

        self._framer = WheelFramer()
        # link
        self._connected = False
        self._connected_at = 0.0
        self._link_up: bool | None = None  # None: not known yet since the (re)connect
        self._last_valid_at: float | None = None
        self._continuity_lost = True  # the next status may follow anything (start, reconnect, link gap)
        # handshake and other repeated commands
        self._want_power = True
        self._mode_request: _Request | None = None
        self._power_request: _Request | None = None
        self._power_refusals = 0
        self._restart_request: _Request | None = None
        self._host_powered_down = False  # we sent *P 0: the coming state 6 is ours, not a fault
        # polling
        self._last_poll_at: float | None = None
        self._polls_in_flight: deque[float] = deque()
        self._auto_status_at: float | None = None
        # game tracking
        self._state: WheelState | None = None
        self._state_since = 0.0
        self._held: WheelStatus | None = None  # an implausible transition waiting for confirmation
        self._game = _Game()
        self._no_ball_since: float | None = None
        self._no_ball_first_raw = ""
        self._launch_retry_since: float | None = None
        # faults: code -> number of the status that raised it (a fault is cleared by a LATER status)
        self._faults: dict[str, int] = {}
        self._status_count = 0
        self._closed_since_error_code = False
        self._self_test_since: float | None = None

    # -- inputs ------------------------------------------------------------------------------------------

    def connection_made(self, now: float) -> list[Reading]:
        self._connected = True
        self._connected_at = now
        self._link_up = None
        self._continuity_lost = True
        self._held = None
        self._framer.reset()
        self._polls_in_flight.clear()
        self._auto_status_at = None
        self._last_poll_at = None
        self._start_handshake(now)
        self._poll(now)
        return []

    def _start_handshake(self, now: float) -> None:
        # The wheel may still be booting (it answers nothing for a few seconds): these repeat until answered.
        self._mode_request = self._send_request(encode_set_mode(self.mode), now)
        if self._want_power:
            self._power_refusals = 0
            self._power_request = self._send_request(encode_power(True), now)

    def connection_lost(self, now: float, reason: str) -> list[Reading]:
        self._connected = False
        self._link_up = False
        self._continuity_lost = True
        self._held = None
        self._framer.reset()
        self._mode_request = self._power_request = self._restart_request = None
        return [DeviceOffline(device=self.name, time=now, reason=reason or "link closed")]

    def data_received(self, data: bytes, now: float) -> list[Reading]:
        self.stats.bytes_received += len(data)
        out: list[Reading] = []
        for item in self._framer.feed(data):
            if isinstance(item, ParseError):
                if item.whole_line:
                    self.stats.lines_received += 1
                self.stats.reject(item.reason)
                continue
            self.stats.lines_received += 1
            out.extend(self._link_alive(item, now))
            out.extend(self._on_message(item, now))
        return out

    def tick(self, now: float) -> list[Reading]:
        out: list[Reading] = []
        if not self._connected:
            return out
        out.extend(self._watch_link(now))
        self._repeat_requests(now)
        self._poll(now)
        out.extend(self._check_result_line_grace(now))
        if self._self_test_since is not None and _due(self._self_test_since + SELF_TEST_LIMIT_S, now):
            self._self_test_since = None
            out.append(self._status("self-test gave no answer within 5 minutes", now))
        return out

    def next_deadline(self) -> float | None:
        """The earliest of the timers `tick` fires; None while the port is closed.

        The vendor's exception windows (flag 8 after 3 s, no ball for 5 s, launch retries for 30 s) need no
        timer of their own: they are judged on status lines, which the polls (or the wheel's automatic
        status) bring, never on the clock alone."""
        if not self._connected:
            return None
        return min(self._timers())

    def next_reading_deadline(self) -> float | None:
        """The timers whose tick can report something: the link watchdog, the winning-number line's grace,
        the self-test limit. Polls and repeated requests only send bytes (what they change is when the next
        poll goes out), so a replay need not wake up for them: a wheel that stays silent for days costs a
        replay nothing."""
        if not self._connected:
            return None
        return min(self._timers(with_output=False), default=None)

    def _timers(self, with_output: bool = True) -> list[float]:
        timers = [self._poll_due_at()] if with_output else []
        link_since = self._link_watch_since()
        if link_since is not None:
            timers.append(link_since + self.link_timeout)
        for request in (self._mode_request, self._power_request, self._restart_request):
            if request is not None and with_output:
                timers.append(request.sent_at + request.retry_after)
        game = self._game
        if game.awaiting_line_since is not None and not game.result_done:
            timers.append(game.awaiting_line_since + RESULT_LINE_GRACE_S)
        if self._self_test_since is not None:
            timers.append(self._self_test_since + SELF_TEST_LIMIT_S)
        return timers

    def command(self, command: DeviceCommand, now: float) -> list[Reading]:
        name, args = command.name, command.args
        if name == "start_game":
            if not self.user_start:
                raise UnknownDeviceCommand(
                    f"wheel {self.name!r} starts its games by itself (user_start is off): no start_game"
                )
            direction = _DIRECTIONS.get(str(args.get("direction", "clockwise")))
            if direction is None:
                raise UnknownDeviceCommand(
                    "start_game direction must be 'clockwise' or 'anticlockwise', "
                    f"not {args.get('direction')!r}"
                )
            self._send(encode_user_start(direction))
        elif name == "restart_game":
            self._send(encode_restart_game())
            if self._state in _BALL_OUT_STATES:
                # the table voided this spin: whatever the wheel still reports for it is not a result
                self._game.voided = True
                self._game.open = False
        elif name == "power":
            on = args.get("on")
            if not isinstance(on, bool):
                raise UnknownDeviceCommand(f"power needs {{'on': true|false}}, not {args!r}")
            self._want_power = on
            self._host_powered_down = not on
            self._power_refusals = 0
            self._power_request = self._send_request(encode_power(on), now)
        elif name == "self_test":
            self._send(encode_self_test())
            self._self_test_since = now
        else:
            return super().command(command, now)
        return []

    # -- link ------------------------------------------------------------------------------------------------

    def _link_alive(self, message: WheelMessage, now: float) -> list[Reading]:
        self._last_valid_at = now
        if self._link_up is True:
            return []
        if self._link_up is False:
            # Silent for a while and back: the wheel may have rebooted (state 6, mode unknown): as at connect.
            self._start_handshake(now)
        self._link_up = True
        return [DeviceOnline(device=self.name, time=now, raw=message.raw, detail="SS2 wheel answering")]

    def _link_watch_since(self) -> float | None:
        """Since when the link watchdog has been waiting for a valid line (None: the link is known down)."""
        # Valid lines, not bytes: a wrong baud rate or a broken cable produces bytes too.
        if self._link_up is True:
            return self._last_valid_at
        if self._link_up is None:
            return self._connected_at
        return None

    def _watch_link(self, now: float) -> list[Reading]:
        since = self._link_watch_since()
        if since is None or not _due(since + self.link_timeout, now):
            return []
        if self._link_up is True:
            reason = f"no answer from the wheel for {self.link_timeout:g} s"
        else:
            reason = (
                f"the wheel has not answered since the port opened ({self.link_timeout:g} s; still starting?)"
            )
        self._link_up = False
        self._continuity_lost = True
        self._held = None
        return [DeviceOffline(device=self.name, time=now, reason=reason)]

    # -- commands that repeat until answered ---------------------------------------------------------------

    def _send_request(self, line: bytes, now: float) -> _Request:
        self._send(line)
        return _Request(line=line, sent_at=now)

    def _repeat_requests(self, now: float) -> None:
        for request in (self._mode_request, self._power_request):
            if request is not None and _due(request.sent_at + request.retry_after, now):
                self._send(request.line)
                request.sent_at, request.retry_after = now, COMMAND_RETRY_S
        restart = self._restart_request
        if restart is not None and _due(restart.sent_at + restart.retry_after, now):
            if self._void_condition_shows():
                self._send(restart.line)
                restart.sent_at = now
            else:
                self._restart_request = None

    def _void_condition_shows(self) -> bool:
        status = self.last_status
        return status is not None and (_is_miss_spin(status) or _is_no_ball(status))

    def _poll_due_at(self) -> float:
        due = self._connected_at
        if self._auto_status_at is not None:
            # The wheel sends its status by itself: just watch, and poll only when that stops.
            due = max(due, self._auto_status_at + AUTO_STATUS_FRESH_S)
        if self._last_poll_at is not None:
            due = max(due, self._last_poll_at + self.poll_interval)
        return due

    def _poll(self, now: float) -> None:
        if not _due(self._poll_due_at(), now):
            return
        self._send(encode_status_poll())
        self._last_poll_at = now
        self._forget_unanswered_polls(now)  # a silent wheel must not grow the list for days
        self._polls_in_flight.append(now)

    def _forget_unanswered_polls(self, now: float) -> None:
        while self._polls_in_flight and now - self._polls_in_flight[0] > POLL_REPLY_WINDOW_S:
            self._polls_in_flight.popleft()

    def _count_status_arrival(self, now: float) -> None:
        self._forget_unanswered_polls(now)
        if self._polls_in_flight:
            self._polls_in_flight.popleft()  # the answer to a poll
        else:
            self._auto_status_at = now  # nobody asked: automatic status output is on

    # -- messages --------------------------------------------------------------------------------------------

    def _on_message(self, message: WheelMessage, now: float) -> list[Reading]:
        if isinstance(message, WheelStatus):
            self._count_status_arrival(now)
            return self._on_status(message, now)
        if isinstance(message, WinningNumberLine):
            return self._on_winning_line(message, now)
        if isinstance(message, PowerReply):
            return self._on_power_reply(message, now)
        if isinstance(message, ModeReply):
            return self._on_mode_reply(message, now)
        if isinstance(message, RestartReply):
            self._restart_request = None
            return []
        if isinstance(message, SelfTestReply):
            return self._on_self_test_reply(message, now)
        if isinstance(message, Identity):
            self.identity = message.name
            return []
        if isinstance(message, FirmwareVersion):
            self.firmware[message.kind] = message.version
            return []
        if isinstance(message, UnhandledReply):
            self.stats.reject(f"unhandled reply *{message.command}")
            return []
        # `*u OK`, setup replies and calibration output: nothing for the table.
        return []

    def _on_power_reply(self, reply: PowerReply, now: float) -> list[Reading]:
        request = self._power_request
        if request is None:
            return []
        if reply.accepted:
            self._power_request = None
            return []
        if not self._want_power or self._state not in (None, S.CLOSED):
            self._power_request = None  # "NO" because it already is in the state we asked for
            return []
        self._power_refusals += 1
        if self._power_refusals < POWER_REFUSALS_MAX:
            return []
        self._power_request = None
        return [
            self._status(
                "the wheel refuses to power up (*P NO): check it for a fault, run the self-test",
                now,
                reply.raw,
            )
        ]

    def _on_mode_reply(self, reply: ModeReply, now: float) -> list[Reading]:
        request = self._mode_request
        if reply.busy:
            if request is not None:
                request.sent_at, request.retry_after = now, BUSY_RETRY_S
            return []
        self._mode_request = None
        assert reply.mode is not None
        self.reported_mode = reply.mode
        if request is not None and reply.mode != self.mode:
            return [
                self._status(
                    f"the wheel runs mode {int(reply.mode)}, not the requested {int(self.mode)}",
                    now,
                    reply.raw,
                )
            ]
        return []

    def _on_self_test_reply(self, reply: SelfTestReply, now: float) -> list[Reading]:
        if reply.busy:
            self._self_test_since = None
            return [
                self._status("self-test refused: the wheel is not idle (power it down first)", now, reply.raw)
            ]
        out: list[Reading] = []
        in_self_test = self._self_test_since is not None
        for code in reply.codes:
            if code == 0:
                self._self_test_since = None
                out.append(self._status("self-test passed: no errors", now, reply.raw))
                out.extend(self._clear([c for c in self._faults if _is_error_code(c)], now, reply.raw))
                continue
            context = "self-test" if in_self_test else "during play"
            out.extend(
                self._raise(
                    f"F{code}", f"wheel error {code} ({context}): {describe_error_code(code)}", now, reply.raw
                )
            )
        return out

    # -- the single winning-number line ----------------------------------------------------------------------

    def _on_winning_line(self, line: WinningNumberLine, now: float) -> list[Reading]:
        if not self.single_line:
            return []  # another display's line on a shared port: not ours to check against
        game = self._game
        if any(seen.number == line.number for seen in game.lines):
            self.stats.duplicates += 1
            return []
        if self._state is S.WINNING_NUMBER and game.result_done:
            self.stats.reject("winning line after the result was decided")
            return []
        game.lines.append(line)
        if self._state is S.WINNING_NUMBER and game.awaiting_line_since is not None:
            assert self.last_status is not None
            game.awaiting_line_since = None
            return self._decide_result(self.last_status, now, self.last_status.raw)
        return []

    # -- status lines and the state machine ------------------------------------------------------------------

    def _on_status(self, status: WheelStatus, now: float) -> list[Reading]:
        held, self._held = self._held, None
        raw = status.raw
        if held is not None:
            if status.state == held.state:
                raw = f"{held.raw}\n{status.raw}"  # confirmed by a second line: believe it
                return self._apply(status, now, raw, confirmed=True)
            self.stats.reject(f"unconfirmed state change {self._state_number()}->{int(held.state)}")
        return self._apply(status, now, raw, confirmed=False)

    def _apply(self, status: WheelStatus, now: float, raw: str, *, confirmed: bool) -> list[Reading]:
        previous = self._state
        if (
            not confirmed
            and not self._continuity_lost
            and previous is not None
            and status.state != previous
            and status.state not in _PLAUSIBLE_NEXT[previous]
        ):
            self._held = status
            return []
        out: list[Reading] = []
        self._status_count += 1
        if self._continuity_lost and self._played_unseen(status):
            # After a gap, another spin or a result we did not see: the wheel played on while we could not
            # see it, and what it shows now is not the game we were following.
            out.extend(self._end_game_unseen(status, now, raw))
            previous = None
        self._continuity_lost = False
        if status.state != previous:
            out.extend(self._transition(previous, status, now, raw))
        self.last_status = status
        if (status.state is not S.CLOSED) == self._want_power:
            self._power_request = None  # the wheel already is where we asked it to be
        out.extend(self._check_warnings(status, now, raw))
        out.extend(self._check_cleared(status, now, raw))
        return out

    def _played_unseen(self, status: WheelStatus) -> bool:
        """Whether the first status after a link gap shows a game other than the one we were following
        (the transitions alone would take it for that game: 4 -> 3 reads as a re-spin, 4 -> 5 as its result).
        Evidence: another spin number (it changes only with a new game; a stuck counter shows nothing, but
        never a false change), or, outside state 5, another winning number (it changes with a result only).
        A status that leaves the game (a next game, closed), or one after the game's own state 5, is judged
        by `_transition` as without a gap (the result read, or missed)."""
        last = self.last_status
        if last is None or self._state not in _GAME_STATES:
            return False
        left = status.state in (S.BEFORE_GAME, S.PLACE_BETS, S.CLOSED) or self._state is S.WINNING_NUMBER
        if status.state != self._state and left:
            return False
        another_spin = status.spin != last.spin
        result_unseen = status.state is not S.WINNING_NUMBER and status.winning != last.winning
        return another_spin or result_unseen

    def _end_game_unseen(self, status: WheelStatus, now: float, raw: str) -> list[Reading]:
        game = self._game
        out: list[Reading] = []
        # a game still taking bets when we lost sight of it was played too: its result is as lost
        if game.open and not game.voided and self._state in _BALL_OUT_STATES | {S.PLACE_BETS}:
            out.extend(
                self._raise(
                    RESULT_MISSED,
                    "the link was down while the wheel finished a spin: "
                    "its result was not seen (read it on the wheel)",
                    now,
                    raw,
                )
            )
        self._game = _Game()
        return out

    def _transition(
        self, previous: WheelState | None, status: WheelStatus, now: float, raw: str
    ) -> list[Reading]:
        out: list[Reading] = []
        new = status.state
        game = self._game
        if previous is S.WINNING_NUMBER:
            out.extend(self._leave_winning_state(now, raw))
        next_game = new in (S.BEFORE_GAME, S.PLACE_BETS)
        if previous in _BALL_OUT_STATES and next_game and game.open and not game.voided:
            out.extend(self._result_skipped(status, now, raw))
        self._state = new
        self._state_since = now
        self._launch_retry_since = None
        if new is not S.CLOSED:
            self._host_powered_down = False

        if new is S.BEFORE_GAME:
            self._game.open = False
            out.append(WheelIdle(device=self.name, time=now, raw=raw, state=int(new)))
        elif new is S.PLACE_BETS:
            self._game = _Game(open=True)
            out.append(WheelGameStarted(device=self.name, time=now, raw=raw, spin=status.spin))
        elif new is S.BALL_IN_RIM:
            self._join_game(previous)
            out.append(
                WheelBallLaunched(
                    device=self.name,
                    time=now,
                    raw=raw,
                    spin=status.spin,
                    rotor_rpm=status.rotor_rpm,
                    direction=status.direction_name,
                )
            )
        elif new is S.NO_MORE_BETS:
            self._join_game(previous)
            out.append(WheelNoMoreBets(device=self.name, time=now, raw=raw, spin=status.spin))
        elif new is S.WINNING_NUMBER:
            out.extend(self._enter_winning_state(previous, status, now, raw))
        elif new is S.CLOSED:
            out.extend(self._closed(previous, now, raw))
        elif new is S.BALL_NOT_DETECTED:
            self._join_game(previous)
        return out

    def _join_game(self, previous: WheelState | None) -> None:
        if previous is None or previous in (S.BEFORE_GAME, S.CLOSED, S.WINNING_NUMBER):
            # We did not see this game start (controller started mid-spin, or a state 2 was missed).
            self._game = _Game(open=True)

    def _closed(self, previous: WheelState | None, now: float, raw: str) -> list[Reading]:
        out: list[Reading] = []
        during_game = previous in _GAME_STATES
        if during_game and not self._host_powered_down:
            out.extend(
                self._raise(
                    POWERED_DOWN,
                    f"the wheel powered down in the middle of a game (state {int(previous or 0)}): "
                    "a component fault? run the self-test",
                    now,
                    raw,
                )
            )
        if any(_is_error_code(code) for code in self._faults):
            self._closed_since_error_code = True
        self._game.open = False
        out.append(
            WheelIdle(device=self.name, time=now, raw=raw, state=int(S.CLOSED), during_game=during_game)
        )
        return out

    # -- results ---------------------------------------------------------------------------------------------

    def _enter_winning_state(
        self, previous: WheelState | None, status: WheelStatus, now: float, raw: str
    ) -> list[Reading]:
        game = self._game
        game.result_done = False
        game.awaiting_line_since = None
        if previous is None:
            game.result_done = True
            text = f"joined in state 5: the result {status.winning} was not witnessed"
            return [self._status(text, now, raw)]
        if game.voided:
            game.result_done = True
            self.stats.reject("result of a voided game")
            return [self._status(f"winning number {status.winning} of a voided game ignored", now, raw)]
        if not game.open:
            # No game in play since the last result (state 5 again after state 1, say): the winning line
            # and the status's number still kept are the last game's. Publishing them would give one spin
            # two results; if a spin happened unseen, its number is unknown.
            game.result_done = True
            self.stats.reject("winning number without a game in play")
            return self._raise(
                RESULT_MISSED,
                f"state 5 (winning number {status.winning!r}) without a game in play: no result "
                "published (read the number on the wheel)",
                now,
                raw,
            )
        if not self.single_line:
            return self._publish_result(status, now, raw)
        if not game.lines:
            game.awaiting_line_since = now  # the line normally comes first; give it a moment
            return []
        return self._decide_result(status, now, raw)

    def _decide_result(self, status: WheelStatus, now: float, raw: str) -> list[Reading]:
        game = self._game
        numbers = [line.number for line in game.lines]
        lines_raw = "\n".join(line.raw for line in game.lines)
        if numbers == [status.winning]:
            return self._publish_result(status, now, f"{lines_raw}\n{raw}")
        game.result_done = True
        game.open = False
        said = " then ".join(repr(n) for n in numbers)
        return self._raise(
            RESULT_MISMATCH,
            f"the winning-number line said {said} but the status says {status.winning!r}: no result "
            "published (read the number on the wheel)",
            now,
            f"{lines_raw}\n{raw}",
        )

    def _publish_result(self, status: WheelStatus, now: float, raw: str) -> list[Reading]:
        game = self._game
        game.result_done = True
        game.open = False  # its lines stay, so a repeat of the single line counts as a duplicate
        if status.winning is None:
            return self._raise(RESULT_MISMATCH, "state 5 without a winning number in the status", now, raw)
        return [
            WheelResult(
                device=self.name,
                time=now,
                raw=raw,
                number=status.winning,
                spin=status.spin,
                rotor_rpm=status.rotor_rpm,
                direction=status.direction_name,
            )
        ]

    def _leave_winning_state(self, now: float, raw: str) -> list[Reading]:
        game = self._game
        if game.awaiting_line_since is None or game.result_done:
            return []
        return self._unconfirmed(now, raw)

    def _check_result_line_grace(self, now: float) -> list[Reading]:
        game = self._game
        since = game.awaiting_line_since
        if since is None or game.result_done or not _elapsed(since, now, RESULT_LINE_GRACE_S):
            return []
        return self._unconfirmed(now, self.last_status.raw if self.last_status else "")

    def _unconfirmed(self, now: float, raw: str) -> list[Reading]:
        game = self._game
        game.awaiting_line_since = None
        game.result_done = True
        game.open = False
        winning = self.last_status.winning if self.last_status else None
        return self._raise(
            RESULT_UNCONFIRMED,
            f"state 5 with winning number {winning!r} but no winning-number line to confirm it: no result "
            "published (read the number on the wheel)",
            now,
            raw,
        )

    def _result_skipped(self, status: WheelStatus, now: float, raw: str) -> list[Reading]:
        """The wheel left a spin for a new game without us seeing state 5 (lost or damaged lines)."""
        game = self._game
        numbers = [line.number for line in game.lines]
        if self.single_line and numbers and numbers == [status.winning]:
            # Both independent sources still agree: the line of this game and the status's last number.
            lines_raw = "\n".join(line.raw for line in game.lines)
            return self._publish_result(status, now, f"{lines_raw}\n{raw}")
        game.open = False
        return self._raise(
            RESULT_MISSED,
            "the wheel went on to a new game without a readable result for the "
            "last spin (read the number on the wheel)",
            now,
            raw,
        )

    # -- warning flags and the vendor's exception windows ----------------------------------------------------

    def _check_warnings(self, status: WheelStatus, now: float, raw: str) -> list[Reading]:
        out: list[Reading] = []
        flags = status.flags
        if flags & WarningFlags.SENSOR_OR_MOTOR:
            out.extend(
                self._raise(
                    SENSOR_OR_MOTOR,
                    "a ball sensor is broken (on or off) or the motor/encoder failed: run the self-test",
                    now,
                    raw,
                )
            )
        if _is_miss_spin(status):
            out.extend(self._void("miss-spin", status, now, raw))
        if _is_no_ball(status):
            if self._no_ball_since is None:
                self._no_ball_since, self._no_ball_first_raw = now, raw
            elif _elapsed(self._no_ball_since, now, NO_BALL_GRACE_S):
                both = f"{self._no_ball_first_raw}\n{raw}"  # when it started, and the line that ends the wait
                out.extend(self._void("ball not detected", status, now, both))
        else:
            self._no_ball_since = None
        if flags & WarningFlags.LAUNCH_FAILED:
            if status.state is S.BALL_IN_RIM and _elapsed(self._state_since, now, LAUNCH_FLAG_GRACE_S):
                out.extend(
                    self._raise(
                        LAUNCH_FAILED,
                        "the ball launch failed (flag 8 persists in the track "
                        "after 3 s): stop the game and investigate",
                        now,
                        raw,
                    )
                )
            elif status.state is S.PLACE_BETS:
                if self._launch_retry_since is None:
                    self._launch_retry_since = now
                elif _elapsed(self._launch_retry_since, now, LAUNCH_RETRY_LIMIT_S):
                    out.extend(
                        self._raise(
                            LAUNCH_FAILED,
                            "the wheel keeps failing to launch the ball "
                            f"(flag 8 for {LAUNCH_RETRY_LIMIT_S:g} s): check the ball and "
                            "the launcher",
                            now,
                            raw,
                        )
                    )
        else:
            self._launch_retry_since = None
        return out

    def _void(self, reason: str, status: WheelStatus, now: float, raw: str) -> list[Reading]:
        game = self._game
        if game.voided:
            return []
        game.voided = True
        game.open = False
        game.awaiting_line_since = None
        # The vendor's acknowledgement of a void: the wheel restarts the game from state 2.
        self._restart_request = _Request(line=encode_restart_game(), sent_at=now, retry_after=RESTART_RETRY_S)
        self._send(encode_restart_game())
        return [WheelGameVoided(device=self.name, time=now, raw=raw, reason=reason, spin=status.spin)]

    # -- faults ----------------------------------------------------------------------------------------------

    def _raise(self, code: str, reason: str, now: float, raw: str) -> list[Reading]:
        if code in self._faults:
            return []
        self._faults[code] = self._status_count
        if _is_error_code(code):
            self._closed_since_error_code = False
        return [DeviceFault(device=self.name, time=now, raw=raw, code=code, reason=reason)]

    def _clear(self, codes: list[str], now: float, raw: str) -> list[Reading]:
        if not codes:
            return []
        for code in codes:
            self._faults.pop(code, None)
        if self._faults:
            return []  # the table stays in fault until every condition is gone
        detail = f"cleared: {', '.join(codes)}"
        return [DeviceFaultCleared(device=self.name, time=now, raw=raw, detail=detail)]

    def _check_cleared(self, status: WheelStatus, now: float, raw: str) -> list[Reading]:
        if not self._faults or status.flags or status.state not in _PLAYING_STATES:
            return []
        clearable = []
        for code, raised_at in self._faults.items():
            if raised_at >= self._status_count:
                continue  # raised by this very status
            if code in _RESULT_FAULTS:
                ok = status.state in (S.BEFORE_GAME, S.PLACE_BETS)  # the wheel moved on to a new game
            elif _is_error_code(code):
                ok = self._closed_since_error_code  # powered down and up again since the error
            else:
                ok = True
            if ok:
                clearable.append(code)
        return self._clear(clearable, now, raw)

    # -- helpers ---------------------------------------------------------------------------------------------

    def _status(self, text: str, now: float, raw: str = "") -> DeviceStatus:
        return DeviceStatus(device=self.name, time=now, raw=raw, state=text)

    def _state_number(self) -> str:
        return "?" if self._state is None else str(int(self._state))


def _elapsed(since: float, now: float, seconds: float) -> bool:
    return now - since >= seconds - _TIME_EPSILON_S


def _due(deadline: float, now: float) -> bool:
    """A timer of `tick` has expired: judged like `_elapsed`, so ticking at the deadline always fires it."""
    return now >= deadline - _TIME_EPSILON_S


def _is_miss_spin(status: WheelStatus) -> bool:
    return status.state is S.BALL_IN_RIM and bool(status.flags & WarningFlags.SAME_DIRECTION)


def _is_no_ball(status: WheelStatus) -> bool:
    if status.state is S.BALL_NOT_DETECTED:
        return True
    return status.state is S.NO_MORE_BETS and bool(status.flags & WarningFlags.BALL_NOT_DETECTED)


def _is_error_code(code: str) -> bool:
    return code.startswith("F") and code[1:].isdigit()
