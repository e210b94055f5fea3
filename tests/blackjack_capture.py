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
from tests.shoe_capture import _Recorder

START = 1_790_000_000.0


def _deal(recorder: _Recorder, device: ShoeDevice, cards: int) -> None:
    for _ in range(cards):
        assert device.draw(recorder.now)
        recorder.pump(0.3)
        while device.unread:
            recorder.pump(0.4)
            device.rescan(recorder.now)
            recorder.pump(0.3)


#: a seven-box round can take 30 cards: the Live dealer puts the cut card well before the end
LIVE_CUT_POSITION = 60


def record_live(
    shoes: int, *, seed: int, faults: ShoeFaults, seats: int = 7
) -> tuple[list[CaptureRecord], list[BoxedRound]]:
    recorder = _Recorder(START)
    expected: list[BoxedRound] = []
    for number in range(shoes):
        device = ShoeDevice(
            decks=8,
            seed=seed + number,
            faults=replace(faults, seed=seed + number),
            first_seq=1 + 1000 * number,
            cut_position=LIVE_CUT_POSITION,
        )
        assert device.cut_index is not None
        rounds = live_shoe(device.cards, device.cut_index, seats)
        expected += rounds
        recorder.device = device
        device.connected(recorder.now)
        recorder.pump(0.5)
        _deal(recorder, device, rounds[-1].first_card + rounds[-1].cards_used)
        recorder.pump(1.0)
    return recorder.records, expected


def record_infinite(
    shoes: int, *, seed: int, faults: ShoeFaults
) -> tuple[list[CaptureRecord], list[InfiniteShoe]]:
    recorder = _Recorder(START)
    expected: list[InfiniteShoe] = []
    for number in range(shoes):
        device = ShoeDevice(
            decks=8,
            seed=seed + number,
            faults=replace(faults, seed=seed + number),
            first_seq=1 + 1000 * number,
        )
        assert device.cut_index is not None
        shoe = infinite_shoe(device.cards, device.cut_index)
        expected.append(shoe)
        recorder.device = device
        device.connected(recorder.now)
        recorder.pump(0.5)
        _deal(recorder, device, shoe.cards_used)
        recorder.pump(1.0)
    return recorder.records, expected


def record_single_deck(
    rounds: int, *, seed: int, faults: ShoeFaults
) -> tuple[list[CaptureRecord], list[BoxedRound]]:
    recorder = _Recorder(START)
    expected: list[BoxedRound] = []
    device = ShoeDevice(decks=1, seed=seed, faults=replace(faults, seed=seed), cut_position=None)
    recorder.device = device
    device.connected(recorder.now)
    recorder.pump(0.5)
    for number in range(rounds):
        deck = shuffled_shoe(1, seed + number)
        device.load(deck)
        played = boxed_round(Pack(deck), seats=1, live=False)
        expected.append(played)
        _deal(recorder, device, played.cards_used)
        recorder.pump(0.5)
    return recorder.records, expected
