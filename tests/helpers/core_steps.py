"""A baccarat table's pure core (`TableCore` with the real flow) and the steps the runtime tests take with it:
shared by test_runtime.py and test_out_of_procedure.py."""

from __future__ import annotations

from controller.games.baccarat import BaccaratFlow, BaccaratSettings
from controller.runtime import Step, TableCore
from drivers.readings import CardSeen, DeviceOnline


def make_core(**settings: object) -> TableCore:
    flow = BaccaratFlow("t1", BaccaratSettings(betting_seconds=5, round_gap_seconds=1, **settings))  # type: ignore[arg-type]
    return TableCore(table_id="t1", game="baccarat", flow=flow, devices=["shoe"])


def types(step: Step) -> list[str]:
    return [e.type for e in step.events]


def online(core: TableCore, now: float = 0.0) -> Step:
    return core.on_reading(DeviceOnline(device="shoe", time=now, detail="SIM 1.0 1"), now)


def card(code: str, now: float) -> CardSeen:
    return CardSeen(device="shoe", time=now, code=code, raw=f"CARD {code}")


def open_and_close_betting(core: TableCore, now: float = 0.0) -> float:
    online(core, now)
    step = core.on_tick(now)
    assert "round.opened" in types(step)
    step = core.on_tick(now + 5)
    assert "round.betting_closed" in types(step)
    return now + 5
