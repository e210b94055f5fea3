"""Andar Bahar as a pure state machine.

One 52-card deck, a fresh (already shuffled) deck for every round (docs/games/andar_bahar.md). The procedure
differs from the common lifecycle in one way: the dealer draws the GAME CARD before any bet is taken, and the
countdown starts when it is shown. So this flow does not open a round on a timer; it waits, between rounds,
for the game card (`next_position == "game"`, prompt "Draw the game card"), and the game card itself opens
the round: `round.opened` (with `betting_closes_at` = now + betting_seconds) then `card.dealt` at position
"game". Until the first Andar card the round has not started, so a fault during betting voids it (bets
refunded); the next round then starts again from a new deck and a new game card.

After betting closes cards alternate Andar, Bahar, Andar, ... until one has the game card's rank; that side
wins. Cards that break the procedure (between rounds, during betting, after the match, or a second copy of a
card of the one deck) are rejected and reported, never guessed. The shoe's gate is locked while no card is
expected. With a shuffler (`shuffler_device`), every game card waits for the deck to be shuffled and
counted (`CardFlow`'s shuffle, wanted at the end of every round). Time only comes in as `now`: replays are
exact and a restored state record resumes where it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any, ClassVar, Literal, get_args

from pydantic import Field

from controller.cards import Card, CardCode
from controller.command_base import Command, ManualCard, NewShoe, Shuffle
from controller.events import CardDealt
from controller.flow import FlowOutput, FlowRecord, Handler, Phase
from controller.games.andar_bahar.events import AndarBaharBucket, AndarBaharResult
from controller.games.card_flow import CardFlow, CardFlowRecord, CardGameSettings, position_view
from drivers.readings import CutCardSeen

Side = Literal["andar", "bahar"]
Position = Literal["game", "andar", "bahar"]
FirstThree = Literal["straight_flush", "straight", "flush"]

DECKS = 1

PROMPT_GAME_CARD = "Draw the game card"
PROMPT_VOIDED = "Round voided — collect the cards and take the shuffled deck"

_PROMPT_DEAL = {"andar": "Deal to Andar", "bahar": "Deal to Bahar"}
_SIDE_NAME = {"andar": "Andar", "bahar": "Bahar"}


class AndarBaharSettings(CardGameSettings):
    """`betting_seconds` is the countdown that starts when the game card is shown; `round_gap_seconds` the
    pause before the next game card is asked for (with a shuffler: before the deck is shuffled, and the game
    card is asked for once the shuffler counted it)."""


# --- the rules of Andar Bahar -----------------------------------------------------------------------------

#: The 'number of cards dealt' bet ranges (docs/games/andar_bahar.md), as the contract names them. The last
#: one is short: one deck holds 48 cards of other ranks, so the match comes at the 49th card at the latest.
BUCKETS: tuple[tuple[int, int, AndarBaharBucket], ...] = tuple(
    (int(label.split("-")[0]), int(label.split("-")[1]), label) for label in get_args(AndarBaharBucket)
)


def side_of(card_number: int) -> Side:
    """Where the `card_number`-th card after betting goes (1-based): odd to Andar, even to Bahar."""
    return "andar" if card_number % 2 == 1 else "bahar"


def bucket_of(cards_dealt: int) -> AndarBaharBucket:
    for low, high, label in BUCKETS:
        if low <= cards_dealt <= high:
            return label
    raise ValueError(f"{cards_dealt} cards cannot be dealt from one deck before a match (1..49)")


def _consecutive(values: Sequence[int]) -> bool:
    ordered = sorted(values)
    return all(b - a == 1 for a, b in pairwise(ordered))


def is_three_card_straight(cards: Sequence[Card]) -> bool:
    """Three ranks in sequence. The ace plays high (Q-K-A, the rules' example) or low (A-2-3, as in three-card
    poker); a run never wraps round the ace (K-A-2 is no straight)."""
    low = [card.rank_index for card in cards]  # ace 1
    high = [14 if value == 1 else value for value in low]
    return _consecutive(low) or _consecutive(high)


def first_three(cards: Sequence[Card]) -> FirstThree | None:
    """The 'First 3' pattern of game card + first Andar + first Bahar; None with fewer than three cards (the
    bet loses then) or when they form no pattern."""
    if len(cards) < 3:
        return None
    straight = is_three_card_straight(cards[:3])
    flush = len({card.suit for card in cards[:3]}) == 1
    if straight and flush:
        return "straight_flush"
    if straight:
        return "straight"
    if flush:
        return "flush"
    return None


def andar_bahar_result(
    round_id: str,
    game_card: Card,
    andar: Sequence[Card],
    bahar: Sequence[Card],
    manual_cards: Sequence[str] = (),
) -> AndarBaharResult:
    """The result of a complete round: the last card dealt matches the game card's rank. `manual_cards`: the
    round's cards entered by hand."""
    winner: Side = "andar" if len(andar) > len(bahar) else "bahar"
    assert (andar if winner == "andar" else bahar)[-1].rank == game_card.rank, "the round has no match yet"
    cards_dealt = len(andar) + len(bahar)
    return AndarBaharResult(
        round_id=round_id,
        game_card=game_card.code,
        andar=[card.code for card in andar],
        bahar=[card.code for card in bahar],
        winner=winner,
        cards_dealt=cards_dealt,
        bucket=bucket_of(cards_dealt),
        first_andar_match=andar[0].rank == game_card.rank,
        first_bahar_match=bool(bahar) and bahar[0].rank == game_card.rank,
        first_three=first_three([game_card, *andar[:1], *bahar[:1]]),
        manual_cards=list(manual_cards),
    )


# --- the flow ---------------------------------------------------------------------------------------------


class AndarBaharRecord(CardFlowRecord):
    awaiting_game_card: bool = False
    game_card: CardCode | None = None
    andar: list[CardCode] = Field(default_factory=list)
    bahar: list[CardCode] = Field(default_factory=list)


class AndarBaharFlow(CardFlow):
    """Reading the cards (re-scans, hand-entered cards, impossible cards) is `CardFlow`'s; this class is the
    Andar Bahar procedure: when a card may come out and where it goes."""

    game = "andar_bahar"
    result_model = AndarBaharResult
    record_model: ClassVar[type[FlowRecord]] = AndarBaharRecord
    settings: AndarBaharSettings

    def __init__(self, table_id: str, settings: AndarBaharSettings) -> None:
        super().__init__(table_id, settings, decks=DECKS)
        # Between rounds, once the new deck is in: the next card out is the game card (it opens the round).
        self.awaiting_game_card = False
        self.game_card: Card | None = None
        self.andar: list[Card] = []
        self.bahar: list[Card] = []
        self.idle_reason = "the table has not started yet"

    # -- time ------------------------------------------------------------------------------------------

    def _next_round_due(self, now: float, out: FlowOutput) -> None:
        if not self.awaiting_game_card:
            self._await_game_card(out)

    # -- readings (the card-reading procedure itself is CardFlow's) ------------------------------------------

    def _unread_card_out(self, now: float, out: FlowOutput) -> None:
        # An unread game card opens nothing yet: the round opens when it is known. An unread Andar/Bahar card
        # has started the round: from now a fault pauses the round instead of voiding it.
        if self.rounds.in_round:
            self._first_card_closes_betting(now, out)
            self.rounds.start_play()

    def _on_cut_card(self, reading: CutCardSeen, now: float) -> FlowOutput:
        return self._cut_card_refused(reading, now, "Andar Bahar")

    # -- inputs ----------------------------------------------------------------------------------------

    def handlers(self) -> dict[type[Command], Handler]:
        return {ManualCard: self._manual_card, Shuffle: self._shuffle_input, **super().handlers()}

    def refusal_of(self, command: Command, handlers: dict[type[Command], Handler]) -> str:
        if isinstance(command, NewShoe):
            return "andar_bahar takes no new_shoe: every round starts from a fresh deck"
        return super().refusal_of(command, handlers)

    # -- interruptions -----------------------------------------------------------------------------------

    def round_voided(self, now: float, out: FlowOutput) -> None:
        self.game_card, self.andar, self.bahar = None, [], []
        self.prompt = PROMPT_VOIDED
        self.idle_reason = "the round was voided: no card is expected until the next game card is asked for"

    # -- state ---------------------------------------------------------------------------------------------

    def public_state(self) -> dict[str, Any]:
        return {
            **self.round_view(),
            "game_card": self.game_card.code if self.game_card is not None else None,
            "andar": [card.code for card in self.andar],
            "bahar": [card.code for card in self.bahar],
            # Set exactly when a card is wanted now (a pending re-scan goes there too): the dealer's cue.
            "next_position": self._next_position_wanted(),
            "awaiting_rescan": self.unread_ref is not None,
            "cards_dealt": len(self.andar) + len(self.bahar),
            "cards_left_in_deck": self.composition.cards_left,
            "prompt": self.prompt,
        }

    def positions(self) -> list[dict[str, Any]]:
        position = self._next_position_wanted()
        game_card = [self.game_card] if self.game_card is not None else []
        return [
            position_view("game", "Game card", game_card, position),
            position_view("andar", "Andar", self.andar, position),
            position_view("bahar", "Bahar", self.bahar, position),
        ]

    # -- internals -----------------------------------------------------------------------------------------

    def _await_game_card(self, out: FlowOutput) -> None:
        # The other, already shuffled deck is in the shoe now: everything is back in it.
        self.composition.reset()
        self.game_card, self.andar, self.bahar = None, [], []
        self.awaiting_game_card = True
        self._request_shoe(out, "unlock")
        self.prompt = PROMPT_GAME_CARD

    def _next_position(self) -> Position:
        if self.game_card is None:
            return "game"
        return side_of(len(self.andar) + len(self.bahar) + 1)

    def _next_position_wanted(self) -> Position | None:
        return self._next_position() if self._why_no_card_now() is None else None

    def _why_no_card_now(self) -> str | None:
        """Why no card may come out now, or None while one is expected (and the gate is open)."""
        if not self.rounds.in_round:
            return None if self.awaiting_game_card else self.idle_reason
        if self.rounds.phase == Phase.BETTING_OPEN and not self.settings.betting_closes_on_first_card:
            return "betting is open: deal to Andar only after betting closes"
        return None

    def _deal(self, card: Card, now: float, out: FlowOutput, raw: str, rescan: bool) -> None:
        if not self.rounds.in_round:
            self._deal_game_card(card, now, out, raw, rescan)
            return
        assert self.game_card is not None
        self._first_card_closes_betting(now, out)
        side = side_of(len(self.andar) + len(self.bahar) + 1)
        self._place_card(card, self.andar if side == "andar" else self.bahar, side, now, out, raw, rescan)
        if card.rank == self.game_card.rank:
            self._finish_round(now, out)
        else:
            self.prompt = _PROMPT_DEAL[side_of(len(self.andar) + len(self.bahar) + 1)]

    def _deal_game_card(self, card: Card, now: float, out: FlowOutput, raw: str, rescan: bool) -> None:
        # The game card is on the table: the round opens and the countdown starts (docs/games/andar_bahar.md).
        self.awaiting_game_card = False
        first_card = self.settings.betting_closes_on_first_card
        betting = None if first_card else self.settings.betting_seconds
        round_id = self.rounds.open(now, out, betting_seconds=betting, with_shoe=False)
        self.composition.take(card)
        self.game_card = card
        out.emit(
            "card.dealt",
            CardDealt(round_id=round_id, card=card.code, position="game", index=0, rescan=rescan, raw=raw),
            now,
        )
        if first_card:
            self.prompt = f"Game card {card.code} — betting open until the first Andar card"
            return
        # No card may come out while bets are taken.
        self._request_shoe(out, "lock")
        self.prompt = f"Game card {card.code} — betting open, do not deal yet"

    def _first_card_closes_betting(self, now: float, out: FlowOutput) -> None:
        if self.rounds.phase == Phase.BETTING_OPEN:
            self.close_betting(now, out, "first_card")

    def betting_closed(self, now: float, out: FlowOutput, reason: str) -> None:
        if reason != "first_card":  # the gate is open when a card closed betting
            self._request_shoe(out, "unlock")
        self.prompt = _PROMPT_DEAL["andar"]

    def _finish_round(self, now: float, out: FlowOutput) -> None:
        assert self.rounds.round_id is not None and self.game_card is not None
        result = andar_bahar_result(
            self.rounds.round_id, self.game_card, self.andar, self.bahar, self._manual_codes()
        )
        self.finish_round(now, out, result)
        self.idle_reason = "the round is over: no card is expected until the next game card is asked for"
        matching = (self.andar if result.winner == "andar" else self.bahar)[-1]
        self.prompt = (
            f"{_SIDE_NAME[result.winner]} wins — {matching.code} matches {self.game_card.code} "
            f"({result.cards_dealt} cards). Collect the cards and take the shuffled deck"
        )

    def round_over(self, now: float, out: FlowOutput) -> None:
        self._clear_unread()
        self._request_shoe(out, "lock")
        # Every round is dealt from a freshly shuffled deck (docs/games/andar_bahar.md), a voided one's too.
        self._want_shuffle("round over")
