"""Where a card game's cards come from, as a part its flow holds (`flow.shoe`), not a base class.

- `ShoeOfRounds` (Baccarat, Live and Infinite Blackjack): a shoe of many rounds that its cut card ends. The
  shoe's number and id; the table's first shoe started before its first round or cut card
  (`ready_for_round`, `cut_card`); the cut card making the round it comes out in (between rounds: the next
  one) the shoe's last; the cut-card round finishing the shoe and asking the shuffler for the next one
  (`round_finished`); the finished shoe that stops new rounds until the next shoe starts (by itself, with
  `auto_new_shoe`, or by the input `new_shoe`: `handlers`, between rounds only, not while the shuffler
  is still shuffling the next one, and not while a card of this shoe waits for its re-scan). A game dealt
  from it writes only what is its own: where the cards go, and what a new shoe means to it besides
  (`CardFlow.shoe_started`).
- `DeckPerRound` (Single-deck Blackjack): a fresh deck for every round, announced as a shoe of its own
  (`shoe.started`), with no cut card: a cut card is refused, a deck is never "finished", and there is no
  `new_shoe`.

Both refuse to restore a shoe in play into a table that now deals from another number of decks. 5 Card
Stud and Andar Bahar deal every round from a fresh deck too, and number nothing: their flows only empty the
shoe's composition when the next deck is in.

A part keeps its state in attributes that are fields of the flow's record, flat, under the same names
(`GameFlow.parts`): the record is what it always was. What a part does to the round or the dealer's prompt,
it does to the flow it is given (`ShoeHolder`): it keeps no reference to it.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Protocol

from controller.cards import ShoeComposition
from controller.command_base import Command, NewShoe
from controller.events import CutCardSeen as CutCardEvent
from controller.events import ShoeStarted
from controller.flow import FlowOutput, Handler, InputRejected, RoundBook
from controller.games.card_flow import CardFlowRecord
from controller.lifecycle import NEXT_ROUND

PROMPT_NEW_SHOE = "New shoe loaded — wait for betting to open"


class ShoeRecord(CardFlowRecord):
    """What a card game dealt from numbered shoes keeps (`NumberedShoe`'s attributes, flat)."""

    shoe_number: int = 0
    shoe_id: str | None = None
    shoe_finished: bool = False


class ShoeHolder(Protocol):
    """The flow a shoe part works for (a `CardFlow` dealt from it)."""

    rounds: RoundBook
    composition: ShoeComposition
    prompt: str
    idle_reason: str
    #: the ref of the card that left the shoe unread and waits for its re-scan (`CardFlow`)
    unread_ref: str | None

    @property
    def waiting_for_shuffle(self) -> bool: ...

    def shoe_started(self, now: float, out: FlowOutput) -> None:
        """What else a new shoe means for the game (`CardFlow.shoe_started`)."""

    def _want_shuffle(self, reason: str) -> None:
        """The cards must be shuffled before the next round (`CardFlow._want_shuffle`)."""


class NumberedShoe:
    """Shoes numbered within the table, each announced by `shoe.started`."""

    def __init__(self) -> None:
        self.shoe_number = 0
        self.shoe_id: str | None = None
        #: the cut-card round is over: no round opens until a new shoe starts (by itself or by input)
        self.shoe_finished = False

    def start(self, flow: ShoeHolder, now: float, out: FlowOutput) -> None:
        self.shoe_number += 1
        self.shoe_id = f"{flow.rounds.table_id}-shoe{self.shoe_number:04d}"
        flow.composition.reset()
        flow.rounds.new_shoe()
        self.shoe_finished = False
        out.emit("shoe.started", ShoeStarted(shoe_id=self.shoe_id, decks=flow.composition.decks), now)
        flow.shoe_started(now, out)

    def restore_conflict(self, data: dict[str, Any], decks: int) -> str | None:
        composition = data.get("composition", {})
        stored = composition.get("decks")
        if stored != decks and composition.get("dealt_copies"):
            return f"the shoe in play holds {stored} decks but game.decks is now {decks}"
        return None

    def public(self, flow: ShoeHolder) -> dict[str, Any]:
        return {
            "shoe_id": self.shoe_id,
            "round_number_in_shoe": flow.rounds.number_in_shoe or None,
            "last_round_of_shoe": flow.rounds.last_of_shoe,
            "shoe_finished": self.shoe_finished,
            "cards_dealt_in_shoe": flow.composition.cards_dealt,
            "cards_left_in_shoe": flow.composition.cards_left,
        }


class ShoeOfRounds(NumberedShoe):
    """A shoe of many rounds that its cut card ends (see the module's docstring)."""

    def ready_for_round(self, flow: ShoeHolder, now: float, out: FlowOutput, *, auto_new_shoe: bool) -> bool:
        """The next round is due: the table's first shoe starts now, and after the cut-card round so does
        the next one if `auto_new_shoe`. False: the shoe is finished and waits for the input `new_shoe`."""
        if self.shoe_id is None:
            self.start(flow, now, out)
        if self.shoe_finished:
            if not auto_new_shoe:
                return False
            self.start(flow, now, out)
        return True

    def cut_card(self, flow: ShoeHolder, now: float, *, next_shoe_starts: bool) -> FlowOutput:
        """The reading: the cut card came out. Before the table's first shoe it is that shoe's (it starts
        now); after the cut-card round, with `next_shoe_starts`, it belongs to the shoe that comes next (the
        finished one already gave its cut card), else to the finished shoe."""
        out = FlowOutput()
        if self.shoe_id is None or (self.shoe_finished and next_shoe_starts):
            self.start(flow, now, out)
        self.cut_card_out(flow, now, out)
        return out

    def cut_card_out(self, flow: ShoeHolder, now: float, out: FlowOutput) -> None:
        """The cut card came out of the shoe in play."""
        assert self.shoe_id is not None
        if not self.shoe_finished:
            # the round in progress is the shoe's last; between rounds, the next one is
            flow.rounds.last_of_shoe = True
            if not flow.rounds.in_round:
                flow.prompt = "Cut card out — the next round is the last of this shoe"
        out.emit("shoe.cut_card", CutCardEvent(round_id=flow.rounds.round_id, shoe_id=self.shoe_id), now)

    def finish(self) -> None:
        """The cut-card round is over."""
        self.shoe_finished = True

    def round_finished(self, flow: ShoeHolder, last_of_shoe: bool) -> None:
        """A round's result is out: the cut-card round finishes the shoe, and with a shuffler at the table
        the next shoe waits for it."""
        if last_of_shoe:
            self.finish()
            flow._want_shuffle("shoe finished")

    def handlers(self, flow: ShoeHolder) -> dict[type[Command], Handler]:
        """The inputs the shoe takes for `flow`: `new_shoe`."""
        return {NewShoe: partial(self.new_shoe, flow)}

    def new_shoe(self, flow: ShoeHolder, command: NewShoe, now: float) -> FlowOutput:
        """Input `new_shoe`: a freshly shuffled shoe is in (between rounds only)."""
        if flow.rounds.in_round:
            raise InputRejected(
                "a new shoe can be loaded only between rounds: "
                f"finish or void round {flow.rounds.round_id} first"
            )
        if flow.waiting_for_shuffle:
            raise InputRejected("the shuffler has not finished the next shoe: wait for it")
        if flow.unread_ref is not None:
            # a card of this shoe is out and not accounted for yet: its re-scan must not count in the next
            raise InputRejected(
                f"card {flow.unread_ref} waits for its re-scan: re-scan it or enter it by hand (manual_card) "
                "before a new shoe is loaded"
            )
        out = FlowOutput()
        self.start(flow, now, out)
        self.loaded(flow, now)
        return out

    def loaded(self, flow: ShoeHolder, now: float) -> None:
        """What a new shoe loaded by input usually means: the next round opens (now, if its gap is over)."""
        flow.prompt = PROMPT_NEW_SHOE
        flow.idle_reason = "a new shoe was loaded: no card is expected until the next round's betting closes"
        if NEXT_ROUND not in flow.rounds.timers:  # the gap after the last round is over: open now
            flow.rounds.set_timer(NEXT_ROUND, now)


class DeckPerRound(NumberedShoe):
    """A fresh deck for every round, a shoe of one round (see the module's docstring)."""

    #: what a cut card is told
    CUT_CARD_REFUSAL = "a fresh deck is dealt every round: it has no cut card"
