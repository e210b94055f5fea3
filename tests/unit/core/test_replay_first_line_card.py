"""A capture whose first line is a card (a vendor's log cut anywhere starts like this) replays exactly.

The card arrives together with the device coming online. The table must first do what coming online makes
due — open the round it was waiting to open — and only then hand the card to the game: handled before, the
card was rejected ("no round is open yet") and every later card landed one place off. Each capture here is
judged by the game's independent reference, and against the same capture with a heartbeat line in front."""

from __future__ import annotations

import random
from typing import Any

import pytest

from controller.events import Envelope
from controller.replay import replay, replay_config
from controller.testing.andar_bahar_reference import reference_round
from controller.testing.baccarat_reference import as_expected, from_reference
from controller.testing.blackjack_capture import (
    boxed_story,
    record_infinite,
    record_single_deck,
    reference_story,
)
from controller.testing.card_table import ALL_CODES
from controller.testing.shoe_capture import record_shoes
from drivers.capture import CaptureRecord
from drivers.line.framing import encode_line
from drivers.shoe.simulator import ShoeFaults

pytestmark = pytest.mark.unit

FAULTS = ShoeFaults(noread_rate=0.04, bad_checksum_rate=0.05, noise_rate=0.05, duplicate_rate=0.05)
HEARTBEAT = encode_line("HB 1")  # uptime 1 s


def starting_with_a_card(records: list[CaptureRecord]) -> list[CaptureRecord]:
    """The capture from its first card line on, as a log cut just before it: no hello, heartbeat or status
    line before the card."""
    for i, record in enumerate(records):
        if record.direction != "rx":
            continue
        starts = [record.data.find(word) for word in (b"CARD ", b"NOREAD ")]
        found = [start for start in starts if start >= 0]
        if found:
            first = CaptureRecord(t=record.t, direction="rx", data=record.data[min(found) :])
            return [first, *records[i + 1 :]]
    raise AssertionError("the capture has no card")


def with_a_heartbeat_first(records: list[CaptureRecord]) -> list[CaptureRecord]:
    first = records[0]
    assert first.t is not None
    return [CaptureRecord(t=first.t - 0.5, direction="rx", data=HEARTBEAT), *records]


def replayed(game: str, records: list[CaptureRecord]) -> list[Envelope]:
    envelopes = list(replay(replay_config(game, "shoe-line"), records))
    types = [e.type for e in envelopes]
    # nothing was lost: no card refused, no pause, no void
    assert not {"card.rejected", "round.paused", "round.voided", "card.set_aside"} & set(types), types[:20]
    return envelopes


def results(envelopes: list[Envelope]) -> list[dict[str, Any]]:
    return [e.data for e in envelopes if e.type == "round.result"]


def test_a_baccarat_shoe_whose_capture_starts_with_a_card() -> None:
    records, expected = record_shoes(1, seed=20261203, faults=FAULTS)
    cut = starting_with_a_card(records)
    assert cut[0].data.startswith((b"CARD ", b"NOREAD "))
    got = [as_expected(r) for r in results(replayed("baccarat", cut))]
    assert got == [from_reference(r) for r in expected]
    assert len(got) > 50
    assert got == [as_expected(r) for r in results(replayed("baccarat", with_a_heartbeat_first(cut)))]


def test_single_deck_blackjack_whose_capture_starts_with_a_card() -> None:
    records, expected = record_single_deck(120, seed=99, faults=FAULTS)
    cut = starting_with_a_card(records)
    story = boxed_story(replayed("single_deck_blackjack", cut))
    assert story == reference_story(expected)
    assert story == boxed_story(replayed("single_deck_blackjack", with_a_heartbeat_first(cut)))


def test_infinite_blackjack_whose_capture_starts_with_a_card() -> None:
    # the first card is the shoe's burn card: lost, the next card was taken as the burn card
    records, shoes = record_infinite(1, seed=2025, faults=FAULTS)
    cut = starting_with_a_card(records)
    envelopes = replayed("infinite_blackjack", cut)
    burns = [e.data for e in envelopes if e.type == "shoe.burn"]
    assert burns and burns[0]["shown"] == shoes[0].shown
    got = [(tuple(r["initial"]), tuple(r["dealer"]["cards"])) for r in results(envelopes)]
    want = [(tuple(r.initial), tuple(r.dealer)) for shoe in shoes for r in shoe.rounds]
    assert got == want and len(got) > 10
    again = results(replayed("infinite_blackjack", with_a_heartbeat_first(cut)))
    assert got == [(tuple(r["initial"]), tuple(r["dealer"]["cards"])) for r in again]


def andar_bahar_capture(rounds: int, seed: int) -> tuple[list[CaptureRecord], list[dict[str, Any]]]:
    """Andar Bahar rounds dealt by the book from fresh decks, as the shoe's lines: the game card first."""
    rng = random.Random(seed)
    records: list[CaptureRecord] = []
    expected: list[dict[str, Any]] = []
    t, seq = 1_790_000_000.0, 0
    for _ in range(rounds):
        deck = list(ALL_CODES)
        rng.shuffle(deck)
        reference = reference_round(deck)
        expected.append(reference)
        for code in deck[: 1 + reference["cards_dealt"]]:
            seq += 1
            records.append(CaptureRecord(t=t, direction="rx", data=encode_line(f"CARD {seq:04d} {code}")))
            t += 0.5
        for _ in range(5):  # the next round's deck: the shoe's heartbeat meanwhile
            t += 1.0
            records.append(CaptureRecord(t=t, direction="rx", data=HEARTBEAT))
    return records, expected


def test_andar_bahar_whose_capture_starts_with_the_game_card() -> None:
    # the first line is the game card: lost, the joker and every round of the capture were wrong
    records, expected = andar_bahar_capture(12, seed=5)
    assert records[0].data.startswith(b"CARD ")
    fields = [k for k in expected[0] if k not in ("first_three",)]
    got = [{k: r[k] for k in fields} for r in results(replayed("andar_bahar", records))]
    assert got == [{k: r[k] for k in fields} for r in expected]
    with_heartbeat = results(replayed("andar_bahar", with_a_heartbeat_first(records)))
    assert got == [{k: r[k] for k in fields} for r in with_heartbeat]


@pytest.mark.parametrize("game", ["baccarat", "andar_bahar"])
def test_the_first_card_is_dealt_into_the_round_it_opened(game: str) -> None:
    line = encode_line("CARD 0001 7D")
    envelopes = list(
        replay(replay_config(game, "shoe-line"), [CaptureRecord(t=1.0e9, direction="rx", data=line)])
    )
    types = [e.type for e in envelopes]
    assert types.index("round.opened") < types.index("card.dealt")
    (dealt,) = [e.data for e in envelopes if e.type == "card.dealt"]
    assert dealt["card"] == "7D"
