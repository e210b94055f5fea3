"""What `tablectl demo` prints of an event, in words: results that say their outcome, a shuffle without the
device's protocol line, and the demo's last line."""

from __future__ import annotations

import pytest

from controller.demo import DemoTally, Narrator, describe
from controller.games import GAMES

pytestmark = pytest.mark.unit

# a round.result as Infinite Blackjack's demo published it (its data, verbatim)
INFINITE = {
    "game": "infinite_blackjack",
    "round_id": "demo-infinite_blackjack-0000002",
    "shoe_id": "demo-infinite_blackjack-shoe0001",
    "initial": ["2D", "3D"],
    "sequence": ["2C", "JS"],
    "dealer_up": "4S",
    "hole_card": "QS",
    "dealer": {"cards": ["4S", "QS", "4S"], "total": 18, "soft": False, "blackjack": False, "bust": False},
    "dealer_bust_cards": None,
    "round_in_shoe": 2,
    "last_round_of_shoe": False,
}


def test_an_infinite_result_gives_the_common_hands_total_after_each_card_against_the_dealer() -> None:
    line = describe({"type": "round.result", "data": INFINITE})
    assert line == (
        "round 2: common hand 2D 3D (5) +2C (7) +JS (17) | dealer 4S QS 4S (18); "
        "each player: where they stood vs the dealer"
    )
    soft = {**INFINITE, "initial": ["AS", "6H"], "sequence": ["9C", "KD"]}
    assert "AS 6H (soft 17) +9C (16) +KD (bust)" in GAMES["infinite_blackjack"].describe(soft)


def test_andar_bahars_range_is_said_to_be_the_cards_dealt_bets() -> None:
    data = {
        "game": "andar_bahar",
        "game_card": "2D",
        "andar": ["AH", "2S"],
        "bahar": ["6C"],
        "winner": "andar",
        "cards_dealt": 3,
        "bucket": "1-5",
    }
    assert describe({"type": "round.result", "data": data}).endswith(
        "-> ANDAR (3 cards dealt: the cards-dealt bet's range 1-5)"
    )


def test_a_finished_shuffle_reads_as_what_it_means_not_as_the_protocol_line() -> None:
    data = {
        "shuffle_id": "17-1",
        "device": "shuffler",
        "decks": 1,
        "cards": 52,
        "raw": "DONE 0001 17-1 1 52*18",
    }
    line = describe({"type": "shuffle.done", "data": data})
    assert line == "1 deck(s), 52 cards shuffled by shuffler (shuffle 17-1): the next deck is ready"
    assert "DONE" not in line


def test_the_demos_last_line_counts_what_it_published() -> None:
    tally = DemoTally(started=100.0)
    for kind in [
        "round.opened",
        "round.paused",
        "round.resumed",
        "round.result",
        "round.closed",
        "round.voided",
    ]:
        tally.add(kind)
    assert tally.summary(112.4) == (
        "demo over after 12 s: 1 round(s) played, 1 result(s), 1 voided, 1 pause(s), 0 card(s) refused, "
        "6 event(s) in all"
    )


def test_the_narrator_says_what_the_table_waits_for_once_after_a_quiet_spell() -> None:
    # stud's players deciding for 2 s printed nothing: the wait is said, once, but not between the cards
    narrator = Narrator()
    narrator.event_printed(10.0)
    assert narrator.line("Deal to hand1", 10.25) is None  # the cards' own lines are coming
    line = narrator.line("Players decide: bet or fold — do not deal", 10.9)
    assert line is not None and line.endswith(
        "(table waits)        Players decide: bet or fold — do not deal"
    )
    assert narrator.line("Players decide: bet or fold — do not deal", 12.0) is None  # said once
    assert narrator.line("", 14.0) is None
