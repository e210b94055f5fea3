"""How the card-game flow tests drive a flow: the way the runtime does, the clock moving only when the test
says so. Each test module's `Table` dataclass holds `flow`, `now` and `seq` and adds its game's own steps;
`CardFlowTable` is that dataclass for a game whose table is built from its settings alone. Also what those
tests read a flow's output and state with."""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from controller.cards import full_deck
from controller.flow import DeviceRequest, FlowOutput, GameFlow
from drivers.readings import CardSeen, CardUnread, Reading, ShuffleDone, ShuffleFailed
from drivers.session import DeviceCommand

ResultT = TypeVar("ResultT", bound=BaseModel)
SettingsT = TypeVar("SettingsT")
FlowT = TypeVar("FlowT", bound=GameFlow)

#: the flow tests' clock starts here (epoch seconds)
T0 = 1_700_000_000.0

LOCK = DeviceRequest("shoe", DeviceCommand("lock"))
UNLOCK = DeviceRequest("shoe", DeviceCommand("unlock"))
ALL_CODES = [card.code for card in full_deck()]
#: what a shoe's reader may send that is no card code
GARBAGE = ["", "1X", "ZZ", "10H", "as", "A", "AS ", "XX"]


def event_types(out: FlowOutput) -> list[str]:
    return [event.type for event in out.events]


def only(out: FlowOutput, type_: str) -> dict[str, Any]:
    found = [event.data for event in out.events if event.type == type_]
    assert len(found) == 1, f"expected one {type_} in {event_types(out)}"
    return found[0]


def round_results(out: FlowOutput, model: type[ResultT]) -> list[ResultT]:
    """Every round.result's data, checked against the game's result model (the contract)."""
    return [model.model_validate(e.data) for e in out.events if e.type == "round.result"]


def dealt_positions(out: FlowOutput) -> list[tuple[str, str, int]]:
    dealt = [event.data for event in out.events if event.type == "card.dealt"]
    return [(data["card"], data["position"], data["index"]) for data in dealt]


def assert_rejected(out: FlowOutput) -> None:
    """The reading was refused (`card.rejected`: e.g. a cut card in a game without one), nothing asked."""
    assert event_types(out) == ["card.rejected"], event_types(out)
    assert out.requests == []


def public_state_json(flow: GameFlow) -> dict[str, Any]:
    """The flow's public state as it goes out in JSON, less its positions (checked against the flow's)."""
    state: dict[str, Any] = json.loads(json.dumps(flow.public_state()))
    assert state.pop("positions") == json.loads(json.dumps(flow.positions()))  # type: ignore[attr-defined]
    return state


def pickled_and_restored(flow: GameFlow) -> Any:
    """The flow as a restart restores it (pickled); its public state is the original's."""
    restored = pickle.loads(pickle.dumps(flow))
    assert restored.public_state() == flow.public_state()
    return restored


class DrivesCardFlow:
    flow: GameFlow
    now: float
    seq: int

    def tick(self, advance: float = 0.0) -> FlowOutput:
        self.now += advance
        return self.flow.on_tick(self.now)

    def tick_to_deadline(self) -> FlowOutput:
        """Move the clock to the flow's next deadline (if it is ahead) and handle what is due."""
        deadline = self.flow.next_deadline()
        return self.tick(0.0 if deadline is None else max(0.0, deadline - self.now))

    def read(self, reading: Reading) -> FlowOutput:
        return self.flow.on_reading(reading, self.now)

    def next_ref(self) -> str:
        self.seq += 1
        return str(self.seq)

    def card(self, code: str, rescan_of: str | None = None, device: str = "shoe") -> FlowOutput:
        ref = rescan_of if rescan_of is not None else self.next_ref()
        raw = f"RESCAN {ref} {code}" if rescan_of is not None else f"CARD {ref} {code}"
        seen = CardSeen(device=device, time=self.now, raw=raw, code=code, ref=ref, rescan_of=rescan_of)
        return self.read(seen)

    def noread(self, ref: str | None = None) -> FlowOutput:
        ref = ref or self.next_ref()
        return self.read(CardUnread(device="shoe", time=self.now, raw=f"NOREAD {ref}", ref=ref))

    def set_aside(self, decision: str = "resume") -> dict[str, Any]:
        """The supervisor decides on the card held out of procedure: it is set aside; its one event."""
        out = self.flow.settle_pause(self.now, "supervisor", decision)
        return only(out, "card.set_aside")

    def deal(self, *codes: str) -> FlowOutput:
        out = FlowOutput()
        for code in codes:
            out.extend(self.card(code))
        return out

    def open_round(self) -> FlowOutput:
        """Tick until a round opens (the first tick, or after the round gap)."""
        out = self.tick_to_deadline()
        assert "round.opened" in event_types(out), event_types(out)
        return out

    def open_and_close_betting(self) -> FlowOutput:
        out = self.open_round()
        out.extend(self.tick(self.flow.settings.betting_seconds))
        assert "round.betting_closed" in event_types(out)
        return out

    # -- the shuffler (a card flow with `shuffler_device = "shuffler"`) ------------------------------------

    def awaited_shuffle(self) -> str:
        """The id of the last SHUFFLE the flow asked for and still waits for."""
        ids: list[str] = self.flow.shuffle.ids  # type: ignore[attr-defined]
        assert ids, "the flow waits for no shuffle"
        return ids[-1]

    def shuffle_done(self, cards: int | None = None, shuffle_id: str | None = None) -> FlowOutput:
        """The shuffler's DONE for the awaited shuffle (a whole deck per deck, unless `cards` says)."""
        decks = self.flow.composition.decks  # type: ignore[attr-defined]
        shuffle_id = shuffle_id or self.awaited_shuffle()
        counted = decks * 52 if cards is None else cards
        raw = f"DONE 0001 {shuffle_id} {decks} {counted}"
        done = ShuffleDone(
            device="shuffler", time=self.now, raw=raw, shuffle_id=shuffle_id, decks=decks, cards=counted
        )
        return self.read(done)

    def shuffle_failed(self, code: str = "E01", reason: str = "JAM", **counts: int) -> FlowOutput:
        failed = ShuffleFailed(
            device="shuffler",
            time=self.now,
            raw=f"ERR 0002 {code} {reason}",
            code=code,
            reason=reason,
            shuffle_id=self.awaited_shuffle(),
            expected=counts.get("expected"),
            actual=counts.get("actual"),
        )
        return self.read(failed)


@dataclass
class CardFlowTable(DrivesCardFlow, Generic[SettingsT, FlowT]):
    """A card game's flow as its flow tests start it: `Table(settings)` builds the flow from the settings
    (`make_flow`), the clock at `T0` and the shoe's seq at 0. A game's test module subclasses it with its
    settings' default (`settings: XSettings = field(default_factory=XSettings)`), `make_flow`, and the
    game's own steps."""

    settings: SettingsT
    now: float = T0
    seq: int = 0
    flow: FlowT = field(init=False)

    def __post_init__(self) -> None:
        self.flow = self.make_flow(self.settings)

    def make_flow(self, settings: SettingsT) -> FlowT:
        raise NotImplementedError(f"{type(self).__name__} builds its game's flow in make_flow")


def held(out: FlowOutput, *, alone: bool = True) -> dict[str, Any]:
    """The card came out of procedure: no card.rejected (nor card.dealt) while play goes on, and the flow
    asks the runtime to pause the table for the supervisor; what the pause says of it.

    The pause's reason is the dealer's words around the procedure's refusal, "Card 7D came out of
    procedure (<refusal>): put it aside": `reason` here is the refusal, `message` the whole. With
    `alone=False` the output may hold what came before the card (a deal of several cards)."""
    if alone:
        assert event_types(out) == [], event_types(out)
        assert out.requests == []
    assert "card.rejected" not in event_types(out)
    assert out.pause is not None and out.pause.cause == "out_of_procedure", out.pause
    message = out.pause.reason
    head, tail = " came out of procedure (", "): put it aside"
    assert head in message and message.endswith(tail), message
    why = message[message.index(head) + len(head) : -len(tail)]
    return {"reason": why, "message": message, "card": out.pause.card, "raw": out.pause.raw}


def assert_held(out: FlowOutput) -> None:
    """The card was held out of procedure, and nothing was asked of a device."""
    held(out)
