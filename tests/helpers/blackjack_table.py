"""The blackjack flows driven as the runtime drives them (`Table`: the clock moves only when the test says),
and the tables the blackjack tests start from: shared by test_blackjack_flow.py, test_blackjack_settlement.py
and test_manual_card_confirmation.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.commands import TABLE_COMMANDS, parse_command
from controller.flow import FlowOutput, InputRejected
from controller.games import game_spec, make_flow
from controller.testing.card_table import DrivesCardFlow

T0 = 1_700_000_000.0


def types(out: FlowOutput) -> list[str]:
    return [event.type for event in out.events]


def of(out: FlowOutput, kind: str) -> list[dict[str, Any]]:
    return [event.data for event in out.events if event.type == kind]


@dataclass
class Table(DrivesCardFlow):
    game: str
    settings: dict[str, Any] = field(default_factory=dict)
    now: float = T0
    seq: int = 0
    flow: Any = field(init=False)
    log: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        spec = game_spec(self.game)
        self.flow = make_flow(self.game, "bj1", spec.settings.model_validate(self.settings))

    def keep(self, out: FlowOutput) -> FlowOutput:
        self.log += [(event.type, event.data) for event in out.events]
        return out

    def deal(self, *codes: str) -> FlowOutput:
        out = FlowOutput()
        for code in codes:
            out.extend(self.card(code))
        return self.keep(out)

    def send(self, name: str, **payload: Any) -> FlowOutput:
        kind = "commands" if name in TABLE_COMMANDS else "inputs"
        command = parse_command(kind, name, payload, by="rules-engine")
        return self.keep(self.flow.on_command(command, self.now))

    def refused(self, name: str, match: str, **payload: Any) -> None:
        before = json.dumps(self.flow.export_state(), sort_keys=True)
        with pytest.raises(InputRejected, match=match):
            self.send(name, **payload)
        assert json.dumps(self.flow.export_state(), sort_keys=True) == before, "a refusal changed the state"

    def open_round(self) -> FlowOutput:
        out = self.keep(self.tick_to_deadline())
        assert "round.opened" in types(out), types(out)
        out.extend(self.keep(self.tick_to_deadline()))  # betting closes by its timer
        assert "round.betting_closed" in types(out)
        return out

    def expire(self) -> FlowOutput:
        """Let the decision (or insurance) window run out: the disconnect policy decides."""
        return self.keep(self.tick_to_deadline())

    @property
    def state(self) -> dict[str, Any]:
        return self.flow.public_state()


def live(**settings: Any) -> Table:
    return Table("blackjack", {"seats": 3, **settings})


def single() -> Table:
    return Table("single_deck_blackjack")


def infinite(**settings: Any) -> Table:
    return Table("infinite_blackjack", settings)


def burn(table: Table, shown: str, count: int) -> FlowOutput:
    out = table.deal(shown)
    return out.extend(table.deal(*[f"{'23456789'[i % 8]}C" for i in range(count)]))


def ready_infinite(**settings: Any) -> Table:
    table = infinite(**settings)
    table.tick_to_deadline()
    burn(table, "2S", 2)
    table.send("burn_done")
    table.open_round()
    return table
