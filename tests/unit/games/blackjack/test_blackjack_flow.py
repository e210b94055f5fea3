"""The three blackjack flows driven as the runtime drives them: dealing order, every rule's refusals (a
refused decision changes nothing), the disconnect policies, the dealer's rules, Infinite's burn and its pause
on a wrong count, and the hole card: secret until its reveal, in every event and every public state."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from controller.commands import CommandError, parse_command
from controller.flow import FlowOutput, InputRejected, secret_fields
from controller.games import game_spec
from controller.games.blackjack import LiveBlackjackFlow
from controller.games.blackjack_rules import Allowed, basic_strategy_h17, hand_total
from controller.games.card_source import DeckPerRound
from controller.games.infinite_blackjack import InfiniteBlackjackFlow
from controller.games.single_deck_blackjack import SingleDeckBlackjackFlow
from controller.runtime import Step, TableCore
from controller.testing.blackjack_reference import names_card, strategy
from drivers.readings import CardSeen, CardUnread, CutCardSeen, DeviceOnline
from drivers.shoe.simulator import shuffled_shoe
from tests.helpers.blackjack_table import T0, Table, burn, infinite, live, of, ready_infinite, single, types

pytestmark = pytest.mark.unit

# --- the rules ---------------------------------------------------------------------------------------------


def cards(*codes: str) -> list:
    from controller.cards import Card

    return [Card.parse(code) for code in codes]


@pytest.mark.parametrize(
    ("codes", "total", "soft"),
    [
        ("AS 6D", 17, True),
        ("AS 6D TC", 17, False),
        ("AS AD", 12, True),
        ("AS AD 9C", 21, True),
        ("KS QD", 20, False),
        ("AS KD", 21, True),
        ("9S 8D 7C", 24, False),
    ],
)
def test_hand_totals(codes: str, total: int, soft: bool) -> None:
    value = hand_total(cards(*codes.split()))
    assert (value.total, value.soft) == (total, soft)


def test_the_basic_strategy_chart_agrees_with_the_spoken_rules_everywhere() -> None:
    """The chart (blackjack_rules) against the reference's rules of thumb, for every two-card hand and up
    card, and three-card hands (no double then)."""
    ranks = "A23456789TJQK"
    for up in ranks:
        for first in ranks:
            for second in ranks:
                hand = [f"{first}S", f"{second}H"]
                chart = basic_strategy_h17(
                    cards(*hand),
                    cards(f"{up}D")[0],
                    Allowed(double=True, split=first == second, surrender=False),
                )
                assert chart == strategy(hand, f"{up}D", True, first == second), (hand, up)
                for third in "2579":
                    three = [*hand, f"{third}C"]
                    if hand_total(cards(*three)).total > 21:
                        continue
                    chart = basic_strategy_h17(
                        cards(*three), cards(f"{up}D")[0], Allowed(double=False, split=False, surrender=False)
                    )
                    assert chart == strategy(three, f"{up}D", False, False), (three, up)


# --- Live Blackjack --------------------------------------------------------------------------------------


def test_live_deals_every_box_then_the_dealer_then_every_box_again_and_no_hole_card() -> None:
    table = live()
    table.open_round()
    assert table.state["next_position"] == "box1"
    out = table.deal("9S", "7H", "5D", "6C", "8S", "9D", "QH")
    dealt = [(d["card"], d["position"], d["index"]) for d in of(out, "card.dealt")]
    assert dealt == [
        ("9S", "box1", 0),
        ("7H", "box2", 0),
        ("5D", "box3", 0),
        ("6C", "dealer", 0),
        ("8S", "box1", 1),
        ("9D", "box2", 1),
        ("QH", "box3", 1),
    ]
    assert "card.face_down" not in types(out)
    turn = table.state["turn"]
    assert (turn["seat"], turn["hand"], turn["total"]) == (1, 1, 17)
    assert table.state["next_position"] is None  # the shoe's gate is closed while box 1 decides
    assert "Box 1 plays: 17 against 6C" in table.flow.prompt
    assert table.state["decision_closes_at"] is not None
    # the panel's places: every box and the dealer
    assert [p["name"] for p in table.state["positions"]] == ["box1", "box2", "box3", "dealer"]


def test_live_decisions_out_of_turn_or_out_of_time_are_refused_and_change_nothing() -> None:
    table = live()
    table.refused("hit", "no hand is deciding now", seat=1)
    table.open_round()
    table.refused("stand", "initial cards", seat=1)
    table.deal("9S", "7H", "5D", "6C", "8S", "9D", "QH")
    table.refused("stand", "Box 1 plays now, not box2", seat=2)
    table.refused("hit", "Box 1 plays now, not box1-2", seat=1, hand=2)
    table.send("hit", seat=1)
    table.refused("stand", "waiting for its card", seat=1)
    with pytest.raises(CommandError):
        parse_command("inputs", "hit", {"seat": "1"}, by="rules-engine")  # strict: "1" is not 1
    with pytest.raises(CommandError):
        parse_command("inputs", "hit", {"seat": 0}, by="rules-engine")


def test_live_splits_the_same_rank_once_never_a_king_and_a_ten() -> None:
    table = live(seats=2)
    table.open_round()
    table.deal("KS", "8H", "6C", "TD", "8D")  # box1 K+10, box2 8+8, dealer 6
    table.refused("split", "same rank", seat=1)
    table.send("stand", seat=1)
    out = table.send("split", seat=2)
    assert of(out, "blackjack.decision")[0]["action"] == "split"
    assert table.state["next_position"] == "box2"
    table.deal("8C")  # box2 hand 1: 8 8 again
    table.refused("split", "splits once", seat=2)
    table.send("stand", seat=2)
    assert table.state["next_position"] == "box2-2"
    out = table.deal("3S")  # box2 hand 2: 8 3 = 11; double after a split is allowed
    table.send("double", seat=2, hand=2)
    out = table.deal("9H")
    assert table.state["stage"] == "dealer"
    out = table.deal("TC", "5H")  # dealer 6 T 5 = 21
    result = of(out, "round.result")[0]
    hands = [
        (h["seat"], h["hand"], h["cards"], h["split"], h["doubled"], h["outcome"]) for h in result["hands"]
    ]
    assert hands == [
        (1, 1, ["KS", "TD"], False, False, "lose"),
        (2, 1, ["8H", "8C"], True, False, "lose"),
        (2, 2, ["8D", "3S", "9H"], True, True, "lose"),
    ]


def test_live_split_aces_take_one_card_each_and_21_there_is_not_blackjack() -> None:
    table = live(seats=1)
    table.open_round()
    table.deal("AS", "9C", "AD")
    table.send("split", seat=1)
    table.deal("KH")  # first ace: 21, done without a decision
    assert table.state["next_position"] == "box1-2"
    table.deal("5C")  # second ace: soft 16, done without a decision (one card each)
    assert table.state["stage"] == "dealer"
    out = table.deal("8D")  # dealer 9 8 = 17
    hands = of(out, "round.result")[0]["hands"]
    assert [(h["total"], h["blackjack"], h["outcome"]) for h in hands] == [
        (21, False, "win"),
        (16, False, "lose"),
    ]


def test_live_double_only_on_two_cards_and_never_on_split_aces() -> None:
    table = live(seats=1)
    table.open_round()
    table.deal("2S", "9C", "3D")
    table.send("hit", seat=1)
    table.deal("4H")
    table.refused("double", "first two cards", seat=1)
    table.refused("surrender", "offers no surrender", seat=1)

    aces = live(seats=1)
    aces.open_round()
    aces.deal("AS", "9C", "AD")
    aces.send("split", seat=1)
    assert aces.state["turn"]["waiting_for_card"]
    aces.refused("double", "waiting for its card", seat=1)


def test_live_surrender_where_the_studio_offers_it_first_decision_only() -> None:
    table = live(seats=1, surrender=True)
    table.open_round()
    table.deal("TS", "TC", "6D")  # 16 against a ten
    out = table.send("surrender", seat=1)
    assert of(out, "blackjack.hand_settled")[0]["outcome"] == "surrender"
    later = live(seats=1, surrender=True)
    later.open_round()
    later.deal("2S", "TC", "3D")
    later.send("hit", seat=1)
    later.deal("4H")
    later.refused("surrender", "first decision", seat=1)


def test_live_insurance_on_an_ace_also_for_a_blackjack_and_only_then() -> None:
    table = live(seats=2)
    table.open_round()
    table.deal("AS", "9C", "AH", "KD", "7C")  # box1 blackjack, box2 16, dealer ace
    assert table.state["stage"] == "insurance"
    assert table.state["insurance_offered_to"] == [1, 2]
    table.refused("hit", "insurance is offered now", seat=1)
    table.send("insurance", seat=1)
    table.refused("insurance", "already answered", seat=1)
    out = table.send("insurance", seat=2, take=False)
    assert [(d["seat"], d["action"]) for d in of(out, "blackjack.decision")] == [(2, "no_insurance")]
    assert table.state["stage"] == "turns" and table.state["turn"]["seat"] == 2  # box1's blackjack waits
    table.send("stand", seat=2)
    out = table.deal("KS")  # dealer A K: blackjack
    result = of(out, "round.result")[0]
    assert result["dealer"]["blackjack"]
    assert [(h["insured"], h["outcome"]) for h in result["hands"]] == [(True, "push"), (False, "lose")]

    no_ace = live(seats=1)
    no_ace.open_round()
    no_ace.deal("9S", "TC", "7D")
    no_ace.refused("insurance", "dealer's card is an ace", seat=1)


def test_live_blackjack_wins_at_once_against_a_small_card_and_waits_against_a_ten() -> None:
    table = live(seats=2)
    table.open_round()
    out = table.deal("AS", "9C", "6H", "KD", "7C")
    settled = of(out, "blackjack.hand_settled")
    assert [(s["seat"], s["outcome"]) for s in settled] == [(1, "blackjack")]
    waits = live(seats=1)
    waits.open_round()
    out = waits.deal("AS", "TH", "KD")
    assert not of(out, "blackjack.hand_settled")
    # no other hand stands against the dealer: only the second card is dealt, to settle the blackjack
    assert waits.state["next_position"] == "dealer"
    out = waits.deal("7C")
    result = of(out, "round.result")[0]
    assert result["dealer"]["cards"] == ["TH", "7C"] and result["hands"][0]["outcome"] == "blackjack"


def test_live_no_answer_plays_basic_strategy_and_the_dealer_hits_soft_17() -> None:
    table = live(seats=1)
    table.open_round()
    table.deal("6S", "AC", "5D")  # 11 against an ace: insurance first (declined), then double (H17 chart)
    out = table.expire()
    assert [(d["action"], d["by"]) for d in of(out, "blackjack.decision")] == [("no_insurance", "policy")]
    out = table.expire()
    assert [(d["action"], d["by"], d["total"]) for d in of(out, "blackjack.decision")] == [
        ("double", "policy", 11)
    ]
    assert "Box 1: double (no answer: the table decided)" in table.flow.prompt
    table.deal("2H")  # 13, doubled: done
    out = table.deal("6C")  # dealer A 6: soft 17, hits
    assert "round.result" not in types(out) and table.state["next_position"] == "dealer"
    out = table.deal("TC")  # A 6 T: hard 17, stands
    assert of(out, "round.result")[0]["dealer"] == {
        "cards": ["AC", "6C", "TC"],
        "total": 17,
        "soft": False,
        "blackjack": False,
        "bust": False,
    }


def test_live_cut_card_round_is_the_last_and_a_new_shoe_is_waited_for() -> None:
    table = live(seats=1)
    table.open_round()
    table.keep(table.read(CutCardSeen(device="shoe", time=table.now, raw="CUT 9", ref="9")))
    table.deal("TS", "7C", "9D")
    table.send("stand", seat=1)
    out = table.deal("QH")
    assert of(out, "round.result")[0]["last_round_of_shoe"] is True
    assert table.tick_to_deadline().events == []  # no round opens on a finished shoe
    assert "load a new shoe" in table.flow.prompt
    out = table.send("new_shoe")
    assert "shoe.started" in types(out)
    assert "round.opened" in types(table.tick_to_deadline())


def test_live_deals_only_the_seated_boxes_said_while_betting_is_open() -> None:
    table = live(seats=5)
    table.refused("seated", "while betting is open", seats=[1])  # no round yet
    out = table.keep(table.tick_to_deadline())
    assert "round.opened" in types(out)
    table.refused("seated", r"box\(es\) \[6, 7\] do not exist at this table \(seats 1-5\)", seats=[2, 6, 7])
    with pytest.raises(CommandError):
        parse_command("inputs", "seated", {"seats": []}, by="rules-engine")  # a round needs a box
    with pytest.raises(CommandError):
        parse_command("inputs", "seated", {"seats": [0]}, by="rules-engine")
    table.send("seated", seats=[4, 2, 4])  # in any order, once each
    assert [p["name"] for p in table.state["positions"]] == ["box2", "box4", "dealer"]
    table.keep(table.tick_to_deadline())  # betting closes by its timer
    table.refused("seated", "while betting is open", seats=[1, 2, 3])
    out = table.deal("9S", "7H", "5D", "8S", "9D")
    dealt = [(d["card"], d["position"]) for d in of(out, "card.dealt")]
    assert dealt == [("9S", "box2"), ("7H", "box4"), ("5D", "dealer"), ("8S", "box2"), ("9D", "box4")]
    table.send("stand", seat=2)
    table.refused("stand", "not box3", seat=3)
    table.send("stand", seat=4)
    out = table.deal("TC", "4H")  # the dealer: 5 T 4 = 19
    result = of(out, "round.result")[0]
    assert [hand["seat"] for hand in result["hands"]] == [2, 4]
    # the next round deals every seat again until the rules engine says otherwise
    table.open_round()
    assert [p["name"] for p in table.state["positions"]] == ["box1", "box2", "box3", "box4", "box5", "dealer"]


def test_a_round_of_seated_boxes_is_restored_and_a_table_without_one_of_them_refuses_it() -> None:
    table = live(seats=5)
    table.keep(table.tick_to_deadline())
    table.send("seated", seats=[3, 5])
    table.keep(table.tick_to_deadline())
    table.deal("9S")
    record = json.loads(json.dumps(table.flow.export_state()))
    restored = live(seats=5)
    assert restored.flow.restore_conflict(record) is None
    restored.flow.restore_state(record)
    out = restored.deal("7H", "5D")
    assert [(d["card"], d["position"]) for d in of(out, "card.dealt")] == [("7H", "box5"), ("5D", "dealer")]
    assert "boxes [3, 5]" in (live(seats=4).flow.restore_conflict(record) or "")


# --- Single-deck Blackjack ------------------------------------------------------------------------------


def test_single_deck_deals_player_dealer_player_and_the_dealer_face_down() -> None:
    table = single()
    out = table.open_round()
    assert "shoe.started" in types(out)  # a fresh deck every round
    out = table.deal("9S", "7H", "5D")
    assert table.state["next_position"] == "dealer" and "FACE DOWN" in table.flow.prompt
    out = table.deal("KC")
    assert of(out, "card.face_down") == [
        {"round_id": "bj1-0000001", "position": "dealer", "index": 1, "rescan": False}
    ]
    assert not of(out, "card.dealt") and not of(out, "dealer.peek")  # a 7 cannot make blackjack: no peek
    dealer = table.state["positions"][-1]
    assert dealer["cards"] == ["7H", "XX"] and dealer["total"] == 7
    table.send("stand", seat=1)
    out = table.deal()
    # the reveal: the hole card's card.dealt, the dealer's 17 stands (hard)
    assert of(out, "card.dealt") == []  # nothing more needed to be dealt
    result = table.log[-2][1]
    assert table.log[-3][0] == "card.dealt" and table.log[-3][1]["card"] == "KC"
    assert result["dealer"]["cards"] == ["7H", "KC"] and result["hands"][0]["outcome"] == "lose"


def test_single_deck_peek_a_dealer_blackjack_ends_the_round_at_once() -> None:
    table = single()
    table.open_round()
    out = table.deal("9S", "TH", "5D", "AC")
    assert of(out, "dealer.peek") == [{"round_id": "bj1-0000001", "up_card": "TH", "blackjack": True}]
    result = of(out, "round.result")[0]
    assert result["dealer"]["blackjack"] and result["hands"][0]["outcome"] == "lose"
    # the reveal comes after the peek, in the same step
    order = types(out)
    assert (
        order.index("card.face_down")
        < order.index("dealer.peek")
        < order.index("card.dealt", order.index("dealer.peek"))
    )


def test_single_deck_rules_refuse_what_the_seed_does_not_allow() -> None:
    table = single()
    table.open_round()
    table.deal("8S", "6H", "4D", "9C")  # 12 against a 6
    table.refused("double", "9, 10, 11, not 12", seat=1)
    table.refused("surrender", "offers no surrender", seat=1)
    table.refused("split", "same value", seat=1)
    table.refused("insurance", "ace", seat=1)

    tens = single()
    tens.open_round()
    tens.deal("JS", "6H", "KD", "9C")  # a jack and a king: the same value, splittable here
    tens.send("split", seat=1)
    tens.deal("5S")  # J 5
    tens.refused("split", "splits once", seat=1)
    tens.send("stand", seat=1)
    tens.deal("QS")  # K Q: 20
    tens.refused("double", "not 20", seat=1, hand=2)

    ten = single()
    ten.open_round()
    ten.deal("6S", "6H", "4D", "9C")  # 10: double
    ten.send("double", seat=1)

    blackjack = single()
    blackjack.open_round()
    out = blackjack.deal("AS", "AH", "KD", "9C")  # player blackjack, dealer ace: no insurance offered
    assert blackjack.state["stage"] != "insurance"
    assert of(out, "dealer.peek")[0]["blackjack"] is False
    result = next(data for kind, data in blackjack.log if kind == "round.result")
    assert result["hands"][0]["outcome"] == "blackjack"


def test_single_deck_no_answer_hits_to_twelve_then_stands() -> None:
    table = single()
    table.open_round()
    table.deal("2S", "8H", "3D", "9C")  # 5
    out = table.expire()
    assert [d["action"] for d in of(out, "blackjack.decision")] == ["hit"]
    table.deal("4C")  # 9
    table.expire()
    table.deal("2H")  # 11
    table.expire()
    table.deal("AD")  # 12
    out = table.expire()
    assert [(d["action"], d["total"]) for d in of(out, "blackjack.decision")] == [("stand", 12)]


# --- Infinite Blackjack ------------------------------------------------------------------------------------


def core_for(table: Table) -> TableCore:
    core = TableCore(table_id="bj1", game=table.game, flow=table.flow, devices=["shoe"])
    core.on_reading(DeviceOnline(device="shoe", time=table.now), table.now)
    return core


def test_infinite_burns_the_shown_cards_value_and_counts_without_naming_them() -> None:
    table = infinite()
    out = table.keep(table.tick_to_deadline())
    assert "shoe.started" in types(out) and table.state["stage"] == "burn"
    assert table.state["next_position"] == "burn"
    out = burn(table, "7H", 7)
    burns = of(out, "shoe.burn")
    assert burns[0] == {"shoe_id": "bj1-shoe0001", "shown": "7H", "to_burn": 7, "burned": 0, "done": False}
    assert [b["burned"] for b in burns] == list(range(8))
    assert not of(out, "card.dealt") and "done" not in table.flow.prompt
    text = json.dumps([event.data for event in out.events])
    assert "2C" not in text and "3C" not in text  # burned face down: counted, never named
    out = table.send("burn_done")
    assert of(out, "shoe.burn")[-1]["done"] is True
    assert "round.opened" in types(table.tick_to_deadline())


def test_infinite_wrong_burn_count_pauses_the_table() -> None:
    table = infinite()
    table.tick_to_deadline()
    core = core_for(table)
    burn(table, "5D", 3)
    step, _ = core.on_command(parse_command("inputs", "burn_done", {}, by="dealer-x"), table.now)
    paused = [event.data for event in step.events if event.type == "round.paused"]
    assert paused == [
        {
            "round_id": None,
            "reason": "burn count wrong: 3 card(s) burned, the shown 5D asks for 5",
            "device": None,
            "by": "system",
            "cause": "game",
            "card": None,
            "raw": "",
        }
    ]
    assert core.paused
    core.on_command(parse_command("commands", "resume", {}, by="supervisor"), table.now)
    for code in ("6C", "7C"):
        core.on_reading(
            CardSeen(device="shoe", time=table.now, raw=f"CARD x {code}", code=code, ref=code), table.now
        )
    step, _ = core.on_command(parse_command("inputs", "burn_done", {}, by="dealer-x"), table.now)
    assert not core.paused and [e.data["done"] for e in step.events if e.type == "shoe.burn"] == [True]

    over = infinite()
    over.tick_to_deadline()
    core = core_for(over)
    burn(over, "AS", 1)
    step = core.on_reading(
        CardSeen(device="shoe", time=over.now, raw="CARD y 4C", code="4C", ref="y"), over.now
    )
    assert [e.data["reason"] for e in step.events if e.type == "round.paused"] == [
        "burn count wrong: 2 card(s) burned, the shown AS asks for 1"
    ]
    assert "reshuffle" in over.flow.prompt


def paused_reasons(step: Step) -> list[str]:
    return [event.data["reason"] for event in step.events if event.type == "round.paused"]


def burn_with_a_card_unread(shown: str, count: int) -> tuple[Table, TableCore]:
    """An Infinite table in its first burn: `shown`, `count` cards burned, then one more card out unread
    (ref "u1")."""
    table = infinite()
    table.tick_to_deadline()
    core = core_for(table)
    burn(table, shown, count)
    step = core.on_reading(CardUnread(device="shoe", time=table.now, raw="NOREAD u1", ref="u1"), table.now)
    assert [event.type for event in step.events] == ["card.unreadable"]
    return table, core


def refused_unchanged(table: Any, core: TableCore, command: Any, message: str) -> None:
    """`command` is refused with exactly `message`, and the flow's state is as it was."""
    before = table.flow.export_state()
    with pytest.raises(CommandError, match=f"^{re.escape(message)}$"):
        core.on_command(command, table.now)
    assert table.flow.export_state() == before


@pytest.mark.parametrize("settled_by", ["rescan", "manual_card"])
def test_infinite_burn_done_waits_for_a_burned_card_that_could_not_be_read(settled_by: str) -> None:
    table, core = burn_with_a_card_unread("2S", 2)  # the count is complete, and a card beyond it is unread
    refused_unchanged(
        table,
        core,
        parse_command("inputs", "burn_done", {}, by="dealer-x"),
        "card u1 could not be read: re-scan it or enter it by hand (manual_card), then confirm the burn",
    )
    assert not core.paused
    assert core.on_tick(table.now + 60).events == []  # no round opens over it
    if settled_by == "rescan":
        rescan = CardSeen(
            device="shoe", time=table.now, raw="RESCAN u1 9H", code="9H", ref="u1", rescan_of="u1"
        )
        step = core.on_reading(rescan, table.now)
    else:
        step, _ = core.on_command(
            parse_command("commands", "manual_card", {"card": "9H"}, by="dealer-x"), table.now
        )
    # counted as what it is, a card burned beyond the count: the table pauses for the supervisor
    assert paused_reasons(step) == ["burn count wrong: 3 card(s) burned, the shown 2S asks for 2"]
    assert table.flow.unread_ref is None and table.flow.composition.cards_dealt == 4


def test_infinite_new_shoe_is_refused_while_a_card_of_the_burn_waits_for_its_rescan() -> None:
    table, core = burn_with_a_card_unread("5S", 1)
    refused_unchanged(
        table,
        core,
        parse_command("commands", "new_shoe", {}, by="supervisor"),
        "card u1 waits for its re-scan: re-scan it or enter it by hand (manual_card) before a new shoe is "
        "loaded",
    )
    # its re-scan is a burned card of the shoe it left, never the next shoe's shown card
    rescan = CardSeen(device="shoe", time=table.now, raw="RESCAN u1 KD", code="KD", ref="u1", rescan_of="u1")
    step = core.on_reading(rescan, table.now)
    burns = [event.data for event in step.events if event.type == "shoe.burn"]
    assert burns == [{"shoe_id": "bj1-shoe0001", "shown": "5S", "to_burn": 5, "burned": 2, "done": False}]
    step, _ = core.on_command(parse_command("commands", "new_shoe", {}, by="supervisor"), table.now)
    assert [event.type for event in step.events] == ["shoe.started"]
    assert table.flow.composition.cards_dealt == 0


def test_an_unread_card_left_when_a_round_opens_is_held_for_the_supervisor_not_forgotten() -> None:
    table = infinite()
    table.tick_to_deadline()
    core = core_for(table)
    burn(table, "2S", 2)
    table.send("burn_done")
    # as a table journaled before burn_done waited for the unread card restarts: one waits after the burn
    table.flow.unread_ref, table.flow.unread_raw = "u1", "NOREAD u1"
    step = core.on_tick(table.flow.next_deadline())
    assert "round.opened" in [event.type for event in step.events]
    assert paused_reasons(step) == [
        "An unread card came out of procedure (a new round opened while it waited for its re-scan): put it "
        "aside"
    ]
    step, _ = core.on_command(parse_command("commands", "resume", {}, by="supervisor"), table.now)
    (aside,) = [event.data for event in step.events if event.type == "card.set_aside"]
    assert (aside["ref"], aside["by"], aside["card"]) == ("u1", "supervisor", None)
    assert table.flow.unread_ref is None


def test_a_hand_entered_card_the_procedure_cannot_place_is_refused_before_anything_changes() -> None:
    table = ready_infinite()
    core = core_for(table)
    table.deal("5S", "TH", "4D", "7C")  # the players decide: no card is expected
    # as a table journaled with an unread card the procedure moved past restarts
    table.flow.unread_ref, table.flow.unread_raw = "u1", "NOREAD u1"
    before = table.flow.export_state()
    with pytest.raises(
        CommandError,
        match=r"^card u1 cannot be entered by hand now: the players are deciding: deal only when a card is "
        r"asked for$",
    ):
        core.on_command(parse_command("commands", "manual_card", {"card": "9H"}, by="dealer-x"), table.now)
    assert table.flow.export_state() == before and not core.paused


def test_infinite_round_common_hand_peek_sequence_and_the_dealer_stands_on_soft_17() -> None:
    table = ready_infinite()
    out = table.deal("5S", "TH", "4D", "7C")
    assert of(out, "dealer.peek") == [{"round_id": "bj1-0000001", "up_card": "TH", "blackjack": False}]
    assert of(out, "card.face_down")[0]["position"] == "dealer"
    table.refused("burn_done", "no burn")
    out = table.send("deal_card")
    assert table.state["next_position"] == "player"
    table.refused("deal_card", "asked for and is not dealt")
    table.deal("2C")
    out = table.send("players_done")
    revealed = of(out, "card.dealt")
    assert revealed == [
        {
            "round_id": "bj1-0000001",
            "card": "7C",
            "position": "dealer",
            "index": 1,
            "rescan": False,
            "manual": False,
            "raw": "CARD 7 7C",
        }
    ]  # with the device text it was read with (the burn took cards 1 to 3)
    assert of(out, "round.result")[0]["dealer"]["total"] == 17  # T 7: stands
    table.refused("players_done", "not deciding")

    soft = ready_infinite()
    soft.deal("9S", "AH", "9D", "6C")  # dealer A 6 under an ace: insurance first
    assert soft.state["stage"] == "insurance"
    soft.refused("deal_card", "insurance is offered")
    out = soft.send("players_done")  # the insurance decisions are in
    assert of(out, "dealer.peek")[0]["blackjack"] is False
    out = soft.send("players_done")
    result = of(out, "round.result")[0]
    assert result["dealer"]["cards"] == ["AH", "6C"] and result["dealer"]["soft"]  # soft 17 stands
    assert result["initial"] == ["9S", "9D"] and result["sequence"] == [] and result["round_in_shoe"] == 1


def test_infinite_dealer_blackjack_ends_the_round_and_no_answer_hits_to_twelve() -> None:
    table = ready_infinite()
    out = table.deal("5S", "KH", "4D", "AC")
    assert of(out, "dealer.peek")[0]["blackjack"] is True
    result = of(out, "round.result")[0]
    assert result["dealer"]["cards"] == ["KH", "AC"] and result["sequence"] == []
    table.tick_to_deadline()
    table.tick_to_deadline()
    table.deal("5C", "9H", "4H", "5D")  # player 9, dealer 9 and 5 face down
    out = table.expire()
    assert [(d["action"], d["by"]) for d in of(out, "blackjack.decision")] == [("deal_card", "policy")]
    table.deal("2D")  # 11: still a card
    out = table.expire()
    assert [d["action"] for d in of(out, "blackjack.decision")] == ["deal_card"]
    table.deal("AD")  # 12
    out = table.expire()
    assert [d["action"] for d in of(out, "blackjack.decision")] == ["players_done"]
    out = table.deal("8C")  # 9 5 8 = 22
    result = of(out, "round.result")[0]
    assert result["dealer_bust_cards"] == 3 and result["sequence"] == ["2D", "AD"]


def test_infinite_cut_card_last_round_then_reshuffle_and_burn() -> None:
    table = ready_infinite()
    table.keep(table.read(CutCardSeen(device="shoe", time=table.now, raw="CUT 1", ref="c")))
    table.deal("5S", "KH", "4D", "AC")
    result = [data for kind, data in table.log if kind == "round.result"][-1]
    assert result["last_round_of_shoe"] is True
    table.tick_to_deadline()
    assert table.state["stage"] == "shuffle" and table.state["next_position"] is None
    out = table.send("new_shoe")
    assert "shoe.started" in types(out) and table.state["stage"] == "burn"
    burn(table, "TS", 10)
    table.send("burn_done")
    out = table.open_round()
    assert of(out, "round.opened")[0]["round_number_in_shoe"] == 1


# --- the hole card is secret until its reveal --------------------------------------------------------------


def play_random_rounds(table: Table, deck_seed: int, rounds: int, check: Any) -> None:
    """Deal rounds as the disconnect policy plays them, calling `check(hole, out, state)` while a hole card
    is down (`hole`: its code)."""
    rng = random.Random(deck_seed)
    fresh = isinstance(table.flow.shoe, DeckPerRound)
    pack = shuffled_shoe(1 if fresh else 8, rng.randrange(2**32))
    played = 0
    shoe = table.flow.shoe.shoe_id
    for _ in range(100_000):
        state = table.state
        hole = table.flow.hole.code if table.flow.hole is not None else None
        if not fresh and table.flow.shoe.shoe_id != shoe:
            shoe, pack = table.flow.shoe.shoe_id, shuffled_shoe(8, rng.randrange(2**32))  # reshuffled
        if not fresh and len(pack) == 60:
            table.keep(table.read(CutCardSeen(device="shoe", time=table.now, raw="CUT", ref="cut")))
            pack.pop()
        if state["next_position"] is not None:
            out = table.deal(pack.pop())
        else:
            deadline = table.flow.next_deadline()
            assert deadline is not None, state
            out = table.keep(table.tick(max(0.0, deadline - table.now)))
        if "round.closed" in types(out):
            played += 1
            if fresh:
                pack = shuffled_shoe(1, rng.randrange(2**32))
            if played == rounds:
                return
        revealed = any(
            e.type == "card.dealt" and e.data["position"] == "dealer" and e.data["index"] == 1
            for e in out.events
        )
        if hole is not None and not revealed:
            check(hole, out, table.state)
    raise AssertionError("the rounds did not finish")


@pytest.mark.parametrize("game", ["single_deck_blackjack", "infinite_blackjack"])
def test_the_hole_card_appears_in_no_event_and_no_public_state_before_its_reveal(game: str) -> None:
    settings = {"burn_confirmation": False, "auto_new_shoe": True} if game == "infinite_blackjack" else {}
    table = Table(game, settings)
    checked = {"steps": 0}

    def check(hole: str, out: FlowOutput, state: dict[str, Any]) -> None:
        checked["steps"] += 1
        for event in out.events:
            data = dict(event.data)
            if event.type == "card.dealt" and data["card"] == hole:
                data.pop("card"), data.pop("raw")  # another copy (8 decks), dealt face up elsewhere
            assert not names_card(json.dumps(data), hole), (event.type, event.data)
        public = json.dumps(state)
        visible = [card for position in state["positions"] for card in position["cards"]]
        assert not names_card(public, hole) or hole in visible, state
        assert hole not in table.flow.prompt

    play_random_rounds(table, 7, 300, check)
    assert checked["steps"] > 100


@pytest.mark.parametrize("game", ["single_deck_blackjack", "infinite_blackjack"])
def test_what_is_published_before_the_reveal_does_not_depend_on_the_hole_card(game: str) -> None:
    """Non-interference: the same round with another hole card (the same peek answer) publishes the very same
    events and public states up to the reveal."""

    def story(hole: str) -> list[Any]:
        table = Table(game, {"burn_confirmation": False} if game == "infinite_blackjack" else {})
        if game == "infinite_blackjack":
            table.tick_to_deadline()
            burn(table, "AS", 1)
        table.open_round()
        seen: list[Any] = []
        for code in ("9S", "TH", "5D"):
            seen.append([(e.type, e.data) for e in table.deal(code).events])
            seen.append(table.state)
        out = table.deal(hole)
        seen.append([(e.type, e.data) for e in out.events])
        seen.append(table.state)
        seen.append(table.flow.prompt)
        return seen

    assert story("7C") == story("2D") == story("QH")  # all "no blackjack" under a ten


def test_the_hole_card_is_a_secret_field_kept_in_the_record_only() -> None:
    for flow_class in (SingleDeckBlackjackFlow, InfiniteBlackjackFlow, LiveBlackjackFlow):
        assert {"hole", "hole_raw"} <= secret_fields(flow_class.record_model)
    table = single()
    table.open_round()
    table.deal("9S", "7H", "5D", "KC")
    record = table.flow.export_state()
    assert record["hole"] == "KC" and record["hole_raw"] == "CARD 4 KC"
    restored = single()
    restored.flow.restore_state(json.loads(json.dumps(record)))
    assert restored.flow.hole is not None and restored.flow.hole.code == "KC"
    assert not names_card(json.dumps(restored.state), "KC")
    restored.send("stand", seat=1)
    result = next(data for kind, data in restored.log if kind == "round.result")
    assert result["dealer"]["cards"] == ["7H", "KC"]


def test_a_face_down_card_rejected_or_held_is_published_without_its_name() -> None:
    table = single()
    table.open_round()
    table.deal("9S", "7H", "5D")
    core = core_for(table)
    core.on_command(parse_command("commands", "pause", {}, by="supervisor"), table.now)
    step = core.on_reading(
        CardSeen(device="shoe", time=table.now, raw="CARD 4 KC*1F", code="KC", ref="4"), table.now
    )
    held = [e.data for e in step.events if e.type == "reading.held"]
    assert held and held[0]["raw"] == ""
    # the retained state lists what is held by the same rule: the device and the kind, not the card
    assert core.state()["held"] == [{"device": "shoe", "reading": "CardSeen", "card": None, "raw": ""}]
    assert not names_card(json.dumps(core.state()), "KC")
    # the re-scan of an unread hole card that is not a card the deck still holds: held without its name
    other = single()
    other.open_round()
    out = other.deal("9S", "7H", "5D")
    out = other.noread("n1")
    out = other.card("9S", rescan_of="n1")  # a second 9S in one deck: impossible
    assert out.events == [] and out.pause is not None and out.pause.cause == "out_of_procedure"
    assert out.pause.card is None and out.pause.raw == ""
    assert "9S" not in out.pause.reason and "already" not in out.pause.reason
    with pytest.raises(InputRejected) as refused:
        other.send("manual_card", card="7H")
    assert "7H" not in str(refused.value) and "already" not in str(refused.value)
    aside = of(other.flow.settle_pause(other.now, "supervisor", "resume"), "card.set_aside")
    assert aside and aside[0]["card"] is None and "9S" not in json.dumps(aside)


def test_single_deck_hole_card_read_again_while_box_1_decides_is_named_nowhere() -> None:
    table = single()
    table.open_round()
    table.deal("9S", "7H", "5D", "KC")  # KC is the face-down card
    assert table.flow.hole is not None and table.flow.hole.code == "KC"
    out = table.card("KC")  # scanned again while box 1 decides (or a foreign copy)
    assert out.pause is not None and out.pause.cause == "out_of_procedure"
    public = json.dumps([[e.data for e in out.events], out.pause.reason, out.pause.card, out.pause.raw])
    assert "KC" not in public and "already" not in public
    aside = of(table.flow.settle_pause(table.now, "supervisor", "resume"), "card.set_aside")
    assert aside and "KC" not in json.dumps(aside)
    # a hand-entered card equal to the face-down card: refused without saying why, as any other would be
    table.noread("n9")
    with pytest.raises(InputRejected) as refused:
        table.send("manual_card", card="KC")
    assert "KC" not in str(refused.value) and "already" not in str(refused.value)
    with pytest.raises(InputRejected) as other:
        table.send("manual_card", card="9S")  # a card that is out face up: the same refusal
    assert str(other.value) == str(refused.value)


@pytest.mark.parametrize("game", ["blackjack", "single_deck_blackjack", "infinite_blackjack"])
def test_the_demo_players_say_only_what_the_rules_allow_and_leave_nothing_to_the_policy(game: str) -> None:
    """The demo's stand-in for the rules engine (`demo_players`), fed the table's state as the demo feeds
    it: the table takes everything it says (a refusal raises here), Live's rounds are dealt to exactly the
    boxes it seated, and no hand waits for the disconnect policy."""
    rng = random.Random(5)
    settings = {"blackjack": {"seats": 3}, "infinite_blackjack": {"burn_confirmation": False}}
    table = Table(game, settings.get(game, {}))
    players = game_spec(game).demo.players
    core = core_for(table)
    said: set[str] = set()
    seated: dict[str, list[int]] = {}
    decided: list[dict[str, Any]] = []
    deck = shuffled_shoe(8, 99)
    round_id, rounds = None, 0
    while len(of_log(table, "round.result")) < 12:
        spoke = True
        while spoke:  # the players answer at once (the demo's within half a second of a 1.5 s window)
            spoke, state = False, core.state()
            for key, name, payload in players(state, rng):
                if key in said:
                    continue
                said.add(key)
                spoke = True
                command = parse_command("inputs", name, payload, by="demo-players")
                step, _ = core.on_command(command, table.now)
                decided += [e.data for e in step.events if e.type == "blackjack.decision"]
                if name == "seated":
                    seated[state["round_id"]] = payload["seats"]
        state = core.state()
        if state["round_id"] != round_id and game == "single_deck_blackjack":  # a fresh deck every round
            round_id, deck, rounds = state["round_id"], shuffled_shoe(1, rounds), rounds + 1
        if state["game_state"]["next_position"] is not None and state["round_phase"] != "betting_open":
            table.deal(deck.pop())
        else:
            table.keep(table.tick_to_deadline())
        assert table.now < T0 + 3600, "the rounds do not end"
    decided += [data for kind, data in table.log if kind == "blackjack.decision"]
    assert decided and {d["by"] for d in decided} == {"player"}, {d["by"] for d in decided}
    assert {d["action"] for d in decided} >= (
        {"deal_card", "players_done"} if game == "infinite_blackjack" else {"hit", "stand"}
    )
    results = of_log(table, "round.result")
    if game == "blackjack":
        assert len(seated) >= len(results)
        dealt_to = {r["round_id"]: sorted({h["seat"] for h in r["hands"]}) for r in results}
        assert all(dealt_to[r] == seated[r] for r in dealt_to)
        assert any(len(seats) < 3 for seats in dealt_to.values())  # a subset, not always every box


def of_log(table: Table, kind: str) -> list[dict[str, Any]]:
    return [data for logged, data in table.log if logged == kind]
