"""Record realistic `shoe-line` captures of the three blackjack variants without hardware: the simulated shoe
talks to the real host session on a virtual clock (`shoe_capture`), and the dealer deals exactly the cards
the independent reference (`blackjack_reference`) says each round takes, re-scanning every unread card. Live
and Infinite deal whole 8-deck shoes up to the cut-card round, then a new shoe (Infinite's starts with the
burn); Single-deck loads a freshly shuffled deck for every round. `boxed_story` and `reference_story` put a
replay's rounds and the reference's side by side."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from controller.events import Envelope
from controller.testing.blackjack_reference import (
    BoxedRound,
    InfiniteShoe,
    Pack,
    boxed_round,
    infinite_shoe,
    live_shoe,
)
from controller.testing.shoe_capture import Recorder
from drivers.capture import CaptureRecord
from drivers.shoe.simulator import ShoeDevice, ShoeFaults, shuffled_shoe

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


# --- comparing a replay with the reference (the replay tests) -----------------------------------------------


def by_round(envelopes: list[Envelope], kind: str) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for envelope in envelopes:
        if envelope.type == kind and envelope.subject is not None:
            found[envelope.subject].append(envelope.data)
    return found


def boxed_story(envelopes: list[Envelope]) -> list[tuple[Any, ...]]:
    decisions = by_round(envelopes, "blackjack.decision")
    story = []
    for envelope in envelopes:
        if envelope.type != "round.result":
            continue
        data = envelope.data
        hands = tuple(
            (h["seat"], h["hand"], tuple(h["cards"]), h["doubled"], h["split"], h["outcome"])
            for h in data["hands"]
        )
        made_by = decisions[envelope.subject] if envelope.subject is not None else []
        made = tuple((d["seat"], d["hand"], d["action"]) for d in made_by)
        story.append((hands, tuple(data["dealer"]["cards"]), made, data["last_round_of_shoe"]))
    return story


def reference_story(rounds: list[BoxedRound]) -> list[tuple[Any, ...]]:
    return [
        (
            tuple(
                (h.seat, h.number, tuple(h.cards), h.doubled, h.split, outcome)
                for h, outcome in zip(r.hands, r.outcomes, strict=True)
            ),
            tuple(r.dealer),
            tuple(r.decisions),
            r.last_of_shoe,
        )
        for r in rounds
    ]
