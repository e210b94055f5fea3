"""WheelSession: the vendor's host rules on status transitions, with exact readings for every situation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
from drivers.session import DeviceCommand, UnknownDeviceCommand
from drivers.wheel.protocol import OperatingMode
from drivers.wheel.session import DEFAULT_MODE, WheelSession

pytestmark = pytest.mark.unit

T0 = 1_700_000_000.0


def brief(reading: Reading) -> tuple[Any, ...]:
    """A reading without device/time/raw, for exact comparisons."""
    if isinstance(reading, DeviceOnline):
        return ("online",)
    if isinstance(reading, DeviceOffline):
        return ("offline",)
    if isinstance(reading, DeviceFault):
        return ("fault", reading.code)
    if isinstance(reading, DeviceFaultCleared):
        return ("cleared", reading.detail)
    if isinstance(reading, DeviceStatus):
        return ("status", reading.state)
    if isinstance(reading, WheelIdle):
        return ("idle", reading.state, reading.during_game)
    if isinstance(reading, WheelGameStarted):
        return ("started", reading.spin)
    if isinstance(reading, WheelBallLaunched):
        return ("launched", reading.spin, reading.rotor_rpm, reading.direction)
    if isinstance(reading, WheelNoMoreBets):
        return ("no more bets", reading.spin)
    if isinstance(reading, WheelResult):
        return ("result", reading.number, reading.spin, reading.rotor_rpm, reading.direction)
    if isinstance(reading, WheelGameVoided):
        return ("voided", reading.reason, reading.spin)
    raise AssertionError(f"unexpected reading {reading!r}")


class Bench:
    """A session fed lines at given times, ticked every 100 ms in between like the live runner."""

    def __init__(self, ending: str = "\r\n", **options: Any) -> None:
        self.session = WheelSession("wheel", **options)
        self.ending = ending
        self.now = T0  # the last tick (ticks stay on a 100 ms grid, lines come at any time)
        self.readings: list[Reading] = []
        self.sent = bytearray()
        self.readings += self.session.connection_made(T0)
        self._drain()

    def _drain(self) -> None:
        self.sent += self.session.data_to_send()

    def until(self, t: float) -> list[Reading]:
        """Tick up to T0 + t."""
        out: list[Reading] = []
        target = T0 + t
        while self.now + 0.1 <= target + 1e-6:
            self.now = round(self.now + 0.1, 6)
            out += self.session.tick(self.now)
        self._drain()
        self.readings += out
        return out

    def line(self, t: float, text: str) -> list[Reading]:
        out = self.until(t)
        received = self.session.data_received((text + self.ending).encode("latin-1"), T0 + t)
        self._drain()
        self.readings += received
        return out + received

    def lines(self, t: float, text: str, *, until: float, step: float = 0.5) -> list[Reading]:
        """The same status line every `step` seconds from t to `until` (inclusive)."""
        out: list[Reading] = []
        k = 0
        while t + k * step <= until + 1e-6:
            out += self.line(t + k * step, text)
            k += 1
        return out

    def command(self, t: float, name: str, **args: Any) -> list[Reading]:
        out = self.until(t)
        out += self.session.command(DeviceCommand(name, args), T0 + t)
        self._drain()
        return out

    def take_sent(self) -> bytes:
        data = bytes(self.sent)
        self.sent.clear()
        return data


def summary(readings: Sequence[Reading]) -> list[tuple[Any, ...]]:
    return [brief(r) for r in readings]


VENDOR_EXAMPLE = [
    (0.0, "*X;1;011;23;0;154;0"),
    (0.5, "*X;2;011;23;0;154;0"),
    (1.0, "*X;2;011;23;0;086;0"),
    (1.5, "*X;3;011;23;0;170;1"),
    (2.0, "*X;4;011;23;0;168;1"),
    (2.5, "*X;4;011;23;0;165;1"),
    (2.8, "25"),
    (3.0, "*X;5;011;25;0;165;1"),
    (3.5, "*X;5;011;25;0;165;1"),
    (4.0, "*X;1;011;25;0;165;1"),
]


def play(bench: Bench, script: list[tuple[float, str]], offset: float = 0.0) -> list[Reading]:
    out: list[Reading] = []
    for t, text in script:
        out += bench.line(offset + t, text)
    return out


# --- the vendor's example ----------------------------------------------------------------------------------


def test_vendor_example_gives_exactly_one_result() -> None:
    bench = Bench()
    readings = play(bench, VENDOR_EXAMPLE)
    readings += bench.lines(4.5, "*X;1;011;25;0;165;1", until=10.0)  # it stays in state 1 for a while
    assert summary(readings) == [
        ("online",),
        ("idle", 1, False),
        ("started", 11),
        ("launched", 11, 17.0, "anticlockwise"),
        ("no more bets", 11),
        ("result", "25", 11, 16.5, "anticlockwise"),
        ("idle", 1, False),
    ]
    result = next(r for r in readings if isinstance(r, WheelResult))
    assert result.raw == "25\n*X;5;011;25;0;165;1"
    assert result.time == T0 + 3.0
    assert result.device == "wheel"
    started = next(r for r in readings if isinstance(r, WheelGameStarted))
    assert started.raw == "*X;2;011;23;0;154;0"
    assert bench.session.stats.rejected == {}


@pytest.mark.parametrize("ending", ["\r", "\n", "\r\n", "\n\r"])
def test_vendor_example_with_every_line_end(ending: str) -> None:
    bench = Bench(ending=ending)
    readings = play(bench, VENDOR_EXAMPLE)
    assert [r for r in summary(readings) if r[0] == "result"] == [("result", "25", 11, 16.5, "anticlockwise")]
    assert len(readings) == 7
    assert bench.session.stats.rejected == {}


def test_vendor_example_byte_by_byte() -> None:
    session = WheelSession("wheel")
    session.connection_made(T0)
    readings: list[Reading] = []
    for t, text in VENDOR_EXAMPLE:
        for byte in (text + "\r\n").encode():
            readings += session.data_received(bytes([byte]), T0 + t)
    assert summary(readings) == summary(play(Bench(), VENDOR_EXAMPLE))


def test_spin_number_unchanged_across_consecutive_results_still_gives_each_result() -> None:
    bench = Bench()
    game_one = [
        (0.0, "*X;2;011;23;0;154;0"),
        (1.0, "*X;3;011;23;0;170;1"),
        (2.0, "*X;4;011;23;0;168;1"),
        (2.8, " 7"),
        (3.0, "*X;5;011; 7;0;165;1"),
        (3.5, "*X;5;011; 7;0;165;1"),
    ]
    game_two = [
        (0.0, "*X;2;011; 7;0;154;0"),
        (1.0, "*X;3;011; 7;0;170;0"),
        (2.0, "*X;4;011; 7;0;168;0"),
        (2.8, " 7"),
        (3.0, "*X;5;011; 7;0;165;0"),
        (3.5, "*X;5;011; 7;0;165;0"),
    ]
    readings = play(bench, game_one) + play(bench, game_two, offset=10.0)
    results = [brief(r) for r in readings if isinstance(r, WheelResult)]
    # Same spin AND same number twice in a row: still two games, two results.
    assert results == [("result", "7", 11, 16.5, "anticlockwise"), ("result", "7", 11, 16.5, "clockwise")]


def test_repeated_lines_give_nothing_more() -> None:
    bench = Bench()
    play(bench, VENDOR_EXAMPLE[:7])
    assert summary(bench.line(3.0, "*X;5;011;25;0;165;1")) == [("result", "25", 11, 16.5, "anticlockwise")]
    assert bench.lines(3.5, "*X;5;011;25;0;165;1", until=8.0) == []
    assert bench.line(8.1, "25") == []  # the single line once more
    assert bench.session.stats.duplicates == 1
    assert summary(bench.lines(8.5, "*X;2;012;25;0;165;1", until=20.0)) == [("started", 12)]


# --- results -----------------------------------------------------------------------------------------------


def test_mismatch_is_a_fault_and_no_result() -> None:
    bench = Bench()
    script = [*VENDOR_EXAMPLE[:6], (2.8, "24"), (3.0, "*X;5;011;25;0;165;1"), (3.5, "*X;5;011;25;0;165;1")]
    readings = play(bench, script)
    assert not any(isinstance(r, WheelResult) for r in readings)
    faults = [r for r in readings if isinstance(r, DeviceFault)]
    assert [f.code for f in faults] == ["RESULT_MISMATCH"]
    assert "'24'" in faults[0].reason and "'25'" in faults[0].reason
    assert faults[0].raw == "24\n*X;5;011;25;0;165;1"
    # The next game clears it (a later status, new game, no flags).
    assert summary(bench.line(4.0, "*X;2;012;25;0;165;1")) == [
        ("started", 12),
        ("cleared", "cleared: RESULT_MISMATCH"),
    ]


def test_two_different_single_lines_in_one_game_are_a_mismatch() -> None:
    bench = Bench()
    script = [*VENDOR_EXAMPLE[:6], (2.6, "24"), (2.8, "25"), (3.0, "*X;5;011;25;0;165;1")]
    readings = play(bench, script)
    assert [brief(r) for r in readings if isinstance(r, WheelResult | DeviceFault)] == [
        ("fault", "RESULT_MISMATCH")
    ]


def test_single_line_after_the_status_still_confirms() -> None:
    bench = Bench()
    script = [*VENDOR_EXAMPLE[:6], (3.0, "*X;5;011;25;0;165;1")]
    assert not any(isinstance(r, WheelResult) for r in play(bench, script))
    readings = bench.line(3.2, "25")
    assert summary(readings) == [("result", "25", 11, 16.5, "anticlockwise")]
    assert readings[0].raw == "25\n*X;5;011;25;0;165;1"


def test_missing_single_line_is_unconfirmed_after_the_grace() -> None:
    bench = Bench()
    play(bench, [*VENDOR_EXAMPLE[:6], (3.0, "*X;5;011;25;0;165;1")])
    assert bench.until(4.4) == []
    readings = bench.until(4.6)
    assert summary(readings) == [("fault", "RESULT_UNCONFIRMED")]
    assert bench.line(4.7, "25") == []  # too late: no result after the fault
    assert bench.session.stats.rejected == {"winning line after the result was decided": 1}


def test_single_line_disabled_takes_the_status_alone() -> None:
    bench = Bench(mode=DEFAULT_MODE | OperatingMode.DISABLE_SINGLE_WINNING_LINE)
    assert bench.session.single_line is False
    script = [item for item in VENDOR_EXAMPLE if item[1] != "25"]
    readings = play(bench, script)
    results = [r for r in readings if isinstance(r, WheelResult)]
    assert summary(results) == [("result", "25", 11, 16.5, "anticlockwise")]
    assert results[0].raw == "*X;5;011;25;0;165;1"


def test_single_line_false_for_a_wheel_on_port_2() -> None:
    bench = Bench(single_line=False)
    assert OperatingMode.DISABLE_SINGLE_WINNING_LINE not in bench.session.mode  # a display may need it
    readings = play(bench, [item for item in VENDOR_EXAMPLE if item[1] != "25"])
    assert [brief(r) for r in readings if isinstance(r, WheelResult)] == [
        ("result", "25", 11, 16.5, "anticlockwise")
    ]


def test_joining_in_state_5_publishes_nothing() -> None:
    bench = Bench()
    readings = bench.line(0.0, "*X;5;011;25;0;165;1") + bench.line(0.5, "*X;5;011;25;0;165;1")
    assert summary(readings) == [
        ("online",),
        ("status", "joined in state 5: the result 25 was not witnessed"),
    ]
    assert summary(bench.line(1.0, "*X;2;012;25;0;165;1")) == [("started", 12)]


def test_a_skipped_state_5_is_recovered_when_both_sources_agree() -> None:
    bench = Bench()
    play(bench, VENDOR_EXAMPLE[:7])
    readings = bench.line(3.5, "*X;2;012;25;0;165;1")  # every 5-line was lost
    assert summary(readings) == [("result", "25", 12, 16.5, "anticlockwise"), ("started", 12)]
    assert readings[0].raw == "25\n*X;2;012;25;0;165;1"


def test_a_skipped_state_5_without_the_line_is_a_fault() -> None:
    bench = Bench()
    play(bench, VENDOR_EXAMPLE[:6])
    readings = bench.line(3.5, "*X;2;012;25;0;165;1")
    assert summary(readings) == [("fault", "RESULT_MISSED"), ("started", 12)]
    assert summary(bench.line(4.0, "*X;2;012;25;0;160;1")) == [("cleared", "cleared: RESULT_MISSED")]


def gap(bench: Bench, t: float) -> None:
    """The link falls at T0 + t and comes back a minute later (the wheel plays on meanwhile)."""
    bench.until(t)
    bench.session.connection_lost(T0 + t, "port vanished")
    bench.session.connection_made(T0 + t + 60.0)
    bench.now = T0 + t + 60.0


@pytest.mark.parametrize(
    ("left_in", "after_gap"),
    [
        # the ball in the rim of spin 11; back at the ball of spin 12: not a re-spin of 11
        ("*X;4;011;23;0;168;1", ["*X;3;012;25;0;170;1", "*X;4;012;25;0;168;1", "17", "*X;5;012;17;0;165;1"]),
        # the same state and spin number (a stuck counter), but a result decided meanwhile (23 -> 25)
        ("*X;4;011;23;0;168;1", ["*X;4;011;25;0;168;1", "17", "*X;5;011;17;0;165;1"]),
        # a game still taking bets when the link fell was played too: spin 12's ball is not its ball
        ("*X;2;011;23;0;154;0", ["*X;3;012;25;0;170;1", "*X;4;012;25;0;168;1", "17", "*X;5;012;17;0;165;1"]),
    ],
)
def test_a_game_played_during_a_link_gap_is_a_missed_result_never_the_next_spins(
    left_in: str, after_gap: list[str]
) -> None:
    """Across a gap the transitions alone would take another game for the one we followed (4 -> 3 reads as
    a re-spin, 4 -> 5 as its result): another spin number, or a winning number that changed outside state
    5, says the wheel played on. The game we followed has no result to publish: RESULT_MISSED, and what the
    wheel shows next is not its result."""
    bench = Bench()
    play(bench, [(0.0, "*X;1;011;23;0;154;0"), (0.5, "*X;2;011;23;0;154;0")])
    if not left_in.startswith("*X;2;"):
        play(bench, [(1.0, "*X;3;011;23;0;170;1"), (1.5, left_in)])
    gap(bench, 2.0)
    readings: list[Reading] = []
    for k, text in enumerate(after_gap):
        readings += bench.line(62.5 + 0.5 * k, text)
    assert brief(next(r for r in readings if isinstance(r, DeviceFault))) == ("fault", "RESULT_MISSED")
    first_fault = next(i for i, r in enumerate(readings) if isinstance(r, DeviceFault))
    assert not any(isinstance(r, WheelResult) for r in readings[:first_fault])
    # the fault came with the first line after the gap, before anything of the other game
    assert readings[first_fault].raw == after_gap[0]


def test_after_a_link_gap_the_same_games_result_is_still_read() -> None:
    """The gap fell while the ball was in the rim and the wheel is in state 5 of the same spin when it is
    back: that is this game's result (the status and the bare line agree), as without a gap."""
    bench = Bench()
    play(bench, VENDOR_EXAMPLE[:5])
    gap(bench, 2.2)
    readings = bench.line(62.5, "*X;4;011;23;0;165;1") + bench.line(62.8, "25")
    readings += bench.line(63.0, "*X;5;011;25;0;165;1")
    assert [brief(r) for r in readings if isinstance(r, WheelResult | DeviceFault)] == [
        ("result", "25", 11, 16.5, "anticlockwise")
    ]


def test_state_5_again_without_a_game_in_play_never_repeats_the_last_result() -> None:
    # Found by the line-order property below: after a result the wheel shows state 1, then (each line
    # confirmed by a second) state 5 again with the same number. No game was played since: the winning
    # line and the status's number are the last game's, so no second result, and a fault (a spin we did
    # not see would have an unknown number).
    bench = Bench()
    readings = play(bench, VENDOR_EXAMPLE)
    assert [r.number for r in readings if isinstance(r, WheelResult)] == ["25"]
    again = bench.line(4.5, "*X;5;011;25;0;165;1") + bench.line(5.0, "*X;5;011;25;0;165;1")
    assert summary(again) == [("fault", "RESULT_MISSED")]
    assert bench.session.stats.rejected["winning number without a game in play"] == 1
    # the next game is played and gives its own result
    readings = play(bench, [(t, line.replace(";011;", ";012;")) for t, line in VENDOR_EXAMPLE[1:]], 5.0)
    assert [r.number for r in readings if isinstance(r, WheelResult)] == ["25"]


def test_an_implausible_state_change_needs_confirmation() -> None:
    bench = Bench()
    play(bench, VENDOR_EXAMPLE[:8])
    # One damaged digit makes a 5-line read as state 4: not believed...
    assert bench.line(3.5, "*X;4;011;25;0;165;1") == []
    assert bench.line(4.0, "*X;5;011;25;0;165;1") == []
    assert bench.session.stats.rejected == {"unconfirmed state change 5->4": 1}
    # ...but two in a row are.
    assert bench.line(4.5, "*X;3;011;25;0;165;1") == []
    readings = bench.line(5.0, "*X;3;011;25;0;165;1")
    assert summary(readings) == [("launched", 11, 16.5, "anticlockwise")]
    assert readings[0].raw == "*X;3;011;25;0;165;1\n*X;3;011;25;0;165;1"


def test_extra_zero_results_are_reported_as_the_wheel_writes_them() -> None:
    bench = Bench()
    script = [*VENDOR_EXAMPLE[:6], (2.8, "00"), (3.0, "*X;5;011;00;0;165;1")]
    assert [brief(r) for r in play(bench, script) if isinstance(r, WheelResult)] == [
        ("result", "00", 11, 16.5, "anticlockwise")
    ]


# --- the vendor's exceptions -------------------------------------------------------------------------------


LAUNCH = [(0.0, "*X;2;020;14;0;150;0"), (0.5, "*X;2;020;14;0;150;0")]


def test_flag_8_is_a_fault_only_after_3_s_of_state_3() -> None:
    bench = Bench()
    play(bench, LAUNCH)
    readings = bench.lines(1.0, "*X;3;020;14;8;150;0", until=3.5)  # 0 .. 2.5 s into state 3
    assert summary(readings) == [("launched", 20, 15.0, "clockwise")]
    readings = bench.line(4.0, "*X;3;020;14;8;150;0")  # 3.0 s into state 3, still flag 8
    assert summary(readings) == [("fault", "LAUNCH_FAILED")]
    assert bench.lines(4.5, "*X;3;020;14;8;150;0", until=6.0) == []  # once
    assert summary(bench.line(6.5, "*X;3;020;14;0;150;0")) == [("cleared", "cleared: LAUNCH_FAILED")]


def test_flag_8_clearing_within_3_s_is_ignored() -> None:
    bench = Bench()
    play(bench, LAUNCH)
    bench.lines(1.0, "*X;3;020;14;8;150;0", until=3.5)
    readings = bench.lines(4.0, "*X;3;020;14;0;150;0", until=6.0)
    readings += bench.until(8.0)  # ticks alone never turn an old line into a fault
    assert readings == []
    assert not any(isinstance(r, DeviceFault) for r in bench.readings)


def test_flag_8_appearing_after_the_window_is_a_fault_at_once() -> None:
    bench = Bench()
    play(bench, LAUNCH)
    bench.lines(1.0, "*X;3;020;14;0;150;0", until=4.0)
    assert summary(bench.line(4.5, "*X;3;020;14;8;150;0")) == [("fault", "LAUNCH_FAILED")]


def test_flag_8_in_state_2_is_the_wheel_retrying_until_it_lasts_too_long() -> None:
    bench = Bench()
    bench.line(0.0, "*X;2;020;14;0;150;0")
    assert bench.lines(0.5, "*X;2;020;14;8;150;0", until=30.0) == []
    assert summary(bench.line(30.5, "*X;2;020;14;8;150;0")) == [("fault", "LAUNCH_FAILED")]


def test_miss_spin_voids_and_acknowledges_with_restart() -> None:
    bench = Bench()
    play(bench, LAUNCH)
    bench.line(1.0, "*X;3;020;14;0;150;0")
    bench.take_sent()
    readings = bench.line(1.5, "*X;3;020;14;2;150;0")
    assert summary(readings) == [("voided", "miss-spin", 20)]
    assert readings[0].raw == "*X;3;020;14;2;150;0"
    assert b"*R\r\n" in bench.take_sent()
    # The wheel holds the game until it hears *R: no second void, and *R again after 2 s.
    assert bench.lines(2.0, "*X;3;020;14;2;150;0", until=3.5) == []
    assert b"*R\r\n" in bench.take_sent()
    bench.line(3.6, "*R OK")
    bench.lines(4.0, "*X;3;020;14;2;150;0", until=7.0)
    assert b"*R" not in bench.take_sent()
    # The wheel re-spins from state 2: a new game (same spin number).
    assert summary(bench.line(7.5, "*X;2;020;14;0;150;0")) == [("started", 20)]


def test_miss_spin_flag_a_is_still_a_miss_spin() -> None:
    bench = Bench()
    play(bench, LAUNCH)
    readings = bench.line(1.0, "*X;3;020;14;A;150;0")
    assert summary(readings) == [("launched", 20, 15.0, "clockwise"), ("voided", "miss-spin", 20)]


def test_no_ball_is_ignored_for_5_s_then_voided() -> None:
    bench = Bench()
    play(bench, [*LAUNCH, (1.0, "*X;3;020;14;0;150;0"), (2.0, "*X;4;020;14;0;150;0")])
    readings = bench.lines(2.5, "*X;4;020;14;1;150;0", until=7.0)
    readings += bench.line(7.4, "*X;4;020;14;1;150;0")  # 4.9 s
    assert readings == []
    bench.take_sent()
    readings = bench.line(7.5, "*X;4;020;14;1;150;0")  # 5.0 s
    assert summary(readings) == [("voided", "ball not detected", 20)]
    assert readings[0].raw == "*X;4;020;14;1;150;0\n*X;4;020;14;1;150;0"
    assert b"*R\r\n" in bench.take_sent()
    assert bench.lines(8.0, "*X;4;020;14;1;150;0", until=12.0) == []
    # A result of the voided game (the ball turned up) is not published.
    bench.line(12.3, "17")
    readings = bench.line(12.5, "*X;5;020;17;0;150;0")
    assert summary(readings) == [("status", "winning number 17 of a voided game ignored")]
    assert bench.session.stats.rejected == {"result of a voided game": 1}


def test_no_ball_that_comes_back_within_5_s_is_nothing() -> None:
    bench = Bench()
    play(bench, [*LAUNCH, (1.0, "*X;3;020;14;0;150;0"), (2.0, "*X;4;020;14;0;150;0")])
    readings = bench.lines(2.5, "*X;4;020;14;1;150;0", until=6.5)
    readings += bench.lines(7.0, "*X;4;020;14;0;150;0", until=8.0)
    readings += bench.lines(8.5, "*X;4;020;14;1;150;0", until=12.5)  # a new 4 s episode
    assert readings == []


def test_state_7_counts_as_no_ball() -> None:
    bench = Bench()
    play(bench, [*LAUNCH, (1.0, "*X;3;020;14;0;150;0")])
    assert bench.lines(1.5, "*X;7;020;14;0;150;0", until=6.0) == []
    assert summary(bench.line(6.5, "*X;7;020;14;0;150;0")) == [("voided", "ball not detected", 20)]


def test_flag_4_is_a_fault_until_the_flags_clear() -> None:
    bench = Bench()
    play(bench, LAUNCH)
    readings = bench.line(1.0, "*X;3;020;14;4;150;0")
    assert summary(readings) == [("launched", 20, 15.0, "clockwise"), ("fault", "SENSOR_OR_MOTOR")]
    assert readings[1].raw == "*X;3;020;14;4;150;0"
    assert bench.lines(1.5, "*X;3;020;14;4;150;0", until=3.0) == []
    assert summary(bench.line(3.5, "*X;4;020;14;0;150;0")) == [
        ("no more bets", 20),
        ("cleared", "cleared: SENSOR_OR_MOTOR"),
    ]


def test_power_down_mid_game_is_a_fault() -> None:
    bench = Bench()
    play(bench, [*LAUNCH, (1.0, "*X;3;020;14;0;150;0")])
    readings = bench.line(1.5, "*X;6;020;14;0;080;0")
    assert summary(readings) == [("fault", "POWERED_DOWN"), ("idle", 6, True)]
    assert bench.lines(2.0, "*X;6;020;14;0;000;0", until=4.0) == []
    # Powered up again (by the operator): the fault condition is gone.
    assert summary(bench.line(4.5, "*X;1;020;14;0;050;0")) == [
        ("idle", 1, False),
        ("cleared", "cleared: POWERED_DOWN"),
    ]


def test_power_down_with_a_sensor_fault_as_seen_in_the_field() -> None:
    """Captured: flag 4 in state 4 with the rotor stopped, then state 6 with flag 4 latched."""
    bench = Bench()
    play(bench, [*LAUNCH, (1.0, "*X;3;001;  ;0;156;0"), (2.0, "*X;4;001;  ;0;157;0")])
    readings = bench.lines(2.5, "*X;4;001;  ;4;000;0", until=4.0)
    readings += bench.lines(4.5, "*X;6;001;  ;4;000;0", until=6.0)
    assert summary(readings) == [("fault", "SENSOR_OR_MOTOR"), ("fault", "POWERED_DOWN"), ("idle", 6, True)]
    # Still latched after the power-up: nothing clears until the flags do.
    assert summary(bench.line(6.5, "*X;1;001;  ;4;050;0")) == [("idle", 1, False)]
    assert summary(bench.line(7.0, "*X;1;001;  ;0;150;0")) == [
        ("cleared", "cleared: SENSOR_OR_MOTOR, POWERED_DOWN")
    ]


def test_a_host_power_down_is_not_a_fault() -> None:
    bench = Bench()
    play(bench, LAUNCH)
    bench.take_sent()
    bench.command(0.7, "power", on=False)
    assert bench.take_sent() == b"*P 0\r\n"
    readings = bench.line(1.0, "*P OK") + bench.line(1.5, "*X;6;020;14;0;100;0")
    assert summary(readings) == [("idle", 6, True)]


def test_error_code_during_play() -> None:
    bench = Bench()
    play(bench, [*LAUNCH, (1.0, "*X;3;020;14;0;150;0")])
    readings = bench.line(1.2, "*F 21")
    assert summary(readings) == [("fault", "F21")]
    fault = readings[0]
    assert isinstance(fault, DeviceFault)
    assert fault.reason == "wheel error 21 (during play): sensor 1 broken off (cannot see the ball)"
    assert fault.raw == "*F 21"
    readings = bench.line(1.5, "*X;6;020;14;0;100;0")
    assert summary(readings) == [("fault", "POWERED_DOWN"), ("idle", 6, True)]
    assert bench.lines(2.0, "*X;6;020;14;0;000;0", until=4.5) == []
    # The error stays until the wheel was powered down and up again (or a self-test passes).
    assert summary(bench.line(5.0, "*X;1;020;14;0;100;0")) == [
        ("idle", 1, False),
        ("cleared", "cleared: F21, POWERED_DOWN"),
    ]


def test_self_test_results() -> None:
    bench = Bench()
    bench.line(0.0, "*X;6;020;14;0;000;0")
    bench.take_sent()
    bench.command(0.2, "self_test")
    assert bench.take_sent() == b"*F\r\n"
    bench.lines(0.5, "*X;6;020;14;0;000;0", until=2.5)
    readings = bench.line(3.0, "*F 22")
    assert summary(readings) == [("fault", "F22")]
    assert "self-test" in readings[0].reason  # type: ignore[attr-defined]
    bench.line(4.5, "*X;6;020;14;0;000;0")
    readings = bench.line(5.0, "*F 0")
    assert summary(readings) == [("status", "self-test passed: no errors"), ("cleared", "cleared: F22")]
    assert summary(bench.line(6.0, "*F BUSY")) == [
        ("status", "self-test refused: the wheel is not idle (power it down first)")
    ]


# --- link, handshake, polling -------------------------------------------------------------------------------


def test_handshake_is_repeated_while_the_wheel_boots() -> None:
    bench = Bench()
    assert bench.take_sent() == b"*o 1415\r\n*P 1\r\n*X\r\n"
    bench.until(1.05)
    sent = bench.take_sent()
    assert sent.count(b"*o 1415\r\n") == 1 and sent.count(b"*P 1\r\n") == 1
    assert sent.count(b"*X\r\n") == 2  # every poll_interval, answered or not
    assert bench.until(2.95) == []
    readings = bench.until(3.05)
    assert summary(readings) == [("offline",)]  # it said nothing yet: not a failure, we keep trying
    bench.take_sent()
    bench.until(4.0)
    assert b"*o 1415" in bench.take_sent()
    # It answers: online, and the handshake stops.
    readings = bench.line(4.1, "*o BUSY") + bench.line(4.2, "*X;6;001;  ;0;000;0")
    assert summary(readings) == [("online",), ("idle", 6, False)]
    bench.take_sent()
    bench.until(5.5)
    assert b"*o" not in bench.take_sent()  # BUSY: asked again only after 2 s
    bench.until(6.2)
    assert b"*o 1415" in bench.take_sent()
    bench.line(6.3, "*o 1415")
    bench.line(6.4, "*P OK")
    bench.until(9.0)
    sent = bench.take_sent()
    assert b"*o" not in sent and b"*P" not in sent
    assert bench.session.reported_mode == 1415


def test_polling_stops_when_the_wheel_sends_status_by_itself() -> None:
    bench = Bench()
    bench.take_sent()
    for k in range(8):  # automatic statuses: more lines than polls
        bench.line(0.25 * k, "*X;6;001;  ;0;000;0")
    bench.take_sent()
    bench.until(3.0)
    bench.lines(3.0, "*X;6;001;  ;0;000;0", until=5.0)
    assert b"*X" not in bench.take_sent()
    bench.until(7.0)  # the automatic stream stopped: poll again
    assert b"*X\r\n" in bench.take_sent()


def test_link_timeout_and_back() -> None:
    bench = Bench()
    bench.line(0.0, "*X;1;001;  ;0;150;0")
    assert bench.until(2.9) == []
    assert summary(bench.until(3.1)) == [("offline",)]
    offline = next(r for r in bench.readings if isinstance(r, DeviceOffline))
    assert offline.reason == "no answer from the wheel for 3 s"
    # Garbage is not an answer: still offline.
    bench.session.data_received(b"\x13\x88\xff garbage\r\n", T0 + 3.2)
    assert bench.until(6.0) == []
    bench.take_sent()
    readings = bench.line(6.5, "*X;1;001;  ;0;150;0")
    assert summary(readings) == [("online",)]
    assert b"*o 1415" in bench.take_sent()  # it may have rebooted: set it up again


def test_connection_lost() -> None:
    session = WheelSession("wheel")
    session.connection_made(T0)
    readings = session.connection_lost(T0 + 1, "port vanished")
    assert summary(readings) == [("offline",)]
    assert isinstance(readings[0], DeviceOffline) and readings[0].reason == "port vanished"
    assert session.tick(T0 + 10) == []


def test_rejected_lines_are_counted_with_reasons() -> None:
    bench = Bench()
    bench.session.data_received(b"1\r\n00;0\r\n\x00\x13*X;6;001;  ;0;000;0\r\n*X;9\r\n*O 6 1 60 1158\r\n", T0)
    assert bench.session.stats.rejected == {
        "unrecognised line": 2,
        "noise before '*'": 1,
        "malformed status": 1,
        "unhandled reply *O": 1,
    }
    assert bench.session.stats.lines_received == 5


@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(st.binary(max_size=80), max_size=30))
def test_arbitrary_bytes_never_raise(chunks: list[bytes]) -> None:
    session = WheelSession("wheel")
    session.connection_made(T0)
    t = T0
    for chunk in chunks:
        t += 0.3
        session.data_received(chunk, t)
        session.tick(t)
    assert session.stats.bytes_received == sum(len(c) for c in chunks)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(
        st.sampled_from(
            [text for _, text in VENDOR_EXAMPLE]
            + ["*X;3;011;23;A;170;1", "*X;4;011;23;1;168;1", "*X;6;011;25;4;000;0", "*F 21", "24", "*R OK"]
        ),
        max_size=40,
    )
)
def test_any_line_order_never_gives_a_result_twice_or_unconfirmed(lines: list[str]) -> None:
    session = WheelSession("wheel")
    session.connection_made(T0)
    readings: list[Reading] = []
    line_times: list[float] = []
    for k, text in enumerate(lines):
        t = T0 + 0.5 * k
        if text == "25":
            line_times.append(t)
        readings += session.data_received((text + "\r\n").encode(), t)
        readings += session.tick(t + 0.25)
    results = [r for r in readings if isinstance(r, WheelResult)]
    previous = float("-inf")
    for result in results:
        assert result.number == "25"  # the only number both sources can agree on here
        # every result used a single line of its own: none since the previous result -> invented/duplicate
        assert any(previous < t <= result.time for t in line_times)
        previous = result.time


# --- commands and options ---------------------------------------------------------------------------------


def test_commands() -> None:
    session = WheelSession("wheel")
    session.connection_made(T0)
    session.data_to_send()
    session.command(DeviceCommand("start_game", {"direction": "clockwise"}), T0)
    assert session.data_to_send() == b"*u 1\r\n"
    session.command(DeviceCommand("start_game", {"direction": "anticlockwise"}), T0)
    assert session.data_to_send() == b"*u 3\r\n"
    session.command(DeviceCommand("restart_game"), T0)
    assert session.data_to_send() == b"*R\r\n"
    session.command(DeviceCommand("power", {"on": True}), T0)
    assert session.data_to_send() == b"*P 1\r\n"
    session.command(DeviceCommand("power", {"on": False}), T0)
    assert session.data_to_send() == b"*P 0\r\n"
    session.command(DeviceCommand("self_test"), T0)
    assert session.data_to_send() == b"*F\r\n"
    with pytest.raises(UnknownDeviceCommand):
        session.command(DeviceCommand("lock"), T0)
    with pytest.raises(UnknownDeviceCommand):
        session.command(DeviceCommand("start_game", {"direction": "sideways"}), T0)
    with pytest.raises(UnknownDeviceCommand):
        session.command(DeviceCommand("power", {"on": "yes"}), T0)


def test_restart_game_from_the_table_voids_what_the_wheel_still_reports() -> None:
    bench = Bench()
    play(bench, [*LAUNCH, (1.0, "*X;3;020;14;0;150;0"), (2.0, "*X;4;020;14;0;150;0")])
    bench.command(2.2, "restart_game")
    readings = bench.line(2.4, "17") + bench.line(2.5, "*X;5;020;17;0;150;0")
    assert summary(readings) == [("status", "winning number 17 of a voided game ignored")]


def test_options() -> None:
    assert WheelSession("w").mode == DEFAULT_MODE == 1415
    auto = WheelSession("w", user_start=False)
    assert OperatingMode.USER_GAME_START not in auto.mode
    with pytest.raises(UnknownDeviceCommand):
        auto.command(DeviceCommand("start_game"), T0)
    assert OperatingMode.USER_GAME_START in WheelSession("w", mode=1157).mode
    assert WheelSession("w", mode=1157 | 16).single_line is False
    assert WheelSession("w", mode=1157 | 16, single_line=True).single_line is True
    with pytest.raises(ValueError):
        WheelSession("w", poll_interval=0.05)
    with pytest.raises(ValueError):
        WheelSession("w", link_timeout=0)
    assert WheelSession.protocol == "cammegh-ss2"
