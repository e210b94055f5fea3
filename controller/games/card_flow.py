"""What every card game dealt from a scanning shoe shares: getting each card read exactly once.

The shoe reports every card that leaves it, read (`CardSeen`) or not (`CardUnread`). Around that, every card
game follows the same procedure, and it lives here so that a game module holds only its own rules:

- An unread card is announced (`card.unreadable`, prompt "Re-scan the card") and nothing advances until its
  re-scan (`CardSeen.rescan_of == ref`) or a hand-entered card (input `manual_card`) arrives.
- A hand-entered card is accepted only for such an unread card, never instead of a card the shoe reads:
  whoever touches the panel must not choose the cards. It is marked `manual` in its `card.dealt` and listed
  in the round's result (`manual_cards`).
- **A supervisor may have to confirm it** (`[table] manual_card_confirmation = "supervisor"`): the entry
  then deals nothing. It is held as pending (`card.manual_pending`; the prompt says "Waiting for a
  supervisor to confirm 7D") until a supervisor's command `confirm_manual_card` names the same card (then it
  is dealt, its `card.dealt` carrying `entered_by` and `confirmed_by`) or `refuse_manual_card` refuses it
  (`card.manual_refused`; the dealer re-scans or enters again). Only a supervisor confirms: never the panel's
  identities, nor whoever entered the card; a wrong card is refused and deals nothing, and after
  `MAX_WRONG_CONFIRMATIONS` of them only a refusal is taken (a face-down card cannot be guessed by trying).
  While a card is face down neither the pending entry nor a refusal names the card.
  The pending entry is not part of the journaled state, on purpose: lost in a crash, nothing was dealt, the
  unread card still waits (the restarted table is paused), and the dealer enters it again.
- **A card out of procedure pauses the table.** Every reading of a physical card that left the shoe and
  cannot be placed — a card while the game expects none (betting open, between rounds, a box deciding),
  another card while an unread one waits for its re-scan, a re-scan no unread card waits for, a card that is
  not a card code or one more copy than the shoe holds (`ShoeComposition.check`) — is never guessed at and
  never just rejected while play goes on: the card is on the felt or in the dealer's hand, and if it was
  meant for the round, the round's result would be wrong. The flow holds it (`out_of_procedure`, not dealt,
  not counted as dealt) and asks the runtime for a pause of cause `out_of_procedure`
  (`FlowOutput.hold_out_of_procedure`); the dealer is told to put it aside and call the supervisor. The
  supervisor's `resume` sets it aside (`card.set_aside`, by whom) and the round goes on as if it had never
  come out; a `void_round` sets it aside too and cancels the round. A repeat of a message already handled is
  not a new card (the session drops it). A re-scan of a card already set aside is held out of procedure
  too: the dealer was told to put that card aside, and a reader that cannot tell a re-scan from a new card
  (a barcode scanner) may be naming a card just dealt in procedure, so it is never only rejected.
- An unread card is never forgotten: the procedure does not move past it (a burn's confirmation, a new
  shoe, a hand-entered card that cannot be dealt now are refused), and should a round open while one still
  waits, it is held out of procedure for the supervisor like any other card.
- While the game holds a secret card (a face-down card, burned cards: `_holds_secret`), no card reading and
  no refusal of a hand-entered card names a card: any of them could be a copy of the secret one.
- Every rejection is a `card.rejected` event; bad readings never raise.
- The shoe's gate is open exactly while a card would be taken (`gate`): locked while the table is paused,
  while bets are taken and from a round's last card until a card is expected again. The runtime writes
  it as it stands at the end of each step, whatever the flow asked on the way.

The shuffler (optional: `shuffler_device`). A game says only *when* it needs the cards shuffled
(`_want_shuffle`: a fresh-deck game after every round, a shoe game when its shoe is finished; a new table
before its first round). Then, when the next round is due (after `round_gap_seconds`, the dealer's time to
clear the table and load the shuffler), this class asks the shuffler (`shuffle.started`) and the game's
`_next_round_due` is not called until the shuffler's count was right (`shuffle.done`, with the machine's
count). A failed shuffle (a count that is not decks x 52, a jam, the door) is `shuffle.failed`: those cards
are never dealt; the shuffler's fault pauses the table, and resuming it shuffles again (so does the input
`shuffle`, for a shuffle that never finished). Without a shuffler nothing waits.

A game says *when* a card may come out (`_why_no_card_now`) and *what* a card does (`_deal`); this class
only ever hands `_deal` a card that may come out now and that the shoe can hold.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from controller.cards import Card, CardCode, InvalidCard, ShoeComposition, ShoeExhausted
from controller.command_base import (
    DEALER_PREFIX,
    PANEL_IDENTITY,
    Command,
    ConfirmManualCard,
    ManualCard,
    RefuseManualCard,
    Shuffle,
)
from controller.events import (
    CardDealt,
    CardRejected,
    CardSetAside,
    CardUnreadable,
    ManualCardPending,
    ManualCardRefused,
    RawRejected,
    ShuffleCompleted,
    ShuffleFailure,
    ShuffleStarted,
    iso_ms,
    make_event,
)
from controller.flow import SECRET, DeviceRequest, FlowOutput, FlowRecord, GameFlow, Handler, InputRejected
from drivers.readings import CardSeen, CardUnread, CutCardSeen, Reading, ShuffleDone, ShuffleFailed
from drivers.session import DeviceCommand

PROMPT_RESCAN = "Re-scan the card"
#: the start of the dealer's prompt while a hand-entered card waits for a supervisor
PROMPT_CONFIRMATION = "Waiting for a supervisor to confirm"
#: wrong cards named in confirmations of one entry before only a refusal is taken
MAX_WRONG_CONFIRMATIONS = 3
MANUAL_CARD_REFUSAL = (
    "no unread card is waiting: a card can be entered by hand only for a card the reader could not read"
)
PROMPT_SHUFFLING = "Shuffling — wait for the shuffler, then put the shuffled cards in the shoe"
#: a refusal that names no card: any card named while the game holds a secret card may be a copy of it
SECRET_SAFE_REFUSAL = "the card could not be taken: check it and call the supervisor"
#: re-scans of set-aside cards recognised as such (the device numbers its messages; a few suffice)
SET_ASIDE_REFS_KEPT = 32

Told = TypeVar("Told", bound=BaseModel)


class CardGameSettings(BaseModel):
    """What every card game's settings have: the round's timing and the shoe it is dealt from."""

    model_config = ConfigDict(extra="forbid")

    betting_seconds: float = Field(default=15.0, gt=0, description="how long bets are taken")
    round_gap_seconds: float = Field(
        default=3.0, ge=0, description="pause between a round's close and the next round"
    )
    betting_closes_on_first_card: bool = Field(
        default=False,
        description="replay policy: no betting timer; a round's betting closes when its first card arrives",
    )
    shoe_device: str = Field(
        default="shoe", min_length=1, description="the configured device name of the shoe"
    )
    shuffler_device: str | None = Field(
        default=None,
        min_length=1,
        description="the configured device name of the shuffler, if the table has one: no round is then "
        "dealt from cards it has not shuffled and counted",
    )


class ShoeSettings(Protocol):
    """What the card procedure needs from a game's settings."""

    @property
    def shoe_device(self) -> str: ...

    @property
    def shuffler_device(self) -> str | None: ...


def position_view(
    name: str, label: str, cards: Sequence[Card], next_position: str | None, total: int | None = None
) -> dict[str, Any]:
    """One place on the table as the dealer's panel shows it, the same for every card game.

    `next` marks where the next card goes: the position the game's own `next_position` names.
    """
    return {
        "name": name,
        "label": label,
        "cards": [card.code for card in cards],
        "total": total,
        "next": name == next_position,
    }


class ShuffleBook(BaseModel):
    """The shuffle the next round waits for (only with a shuffler): a plain record, kept in the journal."""

    model_config = ConfigDict(extra="forbid")

    #: the cards must be shuffled before the next round, and why (the `shuffle.started` reason)
    wanted: bool = False
    reason: str = ""
    #: the SHUFFLE requests sent for the current want: a DONE for any of them satisfies it
    ids: list[str] = Field(default_factory=list)
    #: how many SHUFFLE requests this table sent (numbers the ids)
    requested: int = 0
    #: why the last shuffle failed, until the shuffler is asked again
    failure: str | None = None
    #: the next round was due and waits for the shuffle
    round_waits: bool = False


class OutOfProcedure(BaseModel):
    """A card that came out while the procedure did not allow it: held, not dealt, until the supervisor's
    decision sets it aside. Kept in the state row only (it may be a copy of a face-down card)."""

    model_config = ConfigDict(extra="forbid")

    #: the card as read (may be no card code at all), None when it came out unread
    code: str | None
    raw: str
    #: the device's reference (sequence number) of the card, if any
    ref: str = ""
    #: a re-scan, not a card newly out of the shoe
    rescan: bool = False
    #: it is the unread card waiting for its re-scan: setting it aside ends that wait
    unread: bool = False
    round_id: str | None
    #: why the card could not be taken, as published (names no secret)
    reason: str
    #: naming it could reveal a secret card: published with neither its code nor its device text
    secret: bool = False


@dataclass(frozen=True, slots=True)
class PendingManualCard:
    """A card entered by hand that waits for a supervisor (not journaled: see the module docstring)."""

    card: Card
    entered_by: str
    #: the unread card it would settle
    ref: str
    #: it may be the face-down card: never named while it waits, nor in its refusal
    secret: bool
    wrong: int = 0


def manual_identities(raw: str) -> dict[str, str]:
    """Who entered and who confirmed a hand-entered card, from its device text's last line
    (`manual_card 7D {"entered_by": ..., "confirmed_by": ...}`); empty when nobody had to confirm it."""
    last = raw.rsplit("\n", 1)[-1]
    if not last.startswith("manual_card "):
        return {}
    _, _, rest = last.partition(" ")
    _, _, names = rest.partition(" ")
    if not names:
        return {}
    try:
        found = json.loads(names)
    except ValueError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {key: str(found[key]) for key in ("entered_by", "confirmed_by") if isinstance(found.get(key), str)}


def _told(event: type[Told], reading: Reading) -> Told:
    """The event that tells what `reading` said: its fields of the event's names (the shuffler's)."""
    said = {name: getattr(reading, name) for name in event.model_fields if hasattr(reading, name)}
    return event.model_validate(said)


class CardFlowRecord(FlowRecord):
    """What every card game keeps: what the shoe has dealt and the card waiting for its re-scan."""

    composition: ShoeComposition
    unread_ref: str | None = None
    unread_raw: str = ""
    idle_reason: str = ""
    manual_cards: list[CardCode] = Field(default_factory=list)
    shuffle: ShuffleBook = Field(default_factory=ShuffleBook)
    out_of_procedure: OutOfProcedure | None = Field(None, json_schema_extra=SECRET)
    set_aside_refs: list[str] = Field(default_factory=list)


class CardFlow(GameFlow):
    """A game dealt by hand from a scanning shoe (see the module's docstring for the shared procedure).

    State kept here (`CardFlowRecord`): `composition` (what the shoe has dealt), `unread_ref`/`unread_raw`
    (the card waiting for its re-scan), `idle_reason` (why no card is expected between rounds),
    `manual_cards` (the cards of this round entered by hand, for its result), and the shuffle the next round
    waits for (`shuffle`, a `ShuffleBook`).
    """

    settings: Any
    #: who decides a hand-entered card: "dealer" or "supervisor" (configuration: `[table]`, set when the
    #: table is built; not state)
    manual_card_confirmation: str = "dealer"
    #: what a rejection says while the game holds a secret card (`_holds_secret`): never the card
    face_down_refusal: ClassVar[str] = SECRET_SAFE_REFUSAL
    #: a hand-entered card waiting for a supervisor: lost in a crash, nothing was dealt (module docstring)
    ephemeral: ClassVar[frozenset[str]] = frozenset({"manual_pending"})

    def __init__(self, table_id: str, settings: ShoeSettings, decks: int) -> None:
        super().__init__(table_id, settings)
        self.manual_pending: PendingManualCard | None = None
        self.composition = ShoeComposition(decks)
        # A card came out unread: nothing advances until its re-scan (or a hand-entered card) arrives.
        self.unread_ref: str | None = None
        self.unread_raw = ""
        self.idle_reason = "no round is open yet"
        self.manual_cards: list[Card] = []
        # A new table deals no card the shuffler has not counted either.
        self.shuffle = ShuffleBook(wanted=settings.shuffler_device is not None, reason="table start")
        # A card out of procedure, held until the supervisor decides; the refs of cards set aside.
        self.out_of_procedure: OutOfProcedure | None = None
        self.set_aside_refs: list[str] = []

    # -- what each game decides ----------------------------------------------------------------------------

    @abstractmethod
    def _why_no_card_now(self) -> str | None:
        """Why no card may come out now (the rejection tells the dealer), or None while one is expected."""

    @abstractmethod
    def _deal(self, card: Card, now: float, out: FlowOutput, raw: str, rescan: bool) -> None:
        """Put `card` where it goes. Only called while `_why_no_card_now()` is None (or to settle an unread
        card accepted then), with a card the shoe can hold; `raw` is everything the reader said about it."""

    @abstractmethod
    def _on_cut_card(self, reading: CutCardSeen, now: float) -> FlowOutput:
        """The cut card came out of the shoe."""

    def _cut_card_refused(self, reading: CutCardSeen, now: float, game: str) -> FlowOutput:
        """A cut card in a `game` dealt from a fresh deck every round: it has no place there (rejected)."""
        out = FlowOutput()
        self._reject(
            out, now, reading, f"a cut card has no place in {game}: the deck is replaced after every round"
        )
        return out

    @abstractmethod
    def _next_round_due(self, now: float, out: FlowOutput) -> None:
        """The gap after the last round is over and the cards are shuffled (if the table has a shuffler):
        open the next round, or ask for what opens it (Andar Bahar's game card)."""

    def shoe_started(self, now: float, out: FlowOutput) -> None:
        """Hook: the part the cards come from (`controller.games.card_source`) started a new shoe or deck
        (`shoe.started` is out): what else that means for the game (Infinite Blackjack: its burn)."""

    def _unread_card_out(self, now: float, out: FlowOutput) -> None:
        """A card left the shoe but is not known yet; called before it is announced for a re-scan.

        By default the round has started: from now a fault pauses it instead of voiding it.
        """
        self.rounds.start_play()

    def round_view(self) -> dict[str, Any]:
        """The head of every card game's public state: the game, its places, its round and betting window."""
        closes = self.rounds.betting_deadline
        return {
            "game": self.game,
            "positions": self.positions(),  # the uniform view the panel draws
            "phase": str(self.rounds.phase),
            "round_id": self.rounds.round_id,
            "betting_closes_at": iso_ms(closes) if closes is not None else None,
        }

    @abstractmethod
    def positions(self) -> list[dict[str, Any]]:
        """The table's places, in the order the table lays them out, each a `position_view`: the same shape
        for every card game, so the dealer's panel draws any of them without knowing the game."""

    # -- readings ------------------------------------------------------------------------------------------

    def on_reading(self, reading: Reading, now: float) -> FlowOutput:
        # Device health belongs to the runtime; the flow only cares about what came out of its shoe and
        # what its shuffler did.
        shuffler = self.settings.shuffler_device
        if shuffler is not None and reading.device == shuffler:
            if isinstance(reading, ShuffleDone):
                return self._on_shuffle_done(reading, now)
            if isinstance(reading, ShuffleFailed):
                return self._on_shuffle_failed(reading, now)
            return FlowOutput()
        if reading.device != self.settings.shoe_device:
            return FlowOutput()
        if isinstance(reading, CardSeen):
            return self._on_card_seen(reading, now)
        if isinstance(reading, CardUnread):
            return self._on_card_unread(reading, now)
        if isinstance(reading, CutCardSeen):
            return self._on_cut_card(reading, now)
        return FlowOutput()

    def _on_card_seen(self, reading: CardSeen, now: float) -> FlowOutput:
        out = FlowOutput()
        if self._rescan_settled(reading, now, out):
            return out
        if self.unread_ref is not None:
            if reading.rescan_of != self.unread_ref:
                self._hold_out_of_procedure(out, now, reading, self._rescan_first())
                return out
            checked = self._check_card(reading.code)
            if isinstance(checked, str):
                # The re-scan reads a card that cannot be in the shoe: a foreign card, or a misread the
                # table cannot tell from one. It is the unread card itself that is held.
                self._hold_out_of_procedure(out, now, reading, checked, names_card=True, unread=True)
                return out
            raw = "\n".join(part for part in (self.unread_raw, reading.raw) if part)
            self._clear_unread()
            self._deal(checked, now, out, raw=raw, rescan=True)
            return out
        refusal = self._why_not_a_new_card(reading)
        if refusal is not None:
            self._hold_out_of_procedure(out, now, reading, refusal)
            return out
        checked = self._check_card(reading.code)
        if isinstance(checked, str):
            self._hold_out_of_procedure(out, now, reading, checked, names_card=True)
            return out
        self._deal(checked, now, out, raw=reading.raw, rescan=False)
        return out

    def _on_card_unread(self, reading: CardUnread, now: float) -> FlowOutput:
        out = FlowOutput()
        if self._rescan_settled(reading, now, out):
            return out
        if self.unread_ref is not None:
            if reading.ref == self.unread_ref:
                # The re-scan failed too: the dealer passes the same card over the reader again.
                self._announce_unread(now, out)
            elif reading.rescan_of is not None:
                self._hold_out_of_procedure(out, now, reading, self._rescan_first())
            else:
                why = f"another card came out unread: {self._rescan_first()}"
                self._hold_out_of_procedure(out, now, reading, why)
            return out
        # A re-scan that misread, of a card no longer waiting for one (set aside, or its round voided, while
        # the re-scan was held), is the same physical card, never a new one out of the shoe.
        refusal = self._why_not_a_new_card(reading)
        if refusal is not None:
            self._hold_out_of_procedure(out, now, reading, refusal)
            return out
        self._unread_card_out(now, out)
        self.unread_ref = reading.ref
        self.unread_raw = reading.raw
        self._announce_unread(now, out)
        return out

    def _rescan_first(self) -> str:
        return f"re-scan the unread card first (card {self.unread_ref} could not be read)"

    def _why_not_a_new_card(self, reading: CardSeen | CardUnread) -> str | None:
        """Why a reading while no unread card waits cannot be taken as a card newly out of the shoe: a
        re-scan (no card waits for one), or no card may come out now. None: it is dealt."""
        if reading.rescan_of is not None:
            return f"re-scan of card {reading.rescan_of}, but no unread card is waiting for a re-scan"
        return self._why_no_card_now()

    # -- a card out of procedure ---------------------------------------------------------------------------

    def _rescan_settled(self, reading: CardSeen | CardUnread, now: float, out: FlowOutput) -> bool:
        """A re-scan (read or misread) of a card whose reading the supervisor already set aside (the card
        itself, or an earlier re-scan of it). Held out of procedure, never only rejected: the set-aside card
        passed again is out of procedure, and a reader that guesses which card a re-scan belongs to (a
        barcode scanner) may name a card just dealt in procedure, which would be missing from the result."""
        ref = reading.rescan_of
        if ref is None or ref not in self.set_aside_refs:
            return False
        why = f"a re-scan of card {ref}, which was set aside already"
        self._hold_out_of_procedure(out, now, reading, why)
        return True

    def _hold_out_of_procedure(
        self,
        out: FlowOutput,
        now: float,
        reading: CardSeen | CardUnread,
        why: str,
        *,
        names_card: bool = False,
        unread: bool = False,
    ) -> None:
        """Hold a card that came out while the procedure does not allow it, and pause for the supervisor.

        `why` is the procedure's refusal; `names_card` says it names the card (a copy the shoe cannot
        hold): then, as for the card itself, it is not published while the game holds a secret card."""
        code = reading.code if isinstance(reading, CardSeen) else None
        rescan = reading.rescan_of is not None
        ref = reading.rescan_of or reading.ref
        secret = self.reading_is_secret(reading)
        if secret and names_card:
            why = "the table did not expect this card"
        # Not counted as dealt (the shoe's composition is what was dealt): the card is accounted for by its
        # `card.set_aside` once the supervisor decides.
        if secret:
            what = "A card"
        elif code is None:
            what = "An unread card"
        else:
            what = f"Card {code}"
        if rescan:
            what += " (a re-scan)"
        reason = f"{what} came out of procedure ({why}): put it aside"
        self.out_of_procedure = OutOfProcedure(
            code=code,
            raw=reading.raw,
            ref=ref,
            rescan=rescan,
            unread=unread,
            round_id=self.rounds.round_id,
            reason=why,
            secret=secret,
        )
        public_code = None if secret else code
        out.hold_out_of_procedure(reason, reading.device, public_code, "" if secret else reading.raw)

    def _hold_unread_card(self, out: FlowOutput, now: float, why: str) -> None:
        """The procedure is about to move past the unread card that waits for its re-scan: it is not
        forgotten but held out of procedure, as that misread would be had it come out now; the supervisor's
        decision sets it aside (`card.set_aside`) and ends the wait."""
        assert self.unread_ref is not None
        unread = CardUnread(
            device=self.settings.shoe_device, time=now, raw=self.unread_raw, ref=self.unread_ref
        )
        self._hold_out_of_procedure(out, now, unread, why, unread=True)

    def settle_pause(self, now: float, by: str, decision: str) -> FlowOutput:
        """The supervisor decided: the card held out of procedure is set aside (`card.set_aside`)."""
        out = FlowOutput()
        held = self.out_of_procedure
        if held is None:
            return out
        self.out_of_procedure = None
        if held.unread and self.unread_ref == held.ref:
            self._clear_unread()
            self.prompt = self._prompt_after_set_aside()
        if held.ref:
            kept = [ref for ref in self.set_aside_refs if ref != held.ref]
            self.set_aside_refs = [*kept, held.ref][-SET_ASIDE_REFS_KEPT:]
        aside = CardSetAside(
            round_id=held.round_id,
            card=None if held.secret else held.code,
            ref=held.ref,
            rescan=held.rescan,
            reason=held.reason,
            by=by,
            decision="void" if decision == "void" else "resume",
        )
        out.emit("card.set_aside", aside, now, subject=held.round_id)
        return out

    def _prompt_after_set_aside(self) -> str:
        """The dealer's prompt once the unread card was set aside: the place the next card goes to, as the
        panel marks it (the unread card had not been placed, so it is the same place)."""
        labels = [place["label"] for place in self.positions() if place["next"]]
        return f"Card set aside — deal the next card to {labels[0]}" if labels else "Card set aside"

    def _holds_secret(self) -> bool:
        """Whether the game now holds a card nobody may know (a face-down card, burned cards). Default: no."""
        return False

    def _names_secret(self, code: str | None) -> bool:
        """Whether `code` is itself the code of a secret card (a burned card), whatever the game expects now:
        a card of that code is never named. Default: no card is."""
        return False

    def reading_is_secret(self, reading: Reading) -> bool:
        if reading.device != self.settings.shoe_device or not isinstance(reading, CardSeen | CardUnread):
            return False
        code = reading.code if isinstance(reading, CardSeen) else None
        return self._holds_secret() or self._names_secret(code)

    def _announce_unread(self, now: float, out: FlowOutput) -> None:
        assert self.unread_ref is not None
        self.prompt = PROMPT_RESCAN
        out.emit(
            "card.unreadable",
            CardUnreadable(round_id=self.rounds.round_id, ref=self.unread_ref, prompt=PROMPT_RESCAN),
            now,
        )

    # -- the dealer's hand-entered card ----------------------------------------------------------------------

    def _manual_card(self, command: ManualCard, now: float) -> FlowOutput:
        """Input `manual_card`: the card the reader could not read, typed in. It settles the pending unread
        card and nothing else: a card the shoe can read is never chosen by hand. With a supervisor's
        confirmation required, it is only held for it (`card.manual_pending`)."""
        code = command.card
        if self.unread_ref is None:
            raise InputRejected(MANUAL_CARD_REFUSAL)
        self._manual_card_dealable()
        checked = self._check_card(code)
        if isinstance(checked, str):
            # "KC already came out" would say where the face-down KC is: no reason then, whatever the card
            secret = self._holds_secret() or self._names_secret(code.strip().upper())
            raise InputRejected(SECRET_SAFE_REFUSAL if secret else checked)
        if self.manual_card_confirmation != "supervisor":
            return self._deal_manual(checked, now, f"manual_card {checked.code}")
        if self.manual_pending is not None:
            raise InputRejected(
                "a card entered by hand already waits for a supervisor: it must be confirmed or refused first"
            )
        by = command.by
        secret = self._holds_secret()
        pending = PendingManualCard(card=checked, entered_by=by, ref=self.unread_ref, secret=secret)
        self.manual_pending = pending
        self.prompt = self._confirmation_prompt(pending)
        out = FlowOutput()
        announced = ManualCardPending(
            round_id=self.rounds.round_id,
            ref=pending.ref,
            card=None if secret else checked.code,
            entered_by=by,
            prompt=self.prompt,
        )
        out.emit("card.manual_pending", announced, now)
        return out

    def _manual_card_dealable(self) -> None:
        """Refuse a hand-entered card the procedure could not place now, before anything changes: it goes
        where the unread card would have gone, and an unread card only waits while a card is expected."""
        why = self._why_no_card_now()
        if why is not None:
            raise InputRejected(f"card {self.unread_ref} cannot be entered by hand now: {why}")

    @staticmethod
    def _confirmation_prompt(pending: PendingManualCard) -> str:
        what = "the card entered by hand" if pending.secret else pending.card.code
        return f"{PROMPT_CONFIRMATION} {what}"

    def _deal_manual(self, card: Card, now: float, line: str, **identities: str) -> FlowOutput:
        """Deal a hand-entered card (checked: an unread card waits, the shoe can hold it). `line` is the hand
        entry's device text; `identities`, who entered and confirmed it (only when a supervisor did)."""
        out = FlowOutput()
        raw = "\n".join(part for part in (self.unread_raw, line) if part)
        self._clear_unread()
        # listed before `_deal`, which may finish the round: its result names the card
        self.manual_cards.append(card)
        self._deal(card, now, out, raw=raw, rescan=False)
        # the one card.dealt `_deal` emitted is this card's: it says it was entered by hand
        # (only that one: a face-down card revealed in the same step was read by the shoe)
        for i, event in enumerate(out.events):
            if event.type == "card.dealt" and event.data["raw"] == raw:
                dealt = CardDealt.model_validate({**event.data, "manual": True, **identities})
                out.events[i] = make_event(event.type, dealt, event.time, event.subject)
                break
        return out

    def handlers(self) -> dict[type[Command], Handler]:
        # A supervisor's decision on a hand-entered card is every card game's (only registered as commands:
        # an input of that name is unknown before it gets here).
        return {
            **super().handlers(),
            ConfirmManualCard: self._confirm_manual_card,
            RefuseManualCard: self._refuse_manual_card,
        }

    def _manual_card_decided(self, out: FlowOutput) -> None:
        """Hook: a supervisor confirmed or refused a hand-entered card (e.g. set the shoe's gate)."""

    def _pending_for_supervisor(self, by: str, verb: str) -> PendingManualCard:
        if by == PANEL_IDENTITY or by.startswith(DEALER_PREFIX):
            raise InputRejected(f"only a supervisor can {verb} a card entered by hand, not the panel")
        pending = self.manual_pending
        if pending is None:
            raise InputRejected("no card entered by hand waits for a supervisor")
        return pending

    def _confirm_manual_card(self, command: ConfirmManualCard, now: float) -> FlowOutput:
        """Command `confirm_manual_card`: deal the pending hand-entered card, if `card` names it."""
        by = command.by
        pending = self._pending_for_supervisor(by, "confirm")
        self._manual_card_dealable()
        if by == pending.entered_by:
            raise InputRejected("the card must be confirmed by someone other than whoever entered it")
        if pending.wrong >= MAX_WRONG_CONFIRMATIONS:
            raise InputRejected(
                f"{pending.wrong} confirmations named another card: refuse this entry (refuse_manual_card) "
                "and have the dealer enter the card again"
            )
        if command.card != pending.card.code:
            # counted on the pending entry, not journaled: a refused command changes nothing on record
            self.manual_pending = PendingManualCard(
                pending.card, pending.entered_by, pending.ref, pending.secret, pending.wrong + 1
            )
            raise InputRejected("that is not the card entered by hand: nothing was dealt")
        self.manual_pending = None
        identities = {"entered_by": pending.entered_by, "confirmed_by": by}
        line = f"manual_card {pending.card.code} {json.dumps(identities, sort_keys=True)}"
        out = self._deal_manual(pending.card, now, line, **identities)
        self._manual_card_decided(out)
        return out

    def _refuse_manual_card(self, command: RefuseManualCard, now: float) -> FlowOutput:
        """Command `refuse_manual_card`: drop the pending hand-entered card; the unread card still waits."""
        by = command.by
        pending = self._pending_for_supervisor(by, "refuse")
        card = command.card
        if card is not None and card != pending.card.code:
            raise InputRejected("that is not the card entered by hand: nothing was refused")
        self.manual_pending = None
        what = "The card entered by hand" if pending.secret else f"Card {pending.card.code}"
        self.prompt = f"{what} was refused by the supervisor — re-scan the card or enter it again"
        out = FlowOutput()
        refused = ManualCardRefused(
            round_id=self.rounds.round_id,
            ref=pending.ref,
            card=None if pending.secret else pending.card.code,
            entered_by=pending.entered_by,
            by=by,
            reason=command.reason,
        )
        out.emit("card.manual_refused", refused, now)
        self._manual_card_decided(out)
        return out

    def manual_card_pending(self) -> dict[str, Any] | None:
        """The hand-entered card waiting for a supervisor, as the retained state shows it (None: none)."""
        pending = self.manual_pending
        if pending is None:
            return None
        return {
            "card": None if pending.secret else pending.card.code,
            "entered_by": pending.entered_by,
            "ref": pending.ref,
        }

    def restore_state(self, data: dict[str, Any]) -> None:
        super().restore_state(data)
        # the pending entry is not journaled: after a restart the unread card waits for a new entry
        self.manual_pending = None
        if self.prompt.startswith(PROMPT_CONFIRMATION):
            self.prompt = PROMPT_RESCAN

    # -- the shuffler ---------------------------------------------------------------------------------------

    def _want_shuffle(self, reason: str) -> None:
        """The game: the cards must be shuffled before the next round. Nothing happens without a shuffler."""
        if self.settings.shuffler_device is None:
            return
        self.shuffle = ShuffleBook(wanted=True, reason=reason, requested=self.shuffle.requested)

    @property
    def waiting_for_shuffle(self) -> bool:
        """A shuffle is wanted and the table has a shuffler: the next round waits for it."""
        return self.shuffle.wanted and self.settings.shuffler_device is not None

    def next_round_due(self, now: float, out: FlowOutput) -> None:
        if not self.waiting_for_shuffle:
            self._next_round_due(now, out)
            return
        self.shuffle.round_waits = True
        if not self.shuffle.ids and self.shuffle.failure is None:
            self._request_shuffle(now, out, self.shuffle.reason)

    def _request_shuffle(self, now: float, out: FlowOutput, reason: str) -> None:
        device = self.settings.shuffler_device
        assert device is not None
        self.shuffle.requested += 1
        # Unique per table, one token on the wire (at most 32 characters), the same again in a replay.
        shuffle_id = f"{round(now * 1000)}-{self.shuffle.requested}"
        self.shuffle.ids.append(shuffle_id)
        self.shuffle.failure = None
        decks = self.composition.decks
        command = DeviceCommand("shuffle", {"shuffle_id": shuffle_id, "decks": decks})
        out.requests.append(DeviceRequest(device, command))
        started = ShuffleStarted(shuffle_id=shuffle_id, device=device, decks=decks, reason=reason)
        out.emit("shuffle.started", started, now)
        self.prompt = PROMPT_SHUFFLING
        self.idle_reason = "the cards are being shuffled: no card is expected until the shuffler is done"

    def _on_shuffle_done(self, reading: ShuffleDone, now: float) -> FlowOutput:
        out = FlowOutput()
        if not self.waiting_for_shuffle or reading.shuffle_id not in self.shuffle.ids:
            why = f"shuffle {reading.shuffle_id} finished, but the table did not ask for it: its cards are "
            why += "not taken as shuffled"
            out.emit("reading.rejected", RawRejected(device=reading.device, reason=why, raw=reading.raw), now)
            return out
        if reading.decks != self.composition.decks:
            # The session checked the count against the decks the DONE names; the table checks those decks.
            reason = (
                f"shuffle {reading.shuffle_id} shuffled {reading.decks} decks, but the table plays "
                f"{self.composition.decks}: the cards must not be dealt"
            )
            failed = ShuffleFailed(
                device=reading.device,
                time=reading.time,
                raw=reading.raw,
                code="DECKS_MISMATCH",
                reason=reason,
                expected=self.composition.decks * 52,
                actual=reading.cards,
                shuffle_id=reading.shuffle_id,
            )
            return self._on_shuffle_failed(failed, now)
        out.emit("shuffle.done", _told(ShuffleCompleted, reading), now)
        waiting_round = self.shuffle.round_waits
        self.shuffle = ShuffleBook(requested=self.shuffle.requested)
        if waiting_round:
            self._next_round_due(now, out)
        return out

    def _on_shuffle_failed(self, reading: ShuffleFailed, now: float) -> FlowOutput:
        out = FlowOutput()
        out.emit("shuffle.failed", _told(ShuffleFailure, reading), now)
        # An error the shuffler reports without an id (after a restart of either side) is the running one's.
        ids = self.shuffle.ids
        ours = reading.shuffle_id in ids or (reading.shuffle_id == "" and bool(ids))
        if self.waiting_for_shuffle and ours:
            self.shuffle.ids = []
            self.shuffle.failure = f"{reading.code}: {reading.reason}"
            self.prompt = (
                f"Shuffle failed ({self.shuffle.failure}) — do not deal these cards; fix the shuffler, "
                "then resume: it shuffles again"
            )
        return out

    def _shuffle_input(self, command: Shuffle, now: float) -> FlowOutput:
        """Input `shuffle`: ask the shuffler again, e.g. for a shuffle that never finished."""
        if not self.waiting_for_shuffle or not self.shuffle.round_waits:
            raise InputRejected("no shuffle is awaited now: the table asks for one when a round is due")
        out = FlowOutput()
        self._request_shuffle(now, out, "again")
        return out

    # -- the shoe's gate -------------------------------------------------------------------------------------

    def on_pause(self, now: float) -> FlowOutput:
        out = FlowOutput()
        self._request_shoe(out, "lock")
        return out

    def on_resume(self, now: float) -> FlowOutput:
        # The gate is open exactly while a card is expected (between rounds too, e.g. a game card).
        out = FlowOutput()
        if self._why_no_card_now() is None:
            self._request_shoe(out, "unlock")
        if self.waiting_for_shuffle and self.shuffle.round_waits and self.shuffle.failure is not None:
            # The supervisor resumed after the shuffler was fixed: the cards are shuffled (and counted) again.
            self._request_shuffle(now, out, "again")
        return out

    def device_online(self, device: str, now: float, *, paused: bool) -> FlowOutput:
        # The gate as it must be now, whatever the shoe did with the last request: a gate left open by a
        # lost LOCK lets a card out during betting (an out-of-procedure pause at best).
        out = FlowOutput()
        if device == self.settings.shoe_device:
            self._request_shoe(out, "unlock" if self._gate_wanted_open(paused) else "lock")
        return out

    def _gate_wanted_open(self, paused: bool) -> bool:
        return not paused and self._why_no_card_now() is None

    def gate(self, paused: bool) -> tuple[str, bool] | None:
        return self.settings.shoe_device, self._gate_wanted_open(paused)

    def _request_shoe(self, out: FlowOutput, command: str) -> None:
        out.requests.append(DeviceRequest(self.settings.shoe_device, DeviceCommand(command)))

    # -- helpers ---------------------------------------------------------------------------------------------

    def _place_card(
        self, card: Card, hand: list[Card], position: str, now: float, out: FlowOutput, raw: str, rescan: bool
    ) -> None:
        """Add a dealt card to `hand` (the table's `position`) and announce it. The card has left the shoe for
        good, and the round has started: from now a fault pauses it instead of voiding it."""
        assert self.rounds.round_id is not None, "a card was placed outside a round"
        self.composition.take(card)
        self.rounds.start_play()
        hand.append(card)
        dealt = CardDealt(
            round_id=self.rounds.round_id,
            card=card.code,
            position=position,
            index=len(hand) - 1,
            rescan=rescan,
            raw=raw,
        )
        out.emit("card.dealt", dealt, now)

    def _manual_codes(self) -> list[str]:
        """The round's hand-entered cards, for its result's `manual_cards`."""
        return [card.code for card in self.manual_cards]

    def finish_round(self, now: float, out: FlowOutput, result: BaseModel) -> None:
        super().finish_round(now, out, result)
        self.manual_cards = []

    def void_round(self, now: float, reason: str, by: str) -> FlowOutput:
        out = super().void_round(now, reason, by)
        self.manual_cards = []
        return out

    def _check_card(self, code: str) -> Card | str:
        """The card, or why it cannot be dealt (not a card, or more copies than the shoe holds)."""
        try:
            card = Card.parse(code)
            self.composition.check(card)
        except (InvalidCard, ShoeExhausted) as exc:
            return str(exc)
        return card

    def _clear_unread(self) -> None:
        self.unread_ref = None
        self.unread_raw = ""
        # a hand entry waiting for a supervisor was for this card: a re-scan, a set-aside or a void settled it
        self.manual_pending = None

    def _reject(self, out: FlowOutput, now: float, reading: Reading, reason: str) -> None:
        """A reading from the shoe that is only rejected (`card.rejected`). While the game holds a secret
        card nothing says what the card is (it may be a copy of the secret one), and a card whose code is
        itself secret (a burned card) is never named, nor is its reason ("... already came out")."""
        code = reading.code if isinstance(reading, CardSeen) else None
        raw = reading.raw
        if self._holds_secret():
            code, raw, reason = None, "", self.face_down_refusal
        elif self._names_secret(code):
            code, raw, reason = None, "", SECRET_SAFE_REFUSAL
        rejection = CardRejected(round_id=self.rounds.round_id, card=code, reason=reason, raw=raw)
        out.emit("card.rejected", rejection, now)
