"""Record realistic `shoe-line` captures of the three blackjack variants without hardware: the simulated shoe
talks to the real host session on a virtual clock (`tests.shoe_capture`), and the dealer deals exactly the
cards the independent reference (`tests.blackjack_reference`) says each round takes, re-scanning every
unread card. Live and Infinite deal whole 8-deck shoes up to the cut-card round, then a new shoe (Infinite's
starts with the burn); Single-deck loads a freshly shuffled deck for every round."""

from __future__ import annotations

from dataclasses import replace

from drivers.capture import CaptureRecord
from drivers.shoe.simulator import ShoeDevice, ShoeFaults, shuffled_shoe
from tests.blackjack_reference import BoxedRound, InfiniteShoe, Pack, boxed_round, infinite_shoe, live_shoe
from tests.shoe_capture import Recorder

START = 1_790_000_000.0


#: a seven-box round can take 30 cards: the Live dealer puts the cut card well before the end
LIVE_CUT_POSITION = 60


def record_live(
    shoes: int, *, seed: int, faults: ShoeFaults, seats: int = 7
) -> tuple[list[CaptureRecord], list[BoxedRound]]:
    recorder = Recorder(START)
    expected: list[BoxedRound] = []

    def up_to_the_cut_card_round(device: ShoeDevice) -> int:
        assert device.cut_index is not None
        rounds = live_shoe(device.cards, device.cut_index, seats)
        expected.extend(rounds)
        return rounds[-1].first_card + rounds[-1].cards_used

    recorder.deal_shoes(
        shoes,
        seed=seed,
        faults=faults,
        cards_to_deal=up_to_the_cut_card_round,
        cut_position=LIVE_CUT_POSITION,
    )
    return recorder.records, expected


def record_infinite(
    shoes: int, *, seed: int, faults: ShoeFaults
) -> tuple[list[CaptureRecord], list[InfiniteShoe]]:
    recorder = Recorder(START)
    expected: list[InfiniteShoe] = []

    def up_to_the_cut_card(device: ShoeDevice) -> int:
        assert device.cut_index is not None
        expected.append(infinite_shoe(device.cards, device.cut_index))
        return expected[-1].cards_used

    recorder.deal_shoes(shoes, seed=seed, faults=faults, cards_to_deal=up_to_the_cut_card)
    return recorder.records, expected


def record_single_deck(
    rounds: int, *, seed: int, faults: ShoeFaults
) -> tuple[list[CaptureRecord], list[BoxedRound]]:
    recorder = Recorder(START)
    expected: list[BoxedRound] = []
    device = ShoeDevice(decks=1, seed=seed, faults=replace(faults, seed=seed), cut_position=None)
    recorder.plug_in(device)
    for number in range(rounds):
        deck = shuffled_shoe(1, seed + number)
        device.load(deck)
        played = boxed_round(Pack(deck), seats=1, live=False)
        expected.append(played)
        recorder.deal(played.cards_used)
        recorder.pump(0.5)
    return recorder.records, expected
