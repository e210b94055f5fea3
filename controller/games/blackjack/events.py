"""The blackjack family's events (Live, Single-deck and Infinite Blackjack): the hands and the dealer's
hand a result reports, Live Blackjack's `round.result`, and the events every blackjack table publishes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from controller.events import EventData, GameEvent, RoundResult

BlackjackOutcome = Literal["blackjack", "win", "push", "lose", "surrender"]


class BlackjackDealer(EventData):
    cards: list[str] = Field(description="in dealing order; a face-down card only once it was revealed")
    total: int = Field(description="best total: an ace counts 11 unless that busts")
    soft: bool = Field(description="an ace still counts 11 in `total`")
    blackjack: bool = Field(description="21 in the first two cards")
    bust: bool


class BlackjackHand(EventData):
    seat: int = Field(ge=1, description="the box, 1 = the dealer's left")
    hand: int = Field(ge=1, le=2, description="1; 2 for the second hand of a split box")
    cards: list[str] = Field(description="in dealing order")
    total: int
    soft: bool
    blackjack: bool = Field(description="21 in two cards, not after a split")
    bust: bool
    doubled: bool
    split: bool = Field(description="the hand was made by splitting a pair")
    surrendered: bool
    insured: bool = Field(description="the box took insurance (both hands of a split box say so)")
    outcome: BlackjackOutcome = Field(description="against the dealer's hand; payouts are the rules engine's")


class BoxedBlackjackResult(RoundResult):
    """What Live and Single-deck Blackjack report: every box's hands against the dealer's."""

    round_id: str
    dealer: BlackjackDealer
    hands: list[BlackjackHand] = Field(description="by seat, then hand; Bet Behind settles as its box")
    round_in_shoe: int = Field(ge=1)
    last_round_of_shoe: bool


class BlackjackResult(BoxedBlackjackResult):
    game: Literal["blackjack"] = "blackjack"


class CardFaceDown(GameEvent):
    """A card was dealt face down (the dealer's hole card): its place only, never its identity. The same
    card's `card.dealt` (same position and index) follows when it is revealed."""

    TYPE = "card.face_down"
    round_id: str
    position: str
    index: int
    rescan: bool = False


class DealerPeek(GameEvent):
    """The dealer checked the face-down card under an ace or a ten-valued up card."""

    TYPE = "dealer.peek"
    round_id: str
    up_card: str
    blackjack: bool = Field(description="the dealer has blackjack: the round ends")


BlackjackAction = Literal[
    "hit", "stand", "double", "split", "surrender", "insurance", "no_insurance", "deal_card", "players_done"
]


class BlackjackDecisionMade(GameEvent):
    TYPE = "blackjack.decision"

    round_id: str
    seat: int | None = Field(description="the box; null for Infinite's common hand")
    hand: int | None
    action: BlackjackAction
    by: Literal["player", "policy"] = Field(
        description="player: the rules engine's input; policy: no decision in time, the variant's "
        "disconnect policy decided"
    )
    total: int | None = Field(None, description="the hand's total when it was decided")


class BlackjackHandSettled(GameEvent):
    """A hand whose outcome is certain before the dealer plays: bust, surrender, or a blackjack the dealer
    cannot match."""

    TYPE = "blackjack.hand_settled"
    round_id: str
    seat: int
    hand: int
    outcome: BlackjackOutcome
    reason: str
