"""Replay of blackjack captures: captured shoe traffic (noise, bad checksums, duplicated lines, no-reads and
re-scans, cut cards, Infinite's burns, Single-deck's fresh decks) through the live session, runtime and flow
gives exactly the rounds the independent reference deals — card for card, decisions included (the replay
policy: the disconnect policy decides every hand at once)."""

from __future__ import annotations

import pytest

from controller.events import Envelope
from controller.replay import replay, replay_config
from controller.testing.blackjack_capture import (
    boxed_story,
    by_round,
    record_infinite,
    record_live,
    record_single_deck,
    reference_story,
)
from controller.testing.blackjack_reference import names_card
from drivers.shoe.simulator import ShoeFaults

pytestmark = pytest.mark.unit

FAULTS = ShoeFaults(noread_rate=0.04, bad_checksum_rate=0.05, noise_rate=0.05, duplicate_rate=0.05)


def assert_clean(envelopes: list[Envelope], rx: bytes) -> None:
    assert rx.count(b"NOREAD") >= 5 and rx.count(b"RESCAN") >= 5, "the capture must exercise re-scans"
    types = [e.type for e in envelopes]
    assert "card.rejected" not in types and "round.voided" not in types and "round.paused" not in types
    assert [int(e.sequence) for e in envelopes] == list(range(1, len(envelopes) + 1))
    assert any(e.type == "card.dealt" and e.data["rescan"] for e in envelopes)


def test_live_blackjack_replay_of_two_faulty_shoes_matches_the_reference() -> None:
    records, expected = record_live(2, seed=4711, faults=FAULTS)
    envelopes = list(replay(replay_config("blackjack", "shoe-line"), records))
    rx = b"".join(r.data for r in records if r.direction == "rx")
    assert_clean(envelopes, rx)
    story = boxed_story(envelopes)
    assert story == reference_story(expected)
    assert len(story) > 20
    # the variety the rules have: splits, doubles, blackjacks, dealer busts, the cut-card rounds
    hands = [hand for r in expected for hand in r.hands]
    assert any(h.split for h in hands) and any(h.doubled for h in hands)
    outcomes = {o for r in expected for o in r.outcomes}
    assert {"blackjack", "win", "push", "lose"} <= outcomes
    results = [e.data for e in envelopes if e.type == "round.result"]
    assert sum(r["last_round_of_shoe"] for r in results) == 2
    assert [r["round_in_shoe"] for r in results].count(1) == 2
    # Live deals no hole card: nothing is face down, nothing is peeked
    assert not any(e.type in ("card.face_down", "dealer.peek") for e in envelopes)


def test_single_deck_blackjack_replay_matches_the_reference() -> None:
    records, expected = record_single_deck(120, seed=99, faults=FAULTS)
    envelopes = list(replay(replay_config("single_deck_blackjack", "shoe-line"), records))
    rx = b"".join(r.data for r in records if r.direction == "rx")
    assert_clean(envelopes, rx)
    assert boxed_story(envelopes) == reference_story(expected)
    # a fresh deck every round: every round is the first of its deck
    results = [e.data for e in envelopes if e.type == "round.result"]
    assert {r["round_in_shoe"] for r in results} == {1}
    peeks = [e for e in envelopes if e.type == "dealer.peek"]
    assert peeks and any(p.data["blackjack"] for p in peeks) is any(
        len(r.dealer) == 2 and r.dealer[0][0] in "ATJQK" and r.decisions == [] for r in expected
    )
    assert_hole_cards_hidden_until_revealed(envelopes)


@pytest.mark.parametrize("seed", [2024])
def test_infinite_blackjack_replay_of_three_shoes_matches_the_reference(seed: int) -> None:
    records, shoes = record_infinite(3, seed=seed, faults=FAULTS)
    envelopes = list(replay(replay_config("infinite_blackjack", "shoe-line"), records))
    rx = b"".join(r.data for r in records if r.direction == "rx")
    assert_clean(envelopes, rx)
    decisions = by_round(envelopes, "blackjack.decision")
    results = [e for e in envelopes if e.type == "round.result"]
    got = [
        (
            tuple(e.data["initial"]),
            tuple(e.data["sequence"]),
            tuple(e.data["dealer"]["cards"]),
            tuple(d["action"] for d in decisions[e.subject]),
            e.data["round_in_shoe"],
            e.data["last_round_of_shoe"],
            e.data["dealer_bust_cards"],
        )
        for e in results
    ]
    want = [
        (
            tuple(r.initial),
            tuple(r.sequence),
            tuple(r.dealer),
            tuple(r.decisions),
            r.round_in_shoe,
            r.last_of_shoe,
            len(r.dealer) if _bust(r.dealer) else None,
        )
        for shoe in shoes
        for r in shoe.rounds
    ]
    assert got == want and len(got) > 100
    # every shoe began with its burn: the shown card, its count of face-down cards, never their identity
    burns = [e.data for e in envelopes if e.type == "shoe.burn" and e.data["done"]]
    assert [(b["shown"], b["burned"]) for b in burns] == [(s.shown, s.burned) for s in shoes]
    assert [e.type for e in envelopes].count("shoe.cut_card") == 3
    assert_hole_cards_hidden_until_revealed(envelopes)


def _bust(cards: list[str]) -> bool:
    from controller.testing.blackjack_reference import total

    return total(cards)[0] > 21


def assert_hole_cards_hidden_until_revealed(envelopes: list[Envelope]) -> None:
    """Between a round's `card.face_down` and the hole card's `card.dealt`, no byte of any event names it."""
    hole_of: dict[str, str] = {}
    for envelope in envelopes:
        if (
            envelope.type == "card.dealt"
            and envelope.data["position"] == "dealer"
            and envelope.data["index"] == 1
        ):
            hole_of[str(envelope.subject)] = envelope.data["card"]
    hidden: str | None = None
    for envelope in envelopes:
        if envelope.type == "card.face_down":
            hidden = hole_of.get(str(envelope.subject))
            assert hidden is not None
            continue
        if hidden is None:
            continue
        if (
            envelope.type == "card.dealt"
            and envelope.data["position"] == "dealer"
            and envelope.data["index"] == 1
        ):
            hidden = None
            continue
        data = dict(envelope.data)
        if envelope.type == "card.dealt" and data["card"] == hidden:
            data.pop("card"), data.pop("raw")  # another copy of the same card, dealt face up (8 decks)
        published = envelope.model_copy(update={"data": data}).model_dump_json()
        assert not names_card(published, hidden), envelope
