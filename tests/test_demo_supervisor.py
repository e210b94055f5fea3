"""The demo's virtual supervisor: a pause the table makes itself (here: the shoe's cable pulled mid-round)
is resumed once the shoe is back, and the demo plays on to its last round instead of waiting forever."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from controller.demo import DEMO_SUPERVISOR, DemoTable, run_demo


@pytest.mark.timeout(90)
async def test_a_shoe_unplugged_mid_round_pauses_the_demo_and_its_supervisor_resumes_it() -> None:
    out = io.StringIO()
    faults: list[asyncio.Task[None]] = []

    def on_ready(table: DemoTable) -> None:
        async def pull_the_cable() -> None:
            while table.service.core.state()["round_phase"] != "in_play":
                await asyncio.sleep(0.05)
            await table.simulator.unplug()
            await asyncio.sleep(1.0)
            await table.simulator.replug()

        faults.append(asyncio.create_task(pull_the_cable()))

    code = await asyncio.wait_for(
        run_demo("baccarat", 2, as_json=True, mqtt_url=None, faults=False, out=out, on_ready=on_ready), 80
    )
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

        async def pull_the_cable() -> None:
            while table.service.core.state()["round_phase"] != "in_play":
                await asyncio.sleep(0.05)
            await table.simulator.unplug()
            await asyncio.sleep(1.0)
            await table.simulator.replug()

        asyncio.get_running_loop().create_task(pull_the_cable())

    demo = asyncio.create_task(
        run_demo(
            "baccarat",
            1,
            as_json=True,
            mqtt_url=None,
            faults=False,
            out=out,
            on_ready=on_ready,
            supervisor=False,
        )
    )
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
        await asyncio.wait_for(
            run_demo(
                "baccarat", 1, as_json=True, mqtt_url=None, faults=False, out=io.StringIO(), on_ready=on_ready
            ),
            50,
        )
