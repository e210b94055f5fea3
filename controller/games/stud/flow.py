"""5 Card Stud (the casino game against the dealer) as a pure state machine.

The rules (docs/games/stud.md): antes are placed while betting is open; each player hand gets 5
cards, the dealer 1 face up; the players then bet (2x ante) or fold; then the dealer gets 4 more cards,
qualifies with ace-king or better, and every hand is compared with the dealer's. Payouts, including "the
dealer does not qualify" and the jackpot on a flush or better, are the rules engine's: the result gives it
every hand's category and tie-break ranks, `dealer_qualifies` and the plain comparison of each hand with
the dealer's.

Dealing order (the rules do not say, so the usual casino order): one card at a time round the player hands
in seat order (hand1 first: the dealer's left), five times, then the dealer's face-up card. Positions are
"hand1".."hand7" and "dealer". With `hands = 1` there is one common hand for every player.

After the dealer's first card the shoe's gate is locked while the players decide; the decision window ends
with the rules engine's input `players_done` or after `decision_seconds` (so a table without a rules engine
still plays on). One deck, a fresh (shuffled) deck every round. Time only comes in as `now`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal, get_args

from pydantic import Field

from controller.cards import Card, CardCode
from controller.command_base import Command, ManualCard, PlayersDone, Shuffle
from controller.events import iso_ms
from controller.flow import FlowOutput, FlowRecord, Handler, InputRejected, Phase
from controller.games.card_flow import CardFlow, CardFlowRecord, CardGameSettings, position_view
from controller.games.stud.events import PokerCategory, StudHand, StudResult
from controller.stages import StageTable
from drivers.readings import CutCardSeen

Outcome = Literal["win", "lose", "tie"]


class Stage(StrEnum):
    """Where a round is (public state's `stage`): told by the cards dealt, the lifecycle's phase and the
    players' decisions, never kept apart from them."""

    WAITING = "waiting"  # between rounds
    BETTING = "betting"
    DEALING_HANDS = "dealing_hands"  # five cards to every hand, then the dealer's face-up card
    DECIDING = "deciding"  # the players bet or fold
    DEALING_DEALER = "dealing_dealer"  # the dealer's other four cards


#: a round goes through every stage in turn; each of them may end it (a void; the dealer's fifth card)
_IN_TURN = (Stage.BETTING, Stage.DEALING_HANDS, Stage.DECIDING, Stage.DEALING_DEALER)
STAGES = StageTable("stud", Stage.WAITING, [(Stage.WAITING, *_IN_TURN)], ending=_IN_TURN)

CARDS_PER_HAND = 5

PROMPT_BETTING_OPEN = "Betting open — do not deal yet"
PROMPT_DECIDING = "Players decide: bet or fold — do not deal"
PROMPT_DEALER = "Deal to Dealer"
PROMPT_VOIDED = "Round voided — collect the cards and take the shuffled deck"


class StudSettings(CardGameSettings):
    hands: int = Field(
        default=1, ge=1, le=7, description="1: one common hand for every player; 2-7: one hand per seat"
    )
    # Poker ranks assume five different cards: with two decks a hand could hold the same card twice.
    decks: int = Field(default=1, ge=1, le=1, description="one deck, replaced by a shuffled one every round")
    decision_seconds: float = Field(
        default=20.0, gt=0, description="time for the players to bet or fold once their cards are out"
    )
    decisions_end_on_dealer_card: bool = Field(
        default=False,
        description="replay policy: no decision timer; the dealer's second card ends the players' decisions",
    )


# --- poker hands ------------------------------------------------------------------------------------------

#: weakest first; the index is the category's strength
CATEGORIES: tuple[PokerCategory, ...] = get_args(PokerCategory)
ACE = 14
KING = 13


def poker_rank(card: Card) -> int:
    """2..10 at face value, J 11, Q 12, K 13, A 14 (an ace plays low only in the A-2-3-4-5 straight)."""
    return ACE if card.rank == "A" else card.rank_index


@dataclass(frozen=True, slots=True)
class HandValue:
    category: PokerCategory
    ranks: tuple[int, ...]

    @property
    def key(self) -> tuple[int, tuple[int, ...]]:
        """Compare hands by this: category first, then the tie-break ranks in order. Suits never count."""
        return CATEGORIES.index(self.category), self.ranks


def _straight_top(ranks_high_first: Sequence[int]) -> int | None:
    """The top card of a five-card straight, or None. A-2-3-4-5 (the wheel) is a straight to the five."""
    if len(set(ranks_high_first)) != CARDS_PER_HAND:
        return None
    if ranks_high_first[0] - ranks_high_first[-1] == CARDS_PER_HAND - 1:
        return ranks_high_first[0]
    if list(ranks_high_first) == [ACE, 5, 4, 3, 2]:
        return 5
    return None


def evaluate(cards: Sequence[Card]) -> HandValue:
    """The poker value of exactly five different cards."""
    if len(cards) != CARDS_PER_HAND or len(set(cards)) != CARDS_PER_HAND:
        raise ValueError(f"a poker hand is five different cards, not {[card.code for card in cards]}")
    ranks = sorted((poker_rank(card) for card in cards), reverse=True)
    # Groups of equal rank, biggest group first, then higher rank first: the tie-break order of every
    # category (the trips of a full house before its pair, a pair before its kickers...).
    groups = sorted(Counter(ranks).items(), key=lambda rank_count: (rank_count[1], rank_count[0]))
    groups.reverse()
    by_group = tuple(rank for rank, _ in groups)
    shape = tuple(count for _, count in groups)
    flush = len({card.suit for card in cards}) == 1
    top = _straight_top(ranks)
    if top is not None and flush:
        return HandValue("royal_flush" if top == ACE else "straight_flush", (top,))
    if shape == (4, 1):
        return HandValue("four_of_a_kind", by_group)
    if shape == (3, 2):
        return HandValue("full_house", by_group)
    if flush:
        return HandValue("flush", tuple(ranks))
    if top is not None:
        return HandValue("straight", (top,))
    if shape == (3, 1, 1):
        return HandValue("three_of_a_kind", by_group)
    if shape == (2, 2, 1):
        return HandValue("two_pair", by_group)
    if shape == (2, 1, 1, 1):
        return HandValue("one_pair", by_group)
    return HandValue("high_card", tuple(ranks))


def dealer_qualifies(value: HandValue) -> bool:
    """Ace-king or better: any pair or better, or a high-card hand holding both an ace and a king."""
    if value.category != "high_card":
        return True
    return value.ranks[0] == ACE and value.ranks[1] == KING


def compare(player: HandValue, dealer: HandValue) -> Outcome:
    if player.key > dealer.key:
        return "win"
    if player.key < dealer.key:
        return "lose"
    return "tie"


def stud_hand(cards: Sequence[Card]) -> StudHand:
    value = evaluate(cards)
    return StudHand(cards=[card.code for card in cards], category=value.category, ranks=list(value.ranks))


def stud_result(
    round_id: str, hands: Sequence[Sequence[Card]], dealer: Sequence[Card], manual_cards: Sequence[str] = ()
) -> StudResult:
    """The result of a complete round; `manual_cards`: the round's cards entered by hand."""
    dealer_value = evaluate(dealer)
    return StudResult(
        round_id=round_id,
        hands=[stud_hand(hand) for hand in hands],
        dealer=stud_hand(dealer),
        dealer_qualifies=dealer_qualifies(dealer_value),
        outcomes=[compare(evaluate(hand), dealer_value) for hand in hands],
        manual_cards=list(manual_cards),
    )


# --- the flow ---------------------------------------------------------------------------------------------


def hand_position(index: int) -> str:
    return f"hand{index + 1}"


#: the players' bet-or-fold window, a timer of the round book
DECISIONS = "decisions"


class StudRecord(CardFlowRecord):
    hands: list[list[CardCode]]
    dealer: list[CardCode] = Field(default_factory=list)
    decisions_done: bool = False


class StudFlow(CardFlow):
    """Reading the cards (re-scans, hand-entered cards, impossible cards) is `CardFlow`'s; this class is the
    stud procedure: when a card may come out and where it goes."""

    game = "stud"
    result_model = StudResult
    record_model: ClassVar[type[FlowRecord]] = StudRecord
    settings: StudSettings

    def __init__(self, table_id: str, settings: StudSettings) -> None:
        super().__init__(table_id, settings, decks=settings.decks)
        self.hands: list[list[Card]] = [[] for _ in range(settings.hands)]
        self.dealer: list[Card] = []
        self.decisions_done = False

    def restore_conflict(self, data: dict[str, Any]) -> str | None:
        hands = len(data.get("hands", []))
        if hands != self.settings.hands and data.get("rounds", {}).get("round_id") is not None:
            return f"the round in play has {hands} hands but game.hands is now {self.settings.hands}"
        return None

    # -- time ------------------------------------------------------------------------------------------

    def _next_round_due(self, now: float, out: FlowOutput) -> None:
        self._open_round(now, out)

    def on_timer(self, name: str, now: float, out: FlowOutput) -> None:
        if name == DECISIONS:
            self._end_decisions(out)
        else:
            super().on_timer(name, now, out)

    # -- readings (the card-reading procedure itself is CardFlow's) ------------------------------------------

    def _on_cut_card(self, reading: CutCardSeen, now: float) -> FlowOutput:
        return self._cut_card_refused(reading, now, "5 Card Stud")

    # -- inputs ----------------------------------------------------------------------------------------

    def handlers(self) -> dict[type[Command], Handler]:
        return {
            ManualCard: self._manual_card,
            PlayersDone: self._players_done,
            Shuffle: self._shuffle_input,
            **super().handlers(),
        }

    def _players_done(self, command: PlayersDone, now: float) -> FlowOutput:
        if self.stage() != Stage.DECIDING:
            raise InputRejected(
                "the players are not deciding now: they decide once every hand has its five cards "
                "and the dealer's first card is up"
            )
        out = FlowOutput()
        self._end_decisions(out)
        return out

    # -- interruptions -----------------------------------------------------------------------------------

    def round_voided(self, now: float, out: FlowOutput) -> None:
        self._request_shoe(out, "lock")
        self.hands = [[] for _ in range(self.settings.hands)]
        self.dealer = []
        self.prompt = PROMPT_VOIDED
        self.idle_reason = "the round was voided: no card is expected until the next round's betting closes"

    # -- state ---------------------------------------------------------------------------------------------

    @contextmanager
    def _moving(self) -> Iterator[None]:
        """Around what may move the round to another stage: a move the stage table does not have raises
        StageError (the stage is told by the cards and the phase, so it is checked before and after)."""
        before = self.stage()
        yield
        STAGES.move(before, self.stage())

    def close_betting(self, now: float, out: FlowOutput, reason: str) -> None:
        with self._moving():
            super().close_betting(now, out, reason)

    def void_round(self, now: float, reason: str, by: str) -> FlowOutput:
        with self._moving():
            return super().void_round(now, reason, by)

    def stage(self) -> Stage:
        if not self.rounds.in_round:
            return Stage.WAITING
        if self.rounds.phase == Phase.BETTING_OPEN:
            return Stage.BETTING
        if self._player_cards_dealt() < self._player_cards_total() or not self.dealer:
            return Stage.DEALING_HANDS
        if not self.decisions_done:
            return Stage.DECIDING
        return Stage.DEALING_DEALER

    def public_state(self) -> dict[str, Any]:
        deciding = self.rounds.timers.get(DECISIONS)
        return {
            **self.round_view(),
            "stage": self.stage(),
            "decisions_close_at": iso_ms(deciding) if deciding is not None else None,
            "hands": [[card.code for card in hand] for hand in self.hands],
            "dealer": [card.code for card in self.dealer],
            # Set exactly when a card is wanted now (a pending re-scan goes there too): the dealer's cue.
            "next_position": self._next_position_wanted(),
            "awaiting_rescan": self.unread_ref is not None,
            "cards_left_in_deck": self.composition.cards_left,
            "prompt": self.prompt,
        }

    def positions(self) -> list[dict[str, Any]]:
        position = self._next_position_wanted()
        # One common hand is "the hand", as the dealer's prompt calls it; several are numbered by seat.
        single = self.settings.hands == 1
        hands = [
            position_view(hand_position(i), "Hand" if single else f"Hand {i + 1}", hand, position)
            for i, hand in enumerate(self.hands)
        ]
        return [*hands, position_view("dealer", "Dealer", self.dealer, position)]

    # -- internals -----------------------------------------------------------------------------------------

    def _player_cards_total(self) -> int:
        return CARDS_PER_HAND * self.settings.hands

    def _player_cards_dealt(self) -> int:
        return sum(len(hand) for hand in self.hands)

    def _next_position(self) -> str | None:
        """Round-robin over the hands, then the dealer's up card; the dealer's other four after decisions."""
        dealt = self._player_cards_dealt()
        if dealt < self._player_cards_total():
            return hand_position(dealt % self.settings.hands)
        if not self.dealer or (self.decisions_done and len(self.dealer) < CARDS_PER_HAND):
            return "dealer"
        return None

    def _next_position_wanted(self) -> str | None:
        return self._next_position() if self._why_no_card_now() is None else None

    def _why_no_card_now(self) -> str | None:
        """Why no card may come out now, or None while the round expects one (and the gate is open)."""
        stage = self.stage()
        if stage == Stage.WAITING:
            return self.idle_reason
        if stage == Stage.BETTING and not self.settings.betting_closes_on_first_card:
            return "betting is still open: deal only after betting closes"
        if stage == Stage.DECIDING and not self.settings.decisions_end_on_dealer_card:
            return "the players are deciding: deal to the dealer only when they are done"
        return None

    def _open_round(self, now: float, out: FlowOutput) -> None:
        with self._moving():
            # A fresh shuffled deck for every round.
            self.composition.reset()
            self.hands = [[] for _ in range(self.settings.hands)]
            self.dealer = []
            self.decisions_done = False
            self._clear_unread()
            if self.settings.betting_closes_on_first_card:
                self.rounds.open(now, out, betting_seconds=None, with_shoe=False)
                self._request_shoe(out, "unlock")
                self.prompt = "Betting open until the first card"
                return
            self.rounds.open(now, out, betting_seconds=self.settings.betting_seconds, with_shoe=False)
            # The gate stays closed while antes are taken: no card can come out early.
            self._request_shoe(out, "lock")
            self.prompt = PROMPT_BETTING_OPEN

    def betting_closed(self, now: float, out: FlowOutput, reason: str) -> None:
        if reason != "first_card":  # the gate is open when a card closed betting
            self._request_shoe(out, "unlock")
        self.prompt = self._deal_prompt()

    def _deal_prompt(self) -> str:
        position = self._next_position()
        if position == "dealer":
            return PROMPT_DEALER
        assert position is not None
        if self.settings.hands == 1:
            return "Deal to the hand"
        return f"Deal to Hand {position.removeprefix('hand')}"

    def _unread_card_out(self, now: float, out: FlowOutput) -> None:
        self._card_ends_waiting(now, out)
        super()._unread_card_out(now, out)

    def _card_ends_waiting(self, now: float, out: FlowOutput) -> None:
        """Replay policies: a card closes betting, or ends the players' decisions."""
        stage = self.stage()
        if stage == Stage.BETTING:
            self.close_betting(now, out, "first_card")
        elif stage == Stage.DECIDING:
            self._end_decisions(out)

    def _deal(self, card: Card, now: float, out: FlowOutput, raw: str, rescan: bool) -> None:
        with self._moving():
            self._card_ends_waiting(now, out)
            position = self._next_position()
            assert position is not None, "a card nobody expects was dealt"
            hand = self.dealer if position == "dealer" else self.hands[int(position.removeprefix("hand")) - 1]
            self._place_card(card, hand, position, now, out, raw, rescan)
            if len(self.dealer) == CARDS_PER_HAND:
                self._finish_round(now, out)
            elif position == "dealer" and len(self.dealer) == 1:
                self._start_decisions(now, out)
            else:
                self.prompt = self._deal_prompt()

    def _start_decisions(self, now: float, out: FlowOutput) -> None:
        if self.settings.decisions_end_on_dealer_card:
            self.prompt = "Players decide — the dealer's next card ends the decisions"
            return
        self.rounds.set_timer(DECISIONS, now + self.settings.decision_seconds)
        # No card may come out while the players bet or fold.
        self._request_shoe(out, "lock")
        self.prompt = PROMPT_DECIDING

    def _end_decisions(self, out: FlowOutput) -> None:
        with self._moving():
            self.decisions_done = True
            self.rounds.cancel_timer(DECISIONS)
            self._request_shoe(out, "unlock")
            self.prompt = PROMPT_DEALER

    def _finish_round(self, now: float, out: FlowOutput) -> None:
        assert self.rounds.round_id is not None
        result = stud_result(self.rounds.round_id, self.hands, self.dealer, self._manual_codes())
        self.finish_round(now, out, result)
        self.idle_reason = "the round is over: no card is expected until the next round's betting closes"
        self.prompt = self._result_prompt(result)

    def _result_prompt(self, result: StudResult) -> str:
        dealer = result.dealer.category.replace("_", " ")
        qualifies = "qualifies" if result.dealer_qualifies else "does not qualify"
        verbs = {"win": "wins", "lose": "loses", "tie": "ties"}
        if len(result.outcomes) == 1:
            outcomes = f"the hand {verbs[result.outcomes[0]]}"
        else:
            outcomes = ", ".join(
                f"Hand {i} {verbs[outcome]}" for i, outcome in enumerate(result.outcomes, start=1)
            )
        return f"Dealer has {dealer} ({qualifies}) — {outcomes}"

    def round_over(self, now: float, out: FlowOutput) -> None:
        self._clear_unread()
        # A fresh shuffled deck for every round, after a voided one too.
        self._want_shuffle("round over")
