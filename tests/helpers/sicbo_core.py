"""A sic bo table's pure core (`TableCore` with the real flow, shaker and camera online) and the steps a test
takes with it, read like the table's story: shared by test_sicbo_flow.py and test_sicbo_settlement.py."""

from __future__ import annotations

from typing import Any

from controller.events import Event
from controller.flow import DeviceRequest
from controller.games import make_flow
from controller.games.sicbo import SicBoFlow, SicBoSettings
from controller.runtime import Step, TableCore
from drivers.readings import DeviceOnline, DiceAtRest, DiceRead

T0 = 1_800_000_000.0
BET = 10.0
FRAME = "camera-frames/00000007-20270115T080000.000Z.png"
SHA = "ab" * 32


def settings(**extra: Any) -> SicBoSettings:
    return SicBoSettings(betting_seconds=BET, round_gap_seconds=2.0, **extra)


class Table:
    """A sic bo core with both devices online, and the helpers a test reads like the table's story."""

    def __init__(self, **extra: Any) -> None:
        flow = make_flow("sicbo", "sb1", settings(**extra))
        assert isinstance(flow, SicBoFlow)
        self.flow = flow
        self.core = TableCore(table_id="sb1", game="sicbo", flow=flow, devices=["shaker", "camera"])
        self.now = T0
        self.events: list[Event] = []
        self.requests: list[DeviceRequest] = []
        for name in ("shaker", "camera"):
            self.take(self.core.on_reading(DeviceOnline(device=name, time=T0), T0))

    def take(self, step: Step) -> Step:
        self.events += step.events
        self.requests += step.requests
        return step

    def tick(self, at: float) -> Step:
        self.now = at
        return self.take(self.core.on_tick(at))

    def reading(self, reading: Any) -> Step:
        self.now = reading.time
        return self.take(self.core.on_reading(reading, reading.time))

    def command(self, command: Any) -> Step:
        step, _ = self.core.on_command(command, self.now)
        return self.take(step)

    def types(self, step: Step | None = None) -> list[str]:
        return [e.type for e in (step.events if step else self.events)]

    def open_and_close(self) -> Step:
        self.tick(T0)
        return self.tick(T0 + BET)

    def at_rest(self, cycle: str | None = None, dt: float = 3.0) -> Step:
        cycle = cycle if cycle is not None else self.flow.cycle_id
        assert cycle is not None
        return self.reading(
            DiceAtRest(device="shaker", time=self.now + dt, cycle_id=cycle, raw=f"AT_REST 0001 {cycle}*00")
        )

    def read(
        self,
        values: tuple[int, ...] | None,
        reason: str = "",
        cycle: str | None = None,
        frame: str = FRAME,
        sha: str = SHA,
        dt: float = 0.4,
    ) -> Step:
        cycle = cycle if cycle is not None else self.flow.cycle_id
        assert cycle is not None
        dice = tuple(
            {"value": v, "confidence": 0.8, "box": [10 + 60 * i, 20, 50, 50], "reason": ""}
            for i, v in enumerate(values or ())
        )
        return self.reading(
            DiceRead(
                device="camera",
                time=self.now + dt,
                cycle_id=cycle,
                values=values,
                reason=reason,
                frame=frame,
                sha256=sha,
                dice=dice,
            )
        )

    def result(self) -> dict[str, Any]:
        return next(e for e in self.events if e.type == "round.result").data
