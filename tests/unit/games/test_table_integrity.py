"""What the table publishes is what lies on the felt, or the table is paused: property-based, every card game.

A virtual dealer deals from a physical deck by the dealer's prompts (the place the table marks `next`), and
makes the mistakes dealers make, drawn by Hypothesis: a card drawn while none is expected (betting open,
between rounds, while a box or the players decide, after the hand is complete), a no-read and then another
card instead of the re-scan, a re-scan with no no-read, a no-read settled by a re-scan or by a hand-entered
card, a cable pulled and plugged back mid-round, a service restart mid-round (the state record through JSON
into a core built afresh), and a first line after (re)connecting that is a card. A virtual supervisor
resolves every pause, at random, by `resume` or `void_round`.

Everything goes through the real parts: the shoe's line session (bytes in), the table core with the game's
flow, and the journal (every step's events and state committed; what a subscriber gets is read back from
it). Checked on every published envelope and at the end of each example:

1. every card the dealer put on the felt for a round, and only those, is in its published result, and each
   `card.dealt` names the place the dealer put that card;
2. every card out of the shoe is accounted for: dealt (face up, face down, or burned), set aside by a named
   supervisor, or in a voided round;
3. a secret is never named: while a dealer's card lies face down, and for Infinite's burned cards ever, no
   published envelope, retained state, refusal or log line carries its code;
4. the journal's sequences have no gap, and no pause is an internal error.

`run_table` is a plain function of a game and a plan, so that a planted defect can be shown to make it
fail (the last tests)."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.commands import CommandError, Pause, Resume, VoidRound, parse_command
from controller.events import Envelope
from controller.games import game_spec, make_flow
from controller.journal import Journal
from controller.runtime import Step, TableCore, held_record
from controller.table_state import decode_state
from drivers.line.framing import encode_line
from drivers.shoe.session import ShoeSession
from tests.helpers.card_game import card_game_kit, card_games

pytestmark = pytest.mark.unit

#: every card game of the registry: what only the game knows (its settings here, one deck each so that a
#: card's code names one physical card, with short windows; how its result reads; how many cards an example
#: deals) is its tests folder's `card_game.py` (tests/helpers/card_game.py)
GAMES = card_games()
MISTAKES = (
    "stray",
    "noread_then_other",
    "noread_rescan",
    "noread_manual",
    "rescan_no_noread",
    "stray_noread",
    "misread_rescan",
    "pause_misread_rescan",
    "unplug",
    "restart",
)
T0 = 1_800_000_000.0
_TOKEN = re.compile(r"\b([A2-9TJQK][SHDC])\b")
_CHECKSUM = re.compile(r"\*[0-9A-F]{2}\b")


def seq_of(raw: str) -> int | None:
    match = re.match(r"^(?:CARD|NOREAD|RESCAN) (\d+)", raw.split("\n", 1)[0])
    return int(match.group(1)) if match else None


@dataclass
class Plan:
    """What Hypothesis drew: a mistake (or none) before each of the dealer's turns, and each supervisor's
    decision (True: resume, False: void the round)."""

    mistakes: list[str | None]
    decisions: list[bool]

    def mistake(self) -> str | None:
        return self.mistakes.pop() if self.mistakes else None

    def resume(self) -> bool:
        return self.decisions.pop() if self.decisions else True


@dataclass
class Table:
    game: str
    plan: Plan
    deck_seed: int
    now: float = T0
    seq: int = 0
    envelopes: list[Envelope] = field(default_factory=list)
    #: seq -> code of every physical card out of the shoe (CARD and NOREAD lines)
    out: dict[int, str] = field(default_factory=dict)
    #: where the dealer put each card: a place's name, "hand" (nothing was expected), "burn"
    placed: dict[int, str] = field(default_factory=dict)
    #: the cards on the felt since the last result or void
    felt: list[int] = field(default_factory=list)
    set_aside: set[int] = field(default_factory=set)
    voided: set[int] = field(default_factory=set)
    collected: set[int] = field(default_factory=set)
    hole: int | None = None  # the seq of the card lying face down
    hole_since: int = 0  # the envelopes published before it was laid face down
    burned: set[int] = field(default_factory=set)
    unread: int | None = None  # a no-read waiting for its re-scan
    refusals: list[str] = field(default_factory=list)
    last_drawn: int = 0
    #: an unread card drawn while none was expected (held, then set aside): the dealer may pass it again
    stray_unread: int | None = None
    #: the shoe's gate as the shoe has it (True: open), and as it was before the last request reached it
    gate: bool | None = None
    gate_before: bool | None = None

    def __post_init__(self) -> None:
        spec = game_spec(self.game)
        self.kit = card_game_kit(self.game)
        self.settings = spec.settings.model_validate(self.kit.settings)
        #: the physical deck is replaced when a round ends
        self.fresh_deck = spec.fresh_deck_each_round
        self.core = self._core()
        self.journal = Journal(":memory:", source="studio/s1/table/t1")
        self.session = ShoeSession("shoe")
        self.deck: list[str] = []
        self.decks_used = 0
        self._new_deck()
        self._connect()

    # -- the parts -------------------------------------------------------------------------------------
    def _core(self) -> TableCore:
        flow = make_flow(self.game, "t1", self.settings)
        return TableCore(table_id="t1", game=self.game, flow=flow, devices=["shoe"])

    def _new_deck(self) -> None:
        import random

        self.decks_used += 1
        self.deck = [rank + suit for suit in "SHDC" for rank in "A23456789TJQK"]
        random.Random(self.deck_seed * 100 + self.decks_used).shuffle(self.deck)

    def _connect(self) -> None:
        self._readings(self.session.connection_made(self.now))

    def apply(self, step: Step) -> list[Envelope]:
        snapshot = self.core.export_state_json()
        # the record's fields beside the flow's are kept encoded between steps: they must be the table's now
        record = json.loads(snapshot)
        assert record["rejected"] == self.core.rejected
        assert record["held"] == [held_record(reading).model_dump(mode="json") for reading in self.core.held]
        pause = self.core.pause
        assert record["pause"] == (None if pause is None else pause.model_dump(mode="json"))
        published = self.journal.append(step.events, snapshot=snapshot)
        for request in step.requests:
            if request.command.name in ("lock", "unlock"):
                self.gate_before, self.gate = self.gate, request.command.name == "unlock"
            self._readings(self.session.command(request.command, self.now))
        self.session.data_to_send()
        self.envelopes += published
        for envelope in published:
            self._follow(envelope)
        return published

    def _readings(self, readings: list[Any]) -> list[Envelope]:
        published: list[Envelope] = []
        step = Step()
        for reading in readings:
            step.merge(self.core.on_reading(reading, reading.time))
        published += self.apply(step)
        return published

    def line(self, text: str) -> list[Envelope]:
        self.now += 0.05
        return self._readings(self.session.data_received(encode_line(text), self.now))

    def wait(self, seconds: float) -> None:
        end = self.now + seconds
        while True:
            due = self.core.next_deadline()
            if due is None or due > end:
                break
            self.now = max(self.now, due)
            self.apply(self.core.on_tick(self.now))
        self.now = end
        self.line(f"HB {int(self.now - T0)}")  # the shoe's heartbeat: a silent link is a lost one

    def command(self, command: Any) -> bool:
        try:
            step, _ = self.core.on_command(command, self.now)
        except CommandError as exc:
            self.refusals.append(str(exc))
            return False
        self.apply(step)
        return True

    # -- what the dealer does with the cards on the table when the table says so -------------------------
    def _follow(self, envelope: Envelope) -> None:
        data = envelope.data
        if envelope.type == "card.set_aside" and not data["rescan"]:
            seq = int(data["ref"]) if data["ref"] else None
            assert seq in self.out, f"set aside a card that never left the shoe: {data}"
            # one physical card, one account: a card set aside (or gone with a voided round) once is not
            # set aside again as if another card had come out (a re-scan of it says `rescan: true`)
            assert seq not in self.set_aside, f"a card set aside twice: {data}"
            assert seq not in self.voided, f"a card of a voided round set aside as a new card: {data}"
            self.set_aside.add(seq)
            if seq in self.felt:
                self.felt.remove(seq)
            if seq == self.unread:
                self.unread = None
        elif envelope.type == "shoe.burn" and self.unread and data["shown"] == self.out[self.unread]:
            # the unread card was the shoe's shown card (Infinite), entered by hand: it starts the burn
            self.burned.add(self.unread)
            if self.unread in self.felt:
                self.felt.remove(self.unread)
            self.unread = None
        elif envelope.type == "card.face_down":
            # which physical card it is: the device text the flow keeps with it (its state row only)
            self.hole = seq_of(self.core.flow.hole_raw)  # type: ignore[attr-defined]
            self.hole_since = len(self.envelopes) - 1
            if self.hole == self.unread:
                self.unread = None  # its re-scan (or hand entry) laid it face down
        elif envelope.type == "card.dealt":
            seq = seq_of(data["raw"])
            assert seq in self.out and self.out[seq] == data["card"], (
                f"dealt a card not out of the shoe: {data}"
            )
            if seq == self.hole:
                self.hole = None  # revealed
            elif self.placed.get(seq) not in (None, "hand") and not data.get("manual"):
                assert data["position"] == self.placed[seq], (
                    f"{data['card']} dealt to {data['position']}, the dealer put it on {self.placed[seq]}"
                )
            if seq == self.unread:
                self.unread = None
        elif envelope.type == "round.result":
            on_felt = sorted(self.out[seq] for seq in self.felt)
            published = sorted(self.kit.result_cards(data))
            assert published == on_felt, f"published {published}, on the felt {on_felt}"
            self.collected |= set(self.felt)
            self.felt = []
        elif envelope.type == "round.voided":
            self.voided |= set(self.felt)
            if self.hole is not None:
                self.voided.add(self.hole)
                self.hole = None
            self.felt = []
            self.unread = None
        elif envelope.type == "round.paused":
            assert data["cause"] != "internal_error", data
        if envelope.type in ("round.closed", "round.voided") and self.fresh_deck:
            self._new_deck()

    # -- the dealer ---------------------------------------------------------------------------------------
    def due(self) -> None:
        """What the table's clock makes due by now (the live service's deadline task): the panel the
        dealer reads is up to date."""
        while (deadline := self.core.next_deadline()) is not None and deadline <= self.now:
            self.apply(self.core.on_tick(self.now))

    def next_place(self) -> str | None:
        self.due()
        state = self.core.state()
        if state["paused"] or self.unread is not None:
            return None
        if state["round_phase"] == "betting_open":
            return None  # the prompt says: do not deal yet (a card now is a dealer's mistake: "stray")
        positions = state["game_state"].get("positions", [])
        places = [p["name"] for p in positions if p["next"]]
        if not places and [p["name"] for p in positions] == ["burn"]:
            return "burn"  # a new shoe's burn (Infinite): the shown card, then the cards burned face down
        return places[0] if places else None

    def draw(self, place: str | None, *, unread: bool = False) -> int:
        self.seq += 1
        code = self.deck.pop()
        self.out[self.seq] = code
        self.placed[self.seq] = place or "hand"
        if place == "burn":
            self.burned.add(self.seq)
        elif place is not None:
            self.felt.append(self.seq)
        self.last_drawn = self.seq
        # The panel marks no place while the shoe is not online (it says "Waiting for shoe"); a card drawn
        # then is the one the table expects as soon as the shoe is back, and its line brings the shoe back:
        # it goes where the table then takes it, which its own event says (a table that takes no card then
        # holds it, and the dealer keeps it in hand).
        waiting = self.core.devices["shoe"].status != "online" and place is None
        published = self.line(f"NOREAD {self.seq:04d}" if unread else f"CARD {self.seq:04d} {code}")
        # (and a card drawn with no place marked may meet a deadline at the same instant, e.g. betting
        # closing: the table then takes it like any other, and says so)
        if waiting or place is None:
            for envelope in published:
                if envelope.type == "card.dealt" and seq_of(envelope.data["raw"]) == self.seq:
                    self.placed[self.seq] = envelope.data["position"]
                    self.felt.append(self.seq)
                elif envelope.type == "shoe.burn" and envelope.data["shown"] == code:
                    self.placed[self.seq] = "burn"
                    self.burned.add(self.seq)
                elif envelope.type == "card.face_down":
                    self.placed[self.seq] = "dealer"
                    self.felt.append(self.seq)
                elif envelope.type == "card.unreadable" and int(envelope.data["ref"]) == self.seq:
                    self.unread = self.seq  # taken, unread: it waits for its re-scan where it lies
                    self.felt.append(self.seq)
        return self.seq

    def turn(self) -> None:
        if self.core.paused:
            self.supervise()
            return
        mistake = self.plan.mistake()
        place = self.next_place()
        if mistake == "restart":
            self.restart()
        elif mistake == "unplug":
            # the cable was pulled as the last gate request went out: it never reached the shoe
            self.gate = self.gate_before
            self._readings(self.session.connection_lost(self.now, reason="cable pulled"))
            self.now += 1.0
            self._connect()  # the next line may well be a card: no heartbeat first
        elif mistake == "stray" and place is None and self.unread is None:
            self.draw(None)
        elif mistake == "rescan_no_noread" and self.last_drawn and self.last_drawn not in self.burned:
            # the last card out, passed again with a re-scan nobody asked for (a burned card passed again is
            # a known defect: `test_a_burned_card_passed_again_is_named_nowhere`)
            self.line(f"RESCAN {9000 + self.seq:04d} {self.out[self.last_drawn]}")
        elif mistake == "stray_noread" and place is None and self.unread is None:
            drawn = self.draw(None, unread=True)  # held as an unread card out of procedure
            if self.unread != drawn:  # (unless the shoe was just coming online and the table took it)
                self.stray_unread = drawn
        elif mistake == "misread_rescan" and (self.unread or self.stray_unread) is not None:
            # the card waiting for its re-scan (or one set aside unread) passed again, and misread again
            self.line(f"RESCAN {self.unread or self.stray_unread:04d} 0X")
        elif mistake == "pause_misread_rescan" and self.unread is not None:
            # the supervisor pauses while the dealer re-scans, which misreads: held until the decision
            self.command(Pause(by="sup-2", reason="checking the table"))
            self.line(f"RESCAN {self.unread:04d} 0X")
        elif mistake and mistake.startswith("noread") and place is not None and place != "burn":
            ref = self.draw(place, unread=True)
            self.unread = ref
            if mistake == "noread_then_other" and self.deck:
                self.draw(None)  # the re-scan skipped: another card pulled out
            elif mistake == "noread_manual" and not self.core.paused:
                command = parse_command("commands", "manual_card", {"card": self.out[ref]}, by="sup-1")
                self.command(command)
            elif not self.core.paused:
                self.line(f"RESCAN {ref:04d} {self.out[ref]}")
        elif self.unread is not None:
            self.line(f"RESCAN {self.unread:04d} {self.out[self.unread]}")
        elif place is not None:
            self.draw(place)
        else:
            self.wait(0.5)

    def supervise(self) -> None:
        resume = self.plan.resume()
        if not resume and self.core.flow.rounds.in_round and self.command(VoidRound(by="sup-2", reason="x")):
            if self.core.paused:  # a device still offline: the pause stays until it is back
                self.wait(0.2)
            return
        if not self.command(Resume(by="sup-1")):
            self.wait(0.2)  # e.g. a device offline: its heartbeat brings it back

    def restart(self) -> None:
        record = decode_state(self.core.export_state_json())
        self.core = self._core()
        self.core.restore_state(json.loads(json.dumps(record)))
        self.session = ShoeSession("shoe")
        for line in self.journal.delivered("shoe"):
            self.session.delivered_before(line)
        self.apply(self.core.recovered(self.now))
        self._connect()

    def settle(self) -> None:
        """End the example on a table the supervisor has decided on, with no card waiting to be re-read."""
        for _ in range(50):
            if self.core.paused:
                self.plan.decisions = []
                self.supervise()
            elif self.unread is not None:
                self.line(f"RESCAN {self.unread:04d} {self.out[self.unread]}")
            else:
                return
        raise AssertionError("the table could not be settled")

    # -- the checks ----------------------------------------------------------------------------------------
    def check_accounting(self) -> None:
        dealt = {seq_of(e.data["raw"]) for e in self.envelopes if e.type == "card.dealt"}
        in_play = set(self.felt) | ({self.hole} if self.hole is not None else set())
        burned_count = sum(1 for e in self.envelopes if e.type == "shoe.burn" and e.data["done"])
        accounted = dealt | self.set_aside | self.voided | self.burned | in_play
        missing = set(self.out) - accounted
        assert not missing, f"cards out of the shoe and accounted nowhere: {[self.out[s] for s in missing]}"
        assert not (self.set_aside & dealt), "a card both set aside and dealt"
        assert burned_count <= 1  # one shoe: at most one completed burn
        sequences = [int(e.sequence) for e in self.envelopes]
        assert sequences == list(range(1, len(sequences) + 1))

    def check_gate(self) -> None:
        """5. While the shoe is online its gate is open exactly while the game expects a card, whatever
        requests a pulled cable lost: in a round, paused, and between rounds (locked from a round's last card
        until a card is expected again)."""
        if self.core.devices["shoe"].status != "online":
            return
        wanted = self.core.flow._gate_wanted_open(self.core.paused)  # type: ignore[attr-defined]
        said = {True: "open", False: "locked"}
        assert self.gate == wanted, (
            f"the shoe's gate is {said.get(self.gate, 'never set')} (the game wants it {said[wanted]}): "
            f"{self.core.state()['prompt']}"
        )

    def public_text(self) -> str:
        return json.dumps([[e.type, e.data] for e in self.envelopes]) + json.dumps(self.core.state())


def check_secrets(table: Table, logs: list[str], since: int) -> None:
    """While a card lies face down, nothing public names it; Infinite's burned cards are never named."""
    burned = {table.out[seq] for seq in table.burned} - {
        e.data.get("shown") for e in table.envelopes if e.type == "shoe.burn"
    }
    checks: list[tuple[set[str], int]] = []
    if burned:
        checks.append((burned, 0))  # one shoe per example: a burned card's code is that card
    if table.hole is not None:
        checks.append(({table.out[table.hole]}, max(since, table.hole_since)))
    for secrets, start in checks:
        recent = table.envelopes[start:]
        public = json.dumps([[e.type, e.data] for e in recent]) + json.dumps(table.core.state())
        public += json.dumps(table.refusals) + json.dumps(logs)
        public = _CHECKSUM.sub("", public)  # a line's checksum (`*6D`) is not a card
        named = secrets & set(_TOKEN.findall(public))
        assert not named, f"secret card(s) {named} named in public output"


def run_table(game: str, plan: Plan, deck_seed: int, logs: list[str] | None = None) -> Table:
    table = Table(game, plan, deck_seed)
    logs = logs if logs is not None else []
    turns = 0
    while len(table.out) < table.kit.max_cards and table.deck and turns < 900:
        turns += 1
        before = len(table.envelopes)
        hole_before = table.hole
        table.turn()
        table.check_gate()
        if hole_before is not None or table.hole is not None or table.burned:
            check_secrets(table, logs, before)
    table.settle()
    table.check_accounting()
    return table


plans = st.builds(
    Plan,
    mistakes=st.lists(st.one_of(st.none(), st.none(), st.none(), st.sampled_from(MISTAKES)), max_size=120),
    decisions=st.lists(st.booleans(), max_size=40),
)


class LogLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.slow
@pytest.mark.parametrize("game", GAMES)
@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(plan=plans, deck_seed=st.integers(0, 10_000))
def test_what_the_table_publishes_is_what_lies_on_the_felt(game: str, plan: Plan, deck_seed: int) -> None:
    handler = LogLines()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        table = run_table(game, plan, deck_seed, handler.lines)
    finally:
        root.removeHandler(handler)
    if table.hole is not None or table.burned:
        check_secrets(table, handler.lines, 0)


# --- the properties fail when the rule they protect is taken away -------------------------------------------

#: a card drawn while none is expected, after a few rounds (the plan is read from its end)
EARLY_CARD = [None] * 40 + ["stray"]


def test_a_planted_defect_play_on_after_a_card_out_of_procedure_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from controller.games.card_flow import CardFlow

    table = run_table("baccarat", Plan(list(EARLY_CARD), [True] * 10), 3)
    assert any(e.type == "card.set_aside" for e in table.envelopes)  # the mistake is made, and handled

    def reject_and_play_on(self: CardFlow, out: Any, now: float, reading: Any, why: str, **_: Any) -> None:
        # the old rule: `card.rejected`, no pause, and nobody decides what becomes of the card
        self._reject(out, now, reading, why)

    monkeypatch.setattr(CardFlow, "_hold_out_of_procedure", reject_and_play_on)
    with pytest.raises(AssertionError, match="accounted nowhere"):
        run_table("baccarat", Plan(list(EARLY_CARD), [True] * 10), 3)


@pytest.mark.parametrize("game", ["andar_bahar", "infinite_blackjack"])
def test_a_first_line_that_is_a_card_is_dealt_and_without_readiness_it_is_not(
    game: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the dealer draws before the shoe's link has said anything: the card's line brings the shoe online.
    # In these games the first card is expected at once (the game card, the shoe's shown card); in the
    # others a betting window opens first, and a card then is out of procedure (the replay tests
    # `test_replay_first_line_card.py` show the same for them with the replay's first-card policy)
    def first_card_taken() -> bool:
        table = Table(game, Plan(["stray"], []), 4)
        table.turn()
        return table.placed[1] != "hand" and not table.core.paused

    assert first_card_taken()
    monkeypatch.setattr(TableCore, "_catch_up", lambda self, step, now: None)
    assert not first_card_taken()  # handled before its round opened: held, and the table paused


def test_the_accounting_sees_every_kind_of_card() -> None:
    plan = Plan(
        mistakes=(["stray", None, None, None, "noread_then_other", None, None, None] * 12), decisions=[]
    )
    plan.decisions = [True, True, False] * 20
    table = run_table("baccarat", plan, 5)
    assert table.set_aside and table.collected
    counts = Counter(e.type for e in table.envelopes)
    assert counts["round.paused"] >= 2 and counts["card.set_aside"] >= 2 and counts["round.result"] >= 1


def test_a_burned_card_passed_again_is_named_nowhere() -> None:
    table = Table("infinite_blackjack", Plan([], []), 10)
    for _ in range(40):  # the shown card, then as many burned face down as it says
        if any(e.type == "shoe.burn" and e.data["done"] for e in table.envelopes):
            break
        table.turn()
    shown = {e.data["shown"] for e in table.envelopes if e.type == "shoe.burn"}
    burned = max(seq for seq in table.burned if table.out[seq] not in shown)
    before = len(table.envelopes)
    table.line(f"RESCAN {9000 + table.seq:04d} {table.out[burned]}")
    assert table.core.paused  # held out of procedure, as any re-scan nobody asked for
    check_secrets(table, [], before)
