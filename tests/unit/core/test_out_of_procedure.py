"""A card out of procedure pauses the table; the supervisor sets it aside (resume) or voids the round.

The runtime with the real baccarat and single-deck blackjack flows, on a clock the test moves. Whatever the
reason the procedure cannot take a card that left the shoe, nothing is dealt or published after it but the
pause, until a supervisor decides; the card is then set aside (`card.set_aside`, by whom) and the round goes
on as if it had never come out."""

from __future__ import annotations

import json
import random

import pytest

from controller.cards import full_deck
from controller.commands import ManualCard, Pause, Resume, VoidRound, parse_command
from controller.games import game_spec, make_flow
from controller.replay import replay, replay_config
from controller.runtime import Step, TableCore
from controller.testing.baccarat_reference import as_expected, expected_rounds, from_reference
from drivers.capture import CaptureRecord
from drivers.line.framing import encode_line
from drivers.readings import CardSeen, CardUnread, DeviceOnline
from tests.helpers.core_steps import card, make_core, online, open_and_close_betting, types

pytestmark = pytest.mark.unit


def paused_data(step: Step) -> dict:
    (paused,) = [e.data for e in step.events if e.type == "round.paused"]
    return paused


def test_a_card_while_betting_is_open_pauses_and_resume_sets_it_aside() -> None:
    core = make_core()
    online(core)
    assert "round.opened" in types(core.on_tick(0.0))
    step = core.on_reading(card("7D", 2.0), 2.0)
    assert types(step) == ["round.paused"]  # not dealt, not rejected while play goes on
    paused = paused_data(step)
    assert paused["cause"] == "out_of_procedure" and paused["card"] == "7D" and paused["raw"] == "CARD 7D"
    assert "betting is still open" in paused["reason"] and "put it aside" in paused["reason"]
    assert core.state()["pause"]["cause"] == "out_of_procedure"
    assert "call the supervisor" in core.state()["prompt"]
    assert core.state()["rejected"] == {"out of procedure": 1}
    # the round is not voided behind the supervisor's back, and the clock of the round stands still
    assert core.flow.rounds.in_round and core.next_deadline() is None
    assert core.on_tick(50.0).events == []
    # everything the shoe reports meanwhile is held, not dealt
    assert types(core.on_reading(card("8S", 10.0), 10.0)) == ["reading.held"]
    step, _ = core.on_command(Resume(by="supervisor-desk-2"), 20.0)
    aside = [e.data for e in step.events if e.type == "card.set_aside"]
    assert aside == [
        {
            "round_id": "t1-0000001",
            "card": "7D",
            "ref": "",
            "rescan": False,
            "reason": "betting is still open: deal only after betting closes",
            "by": "supervisor-desk-2",
            "decision": "resume",
        }
    ]
    # the held 8S is the next thing the shoe reported: still during betting, so it pauses in its turn
    assert types(step)[:2] == ["card.set_aside", "round.resumed"]
    assert paused_data(step)["card"] == "8S"
    step, _ = core.on_command(Resume(by="supervisor-desk-2"), 21.0)
    # the betting window got the 19 s of the pauses back: 5 s from 0.0, less the 2 s before the first
    assert core.flow.rounds.betting_deadline == pytest.approx(5.0 + 18.0 + 1.0)
    assert "card.dealt" not in types(step)


def test_void_sets_the_card_aside_and_cancels_the_round() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    core.on_reading(card("2C", now + 1), now + 1)
    core.on_reading(card("3S", now + 2), now + 2)
    core.on_reading(card("4H", now + 3), now + 3)
    core.on_reading(card("5D", now + 4), now + 4)  # the hand: Player 2C 4H (6), Banker 3S 5D (8): stands
    assert core.flow.rounds.round_id is None or not core.flow.rounds.in_round
    # between rounds (the next opens 1 s after this one closed): no round is open
    step = core.on_reading(card("9D", now + 4.5), now + 4.5)
    assert types(step) == ["round.paused"] and paused_data(step)["round_id"] is None
    step, _ = core.on_command(Resume(by="sup"), now + 6)
    (aside,) = [e.data for e in step.events if e.type == "card.set_aside"]
    assert aside["round_id"] is None and aside["card"] == "9D" and aside["decision"] == "resume"


def test_a_card_during_play_that_cannot_be_taken_void_round() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    core.on_reading(card("2C", now + 1), now + 1)
    step = core.on_reading(CardUnread(device="shoe", time=now + 2, ref="0002", raw="NOREAD 0002"), now + 2)
    assert types(step) == ["card.unreadable"]
    step = core.on_reading(card("5D", now + 3), now + 3)  # another card before the unread one's re-scan
    assert types(step) == ["round.paused"] and "re-scan the unread card first" in paused_data(step)["reason"]
    step, _ = core.on_command(VoidRound(by="sup", reason="misdeal"), now + 4)
    assert types(step) == ["round.voided", "card.set_aside", "round.resumed"]
    assert step.events[1].data["decision"] == "void" and step.events[1].data["card"] == "5D"
    assert not core.paused


def test_a_rescan_nobody_waits_for_is_held_and_so_is_its_repeat_after_set_aside() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    rescan = CardSeen(
        device="shoe", time=now + 1, code="6H", ref="0007", rescan_of="0007", raw="RESCAN 0007 6H"
    )
    step = core.on_reading(rescan, now + 1)
    assert paused_data(step)["cause"] == "out_of_procedure"
    step, _ = core.on_command(Resume(by="sup"), now + 2)
    (aside,) = [e.data for e in step.events if e.type == "card.set_aside"]
    assert aside["rescan"] is True and aside["ref"] == "0007"
    again = CardSeen(
        device="shoe", time=now + 3, code="6H", ref="0007", rescan_of="0007", raw="RESCAN 0007 6H"
    )
    # never only rejected while play goes on: a reader that guesses re-scans (a barcode scanner) may be
    # naming a card just dealt in procedure, which would then be missing from the result
    step = core.on_reading(again, now + 3)
    assert types(step) == ["round.paused"]
    paused = paused_data(step)
    assert paused["cause"] == "out_of_procedure" and paused["card"] == "6H"
    assert paused["reason"] == (
        "Card 6H (a re-scan) came out of procedure (a re-scan of card 0007, which was set aside already): "
        "put it aside"
    )
    step, _ = core.on_command(Resume(by="sup"), now + 4)
    (aside,) = [e.data for e in step.events if e.type == "card.set_aside"]
    assert aside["rescan"] is True and aside["ref"] == "0007" and aside["card"] == "6H"
    assert core.flow.set_aside_refs == ["0007"]  # kept once


def test_a_misread_rescan_of_a_card_set_aside_pauses_again() -> None:
    core = make_core()
    online(core)
    core.on_tick(0.0)
    # an unread card while betting is open: held, and set aside by the supervisor
    step = core.on_reading(CardUnread(device="shoe", time=1.0, ref="0003", raw="NOREAD 0003"), 1.0)
    assert paused_data(step)["cause"] == "out_of_procedure"
    step, _ = core.on_command(Resume(by="sup"), 2.0)
    (aside,) = [e.data for e in step.events if e.type == "card.set_aside"]
    assert aside["ref"] == "0003" and aside["rescan"] is False
    # the dealer passes that card over the reader again, and the re-scan misreads: out of procedure (the
    # card was to be put aside), held for the supervisor like the first reading, never only rejected
    misread = CardUnread(device="shoe", time=3.0, ref="0003", rescan_of="0003", raw="RESCAN 0003 0X")
    step = core.on_reading(misread, 3.0)
    assert types(step) == ["round.paused"]
    paused = paused_data(step)
    assert paused["cause"] == "out_of_procedure"
    assert "(a re-scan of card 0003, which was set aside already)" in paused["reason"]
    step, _ = core.on_command(Resume(by="sup"), 4.0)
    (aside,) = [e.data for e in step.events if e.type == "card.set_aside"]
    assert aside["ref"] == "0003" and aside["rescan"] is True


def test_a_misread_rescan_held_over_a_void_is_set_aside_as_a_rescan() -> None:
    core = make_core()
    now = open_and_close_betting(core)
    step = core.on_reading(CardUnread(device="shoe", time=now + 1, ref="0002", raw="NOREAD 0002"), now + 1)
    assert types(step) == ["card.unreadable"]
    core.on_command(Pause(by="sup"), now + 2)
    misread = CardUnread(device="shoe", time=now + 3, ref="0002", rescan_of="0002", raw="RESCAN 0002 0X")
    assert types(core.on_reading(misread, now + 3)) == ["reading.held"]
    step, _ = core.on_command(VoidRound(by="sup"), now + 4)
    # the unread card went with the voided round; its re-scan, handed on after the void, is no new card
    assert "round.voided" in types(step)
    paused = paused_data(step)
    assert paused["cause"] == "out_of_procedure" and "(a re-scan)" in paused["reason"]
    step, _ = core.on_command(Resume(by="sup"), now + 5)
    (aside,) = [e.data for e in step.events if e.type == "card.set_aside"]
    assert aside["rescan"] is True and aside["ref"] == "0002"


def test_the_held_card_survives_a_restart() -> None:
    core = make_core()
    online(core)
    core.on_tick(0.0)
    core.on_reading(card("7D", 2.0), 2.0)
    restored = make_core()
    restored.restore_state(json.loads(json.dumps(core.export_state())))
    restored.recovered(30.0)
    online(restored, 31.0)
    step, _ = restored.on_command(Resume(by="sup"), 32.0)
    (aside,) = [e.data for e in step.events if e.type == "card.set_aside"]
    assert aside["card"] == "7D"


def single_deck_core() -> TableCore:
    spec = game_spec("single_deck_blackjack")
    settings = spec.settings.model_validate({"betting_seconds": 5, "decision_seconds": 30})
    flow = make_flow("single_deck_blackjack", "t1", settings)
    return TableCore(table_id="t1", game="single_deck_blackjack", flow=flow, devices=["shoe"])


def test_single_deck_hole_card_read_again_while_a_box_decides_is_named_nowhere() -> None:
    core = single_deck_core()
    core.on_reading(DeviceOnline(device="shoe", time=0.0), 0.0)
    core.on_tick(0.0)
    core.on_tick(5.0)  # betting closed
    public = []
    for i, code in enumerate(["9S", "7H", "5D", "KC"]):
        step = core.on_reading(
            CardSeen(device="shoe", time=6.0 + i, code=code, raw=f"CARD {i:04d} {code}*00"), 6.0 + i
        )
        public.append(step.events)
    assert core.flow.hole is not None  # type: ignore[attr-defined]
    assert "KC" not in json.dumps([e.data for e in public[-1]])
    step = core.on_reading(CardSeen(device="shoe", time=12.0, code="KC", raw="CARD 0009 KC*00"), 12.0)
    paused = paused_data(step)
    assert paused["cause"] == "out_of_procedure" and paused["card"] is None and paused["raw"] == ""
    assert "KC" not in json.dumps([e.data for e in step.events]) and "KC" not in json.dumps(core.state())
    assert "already" not in paused["reason"]
    step, _ = core.on_command(Resume(by="sup"), 13.0)
    assert "KC" not in json.dumps([e.data for e in step.events])
    (aside,) = [e.data for e in step.events if e.type == "card.set_aside"]
    assert aside["card"] is None


def infinite_core() -> TableCore:
    spec = game_spec("infinite_blackjack")
    flow = make_flow("infinite_blackjack", "t1", spec.settings.model_validate({"betting_seconds": 5}))
    return TableCore(table_id="t1", game="infinite_blackjack", flow=flow, devices=["shoe"])


def test_infinite_burned_cards_stay_unnamed_after_the_burn_and_a_restart() -> None:
    core = infinite_core()
    core.on_reading(DeviceOnline(device="shoe", time=0.0), 0.0)
    core.on_tick(0.0)
    # the first card shown (a 2: two cards are burned face down), the burn, the dealer's confirmation
    for i, code in enumerate(["2S", "KC", "9H"]):
        core.on_reading(
            CardSeen(device="shoe", time=1.0 + i, code=code, raw=f"CARD {i:04d} {code}*00"), 1.0 + i
        )
    step, _ = core.on_command(parse_command("inputs", "burn_done", {}, by="dealer-x"), 4.0)
    assert any(e.type == "shoe.burn" and e.data["done"] for e in step.events)
    # after a restart the burn is over and nothing is face down: the codes alone tell a burned card
    restored = infinite_core()
    restored.restore_state(json.loads(json.dumps(core.export_state())))
    restored.recovered(10.0)
    restored.on_reading(DeviceOnline(device="shoe", time=11.0), 11.0)
    again = CardSeen(device="shoe", time=13.0, code="KC", ref="0001", rescan_of="0001", raw="RESCAN 0001 KC")
    step = restored.on_reading(again, 13.0)
    paused = paused_data(step)
    assert paused["cause"] == "out_of_procedure" and paused["card"] is None and paused["raw"] == ""
    step, _ = restored.on_command(Resume(by="sup"), 14.0)
    (aside,) = [e.data for e in step.events if e.type == "card.set_aside"]
    assert aside["card"] is None
    # its next re-scan pauses again (out of procedure, never only rejected), and the pause names nothing
    step = restored.on_reading(again, 15.0)
    paused = paused_data(step)
    assert paused["cause"] == "out_of_procedure" and paused["card"] is None and paused["raw"] == ""
    assert "KC" not in json.dumps([e.data for e in step.events]) and "KC" not in json.dumps(restored.state())


# --- a table's own capture, with live settings -------------------------------------------------------------

LIVE = {"betting_seconds": 15.0, "round_gap_seconds": 3.0, "betting_closes_on_first_card": False}


def live_capture(rounds: int, stray_in_round: int, seed: int) -> tuple[list[CaptureRecord], list, str]:
    """A baccarat table's own capture (`meta`: live settings, a 15 s betting window): a dealer who waits
    for betting to close and deals by the book, with one card drawn while round `stray_in_round`'s bets are
    still open. The stray card is not the round's (the reference is dealt from the shoe without it)."""
    rng = random.Random(seed)
    shoe = [card.code for card in full_deck()] * 8
    rng.shuffle(shoe)
    stray, cards = shoe[0], shoe[1:]
    expected = expected_rounds(cards, len(cards) - 20)[:rounds]
    t = 1_790_000_000.0
    records = [
        CaptureRecord(
            t=t, direction="meta", data=b"", info={"game": "baccarat", "table_id": "b1", "settings": LIVE}
        )
    ]
    seq = 0

    def line(body: str, at: float) -> None:
        records.append(CaptureRecord(t=at, direction="rx", data=encode_line(body)))

    def heartbeats(until: float) -> None:
        nonlocal t
        while t + 1.0 < until:
            t += 1.0
            line(f"HB {int(t) % 100000}", t)

    line("HB 1", t)
    opened = t
    for number, expected_round in enumerate(expected):
        if number == stray_in_round:
            heartbeats(opened + 4.0)
            seq += 1
            line(f"CARD {seq:04d} {stray}", opened + 4.0)
        heartbeats(opened + 16.0)  # betting closes 15 s after the round opened
        t = max(t, opened + 16.0)
        for _position, code in expected_round.cards_in_dealing_order:
            seq += 1
            t += 0.5
            line(f"CARD {seq:04d} {code}", t)
        opened = t + 3.0  # the next round opens after the gap
    heartbeats(opened + 2.0)
    return records, expected, stray


def test_a_card_out_of_procedure_in_a_tables_capture_pauses_and_nothing_follows_until_a_supervisor() -> None:
    records, expected, stray = live_capture(6, stray_in_round=2, seed=11)
    config = replay_config("baccarat", "shoe-line", meta=records[0].info)
    envelopes = list(replay(config, records))
    types_ = [e.type for e in envelopes]
    at = types_.index("round.paused")
    paused = envelopes[at].data
    assert paused["cause"] == "out_of_procedure" and paused["card"] == stray
    assert "betting is still open" in paused["reason"]
    assert [as_expected(e.data) for e in envelopes[:at] if e.type == "round.result"] == [
        from_reference(r) for r in expected[:2]
    ]
    # after it: only what the shoe reports, held; no card dealt, no result, no void, no new round
    assert set(types_[at + 1 :]) <= {"reading.held"}, set(types_[at + 1 :])


def test_with_auto_resume_the_card_is_set_aside_and_every_round_equals_the_reference() -> None:
    records, expected, stray = live_capture(6, stray_in_round=2, seed=11)
    config = replay_config("baccarat", "shoe-line", meta=records[0].info)
    envelopes = list(replay(config, records, auto_resume=True))
    types_ = [e.type for e in envelopes]
    assert types_.count("round.paused") == 1 and "round.voided" not in types_
    (aside,) = [e.data for e in envelopes if e.type == "card.set_aside"]
    assert aside["card"] == stray and aside["by"] == "replay" and aside["round_id"] == "b1-0000003"
    results = [as_expected(e.data) for e in envelopes if e.type == "round.result"]
    assert results == [from_reference(r) for r in expected]


def test_only_the_hand_entered_card_is_marked_manual_and_a_hand_entered_hole_card_at_its_reveal() -> None:
    def shoe_card(code: str, seq: int, now: float) -> CardSeen:
        return CardSeen(device="shoe", time=now, code=code, ref=f"{seq:04d}", raw=f"CARD {seq:04d} {code}*00")

    def dealt(step: Step) -> list[tuple[str, bool]]:
        return [(e.data["card"], e.data["manual"]) for e in step.events if e.type == "card.dealt"]

    # the box 9S 2D (11), the dealer 7H and QC face down; the box hits, its card unread and entered by
    # hand (KH, 21): the box stands by itself and the dealer's hole card, read by the shoe, is turned over
    core = single_deck_core()
    core.on_reading(DeviceOnline(device="shoe", time=0.0), 0.0)
    core.on_tick(0.0)
    core.on_tick(5.0)
    for i, code in enumerate(["9S", "7H", "2D", "QC"]):
        core.on_reading(shoe_card(code, i, 6.0 + i), 6.0 + i)
    core.on_command(parse_command("inputs", "hit", {"seat": 1, "hand": 1}, by="rules-engine"), 11.0)
    core.on_reading(CardUnread(device="shoe", time=12.0, ref="0004", raw="NOREAD 0004"), 12.0)
    step, _ = core.on_command(ManualCard(card="KH", by="dealer:d1"), 13.0)
    assert dealt(step) == [("KH", True), ("QC", False)]

    # the hole card itself unread and entered by hand: it is dealt face down (named nowhere), and its
    # reveal says it was entered by hand
    core = single_deck_core()
    core.on_reading(DeviceOnline(device="shoe", time=0.0), 0.0)
    core.on_tick(0.0)
    core.on_tick(5.0)
    for i, code in enumerate(["9S", "7H", "5D"]):
        core.on_reading(shoe_card(code, i, 6.0 + i), 6.0 + i)
    core.on_reading(CardUnread(device="shoe", time=9.0, ref="0003", raw="NOREAD 0003"), 9.0)
    step, _ = core.on_command(ManualCard(card="KC", by="dealer:d1"), 10.0)
    assert "KC" not in json.dumps([e.data for e in step.events])
    stand = parse_command("inputs", "stand", {"seat": 1, "hand": 1}, by="rules-engine")
    step, _ = core.on_command(stand, 11.0)
    assert ("KC", True) in dealt(step)
