"""The demo's virtual supervisor: a pause the table makes itself (here: the shoe's cable pulled mid-round)
is resumed once the shoe is back, and the demo plays on to its last round instead of waiting forever. And
the demo's other ways of never ending: a virtual dealer that fails, a part that does not stop.

Its e2e tests; the unit ones are in `tests/unit/core/test_demo_supervisor.py`."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from controller.demo import DEMO_SUPERVISOR, DemoTable, run_demo

pytestmark = pytest.mark.e2e

#: the fault tasks: kept referenced while they run (the loop holds only weak references)
FAULTS: list[asyncio.Task[None]] = []


def pull_the_shoes_cable_mid_round(table: DemoTable) -> None:
    """`on_ready`: once the first round is in play, the shoe's cable is out for a second."""

    async def pull() -> None:
        while table.service.core.state()["round_phase"] != "in_play":
            await asyncio.sleep(0.05)
        await table.simulator.unplug()
        await asyncio.sleep(1.0)
        await table.simulator.replug()

    FAULTS.append(asyncio.create_task(pull()))


def baccarat_demo(
    rounds: int, on_ready: Callable[[DemoTable], None], out: io.StringIO, supervisor: bool = True
) -> Coroutine[Any, Any, int]:
    """The baccarat demo on its embedded broker, with no injected shoe faults but the test's own."""
    return run_demo(
        "baccarat",
        rounds,
        as_json=True,
        mqtt_url=None,
        faults=False,
        out=out,
        on_ready=on_ready,
        supervisor=supervisor,
    )


@pytest.mark.timeout(90)
async def test_a_shoe_unplugged_mid_round_pauses_the_demo_and_its_supervisor_resumes_it() -> None:
    out = io.StringIO()
    code = await asyncio.wait_for(baccarat_demo(2, pull_the_shoes_cable_mid_round, out), 80)
    assert code == 0
    envelopes = [json.loads(line) for line in out.getvalue().splitlines()]
    types = [e["type"] for e in envelopes]
    paused = [e for e in envelopes if e["type"] == "round.paused"]
    resumed = [e for e in envelopes if e["type"] == "round.resumed"]
    # the pulled cable pauses the round (a loaded machine may add a pause of its own: resumed the same way)
    assert paused and paused[0]["data"]["by"] == "device" and paused[0]["data"]["device"] == "shoe", paused
    assert len(resumed) == len(paused), (paused, resumed)
    assert all(e["data"]["by"] == DEMO_SUPERVISOR for e in resumed), resumed
    assert types.count("round.closed") == 2 and types[-1] == "round.closed"
    assert types.index("round.paused") < types.index("round.resumed") < types.index("round.result")


@pytest.mark.timeout(60)
async def test_without_the_supervisor_a_pause_waits_for_a_person() -> None:
    out = io.StringIO()
    seen: list[DemoTable] = []

    def on_ready(table: DemoTable) -> None:
        seen.append(table)
        pull_the_shoes_cable_mid_round(table)

    demo = asyncio.create_task(baccarat_demo(1, on_ready, out, supervisor=False))
    await asyncio.sleep(0.1)
    for _ in range(400):  # the pause comes within a few seconds of the first card
        if seen and seen[0].service.core.state()["paused"]:
            break
        await asyncio.sleep(0.05)
    assert seen[0].supervisor is None and seen[0].service.core.state()["paused"]
    await asyncio.sleep(5.0)  # longer than the supervisor's 3 s: nobody resumes
    assert seen[0].service.core.state()["paused"] and not demo.done()
    demo.cancel()
    with pytest.raises(asyncio.CancelledError):
        await demo


@pytest.mark.timeout(60)
async def test_a_virtual_dealer_that_fails_ends_the_demo_with_its_error() -> None:
    def on_ready(table: DemoTable) -> None:
        def broken_draw() -> None:
            raise RuntimeError("the dealer's hand slipped")

        table.simulator.draw = broken_draw

    with pytest.raises(RuntimeError, match="hand slipped"):
        await asyncio.wait_for(baccarat_demo(1, on_ready, io.StringIO()), 50)
