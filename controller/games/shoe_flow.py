"""A card game dealt from a shoe of many rounds that its cut card ends (baccarat, Live and Infinite
Blackjack).

What such a shoe means for every game dealt from it lives here: the shoe's number and id, the cut card
making the round it comes out in (between rounds: the next one) the shoe's last, the finished shoe that
stops new rounds until the next shoe starts, the input `new_shoe` (between rounds only, and not while the
shuffler is still shuffling the next one), and the refusal to restore a shoe in play into a table that now
deals from another number of decks. A game says what a new shoe means for it (`_start_shoe`, `_shoe_loaded`)
and what else its cut card does.

Fresh-deck games (Andar Bahar, 5 Card Stud, Single-deck Blackjack) deal every round from a new deck and have
no cut card; Single-deck Blackjack shares the blackjack flow and refuses a cut card there.
"""

from __future__ import annotations

from typing import Any

from controller.command_base import NewShoe
from controller.events import CutCardSeen as CutCardEvent
from controller.events import ShoeStarted
from controller.flow import FlowOutput, InputRejected
from controller.games.card_flow import CardFlow, CardFlowRecord
from controller.lifecycle import NEXT_ROUND

PROMPT_NEW_SHOE = "New shoe loaded — wait for betting to open"


class ShoeRecord(CardFlowRecord):
    shoe_number: int = 0
    shoe_id: str | None = None
    shoe_finished: bool = False


class ShoeFlow(CardFlow):
    """The shoe of many rounds (see the module's docstring)."""

    def __init__(self, table_id: str, settings: Any, decks: int) -> None:
        super().__init__(table_id, settings, decks=decks)
        self.shoe_number = 0
        self.shoe_id: str | None = None
        # the cut-card round is over: no round opens until a new shoe starts (by itself or by input)
        self.shoe_finished = False

    def restore_conflict(self, data: dict[str, Any]) -> str | None:
        composition = data.get("composition", {})
        decks = composition.get("decks")
        if decks != self.composition.decks and composition.get("dealt_copies"):
            return f"the shoe in play holds {decks} decks but game.decks is now {self.composition.decks}"
        return None

    def _start_shoe(self, now: float, out: FlowOutput) -> None:
        self.shoe_number += 1
        self.shoe_id = f"{self.rounds.table_id}-shoe{self.shoe_number:04d}"
        self.composition.reset()
        self.rounds.new_shoe()
        self.shoe_finished = False
        out.emit("shoe.started", ShoeStarted(shoe_id=self.shoe_id, decks=self.composition.decks), now)

    def _cut_card_out(self, now: float, out: FlowOutput) -> None:
        """The cut card came out of the shoe in play."""
        assert self.shoe_id is not None
        if not self.shoe_finished:
            # the round in progress is the shoe's last; between rounds, the next one is
            self.rounds.last_of_shoe = True
            if not self.rounds.in_round:
                self.prompt = "Cut card out — the next round is the last of this shoe"
        out.emit("shoe.cut_card", CutCardEvent(round_id=self.rounds.round_id, shoe_id=self.shoe_id), now)

    def _new_shoe_input(self, command: NewShoe, now: float) -> FlowOutput:
        if self.rounds.in_round:
            raise InputRejected(
                "a new shoe can be loaded only between rounds: "
                f"finish or void round {self.rounds.round_id} first"
            )
        if self.waiting_for_shuffle:
            raise InputRejected("the shuffler has not finished the next shoe: wait for it")
        out = FlowOutput()
        self._start_shoe(now, out)
        self._shoe_loaded(now, out)
        return out

    def _shoe_loaded(self, now: float, out: FlowOutput) -> None:
        """A new shoe is in (by input, or by itself after the cut-card round where that is the policy)."""
        self.prompt = PROMPT_NEW_SHOE
        self.idle_reason = "a new shoe was loaded: no card is expected until the next round's betting closes"
        if NEXT_ROUND not in self.rounds.timers:  # the gap after the last round is over: open now
            self.rounds.set_timer(NEXT_ROUND, now)

    def _public_shoe(self) -> dict[str, Any]:
        return {
            "shoe_id": self.shoe_id,
            "round_number_in_shoe": self.rounds.number_in_shoe or None,
            "last_round_of_shoe": self.rounds.last_of_shoe,
            "shoe_finished": self.shoe_finished,
            "cards_dealt_in_shoe": self.composition.cards_dealt,
            "cards_left_in_shoe": self.composition.cards_left,
        }
