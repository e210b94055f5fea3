"""Record a realistic `shoe-line` capture without hardware: the simulated shoe's core talks to the real host
session on a virtual clock, exactly as on a table, and every byte each way is kept with its time.

The dealer deals whole shoes by the book (the independent reference in `baccarat_reference` says how many
cards each round takes), re-scans every unread card, and a new shoe follows the cut-card round.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from controller.testing.baccarat_reference import ExpectedRound, expected_rounds
from drivers.capture import CaptureRecord
from drivers.shoe.session import ShoeSession
from drivers.shoe.simulator import ShoeDevice, ShoeFaults

STEP = 0.05


def numbered_shoe(number: int, *, seed: int, faults: ShoeFaults, **options: Any) -> ShoeDevice:
    """The `number`th 8-deck shoe of a capture (from 0): its own seed, and seqs apart from the last shoe's."""
    device = ShoeDevice(
        decks=8,
        seed=seed + number,
        faults=replace(faults, seed=seed + number),
        first_seq=1 + 1000 * number,
        **options,
    )
    assert device.cut_index is not None
    return device


class Recorder:
    """The real host session and one simulated shoe at a time on a virtual clock; every byte each way is kept
    with its time."""

    def __init__(self, start: float) -> None:
        self.now = start
        self.records: list[CaptureRecord] = []
        self.host = ShoeSession("shoe")
        self.host.connection_made(start)
        self.device: ShoeDevice | None = None

    def pump(self, seconds: float) -> None:
        assert self.device is not None
        end = self.now + seconds
        while self.now < end:
            out = self.device.poll(self.now)
            if out:
                self.records.append(CaptureRecord(t=self.now, direction="rx", data=out))
                self.host.data_received(out, self.now)
            self.host.tick(self.now)
            sent = self.host.data_to_send()
            if sent:
                self.records.append(CaptureRecord(t=self.now, direction="tx", data=sent))
                self.device.receive(sent, self.now)
            self.now = round(self.now + STEP, 6)

    def plug_in(self, device: ShoeDevice) -> None:
        """The host talks to `device` from now on; it says hello."""
        self.device = device
        device.connected(self.now)
        self.pump(0.5)

    def deal(self, cards: int) -> None:
        """The dealer draws `cards` cards, re-scanning each unread one until it is read."""
        assert self.device is not None
        for _ in range(cards):
            assert self.device.draw(self.now)
            self.pump(0.3)
            while self.device.unread:
                self.pump(0.4)
                self.device.rescan(self.now)
                self.pump(0.3)

    def deal_shoes(
        self,
        shoes: int,
        *,
        seed: int,
        faults: ShoeFaults,
        cards_to_deal: Callable[[ShoeDevice], int],
        **options: Any,
    ) -> None:
        """Deal `shoes` 8-deck shoes (`numbered_shoe`) one after the other, each as far as `cards_to_deal`
        says (it is asked before the shoe is plugged in)."""
        for number in range(shoes):
            device = numbered_shoe(number, seed=seed, faults=faults, **options)
            cards = cards_to_deal(device)
            self.plug_in(device)
            self.deal(cards)
            self.pump(1.0)


def record_shoes(
    shoes: int, *, seed: int, faults: ShoeFaults, start: float = 1_790_000_000.0
) -> tuple[list[CaptureRecord], list[ExpectedRound]]:
    recorder = Recorder(start)
    expected: list[ExpectedRound] = []

    def up_to_the_cut_card_round(device: ShoeDevice) -> int:
        assert device.cut_index is not None
        rounds = expected_rounds(device.cards, device.cut_index)
        expected.extend(rounds)
        last = rounds[-1]
        return last.first_card_index + len(last.player) + len(last.banker)

    recorder.deal_shoes(shoes, seed=seed, faults=faults, cards_to_deal=up_to_the_cut_card_round)
    return recorder.records, expected
