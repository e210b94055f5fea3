"""Event models: the single source of the MQTT contract.

Flows and the runtime build events from these models; the journal stores them; the bus publishes them;
`tablectl schema` generates the JSON Schemas and the AsyncAPI document from them. A game's result model is
registered with the game (`controller.games.GAMES`), which calls `register_result_model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


def iso_ms(epoch_seconds: float) -> str:
    """UTC timestamp with millisecond precision, as in the envelope's `time` and `recordedtime`."""
    return (
        datetime.fromtimestamp(epoch_seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


class EventData(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- round lifecycle --------------------------------------------------------------------------------


class RoundOpened(EventData):
    game: str
    round_id: str
    round_number_in_shoe: int | None = Field(None, description="1-based; null for games without a shoe")
    betting_closes_at: str | None = Field(
        None, description="UTC time betting closes; null if the dealer/device decides"
    )
    last_round_of_shoe: bool = False


class BettingClosed(EventData):
    round_id: str
    reason: str = Field(description="timer | first_card | dealer | wheel | input")


class CardDealt(EventData):
    round_id: str
    card: str = Field(description="card code, rank + suit, e.g. 'TD'")
    position: str = Field(
        description="where the card went, e.g. 'player', 'banker', 'andar', 'box3', 'dealer'"
    )
    index: int = Field(description="0-based position of the card within that hand")
    rescan: bool = Field(False, description="the card was read on a re-scan after a no-read")
    raw: str = Field("", description="the device line(s) this card came from")


class CardRejected(EventData):
    round_id: str | None
    card: str | None
    reason: str
    raw: str = ""


class CardUnreadable(EventData):
    round_id: str | None
    ref: str
    prompt: str = Field(description="what the dealer was told to do")


class CutCardSeen(EventData):
    round_id: str | None
    shoe_id: str


class ShoeStarted(EventData):
    shoe_id: str
    decks: int


class ShuffleStarted(EventData):
    """The table asked its shuffler to shuffle; no round opens until that shuffle is done."""

    shuffle_id: str = Field(description="the id the shuffler reports back with the shuffle's count")
    device: str = Field(description="the shuffler's name in the table config")
    decks: int = Field(ge=1, description="the number of decks asked for: the count must be decks x 52")
    reason: str = Field(description="why now: 'table start', 'round over', 'shoe finished', 'again'")


class ShuffleCompleted(EventData):
    """The shuffler finished and counted exactly decks x 52 cards: this deck may be dealt."""

    shuffle_id: str
    device: str
    decks: int = Field(ge=1)
    cards: int = Field(ge=1, description="the cards the machine counted")
    raw: str = Field("", description="the shuffler line this came from")


class ShuffleFailure(EventData):
    """A shuffle did not give a deck that may be dealt (a wrong count, a jam, the door...): its cards must
    not be dealt. The shuffler's fault pauses the table; it shuffles again when the table resumes."""

    shuffle_id: str = Field(description="the failed shuffle's id; empty when the shuffler did not say")
    device: str
    code: str = Field(description="COUNT_MISMATCH (the host's count check) or the shuffler's E01..E05")
    reason: str
    expected: int | None = Field(None, description="cards expected, when the count was wrong")
    actual: int | None = Field(None, description="cards counted, when the count was wrong")
    raw: str = ""


class BaccaratHand(EventData):
    cards: list[str]
    total: int


class BaccaratResult(EventData):
    game: Literal["baccarat"] = "baccarat"
    round_id: str
    player: BaccaratHand
    banker: BaccaratHand
    winner: Literal["player", "banker", "tie"]
    player_pair: bool
    banker_pair: bool
    natural: bool = Field(description="either hand has a two-card 8 or 9")
    player_natural: bool
    banker_natural: bool
    round_number_in_shoe: int
    last_round_of_shoe: bool


class RouletteResult(EventData):
    game: Literal["roulette"] = "roulette"
    round_id: str
    number: int = Field(ge=0, le=36)
    color: Literal["red", "black", "green"]
    parity: Literal["odd", "even"] | None = Field(description="null for zero")
    range: Literal["low", "high"] | None = Field(description="low 1-18, high 19-36; null for zero")
    dozen: int | None = Field(description="1, 2 or 3; null for zero")
    column: int | None = Field(description="1, 2 or 3; null for zero")
    spin: int = Field(description="the wheel's own spin number (not unique)")
    rotor_rpm: float
    direction: Literal["clockwise", "anticlockwise"]
    raw: str = Field("", description="the wheel lines that produced the result")


AndarBaharBucket = Literal[
    "1-5", "6-10", "11-15", "16-20", "21-25", "26-30", "31-35", "36-40", "41-45", "46-49"
]


class AndarBaharResult(EventData):
    game: Literal["andar_bahar"] = "andar_bahar"
    round_id: str
    game_card: str = Field(description="the card drawn before betting; its rank is the one to match")
    andar: list[str] = Field(description="Andar's cards in dealing order (Andar gets the 1st, 3rd, ...)")
    bahar: list[str] = Field(description="Bahar's cards in dealing order (Bahar gets the 2nd, 4th, ...)")
    winner: Literal["andar", "bahar"] = Field(description="the side that received the matching card")
    cards_dealt: int = Field(ge=1, le=49, description="Andar and Bahar cards together, game card excluded")
    bucket: AndarBaharBucket = Field(description="the 'number of cards dealt' bet range cards_dealt is in")
    first_andar_match: bool = Field(description="the first Andar card has the game card's rank")
    first_bahar_match: bool = Field(description="the first Bahar card has the game card's rank")
    first_three: Literal["straight_flush", "straight", "flush"] | None = Field(
        description="game card + first Andar + first Bahar; ace high (Q-K-A) or low (A-2-3), no wrap "
        "(K-A-2); null when no pattern or fewer than 3 cards"
    )


PokerCategory = Literal[
    "high_card",
    "one_pair",
    "two_pair",
    "three_of_a_kind",
    "straight",
    "flush",
    "full_house",
    "four_of_a_kind",
    "straight_flush",
    "royal_flush",
]


class StudHand(EventData):
    cards: list[str] = Field(description="in dealing order")
    category: PokerCategory
    ranks: list[int] = Field(
        description="tie-break ranks, most significant first (2..14, ace 14): the groups by size then rank, "
        "then the kickers; a straight gives its top card only (5 for A-2-3-4-5)"
    )


class StudResult(EventData):
    game: Literal["stud"] = "stud"
    round_id: str
    hands: list[StudHand] = Field(description="the player hands in seat order (one: the common hand)")
    dealer: StudHand
    dealer_qualifies: bool = Field(description="the dealer has ace-king or better")
    outcomes: list[Literal["win", "lose", "tie"]] = Field(
        description="each player hand against the dealer's, qualified or not (payouts are the rules engine's)"
    )


#: game -> its `round.result` data model (each has `game: Literal["<game>"]`, the union's discriminator)
RESULT_MODELS: dict[str, type[EventData]] = {}


def register_result_model(model: type[EventData]) -> None:
    game = model.model_fields["game"].default
    known = RESULT_MODELS.get(game)
    if known is not None and known is not model:
        raise ValueError(f"game {game!r} already has the result model {known.__name__}")
    RESULT_MODELS[game] = model


class RoundResult(EventData):
    """Stands for the union of the registered result models (`result_union()`), discriminated on `game`."""


def result_union() -> Any:
    models = tuple(RESULT_MODELS.values())
    if len(models) == 1:
        return models[0]
    return Annotated[Union[models], Field(discriminator="game")]  # noqa: UP007 - a union built at run time


class RoundClosed(EventData):
    round_id: str


class RoundPaused(EventData):
    round_id: str | None
    reason: str
    device: str | None = None
    by: str = Field(description="device | system | panel (the dealer) | the supervisor's name")


class RoundResumed(EventData):
    round_id: str | None
    by: str


class RoundVoided(EventData):
    round_id: str
    reason: str
    refund: Literal[True] = True
    by: str = Field(description="device | supervisor | system")


class DeviceChanged(EventData):
    device: str
    status: Literal["online", "offline", "fault"]
    detail: str = ""
    code: str | None = None


class RawRejected(EventData):
    device: str
    reason: str
    raw: str = ""


class ReadingHeld(EventData):
    """A device reported something while the table was paused: it is applied, in order, on resume."""

    device: str
    reading: str = Field(description="what kind of reading, e.g. CardSeen, WheelResult")
    raw: str = ""
    held: int = Field(description="readings held so far in this pause")


# event type -> data model. The bus publishes on events/<type>; the schema command documents each.
EVENT_MODELS: dict[str, Any] = {
    "round.opened": RoundOpened,
    "round.betting_closed": BettingClosed,
    "card.dealt": CardDealt,
    "card.rejected": CardRejected,
    "card.unreadable": CardUnreadable,
    "shoe.started": ShoeStarted,
    "shoe.cut_card": CutCardSeen,
    "shuffle.started": ShuffleStarted,
    "shuffle.done": ShuffleCompleted,
    "shuffle.failed": ShuffleFailure,
    "round.result": RoundResult,
    "round.closed": RoundClosed,
    "round.paused": RoundPaused,
    "round.resumed": RoundResumed,
    "round.voided": RoundVoided,
    "device.online": DeviceChanged,
    "device.offline": DeviceChanged,
    "device.fault": DeviceChanged,
    "reading.rejected": RawRejected,
    "reading.held": ReadingHeld,
}


@dataclass(frozen=True, slots=True)
class Event:
    """An event as a flow or the runtime produced it, before the journal gives it a sequence and an id."""

    type: str
    time: float  # when the device reported it (epoch seconds)
    subject: str | None  # round id
    data: dict[str, Any]


def make_event(type_: str, data: EventData, time: float, subject: str | None = None) -> Event:
    """Build an event, checking its data model is the one the contract names for `type_`."""
    model = EVENT_MODELS.get(type_)
    if model is None:
        raise KeyError(f"unknown event type {type_!r}")
    if model is RoundResult:
        if type(data) not in RESULT_MODELS.values():
            raise TypeError(f"{type_} takes a result model, not {type(data).__name__}")
    elif not isinstance(data, model):
        raise TypeError(f"{type_} takes {model.__name__}, not {type(data).__name__}")
    if subject is None:
        subject = getattr(data, "round_id", None)
    return Event(type=type_, time=time, subject=subject, data=data.model_dump(mode="json"))


class Envelope(BaseModel):
    """CloudEvents-style envelope, exactly as published on `<root>/events/<type>`."""

    model_config = ConfigDict(extra="forbid")

    specversion: Literal["1.0"] = "1.0"
    id: str = Field(
        description="unique per table, stable across restarts and re-sends: the de-duplication key"
    )
    source: str = Field(description="the table's topic root, studio/<studio>/table/<table>")
    type: str
    time: str = Field(description="when the device reported it, UTC, ms")
    recordedtime: str = Field(description="when the controller journaled it, UTC, ms")
    sequence: str = Field(description="per-table, gap-free, monotonic, zero-padded")
    subject: str | None = Field(description="round id")
    historical: bool = Field(False, description="true when published late (after an outage or on replay)")
    data: dict[str, Any]


SEQUENCE_DIGITS = 12


def format_sequence(n: int) -> str:
    return str(n).zfill(SEQUENCE_DIGITS)
