"""The one validated entry point for everything that flows back towards the table.

Supervisors' commands (`<root>/commands/<name>`), the rules engine's inputs (`<root>/inputs/<name>`) and the
dealer's panel all arrive here as (kind, name, JSON object). A payload that does not validate raises
`CommandError` with a message for the sender, and nothing changes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class CommandError(ValueError):
    """Rejected command: the message goes back to the sender in the error reply."""


class Command(BaseModel):
    # strict: a payload that follows the published JSON Schema is accepted, and nothing else ("5" is not 5)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: echoed in the reply so a sender can match it (Zigbee2MQTT style)
    transaction: str | int | None = None
    #: who sent it, for the audit trail ("supervisor:desk-2", "panel", "rules-engine")
    by: str = Field("supervisor", max_length=64)


class Pause(Command):
    reason: str = Field("paused by supervisor", min_length=1, max_length=200)


class Resume(Command):
    pass


class VoidRound(Command):
    reason: str = Field("voided by supervisor", min_length=1, max_length=200)
    round_id: str | None = Field(
        None, description="if given, must be the current round (guards against a stale click)"
    )


class ManualCard(Command):
    """The dealer enters a card by hand (the scanner cannot read it). Same checks as a scanned card."""

    card: str = Field(min_length=2, max_length=2)
    device: str = "shoe"


class NewShoe(Command):
    """The dealer loaded a freshly shuffled shoe (between rounds)."""


class DeviceAction(Command):
    """Maintenance on one device, e.g. power the wheel up again after a technician fixed a fault.

    Never automatic: a motor that starts by itself while someone's hands are in the wheel is a hazard.
    """

    device: str = Field(min_length=1, max_length=64)
    action: Literal["power_on", "power_off", "self_test", "status"]


class Rebirth(Command):
    """Republish everything retained (status, state, devices)."""


class ReplayEvents(Command):
    from_sequence: int = Field(ge=1)
    to_sequence: int | None = Field(None, ge=1)


class CloseBetting(Command):
    """Close betting early (dealer or rules engine)."""


class PlayersDone(Command):
    """Every player has decided (5 Card Stud: bet or fold): the dealer's remaining cards may be dealt."""


# name -> model. `table` commands go to the runtime; `bus` commands are served by the MQTT bus itself.
TABLE_COMMANDS: dict[str, type[Command]] = {
    "pause": Pause,
    "resume": Resume,
    "void_round": VoidRound,
    "manual_card": ManualCard,
    "new_shoe": NewShoe,
    "device_action": DeviceAction,
}
BUS_COMMANDS: dict[str, type[Command]] = {
    "rebirth": Rebirth,
    "replay_events": ReplayEvents,
}
INPUTS: dict[str, type[Command]] = {
    "close_betting": CloseBetting,
    "players_done": PlayersDone,
}

Kind = Literal["commands", "inputs"]


def parse_command(kind: str, name: str, payload: Any) -> Command:
    """Validate a command or input. Raises CommandError naming what is wrong."""
    if kind == "commands":
        table = {**TABLE_COMMANDS, **BUS_COMMANDS}
    elif kind == "inputs":
        table = INPUTS
    else:
        raise CommandError(f"unknown kind {kind!r}")
    model = table.get(name)
    if model is None:
        raise CommandError(f"unknown {kind[:-1]} {name!r}; known: {', '.join(sorted(table))}")
    if not isinstance(payload, dict):
        raise CommandError("payload must be a JSON object")
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'payload'}: {err['msg']}" for err in exc.errors()
        )
        raise CommandError(f"invalid {name}: {problems}") from None


def command_name(command: Command) -> str:
    for table in (TABLE_COMMANDS, BUS_COMMANDS, INPUTS):
        for name, model in table.items():
            if type(command) is model:
                return name
    raise KeyError(type(command).__name__)
