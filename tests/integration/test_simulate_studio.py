"""`tablectl simulate studio`: tables of mixed games, each a real table service on its own simulated devices,
on the studio's broker, with faults on demand from standard input."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from collections.abc import Callable

import pytest

from controller.studio_demo import run_studio
from controller.testing.mosquitto import (
    MosquittoBroker,
    MqttRecorder,
    Received,
    require_mosquitto,
    wait_until,
)

pytestmark = pytest.mark.integration

TABLES = ("bac-01", "rou-02", "stud-03")


def status_is(value: str) -> Callable[[Received], bool]:
    return lambda message: json.loads(message.payload).get("status") == value


@pytest.mark.timeout(120)
async def test_a_simulated_studio_plays_mixed_games_and_takes_faults_on_demand(
    mosquitto: MosquittoBroker,
) -> None:
    commands = asyncio.StreamReader()
    out = io.StringIO()
    topics = ["studio/t/table/+/status", "studio/t/table/+/events/#"]
    async with MqttRecorder(mosquitto, topics) as recorder:
        studio = asyncio.create_task(
            run_studio(
                3,
                mqtt_url=mosquitto.url,
                studio_id="t",
                games=("baccarat", "roulette", "stud"),
                supervisor=False,  # a pause waits for the console, as an engineer trying it wants
                report_every=0.5,
                out=out,
                commands=commands,
                signals=False,
            )
        )
        try:
            for table in TABLES:  # each one a table that says it is online and plays its game
                await recorder.wait_for_message(f"studio/t/table/{table}/status", status_is("online"), 30)
                opened = await recorder.wait_for_count(f"studio/t/table/{table}/events/round.opened", 1, 30)
                assert json.loads(opened[0].payload)["data"]["round_id"].startswith(table)

            commands.feed_data(b"bac-01 fault F03\n")  # the shoe jams: the table pauses, and stays paused
            paused: Received = await recorder.wait_for_message(
                "studio/t/table/bac-01/events/round.paused", lambda m: True, 20
            )
            assert json.loads(paused.payload)["data"]["device"] == "shoe"
            commands.feed_data(b"rou-02 stop\n")  # a table taken away: its bus says offline
            await recorder.wait_for_message("studio/t/table/rou-02/status", status_is("offline"), 20)
            commands.feed_data(b"nope fault\nbac-01 explode\n")
            await wait_until(
                lambda: (
                    "paused: bac-01 (shoe fault" in out.getvalue()
                    and "stopped: rou-02" in out.getvalue()
                    and "no table 'nope'" in out.getvalue()
                    and "bac-01: no action 'explode'" in out.getvalue()
                ),
                timeout=10,
                what=lambda: f"the studio's report lines; got:\n{out.getvalue()}",
            )
            assert recorder.on("studio/t/table/stud-03/events/round.paused") == []  # the others play on

            def online_said() -> int:
                return sum(1 for m in recorder.on("studio/t/table/rou-02/status") if status_is("online")(m))

            before = online_said()
            commands.feed_data(b"rou-02 start\n")  # back: online again, a new boot
            await wait_until(lambda: online_said() > before, timeout=30, what="rou-02 online again")
        finally:
            studio.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await studio


@pytest.mark.timeout(60)
async def test_without_a_broker_given_the_studio_runs_its_own_mosquitto(tmp_path) -> None:  # type: ignore[no-untyped-def]
    require_mosquitto()  # the studio's own broker is the system's Mosquitto (skipped locally, failed in CI)
    out = io.StringIO()
    studio = asyncio.create_task(
        run_studio(
            1, mqtt_url=None, games=("baccarat",), out=out, commands=asyncio.StreamReader(), signals=False
        )
    )
    try:
        await wait_until(lambda: "studio sim on mqtt://" in out.getvalue(), timeout=20, what="the first line")
        match = re.search(r"mqtt://127\.0\.0\.1:(\d+)", out.getvalue())
        assert match is not None, out.getvalue()
        broker = MosquittoBroker.__new__(MosquittoBroker)  # only its port, for the recorder
        broker.port = int(match.group(1))
        async with MqttRecorder(broker, ["studio/sim/table/+/status"], port=broker.port) as recorder:
            await recorder.wait_for_message("studio/sim/table/bac-01/status", status_is("online"), 30)
    finally:
        studio.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await studio
    # the broker went with the studio
    with pytest.raises(OSError):
        _, writer = await asyncio.open_connection("127.0.0.1", int(match.group(1)))
        writer.close()
