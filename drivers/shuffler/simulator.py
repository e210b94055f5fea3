"""A simulated `shuffler-line` batch card shuffler that behaves like the machine, byte for byte.

`ShufflerDevice` is the pure core (a `drivers.sim_port.SimulatedDevice` built on
`drivers.line.device.LineDeviceCore`: HELLO, HB every second, DONE/ERR retransmitted every 250 ms until
ACKed, in order). The machine:

- the dealer loads cards into the input tray (`load(cards)`: state LOADING), the host sends
  `SHUFFLE <id> <decks>` (state SHUFFLING), and `base_s + per_deck_s x decks` seconds later (divided by
  `speed`, so a test can run it fifty times faster) it sends `DONE <seq> <id> <decks> <counted>` and
  `STATE READY`; the dealer takes the shuffled cards out (`take_output()`: IDLE or LOADING again);
- it counts what it shuffled: a dealer who loaded the wrong number of cards, or a miscounting sensor
  (`miscount_next(delta)`), gives a DONE whose count is not decks x 52. With `checks_count=True` the
  firmware checks it itself and reports `ERR <seq> E02 COUNT_MISMATCH <expected> <actual>` instead;
- errors stop it in state ERROR until the host sends `RESET` (the cards are back in the input tray then):
  `E01 JAM` and `E05 MOTOR` halfway through a shuffle (`jam_next()`, `motor_fault_next()`, or at random
  with the rates of `ShufflerFaults`), `E04 INPUT_EMPTY` for a SHUFFLE with nothing loaded, `E03 DOOR_OPEN`
  when the door is opened during a shuffle (`open_door()`; the state is DOOR_OPEN until `close_door()`);
- `ABORT` stops a shuffle (cards back to the input tray), `STATUS?` is answered with `STATE`, and a
  SHUFFLE it cannot start now (busy, READY with the output tray full, in error, door open) is answered with
  `STATE` only: the host sees why nothing happens;
- whole lines can be spoiled on the wire (noise, bad checksums, duplicates) at the `ShufflerFaults` rates.

Every shuffle is written to `shuffles` (what the machine really did) and every line to `sent`/`received`.
`ShufflerSimulator` serves a `ShufflerDevice` on a pty or TCP port (`drivers.line.device.LineSimulator`,
which adds `unplug()`/`replug()`/`silence()`/`inject()`); the dealer's actions use the port's clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.line.device import LineDeviceCore, LineFaults, LineSimulator
from drivers.line.framing import Hello
from drivers.shuffler.protocol import (
    CARDS_PER_DECK,
    ERROR_TEXTS,
    LINE_PROTOCOL,
    Abort,
    Done,
    Err,
    HostMessage,
    Reset,
    Shuffle,
)

#: Seconds at speed 1: lowering the elevator and feeding the first cards, then each deck through the gripper.
DEFAULT_BASE_S = 4.0
DEFAULT_PER_DECK_S = 6.0


@dataclass(frozen=True, slots=True)
class ShufflerFaults(LineFaults):
    """Misbehaviour rates (0..1): the line's, and the machine's own; `seed` makes a run repeatable."""

    jam_rate: float = 0.0  # a shuffle jams halfway (ERR E01 JAM)
    motor_rate: float = 0.0  # the motor fails halfway (ERR E05 MOTOR)
    miscount_rate: float = 0.0  # the counting sensor is one card off


@dataclass(slots=True)
class ShuffleRecord:
    """One shuffle as the machine really did it. `outcome`: running, done, aborted, or an error code."""

    shuffle_id: str
    decks: int
    loaded: int
    started_at: float
    counted: int | None = None
    outcome: str = "running"
    ended_at: float | None = None


@dataclass(slots=True)
class _Plan:
    """How the running shuffle will end (decided at its start, so a run is repeatable)."""

    failure: str | None = None  # "E01" | "E05"
    miscount: int = 0


class ShufflerDevice(LineDeviceCore[HostMessage, ShufflerFaults]):
    """The pure core of the simulated shuffler. All times are passed in."""

    line_protocol = LINE_PROTOCOL

    def __init__(
        self,
        *,
        speed: float = 1.0,
        base_s: float = DEFAULT_BASE_S,
        per_deck_s: float = DEFAULT_PER_DECK_S,
        checks_count: bool = False,
        faults: ShufflerFaults | None = None,
        model: str = "SIMSHUF",
        firmware: str = "1.0.0",
        serial: str = "SIM0002",
        first_seq: int = 1,
    ) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        super().__init__(
            hello=Hello(model, firmware, serial), faults=faults or ShufflerFaults(), first_seq=first_seq
        )
        self.speed = speed
        self.base_s = base_s
        self.per_deck_s = per_deck_s
        self.checks_count = checks_count
        self.input_cards = 0
        self.output_cards = 0
        self.door_open = False
        self.error: str | None = None  # the ERR code that keeps the machine in ERROR until RESET
        self.shuffles: list[ShuffleRecord] = []
        self._running: ShuffleRecord | None = None
        self._plan = _Plan()
        self._next_miscount = 0

    # -- observation -------------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        if self.door_open:
            return "DOOR_OPEN"
        if self.error is not None:
            return "ERROR"
        if self._running is not None:
            return "SHUFFLING"
        if self.output_cards:
            return "READY"
        if self.input_cards:
            return "LOADING"
        return "IDLE"

    @property
    def shuffling(self) -> bool:
        return self._running is not None

    def shuffle_seconds(self, decks: int) -> float:
        """How long a shuffle of `decks` decks takes at this device's speed."""
        return (self.base_s + self.per_deck_s * decks) / self.speed

    # -- misbehaviour --------------------------------------------------------------------------------------
    def jam_next(self) -> None:
        """The next shuffle jams halfway (one shot)."""
        self._arm_failure("E01")

    def motor_fault_next(self) -> None:
        """The motor of the next shuffle fails halfway (one shot)."""
        self._arm_failure("E05")

    def miscount_next(self, delta: int = -1) -> None:
        """The next shuffle's count is off by `delta` cards (one shot): a dirty counting sensor."""
        self._next_miscount = delta

    # -- dealer actions --------------------------------------------------------------------------------------
    def load(self, cards: int, now: float) -> bool:
        """The dealer puts `cards` cards into the input tray. False while shuffling, in error or door open."""
        if cards <= 0 or self._running is not None or self.error is not None or self.door_open:
            return False
        before = self.state
        self.input_cards += cards
        self._state_may_have_changed(before)
        return True

    def take_output(self, now: float) -> int:
        """The dealer takes the shuffled cards out of the output tray; returns how many there were."""
        if self.door_open or not self.output_cards:
            return 0
        before = self.state
        taken, self.output_cards = self.output_cards, 0
        self._state_may_have_changed(before)
        return taken

    def open_door(self, now: float) -> None:
        """Open the door (to clear a jam, or by mistake): a running shuffle stops with ERR E03 DOOR_OPEN."""
        if self.door_open:
            return
        if self._running is not None:
            self._fail(self._running, "E03", now)
        self.door_open = True
        self._say_state()

    def close_door(self, now: float) -> None:
        if not self.door_open:
            return
        self.door_open = False
        self._say_state()

    # -- LineDeviceCore --------------------------------------------------------------------------------------
    def host_message(self, message: HostMessage, now: float) -> None:
        if isinstance(message, Shuffle):
            self._start(message, now)
        elif isinstance(message, Abort):
            self._abort(now)
        elif isinstance(message, Reset):
            if self.error is not None and not self.door_open:
                self.error = None
            self._say_state()

    # -- internals -------------------------------------------------------------------------------------------
    def _start(self, request: Shuffle, now: float) -> None:
        if self.state not in ("IDLE", "LOADING"):
            self._say_state()  # refused: the host sees why
            return
        record = ShuffleRecord(request.shuffle_id, request.decks, self.input_cards, started_at=now)
        self.shuffles.append(record)
        if self.input_cards == 0:
            self._fail(record, "E04", now)
            self._say_state()
            return
        self._running = record
        self._plan = self._plan_shuffle()
        self._say_state()
        duration = self.shuffle_seconds(request.decks)
        if self._plan.failure is not None:
            self._at(now + duration / 2, lambda at: self._failed_midway(record, at))
        else:
            self._at(now + duration, lambda at: self._finish(record, at))

    def _plan_shuffle(self) -> _Plan:
        rng, faults = self._rng, self._faults
        failure = self._take_failure(("E01", faults.jam_rate), ("E05", faults.motor_rate))
        miscount, self._next_miscount = self._next_miscount, 0
        # Always drawn, like the failure rolls, so changing one rate does not shift the others' sequence.
        miscount_roll = rng.random()
        if miscount == 0 and miscount_roll < faults.miscount_rate:
            miscount = rng.choice((-1, 1))
        return _Plan(failure=failure, miscount=miscount)

    def _finish(self, record: ShuffleRecord, at: float) -> None:
        if self._running is not record:
            return  # aborted or failed meanwhile
        self._running = None
        counted = max(0, record.loaded + self._plan.miscount)
        record.counted = counted
        record.ended_at = at
        expected = record.decks * CARDS_PER_DECK
        if self.checks_count and counted != expected:
            record.outcome = "E02"
            self.error = "E02"  # the cards stay in the machine: back in the input tray after RESET
            self._queue_seq_message(lambda seq: Err.count_mismatch(seq, expected, counted).encode(), at)
        else:
            record.outcome = "done"
            self.output_cards, self.input_cards = record.loaded, 0
            self._queue_seq_message(
                lambda seq: Done(seq, record.shuffle_id, record.decks, counted).encode(), at
            )
        self._say_state()

    def _failed_midway(self, record: ShuffleRecord, at: float) -> None:
        if self._running is not record or self._plan.failure is None:
            return
        self._fail(record, self._plan.failure, at)
        self._say_state()

    def _fail(self, record: ShuffleRecord, code: str, now: float) -> None:
        """Stop with ERR `code`; the cards stay in the input tray (the dealer reloads them after the fix)."""
        self._cancel_timers()
        if self._running is record:
            self._running = None
        record.outcome = code
        record.ended_at = now
        self.error = code
        text = ERROR_TEXTS.get(code, "UNKNOWN")
        self._queue_seq_message(lambda seq: Err(seq, code, text).encode(), now)

    def _abort(self, now: float) -> None:
        record = self._running
        if record is not None:
            self._cancel_timers()
            self._running = None
            record.outcome = "aborted"
            record.ended_at = now
        self._say_state()

    def _state_may_have_changed(self, before: str) -> None:
        if self.state != before:
            self._say_state()


class ShufflerSimulator(LineSimulator[ShufflerDevice]):
    """A `ShufflerDevice` served on a pty or TCP port; the dealer's actions use the port's clock."""

    device_class = ShufflerDevice

    # -- dealer ------------------------------------------------------------------------------------------
    def load(self, cards: int) -> bool:
        return self._act(lambda now: self.device.load(cards, now))

    def load_decks(self, decks: int) -> bool:
        return self.load(decks * CARDS_PER_DECK)

    def take_output(self) -> int:
        return self._act(self.device.take_output)

    def open_door(self) -> None:
        self._act(self.device.open_door)

    def close_door(self) -> None:
        self._act(self.device.close_door)

    def jam_next(self) -> None:
        self.device.jam_next()

    def motor_fault_next(self) -> None:
        self.device.motor_fault_next()

    def miscount_next(self, delta: int = -1) -> None:
        self.device.miscount_next(delta)

    @property
    def shuffles(self) -> list[ShuffleRecord]:
        return self.device.shuffles
