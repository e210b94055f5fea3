"""Infinite Blackjack (docs/games/infinite_blackjack.md): one common hand for any number of players.

- Shoe: 8 decks. After every shuffle the burn: the dealer shows the first card; its value (A=1, 2-9, T/J/Q/K
  10) is the number of cards then burned face down. The flow counts them (their identity is never published)
  and checks the count: a card beyond it, or the dealer's `burn_done` on a wrong count, is a fault in the
  procedure, and the flow asks the runtime to pause the table (`FlowOutput.request_pause`): a supervisor then
  resumes (the dealer burns the missing cards and confirms again) or has the decks reshuffled (`new_shoe`).
  While a card of the burn waits for its re-scan, `burn_done` (and `new_shoe`) is refused: that card is
  counted only once it is read or entered by hand, and is never forgotten.
  With `burn_confirmation` off (replay, demo) the burn ends with the last card the shown value asks for.
- The cut card makes the round it comes out in (between rounds: the next one) the shoe's last; then the
  decks are reshuffled (`new_shoe`, or by itself with `auto_new_shoe`). `round_in_shoe` is in every
  `round.opened` and result: side bets close after a round of the shoe.
- Round: player card up, dealer card up, player card up, dealer card FACE DOWN. With an ace up, insurance is
  offered first (until `players_done` or `insurance_seconds`). Under an ace or a ten-valued card the dealer
  peeks (`dealer.peek`: has / has not blackjack; nothing else); a dealer blackjack ends the round. Otherwise
  ONE common sequence of further player cards is dealt while the rules engine says some player hand still
  wants one (`deal_card`), until it says `players_done`. With no answer within `decision_seconds` the
  disconnect policy decides for the common hand: a card while its total is 11 or less, then done. Then the
  dealer reveals the hole card and completes the hand, standing on all 17s — always (the bust bonus is
  settled on the dealer's bust hand).

The face-down card is handled as in every blackjack flow (`controller.games.blackjack.BlackjackTable`): a
SECRET field of the record until its reveal.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from controller.cards import Card, CardCode
from controller.command_base import Command, PlayersDone
from controller.flow import SECRET, FlowOutput, FlowRecord, Handler, InputRejected
from controller.games import blackjack_rules
from controller.games.blackjack.flow import (
    DECISION,
    INFINITE_STAGES,
    INSURANCE,
    BlackjackTable,
    BlackjackTableRecord,
    ShoeOfRoundsSettings,
    Stage,
    dealer_result,
    dealer_words,
)
from controller.games.card_flow import position_view
from controller.games.card_source import ShoeHolder, ShoeOfRounds
from controller.games.infinite_blackjack.events import InfiniteBlackjackResult, ShoeBurn
from controller.lifecycle import NEXT_ROUND
from controller.stages import StageTable

#: the initial deal, in order ("hole": the dealer's card dealt face down)
INITIAL = ("player", "dealer", "player", "hole")


class InfiniteBlackjackRecord(BlackjackTableRecord):
    player: list[CardCode] = Field(default_factory=list)
    burn_shown: CardCode | None = None
    burn_to: int | None = None
    burned: int = 0
    #: the codes of the cards burned face down this shoe (the one beyond the count too): never named, even
    #: when one is passed over the reader again (a copy the felt cannot tell from it is never named either)
    burned_cards: list[CardCode] = Field(default_factory=list, json_schema_extra=SECRET)


class InfiniteBlackjackSettings(ShoeOfRoundsSettings):
    burn_confirmation: bool = Field(
        default=True,
        description="the dealer confirms the burn (input burn_done); off: the burn ends with the last "
        "card the shown value asks for",
    )


# --- inputs (MQTT `inputs/<name>/<user>`) -------------------------------------------------------------


class BurnDone(Command):
    """The dealer says the burn after a shuffle is complete (Infinite Blackjack)."""


class ShoeBurnedFirst(ShoeOfRounds):
    """Infinite Blackjack's shoe of rounds: a new shoe's burn, not its loading, opens the next round."""

    def loaded(self, flow: ShoeHolder, now: float) -> None:
        """A new shoe loaded by input waits for its burn: the prompt asks for its first card
        (`InfiniteBlackjackFlow.shoe_started`), and the burn's end opens the next round."""


class DealCard(Command):
    """Some player hand still wants a card: the dealer deals one more common card (Infinite Blackjack)."""


class InfiniteBlackjackFlow(BlackjackTable):
    game = "infinite_blackjack"
    result_model = InfiniteBlackjackResult
    record_model: ClassVar[type[FlowRecord]] = InfiniteBlackjackRecord
    dealer_hits_soft_17: ClassVar[bool] = False
    stages: ClassVar[StageTable[Stage]] = INFINITE_STAGES
    settings: InfiniteBlackjackSettings
    shoe_kind: ClassVar[type[ShoeOfRounds]] = ShoeBurnedFirst
    shoe: ShoeBurnedFirst

    def __init__(self, table_id: str, settings: InfiniteBlackjackSettings) -> None:
        super().__init__(table_id, settings, decks=settings.decks)
        self.player: list[Card] = []
        self.burn_shown: Card | None = None
        self.burn_to: int | None = None
        self.burned = 0
        self.burned_cards: list[Card] = []

    def handlers(self) -> dict[type[Command], Handler]:
        own: dict[type[Command], Handler] = {
            DealCard: self._deal_card,
            PlayersDone: self._players_done,
            BurnDone: self._burn_done,
        }
        return {**super().handlers(), **own, **self.shoe.handlers(self)}

    # -- the shoe and its burn ------------------------------------------------------------------------------

    def shoe_started(self, now: float, out: FlowOutput) -> None:
        self._to(Stage.BURN)
        self.burn_shown, self.burn_to, self.burned = None, None, 0
        self.burned_cards = []
        self.prompt = "New shoe: show the first card"

    def _next_round_due(self, now: float, out: FlowOutput) -> None:
        if not self.shoe.ready_for_round(self, now, out, auto_new_shoe=self.settings.auto_new_shoe):
            self._to(Stage.SHUFFLE)
            self.prompt = "Shoe finished: shuffle the decks and load the shoe (new_shoe)"
            return
        if self.stage == Stage.BURN:
            return  # a new shoe's burn, and the burn's end opens the next round
        self._open_round(now, out)

    def _burn_event(self, now: float, out: FlowOutput, done: bool) -> None:
        assert self.shoe.shoe_id is not None
        burn = ShoeBurn(
            shoe_id=self.shoe.shoe_id,
            shown=self.burn_shown.code if self.burn_shown is not None else None,
            to_burn=self.burn_to,
            burned=self.burned,
            done=done,
        )
        out.emit("shoe.burn", burn, now)

    def _burn_card(self, card: Card, now: float, out: FlowOutput) -> None:
        self.composition.take(card)
        if self.burn_shown is None:
            self.burn_shown, self.burn_to = card, blackjack_rules.card_value(card)
            self._burn_event(now, out, done=False)
            self.prompt = f"Burn {self.burn_to} card{'s' if self.burn_to != 1 else ''} face down"
            return
        assert self.burn_to is not None
        self.burned += 1
        self.burned_cards.append(card)
        if self.burned > self.burn_to:
            self._burn_event(now, out, done=False)
            self._wrong_burn(out)
            return
        if self.burned == self.burn_to and not self.settings.burn_confirmation:
            self._burn_complete(now, out)
            return
        self._burn_event(now, out, done=False)
        if self.burned == self.burn_to:
            self.prompt = f"{self.burned} cards burned — confirm the burn"
        else:
            self.prompt = f"Burned {self.burned} of {self.burn_to} — burn face down"

    def _wrong_burn(self, out: FlowOutput) -> None:
        assert self.burn_shown is not None
        reason = (
            f"burn count wrong: {self.burned} card(s) burned, the shown {self.burn_shown.code} asks for "
            f"{self.burn_to}"
        )
        out.request_pause(reason)
        if self.burned < (self.burn_to or 0):
            self.prompt = f"{reason} — burn the missing cards, then confirm"
        else:
            self.prompt = f"{reason} — reshuffle the decks (new_shoe)"

    def _burn_complete(self, now: float, out: FlowOutput) -> None:
        self._burn_event(now, out, done=True)
        self._to(Stage.WAITING)
        self.idle_reason = "the burn is complete: no card is expected until the next round's betting closes"
        self.prompt = "Burn complete — wait for betting to open"
        self.rounds.set_timer(NEXT_ROUND, now)

    def _burn_done(self, command: BurnDone, now: float) -> FlowOutput:
        if self.stage != Stage.BURN:
            raise InputRejected("no burn is in progress")
        if self.unread_ref is not None:
            # it left the shoe and is not counted yet: the count is only known once it is read
            raise InputRejected(
                f"card {self.unread_ref} could not be read: re-scan it or enter it by hand (manual_card), "
                "then confirm the burn"
            )
        if self.burn_shown is None:
            raise InputRejected("show the first card of the shoe first: its value says how many to burn")
        out = FlowOutput()
        if self.burned != self.burn_to:
            self._burn_event(now, out, done=False)
            self._wrong_burn(out)
            return out
        self._burn_complete(now, out)
        return out

    def _names_secret(self, code: str | None) -> bool:
        # a burned card stays secret for the whole shoe: after the burn nothing else is face down, so a
        # burned card passed over the reader again must be told by its code
        return code is not None and any(card.code == code for card in self.burned_cards)

    def _face_down_expected(self) -> bool:
        # the burned cards go face down and are never shown: as secret as a hole card
        return (self.stage == Stage.BURN and self.burn_shown is not None) or super()._face_down_expected()

    # -- the round -------------------------------------------------------------------------------------

    def _open_round(self, now: float, out: FlowOutput) -> None:
        self.player = []
        super()._open_round(now, out)

    def _unread_card_out(self, now: float, out: FlowOutput) -> None:
        if self.stage == Stage.BURN:
            return  # not a round's card: nothing starts
        super()._unread_card_out(now, out)

    def _next_target(self) -> str | None:
        return "burn" if self.stage == Stage.BURN else super()._next_target()

    def _initial_order(self) -> tuple[str, ...]:
        return INITIAL

    def _target_in_play(self) -> str | None:
        if self.stage == Stage.DECISIONS:
            return "player" if self.awaiting_card else None
        if self.stage == Stage.DEALER:
            return "dealer" if blackjack_rules.dealer_draws(self.dealer, self.dealer_hits_soft_17) else None
        return None

    def _cards_at(self, position: str) -> list[Card]:
        return self.player

    def _label_of(self, position: str) -> str:
        return "Player"

    def _card_in_play(self, now: float, out: FlowOutput) -> None:
        if self.stage == Stage.DECISIONS:
            self._open_decision(now)
        elif not blackjack_rules.dealer_draws(self.dealer, self.dealer_hits_soft_17):
            self._finish(now, out)

    def _waiting_reason(self) -> str:
        if self.stage == Stage.DECISIONS:
            return "the players are deciding: deal only when a card is asked for"
        return super()._waiting_reason()

    def _waiting_cue(self) -> str:
        if self.stage == Stage.DECISIONS:
            total = blackjack_rules.hand_total(self.player)
            return f"Players decide on {'soft ' if total.soft else ''}{total.total} — wait"
        return ""

    def _why_no_card_now(self) -> str | None:
        if self.stage == Stage.BURN:
            return None  # the shown card, then the burned ones (one too many is counted, and pauses)
        if self.stage == Stage.SHUFFLE:
            return "the shoe is finished: shuffle the decks and load the shoe"
        return super()._why_no_card_now()

    def _deal(self, card: Card, now: float, out: FlowOutput, raw: str, rescan: bool) -> None:
        if self.stage == Stage.BURN:
            self._burn_card(card, now, out)
            return
        super()._deal(card, now, out, raw, rescan)

    def _initial_deal_done(self, now: float, out: FlowOutput) -> None:
        if blackjack_rules.is_ace(self.up_card):
            self._to(Stage.INSURANCE)
            self.rounds.set_timer(INSURANCE, now + self.settings.insurance_seconds)
            return
        self._peek(now, out)

    def _end_insurance(self, now: float, out: FlowOutput, by: str = "player") -> None:
        self.rounds.cancel_timer(INSURANCE)
        self._peek(now, out)
        self.prompt = self._prompt()

    def _peek(self, now: float, out: FlowOutput) -> None:
        if blackjack_rules.dealer_may_have_blackjack(self.up_card) and self._dealer_peeks(now, out):
            self._to(Stage.DEALER)
            self._reveal(now, out)
            self._finish(now, out)
            return
        self._to(Stage.DECISIONS)
        self._open_decision(now)

    # -- decisions -----------------------------------------------------------------------------------------

    def _deciding(self, name: str) -> None:
        if not self.rounds.in_round or self.stage != Stage.DECISIONS:
            raise InputRejected(f"{name}: the players are not deciding now ({self._stage_words()})")
        if self.awaiting_card:
            raise InputRejected(f"{name}: a card was asked for and is not dealt yet")

    def _stage_words(self) -> str:
        if not self.rounds.in_round:
            return "no round is in play" if self.stage != Stage.BURN else "the burn is in progress"
        return {
            Stage.BETTING: "betting is open",
            Stage.INITIAL: "the initial cards are being dealt",
            Stage.INSURANCE: "insurance is offered",
            Stage.DEALER: "the dealer is completing the hand",
        }.get(self.stage, self.stage)

    def _deal_card(self, command: DealCard, now: float) -> FlowOutput:
        self._deciding("deal_card")
        out = FlowOutput()
        self._more_cards(now, out, by="player")
        return out

    def _players_done(self, command: PlayersDone, now: float) -> FlowOutput:
        out = FlowOutput()
        if self.rounds.in_round and self.stage == Stage.INSURANCE:
            self._end_insurance(now, out)
            return out
        self._deciding("players_done")
        self._no_more_cards(now, out, by="player")
        return out

    def _policy_decides(self, now: float, out: FlowOutput) -> None:
        if self.stage != Stage.DECISIONS or self.awaiting_card:
            return
        if blackjack_rules.hit_to_twelve(self.player) == "hit":
            self._more_cards(now, out, by="policy")
        else:
            self._no_more_cards(now, out, by="policy")

    def _more_cards(self, now: float, out: FlowOutput, by: str) -> None:
        self.rounds.cancel_timer(DECISION)
        self._decision(now, out, "deal_card", by, None, None, blackjack_rules.hand_total(self.player).total)
        self.last_decision = (
            "A card is asked for" if by == "player" else "No answer: a card (total 11 or less)"
        )
        self.awaiting_card = True
        self.prompt = self._prompt()

    def _no_more_cards(self, now: float, out: FlowOutput, by: str) -> None:
        self.rounds.cancel_timer(DECISION)
        self._decision(
            now, out, "players_done", by, None, None, blackjack_rules.hand_total(self.player).total
        )
        self.last_decision = "Players done" if by == "player" else "No answer: players done"
        self._to(Stage.DEALER)
        self._reveal(now, out)
        if not blackjack_rules.dealer_draws(self.dealer, self.dealer_hits_soft_17):
            self._finish(now, out)
        self.prompt = self._prompt()

    # -- the result --------------------------------------------------------------------------------------

    def _finish(self, now: float, out: FlowOutput) -> None:
        assert self.rounds.round_id is not None and self.shoe.shoe_id is not None
        self.rounds.cancel_timer(DECISION)
        self.rounds.cancel_timer(INSURANCE)
        dealer = dealer_result(self.dealer)
        last = self.rounds.last_of_shoe
        result = InfiniteBlackjackResult(
            round_id=self.rounds.round_id,
            shoe_id=self.shoe.shoe_id,
            initial=[card.code for card in self.player[:2]],
            sequence=[card.code for card in self.player[2:]],
            dealer_up=self.dealer[0].code,
            hole_card=self.dealer[1].code,
            dealer=dealer,
            dealer_bust_cards=len(self.dealer) if dealer.bust else None,
            round_in_shoe=self.rounds.number_in_shoe,
            last_round_of_shoe=last,
        )
        cue = f"Dealer {dealer_words(dealer.model_dump())}"
        if last:
            cue += " — last round of the shoe: reshuffle"
        self._round_result(now, out, result, last, cue)

    def _clear_hands(self) -> None:
        self.player = []

    # -- the dealer's cue and the state ----------------------------------------------------------------------

    def _prompt(self) -> str:
        return self.prompt if self.stage == Stage.BURN else super()._prompt()

    def positions(self) -> list[dict[str, Any]]:
        target = self._next_target() if self._why_no_card_now() is None else None
        if self.stage == Stage.BURN:
            shown = [self.burn_shown] if self.burn_shown is not None else []
            view = position_view("burn", "Burn", shown, target, self.burn_to)
            return [view]
        total = blackjack_rules.hand_total(self.player).total if self.player else None
        return [position_view("player", "Player", self.player, target, total), self._dealer_view(target)]

    def public_state(self) -> dict[str, Any]:
        burn = {
            "shown": self.burn_shown.code if self.burn_shown is not None else None,
            "to_burn": self.burn_to,
            "burned": self.burned,
        }
        return {
            **self._public_round(),
            "burn": burn if self.stage == Stage.BURN else None,
            "initial": [card.code for card in self.player[:2]],
            "sequence": [card.code for card in self.player[2:]],
            "player_total": blackjack_rules.hand_total(self.player).total if self.player else None,
            "waiting_for_card": self.awaiting_card,
        }
