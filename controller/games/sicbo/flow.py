"""Sic bo on an automatic dice shaker and a camera: shaker and camera readings in, round events out.

The procedure (docs/games/sicbo.md): betting; "no more bets"; the dice are shaken under the dome (the lever
pushed three times); when they are still the camera reads them; the result. An unreadable, cocked or stacked
die, or a count other than three, is never guessed: the dice are shaken again.

    stage       what the flow waits for                    then
    ---------   ----------------------------------------   ------------------------------------------------
    idle        the betting window (or `close_betting`)    ask the shaker to SHAKE cycle `<round>.<n>`
    shaking     the shaker's AT_REST of that cycle         ask the camera to read the dice of that cycle
    reading     the camera's DiceRead of that cycle        readable: the result; refused: shake again, or
                                                           after `max_reshakes` re-shakes, ask for a pause
    supervisor  the supervisor (the table is paused)       `manual_dice`: the result, by hand; `void_round`;
                                                           `resume`: shake again, `max_reshakes` more tries

Data flow (one way, as for every device): the flow never touches the camera or the reader. It asks the
camera device for a reading with a `DeviceRequest(camera, DeviceCommand("read_dice", {"cycle_id": ...}))`;
the service's camera side (`drivers.dice.station`) grabs a still frame after the shaker said the dice are
still, keeps it in the camera's capture (PNG + sha256), runs the reader in a worker thread and delivers a
`DiceRead` reading (values or a refusal with its reason, the frame's file and sha256, the reader's evidence)
through `on_readings` like any device reading. The flow only matches the reading to the cycle it asked for.
A replay feeds the recorded `DiceRead` readings back (or re-reads the saved frames, each verified against
its sha256): the flow cannot tell the difference, so the round replays to the same result.

A reading is matched to its request by the shake cycle: an AT_REST or a DiceRead of any other cycle (late,
repeated, from before a pause) is rejected (`reading.rejected`), never used. Every DiceRead of the current
cycle is published as `dice.read` (refusals too: the audit sees why the dice were re-shaken).

Asking for a supervisor. After `max_reshakes` refused readings the flow puts a `PauseRequest` in its output
(`FlowOutput.request_pause`): the runtime pauses the table as it would for a device fault, with the reason
("dice unreadable after 3 re-shakes: ..."). `manual_dice` (a supervisor's command, in
`commands_while_paused`) is the only thing the flow takes then besides the runtime's resume and void: the
three values, recorded with the supervisor's identity and the frame the decision was made on; the runtime
lifts the pause once it is accepted.

Device trouble is the runtime's: a shaker fault (motor, dome, sensor, lamp, lost link) or a camera fault (no
frame, frozen, covered, too dark) pauses the table with the device's reason; the round has started with the
first shake, so it stays paused until a supervisor resumes or voids it. On resume the dice are shaken again
(a new cycle): whatever was at rest during the interruption may have been touched, and a reading of it that
was held meanwhile belongs to the old cycle and is rejected. A shaker still busy with the old cycle answers
that SHAKE with its state only; its AT_REST of the old cycle then says it is free, and the SHAKE is sent
again. The shaker may also stay silent (a SHAKE it could not start is answered with its state only): no
AT_REST within `shake_timeout_seconds` is a new shake, and after `max_silent_shakes` of those in a row the
flow asks for a pause. A camera that does not answer within
`read_timeout_seconds` counts as a refused reading.

The flow is pure (time is passed in) and its state is a typed record (`SicBoRecord`).
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from controller.command_base import Command
from controller.events import iso_ms
from controller.flow import DeviceRequest, FlowOutput, FlowRecord, GameFlow, Handler, InputRejected, Phase
from controller.games.sicbo.events import ShakeReading, SicBoResult
from controller.lifecycle import Move, Refused
from controller.stages import StageTable
from drivers.readings import DiceAtRest, DiceRead, Reading
from drivers.session import DeviceCommand

DICE = 3
SMALL = range(4, 11)
BIG = range(11, 18)

#: the round book's timers of this game
SHAKE = "shake"
READ = "read"


class Stage(StrEnum):
    """Where a round is in its shake (the module docstring's table; the record's and public `stage`)."""

    IDLE = "idle"  # betting, or between rounds
    SHAKING = "shaking"  # the shaker was asked to SHAKE; its AT_REST is awaited
    READING = "reading"  # the camera was asked to read the dice at rest
    SUPERVISOR = "supervisor"  # refused readings exhausted the re-shakes: the table is paused


#: a refused reading (or the camera's silence) shakes again; a resume shakes again whatever was at rest; the
#: round's end (its result, or a void) goes back to idle from any stage
STAGES = StageTable(
    "sicbo",
    Stage.IDLE,
    [
        (Stage.IDLE, Stage.SHAKING, Stage.READING, Stage.SHAKING),
        (Stage.READING, Stage.SUPERVISOR, Stage.SHAKING),
    ],
    ending=(Stage.SHAKING, Stage.READING, Stage.SUPERVISOR),
)


def dice_facts(values: list[int] | tuple[int, ...]) -> dict[str, Any]:
    """What the rules engine settles on, from three die values (any order)."""
    if len(values) != DICE or not all(isinstance(v, int) and 1 <= v <= 6 for v in values):
        raise ValueError(f"sic bo needs three die values 1-6, not {list(values)}")
    dice = sorted(values)
    total = sum(dice)
    counts = Counter(dice)
    value, most = counts.most_common(1)[0]
    triple = value if most == 3 else None
    return {
        "dice": dice,
        "total": total,
        "size": None if triple is not None else ("small" if total in SMALL else "big"),
        "parity": "odd" if total % 2 else "even",
        "triple": triple,
        "double": value if most >= 2 else None,
    }


class SicBoSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    shaker_device: str = "shaker"
    camera_device: str = "camera"
    betting_seconds: float = Field(15.0, gt=0, description="the betting window of each round")
    round_gap_seconds: float = Field(3.0, ge=0, description="from a round's end to the next one's opening")
    pushes: int = Field(3, ge=1, le=9, description="lever pushes per shake (seed: three)")
    max_reshakes: int = Field(
        3, ge=0, le=20, description="re-shakes after refused readings before the round waits for a supervisor"
    )
    shake_timeout_seconds: float = Field(
        20.0, gt=0, description="no AT_REST this long after SHAKE: the shaker is asked again"
    )
    max_silent_shakes: int = Field(
        2, ge=1, le=10, description="shakes in a row left unanswered before the round waits for a supervisor"
    )
    read_timeout_seconds: float = Field(
        10.0, gt=0, description="no reading this long after asking the camera: counts as a refused reading"
    )


class ManualDice(Command):
    """A supervisor enters the three dice by hand, after the reader refused them `max_reshakes` times (the
    table is paused). Recorded with the supervisor's identity and the frame the decision was made on."""

    dice: list[int] = Field(min_length=DICE, max_length=DICE, description="the three values, any order")
    round_id: str | None = Field(
        None, max_length=64, description="if given, must be the current round (guards against a stale click)"
    )

    @field_validator("dice")
    @classmethod
    def _faces(cls, dice: list[int]) -> list[int]:
        if not all(1 <= value <= 6 for value in dice):
            raise ValueError("each die shows 1 to 6")
        return dice


class LastRead(BaseModel):
    """The latest reading of the round's dice (the panel shows it; a manual decision points at its frame)."""

    model_config = ConfigDict(extra="forbid")

    cycle_id: str
    values: list[int] | None
    reason: str = ""
    frame: str = ""
    sha256: str = ""
    dice: list[dict[str, Any]] = []


class SicBoRecord(FlowRecord):
    stage: Stage = Stage.IDLE
    cycle_id: str | None = None
    shakes: int = 0
    refusals: int = 0
    refusals_allowed: int = 0
    silent_shakes: int = 0
    at_rest_raw: str = ""
    last_read: LastRead | None = None
    last_result: dict[str, Any] | None = None


class SicBoFlow(GameFlow):
    game = "sicbo"
    result_model = SicBoResult
    record_model: ClassVar[type[FlowRecord]] = SicBoRecord
    commands_while_paused: ClassVar[frozenset[type[Command]]] = frozenset({ManualDice})
    close_betting_input_reason: ClassVar[str] = "dealer"
    settings: SicBoSettings

    def __init__(self, table_id: str, settings: SicBoSettings) -> None:
        super().__init__(table_id, settings)
        self.prompt = "Waiting for the next round"
        self.stage = Stage.IDLE
        # the shake cycle the round waits for (AT_REST, then the camera's reading), `<round>.<shake>`
        self.cycle_id: str | None = None
        self.shakes = 0  # shake cycles asked for in this round (the result reports `shakes - 1` re-shakes)
        self.refusals = 0  # readings refused in this round
        self.refusals_allowed = 0  # max_reshakes, plus max_reshakes more after each supervisor's resume
        self.silent_shakes = 0  # shakes in a row the shaker did not report at rest in time
        self.at_rest_raw = ""
        self.last_read: LastRead | None = None
        self.last_result: dict[str, Any] | None = None  # the last round's facts, for the panel

    def _to(self, stage: Stage) -> None:
        """Move to `stage`: a move the stage table does not have raises StageError."""
        self.stage = STAGES.move(self.stage, stage)

    # -- the round -----------------------------------------------------------------------------------------

    def next_round_due(self, now: float, out: FlowOutput) -> None:
        self.rounds.open(now, out, betting_seconds=self.settings.betting_seconds, with_shoe=False)
        self.refusals_allowed = self.settings.max_reshakes
        self.prompt = "Place your bets"

    def betting_closed(self, now: float, out: FlowOutput, reason: str) -> None:
        # the round starts with the first shake: from now a fault pauses it instead of voiding it
        self.rounds.start_play()
        self._shake(now, out, "No more bets: shaking the dice")

    def round_over(self, now: float, out: FlowOutput) -> None:
        self._to(Stage.IDLE)
        self.cycle_id = None
        self.shakes = self.refusals = self.refusals_allowed = self.silent_shakes = 0
        self.at_rest_raw = ""
        # `last_read` stays: the panel shows the frame of the last result until the next round reads

    def round_voided(self, now: float, out: FlowOutput) -> None:
        self.prompt = "Round voided: bets are refunded"

    def on_timer(self, name: str, now: float, out: FlowOutput) -> None:
        if name == SHAKE and self.stage == Stage.SHAKING:
            self._shaker_silent(now, out)
        elif name == READ and self.stage == Stage.READING:
            timeout = self.settings.read_timeout_seconds
            self._refused(now, out, f"the camera gave no reading within {timeout:g} s")
        else:
            super().on_timer(name, now, out)

    def on_resume(self, now: float) -> FlowOutput:
        out = FlowOutput()
        if self.stage == Stage.SUPERVISOR:
            # the supervisor looked at the dice and wants another try: as many re-shakes again
            self.refusals_allowed = self.refusals + self.settings.max_reshakes
            self._shake(now, out, "Resumed: shaking the dice again")
        elif self.stage in (Stage.SHAKING, Stage.READING):
            # what was at rest during the interruption may have been touched: never read it
            self.silent_shakes = 0
            self._shake(now, out, "Resumed: shaking the dice again")
        return out

    # -- readings ------------------------------------------------------------------------------------------

    def on_reading(self, reading: Reading, now: float) -> FlowOutput:
        # Device health (online, offline, faults) belongs to the runtime: it pauses the table.
        out = FlowOutput()
        if isinstance(reading, DiceAtRest) and reading.device == self.settings.shaker_device:
            self._on_at_rest(reading, now, out)
        elif isinstance(reading, DiceRead) and reading.device == self.settings.camera_device:
            self._on_dice_read(reading, now, out)
        return out

    def _on_at_rest(self, reading: DiceAtRest, now: float, out: FlowOutput) -> None:
        if self.stage != Stage.SHAKING or reading.cycle_id != self.cycle_id:
            self._reject(
                out, now, reading, f"dice at rest in cycle {reading.cycle_id}: {self._waiting_for()}"
            )
            if self.stage == Stage.SHAKING:
                # The shaker finished an older cycle (e.g. one it was still shaking when a resume asked for a
                # new one): our SHAKE came while it was busy and was answered with its state only. It is at
                # rest now, so it can take ours: ask again at once instead of waiting out the shake timeout.
                self._ask_shaker(now, out)
            return
        self.rounds.cancel_timer(SHAKE)
        self.silent_shakes = 0
        self.at_rest_raw = reading.raw
        self._to(Stage.READING)
        self.prompt = "Reading the dice"
        command = DeviceCommand("read_dice", {"cycle_id": reading.cycle_id, "dice": DICE})
        out.requests.append(DeviceRequest(self.settings.camera_device, command))
        self.rounds.set_timer(READ, now + self.settings.read_timeout_seconds)

    def _on_dice_read(self, reading: DiceRead, now: float, out: FlowOutput) -> None:
        if self.stage != Stage.READING or reading.cycle_id != self.cycle_id:
            self._reject(out, now, reading, f"dice read in cycle {reading.cycle_id}: {self._waiting_for()}")
            return
        self.rounds.cancel_timer(READ)
        values = list(reading.values) if reading.values is not None else None
        refusal = reading.reason or "the reader refused the dice"
        if values is not None:
            refusal = _why_not_a_result(values, reading)
            if refusal:
                values = None
        self.last_read = LastRead(
            cycle_id=reading.cycle_id,
            values=values,
            reason="" if values is not None else refusal,
            frame=reading.frame,
            sha256=reading.sha256,
            dice=[dict(die) for die in reading.dice],
        )
        assert self.rounds.round_id is not None
        out.emit(
            "dice.read",
            ShakeReading(
                round_id=self.rounds.round_id,
                cycle_id=reading.cycle_id,
                attempt=self.shakes,
                values=values,
                reason=self.last_read.reason,
                frame=reading.frame,
                frame_sha256=reading.sha256,
                dice=self.last_read.dice,
            ),
            now,
        )
        if values is None:
            self._refused(now, out, refusal)
            return
        self._finish(now, out, values, source="camera", entered_by=None)

    def device_state(self, device: str, state: str, now: float) -> FlowOutput:
        out = FlowOutput()
        if device != self.settings.shaker_device or self.stage != Stage.READING or state == "AT_REST":
            return out
        # The dice came to rest and the camera is reading them: the shaker leaving AT_REST now (its dome
        # lifted, its lever pushed) means they may have been moved, and the frame may not show the rest.
        # Never read it: pause, and the resume shakes again (`on_resume`); the reading of this cycle, when it
        # comes, is for a cycle no longer waited for.
        self.prompt = "The dice were disturbed before they were read: call the supervisor"
        out.request_pause(
            f"the shaker reported {state} after the dice came to rest (cycle {self.cycle_id}) and before the "
            "camera read them: they may have been moved; close the dome, then resume (the dice are shaken "
            "again) or void the round",
            device=device,
        )
        return out

    # -- inputs --------------------------------------------------------------------------------------------

    def handlers(self) -> dict[type[Command], Handler]:
        return {ManualDice: self._manual_dice, **super().handlers()}

    def _manual_dice(self, command: ManualDice, now: float) -> FlowOutput:
        if self.stage != Stage.SUPERVISOR:
            raise InputRejected(
                "dice are entered by hand only when the round waits for a supervisor (the reader refused "
                f"them {self.settings.max_reshakes + 1} times); {self._waiting_for()}"
            )
        round_id = command.round_id
        if round_id is not None and round_id != self.rounds.round_id:
            raise InputRejected(f"round {round_id} is not the current round ({self.rounds.round_id})")
        out = FlowOutput()
        self._finish(now, out, list(command.dice), source="manual", entered_by=command.by)
        return out

    # -- internals -----------------------------------------------------------------------------------------

    def _shake(self, now: float, out: FlowOutput, prompt: str) -> None:
        self.shakes += 1
        self.cycle_id = f"{self.rounds.rounds_opened}.{self.shakes}"
        self._to(Stage.SHAKING)
        self.at_rest_raw = ""
        self.prompt = prompt
        self.rounds.cancel_timer(READ)
        self._ask_shaker(now, out)

    def _ask_shaker(self, now: float, out: FlowOutput) -> None:
        command = DeviceCommand("shake", {"cycle_id": self.cycle_id, "pushes": self.settings.pushes})
        out.requests.append(DeviceRequest(self.settings.shaker_device, command))
        self.rounds.set_timer(SHAKE, now + self.settings.shake_timeout_seconds)

    def _shaker_silent(self, now: float, out: FlowOutput) -> None:
        self.silent_shakes += 1
        timeout = self.settings.shake_timeout_seconds
        if self.silent_shakes < self.settings.max_silent_shakes:
            self._shake(now, out, "The shaker did not answer: shaking again")
            return
        self.prompt = "The shaker does not report the dice at rest: call the supervisor"
        out.request_pause(
            f"the shaker did not report the dice at rest within {timeout:g} s of SHAKE "
            f"({self.silent_shakes} times in a row, cycle {self.cycle_id}); check the shaker, then resume "
            "(the dice are shaken again) or void the round",
            device=self.settings.shaker_device,
        )

    def _refused(self, now: float, out: FlowOutput, reason: str) -> None:
        if self.refusals < self.refusals_allowed:
            self.refusals += 1
            self._shake(now, out, f"Dice not readable ({reason}): shaking again")
            return
        self._to(Stage.SUPERVISOR)
        self.rounds.cancel_timer(READ)
        self.prompt = "Dice not readable: the supervisor enters them or voids the round"
        out.request_pause(
            f"dice unreadable after {self.refusals} re-shake(s): {reason}; enter the dice by hand "
            "(manual_dice) or void the round",
            device=self.settings.camera_device,
        )

    def _finish(
        self, now: float, out: FlowOutput, values: list[int], *, source: str, entered_by: str | None
    ) -> None:
        try:
            self.rounds.check(Move.FINISH)
        except Refused as exc:
            raise InputRejected(str(exc)) from None
        assert self.rounds.round_id is not None and self.cycle_id is not None
        # the frame the result points at is this shake's only: a hand entry after a read that timed out has
        # none (the last reading kept is an earlier shake's, or an earlier round's)
        read = self.last_read
        if read is not None and read.cycle_id != self.cycle_id:
            read = None
        facts = dice_facts(values)
        result = SicBoResult(
            round_id=self.rounds.round_id,
            **facts,
            reshakes=self.shakes - 1,
            frame=read.frame if read is not None else "",
            frame_sha256=read.sha256 if read is not None else "",
            source=source,  # type: ignore[arg-type]
            entered_by=entered_by,
            cycle_id=self.cycle_id,
            dice_in_frame=values,
            raw=self.at_rest_raw,
        )
        self.last_result = {**facts, "round_id": self.rounds.round_id, "source": source}
        self.finish_round(now, out, result)
        self.prompt = f"Result: {' '.join(map(str, facts['dice']))} = {facts['total']}"

    def _waiting_for(self) -> str:
        if not self.rounds.in_round:
            return "no round waits for dice"
        if self.rounds.phase == Phase.BETTING_OPEN:
            return "betting is still open"
        if self.stage == Stage.SHAKING:
            return f"the round waits for the shaker's cycle {self.cycle_id}"
        if self.stage == Stage.READING:
            return f"the round waits for the camera's reading of cycle {self.cycle_id}"
        if self.stage == Stage.SUPERVISOR:
            return "the round waits for a supervisor"
        return "the round waits for its shake"

    # -- views ---------------------------------------------------------------------------------------------

    def public_state(self) -> dict[str, Any]:
        closes = self.rounds.betting_deadline
        read = self.last_read
        return {
            "game": self.game,
            "phase": self.rounds.phase.value,
            "round_id": self.rounds.round_id,
            "betting_closes_at": iso_ms(closes) if closes is not None else None,
            "stage": self.stage,
            "cycle_id": self.cycle_id,
            "shakes": self.shakes,
            "reshakes": self.shakes - 1 if self.shakes else 0,
            "refusals": self.refusals,
            "max_reshakes": self.settings.max_reshakes,
            "awaiting_supervisor": self.stage == Stage.SUPERVISOR,
            "camera": self.settings.camera_device,
            "last_read": None if read is None else read.model_dump(mode="json"),
            "last_result": self.last_result,
        }


def _why_not_a_result(values: list[int], reading: DiceRead) -> str:
    """Why a reading with values still cannot be a result ("" if it can): never a guess, never untraceable."""
    if len(values) != DICE:
        return f"{len(values)} dice read, {DICE} expected"
    if not all(isinstance(v, int) and 1 <= v <= 6 for v in values):
        return f"values {values} are not die faces"
    if not reading.frame or not reading.sha256:
        return "the frame was not kept: a result must point at the frame it was read from"
    return ""
