"""The one validated entry point for everything that flows back towards the table.

Supervisors' commands (`<root>/commands/<name>/<user>`), the rules engine's inputs
(`<root>/inputs/<name>/<user>`) and the dealer's panel all arrive here as (kind, name, JSON object, identity).
A payload that does not validate raises `CommandError` with a message for the sender, and nothing changes.

The identity recorded for a command (`Command.by`, read by the runtime for the audit trail) is never taken
from the payload: the caller passes the identity it authenticated. Over MQTT that is the topic's last level,
which the broker's ACL confines to the publisher's own user name; the dealer's panel passes `dealer:<id>`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError

from controller.command_base import (
    DEALER_PREFIX,
    MAX_IDENTITY_LENGTH,
    PANEL_IDENTITY,
    CloseBetting,
    Command,
    ConfirmManualCard,
    ManualCard,
    NewShoe,
    PlayersDone,
    RefuseManualCard,
    Shuffle,
)
from controller.games import GAME_COMMANDS, GAME_INPUTS

#: the longest command or input name a reply names (the topic's level; a longer one is unknown anyway)
MAX_NAME_LENGTH = 64
#: what an error message quotes of what the sender sent (a key, a name): an excerpt, never all of it
MAX_EXCERPT = 40
#: the validation problems an error message lists; the rest are counted ("and 8614 more"). A payload of many
#: unknown keys would otherwise make a reply (and a log line) several times the payload's size.
MAX_PROBLEMS = 3
#: the largest journal sequence (SQLite's INTEGER is a signed 64-bit number)
MAX_SEQUENCE = 2**63 - 1
#: identities the controller records for itself: nobody may send a command as one of them
RESERVED_IDENTITIES = frozenset({"system", "device", "replay"})


class CommandError(ValueError):
    """Rejected command: the message goes back to the sender in the error reply."""


class Pause(Command):
    reason: str = Field("paused by supervisor", min_length=1, max_length=200)


class Resume(Command):
    pass


class VoidRound(Command):
    reason: str = Field("voided by supervisor", min_length=1, max_length=200)
    round_id: str | None = Field(
        None, max_length=64, description="if given, must be the current round (guards against a stale click)"
    )


class DeviceAction(Command):
    """Maintenance on one device, e.g. power the wheel up again after a technician fixed a fault.

    Never automatic: a motor that starts by itself while someone's hands are in the wheel is a hazard.
    """

    device: str = Field(min_length=1, max_length=64)
    #: `reset`: clear a shuffler's error once the dealer fixed its cause (a jam, the door, a miscount)
    action: Literal["power_on", "power_off", "self_test", "status", "reset"]


class Rebirth(Command):
    """Republish everything retained (status, state, devices)."""


class ReplayEvents(Command):
    # Bounded as the journal's sequences are: a larger number is no sequence (and SQLite cannot bind it).
    from_sequence: int = Field(ge=1, le=MAX_SEQUENCE)
    to_sequence: int | None = Field(None, ge=1, le=MAX_SEQUENCE)


#: commands any table takes. `table` commands go to the runtime; `bus` commands are served by the MQTT bus
COMMON_COMMANDS: dict[str, type[Command]] = {
    "pause": Pause,
    "resume": Resume,
    "void_round": VoidRound,
    "manual_card": ManualCard,
    "confirm_manual_card": ConfirmManualCard,
    "refuse_manual_card": RefuseManualCard,
    "new_shoe": NewShoe,
    "shuffle": Shuffle,
    "device_action": DeviceAction,
}
BUS_COMMANDS: dict[str, type[Command]] = {
    "rebirth": Rebirth,
    "replay_events": ReplayEvents,
}
#: inputs any game may take
COMMON_INPUTS: dict[str, type[Command]] = {
    "close_betting": CloseBetting,
    "players_done": PlayersDone,
}


def _beside(
    own: dict[str, type[Command]], games: dict[str, type[Command]], what: str
) -> dict[str, type[Command]]:
    taken = sorted(name for name in games if name in own or name in BUS_COMMANDS)
    if taken:
        raise ValueError(f"a game's {what} {', '.join(taken)} would take the name of the table's own")
    misnamed = sorted(name for name, model in {**own, **games}.items() if model.wire_name() != name)
    if misnamed:
        raise ValueError(f"{what} {', '.join(misnamed)}: the name is not its model's `wire_name()`")
    return {**own, **games}


# The contract's tables, name -> model: what `parse_command` knows. A game's own supervisor commands (sic
# bo's `manual_dice`) are table commands its flow handles; its inputs join those any game may take.
TABLE_COMMANDS: dict[str, type[Command]] = _beside(COMMON_COMMANDS, GAME_COMMANDS, "command")
INPUTS: dict[str, type[Command]] = _beside(COMMON_INPUTS, GAME_INPUTS, "input")


Kind = Literal["commands", "inputs"]


def check_identity(by: str) -> str:
    """An identity a command may be recorded under; CommandError if it is empty, too long or reserved."""
    if not isinstance(by, str) or not by:
        raise CommandError("the sender's identity is empty")
    if len(by) > MAX_IDENTITY_LENGTH:
        raise CommandError(f"the sender's identity is longer than {MAX_IDENTITY_LENGTH} characters")
    if by in RESERVED_IDENTITIES:
        raise CommandError(f"identity {by!r} is reserved for the controller itself")
    return by


def check_remote_identity(user: str) -> str:
    """The identity of a command that came over MQTT (the topic's last level, which the broker's ACL confines
    to the publisher's user name). Besides the reserved names, the panel's identities are refused: a remote
    sender must not pose as the dealer."""
    check_identity(user)
    if user.startswith(DEALER_PREFIX) or user == PANEL_IDENTITY:
        raise CommandError(f"identity {user!r} is reserved for the dealer's panel")
    return user


def _json_numbers(value: Any) -> Any:
    """JSON has one number type: 5.0 is the integer 5 (as JSON Schema's "integer" says), so a strict int field
    takes it. Other floats stay floats."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _json_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_json_numbers(item) for item in value]
    return value


def parse_command(kind: str, name: str, payload: Any, *, by: str) -> Command:
    """Validate a command or input sent by the authenticated identity `by`. Raises CommandError naming what is
    wrong. The payload must not name its sender: `by` is the caller's to set (over MQTT: the topic's user
    level; the dealer's panel: `dealer:<id>`)."""
    if kind == "commands":
        table = {**TABLE_COMMANDS, **BUS_COMMANDS}
    elif kind == "inputs":
        table = INPUTS
    else:
        raise CommandError(f"unknown kind {kind!r}")
    model = table.get(name)
    if model is None:
        raise CommandError(f"unknown {kind[:-1]} '{excerpt(name)}'; known: {', '.join(sorted(table))}")
    if not isinstance(payload, dict):
        raise CommandError("payload must be a JSON object")
    if "by" in payload:
        raise CommandError(
            "the payload must not contain 'by': the sender on record is the identity the broker "
            "authenticated (the topic's last level), not a payload field"
        )
    check_identity(by)
    try:
        return model.model_validate({**_json_numbers(payload), "by": by})
    except ValidationError as exc:
        raise CommandError(f"invalid {name}: {describe_problems(exc)}") from None


def excerpt(text: str, limit: int = MAX_EXCERPT) -> str:
    """At most `limit` characters of sender-supplied text, printable (escaped as Python would), with `...`
    if cut: safe to put in a reply or a log line whatever the sender sent."""
    cut = text[:limit]
    shown = cut if cut.isprintable() else cut.encode("unicode_escape").decode("ascii")
    return shown + ("..." if len(text) > limit else "")


def describe_problems(exc: ValidationError) -> str:
    """The first MAX_PROBLEMS validation problems, each field named by an excerpt, and how many more."""
    errors = exc.errors(include_url=False, include_input=False)
    shown = [
        f"{'.'.join(excerpt(str(part)) for part in err['loc']) or 'payload'}: {excerpt(err['msg'], 120)}"
        for err in errors[:MAX_PROBLEMS]
    ]
    more = len(errors) - len(shown)
    text = "; ".join(shown)
    if more:
        text = f"{len(errors)} problems: {text}; and {more} more"
    return text


def command_name(command: Command) -> str:
    for table in (TABLE_COMMANDS, BUS_COMMANDS, INPUTS):
        for name, model in table.items():
            if type(command) is model:
                return name
    raise KeyError(type(command).__name__)
