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
    manual_cards: list[str] = Field(
        default_factory=list,
        description="cards of this round entered by hand after a no-read (see card.dealt)",
    )


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
    manual_cards: list[str] = Field(
        default_factory=list,
        description="cards of this round entered by hand after a no-read (see card.dealt)",
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
    manual_cards: list[str] = Field(
        default_factory=list,
        description="cards of this round entered by hand after a no-read (see card.dealt)",
    )


# --- blackjack (Live, Infinite, Single-deck) ----------------------------------------------------------

BlackjackOutcome = Literal["blackjack", "win", "push", "lose", "surrender"]


class BlackjackDealer(EventData):
    cards: list[str] = Field(description="in dealing order; a face-down card only once it was revealed")
    total: int = Field(description="best total: an ace counts 11 unless that busts")
    soft: bool = Field(description="an ace still counts 11 in `total`")
    blackjack: bool = Field(description="21 in the first two cards")
    bust: bool


class BlackjackHand(EventData):
    seat: int = Field(ge=1, description="the box, 1 = the dealer's left")
    hand: int = Field(ge=1, le=2, description="1; 2 for the second hand of a split box")
    cards: list[str] = Field(description="in dealing order")
    total: int
    soft: bool
    blackjack: bool = Field(description="21 in two cards, not after a split")
    bust: bool
    doubled: bool
    split: bool = Field(description="the hand was made by splitting a pair")
    surrendered: bool
    insured: bool = Field(description="the box took insurance (both hands of a split box say so)")
    outcome: BlackjackOutcome = Field(description="against the dealer's hand; payouts are the rules engine's")


class BoxedBlackjackResult(EventData):
    """What Live and Single-deck Blackjack report: every box's hands against the dealer's."""

    round_id: str
    dealer: BlackjackDealer
    hands: list[BlackjackHand] = Field(description="by seat, then hand; Bet Behind settles as its box")
    round_in_shoe: int = Field(ge=1)
    last_round_of_shoe: bool


class BlackjackResult(BoxedBlackjackResult):
    game: Literal["blackjack"] = "blackjack"


class SingleDeckBlackjackResult(BoxedBlackjackResult):
    """One box; a fresh deck every round, so `round_in_shoe` is always 1."""

    game: Literal["single_deck_blackjack"] = "single_deck_blackjack"


class InfiniteBlackjackResult(EventData):
    game: Literal["infinite_blackjack"] = "infinite_blackjack"
    round_id: str
    shoe_id: str
    initial: list[str] = Field(description="the two common initial player cards")
    sequence: list[str] = Field(description="the common further player cards, in dealing order")
    dealer_up: str
    hole_card: str = Field(description="the dealer's face-down card, revealed")
    dealer: BlackjackDealer = Field(description="cards include the revealed hole card")
    dealer_bust_cards: int | None = Field(description="cards in the dealer's bust hand; null if no bust")
    round_in_shoe: int = Field(ge=1, description="for side bets available up to a round of the shoe")
    last_round_of_shoe: bool


class CardFaceDown(EventData):
    """A card was dealt face down (the dealer's hole card): its place only, never its identity. The same
    card's `card.dealt` (same position and index) follows when it is revealed."""

    round_id: str
    position: str
    index: int
    rescan: bool = False


class DealerPeek(EventData):
    """The dealer checked the face-down card under an ace or a ten-valued up card."""

    round_id: str
    up_card: str
    blackjack: bool = Field(description="the dealer has blackjack: the round ends")


BlackjackAction = Literal[
    "hit", "stand", "double", "split", "surrender", "insurance", "no_insurance", "deal_card", "players_done"
]


class BlackjackDecisionMade(EventData):
    round_id: str
    seat: int | None = Field(description="the box; null for Infinite's common hand")
    hand: int | None
    action: BlackjackAction
    by: Literal["player", "policy"] = Field(
        description="player: the rules engine's input; policy: no decision in time, the variant's "
        "disconnect policy decided"
    )
    total: int | None = Field(None, description="the hand's total when it was decided")


class BlackjackHandSettled(EventData):
    """A hand whose outcome is certain before the dealer plays: bust, surrender, or a blackjack the dealer
    cannot match."""

    round_id: str
    seat: int
    hand: int
    outcome: BlackjackOutcome
    reason: str


class ShoeBurn(EventData):
    """Infinite Blackjack's burn after a shuffle: the shown card and the count of cards burned face down
    (never their identity)."""

    shoe_id: str
    shown: str | None = Field(description="the card shown; its value is the number of cards to burn")
    to_burn: int | None
    burned: int
    done: bool = Field(description="the burn is complete and its count right: play may begin")


DieValue = Annotated[int, Field(ge=1, le=6)]


class SicBoResult(EventData):
    """Three dice. Every sic bo bet settles from these fields alone (tests/test_sicbo_settlement.py)."""

    game: Literal["sicbo"] = "sicbo"
    round_id: str
    dice: list[DieValue] = Field(min_length=3, max_length=3, description="the three values, ascending")
    total: int = Field(ge=3, le=18)
    size: Literal["small", "big"] | None = Field(
        description="small 4-10, big 11-17; null on a triple (a triple loses both)"
    )
    parity: Literal["odd", "even"] = Field(
        description="of the total; an Odd/Even bet that loses on a triple also reads `triple`"
    )
    triple: DieValue | None = Field(description="the value all three dice show, or null")
    double: DieValue | None = Field(
        description="the value at least two dice show (a triple's value too), or null"
    )
    reshakes: int = Field(
        ge=0,
        description="times the dice were shaken again in this round (after a refused reading, a shaker that "
        "did not answer, or an interruption)",
    )
    frame: str = Field(
        description="the camera frame the values were read from (or, entered by hand, decided on): its file "
        "relative to the camera capture's JSON Lines file; empty if no frame could be kept"
    )
    frame_sha256: str = Field(description="sha256 of that frame file; empty with no frame")
    source: Literal["camera", "manual"] = Field(description="read by the camera, or entered by a supervisor")
    entered_by: str | None = Field(None, description="who entered the dice by hand (source manual)")
    cycle_id: str = Field(description="the shaker's cycle the dice came to rest in")
    dice_in_frame: list[DieValue] = Field(
        description="the values as read, left to right in the frame (as entered, when by hand)"
    )
    raw: str = Field("", description="the shaker's AT_REST line the reading followed")


class DiceReading(EventData):
    """The camera read the dice of one shake (or refused to): every reading is published, refusals too."""

    round_id: str | None
    cycle_id: str
    attempt: int = Field(ge=1, description="the shake of this round the reading belongs to (1 = first)")
    values: list[DieValue] | None = Field(description="left to right in the frame; null: refused")
    reason: str = Field("", description="why the reading was refused")
    frame: str = ""
    frame_sha256: str = ""
    dice: list[dict[str, Any]] = Field(
        default_factory=list,
        description="the reader's evidence per die found: value (or null), confidence, box [x, y, w, h], "
        "reason",
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


# event type -> data model. The bus publishes on events/<type>; the schema command documents each.
EVENT_MODELS: dict[str, Any] = {
    "round.opened": RoundOpened,
    "round.betting_closed": BettingClosed,
    "card.dealt": CardDealt,
    "card.rejected": CardRejected,
    "card.unreadable": CardUnreadable,
    "card.manual_pending": ManualCardPending,
    "card.manual_refused": ManualCardRefused,
    "shoe.started": ShoeStarted,
    "shoe.cut_card": CutCardSeen,
    "shoe.burn": ShoeBurn,
    "card.face_down": CardFaceDown,
    "dealer.peek": DealerPeek,
    "blackjack.decision": BlackjackDecisionMade,
    "blackjack.hand_settled": BlackjackHandSettled,
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
    "dice.read": DiceReading,
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
