"""The table runtime: the pure core around a game flow.

It owns what every game shares — device health, pause / resume / void, the snapshot a late subscriber sees —
and feeds the flow. Like the flows it is pure: readings, ticks and validated commands come in with the time;
a `Step` (events to journal, device requests, what changed) comes out. The async service does the I/O.

Fault policy (docs/decisions.md):
- a device fault or link loss pauses the table;
- if the round had not started (no card dealt, no ball launched), it is voided at once and bets are refunded;
- a started round stays paused until a supervisor resumes it (it then continues) or voids it (refund);
- a resume is refused while any device is still offline or in fault;
- a fault the game itself finds in the procedure (`FlowOutput.request_pause`: Infinite Blackjack's wrong
  burn count, sic bo dice that stay unreadable) pauses the table the same way, `by: "system"`, with the
  game's reason.
Devices that have not yet come online since start-up do not pause anything: the table simply waits for them.

While the table is paused, readings from healthy devices are held (and announced as `reading.held`), then
applied in order on resume, at the resume's time: what a device reports is what physically happened (a card
re-scanned during the pause, a wheel that finished its spin), so dropping it would put the game out of step
with the table.
Readings from a device that is offline or in fault are rejected: its reader cannot be trusted then.
After a crash, a round that was in progress is paused ("controller restarted") until a supervisor resumes it.
A supervisor's void of a paused round also lifts the pause when every device is healthy (one action, not
two); a void the runtime made itself (a fault before the round started) keeps the table paused until a
supervisor resumes it.

A flow asks for a pause the same way a device fault causes one: its output carries a `PauseRequest`
(`FlowOutput.request_pause`, e.g. sic bo's dice unreadable after every re-shake) and the runtime pauses the
table with that reason, by "system", unless it is paused already. The flow keeps what it waits for in its own
state. While paused the runtime passes the flow only the commands it names in `commands_while_paused` (a
supervisor's decision that settles what the pause was for, e.g. `manual_dice`); one that the flow accepts
lifts the pause as a supervisor's void does (when every device is healthy).

Time: `next_deadline()` is when the core must be called (`on_tick`) even if nothing arrives; a pause
stops the clock of the round (on resume every running window is extended by the pause's length).

State: `export_state()` is a versioned, JSON-ready record (`TableRecord`) of the core and its flow, journaled
with every step; `restore_state()` applies one to a core freshly built from the configuration.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from controller.commands import (
    BUS_COMMANDS,
    Command,
    CommandError,
    DeviceAction,
    Pause,
    Resume,
    VoidRound,
    command_name,
)
from controller.events import (
    DeviceChanged,
    Event,
    PauseCause,
    RawRejected,
    ReadingHeld,
    RoundPaused,
    RoundResumed,
    encode_compact_sorted,
    iso_ms,
    make_event,
)
from controller.flow import DeviceRequest, FlowOutput, GameFlow, InputRejected
from controller.pause_reasons import device_pause_reason
from drivers import readings as reading_types
from drivers.readings import (
    CardSeen,
    DeviceFault,
    DeviceFaultCleared,
    DeviceOffline,
    DeviceOnline,
    DeviceStatus,
    Reading,
    reading_fields,
)
from drivers.session import DeviceCommand

log = logging.getLogger(__name__)

#: supervisor device actions -> the device command every session understands by that name
DEVICE_ACTIONS: dict[str, DeviceCommand] = {
    "power_on": DeviceCommand("power", {"on": True}),
    "power_off": DeviceCommand("power", {"on": False}),
    "self_test": DeviceCommand("self_test"),
    "status": DeviceCommand("status"),
    "reset": DeviceCommand("reset"),
}

#: deadlines handled before one reading at most (each opens or closes something; a few are ever due at once)
_MAX_CATCH_UP = 8

#: why the table paused when the game flow failed (a bug), and what a command it failed on is answered
INTERNAL_ERROR = "internal error in the game flow"
#: the key of a command's reply that says the flow failed on it: the step (the pause) is still journaled,
#: then the sender is answered with the error (`TableService.handle_command`)
FLOW_ERROR = "flow_error"

#: a pause holds at most this many readings (a wheel makes a few per minute; a shoe is locked while paused)
MAX_HELD_READINGS = 500

#: the version of `TableRecord`; bump it with a migration in `controller.table_state.MIGRATIONS`
#: 2: hand-entered cards kept with the round; 3: card games keep the shuffle their next round waits for
#: (`CardFlowRecord.shuffle`); 4: a pause keeps its cause, and a card game the card it holds out of procedure;
#: 5: Infinite Blackjack keeps the codes of the cards it burned this shoe
STATE_VERSION = 5


class StateMismatch(ValueError):
    """A journaled table state that does not fit the table as configured; one line for the operator."""


class PauseRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str
    by: str
    device: str | None
    since: float
    #: `controller.events.PauseCause`
    cause: str


class HeldRecord(BaseModel):
    """A reading held during a pause: its class name (in `drivers.readings`) and its fields."""

    model_config = ConfigDict(extra="forbid")

    type: str
    fields: dict[str, Any]


class TableRecord(BaseModel):
    """Everything the core keeps between steps, as journaled (device health is not kept: links are
    re-established after a restart)."""

    model_config = ConfigDict(extra="forbid")

    state_version: int
    table_id: str
    game: str
    pause: PauseRecord | None = None
    held: list[HeldRecord] = []
    rejected: dict[str, int] = {}
    flow: dict[str, Any]


def held_record(reading: Reading) -> HeldRecord:
    return HeldRecord(type=type(reading).__name__, fields=reading_fields(reading))


def reading_from_record(record: HeldRecord) -> Reading:
    cls = getattr(reading_types, record.type, None)
    if not (isinstance(cls, type) and issubclass(cls, Reading)):
        raise ValueError(f"held reading of unknown type {record.type!r}")
    reading: Reading = TypeAdapter(cls).validate_python(record.fields)
    return reading


@dataclass(slots=True)
class DeviceHealth:
    status: str = "offline"  # online | offline | fault
    detail: str = "not connected yet"
    code: str | None = None
    since: float = 0.0
    seen_online: bool = False  # has it been online since start-up?
    state: str | None = None  # last informational state (e.g. shoe READY)

    def public(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
            "since": iso_ms(self.since) if self.since else None,
            "state": self.state,
        }


@dataclass(slots=True)
class Step:
    events: list[Event] = field(default_factory=list)
    requests: list[DeviceRequest] = field(default_factory=list)
    devices_changed: set[str] = field(default_factory=set)

    def add(self, out: FlowOutput) -> None:
        self.events += out.events
        self.requests += out.requests

    def merge(self, other: Step) -> Step:
        self.events += other.events
        self.requests += other.requests
        self.devices_changed |= other.devices_changed
        return self


class TableCore:
    def __init__(self, *, table_id: str, game: str, flow: GameFlow, devices: list[str]) -> None:
        self.table_id = table_id
        self.game = game
        self.flow = flow
        self.devices: dict[str, DeviceHealth] = {name: DeviceHealth() for name in devices}
        self.pause: PauseRecord | None = None
        self.held: list[Reading] = []
        self.rejected: dict[str, int] = {}
        #: the gate last asked of the game's gate device (True: open); None: not asked since its link came up
        self._gate_asked: bool | None = None
        #: the state record's encoded fields but the flow's (`_state_head`), and what they were encoded from
        self._head: bytes = b""
        self._head_key: tuple[tuple[str, int], ...] | None = None

    # -- state -----------------------------------------------------------------------------------------
    def export_state(self) -> dict[str, Any]:
        """The versioned record journaled with every step (secrets included: the state row only)."""
        record: dict[str, Any] = json.loads(self.export_state_json())
        return record

    def export_state_json(self) -> bytes:
        """`export_state()` as the UTF-8 JSON the journal stores (what `controller.table_state.decode_state`
        reads back), built without the dict round trip: the flow's record is encoded by pydantic directly.
        Journaled with every step, so it is on the path of every event."""
        return (
            b'{"flow":'
            + self.flow.export_record().model_dump_json().encode("utf-8")
            + b","
            + self._state_head()
        )

    def _state_head(self) -> bytes:
        """The record's other fields, encoded (sorted: after `"flow"`) without their opening brace. While
        nothing is held, the table is not paused and the rejection counts stay, they are the same bytes from
        step to step: kept, not encoded again."""
        key = None if self.held or self.pause is not None else tuple(self.rejected.items())
        if key is not None and key == self._head_key:
            return self._head
        head = {
            "game": self.game,
            "held": [held_record(reading).model_dump(mode="json") for reading in self.held],
            "pause": None if self.pause is None else self.pause.model_dump(mode="json"),
            "rejected": self.rejected,
            "state_version": STATE_VERSION,
            "table_id": self.table_id,
        }
        self._head = encode_compact_sorted(head).encode("utf-8")[1:]
        self._head_key = key
        return self._head

    def restore_state(self, data: dict[str, Any]) -> None:
        """Apply a journaled record (already migrated to STATE_VERSION). Raises StateMismatch, changing
        nothing, when it does not fit this table as configured."""
        try:
            record = TableRecord.model_validate(data)
        except ValidationError as exc:
            raise StateMismatch(f"the table state is not a valid record: {_first_error(exc)}") from None
        if record.game != self.game:
            raise StateMismatch(
                f"the table state is of a {record.game} table, but the config says {self.game}"
            )
        if record.table_id != self.table_id:
            raise StateMismatch(f"the table state is of table {record.table_id}, not {self.table_id}")
        conflict = self.flow.restore_conflict(record.flow)
        if conflict is not None:
            raise StateMismatch(conflict)
        try:
            held = [reading_from_record(item) for item in record.held]
            self.flow.restore_state(record.flow)
        except (ValidationError, ValueError) as exc:
            detail = _first_error(exc) if isinstance(exc, ValidationError) else str(exc)
            raise StateMismatch(f"the {self.game} state does not fit this version: {detail}") from None
        self.pause = record.pause
        self.held = held
        self.rejected = dict(record.rejected)

    # -- queries ---------------------------------------------------------------------------------------
    @property
    def paused(self) -> bool:
        return self.pause is not None

    def next_deadline(self) -> float | None:
        """When `on_tick` must be called even if nothing arrives; None while the table waits for
        something else (paused, devices not ready, or the game waiting for a device)."""
        if self.paused or not self.devices_ready:
            return None
        return self.flow.next_deadline()

    @property
    def devices_ready(self) -> bool:
        return all(d.status == "online" for d in self.devices.values())

    def state(self) -> dict[str, Any]:
        """The retained snapshot: everything a late subscriber needs. No secrets (flows guarantee theirs)."""
        rounds = self.flow.rounds
        waiting_for = [name for name, d in self.devices.items() if not d.seen_online]
        state: dict[str, Any] = {
            "table_id": self.table_id,
            "game": self.game,
            "phase": "paused" if self.paused else rounds.phase.value,
            "round_phase": rounds.phase.value,
            "round_id": rounds.round_id,
            "round_number_in_shoe": rounds.number_in_shoe if rounds.in_round else None,
            "paused": self.paused,
            "pause": None
            if self.pause is None
            else {
                "reason": self.pause.reason,
                "by": self.pause.by,
                "device": self.pause.device,
                "since": iso_ms(self.pause.since),
                "cause": self.pause.cause,
            },
            "waiting_for_devices": waiting_for,
            "held_readings": len(self.held),
            # what is held, so that a supervisor sees it before resuming (the count alone said nothing)
            "held": [self._public_held(reading) for reading in self.held],
            "prompt": self._prompt(),
            "devices": {name: d.public() for name, d in self.devices.items()},
            "game_state": self.flow.public_state(),
            "rejected": dict(self.rejected),
        }
        pending = getattr(self.flow, "manual_card_pending", None)
        waiting = pending() if pending is not None else None
        if waiting is not None:
            # only while one waits: a table that never asks a supervisor keeps its state exactly as it was
            state["manual_card_pending"] = waiting
        return state

    def _prompt(self) -> str:
        if self.pause is not None:
            return f"PAUSED: {self.pause.reason} — call the supervisor"
        waiting = [name for name, d in self.devices.items() if d.status != "online"]
        if waiting:
            return f"Waiting for {', '.join(waiting)}"
        return self.flow.prompt

    # -- inputs ----------------------------------------------------------------------------------------
    def on_reading(self, reading: Reading, now: float) -> Step:
        step = Step()
        health = self.devices.get(reading.device)
        if health is None:
            self._reject(
                step, reading, f"reading from unconfigured device {reading.device!r}", now, "unknown device"
            )
            return step
        if isinstance(
            reading, DeviceOnline | DeviceOffline | DeviceFault | DeviceFaultCleared | DeviceStatus
        ):
            self._on_health(step, health, reading, now)
            self._settle_gate(step)
            return step
        if health.status != "online":
            # the link is flaky but bytes still came: readings from a device we consider down are not trusted
            self._reject(
                step, reading, f"device {reading.device} is {health.status}", now, "device not online"
            )
            return step
        if not self.paused:
            self._catch_up(step, now)
        if self.paused:
            self._hold(step, reading, now)
        else:
            self._apply_reading(step, reading, now)
        self._settle_gate(step)
        return step

    def _catch_up(self, step: Step, now: float) -> None:
        """Do what the table's state and clock require by `now` before a reading is handed to the game.

        A deadline may be due that nobody has handled yet: the device that just came online in this very
        message (its first line is a card) made the table ready, and the round it was waiting to open must
        open before the card is dealt into it. The live service's deadline task would handle it a moment
        later — after the card, rejected as "no round is open yet", and every later card one place off."""
        for _ in range(_MAX_CATCH_UP):
            due = self.next_deadline()
            if due is None or due > now or self.paused:
                return
            self._tick(step, now)

    def _take(self, step: Step, out: FlowOutput, now: float) -> None:
        """Add a flow's output to the step, and pause the table if the flow asked for it."""
        step.add(out)
        request = out.pause
        if request is not None and not self.paused:
            cause: PauseCause = "out_of_procedure" if request.cause == "out_of_procedure" else "game"
            if cause == "out_of_procedure":
                # counted as what it is: a reading the table could not take, held for a decision
                self.rejected["out of procedure"] = self.rejected.get("out of procedure", 0) + 1
            self._pause(
                step,
                now,
                request.reason,
                by="system",
                device=request.device,
                cause=cause,
                card=request.card,
                raw=request.raw,
            )

    def _apply_reading(self, step: Step, reading: Reading, now: float) -> None:
        try:
            self._take(step, self.flow.on_reading(reading, now), now)
        except Exception:  # a bug must not stop the table silently nor crash it: pause and tell
            # the reading's type only: its content may be a secret (a face-down card)
            log.exception("game flow failed on a %s from %s", type(reading).__name__, reading.device)
            self._reject(step, reading, INTERNAL_ERROR, now, "flow error")
            self._pause_on_bug(step, now)

    def on_tick(self, now: float) -> Step:
        step = Step()
        if self.paused or not self.devices_ready:
            return step
        self._tick(step, now)
        self._settle_gate(step)
        return step

    def _tick(self, step: Step, now: float) -> None:
        try:
            self._take(step, self.flow.on_tick(now), now)
        except Exception:
            log.exception("game flow failed on tick")
            self._pause_on_bug(step, now)

    def on_command(self, command: Command, now: float) -> tuple[Step, dict[str, Any]]:
        """Apply a validated table command. Raises CommandError (nothing changed) if it does not apply."""
        step = Step()
        by = command.by
        if isinstance(command, Pause):
            if self.paused:
                raise CommandError("the table is already paused")
            self._pause(step, now, command.reason, by=by, device=None, cause="supervisor")
        elif isinstance(command, Resume):
            if not self.paused:
                raise CommandError("the table is not paused")
            bad = self._unhealthy_devices()
            if bad:
                raise CommandError(f"cannot resume: {bad}")
            self._lift_pause(step, now, by, self.flow.rounds.round_id)
        elif isinstance(command, DeviceAction):
            if command.device not in self.devices:
                raise CommandError(f"no device {command.device!r}; this table has: {', '.join(self.devices)}")
            step.requests.append(DeviceRequest(command.device, DEVICE_ACTIONS[command.action]))
        elif isinstance(command, VoidRound):
            round_id = self.flow.rounds.round_id
            if round_id is None:
                raise CommandError("no round in progress")
            if command.round_id is not None and command.round_id != round_id:
                raise CommandError(f"round {command.round_id} is not the current round ({round_id})")
            step.add(self.flow.void_round(now, command.reason, by))
            if self.paused:
                # what the pause held (a card out of procedure) is settled by this decision, now
                self._take(step, self.flow.settle_pause(now, by, "void"), now)
            if self.paused and not self._unhealthy_devices():
                # the supervisor's void ends the interruption: one action, not void then resume
                self._lift_pause(step, now, by, round_id)
        else:
            # everything else is the game's input (manual_card, new_shoe, close_betting, a player's
            # decision...): the flow says whether it applies now
            name = command_name(command)
            if name in BUS_COMMANDS:
                raise CommandError(f"{type(command).__name__} is not a table command")
            settles_pause = self.paused and type(command) in self.flow.commands_while_paused
            if self.paused and not settles_pause:
                raise CommandError("the table is paused")
            # `command.by` is the authenticated sender: a flow records it (e.g. who entered the dice by hand)
            round_id = self.flow.rounds.round_id
            try:
                self._take(step, self.flow.on_command(command, now), now)
            except InputRejected as exc:
                raise CommandError(str(exc)) from None
            except Exception:
                # a bug may have changed the game halfway: the table must not play on as if nothing happened.
                # Paused (as for a reading), and the command answered with the error once that is journaled
                log.exception("game flow failed on the command %s", name)
                if not self.paused:
                    self._pause_on_bug(step, now)
                self._settle_gate(step)
                return step, {"state": self.state(), FLOW_ERROR: f"{INTERNAL_ERROR}: the table is paused"}
            if settles_pause and self.paused and not self._unhealthy_devices():
                # the supervisor's decision ends the interruption, as a void does: one action, not two
                self._lift_pause(step, now, by, round_id)
        self._settle_gate(step)
        return step, {"state": self.state()}

    def recovered(self, now: float) -> Step:
        """Called once after restoring a snapshot: a round in progress waits for a supervisor."""
        step = Step()
        # links are re-established from scratch after a restart
        for health in self.devices.values():
            health.status, health.detail, health.code, health.since = (
                "offline",
                "controller restarted",
                None,
                now,
            )
            health.seen_online = False
        if self.flow.rounds.in_round and not self.paused:
            self._pause(
                step, now, "controller restarted mid-round", by="system", device=None, cause="restart"
            )
        self._gate_asked = None
        self._settle_gate(step)
        return step

    # -- internals -------------------------------------------------------------------------------------
    def _unhealthy_devices(self) -> str:
        bad = {n: d.status for n, d in self.devices.items() if d.status != "online"}
        return ", ".join(f"device {n} is {s}" for n, s in bad.items())

    def _lift_pause(self, step: Step, now: float, by: str, round_id: str | None) -> None:
        assert self.pause is not None
        paused_for = max(0.0, now - self.pause.since)
        # the supervisor's decision on what the pause held (no-op if a void already settled it)
        self._take(step, self.flow.settle_pause(now, by, "resume"), now)
        self.pause = None
        # the round's clock stood still while paused: its betting or decision window is not eaten by it
        self.flow.shift_deadlines(paused_for)
        step.events.append(make_event("round.resumed", RoundResumed(round_id=round_id, by=by), now))
        self._take(step, self.flow.on_resume(now), now)
        held, self.held = self.held, []
        for reading in held:
            if self.paused:  # a held reading may itself trip a pause (out of procedure): keep the rest held
                self.held.append(reading)
                continue
            # taken now, when the table takes it, not when the device reported it: a window it opens (the
            # players' decisions after the dealer's card, the camera's read after AT_REST) starts now, and a
            # pause it trips stands from now (the round's clock stood still until now already)
            self._apply_reading(step, reading, now)

    def _on_health(self, step: Step, health: DeviceHealth, reading: Reading, now: float) -> None:
        name = reading.device
        if isinstance(reading, DeviceStatus):
            health.state = reading.state
            step.devices_changed.add(name)
            if not self.paused:
                # the game may have a rule for it (the dice disturbed before they are read); paused, the
                # resume decides what comes next anyway
                try:
                    self._take(step, self.flow.device_state(name, reading.state, now), now)
                except Exception:  # a bug must not stop the table silently nor crash it: pause and tell
                    log.exception("game flow failed on %s's state %s", name, reading.state)
                    self._pause_on_bug(step, now)
            return
        if isinstance(reading, DeviceOnline):
            # the device is asked again for the state the game keeps it in (the shoe's gate): what was asked
            # before its link fell may never have reached it
            self._gate_asked = None
            step.add(self.flow.device_online(name, now, paused=self.paused))
            if health.status == "fault":
                # the link came back but the fault was not reported cleared: stay in fault
                health.seen_online = True
                return
            new_status, detail, code = "online", reading.detail or "online", None
            health.seen_online = True
        elif isinstance(reading, DeviceFaultCleared):
            new_status, detail, code = "online", reading.detail or "fault cleared", None
        elif isinstance(reading, DeviceOffline):
            new_status, detail, code = "offline", reading.reason, None
        else:
            assert isinstance(reading, DeviceFault)
            new_status, detail, code = "fault", reading.reason, reading.code
        if (health.status, health.detail, health.code) == (new_status, detail, code):
            return
        was_seen = health.seen_online
        health.status, health.detail, health.code, health.since = new_status, detail, code, now
        step.devices_changed.add(name)
        step.events.append(
            make_event(
                f"device.{new_status}",
                DeviceChanged(device=name, status=new_status, detail=detail, code=code),  # type: ignore[arg-type]
                now,
                subject=self.flow.rounds.round_id,
            )
        )
        if new_status != "online" and was_seen and not self.paused:
            what = device_pause_reason(name, new_status, detail)
            self._pause(step, now, what, by="device", device=name, cause="device")

    def _pause(
        self,
        step: Step,
        now: float,
        reason: str,
        *,
        by: str,
        device: str | None,
        cause: PauseCause,
        card: str | None = None,
        raw: str = "",
    ) -> None:
        rounds = self.flow.rounds
        self.pause = PauseRecord(reason=reason, by=by, device=device, since=now, cause=cause)
        paused = RoundPaused(
            round_id=rounds.round_id, reason=reason, device=device, by=by, cause=cause, card=card, raw=raw
        )
        step.events.append(make_event("round.paused", paused, now))
        step.add(self.flow.on_pause(now))
        # A card out of procedure is the supervisor's to decide (set it aside and go on, or void): the round
        # it came out in is not cancelled behind the supervisor's back.
        if (
            rounds.in_round
            and not rounds.started
            and by in ("device", "system")
            and cause != "out_of_procedure"
        ):
            # the fault policy: a round that had not started is cancelled and every bet refunded
            step.add(self.flow.void_round(now, f"{reason} before the round started", "system"))

    def _settle_gate(self, step: Step) -> None:
        """Ask the gate device (the shoe) once for the gate as the game wants it at the end of this step.

        The flows ask for the gate where their procedure changes it, and a step may go through several of
        those: a resume unlocks for the card the round waits for, then the card held by the pause ends the
        round. Written as asked, that is `UNLOCK` then `LOCK`, and the shoe is open between the two lines: a
        dealer's card can come out of procedure in that instant. So the requests of one step collapse into
        the last state, put where the last of them was; and a change no flow asked for (a round's last card:
        no card is expected until the next round's betting closes) is asked too. Nothing is written to a
        device that is not online unless a flow asked (it is asked again when it comes online)."""
        gate = self.flow.gate(self.paused)
        if gate is None:
            return
        device, wanted = gate
        asked = [
            n
            for n, request in enumerate(step.requests)
            if request.device == device and request.command.name in ("lock", "unlock")
        ]
        if not asked:
            health = self.devices.get(device)
            if self._gate_asked == wanted or health is None or health.status != "online":
                return
        request = DeviceRequest(device, DeviceCommand("unlock" if wanted else "lock"))
        if asked:
            keep = [r for n, r in enumerate(step.requests) if n not in asked[:-1]]
            keep[asked[-1] - (len(asked) - 1)] = request
            step.requests = keep
        else:
            step.requests.append(request)
        self._gate_asked = wanted

    def _pause_on_bug(self, step: Step, now: float) -> None:
        reason = INTERNAL_ERROR
        self._pause(step, now, reason, by="system", device=None, cause="internal_error")

    def _hold(self, step: Step, reading: Reading, now: float) -> None:
        if len(self.held) >= MAX_HELD_READINGS:
            reason = f"table paused and {MAX_HELD_READINGS} readings already held"
            self._reject(step, reading, reason, now, "hold limit")
            return
        self.held.append(reading)
        held = ReadingHeld(
            device=reading.device,
            reading=type(reading).__name__,
            raw=self._public_raw(reading),
            held=len(self.held),
        )
        step.events.append(make_event("reading.held", held, now, subject=self.flow.rounds.round_id))

    def _public_held(self, reading: Reading) -> dict[str, Any]:
        """A held reading as the retained state tells it, by the rule of `reading.held`: one that may be a
        face-down card names no card and carries no device text."""
        secret = self.flow.reading_is_secret(reading)
        card = reading.code if isinstance(reading, CardSeen) and not secret else None
        return {
            "device": reading.device,
            "reading": type(reading).__name__,
            "card": card,
            "raw": self._public_raw(reading),
        }

    def _public_raw(self, reading: Reading) -> str:
        """The device text an event may carry: none while the game expects a face-down card (it names it)."""
        return "" if self.flow.reading_is_secret(reading) else reading.raw

    def _reject(self, step: Step, reading: Reading, reason: str, now: float, kind: str) -> None:
        """Never silently: counted by kind (in the retained state) and published with the raw device text."""
        self.rejected[kind] = self.rejected.get(kind, 0) + 1
        step.events.append(
            make_event(
                "reading.rejected",
                RawRejected(device=reading.device, reason=reason, raw=self._public_raw(reading)),
                now,
                subject=self.flow.rounds.round_id,
            )
        )


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])
