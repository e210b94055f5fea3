"""What every game flow is: a pure state machine.

Readings and inputs go in, with the time; events, device requests and the dealer's prompt come out.
No I/O and no clock reads inside a flow: that is what makes replay and crash recovery exact.

The round lifecycle every game shares (opening, the betting deadline, closing betting, start of play,
result, close, void, the gap before the next round, and the refusals) is `controller.lifecycle.RoundBook`'s;
a game says only what its procedure needs.

Time is deadline-driven, as in sans-IO protocol libraries (aioquic's `get_timer()`): `next_deadline()` says
when the flow must be called even if nothing arrives, and `on_tick(now)` handles whatever is due by `now`.

A flow that cannot go on without a supervisor says so in its output (`FlowOutput.request_pause(reason)`):
the runtime pauses the table as it does for a device fault. See `controller.runtime`.

State is explicit: each flow names its state in a typed record (`record_model`, a `FlowRecord`) that
serialises to JSON. `export_state()` / `restore_state()` move the flow's attributes to and from that record;
everything else a flow holds comes from the configuration. Fields marked `secret` (a face-down card) are kept
in the record (the journal's state row) and nowhere else: a flow's `public_state()` never includes them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from controller.command_base import CloseBetting, Command
from controller.events import RawRejected, RoundResult
from controller.flow_output import DeviceRequest, FlowOutput, PauseRequest
from controller.lifecycle import BETTING, NEXT_ROUND, Move, Phase, Refused, RoundBook
from drivers.readings import Reading

__all__ = [
    "SECRET",
    "DeviceRequest",
    "FlowOutput",
    "FlowRecord",
    "GameFlow",
    "Handler",
    "InputRejected",
    "PauseRequest",
    "Phase",
    "RoundBook",
    "secret_fields",
]

#: what takes a command in a flow: a bound method of the flow, given the command (of the class it is
#: registered for in `GameFlow.handlers`) and the time
Handler = Callable[[Any, float], FlowOutput]

#: mark a record field secret: `hole_card: CardCode | None = Field(None, json_schema_extra=SECRET)`
SECRET: dict[str, Any] = {"secret": True}


class FlowRecord(BaseModel):
    """A flow's state, as journaled. Every field is a plain, typed value; none is derived."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)

    rounds: RoundBook
    prompt: str = ""


def secret_fields(model: type[BaseModel]) -> set[str]:
    return {
        name
        for name, info in model.model_fields.items()
        if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("secret")
    }


class InputRejected(ValueError):
    """An input or command that the flow cannot accept now (the reason is told to the sender)."""


class GameFlow(ABC):
    """A game's procedure. Subclasses live in `controller.games`, in each game's package."""

    game: ClassVar[str]
    #: the game's `round.result` data model
    result_model: ClassVar[type[RoundResult]]
    #: the typed record of everything this flow keeps between steps
    record_model: ClassVar[type[FlowRecord]]
    #: commands the runtime passes on while the table is paused: a supervisor's decision that settles what
    #: the flow paused for (`FlowOutput.request_pause`); once accepted the runtime lifts the pause
    commands_while_paused: ClassVar[frozenset[type[Command]]] = frozenset()
    #: attributes deliberately not in the record: each one safe to lose in a crash (the flow says why)
    ephemeral: ClassVar[frozenset[str]] = frozenset()
    #: attributes holding parts of the flow (a card game's shoe: `controller.games.card_source`): a part's
    #: own attributes are fields of the record, flat, as if they were the flow's
    parts: ClassVar[tuple[str, ...]] = ()

    def __init__(self, table_id: str, settings: Any) -> None:
        self.settings = settings
        self.rounds = RoundBook(
            table_id=table_id, game=self.game, gap_seconds=getattr(settings, "round_gap_seconds", 0.0)
        )
        self.prompt = ""

    # -- state ---------------------------------------------------------------------------------------------

    def export_state(self) -> dict[str, Any]:
        """The flow's state as a JSON-ready dict (secrets included: for the journal's state row only)."""
        return self.export_record().model_dump(mode="json")

    def export_record(self) -> FlowRecord:
        """The flow's state as its validated record (`export_state` is its JSON-ready dict). On the path of
        every event (the journal stores it with each step): each part's attributes are looked up once, not
        once per field of the record (`_holder`)."""
        owned = [vars(getattr(self, name)) for name in self.parts]
        values: dict[str, Any] = {}
        for field in self.record_model.model_fields:
            for kept in owned:
                if field in kept:
                    values[field] = kept[field]
                    break
            else:
                values[field] = getattr(self, field)
        return self.record_model.model_validate(values)

    def restore_state(self, data: dict[str, Any]) -> None:
        """Apply a journaled record to a flow freshly built from the configuration. Raises ValueError
        (pydantic's ValidationError) if the record does not fit this flow."""
        record = self.record_model.model_validate(data)
        gap_seconds = self.rounds.gap_seconds  # configuration, not state
        for name in self.record_model.model_fields:
            setattr(self._holder(name), name, getattr(record, name))
        self.rounds.gap_seconds = gap_seconds

    def _holder(self, field: str) -> object:
        """The part that keeps the record's `field` (`parts`), or the flow itself."""
        for name in self.parts:
            part = getattr(self, name)
            if field in vars(part):
                return part
        return self

    def restore_conflict(self, data: dict[str, Any]) -> str | None:
        """Why a record cannot be applied under the current configuration (e.g. the number of decks changed
        mid-shoe), or None. The service then refuses to start rather than guess."""
        return None

    # -- time ----------------------------------------------------------------------------------------------

    def next_deadline(self) -> float | None:
        """When the flow must be called (`on_tick`) even if nothing arrives; None: not until something is."""
        return self.rounds.next_deadline()

    def shift_deadlines(self, seconds: float) -> None:
        """The table was paused for `seconds`: running windows (betting, decisions) get that time back."""
        self.rounds.shift(seconds)

    def on_tick(self, now: float) -> FlowOutput:
        """Handle whatever is due by `now`. Not called while the table is paused. Calling it early, or
        more often than needed, changes nothing."""
        out = FlowOutput()
        for name in self.rounds.pop_due(now):
            self.on_timer(name, now, out)
        return out

    def on_timer(self, name: str, now: float, out: FlowOutput) -> None:
        if name == BETTING:
            self.close_betting(now, out, "timer")
        elif name == NEXT_ROUND:
            self.next_round_due(now, out)

    def next_round_due(self, now: float, out: FlowOutput) -> None:  # noqa: B027 - optional hook
        """The gap after the last round is over (or the table just started): open the next round if the
        game opens rounds by itself. Default: nothing (the device opens rounds)."""

    # -- the lifecycle moves, with the game's hooks ----------------------------------------------------------

    def close_betting(self, now: float, out: FlowOutput, reason: str) -> None:
        self.rounds.close_betting(now, out, reason)
        self.betting_closed(now, out, reason)

    def betting_closed(self, now: float, out: FlowOutput, reason: str) -> None:  # noqa: B027 - optional hook
        """Hook: betting has just closed (e.g. unlock the shoe, tell the dealer to deal)."""

    def finish_round(self, now: float, out: FlowOutput, result: BaseModel) -> None:
        self.rounds.finish(now, out, result)  # type: ignore[arg-type]
        self.round_over(now, out)

    def void_round(self, now: float, reason: str, by: str) -> FlowOutput:
        """Cancel the current round (bets refunded) and get ready for the next one."""
        try:
            self.rounds.check(Move.VOID)
        except Refused as exc:
            raise InputRejected(str(exc)) from None
        out = FlowOutput()
        self.rounds.void(now, out, reason, by)
        self.round_over(now, out)
        self.round_voided(now, out)
        return out

    def round_over(self, now: float, out: FlowOutput) -> None:  # noqa: B027 - optional hook
        """Hook: the round closed with a result or was voided; tidy up for the next one."""

    def round_voided(self, now: float, out: FlowOutput) -> None:  # noqa: B027 - optional hook
        """Hook: after `round_over`, for a voided round only (e.g. tell the dealer to set the cards aside)."""

    # -- inputs --------------------------------------------------------------------------------------------

    def handlers(self) -> dict[type[Command], Handler]:
        """Command class -> the bound method that takes it: the inputs and commands this flow handles (a
        flow adds its own to its base's). Besides the lifecycle's `close_betting`, nothing by default."""
        return {CloseBetting: self._close_betting_input}

    def on_command(self, command: Command, now: float) -> FlowOutput:
        """A validated input or command from the rules engine, the dealer or a supervisor, dispatched on its
        type (`handlers`). Raise InputRejected when not applicable."""
        handlers = self.handlers()
        handler = handlers.get(type(command))
        if handler is None:
            raise InputRejected(self.refusal_of(command, handlers))
        return handler(command, now)

    def refusal_of(self, command: Command, handlers: dict[type[Command], Handler]) -> str:
        """Why a command this flow has no handler for is refused (the sender is told what it takes)."""
        names = [model.wire_name() for model in handlers if model is not CloseBetting]
        known = ", ".join([*names, CloseBetting.wire_name()])
        return f"{self.game} takes no input {command.wire_name()!r}; it takes {known}"

    def _close_betting_input(self, command: CloseBetting, now: float) -> FlowOutput:
        try:
            self.rounds.check(Move.CLOSE_BETTING)
        except Refused as exc:
            raise InputRejected(str(exc)) from None
        out = FlowOutput()
        self.close_betting(now, out, self.close_betting_input_reason)
        return out

    #: how `round.betting_closed` names an early close by input
    close_betting_input_reason: ClassVar[str] = "input"

    # -- readings and the rest -----------------------------------------------------------------------------

    @abstractmethod
    def on_reading(self, reading: Reading, now: float) -> FlowOutput:
        """A device reading (cards, wheel states...). Must not raise on a bad reading: emit a rejection."""

    def _reject(self, out: FlowOutput, now: float, reading: Reading, reason: str) -> None:
        """A reading the flow cannot take: told as `reading.rejected` with the reading's device text, under
        the round's id while one is open. The one signature every flow rejects a reading with (card games
        publish `card.rejected` instead, and never name a secret card: `CardFlow._reject`)."""
        rejected = RawRejected(device=reading.device, reason=reason, raw=reading.raw)
        out.emit("reading.rejected", rejected, now, self.rounds.round_id)

    def reading_is_secret(self, reading: Reading) -> bool:
        """Whether `reading` may name a secret now (the card the game expects next is dealt face down). The
        runtime then publishes it without its device text when it holds or rejects it. Default: never."""
        return False

    def on_pause(self, now: float) -> FlowOutput:
        """The table was paused: e.g. lock the shoe's gate. Default: nothing."""
        return FlowOutput()

    def on_resume(self, now: float) -> FlowOutput:
        """The table resumes: continue where the round was."""
        return FlowOutput()

    def gate(self, paused: bool) -> tuple[str, bool] | None:
        """The device whose gate the game keeps (the card shoe), and whether it must be open now: exactly
        while the game would take a card from it (`paused`: the table is paused, so it would not). The
        runtime writes it once per step, as it is at the step's end (`TableCore._settle_gate`). Default: no
        gate."""
        return None

    def device_online(self, device: str, now: float, *, paused: bool) -> FlowOutput:
        """`device`'s link is (back) up. What the table asked of it just before the link fell may never have
        reached it (bytes into a pulled cable, a restart between a decision and its write), so a flow that
        keeps a device in a state (the shoe's gate) asks for that state again. Default: nothing."""
        return FlowOutput()

    def device_state(self, device: str, state: str, now: float) -> FlowOutput:
        """`device` reported the state it is in (`DeviceStatus`: the shaker's `DOME_OPEN`, the shoe's
        `LOCKED`), the table not paused. A state that breaks the procedure where the round stands (the dice
        disturbed before they are read) asks for a pause. Default: nothing (the state is the device's health,
        which the runtime keeps)."""
        return FlowOutput()

    def settle_pause(self, now: float, by: str, decision: str) -> FlowOutput:
        """The supervisor `by` decided on a pause (`decision`: "resume" or "void"): whatever the flow held for
        that decision (a card out of procedure: `FlowOutput.hold_out_of_procedure`) is settled now. Called
        once per decision, before `on_resume`; calling it with nothing held changes nothing. Default:
        nothing is ever held."""
        return FlowOutput()

    @abstractmethod
    def public_state(self) -> dict[str, Any]:
        """Everything a late subscriber or the panel may see. Never a secret."""
