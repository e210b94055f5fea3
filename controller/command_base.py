"""What every command and input model is: `Command`, the sender's transaction and identity it carries.

The table's own commands (`controller.commands`) and each game's inputs and commands (its package under
`controller.games`) are `Command`s; `controller.commands` parses them all, from the contract's tables.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

#: the longest `transaction` a sender may use (it is echoed in the reply and keys the stored replies)
MAX_TRANSACTION_LENGTH = 64
#: the longest identity (MQTT user name, `dealer:<id>`)
MAX_IDENTITY_LENGTH = 64
#: the dealer's panel records its commands as `dealer:<id>`; such an identity never comes from MQTT
DEALER_PREFIX = "dealer:"
#: the panel's own identity (until it passes `dealer:<id>`): not for MQTT senders either
PANEL_IDENTITY = "panel"

Transaction = (
    Annotated[str, Field(min_length=1, max_length=MAX_TRANSACTION_LENGTH)]
    | Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
    | None
)


class Command(BaseModel):
    # strict: a payload that follows the published JSON Schema is accepted, and nothing else ("5" is not 5)
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    #: echoed in the reply so a sender can match it (Zigbee2MQTT style); a state-changing command repeated
    #: with the same transaction by the same sender gets the first reply again instead of being applied twice
    transaction: Transaction = Field(
        default=None,
        description=f"echoed in the reply; at most {MAX_TRANSACTION_LENGTH} characters. A command repeated "
        "with the same transaction by the same sender is applied once: the repeat gets the first reply again",
    )
    #: who sent it, for the audit trail: set by `parse_command` from the authenticated identity, never from
    #: the payload (hidden from the published schema, refused in a payload)
    by: SkipJsonSchema[str] = Field("supervisor", min_length=1, max_length=MAX_IDENTITY_LENGTH)

    @classmethod
    def wire_name(cls) -> str:
        """The name it goes by on the bus (`commands/<name>`, `inputs/<name>`): its class name in snake case
        (`controller.commands` checks its tables against it)."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


# --- the table's commands and inputs that a game's flow handles (`GameFlow.handlers`) ---------------------


class ManualCard(Command):
    """The dealer enters a card by hand (the scanner cannot read it). Same checks as a scanned card."""

    card: str = Field(min_length=2, max_length=2)
    device: str = Field("shoe", min_length=1, max_length=64)


class ConfirmManualCard(Command):
    """A supervisor confirms the card the dealer entered by hand (`[table] manual_card_confirmation =
    "supervisor"`): it is dealt only now. `card` must be the card entered: a stale or mistyped confirmation
    deals nothing."""

    card: str = Field(min_length=2, max_length=2)


class RefuseManualCard(Command):
    """A supervisor refuses the card the dealer entered by hand: nothing is dealt, the card still waits for
    its re-scan or another entry. `card`, if given, must be the card entered (against a stale click)."""

    card: str | None = Field(None, min_length=2, max_length=2)
    reason: str = Field("refused by the supervisor", min_length=1, max_length=200)


class NewShoe(Command):
    """The dealer loaded a freshly shuffled shoe (between rounds)."""


class Shuffle(Command):
    """Ask the table's shuffler again for the shuffle the next round waits for (one that never finished).

    A failed shuffle needs no command: resuming the paused table shuffles again."""


class CloseBetting(Command):
    """Close betting early (dealer or rules engine)."""


class PlayersDone(Command):
    """Every player has decided (5 Card Stud: bet or fold): the dealer's remaining cards may be dealt."""
