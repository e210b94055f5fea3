"""How the card-game flow tests drive a flow: the way the runtime does, the clock moving only when the test
says so. Each test module's `Table` dataclass holds `flow`, `now` and `seq` and adds its game's own steps."""

from __future__ import annotations

from controller.flow import FlowOutput, GameFlow
from drivers.readings import CardSeen, CardUnread, Reading, ShuffleDone, ShuffleFailed


class DrivesCardFlow:
    flow: GameFlow
    now: float
    seq: int

    def tick(self, advance: float = 0.0) -> FlowOutput:
        self.now += advance
        return self.flow.on_tick(self.now)

    def tick_to_deadline(self) -> FlowOutput:
        """Move the clock to the flow's next deadline (if it is ahead) and handle what is due."""
        deadline = self.flow.next_deadline()
        return self.tick(0.0 if deadline is None else max(0.0, deadline - self.now))

    def read(self, reading: Reading) -> FlowOutput:
        return self.flow.on_reading(reading, self.now)

    def next_ref(self) -> str:
        self.seq += 1
        return str(self.seq)

    def card(self, code: str, rescan_of: str | None = None, device: str = "shoe") -> FlowOutput:
        ref = rescan_of if rescan_of is not None else self.next_ref()
        raw = f"RESCAN {ref} {code}" if rescan_of is not None else f"CARD {ref} {code}"
        seen = CardSeen(device=device, time=self.now, raw=raw, code=code, ref=ref, rescan_of=rescan_of)
        return self.read(seen)

    def noread(self, ref: str | None = None) -> FlowOutput:
        ref = ref or self.next_ref()
        return self.read(CardUnread(device="shoe", time=self.now, raw=f"NOREAD {ref}", ref=ref))

    # -- the shuffler (a card flow with `shuffler_device = "shuffler"`) ------------------------------------

    def awaited_shuffle(self) -> str:
        """The id of the last SHUFFLE the flow asked for and still waits for."""
        ids: list[str] = self.flow.shuffle.ids  # type: ignore[attr-defined]
        assert ids, "the flow waits for no shuffle"
        return ids[-1]

    def shuffle_done(self, cards: int | None = None, shuffle_id: str | None = None) -> FlowOutput:
        """The shuffler's DONE for the awaited shuffle (a whole deck per deck, unless `cards` says)."""
        decks = self.flow.composition.decks  # type: ignore[attr-defined]
        shuffle_id = shuffle_id or self.awaited_shuffle()
        counted = decks * 52 if cards is None else cards
        raw = f"DONE 0001 {shuffle_id} {decks} {counted}"
        done = ShuffleDone(
            device="shuffler", time=self.now, raw=raw, shuffle_id=shuffle_id, decks=decks, cards=counted
        )
        return self.read(done)

    def shuffle_failed(self, code: str = "E01", reason: str = "JAM", **counts: int) -> FlowOutput:
        failed = ShuffleFailed(
            device="shuffler",
            time=self.now,
            raw=f"ERR 0002 {code} {reason}",
            code=code,
            reason=reason,
            shuffle_id=self.awaited_shuffle(),
            expected=counts.get("expected"),
            actual=counts.get("actual"),
        )
        return self.read(failed)
