"""Event models: the single source of the MQTT contract.

Flows and the runtime build events from these models; the journal stores them; the bus publishes them;
`tablectl schema` generates the JSON Schemas and the AsyncAPI document from them. Here are the envelope and
the events every game shares; a game's `round.result` model (a `RoundResult`) and its own events (each a
`GameEvent`) live in its package under `controller.games`, whose registry lays them beside these.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_json

#: `json.dumps(value, separators=(",", ":"), sort_keys=True)` with its encoder made once (json.dumps makes
#: one per call when given options): for what is encoded on the path of every event
encode_compact_sorted = json.JSONEncoder(separators=(",", ":"), sort_keys=True).encode


#: the last second `iso_ms` formatted, and its text up to the seconds (`time.gmtime` once per second)
_iso_second: tuple[int, str] = (-1, "")
#: year 10000: `iso_ms` formats what `datetime` can hold
_ISO_END = 253_402_300_800


def iso_ms(epoch_seconds: float) -> str:
    """UTC timestamp with millisecond precision, as in the envelope's `time` and `recordedtime`.

    The text of `datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds")` with `Z` for `+00:00`
    (the microseconds rounded half to even as `datetime` does, then cut to milliseconds), built without the
    datetime: it is on the path of every event, twice."""
    global _iso_second
    if not 0 <= epoch_seconds < _ISO_END:
        return (
            datetime.fromtimestamp(epoch_seconds, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z")
        )
    fraction, whole = math.modf(epoch_seconds)
    micros = round(fraction * 1e6)
    second = int(whole)
    if micros >= 1_000_000:
        second, micros = second + 1, micros - 1_000_000
    cached = _iso_second
    if cached[0] != second:
        cached = _iso_second = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    return f"{cached[1]}.{micros // 1000:03d}Z"


class EventData(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RoundResult(EventData):
    """The base of every game's `round.result` data model. Each has `game: Literal["<game>"]`: the contract
    publishes the union of them all (`controller.games.RESULT_MODELS`), discriminated on `game`."""


class GameEvent(EventData):
    """An event that only one game (or one family of games) publishes: its model names its type. The game's
    spec lists it (`GameSpec.events`) for the contract."""

    TYPE: ClassVar[str]


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


def _absent(value: object) -> bool:
    return value is None


class CardDealt(EventData):
    round_id: str
    card: str = Field(description="card code, rank + suit, e.g. 'TD'")
    position: str = Field(
        description="where the card went, e.g. 'player', 'banker', 'andar', 'box3', 'dealer'"
    )
    index: int = Field(description="0-based position of the card within that hand")
    rescan: bool = Field(False, description="the card was read on a re-scan after a no-read")
    manual: bool = Field(
        default=False,
        description="the card was entered by hand (input manual_card) after the reader could not read it",
    )
    raw: str = Field("", description="the device line(s) this card came from")
    # Absent unless a supervisor had to confirm the card (not null): a card nobody had to confirm is
    # published exactly as before, so consumers, journals and replays of such tables see the same bytes.
    entered_by: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="who entered the card by hand, when a supervisor had to confirm it "
        "(manual_card_confirmation = supervisor); absent otherwise",
    )
    confirmed_by: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="the supervisor who confirmed the hand-entered card (confirm_manual_card)",
    )


class ManualCardPending(EventData):
    """A card the dealer entered by hand waits for a supervisor's confirmation (`confirm_manual_card`) or
    refusal (`refuse_manual_card`); nothing is dealt until then."""

    round_id: str | None
    ref: str = Field(description="the unread card's reference (as in card.unreadable)")
    card: str | None = Field(description="the card entered; null while a card is face down (it may be it)")
    entered_by: str = Field(description="who entered it (dealer:<id> on the panel)")
    prompt: str = Field(description="what the dealer is told")


class ManualCardRefused(EventData):
    """A supervisor refused a hand-entered card: nothing was dealt; the card waits for a re-scan or another
    entry."""

    round_id: str | None
    ref: str
    card: str | None = Field(description="the card entered; null while a card is face down")
    entered_by: str
    by: str = Field(description="the supervisor who refused it")
    reason: str


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


class RoundClosed(EventData):
    round_id: str


#: why a table paused: `device` (a fault or a lost link), `supervisor` (a pause command), `restart` (the
#: controller restarted mid-round), `game` (the procedure itself cannot go on: a wrong burn, dice left
#: unreadable), `out_of_procedure` (a card or a result came while the table did not expect one: it is held
#: until a supervisor decides), `internal_error` (a bug in the game flow)
PauseCause = Literal["device", "supervisor", "restart", "game", "out_of_procedure", "internal_error"]


class RoundPaused(EventData):
    round_id: str | None
    reason: str = Field(description="what happened and what to do, in words a dealer understands")
    device: str | None = None
    by: str = Field(description="device | system | panel (the dealer) | the supervisor's name")
    cause: PauseCause = Field(description="why the table paused (see the contract's list of causes)")
    card: str | None = Field(
        None,
        description="out_of_procedure: the card that came out, held until the supervisor decides; null when "
        "it was not read, or when naming it could reveal a face-down card",
    )
    raw: str = Field("", description="out_of_procedure: the device text of the reading (empty when secret)")


class CardSetAside(EventData):
    """A card that came out of procedure (its `round.paused` held it) is set aside by the supervisor's
    decision: it was never dealt, and the round went on (or was voided) without it."""

    round_id: str | None = Field(description="the round in which the card came out (null between rounds)")
    card: str | None = Field(
        description="the card; null when unread, or when naming it could reveal a secret"
    )
    ref: str = Field("", description="the device's reference of the card (its sequence number), if any")
    rescan: bool = Field(False, description="the reading was a re-scan, not a card newly out of the shoe")
    reason: str = Field(description="why the card could not be taken when it came out")
    by: str = Field(description="who decided: the supervisor's name (or replay)")
    decision: Literal["resume", "void"] = Field(description="the decision that set the card aside")


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


# event type -> data model, of the events every game shares (each game adds its own: `controller.games`). The
# bus publishes on events/<type>; the schema command documents each.
EVENT_MODELS: dict[str, type[EventData]] = {
    "round.opened": RoundOpened,
    "round.betting_closed": BettingClosed,
    "card.dealt": CardDealt,
    "card.rejected": CardRejected,
    "card.unreadable": CardUnreadable,
    "card.manual_pending": ManualCardPending,
    "card.manual_refused": ManualCardRefused,
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
    "card.set_aside": CardSetAside,
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
    if model is None and isinstance(data, GameEvent) and type_ == data.TYPE:
        model = type(data)
    if model is None:
        raise KeyError(f"unknown event type {type_!r}")
    if model is RoundResult:
        if not isinstance(data, RoundResult) or type(data) is RoundResult:
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


def envelope_json(envelope: dict[str, Any]) -> str:
    """An envelope's fields (`Envelope`'s, in its order, all but `specversion`) as the JSON text that
    `Envelope(**envelope).model_dump_json()` gives, byte for byte, without validating them again: the journal
    builds them from its own counter and clock and from events whose data a model already checked
    (`make_event`), once per event on the path of every card."""
    return to_json({"specversion": "1.0", **envelope}).decode()


def trusted_envelope(envelope: dict[str, Any]) -> Envelope:
    """The `Envelope` of fields the journal built itself (as `envelope_json`), not validated again: the same
    model as `Envelope(**envelope)` gives."""
    return Envelope.model_construct(**envelope)


SEQUENCE_DIGITS = 12


def format_sequence(n: int) -> str:
    return str(n).zfill(SEQUENCE_DIGITS)
