"""The published JSON Schemas and AsyncAPI document agree with the models the controller really uses."""

from __future__ import annotations

import argparse
import json
import re
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator, Draft202012Validator
from pydantic import TypeAdapter, ValidationError

from controller import schema
from controller.commands import BUS_COMMANDS, INPUTS, TABLE_COMMANDS, Command, CommandError, parse_command
from controller.events import (
    BettingClosed,
    CardDealt,
    CardRejected,
    CardSetAside,
    CardUnreadable,
    CutCardSeen,
    DeviceChanged,
    Envelope,
    Event,
    EventData,
    ManualCardPending,
    ManualCardRefused,
    RawRejected,
    ReadingHeld,
    RoundClosed,
    RoundOpened,
    RoundPaused,
    RoundResult,
    RoundResumed,
    RoundVoided,
    ShoeStarted,
    ShuffleCompleted,
    ShuffleFailure,
    ShuffleStarted,
    format_sequence,
    iso_ms,
    make_event,
)
from controller.games import EVENT_MODELS, RESULT_MODELS
from controller.games.andar_bahar import AndarBaharResult
from controller.games.baccarat import BaccaratResult
from controller.games.baccarat.events import BaccaratHand
from controller.games.blackjack import BlackjackResult
from controller.games.blackjack.events import (
    BlackjackDealer,
    BlackjackDecisionMade,
    BlackjackHand,
    BlackjackHandSettled,
    CardFaceDown,
    DealerPeek,
)
from controller.games.infinite_blackjack import InfiniteBlackjackResult
from controller.games.infinite_blackjack.events import ShoeBurn
from controller.games.roulette import RouletteResult
from controller.games.sicbo import SicBoResult
from controller.games.sicbo.events import ShakeReading
from controller.games.single_deck_blackjack import SingleDeckBlackjackResult
from controller.games.stud import StudResult
from controller.games.stud.events import StudHand

pytestmark = pytest.mark.unit

SOURCE = "studio/s1/table/t7"
T0 = 1_700_000_000.0

BACCARAT = BaccaratResult(
    round_id="t7-0000001",
    player=BaccaratHand(cards=["9H", "KS"], total=9),
    banker=BaccaratHand(cards=["3D", "2C", "AS"], total=6),
    winner="player",
    player_pair=False,
    banker_pair=False,
    natural=True,
    player_natural=True,
    banker_natural=False,
    round_number_in_shoe=1,
    last_round_of_shoe=False,
)
ROULETTE = RouletteResult(
    round_id="t7-0000002",
    number=17,
    color="black",
    parity="odd",
    range="low",
    dozen=2,
    column=2,
    spin=412,
    rotor_rpm=24.5,
    direction="clockwise",
    raw="*X;5;412;17;...",
)
ROULETTE_ZERO = RouletteResult(
    round_id="t7-0000003",
    number=0,
    color="green",
    parity=None,
    range=None,
    dozen=None,
    column=None,
    spin=413,
    rotor_rpm=24.1,
    direction="anticlockwise",
    raw="",
)

ANDAR_BAHAR = AndarBaharResult(  # the rules' example (docs/games/andar_bahar.md)
    round_id="t7-0000004",
    game_card="KS",
    andar=["AC", "8D", "JH", "KD"],
    bahar=["QS", "7C", "2H"],
    winner="andar",
    cards_dealt=7,
    bucket="6-10",
    first_andar_match=False,
    first_bahar_match=False,
    first_three="straight",
)
STUD = StudResult(
    round_id="t7-0000005",
    hands=[
        StudHand(cards=["AS", "KS", "QS", "JS", "TS"], category="royal_flush", ranks=[14]),
        StudHand(cards=["9C", "9D", "4H", "4S", "2C"], category="two_pair", ranks=[9, 4, 2]),
    ],
    dealer=StudHand(cards=["AH", "KD", "7C", "5S", "3D"], category="high_card", ranks=[14, 13, 7, 5, 3]),
    dealer_qualifies=True,
    outcomes=["win", "lose"],
)
SICBO = SicBoResult(
    round_id="t7-0000006",
    dice=[2, 5, 5],
    total=12,
    size="big",
    parity="even",
    triple=None,
    double=5,
    reshakes=1,
    frame="camera-frames/00000042-20261201T053130.120Z.png",
    frame_sha256="ab" * 32,
    source="camera",
    cycle_id="6.2",
    dice_in_frame=[5, 2, 5],
    raw="AT_REST 0007 6.2*31",
)

BLACKJACK_HAND = BlackjackHand(
    seat=3,
    hand=1,
    cards=["8S", "8D"],
    total=16,
    soft=False,
    blackjack=False,
    bust=False,
    doubled=False,
    split=True,
    surrendered=False,
    insured=False,
    outcome="lose",
)
BLACKJACK = BlackjackResult(
    round_id="t7-0000006",
    dealer=BlackjackDealer(cards=["TH", "7C"], total=17, soft=False, blackjack=False, bust=False),
    hands=[BLACKJACK_HAND, BLACKJACK_HAND.model_copy(update={"hand": 2, "outcome": "win", "total": 19})],
    round_in_shoe=12,
    last_round_of_shoe=False,
)
SINGLE_DECK_BLACKJACK = SingleDeckBlackjackResult(
    round_id="t7-0000007",
    dealer=BlackjackDealer(cards=["AS", "KD"], total=21, soft=True, blackjack=True, bust=False),
    hands=[BLACKJACK_HAND.model_copy(update={"seat": 1, "split": False, "insured": True})],
    round_in_shoe=1,
    last_round_of_shoe=False,
)
INFINITE_BLACKJACK = InfiniteBlackjackResult(
    round_id="t7-0000008",
    shoe_id="t7-shoe0002",
    initial=["5H", "4C"],
    sequence=["2D"],
    dealer_up="6S",
    hole_card="TD",
    dealer=BlackjackDealer(cards=["6S", "TD", "9C"], total=25, soft=False, blackjack=False, bust=True),
    dealer_bust_cards=3,
    round_in_shoe=41,
    last_round_of_shoe=True,
)

# At least one real sample per event type: a new type without one fails test_every_event_type_has_a_sample.
SAMPLES: dict[str, list[EventData]] = {
    "round.opened": [
        RoundOpened(game="baccarat", round_id="t7-0000001", round_number_in_shoe=1, betting_closes_at=None),
        RoundOpened(
            game="roulette",
            round_id="t7-0000002",
            round_number_in_shoe=None,
            betting_closes_at=iso_ms(T0 + 15),
        ),
    ],
    "round.betting_closed": [BettingClosed(round_id="t7-0000001", reason="first_card")],
    "card.dealt": [
        CardDealt(round_id="t7-0000001", card="TD", position="player", index=0, rescan=False, raw="C,TD"),
        CardDealt(
            round_id="t7-0000001",
            card="7D",
            position="banker",
            index=1,
            manual=True,
            raw='NOREAD 4\nmanual_card 7D {"confirmed_by": "desk-2", "entered_by": "dealer:d1"}',
            entered_by="dealer:d1",
            confirmed_by="desk-2",
        ),
    ],
    "card.manual_pending": [
        ManualCardPending(
            round_id="t7-0000001",
            ref="4",
            card="7D",
            entered_by="dealer:d1",
            prompt="Waiting for a supervisor to confirm 7D",
        )
    ],
    "card.manual_refused": [
        ManualCardRefused(
            round_id="t7-0000001",
            ref="4",
            card=None,
            entered_by="dealer:d1",
            by="desk-2",
            reason="not the card on the felt",
        )
    ],
    "card.rejected": [CardRejected(round_id=None, card=None, reason="unreadable line", raw="C,??")],
    "card.unreadable": [CardUnreadable(round_id="t7-0000001", ref="nr-1", prompt="re-scan the card")],
    "shoe.started": [ShoeStarted(shoe_id="shoe-0001", decks=8)],
    "shoe.cut_card": [CutCardSeen(round_id="t7-0000001", shoe_id="shoe-0001")],
    "round.result": [
        BACCARAT,
        ROULETTE,
        ROULETTE_ZERO,
        ANDAR_BAHAR,
        STUD,
        BLACKJACK,
        SINGLE_DECK_BLACKJACK,
        INFINITE_BLACKJACK,
        SICBO,
    ],
    "shoe.burn": [
        ShoeBurn(shoe_id="t7-shoe0002", shown="7H", to_burn=7, burned=3, done=False),
        ShoeBurn(shoe_id="t7-shoe0002", shown=None, to_burn=None, burned=0, done=False),
    ],
    "card.face_down": [CardFaceDown(round_id="t7-0000007", position="dealer", index=1)],
    "dealer.peek": [DealerPeek(round_id="t7-0000007", up_card="AS", blackjack=True)],
    "blackjack.decision": [
        BlackjackDecisionMade(round_id="t7-0000006", seat=3, hand=1, action="split", by="player", total=16),
        BlackjackDecisionMade(round_id="t7-0000008", seat=None, hand=None, action="deal_card", by="policy"),
    ],
    "blackjack.hand_settled": [
        BlackjackHandSettled(round_id="t7-0000006", seat=2, hand=1, outcome="lose", reason="bust with 24")
    ],
    "shuffle.started": [
        ShuffleStarted(shuffle_id="1700000000000-1", device="shuffler", decks=1, reason="round over")
    ],
    "shuffle.done": [
        ShuffleCompleted(
            shuffle_id="1700000000000-1",
            device="shuffler",
            decks=1,
            cards=52,
            raw="DONE 0004 1700000000000-1 1 52*3A",
        )
    ],
    "shuffle.failed": [
        ShuffleFailure(
            shuffle_id="1700000000000-2",
            device="shuffler",
            code="COUNT_MISMATCH",
            reason="shuffle 1700000000000-2 counted 51 cards, expected 52 (1 x 52)",
            expected=52,
            actual=51,
            raw="DONE 0005 1700000000000-2 1 51*3B",
        ),
        ShuffleFailure(shuffle_id="", device="shuffler", code="E01", reason="JAM", raw="ERR 0006 E01 JAM*12"),
    ],
    "round.closed": [RoundClosed(round_id="t7-0000001")],
    "round.paused": [
        RoundPaused(round_id="t7-0000001", reason="shoe offline", device="shoe", by="device", cause="device"),
        RoundPaused(round_id=None, reason="break", by="supervisor", cause="supervisor"),
        RoundPaused(
            round_id="t7-0000001",
            reason="Card 7D came out of procedure (betting is still open): put it aside",
            device="shoe",
            by="system",
            cause="out_of_procedure",
            card="7D",
            raw="CARD 0001 7D*66",
        ),
    ],
    "round.resumed": [RoundResumed(round_id="t7-0000001", by="supervisor")],
    "round.voided": [RoundVoided(round_id="t7-0000001", reason="misdeal", by="supervisor")],
    "card.set_aside": [
        CardSetAside(
            round_id="t7-0000001",
            card="7D",
            ref="0001",
            reason="betting is still open",
            by="supervisor-desk-2",
            decision="resume",
        ),
        CardSetAside(round_id=None, card=None, reason="a card", by="replay", decision="void"),
    ],
    "device.online": [DeviceChanged(device="shoe", status="online")],
    "device.offline": [DeviceChanged(device="shoe", status="offline", detail="port closed")],
    "device.fault": [DeviceChanged(device="wheel", status="fault", detail="ball sensor", code="E12")],
    "reading.rejected": [RawRejected(device="wheel", reason="bad checksum", raw="*X;9")],
    "reading.held": [ReadingHeld(device="shoe", reading="CardSeen", raw="RESCAN 0012 9H*33", held=1)],
    "dice.read": [
        ShakeReading(
            round_id="t7-0000006",
            cycle_id="6.1",
            attempt=1,
            values=None,
            reason="die 2: face tilted: cocked",
            frame="camera-frames/00000041-20261201T053120.020Z.png",
            frame_sha256="cd" * 32,
            dice=[
                {"value": None, "confidence": 0.0, "box": [300, 200, 61, 50], "reason": "face tilted: cocked"}
            ],
        )
    ],
}


def envelope(event: Event, sequence: int = 7, historical: bool = False) -> dict[str, Any]:
    """What the bus publishes: an Envelope around a journaled event, dumped to JSON types."""
    published = Envelope(
        id=f"{SOURCE}/{format_sequence(sequence)}",
        source=SOURCE,
        type=event.type,
        time=iso_ms(event.time),
        recordedtime=iso_ms(event.time + 0.004),
        sequence=format_sequence(sequence),
        subject=event.subject,
        historical=historical,
        data=event.data,
    )
    return json.loads(published.model_dump_json())


def validator(json_schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(json_schema)


def sample_envelopes() -> list[tuple[str, dict[str, Any]]]:
    return [
        (event_type, envelope(make_event(event_type, data, T0)))
        for event_type, samples in SAMPLES.items()
        for data in samples
    ]


# --- event schemas -----------------------------------------------------------------------------------


def test_every_event_type_has_a_schema_pinned_to_its_type() -> None:
    schemas = schema.all_event_schemas()
    assert list(schemas) == list(EVENT_MODELS)
    for event_type, event_schema in schemas.items():
        assert event_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert event_schema["properties"]["type"]["const"] == event_type
        assert event_schema["additionalProperties"] is False
        assert event_schema == schema.event_schema(event_type)


def test_unknown_event_type_is_refused_by_name() -> None:
    with pytest.raises(KeyError, match=r"unknown event type 'round\.exploded'"):
        schema.event_schema("round.exploded")


def every_schema() -> list[tuple[str, dict[str, Any]]]:
    documents = [(f"event {t}", s) for t, s in schema.all_event_schemas().items()]
    documents += [
        (f"commands/{n}", schema.command_schema("commands", n)) for n in {**TABLE_COMMANDS, **BUS_COMMANDS}
    ]
    documents += [(f"inputs/{n}", schema.command_schema("inputs", n)) for n in INPUTS]
    documents += [
        ("reply", schema.reply_schema()),
        ("status", schema.status_schema()),
        ("state", schema.state_schema()),
        ("device", schema.device_schema()),
    ]
    return documents


@pytest.mark.parametrize(("label", "json_schema"), every_schema(), ids=[label for label, _ in every_schema()])
def test_schema_is_valid_draft_2020_12(label: str, json_schema: dict[str, Any]) -> None:
    Draft202012Validator.check_schema(json_schema)
    assert json_schema["type"] == "object"


def test_data_schemas_follow_the_models_fields() -> None:
    """Derived, not copied: each data schema has exactly its model's fields and required set."""
    for event_type, event_schema in schema.all_event_schemas().items():
        model = EVENT_MODELS[event_type]
        data = event_schema["properties"]["data"]
        if model is RoundResult:
            branches = [ref["$ref"].rsplit("/", 1)[1] for ref in data["oneOf"]]
            assert branches == [result.__name__ for result in RESULT_MODELS.values()]
            assert data["discriminator"]["propertyName"] == "game"
            continue
        definition = event_schema["$defs"][data["$ref"].rsplit("/", 1)[1]]
        assert set(definition["properties"]) == set(model.model_fields)
        required = {name for name, field in model.model_fields.items() if field.is_required()}
        assert set(definition.get("required", [])) == required
    envelope_fields = set(schema.event_schema("round.closed")["properties"])
    assert envelope_fields == set(Envelope.model_fields)


def test_every_event_type_has_a_sample() -> None:
    assert set(SAMPLES) == set(EVENT_MODELS), "add a sample for the new event type to SAMPLES"


@pytest.mark.parametrize(
    ("event_type", "published"), sample_envelopes(), ids=[t for t, _ in sample_envelopes()]
)
def test_real_envelopes_validate(event_type: str, published: dict[str, Any]) -> None:
    assert list(validator(schema.event_schema(event_type)).iter_errors(published)) == []


def test_historical_replay_envelope_validates() -> None:
    published = envelope(make_event("round.result", BACCARAT, T0), sequence=123_456, historical=True)
    assert published["historical"] is True
    assert validator(schema.event_schema("round.result")).is_valid(published)


def broken(published: dict[str, Any], **data_changes: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(published))
    for key, value in data_changes.items():
        if value is ...:
            del copy["data"][key]
        else:
            copy["data"][key] = value
    return copy


BACCARAT_ENVELOPE = envelope(make_event("round.result", BACCARAT, T0))
ROULETTE_ENVELOPE = envelope(make_event("round.result", ROULETTE, T0))
PAUSED_ENVELOPE = envelope(make_event("round.paused", SAMPLES["round.paused"][0], T0))

ANDAR_BAHAR_ENVELOPE = envelope(make_event("round.result", ANDAR_BAHAR, T0))
STUD_ENVELOPE = envelope(make_event("round.result", STUD, T0))

BLACKJACK_ENVELOPE = envelope(make_event("round.result", BLACKJACK, T0))
INFINITE_ENVELOPE = envelope(make_event("round.result", INFINITE_BLACKJACK, T0))

BROKEN_DATA = [
    (
        "blackjack outcome tie",
        "round.result",
        broken(BLACKJACK_ENVELOPE, hands=[{**BLACKJACK_ENVELOPE["data"]["hands"][0], "outcome": "tie"}]),
    ),
    ("blackjack missing round_in_shoe", "round.result", broken(BLACKJACK_ENVELOPE, round_in_shoe=...)),
    (
        "blackjack hand 3",
        "round.result",
        broken(BLACKJACK_ENVELOPE, hands=[{**BLACKJACK_ENVELOPE["data"]["hands"][0], "hand": 3}]),
    ),
    (
        "infinite blackjack tagged single deck",
        "round.result",
        broken(INFINITE_ENVELOPE, game="single_deck_blackjack"),
    ),
    ("infinite blackjack missing hole card", "round.result", broken(INFINITE_ENVELOPE, hole_card=...)),
    ("andar bahar bucket out of range", "round.result", broken(ANDAR_BAHAR_ENVELOPE, bucket="50-52")),
    ("andar bahar 50 cards dealt", "round.result", broken(ANDAR_BAHAR_ENVELOPE, cards_dealt=50)),
    ("andar bahar winner tie", "round.result", broken(ANDAR_BAHAR_ENVELOPE, winner="tie")),
    ("stud outcome push", "round.result", broken(STUD_ENVELOPE, outcomes=["push", "lose"])),
    (
        "stud unknown category",
        "round.result",
        broken(STUD_ENVELOPE, dealer={"cards": [], "category": "five_of_a_kind", "ranks": [14]}),
    ),
    ("baccarat missing winner", "round.result", broken(BACCARAT_ENVELOPE, winner=...)),
    ("baccarat winner not a literal", "round.result", broken(BACCARAT_ENVELOPE, winner="dragon")),
    ("baccarat extra field", "round.result", broken(BACCARAT_ENVELOPE, bonus=1)),
    (
        "baccarat hand total not an int",
        "round.result",
        broken(BACCARAT_ENVELOPE, player={"cards": [], "total": "nine"}),
    ),
    ("baccarat data tagged roulette", "round.result", broken(BACCARAT_ENVELOPE, game="roulette")),
    ("unknown game", "round.result", broken(BACCARAT_ENVELOPE, game="sic_bo")),
    ("roulette number 37", "round.result", broken(ROULETTE_ENVELOPE, number=37)),
    ("roulette colour not a literal", "round.result", broken(ROULETTE_ENVELOPE, color="blue")),
    ("roulette missing spin", "round.result", broken(ROULETTE_ENVELOPE, spin=...)),
    ("paused missing by", "round.paused", broken(PAUSED_ENVELOPE, by=...)),
    ("paused extra field", "round.paused", broken(PAUSED_ENVELOPE, severity="high")),
    ("paused reason null", "round.paused", broken(PAUSED_ENVELOPE, reason=None)),
]


@pytest.mark.parametrize(("label", "event_type", "published"), BROKEN_DATA, ids=[b[0] for b in BROKEN_DATA])
def test_broken_data_is_rejected_by_schema_and_model_alike(
    label: str, event_type: str, published: Any
) -> None:
    assert not validator(schema.event_schema(event_type)).is_valid(published)
    with pytest.raises(ValidationError):
        TypeAdapter(EVENT_MODELS[event_type]).validate_python(published["data"])


def without(published: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in published.items() if k != key}


BROKEN_ENVELOPES = [
    ("missing data", "round.paused", without(PAUSED_ENVELOPE, "data")),
    ("missing sequence", "round.paused", without(PAUSED_ENVELOPE, "sequence")),
    ("extra envelope field", "round.paused", {**PAUSED_ENVELOPE, "priority": 1}),
    ("wrong specversion", "round.paused", {**PAUSED_ENVELOPE, "specversion": "0.3"}),
    ("result published as round.opened", "round.opened", BACCARAT_ENVELOPE),
    ("type does not match the schema's", "round.paused", {**PAUSED_ENVELOPE, "type": "round.resumed"}),
    ("paused data under round.resumed", "round.resumed", {**PAUSED_ENVELOPE, "type": "round.resumed"}),
    ("not an object", "round.paused", [PAUSED_ENVELOPE]),
]


@pytest.mark.parametrize(
    ("label", "event_type", "published"), BROKEN_ENVELOPES, ids=[b[0] for b in BROKEN_ENVELOPES]
)
def test_broken_envelopes_are_rejected(label: str, event_type: str, published: Any) -> None:
    assert not validator(schema.event_schema(event_type)).is_valid(published)


# --- commands and inputs -----------------------------------------------------------------------------

COMMAND_PAYLOADS: list[tuple[str, str, Any, bool]] = [
    ("commands", "pause", {}, True),
    ("commands", "pause", {"transaction": "t-1", "reason": "camera check"}, True),
    # the sender is the topic's user level: a payload naming one is refused, whoever it claims to be
    ("commands", "pause", {"transaction": "t-1", "by": "supervisor:desk2"}, False),
    ("commands", "pause", {"by": "system"}, False),
    ("commands", "pause", {"transaction": "t" * 64}, True),
    ("commands", "pause", {"transaction": "t" * 65}, False),
    ("commands", "pause", {"transaction": ""}, False),
    ("commands", "pause", {"transaction": 2**63 - 1}, True),
    ("commands", "pause", {"transaction": 2**63}, False),
    ("commands", "void_round", {"round_id": "r" * 65}, False),
    ("commands", "manual_card", {"card": "AS", "device": "s" * 65}, False),
    ("commands", "pause", {"transaction": 42}, True),
    ("commands", "pause", {"transaction": None}, True),
    ("commands", "pause", {"reason": ""}, False),
    ("commands", "pause", {"reason": "x" * 200}, True),
    ("commands", "pause", {"reason": "x" * 201}, False),
    ("commands", "pause", {"reason": None}, False),
    ("commands", "pause", {"by": None}, False),
    ("commands", "pause", {"by": 7}, False),
    ("commands", "pause", {"transaction": 1.5}, False),
    ("commands", "pause", {"transaction": [1]}, False),
    ("commands", "pause", {"transaction": {"id": 1}}, False),
    ("commands", "pause", {"urgent": True}, False),
    ("commands", "pause", [], False),
    ("commands", "pause", "pause", False),
    ("commands", "pause", None, False),
    ("commands", "resume", {"by": "panel"}, False),
    ("commands", "resume", {"reason": "done"}, False),
    ("commands", "void_round", {"reason": "misdeal", "round_id": "t7-0000001"}, True),
    ("commands", "void_round", {"round_id": None}, True),
    ("commands", "void_round", {"round_id": 1}, False),
    ("commands", "manual_card", {"card": "TD"}, True),
    ("commands", "manual_card", {"card": "AS", "device": "shoe2"}, True),
    ("commands", "manual_card", {}, False),
    ("commands", "manual_card", {"card": "T"}, False),
    ("commands", "manual_card", {"card": "10D"}, False),
    ("commands", "manual_card", {"card": 10}, False),
    ("commands", "new_shoe", {}, True),
    ("commands", "rebirth", {"transaction": "r1"}, True),
    ("commands", "replay_events", {"from_sequence": 1}, True),
    ("commands", "replay_events", {"from_sequence": 5, "to_sequence": 9}, True),
    ("commands", "replay_events", {"from_sequence": 3.5}, False),
    ("commands", "replay_events", {}, False),
    ("commands", "replay_events", {"from_sequence": 0}, False),
    ("commands", "replay_events", {"from_sequence": 1, "to_sequence": 0}, False),
    ("commands", "replay_events", {"from_sequence": 2.5}, False),
    ("commands", "replay_events", {"from_sequence": None}, False),
    ("inputs", "close_betting", {}, True),
    ("inputs", "close_betting", {"transaction": "re-9"}, True),
    ("inputs", "close_betting", {"seconds": 3}, False),
    ("inputs", "players_done", {"transaction": 9}, True),
    ("inputs", "players_done", {"hands": [1]}, False),
    ("inputs", "hit", {"seat": 3, "hand": 1}, True),
    ("inputs", "hit", {}, True),
    ("inputs", "stand", {"seat": 3, "hand": 2, "transaction": "d-7"}, True),
    ("inputs", "double", {"seat": 0}, False),
    ("inputs", "split", {"seat": 10}, False),
    ("inputs", "surrender", {"seat": 1, "hand": 3}, False),
    ("inputs", "hit", {"seat": "3"}, False),
    ("inputs", "hit", {"seat": 3, "card": "AS"}, False),
    ("inputs", "insurance", {"seat": 2, "take": False}, True),
    ("inputs", "insurance", {"seat": 2, "take": "yes"}, False),
    ("inputs", "insurance", {"seat": 2, "hand": 1}, False),
    ("inputs", "deal_card", {}, True),
    ("inputs", "deal_card", {"count": 2}, False),
    ("inputs", "burn_done", {"transaction": 5}, True),
]


@pytest.mark.parametrize(("kind", "name", "payload", "accepted"), COMMAND_PAYLOADS)
def test_command_schema_agrees_with_parse_command(kind: str, name: str, payload: Any, accepted: bool) -> None:
    schema_accepts = validator(schema.command_schema(kind, name)).is_valid(payload)
    try:
        parse_command(kind, name, payload, by="supervisor-desk-2")
        parser_accepts = True
    except CommandError:
        parser_accepts = False
    assert (schema_accepts, parser_accepts) == (accepted, accepted)


# parse_command is strict: it refuses what the schema refuses, never coercing "5" into 5.
LAX_ONLY = [
    ("commands", "replay_events", {"from_sequence": "5"}),
    ("commands", "replay_events", {"from_sequence": True}),
    ("commands", "pause", {"transaction": True}),
]


@pytest.mark.parametrize(("kind", "name", "payload"), LAX_ONLY)
def test_schema_does_not_promise_lax_coercions(kind: str, name: str, payload: Any) -> None:
    assert not validator(schema.command_schema(kind, name)).is_valid(payload)
    with pytest.raises(CommandError):
        parse_command(kind, name, payload, by="supervisor-desk-2")


def test_an_integral_float_is_the_integer_json_schema_says_it_is() -> None:
    # JSON Schema calls 3.0 an integer, so the parser takes it as 3 (a refusal made the property test below
    # fail whenever it drew 0.0); a fraction is still refused
    assert validator(schema.command_schema("commands", "replay_events")).is_valid({"from_sequence": 3.0})
    command = parse_command("commands", "replay_events", {"from_sequence": 3.0}, by="supervisor-desk-2")
    assert command.from_sequence == 3 and isinstance(command.from_sequence, int)  # type: ignore[attr-defined]
    with pytest.raises(CommandError):
        parse_command("commands", "replay_events", {"from_sequence": 3.5}, by="supervisor-desk-2")


def test_every_command_and_input_has_a_schema_with_transaction_and_without_by() -> None:
    # `by` is the authenticated sender (the topic's user level), set by the caller: never in a payload
    for kind, table in (("commands", {**TABLE_COMMANDS, **BUS_COMMANDS}), ("inputs", INPUTS)):
        for name, model in table.items():
            properties = schema.command_schema(kind, name)["properties"]
            assert "transaction" in properties and "by" not in properties
            assert set(properties) == set(model.model_fields) - {"by"}
    with pytest.raises(KeyError, match="unknown command 'explode'"):
        schema.command_schema("commands", "explode")
    with pytest.raises(KeyError, match="unknown kind"):
        schema.command_schema("orders", "pause")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 300) | st.floats(allow_nan=False) | st.text(max_size=70),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)
COMMAND_NAMES = [("commands", n) for n in {**TABLE_COMMANDS, **BUS_COMMANDS}] + [
    ("inputs", n) for n in INPUTS
]
FIELD_NAMES = sorted(
    {name for model in [*TABLE_COMMANDS.values(), *BUS_COMMANDS.values()] for name in model.model_fields}
)


@settings(max_examples=300, deadline=None)
@given(
    target=st.sampled_from(COMMAND_NAMES),
    payload=st.dictionaries(st.sampled_from([*FIELD_NAMES, "extra"]), JSON_VALUES, max_size=4),
)
def test_a_payload_the_schema_accepts_is_accepted_by_parse_command(
    target: tuple[str, str], payload: dict[str, Any]
) -> None:
    kind, name = target
    if validator(schema.command_schema(kind, name)).is_valid(payload):
        parse_command(kind, name, payload, by="rules-engine")  # CommandError if the schema promised too much


# --- retained topics and replies ---------------------------------------------------------------------


def test_reply_schema() -> None:
    reply = validator(schema.reply_schema())
    assert reply.is_valid({"transaction": "t-1", "status": "ok", "error": None, "data": {"state": {}}})
    assert reply.is_valid({"transaction": 5, "status": "error", "error": "invalid pause: reason: too long"})
    assert reply.is_valid({"status": "ok"})
    assert not reply.is_valid({"transaction": "t-1", "status": "maybe"})
    assert not reply.is_valid({"transaction": "t-1"})
    assert not reply.is_valid({"status": "ok", "extra": 1})
    # a reply echoes whatever transaction a command may carry, and nothing else
    transaction = schema.reply_schema()["properties"]["transaction"]["anyOf"]
    assert transaction == Command.model_json_schema()["properties"]["transaction"]["anyOf"]


def test_status_schema() -> None:
    status = validator(schema.status_schema())
    assert status.is_valid({"status": "online", "boot": 3})
    assert status.is_valid({"status": "offline", "boot": 3, "since": iso_ms(T0)})
    assert not status.is_valid({"status": "online"})
    assert not status.is_valid({"status": "fault", "boot": 3})
    assert not status.is_valid({"status": "online", "boot": -1})
    assert not status.is_valid({"status": "online", "boot": "3"})
    refused = {"status": "online", "boot": 3, "since": iso_ms(T0), "delivery": "refused"}
    refused |= {"delivery_reason": "Not authorized", "delivery_code": 135, "refused_sequence": 7}
    assert status.is_valid({**refused, "refused_since": iso_ms(T0)})
    assert not status.is_valid({**refused, "delivery": "lost"})


def test_device_schema_uses_the_event_statuses() -> None:
    device = validator(schema.device_schema())
    assert device.is_valid({"status": "fault", "detail": "ball sensor", "since": iso_ms(T0), "code": "E12"})
    assert device.is_valid({"status": "offline", "detail": "not connected yet", "since": None, "state": None})
    assert not device.is_valid({"status": "online", "detail": "ok"})
    assert not device.is_valid({"status": "broken", "detail": "", "since": None})
    device_statuses = schema.device_schema()["properties"]["status"]["enum"]
    assert device_statuses == list(typing.get_args(DeviceChanged.model_fields["status"].annotation))


def test_state_schema_documents_the_snapshot_and_stays_permissive() -> None:
    state_schema = schema.state_schema()
    documented = set(state_schema["properties"])
    assert {"game", "phase", "round_id", "round_number_in_shoe", "paused", "pause", "devices"} <= documented
    assert {"game_state", "last_sequence", "prompt"} <= documented
    state = validator(state_schema)
    snapshot = {
        "table_id": "t7",
        "game": "baccarat",
        "phase": "paused",
        "round_id": "t7-0000001",
        "round_number_in_shoe": 1,
        "paused": True,
        "pause": {"reason": "shoe offline", "by": "device", "device": "shoe", "since": iso_ms(T0)},
        "prompt": "reconnect the shoe",
        "devices": {
            "shoe": {"status": "offline", "detail": "port closed", "since": iso_ms(T0), "code": None}
        },
        "game_state": {"cards": {"player": ["9H"], "banker": []}},
        "last_sequence": 41,
        "waiting_for_devices": [],
        "round_phase": "in_play",
        "rejected": {"bad checksum": 2},
        "a_future_key": {"anything": True},
    }
    assert list(state.iter_errors(snapshot)) == []
    assert state.is_valid({})
    assert not state.is_valid({"paused": "yes"})
    assert not state.is_valid({"last_sequence": format_sequence(41)})
    assert not state.is_valid({"devices": {"shoe": {"status": "lost", "detail": "", "since": None}}})


# --- AsyncAPI ----------------------------------------------------------------------------------------


def resolve_pointer(document: Any, ref: str) -> Any:
    """Follow a local `#/a/b` reference (RFC 6901) inside `document`; KeyError if it leads nowhere."""
    assert ref.startswith("#/"), f"not a local reference: {ref}"
    node = document
    for token in ref[2:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, list):
            node = node[int(token)]
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            raise KeyError(f"{ref} does not resolve (stuck at {token!r})")
    return node


def all_refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [ref for value in node.values() for ref in all_refs(value)]
    if isinstance(node, list):
        return [ref for item in node for ref in all_refs(item)]
    return []


@pytest.fixture(scope="module")
def asyncapi() -> dict[str, Any]:
    return schema.asyncapi_document()


def test_asyncapi_header(asyncapi: dict[str, Any]) -> None:
    assert asyncapi["asyncapi"] == "3.0.0"
    assert asyncapi["defaultContentType"] == "application/json"
    assert asyncapi["info"]["title"] and asyncapi["info"]["version"]
    json.dumps(asyncapi)  # plain JSON all the way down


def test_every_ref_in_the_asyncapi_document_resolves(asyncapi: dict[str, Any]) -> None:
    refs = all_refs(asyncapi)
    assert len(refs) > 100
    for ref in refs:
        resolve_pointer(asyncapi, ref)
    with pytest.raises(KeyError):
        resolve_pointer(asyncapi, "#/components/schemas/NoSuchModel")


def test_asyncapi_channels_cover_the_whole_contract(asyncapi: dict[str, Any]) -> None:
    root = "studio/{studio_id}/table/{table_id}"
    addresses = {channel["address"] for channel in asyncapi["channels"].values()}
    expected = {f"{root}/status", f"{root}/state", f"{root}/devices/{{device}}", f"{root}/replies/{{name}}"}
    expected |= {f"{root}/events/{event_type}" for event_type in EVENT_MODELS}
    expected |= {f"{root}/commands/{name}/{{user}}" for name in {**TABLE_COMMANDS, **BUS_COMMANDS}}
    expected |= {f"{root}/inputs/{name}/{{user}}" for name in INPUTS}
    assert addresses == expected


def test_asyncapi_channel_parameters_match_addresses(asyncapi: dict[str, Any]) -> None:
    for channel_id, channel in asyncapi["channels"].items():
        placeholders = set(re.findall(r"\{([^{}]+)\}", channel["address"]))
        assert set(channel.get("parameters", {})) == placeholders, channel_id
    names = asyncapi["channels"]["replies"]["parameters"]["name"]["enum"]
    assert names == sorted({*TABLE_COMMANDS, *BUS_COMMANDS, *INPUTS})


# docs/mqtt-contract.md's topic table: retained or not, by the topic level under the root
RETAINED = {"status": True, "state": True, "devices": True}
RETAINED |= {"events": False, "commands": False, "inputs": False, "replies": False}


def test_asyncapi_operations_directions_qos_and_retain(asyncapi: dict[str, Any]) -> None:
    channels_with_operation = set()
    for operation_id, operation in asyncapi["operations"].items():
        channel = resolve_pointer(asyncapi, operation["channel"]["$ref"])
        channel_id = operation["channel"]["$ref"].removeprefix("#/channels/")
        channels_with_operation.add(channel_id)
        level = channel["address"].split("/")[4]  # studio/<s>/table/<t>/<level>/...
        inbound = level in ("commands", "inputs")
        assert operation["action"] == ("receive" if inbound else "send"), operation_id
        binding = operation["bindings"]["mqtt"]
        assert (binding["qos"], binding["retain"]) == (1, RETAINED[level]), operation_id
        # AsyncAPI 3: an operation's messages are a subset of its channel's
        for message_ref in operation["messages"]:
            assert message_ref["$ref"].startswith(f"#/channels/{channel_id}/messages/")
            resolve_pointer(asyncapi, message_ref["$ref"])
        if inbound:
            assert operation["reply"]["channel"] == {"$ref": "#/channels/replies"}
        else:
            assert "reply" not in operation
    assert channels_with_operation == set(asyncapi["channels"])


def test_asyncapi_component_schemas_are_asyncapi_schema_objects(asyncapi: dict[str, Any]) -> None:
    """The AsyncAPI Schema Object is a draft-07 superset whose `discriminator` is a string."""
    schemas = asyncapi["components"]["schemas"]
    for name, component in schemas.items():
        assert re.fullmatch(r"[\w.\-]+", name)
        Draft7Validator.check_schema(component)
        assert all(not isinstance(node.get("discriminator"), dict) for node in walk_dicts(component)), name
    for event_type in EVENT_MODELS:
        assert schema.event_model_name(event_type) in schemas


def walk_dicts(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [node, *(d for value in node.values() for d in walk_dicts(value))]
    if isinstance(node, list):
        return [d for item in node for d in walk_dicts(item)]
    return []


def message_payload_validator(asyncapi: dict[str, Any], message_id: str) -> Draft202012Validator:
    payload_ref = asyncapi["components"]["messages"][message_id]["payload"]["$ref"]
    # refs are `#/components/schemas/...`: validate with the document's components as the root
    return Draft202012Validator({"$ref": payload_ref, "components": asyncapi["components"]})


def test_asyncapi_messages_validate_what_is_published(asyncapi: dict[str, Any]) -> None:
    for event_type, published in sample_envelopes():
        assert message_payload_validator(asyncapi, f"event.{event_type}").is_valid(published), event_type
    result = message_payload_validator(asyncapi, "event.round.result")
    assert not result.is_valid(broken(BACCARAT_ENVELOPE, winner="dragon"))
    assert not result.is_valid(broken(ROULETTE_ENVELOPE, extra=1))
    pause = message_payload_validator(asyncapi, "command.pause")
    assert pause.is_valid({"transaction": "t-1", "reason": "camera check"})
    assert not pause.is_valid({"reason": ""})


def test_asyncapi_for_one_table_has_concrete_topics() -> None:
    document = schema.asyncapi_document("s1", "t7")
    status = document["channels"]["status"]
    assert status["address"] == "studio/s1/table/t7/status"
    assert "parameters" not in status
    assert set(document["channels"]["devices"]["parameters"]) == {"device"}
    assert document["servers"]["broker"]["bindings"]["mqtt"]["lastWill"] == {
        "topic": "studio/s1/table/t7/status",
        "qos": 1,
        "retain": True,
    }


# --- CLI ---------------------------------------------------------------------------------------------


def test_cli_prints_the_asyncapi_document(capsys: pytest.CaptureFixture[str]) -> None:
    assert schema.main(["--asyncapi"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == schema.asyncapi_document()


def test_cli_prints_one_event_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert schema.main(["--event", "round.result"]) == 0
    assert json.loads(capsys.readouterr().out) == schema.event_schema("round.result")


def test_cli_prints_all_event_schemas_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert schema.main([]) == 0
    assert json.loads(capsys.readouterr().out) == schema.all_event_schemas()


def test_cli_refuses_an_unknown_event_type(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        schema.main(["--event", "round.exploded"])
    assert exited.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_cli_writes_one_file_per_event_type_and_asyncapi(tmp_path: Path) -> None:
    out = tmp_path / "contract"
    assert schema.main(["--out", str(out), "--studio-id", "s1", "--table-id", "t7"]) == 0
    written = {path.name for path in out.iterdir()}
    assert written == {f"{event_type}.schema.json" for event_type in EVENT_MODELS} | {"asyncapi.json"}
    for event_type in EVENT_MODELS:
        on_disk = json.loads((out / f"{event_type}.schema.json").read_text(encoding="utf-8"))
        assert on_disk == schema.event_schema(event_type)
    asyncapi = json.loads((out / "asyncapi.json").read_text(encoding="utf-8"))
    assert asyncapi == schema.asyncapi_document("s1", "t7")


def test_cli_writes_only_the_selected_document(tmp_path: Path) -> None:
    assert schema.main(["--event", "card.dealt", "--out", str(tmp_path)]) == 0
    assert [path.name for path in tmp_path.iterdir()] == ["card.dealt.schema.json"]


def test_register_adds_the_schema_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="tablectl")
    schema.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["schema", "--event", "round.paused"])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "RoundPausedEvent"
