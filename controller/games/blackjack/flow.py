"""Blackjack at a table with boxes: Live Blackjack (docs/games/blackjack.md), and the procedure it shares
with Single-deck Blackjack (docs/games/single_deck_blackjack.md, `controller.games.single_deck_blackjack`).

`BlackjackTable` is what every blackjack variant's flow shares (Infinite Blackjack's too, in
`controller.games.infinite_blackjack`): the round's procedure (betting, the initial deal in the variant's
order, insurance and the peek, the dealer's cue, the result, a void), the dealer's hand, the hole card kept
secret until it is revealed, the stages of the round (`Stage`, with each variant's table of moves), and the
shoe's gate, open exactly while a card is expected. The cards come from a part the flow holds (`shoe_kind`,
`controller.games.card_source`): a shoe of many rounds ended by its cut card, or a fresh deck every round
(Single-deck), which has no cut card to refuse and no shoe to finish. A variant says only where its cards go
after the initial deal, what its players decide and what its result holds (abstract methods).
`BoxedBlackjackFlow` is the procedure of a table with boxes, parameterised by `HouseRules`;
`LiveBlackjackFlow` and `SingleDeckBlackjackFlow` are its two rule sets. The rules themselves (totals, the
dealer's rule, the disconnect policies, outcomes) are `blackjack_rules`.

Procedure (docs/games/blackjack.md, docs/games/single_deck_blackjack.md):
- Live: the first card face up to every box from the dealer's left, one to the dealer, the second card to
  every box; NO hole card. Boxes play in dealing order; then the dealer draws the second card and completes
  the hand, hitting soft 17. Split same rank (not K+10), once; split aces one card each (21 there is not
  blackjack); double on the first two cards and after a split except split aces; insurance on a dealer ace,
  also with blackjack; a box's blackjack wins at once when the dealer's card is neither ten-valued nor an ace.
- Single-deck: one box; player, dealer up, player, dealer face down. The dealer peeks under an ace or a
  ten-valued card. Hits soft 17; one split of equal VALUE; double on 9, 10 or 11 only (also after a split);
  no surrender; no insurance for a player blackjack. A fresh deck every round.

Decisions come from the rules engine as inputs (`hit`, `stand`, `double`, `split`, `surrender`, `insurance`,
each naming the seat and hand). A decision the rules do not allow at that moment is refused with the reason
and changes nothing. The hand playing now has `decision_seconds`; when nothing comes in time the variant's
disconnect policy decides (Live: basic strategy for H17; Single-deck: hit to 12), and the `blackjack.decision`
event says `by: "policy"`.

The hole card is secret until it is revealed: it is read by the shoe, kept in a SECRET field of the flow's
record (the journal's state row only), used for the peek (`dealer.peek` says only whether the dealer has
blackjack), announced as `card.face_down` (its place, not its identity), and its `card.dealt` comes when it is
turned over. A rejection or a held reading while it is the card expected carries neither its code nor its
device text.

Time only comes in as `now`.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from controller.cards import Card, CardCode
from controller.command_base import Command, ManualCard
from controller.events import CardDealt, iso_ms
from controller.flow import SECRET, FlowOutput, FlowRecord, Handler, InputRejected, Phase
from controller.games.blackjack.events import (
    BlackjackDealer,
    BlackjackDecisionMade,
    BlackjackHand,
    BlackjackHandSettled,
    BlackjackResult,
    BoxedBlackjackResult,
    CardFaceDown,
    DealerPeek,
)
from controller.games.blackjack_rules import (
    Action,
    Allowed,
    basic_strategy_h17,
    card_value,
    dealer_draws,
    dealer_may_have_blackjack,
    hand_total,
    hit_to_twelve,
    is_ace,
    is_blackjack,
    outcome,
)
from controller.games.card_flow import CardFlow, CardGameSettings, manual_identities, position_view
from controller.games.card_source import DeckPerRound, ShoeOfRounds, ShoeRecord
from controller.stages import StageTable
from drivers.readings import CutCardSeen, Reading

#: how the dealer's panel shows a card lying face down (not a card code: the panel prints it as it is)
FACE_DOWN = "XX"
#: the round book's timers
DECISION = "decision"
INSURANCE = "insurance"

PROMPT_BETTING_OPEN = "Betting open — do not deal yet"
PROMPT_BETTING_OPEN_FIRST_CARD = "Betting open — the first card closes betting"
PROMPT_VOIDED = "Round voided — set the dealt cards aside"


# --- inputs (MQTT `inputs/<name>/<user>`) -------------------------------------------------------------


class HandDecision(Command):
    """A player's decision for one hand of one box (Live and Single-deck Blackjack)."""

    seat: int = Field(1, ge=1, le=9, description="the box, 1 = the dealer's left")
    hand: int = Field(1, ge=1, le=2, description="1; 2 for the second hand of a split box")


class Hit(HandDecision):
    """One more card to the hand."""


class Stand(HandDecision):
    """No more cards to the hand."""


class Double(HandDecision):
    """Double the bet; the hand takes exactly one more card."""


class Split(HandDecision):
    """Split the pair into two hands (once)."""


class Surrender(HandDecision):
    """Give up the hand (where the table offers it): half the bet back."""


class Insurance(Command):
    """The box's answer to insurance, while the dealer's ace is offering it."""

    seat: int = Field(1, ge=1, le=9)
    take: bool = Field(True, description="true: the box takes insurance; false: it declines")


#: a player's decisions at a table with boxes (Live and Single-deck), each input named as its model
BOXED_INPUTS: dict[str, type[Command]] = {
    model.__name__.lower(): model for model in (Hit, Stand, Double, Split, Surrender, Insurance)
}


class Seated(Command):
    """The boxes that hold a bet in this round (Live Blackjack), sent by the rules engine while betting is
    open: only they are dealt. Without it every configured seat is dealt."""

    seats: list[Annotated[int, Field(ge=1, le=9)]] = Field(
        min_length=1, max_length=9, description="the seated boxes, 1 = the dealer's left"
    )


# --- the stages of a round -------------------------------------------------------------------------------


class Stage(StrEnum):
    """Where a blackjack table is within its round (its record's and public state's `stage`)."""

    WAITING = "waiting"  # between rounds
    BURN = "burn"  # Infinite: the first card of a new shoe is shown, and that many cards burned
    SHUFFLE = "shuffle"  # Infinite: the shoe is finished; the decks are reshuffled (new_shoe)
    BETTING = "betting"
    INITIAL = "initial"  # the initial deal
    INSURANCE = "insurance"  # the dealer's ace offers insurance
    TURNS = "turns"  # a table with boxes: each hand decides in turn
    DECISIONS = "decisions"  # Infinite: the common hand takes cards while the players want one
    DEALER = "dealer"  # the dealer completes the hand


#: the stages a round goes through, each of which its end (the result, or a void) may leave
_ROUND = (Stage.BETTING, Stage.INITIAL, Stage.INSURANCE, Stage.DEALER)

#: a table with boxes (Live, Single-deck): insurance only under a dealer's ace. The peek's dealer
#: blackjack ends the round after the initial deal or after insurance, with no turns.
BOXED_STAGES = StageTable(
    "boxed blackjack",
    Stage.WAITING,
    [
        (Stage.WAITING, Stage.BETTING, Stage.INITIAL, Stage.INSURANCE, Stage.TURNS, Stage.DEALER),
        (Stage.INITIAL, Stage.TURNS),
    ],
    ending=(*_ROUND, Stage.TURNS),
)

#: Infinite Blackjack: a new shoe's burn before its first round (after the reshuffle of a finished shoe
#: too); the peek's dealer blackjack goes to the dealer's stage at once.
INFINITE_STAGES = StageTable(
    "infinite blackjack",
    Stage.WAITING,
    [
        (Stage.WAITING, Stage.SHUFFLE, Stage.BURN, Stage.WAITING, Stage.BURN),
        (Stage.WAITING, Stage.BETTING, Stage.INITIAL, Stage.INSURANCE, Stage.DECISIONS, Stage.DEALER),
        (Stage.INITIAL, Stage.DECISIONS),
        (Stage.INITIAL, Stage.DEALER),
        (Stage.INSURANCE, Stage.DEALER),
    ],
    ending=(*_ROUND, Stage.DECISIONS),
)


# --- the shared flow ------------------------------------------------------------------------------------


def dealer_words(dealer: dict[str, Any]) -> str:
    """The dealer's hand in the words of a result: "blackjack", "bust" or its total."""
    return "blackjack" if dealer["blackjack"] else ("bust" if dealer["bust"] else str(dealer["total"]))


def dealer_result(cards: Sequence[Card]) -> BlackjackDealer:
    total = hand_total(cards)
    return BlackjackDealer(
        cards=[card.code for card in cards],
        total=total.total,
        soft=total.soft,
        blackjack=is_blackjack(cards),
        bust=total.bust,
    )


class BlackjackTableRecord(ShoeRecord):
    stage: Stage = Stage.WAITING
    dealer: list[CardCode] = Field(default_factory=list)
    #: the dealer's face-down card and the device text it came from: kept in the state row ONLY
    hole: CardCode | None = Field(None, json_schema_extra=SECRET)
    hole_raw: str = Field("", json_schema_extra=SECRET)
    hole_rescan: bool = False
    gate_open: bool = False
    last_decision: str = ""
    initial_dealt: int = 0
    awaiting_card: bool = False


class BlackjackTable(CardFlow):
    """What every blackjack flow shares (see the module's docstring)."""

    settings: Any
    #: a fresh deck every round (Single-deck), else a shoe of many rounds ended by its cut card
    #: what the cards are dealt from: a fresh deck every round (Single-deck), else a shoe of many rounds
    #: ended by its cut card
    shoe_kind: ClassVar[type[ShoeOfRounds] | type[DeckPerRound]] = ShoeOfRounds
    parts: ClassVar[tuple[str, ...]] = ("shoe",)
    #: the dealer's soft-17 rule
    dealer_hits_soft_17: ClassVar[bool] = True
    #: the round's stages, and which may follow which
    stages: ClassVar[StageTable[Stage]]
    #: where the face-down card sits: the dealer's second card
    HOLE_POSITION: ClassVar[str] = "dealer"
    #: the card may be (a copy of) the face-down card: a rejection says not a word of what it is
    face_down_refusal: ClassVar[str] = "a card could not be taken while the dealer's card is face down"

    def __init__(self, table_id: str, settings: Any, decks: int) -> None:
        super().__init__(table_id, settings, decks=decks)
        self.shoe = self.shoe_kind()
        self.stage = Stage.WAITING
        self.dealer: list[Card] = []
        self.hole: Card | None = None
        self.hole_raw = ""
        self.hole_rescan = False
        self.gate_open = False
        self.last_decision = ""
        #: cards of the initial deal dealt so far; a card asked for after it and not dealt yet
        self.initial_dealt = 0
        self.awaiting_card = False

    def _to(self, stage: Stage) -> None:
        """Move to `stage`: a move the variant's stage table does not have raises StageError."""
        self.stage = self.stages.move(self.stage, stage)

    # -- what each variant says ----------------------------------------------------------------------------

    @abstractmethod
    def _initial_order(self) -> Sequence[str]:
        """The places of the initial deal, in order ("hole": the dealer's face-down card)."""

    @abstractmethod
    def _target_in_play(self) -> str | None:
        """Where the next card goes after the initial deal (the players' and the dealer's draws), or None."""

    @abstractmethod
    def _cards_at(self, position: str) -> list[Card]:
        """The cards lying at a player's `position`."""

    @abstractmethod
    def _label_of(self, position: str) -> str:
        """How the dealer's cue names a player's `position`."""

    @abstractmethod
    def _card_in_play(self, now: float, out: FlowOutput) -> None:
        """A card after the initial deal has been placed: what it changes in the round."""

    def _waiting_reason(self) -> str:
        """Why no card is expected while a round is in play, no card is wanted and no insurance is offered."""
        return "no card is expected now"

    def _waiting_cue(self) -> str:
        """The dealer's cue while the players decide ("" when there is nothing to say)."""
        return ""

    @abstractmethod
    def _clear_hands(self) -> None:
        """Forget the players' cards (a voided round)."""

    @abstractmethod
    def _policy_decides(self, now: float, out: FlowOutput) -> None:
        """No decision came within `decision_seconds`: the variant's disconnect policy decides."""

    @abstractmethod
    def _end_insurance(self, now: float, out: FlowOutput, by: str) -> None:
        """Insurance is no longer offered (every answer came, or its time ran out: `by` says which)."""

    # -- the shoe ------------------------------------------------------------------------------------------

    def restore_conflict(self, data: dict[str, Any]) -> str | None:
        return self.shoe.restore_conflict(data, self.composition.decks)

    def _new_deck(self, now: float, out: FlowOutput) -> None:
        """A fresh deck for the round (Single-deck). The hook for the shuffler: a table whose shuffler the
        controller drives asks it here for the next deck and waits for its `shuffle.done` before dealing."""
        self.shoe.start(self, now, out)

    def _on_cut_card(self, reading: CutCardSeen, now: float) -> FlowOutput:
        if isinstance(self.shoe, DeckPerRound):
            out = FlowOutput()
            self._reject(out, now, reading, self.shoe.CUT_CARD_REFUSAL)
            return out
        # a cut card after the cut-card round is the finished shoe's: the next shoe starts with its round
        return self.shoe.cut_card(self, now, next_shoe_starts=False)

    # -- the face-down card --------------------------------------------------------------------------------

    def _face_down_expected(self) -> bool:
        """The card expected next goes face down (the hole card): nothing may say what it is."""
        return self.rounds.in_round and self._next_target() == "hole"

    def _holds_secret(self) -> bool:
        # the face-down card is out (until its reveal) or is the card expected next: any card read now may
        # be it, or a copy of it
        return self.hole is not None or self._face_down_expected()

    def _deal_face_down(self, card: Card, now: float, out: FlowOutput, raw: str, rescan: bool) -> None:
        assert self.rounds.round_id is not None
        self.composition.take(card)
        self.rounds.start_play()
        self.hole, self.hole_raw, self.hole_rescan = card, raw, rescan
        index = len(self.dealer)
        face_down = CardFaceDown(
            round_id=self.rounds.round_id, position=self.HOLE_POSITION, index=index, rescan=rescan
        )
        out.emit("card.face_down", face_down, now)

    def _reveal(self, now: float, out: FlowOutput) -> None:
        """Turn the face-down card over: from now it is an ordinary dealt card."""
        assert self.hole is not None and self.rounds.round_id is not None
        card = self.hole
        self.dealer.append(card)
        dealt = CardDealt(
            round_id=self.rounds.round_id,
            card=card.code,
            position=self.HOLE_POSITION,
            index=len(self.dealer) - 1,
            rescan=self.hole_rescan,
            raw=self.hole_raw,
            # entered by hand when it was dealt face down: its device text ends with the hand entry's line,
            # which names who entered and who confirmed it when a supervisor had to
            manual=self.hole_raw.rsplit("\n", 1)[-1].startswith("manual_card "),
            **manual_identities(self.hole_raw),
        )
        out.emit("card.dealt", dealt, now)
        self.hole, self.hole_raw, self.hole_rescan = None, "", False

    def _dealer_with_hole(self) -> list[Card]:
        """The dealer's hand as the rules see it (the hole card included): for the peek, never published."""
        return [*self.dealer, self.hole] if self.hole is not None else list(self.dealer)

    def _manual_card_decided(self, out: FlowOutput) -> None:
        # a confirmed card may be the one the game waited for: the gate follows what is expected now
        self._sync_gate(out)

    # -- the shoe's gate: open exactly while a card is expected ------------------------------------------

    def _sync_gate(self, out: FlowOutput) -> None:
        wanted = self._why_no_card_now() is None
        if wanted != self.gate_open:
            self.gate_open = wanted
            self._request_shoe(out, "unlock" if wanted else "lock")

    def on_pause(self, now: float) -> FlowOutput:
        self.gate_open = False
        return super().on_pause(now)

    def on_resume(self, now: float) -> FlowOutput:
        out = super().on_resume(now)
        self.gate_open = self._why_no_card_now() is None
        return out

    def device_online(self, device: str, now: float, *, paused: bool) -> FlowOutput:
        out = super().device_online(device, now, paused=paused)
        if device == self.settings.shoe_device:
            self.gate_open = self._gate_wanted_open(paused)
        return out

    def on_tick(self, now: float) -> FlowOutput:
        out = super().on_tick(now)
        self._sync_gate(out)
        return out

    def on_reading(self, reading: Reading, now: float) -> FlowOutput:
        out = super().on_reading(reading, now)
        self._sync_gate(out)
        return out

    def handlers(self) -> dict[type[Command], Handler]:
        # `manual_card`'s refusal never names a card while one is face down (`CardFlow._manual_card`)
        return {ManualCard: self._manual_card, **super().handlers()}

    def on_command(self, command: Command, now: float) -> FlowOutput:
        out = super().on_command(command, now)
        self._sync_gate(out)
        return out

    def void_round(self, now: float, reason: str, by: str) -> FlowOutput:
        out = super().void_round(now, reason, by)
        self._sync_gate(out)
        return out

    # -- the round: the procedure every variant shares ----------------------------------------------------

    def on_timer(self, name: str, now: float, out: FlowOutput) -> None:
        if name == DECISION:
            self._policy_decides(now, out)
        elif name == INSURANCE:
            self._end_insurance(now, out, by="policy")
        else:
            super().on_timer(name, now, out)

    def _open_round(self, now: float, out: FlowOutput) -> None:
        self.dealer = []
        self.hole, self.hole_raw, self.hole_rescan = None, "", False
        self.initial_dealt, self.awaiting_card = 0, False
        self.last_decision = ""
        if self.unread_ref is not None:
            # never dropped unseen: it is a card off the felt or in the dealer's hand
            self._hold_unread_card(out, now, "a new round opened while it waited for its re-scan")
        self._open_betting(now, out)

    def betting_closed(self, now: float, out: FlowOutput, reason: str) -> None:
        self._to(Stage.INITIAL)
        self.prompt = self._prompt()

    def _unread_card_out(self, now: float, out: FlowOutput) -> None:
        # an unread first card closes betting just as a read one does (first-card mode)
        if self.rounds.phase == Phase.BETTING_OPEN:
            self.close_betting(now, out, "first_card")
        super()._unread_card_out(now, out)

    def _next_target(self) -> str | None:
        """Where the next card goes now ("hole": the dealer's face-down card), or None."""
        if not self.rounds.in_round:
            return None
        if self.stage in (Stage.BETTING, Stage.INITIAL):
            order = self._initial_order()
            return order[self.initial_dealt] if self.initial_dealt < len(order) else None
        return self._target_in_play()

    def _why_no_card_now(self) -> str | None:
        if not self.rounds.in_round:
            return self.idle_reason
        if self.rounds.phase == Phase.BETTING_OPEN and not self.settings.betting_closes_on_first_card:
            return "betting is still open: deal only after betting closes"
        if self._next_target() is not None:
            return None
        if self.stage == Stage.INSURANCE:
            return "insurance is offered: deal only when the players have answered"
        return self._waiting_reason()

    def _deal(self, card: Card, now: float, out: FlowOutput, raw: str, rescan: bool) -> None:
        if self.rounds.phase == Phase.BETTING_OPEN:
            self.close_betting(now, out, "first_card")
        target = self._next_target()
        assert target is not None, "a card nobody expects was dealt"
        if target == "hole":
            self._deal_face_down(card, now, out, raw, rescan)
        elif target == "dealer":
            self._place_card(card, self.dealer, "dealer", now, out, raw, rescan)
        else:
            self._place_card(card, self._cards_at(target), target, now, out, raw, rescan)
        if self.stage == Stage.INITIAL:
            self.initial_dealt += 1
            if self.initial_dealt == len(self._initial_order()):
                self._initial_deal_done(now, out)
        else:
            self._card_in_play(now, out)
        self.prompt = self._prompt()

    @abstractmethod
    def _initial_deal_done(self, now: float, out: FlowOutput) -> None:
        """The initial deal is complete: insurance, the peek, then the players' decisions."""

    @property
    def up_card(self) -> Card:
        return self.dealer[0]

    def _dealer_peeks(self, now: float, out: FlowOutput) -> bool:
        """The dealer looks under the up card; `dealer.peek` says only whether it is a blackjack."""
        assert self.rounds.round_id is not None
        dealer_blackjack = is_blackjack(self._dealer_with_hole())
        peek = DealerPeek(
            round_id=self.rounds.round_id, up_card=self.up_card.code, blackjack=dealer_blackjack
        )
        out.emit("dealer.peek", peek, now)
        return dealer_blackjack

    def _open_decision(self, now: float) -> None:
        self.awaiting_card = False
        self.rounds.set_timer(DECISION, now + self.settings.decision_seconds)

    def _round_result(
        self, now: float, out: FlowOutput, result: BaseModel, last_of_shoe: bool, cue: str
    ) -> None:
        """Publish the round's result; the dealer's cue is then `cue`."""
        self._to(Stage.WAITING)
        self.finish_round(now, out, result)
        self._finish_shoe_round(last_of_shoe, now, out)
        self.idle_reason = "the round is over: no card is expected until the next round's betting closes"
        self.last_decision = ""
        self.prompt = cue

    def round_over(self, now: float, out: FlowOutput) -> None:
        self._clear_unread()
        self.rounds.cancel_timer(DECISION)
        self.rounds.cancel_timer(INSURANCE)
        if isinstance(self.shoe, DeckPerRound):
            self._want_shuffle("round over")  # one deck, shuffled after every hand
        self._to(Stage.WAITING)
        self.awaiting_card = False

    def round_voided(self, now: float, out: FlowOutput) -> None:
        # the face-down card left the shoe: it stays counted, and stays secret (it is never shown)
        self.hole, self.hole_raw, self.hole_rescan = None, "", False
        self._clear_hands()
        self.dealer = []
        self.prompt = PROMPT_VOIDED
        self.idle_reason = "the round was voided: no card is expected until the next round's betting closes"

    # -- the dealer's cue ----------------------------------------------------------------------------------

    def _prompt(self) -> str:
        if not self.rounds.in_round:
            return self.prompt
        if self.rounds.phase == Phase.BETTING_OPEN and not self.settings.betting_closes_on_first_card:
            return PROMPT_BETTING_OPEN
        target = self._next_target()
        if target == "hole":
            now_what = "Deal the dealer's card FACE DOWN"
        elif target == "dealer":
            now_what = "Deal to Dealer"
        elif target is not None:
            now_what = f"Deal to {self._label_of(target)}"
        elif self.stage == Stage.INSURANCE:
            now_what = "Insurance offered — wait for the players"
        else:
            now_what = self._waiting_cue()
        return f"{self.last_decision} — {now_what}" if self.last_decision and now_what else now_what

    def _next_position(self) -> str | None:
        """The position the dealer's panel marks (the face-down card goes to the dealer's place)."""
        if self._why_no_card_now() is not None:
            return None
        target = self._next_target()
        return "dealer" if target == "hole" else target

    def _public_round(self) -> dict[str, Any]:
        """What every variant's `public_state()` holds (the shoe, the deadlines, the dealer, the cue)."""
        betting = self.rounds.betting_deadline
        decision = self.rounds.timers.get(DECISION) or self.rounds.timers.get(INSURANCE)
        return {
            "game": self.game,
            "positions": self.positions(),  # the uniform view the panel draws
            "phase": str(self.rounds.phase),
            "stage": self.stage,
            "round_id": self.rounds.round_id,
            **self.shoe.public(self),
            "betting_closes_at": iso_ms(betting) if betting is not None else None,
            "decision_closes_at": iso_ms(decision) if decision is not None else None,
            "dealer": [card.code for card in self.dealer],
            "dealer_face_down": self.hole is not None,
            "next_position": self._next_position(),
            "awaiting_rescan": self.unread_ref is not None,
            "prompt": self.prompt,
        }

    # -- shared bits of the round -------------------------------------------------------------------------

    def _decision(
        self,
        now: float,
        out: FlowOutput,
        action: str,
        by: str,
        seat: int | None,
        hand: int | None,
        total: int | None,
    ) -> None:
        assert self.rounds.round_id is not None
        decided = BlackjackDecisionMade(
            round_id=self.rounds.round_id,
            seat=seat,
            hand=hand,
            action=action,  # type: ignore[arg-type]
            by=by,  # type: ignore[arg-type]
            total=total,
        )
        out.emit("blackjack.decision", decided, now)

    def _open_betting(self, now: float, out: FlowOutput) -> None:
        if self.settings.betting_closes_on_first_card:
            self.rounds.open(now, out, betting_seconds=None)
            self.prompt = PROMPT_BETTING_OPEN_FIRST_CARD
        else:
            self.rounds.open(now, out, betting_seconds=self.settings.betting_seconds)
            self.prompt = PROMPT_BETTING_OPEN
        self._to(Stage.BETTING)

    def _dealer_view(self, next_position: str | None) -> dict[str, Any]:
        view = position_view(
            "dealer",
            "Dealer",
            self.dealer,
            next_position,
            hand_total(self.dealer).total if self.dealer else None,
        )
        if self.hole is not None:
            view["cards"].append(FACE_DOWN)
        if next_position == "hole":
            view["next"] = True
        return view

    def _finish_shoe_round(self, last_of_shoe: bool, now: float, out: FlowOutput) -> None:
        """After a round's result: the cut-card round finishes the shoe."""
        if last_of_shoe:
            assert isinstance(self.shoe, ShoeOfRounds), "a fresh deck has no cut card: no round is its last"
            self.shoe.round_finished(self, last_of_shoe)


# --- a table with boxes (Live, Single-deck) ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HouseRules:
    """What tells Live and Single-deck Blackjack apart (besides the shoe)."""

    #: the dealer's second card is dealt face down with the initial cards and checked (peek); else it is
    #: dealt after every box has played (no hole card)
    hole_card: bool
    #: split a pair of the same rank (Live: not K+10) or of the same value (Single-deck: two tens, J+K)
    split_same_value: bool
    #: totals a hand may double on (None: any first two cards)
    double_totals: frozenset[int] | None
    #: insurance is offered to a box holding blackjack
    insurance_with_blackjack: bool
    #: the disconnect policy
    policy: Literal["basic_strategy_h17", "hit_to_twelve"]


class BoxHand(BaseModel):
    """One hand of one box; a split box has two."""

    model_config = ConfigDict(extra="forbid")

    seat: int
    hand: int = 1
    cards: list[CardCode] = Field(default_factory=list)
    from_split: bool = False
    doubled: bool = False
    surrendered: bool = False
    #: no more cards, no more decisions
    done: bool = False
    #: announced settled before the dealer played (bust, surrender, a blackjack the dealer cannot match)
    settled: bool = False
    #: the hand's first decision is still to come (surrender only then)
    first_decision: bool = True

    @property
    def position(self) -> str:
        return box_position(self.seat, self.hand)

    @property
    def label(self) -> str:
        return f"Box {self.seat}" if self.hand == 1 else f"Box {self.seat} hand 2"

    @property
    def blackjack(self) -> bool:
        return is_blackjack(self.cards, self.from_split)

    @property
    def split_aces(self) -> bool:
        return self.from_split and bool(self.cards) and is_ace(self.cards[0])


def box_position(seat: int, hand: int = 1) -> str:
    """`box3`; the second hand of a split box is `box3-2`."""
    return f"box{seat}" if hand == 1 else f"box{seat}-{hand}"


class BlackjackSettings(CardGameSettings):
    """What every blackjack variant's `[game]` table holds."""

    decision_seconds: float = Field(
        default=15.0,
        ge=0,
        description="time for a decision (a box's hand; Infinite: the rules engine's deal_card / "
        "players_done) before the disconnect policy decides",
    )
    insurance_seconds: float = Field(
        default=8.0, ge=0, description="time to answer insurance (a dealer ace); unanswered: declined"
    )


class ShoeOfRoundsSettings(BlackjackSettings):
    """A shoe of several decks dealt over many rounds until its cut card (Live and Infinite Blackjack)."""

    decks: int = Field(default=8, ge=1, le=8)
    auto_new_shoe: bool = Field(
        default=False,
        description="after the cut-card round, start a new shoe by itself (Infinite: the reshuffle, then "
        "its burn); else wait for input new_shoe",
    )


class BoxedBlackjackRecord(BlackjackTableRecord):
    hands: list[BoxHand] = Field(default_factory=list)
    insured: list[int] = Field(default_factory=list)
    insurance_answered: list[int] = Field(default_factory=list)
    turn: int | None = None
    #: the dealer draws to complete the hand (some hand still stands against it), else only what settles
    #: the rest (Live: the second card, when a blackjack or insurance waits on it)
    dealer_completes: bool = True


class BoxedBlackjackFlow(BlackjackTable):
    rules: ClassVar[HouseRules]
    stages: ClassVar[StageTable[Stage]] = BOXED_STAGES
    record_model: ClassVar[type[FlowRecord]] = BoxedBlackjackRecord
    result_model: ClassVar[type[BoxedBlackjackResult]]

    def handlers(self) -> dict[type[Command], Handler]:
        decides = self._player_decides
        own: dict[type[Command], Handler] = {
            Hit: decides,
            Stand: decides,
            Double: decides,
            Split: decides,
            Surrender: decides,
        }
        return {**super().handlers(), **own, Insurance: self._insurance}

    def __init__(self, table_id: str, settings: Any) -> None:
        super().__init__(table_id, settings, decks=settings.decks)
        self.hands: list[BoxHand] = []
        self.insured: list[int] = []
        self.insurance_answered: list[int] = []
        self.turn: int | None = None
        self.dealer_completes = True

    def restore_conflict(self, data: dict[str, Any]) -> str | None:
        seats = {hand.get("seat") for hand in data.get("hands", [])}
        if data.get("rounds", {}).get("round_id") is not None and not seats <= set(self.seats):
            return f"the round in play has boxes {sorted(seats)} but this table has {len(self.seats)} seats"
        return super().restore_conflict(data)

    # -- rules of this table -------------------------------------------------------------------------

    @property
    def seats(self) -> list[int]:
        return list(range(1, getattr(self.settings, "seats", 1) + 1))

    @property
    def surrender_offered(self) -> bool:
        return bool(getattr(self.settings, "surrender", False))

    def _initial_order(self) -> list[str]:
        boxes = [hand.position for hand in self.hands if hand.hand == 1]  # the seated boxes
        order = [*boxes, "dealer", *boxes]
        return [*order, "hole"] if self.rules.hole_card else order

    # -- time --------------------------------------------------------------------------------------------

    def _next_round_due(self, now: float, out: FlowOutput) -> None:
        if isinstance(self.shoe, DeckPerRound):
            self._new_deck(now, out)
        elif not self.shoe.ready_for_round(self, now, out, auto_new_shoe=self.settings.auto_new_shoe):
            self.prompt = "Shoe finished: load a new shoe"
            self.idle_reason = "the shoe is finished: load a new shoe"
            return
        self._open_round(now, out)

    # -- the round -----------------------------------------------------------------------------------------

    def _open_round(self, now: float, out: FlowOutput) -> None:
        self.hands = [BoxHand(seat=seat) for seat in self.seats]
        self.insured, self.insurance_answered = [], []
        self.turn = None
        self.dealer_completes = True
        super()._open_round(now, out)

    def _target_in_play(self) -> str | None:
        if self.stage == Stage.TURNS:
            if self.awaiting_card and self.turn is not None:
                return self.hands[self.turn].position
            return None
        if self.stage == Stage.DEALER:
            return "dealer" if self._dealer_wants_card() else None
        return None

    def _cards_at(self, position: str) -> list[Card]:
        return next(hand.cards for hand in self.hands if hand.position == position)

    def _label_of(self, position: str) -> str:
        return next(hand.label for hand in self.hands if hand.position == position)

    def _card_in_play(self, now: float, out: FlowOutput) -> None:
        if self.stage == Stage.TURNS:
            self._card_to_hand(now, out)
        else:
            self._dealer_card(now, out)

    def _waiting_reason(self) -> str:
        if self.stage == Stage.TURNS and self.turn is not None:
            return f"{self.hands[self.turn].label} is deciding: deal only after the decision"
        return super()._waiting_reason()

    def _waiting_cue(self) -> str:
        if self.stage == Stage.TURNS and self.turn is not None:
            hand = self.hands[self.turn]
            total = hand_total(hand.cards)
            soft = "soft " if total.soft else ""
            against = self.up_card.code
            return f"{hand.label} plays: {soft}{total.total} against {against} — wait for the decision"
        return ""

    # -- after the initial deal ---------------------------------------------------------------------------

    def _insurance_seats(self) -> list[int]:
        if not is_ace(self.up_card):
            return []
        return [
            hand.seat
            for hand in self.hands
            if hand.hand == 1 and (self.rules.insurance_with_blackjack or not hand.blackjack)
        ]

    def _initial_deal_done(self, now: float, out: FlowOutput) -> None:
        if self._insurance_seats():
            self._to(Stage.INSURANCE)
            self.rounds.set_timer(INSURANCE, now + self.settings.insurance_seconds)
            return
        self._after_insurance(now, out)

    def _end_insurance(self, now: float, out: FlowOutput, by: str) -> None:
        self.rounds.cancel_timer(INSURANCE)
        for seat in self._insurance_seats():
            if seat not in self.insurance_answered:
                self.insurance_answered.append(seat)
                self._decision(now, out, "no_insurance", by, seat, None, None)
        self._after_insurance(now, out)
        self.prompt = self._prompt()

    def _after_insurance(self, now: float, out: FlowOutput) -> None:
        peeks = self.rules.hole_card and dealer_may_have_blackjack(self.up_card)
        if peeks and self._dealer_peeks(now, out):
            for hand in self.hands:
                hand.done = True
            self._reveal(now, out)
            self._finish(now, out)
            return
        self._to(Stage.TURNS)
        self.turn = None
        self._next_turn(now, out)

    # -- the boxes' turns ----------------------------------------------------------------------------------

    def _blackjack_certain(self) -> bool:
        """A box's blackjack wins now: the dealer cannot have one, or has peeked and has none."""
        return not dealer_may_have_blackjack(self.up_card) or self.rules.hole_card

    def _settle(self, now: float, out: FlowOutput, hand: BoxHand, result: str, reason: str) -> None:
        assert self.rounds.round_id is not None
        hand.settled = True
        settled = BlackjackHandSettled(
            round_id=self.rounds.round_id,
            seat=hand.seat,
            hand=hand.hand,
            outcome=result,  # type: ignore[arg-type]
            reason=reason,
        )
        out.emit("blackjack.hand_settled", settled, now)

    def _next_turn(self, now: float, out: FlowOutput) -> None:
        start = 0 if self.turn is None else self.turn + 1
        self.awaiting_card = False
        self.rounds.cancel_timer(DECISION)
        for index in range(start, len(self.hands)):
            hand = self.hands[index]
            if hand.blackjack:
                hand.done = True
                if self._blackjack_certain() and not hand.settled:
                    self._settle(now, out, hand, "blackjack", "blackjack: the dealer cannot have one")
                continue
            if hand.done:
                continue
            self.turn = index
            if len(hand.cards) < 2:
                self.awaiting_card = True  # a split hand takes its second card before anything is decided
            else:
                self._open_decision(now)
            return
        self.turn = None
        self._dealer_turn(now, out)

    def _card_to_hand(self, now: float, out: FlowOutput) -> None:
        assert self.turn is not None
        hand = self.hands[self.turn]
        total = hand_total(hand.cards)
        if total.bust:
            hand.done = True
            self._settle(now, out, hand, "lose", f"bust with {total.total}")
        elif total.total == 21 or hand.doubled or hand.split_aces:
            # 21 stands by itself; a double takes one card; split aces one card each
            hand.done = True
        if hand.done:
            self._next_turn(now, out)
        else:
            self._open_decision(now)

    # -- decisions -----------------------------------------------------------------------------------------

    def _allowed(self, hand: BoxHand) -> dict[str, bool]:
        """What the rules allow the hand playing now (the policy picks among these, and a player's decision
        outside them is refused with `_refusal`)."""
        two = len(hand.cards) == 2
        total = hand_total(hand.cards).total
        double = two and not hand.split_aces
        if self.rules.double_totals is not None:
            double = double and total in self.rules.double_totals
        box_split = any(other.seat == hand.seat and other.from_split for other in self.hands)
        pair = two and not box_split
        if pair:
            first, second = hand.cards
            pair = (
                card_value(first) == card_value(second)
                if self.rules.split_same_value
                else first.rank == second.rank
            )
        surrender = self.surrender_offered and two and not hand.from_split and hand.first_decision
        return {"hit": True, "stand": True, "double": double, "split": pair, "surrender": surrender}

    def _refusal(self, hand: BoxHand, action: str) -> str:
        if action == "surrender":
            if not self.surrender_offered:
                return f"{self.game} offers no surrender"
            return "surrender only as the first decision on the first two cards, not after a split"
        if action == "double":
            if hand.split_aces:
                return "split aces take one card each: no double"
            if len(hand.cards) != 2:
                return "double only on the first two cards of a hand"
            totals = sorted(self.rules.double_totals or ())
            return (
                f"double only on a total of {', '.join(map(str, totals))}, not {hand_total(hand.cards).total}"
            )
        if action == "split":
            if any(other.seat == hand.seat and other.from_split for other in self.hands):
                return "a box splits once: the split hands cannot be split again"
            if len(hand.cards) != 2:
                return "split only the first two cards"
            if self.rules.split_same_value:
                return "split only two cards of the same value"
            return "split only two cards of the same rank (not, say, a king and a ten)"
        return f"{action} is not allowed now"

    def _playing_hand(self, decision: HandDecision, action: str) -> BoxHand:
        seat, number = decision.seat, decision.hand
        if self.stage == Stage.INSURANCE:
            raise InputRejected(f"insurance is offered now: {action} comes after the insurance decisions")
        if not self.rounds.in_round or self.stage != Stage.TURNS or self.turn is None:
            raise InputRejected(f"no hand is deciding now ({self._stage_words()})")
        hand = self.hands[self.turn]
        if (hand.seat, hand.hand) != (seat, number):
            wanted = box_position(seat, number)
            raise InputRejected(f"{hand.label} plays now, not {wanted}")
        if self.awaiting_card:
            raise InputRejected(f"{hand.label} is waiting for its card: decide after it is dealt")
        if not self._allowed(hand)[action]:
            raise InputRejected(self._refusal(hand, action))
        return hand

    def _stage_words(self) -> str:
        if not self.rounds.in_round:
            return "no round is in play"
        return {
            Stage.BETTING: "betting is open",
            Stage.INITIAL: "the initial cards are being dealt",
            Stage.DEALER: "the dealer is completing the hand",
        }.get(self.stage, self.stage)

    def _player_decides(self, decision: HandDecision, now: float) -> FlowOutput:
        """A player's decision for the hand playing now (`hit`, `stand`, `double`, `split`, `surrender`)."""
        action = decision.wire_name()
        return self._decide(self._playing_hand(decision, action), action, "player", now)

    def _insurance(self, command: Insurance, now: float) -> FlowOutput:
        seat, take = command.seat, command.take
        if self.stage != Stage.INSURANCE or not self.rounds.in_round:
            if self.rounds.in_round and self.dealer and not is_ace(self.up_card):
                raise InputRejected("insurance only when the dealer's card is an ace")
            raise InputRejected(f"insurance is not offered now ({self._stage_words()})")
        if seat not in self.seats:
            raise InputRejected(f"there is no box {seat} at this table")
        if seat not in self._insurance_seats():
            raise InputRejected("insurance is not offered to a blackjack at this table")
        if seat in self.insurance_answered:
            raise InputRejected(f"box {seat} has already answered insurance")
        out = FlowOutput()
        self.insurance_answered.append(seat)
        if take:
            self.insured.append(seat)
        self._decision(now, out, "insurance" if take else "no_insurance", "player", seat, None, None)
        self.last_decision = f"Box {seat}: {'insurance' if take else 'no insurance'}"
        if all(seat in self.insurance_answered for seat in self._insurance_seats()):
            self._end_insurance(now, out, by="player")
        self.prompt = self._prompt()
        return out

    def _policy_action(self, hand: BoxHand) -> Action:
        allowed = self._allowed(hand)
        if self.rules.policy == "hit_to_twelve":
            return hit_to_twelve(hand.cards)
        return basic_strategy_h17(
            hand.cards,
            self.up_card,
            Allowed(double=allowed["double"], split=allowed["split"], surrender=allowed["surrender"]),
        )

    def _policy_decides(self, now: float, out: FlowOutput) -> None:
        if self.stage != Stage.TURNS or self.turn is None or self.awaiting_card:
            return
        hand = self.hands[self.turn]
        out.extend(self._decide(hand, self._policy_action(hand), "policy", now))

    def _decide(self, hand: BoxHand, action: str, by: str, now: float) -> FlowOutput:
        out = FlowOutput()
        self.rounds.cancel_timer(DECISION)
        total = hand_total(hand.cards).total
        self._decision(now, out, action, by, hand.seat, hand.hand, total)
        who = "" if by == "player" else " (no answer: the table decided)"
        self.last_decision = f"{hand.label}: {action}{who}"
        hand.first_decision = False
        if action == "stand":
            hand.done = True
            self._next_turn(now, out)
        elif action == "surrender":
            hand.done = hand.surrendered = True
            self._settle(now, out, hand, "surrender", "surrendered")
            self._next_turn(now, out)
        elif action == "split":
            second = BoxHand(seat=hand.seat, hand=2, cards=[hand.cards[1]], from_split=True)
            hand.cards = [hand.cards[0]]
            hand.from_split = True
            assert self.turn is not None
            self.hands.insert(self.turn + 1, second)
            self.awaiting_card = True
        else:  # hit, double
            hand.doubled = action == "double"
            self.awaiting_card = True
        self.prompt = self._prompt()
        return out

    # -- the dealer ----------------------------------------------------------------------------------------

    def _dealer_turn(self, now: float, out: FlowOutput) -> None:
        self._to(Stage.DEALER)
        standing = [hand for hand in self.hands if not hand.settled and not hand.blackjack]
        self.dealer_completes = bool(standing)
        if self.hole is not None:
            self._reveal(now, out)
        if not self._dealer_wants_card():
            self._finish(now, out)

    def _dealer_wants_card(self) -> bool:
        if self.hole is not None:
            return False
        if self.dealer_completes:
            return dealer_draws(self.dealer, self.dealer_hits_soft_17)
        # no hand stands against the dealer: only a card that settles a blackjack or insurance is dealt
        waiting = any(hand.blackjack and not hand.settled for hand in self.hands) or bool(self.insured)
        return len(self.dealer) < 2 and waiting and dealer_may_have_blackjack(self.up_card)

    def _dealer_card(self, now: float, out: FlowOutput) -> None:
        if not self._dealer_wants_card():
            self._finish(now, out)

    def _finish(self, now: float, out: FlowOutput) -> None:
        assert self.rounds.round_id is not None
        self.rounds.cancel_timer(DECISION)
        self.rounds.cancel_timer(INSURANCE)
        hands = []
        for hand in sorted(self.hands, key=lambda h: (h.seat, h.hand)):
            total = hand_total(hand.cards)
            hands.append(
                BlackjackHand(
                    seat=hand.seat,
                    hand=hand.hand,
                    cards=[card.code for card in hand.cards],
                    total=total.total,
                    soft=total.soft,
                    blackjack=hand.blackjack,
                    bust=total.bust,
                    doubled=hand.doubled,
                    split=hand.from_split,
                    surrendered=hand.surrendered,
                    insured=hand.seat in self.insured,
                    outcome=outcome(
                        hand.cards,
                        from_split=hand.from_split,
                        surrendered=hand.surrendered,
                        dealer=self.dealer,
                    ),
                )
            )
        last = self.rounds.last_of_shoe
        result = self.result_model(
            round_id=self.rounds.round_id,
            dealer=dealer_result(self.dealer),
            hands=hands,
            round_in_shoe=max(1, self.rounds.number_in_shoe),
            last_round_of_shoe=last,
        )
        self._round_result(now, out, result, last, self._result_prompt(result))

    def _result_prompt(self, result: BoxedBlackjackResult) -> str:
        said = dealer_words(result.dealer.model_dump())
        hands = ", ".join(
            f"{box_position(hand.seat, hand.hand).replace('box', 'Box ')} {hand.outcome}"
            for hand in result.hands
        )
        return f"Dealer {said} — {hands}"

    def round_over(self, now: float, out: FlowOutput) -> None:
        super().round_over(now, out)
        self.turn = None

    def _clear_hands(self) -> None:
        self.hands = []

    # -- the dealer's cue ----------------------------------------------------------------------------------

    # -- state ---------------------------------------------------------------------------------------------

    def positions(self) -> list[dict[str, Any]]:
        target = self._next_target() if self._why_no_card_now() is None else None
        views = []
        for hand in self.hands:
            total = hand_total(hand.cards).total if hand.cards else None
            views.append(position_view(hand.position, hand.label, hand.cards, target, total))
        return [*views, self._dealer_view(target)]

    def public_state(self) -> dict[str, Any]:
        turn = None
        if self.stage == Stage.TURNS and self.turn is not None:
            hand = self.hands[self.turn]
            total = hand_total(hand.cards)
            allowed = self._allowed(hand)
            turn = {
                "seat": hand.seat,
                "hand": hand.hand,
                "total": total.total,
                "soft": total.soft,
                "waiting_for_card": self.awaiting_card,
                "allowed": [] if self.awaiting_card else [name for name, ok in allowed.items() if ok],
            }
        return {
            **self._public_round(),
            "turn": turn,
            "insurance_offered_to": self._insurance_seats() if self.stage == Stage.INSURANCE else [],
            "boxes": [
                {
                    "seat": hand.seat,
                    "hand": hand.hand,
                    "cards": [card.code for card in hand.cards],
                    "total": hand_total(hand.cards).total if hand.cards else None,
                    "doubled": hand.doubled,
                    "split": hand.from_split,
                    "surrendered": hand.surrendered,
                    "done": hand.done,
                }
                for hand in self.hands
            ],
        }


# --- Live Blackjack's rule set ----------------------------------------------------------------------------


class LiveBlackjackSettings(ShoeOfRoundsSettings):
    seats: int = Field(default=7, ge=1, le=9, description="boxes at the table, dealt from the dealer's left")
    surrender: bool = Field(
        default=False,
        description="late surrender on the first two cards (the rules (docs/games/blackjack.md) name none: "
        "off unless the studio offers it)",
    )


class LiveBlackjackFlow(BoxedBlackjackFlow):
    """Live Blackjack (docs/games/blackjack.md): seats, no hole card, H17, split same rank, insurance also
    with blackjack."""

    game = "blackjack"
    result_model = BlackjackResult
    rules = HouseRules(
        hole_card=False,
        split_same_value=False,
        double_totals=None,
        insurance_with_blackjack=True,
        policy="basic_strategy_h17",
    )
    settings: LiveBlackjackSettings
    shoe: ShoeOfRounds

    def __init__(self, table_id: str, settings: LiveBlackjackSettings) -> None:
        super().__init__(table_id, settings)

    def handlers(self) -> dict[type[Command], Handler]:
        return {**super().handlers(), **self.shoe.handlers(self), Seated: self._seated}

    def _seated(self, command: Seated, now: float) -> FlowOutput:
        """Deal only the boxes with a bet (docs/games/blackjack.md: one card to each seated box), said while
        betting is open."""
        if not self.rounds.in_round or self.rounds.phase != Phase.BETTING_OPEN:
            raise InputRejected("seated: the boxes are said while betting is open, before the first card")
        seats = sorted(set(command.seats))
        unknown = [seat for seat in seats if seat not in self.seats]
        if unknown:
            raise InputRejected(
                f"seated: box(es) {unknown} do not exist at this table (seats 1-{len(self.seats)})"
            )
        self.hands = [BoxHand(seat=seat) for seat in seats]
        self.prompt = self._prompt()
        return FlowOutput()
