"""Record a realistic `shoe-line` capture without hardware: the simulated shoe's core talks to the real host
session on a virtual clock, exactly as on a table, and every byte each way is kept with its time.

The dealer deals whole shoes by the book (the independent reference in `baccarat_reference` says how many
cards each round takes), re-scans every unread card, and a new shoe follows the cut-card round.
"""

from __future__ import annotations

from dataclasses import replace

from drivers.capture import CaptureRecord
from drivers.shoe.session import ShoeSession
from drivers.shoe.simulator import ShoeDevice, ShoeFaults
from tests.baccarat_reference import ExpectedRound, expected_rounds

STEP = 0.05


class _Recorder:
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


def record_shoes(
    shoes: int, *, seed: int, faults: ShoeFaults, start: float = 1_790_000_000.0
) -> tuple[list[CaptureRecord], list[ExpectedRound]]:
    recorder = _Recorder(start)
    expected: list[ExpectedRound] = []
    for number in range(shoes):
        device = ShoeDevice(
            decks=8,
            seed=seed + number,
            faults=replace(faults, seed=seed + number),
            first_seq=1 + 1000 * number,
        )
        assert device.cut_index is not None
        rounds = expected_rounds(device.cards, device.cut_index)
        expected += rounds
        last = rounds[-1]
        cards_needed = last.first_card_index + len(last.player) + len(last.banker)
        recorder.device = device
        device.connected(recorder.now)
        recorder.pump(0.5)
        for _ in range(cards_needed):
            assert device.draw(recorder.now)
            recorder.pump(0.3)
            while device.unread:
                recorder.pump(0.4)
                device.rescan(recorder.now)
                recorder.pump(0.3)
        recorder.pump(1.0)
    return recorder.records, expected
