"""Baccarat (punto banco) as a pure state machine.

The dealer deals by hand from a scanning shoe; this flow decides where every card goes (Player, Banker,
Player, Banker, then the third-card rule), tells the dealer in plain words, and refuses any card that breaks
the procedure or that the shoe cannot hold. Rounds follow `RoundBook`'s lifecycle; a shoe ends with the
round in which the cut card comes out.

Time only comes in as `now`: the flow never reads a clock, so a replay of the same readings and deadlines
produces the same events, and a restored state record resumes exactly where it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from controller.cards import Card, CardCode
from controller.command_base import Command, ManualCard, Shuffle
from controller.flow import FlowOutput, FlowRecord, Handler, Phase
from controller.games.baccarat.events import BaccaratHand, BaccaratResult
from controller.games.card_flow import CardFlow, CardGameSettings, position_view
from controller.games.card_source import ShoeOfRounds, ShoeRecord
from drivers.readings import CutCardSeen

Position = Literal["player", "banker"]

PROMPT_SHOE_FINISHED = "Shoe finished: load a new shoe"
PROMPT_BETTING_OPEN = "Betting open — do not deal yet"
PROMPT_BETTING_OPEN_FIRST_CARD = "Betting open — the first card dealt to Player closes betting"
PROMPT_VOIDED = "Round voided — set the dealt cards aside"

_PROMPT_DEAL = {"player": "Deal to Player", "banker": "Deal to Banker"}


class BaccaratSettings(CardGameSettings):
    decks: int = Field(default=8, ge=1, le=8)
    auto_new_shoe: bool = Field(
        default=True,
        description="after the cut-card round, start a new shoe by itself; else wait for input new_shoe",
    )


# --- the rules of punto banco ---------------------------------------------------------------------------


def card_points(card: Card) -> int:
    """Ace 1, two to nine at face value, ten and court cards 0."""
    return card.rank_index if card.rank_index <= 9 else 0


def hand_total(cards: Sequence[Card]) -> int:
    return sum(card_points(card) for card in cards) % 10


def banker_draws(banker_total: int, player_third: int | None) -> bool:
    """The banker's third-card rule; `player_third` is the points of the player's third card, None if the
    player stood."""
    if player_third is None:
        return banker_total <= 5
    if banker_total <= 2:
        return True
    if banker_total == 3:
        return player_third != 8
    if banker_total == 4:
        return 2 <= player_third <= 7
    if banker_total == 5:
        return 4 <= player_third <= 7
    if banker_total == 6:
        return player_third in (6, 7)
    return False


def next_position(player: Sequence[Card], banker: Sequence[Card]) -> Position | None:
    """Where the next card goes, or None when the hand is complete."""
    if len(banker) < 2:
        return "player" if len(player) == len(banker) else "banker"
    player_total, banker_total = hand_total(player[:2]), hand_total(banker[:2])
    if player_total >= 8 or banker_total >= 8 or len(banker) == 3:
        return None
    if len(player) == 2:
        if player_total <= 5:
            return "player"
        return "banker" if banker_draws(banker_total, None) else None
    return "banker" if banker_draws(banker_total, card_points(player[2])) else None


def is_natural(hand: Sequence[Card]) -> bool:
    return len(hand) >= 2 and hand_total(hand[:2]) >= 8


def is_pair(hand: Sequence[Card]) -> bool:
    """The first two cards have the same rank (suits may differ)."""
    return len(hand) >= 2 and hand[0].rank == hand[1].rank


# --- the flow ---------------------------------------------------------------------------------------------


class BaccaratRecord(ShoeRecord):
    cut_card_seen: bool = False
    player: list[CardCode] = Field(default_factory=list)
    banker: list[CardCode] = Field(default_factory=list)


class BaccaratFlow(CardFlow):
    """Reading the cards (re-scans, hand-entered cards, impossible cards) is `CardFlow`'s; this class is the
    baccarat procedure: when a card may come out and where it goes."""

    game = "baccarat"
    result_model = BaccaratResult
    record_model: ClassVar[type[FlowRecord]] = BaccaratRecord
    parts: ClassVar[tuple[str, ...]] = ("shoe",)
    settings: BaccaratSettings

    def __init__(self, table_id: str, settings: BaccaratSettings) -> None:
        super().__init__(table_id, settings, decks=settings.decks)
        self.shoe = ShoeOfRounds()
        self.cut_card_seen = False
        self.player: list[Card] = []
        self.banker: list[Card] = []

    # -- time ------------------------------------------------------------------------------------------

    def _next_round_due(self, now: float, out: FlowOutput) -> None:
        if not self.shoe.ready_for_round(self, now, out, auto_new_shoe=self.settings.auto_new_shoe):
            return  # the input new_shoe opens the next round
        self._open_round(now, out)

    # -- readings (the card-reading procedure itself is CardFlow's) ------------------------------------------

    def _unread_card_out(self, now: float, out: FlowOutput) -> None:
        # In first-card mode an unread first card closes betting just as a read one does.
        if self.rounds.phase == Phase.BETTING_OPEN:
            self.close_betting(now, out, "first_card")
        super()._unread_card_out(now, out)

    def _on_cut_card(self, reading: CutCardSeen, now: float) -> FlowOutput:
        # With auto_new_shoe the shoe after a finished one starts by itself: the cut card is that shoe's.
        out = self.shoe.cut_card(self, now, next_shoe_starts=self.settings.auto_new_shoe)
        self.cut_card_seen = True
        return out

    # -- inputs ----------------------------------------------------------------------------------------

    def handlers(self) -> dict[type[Command], Handler]:
        return {
            ManualCard: self._manual_card,
            **self.shoe.handlers(self),
            Shuffle: self._shuffle_input,
            **super().handlers(),
        }

    # -- interruptions -----------------------------------------------------------------------------------

    def round_voided(self, now: float, out: FlowOutput) -> None:
        self._request_shoe(out, "lock")
        # Cards already out stay counted in the composition: they left the shoe whatever happens to bets.
        # A voided last round does not finish the shoe: the next round is the last one again.
        self.player, self.banker = [], []
        self.prompt = PROMPT_VOIDED
        self.idle_reason = "the round was voided: no card is expected until the next round's betting closes"

    # -- state ---------------------------------------------------------------------------------------------

    def public_state(self) -> dict[str, Any]:
        position = self._next_position_if_dealing()
        return {
            **self.round_view(),
            **self.shoe.public(self),
            "player": [card.code for card in self.player],
            "banker": [card.code for card in self.banker],
            "player_total": self._total_or_none(self.player),
            "banker_total": self._total_or_none(self.banker),
            "next_position": position,
            "awaiting_rescan": self.unread_ref is not None,
            "prompt": self.prompt,
        }

    def positions(self) -> list[dict[str, Any]]:
        position = self._next_position_if_dealing()
        return [
            position_view("player", "Player", self.player, position, self._total_or_none(self.player)),
            position_view("banker", "Banker", self.banker, position, self._total_or_none(self.banker)),
        ]

    # -- internals -----------------------------------------------------------------------------------------

    def restore_conflict(self, data: dict[str, Any]) -> str | None:
        return self.shoe.restore_conflict(data, self.composition.decks)

    def shoe_started(self, now: float, out: FlowOutput) -> None:
        self.cut_card_seen = False

    def _open_round(self, now: float, out: FlowOutput) -> None:
        self.player, self.banker = [], []
        self._clear_unread()
        if self.settings.betting_closes_on_first_card:
            self.rounds.open(now, out, betting_seconds=None)
            self._request_shoe(out, "unlock")
            self.prompt = PROMPT_BETTING_OPEN_FIRST_CARD
        else:
            self.rounds.open(now, out, betting_seconds=self.settings.betting_seconds)
            # The gate stays closed while bets are taken: no card can come out early.
            self._request_shoe(out, "lock")
            self.prompt = PROMPT_BETTING_OPEN

    def betting_closed(self, now: float, out: FlowOutput, reason: str) -> None:
        if reason != "first_card":  # the gate is already open when a card closed betting
            self._request_shoe(out, "unlock")
        self.prompt = _PROMPT_DEAL["player"]

    def _why_no_card_now(self) -> str | None:
        """Why no card may come out now, or None while the round expects one (and the gate is open)."""
        if not self.rounds.in_round:
            if self.shoe.shoe_finished and not self.settings.auto_new_shoe:
                return "the shoe is finished: load a new shoe"
            return self.idle_reason
        # In first-card mode the first card itself closes betting, so a card is expected while bets are taken.
        if self.rounds.phase == Phase.BETTING_OPEN and not self.settings.betting_closes_on_first_card:
            return "betting is still open: deal only after betting closes"
        return None

    def _deal(self, card: Card, now: float, out: FlowOutput, raw: str, rescan: bool) -> None:
        if self.rounds.phase == Phase.BETTING_OPEN:
            self.close_betting(now, out, "first_card")
        position = next_position(self.player, self.banker)
        assert position is not None, "a card was dealt to a complete hand"
        hand = self.player if position == "player" else self.banker
        self._place_card(card, hand, position, now, out, raw, rescan)
        following = next_position(self.player, self.banker)
        if following is None:
            self._finish_round(now, out)
        else:
            self.prompt = self._dealing_prompt(following)

    def _dealing_prompt(self, position: Position) -> str:
        """What the dealer does next; after the first four cards, say which third-card rule applies."""
        if len(self.banker) < 2:
            return _PROMPT_DEAL[position]
        if position == "player":
            return "Player draws"
        if len(self.player) == 2:
            return "Player stands — Banker draws"
        return "Banker draws"

    def _finish_round(self, now: float, out: FlowOutput) -> None:
        round_id = self.rounds.round_id
        assert round_id is not None
        player_total, banker_total = hand_total(self.player), hand_total(self.banker)
        winner: Literal["player", "banker", "tie"]
        if player_total > banker_total:
            winner = "player"
        elif banker_total > player_total:
            winner = "banker"
        else:
            winner = "tie"
        result = BaccaratResult(
            round_id=round_id,
            player=BaccaratHand(cards=[c.code for c in self.player], total=player_total),
            banker=BaccaratHand(cards=[c.code for c in self.banker], total=banker_total),
            winner=winner,
            player_pair=is_pair(self.player),
            banker_pair=is_pair(self.banker),
            natural=is_natural(self.player) or is_natural(self.banker),
            player_natural=is_natural(self.player),
            banker_natural=is_natural(self.banker),
            round_number_in_shoe=self.rounds.number_in_shoe,
            last_round_of_shoe=self.rounds.last_of_shoe,
            manual_cards=self._manual_codes(),
        )
        self.finish_round(now, out, result)
        self.shoe.round_finished(self, result.last_round_of_shoe)
        self.idle_reason = "the hand is complete: no card is expected until the next round's betting closes"
        self.prompt = self._result_prompt(result)
        if self.shoe.shoe_finished and not self.settings.auto_new_shoe:
            self.prompt = f"{self.prompt}. {PROMPT_SHOE_FINISHED}"

    def _result_prompt(self, result: BaccaratResult) -> str:
        if result.natural:
            how = "Natural"
        elif len(self.banker) == 3:
            how = "Banker drew"
        elif len(self.player) == 3:
            how = "Banker stands"
        else:
            how = "Player stands, Banker stands"
        player, banker = result.player.total, result.banker.total
        if result.winner == "tie":
            outcome = f"Tie {player} to {banker}"
        elif result.winner == "player":
            outcome = f"Player wins {player} to {banker}"
        else:
            outcome = f"Banker wins {banker} to {player}"
        return f"{how} — {outcome}"

    def round_over(self, now: float, out: FlowOutput) -> None:
        self._clear_unread()

    @staticmethod
    def _total_or_none(hand: Sequence[Card]) -> int | None:
        """No total before the hand's first card: an empty hand is not a hand worth 0."""
        return hand_total(hand) if hand else None

    def _next_position_if_dealing(self) -> Position | None:
        if not self.rounds.in_round:
            return None
        return next_position(self.player, self.banker)
