"""TableBus against a real Mosquitto: retained topics, the outbox, the Last Will, commands and replies.

Its integration tests; the unit ones are in `tests/unit/core/test_bus.py`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller import bus as bus_module
from controller.bus import TableBus
from controller.commands import CloseBetting, Command, CommandError, Pause, VoidRound
from controller.config import BrokerSettings, TableConfig
from controller.events import Envelope, Event, RoundClosed, RoundOpened, RoundVoided, make_event
from controller.games.baccarat.events import BaccaratHand, BaccaratResult
from controller.journal import Journal
from controller.mqtt_client import AcknowledgingClient
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import (
    MosquittoBroker,
    MqttRecorder,
    Received,
    free_port,
    make_test_pki,
    require_binary,
    require_mosquitto,
    secured_broker,
    wait_until,
)
from controller.testing.table_process import running_service
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration

ROOT = "studio/s1/table/t1"

Handler = Callable[[Command], Awaitable[dict[str, Any]]]


class RecordingHandler:
    """handle_command that remembers what reached the table, with a canned answer per command type."""

    def __init__(self, answers: dict[type[Command], Any] | None = None) -> None:
        self.calls: list[Command] = []
        self.answers = answers or {}

    async def __call__(self, command: Command) -> dict[str, Any]:
        self.calls.append(command)
        answer = self.answers.get(type(command), {"accepted": type(command).__name__})
        if isinstance(answer, BaseException):
            raise answer
        return dict(answer)


def settings_for(broker: MosquittoBroker, **overrides: Any) -> BrokerSettings:
    fields: dict[str, Any] = {"url": broker.url, "reconnect_min_seconds": 0.05, "reconnect_max_seconds": 0.2}
    fields.update(overrides)
    return BrokerSettings(**fields)


@contextlib.asynccontextmanager
async def running_bus(
    settings: BrokerSettings,
    journal: Journal,
    handler: Handler | None = None,
    *,
    wait_connected: bool = True,
    root: str = ROOT,
) -> AsyncIterator[TableBus]:
    bus = TableBus(settings, root=root, journal=journal, handle_command=handler or RecordingHandler())
    task = asyncio.create_task(bus.run())
    try:
        if wait_connected:
            await wait_until(lambda: bus.connected, what="the bus to connect")
        yield bus
    finally:
        await asyncio.wait_for(bus.close(), 10)
        await asyncio.wait_for(task, 10)


def round_opened(n: int) -> Event:
    opened = RoundOpened(game="baccarat", round_id=f"r{n}", round_number_in_shoe=n, betting_closes_at=None)
    return make_event("round.opened", opened, time=1_700_000_000.0 + n)


def round_result(n: int) -> Event:
    hand = BaccaratHand(cards=["9S", "KC"], total=9)
    other = BaccaratHand(cards=["8D", "5H"], total=3)
    result = BaccaratResult(
        round_id=f"r{n}",
        player=hand,
        banker=other,
        winner="player",
        player_pair=False,
        banker_pair=False,
        natural=True,
        player_natural=True,
        banker_natural=False,
        round_number_in_shoe=n,
        last_round_of_shoe=False,
    )
    return make_event("round.result", result, time=1_700_000_000.0 + n)


def commit(journal: Journal, bus: TableBus, *numbers: int) -> list[Envelope]:
    envelopes = journal.append([round_opened(n) for n in numbers])
    bus.events_committed()
    return envelopes


def first_occurrences(messages: list[Received]) -> list[dict[str, Any]]:
    """Events in arrival order, duplicates (same id, allowed by at-least-once) dropped."""
    seen: set[str] = set()
    unique = []
    for message in messages:
        event = message.json()
        if event["id"] not in seen:
            seen.add(event["id"])
            unique.append(event)
    return unique


def transaction_is(transaction: str) -> Callable[[Received], bool]:
    return lambda message: bool(message.json()["transaction"] == transaction)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    journal = Journal(tmp_path / "journal.sqlite", ROOT)
    yield journal
    journal.close()


# --- retained topics -----------------------------------------------------------------------------------


async def test_status_state_and_devices_are_retained_for_late_subscribers(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    async with running_bus(settings_for(mosquitto), journal) as bus:
        bus.set_state({"game": "baccarat", "phase": "idle", "last_sequence": 0})
        bus.set_state({"game": "baccarat", "phase": "betting", "last_sequence": 0})  # latest wins
        bus.set_device("shoe", {"status": "online", "detail": "", "since": "2024-01-01T00:00:00.000Z"})
        bus.set_device("wheel", {"status": "fault", "detail": "no spin", "since": "2024-01-01T00:00:01.000Z"})
        # Wait until the bus published the latest state before a late subscriber asks for it.
        async with MqttRecorder(mosquitto, [f"{ROOT}/state"]) as watcher:
            await watcher.wait_for_message(f"{ROOT}/state", lambda m: m.json()["phase"] == "betting")

        async with MqttRecorder(mosquitto, [f"{ROOT}/status", f"{ROOT}/state", f"{ROOT}/devices/+"]) as late:
            await late.wait_for_count("#", 4)
            status = late.on(f"{ROOT}/status")
            assert [m.retain for m in late.messages] == [True] * 4
            assert status[0].json() == {"status": "online", "boot": 1, "since": status[0].json()["since"]}
            assert status[0].json()["since"].endswith("Z")
            assert late.on(f"{ROOT}/state")[0].json() == {
                "game": "baccarat",
                "phase": "betting",
                "last_sequence": 0,
            }
            assert late.on(f"{ROOT}/devices/shoe")[0].json()["status"] == "online"
            assert late.on(f"{ROOT}/devices/wheel")[0].json() == {
                "status": "fault",
                "detail": "no spin",
                "since": "2024-01-01T00:00:01.000Z",
            }

    # close() leaves a retained offline with the same boot behind.
    async with MqttRecorder(mosquitto, [f"{ROOT}/status"]) as after:
        (offline,) = await after.wait_for_count(f"{ROOT}/status", 1)
        assert offline.retain
        assert offline.json() == {"status": "offline", "boot": 1}


async def test_a_state_changed_while_events_are_in_flight_follows_their_acknowledgement(
    mosquitto: MosquittoBroker, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step's retained state goes once the broker acknowledged the step's events (sent beside them, it held
    up their delivery on a busy table), and at most `RETAINED_AFTER_EVENTS_SECONDS` later when no PUBACK
    comes. The PUBACKs are held back here, as a slow broker would."""
    held: list[tuple[Any, list[Any], Any]] = []
    holding = [True]
    acknowledge = bus_module._EventSender._ack

    def held_ack(sender: Any, entry: list[Any], code: Any) -> None:
        if holding[0]:
            held.append((sender, entry, code))
        else:
            acknowledge(sender, entry, code)

    def release() -> None:
        holding[0] = False
        while held:
            acknowledge(*held.pop(0))

    monkeypatch.setattr(bus_module._EventSender, "_ack", held_ack)
    state_topic = f"{ROOT}/state"

    def phase_is(phase: str) -> Callable[[Received], bool]:
        return lambda message: bool(message.json()["phase"] == phase)

    async with (
        MqttRecorder(mosquitto, [state_topic, f"{ROOT}/events/#"]) as watcher,
        running_bus(settings_for(mosquitto), journal) as bus,
    ):
        try:
            bus.set_state({"phase": "idle"})  # nothing in flight: at once
            await watcher.wait_for_message(state_topic, phase_is("idle"))

            commit(journal, bus, 1)
            bus.set_state({"phase": "betting"})
            await watcher.wait_for_count(f"{ROOT}/events/#", 1)
            await wait_until(lambda: bool(held), what="the event's PUBACK")
            # the event has reached the subscriber; its PUBACK has not reached the bus: the state waits
            await asyncio.sleep(0.02)
            assert not [m for m in watcher.on(state_topic) if phase_is("betting")(m)]
            release()
            await watcher.wait_for_message(state_topic, phase_is("betting"))

            holding[0] = True  # a PUBACK that does not come: the state still goes, a bounded time later
            commit(journal, bus, 2)
            started = asyncio.get_running_loop().time()
            bus.set_state({"phase": "dealing"})
            await watcher.wait_for_message(state_topic, phase_is("dealing"))
            waited = asyncio.get_running_loop().time() - started
            assert held, "the PUBACK was held throughout"
            assert waited >= 0.8 * bus_module.RETAINED_AFTER_EVENTS_SECONDS
        finally:
            release()
        await wait_until(lambda: not journal.outbox(), what="the outbox to empty")


async def test_the_last_result_the_broker_took_is_retained_on_result_and_outlives_a_void(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    # A console signing in saw "no result seen yet" on every table: results were only live events.
    journal.append([round_result(1), round_opened(2)])  # a backlog: sent late, as historical
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/result", f"{ROOT}/events/#", f"{ROOT}/replies/#"]) as live,
        running_bus(settings_for(mosquitto), journal) as bus,
    ):
        await live.wait_for_count(f"{ROOT}/events/#", 2)
        first = await live.wait_for_count(f"{ROOT}/result", 1)
        # the same bytes as the event, as published (historical: it waited in the outbox)
        assert first[0].payload == live.on(f"{ROOT}/events/round.result")[0].payload
        assert first[0].json()["historical"] is True
        (latest,) = journal.append([round_result(3)])
        bus.events_committed()
        await live.wait_for_count(f"{ROOT}/result", 2)
        await wait_until(lambda: not journal.outbox(), what="the outbox to empty")
        # a void, and a replay of the first result, leave the last result as it is
        voided = RoundVoided(round_id="r4", reason="misdeal", by="supervisor")
        journal.append([make_event("round.voided", voided, time=1_700_000_004.0)])
        bus.events_committed()
        replay = {"transaction": "again", "from_sequence": 1}
        live.publish(f"{ROOT}/commands/replay_events/supervisor", replay)
        await live.wait_for_message(f"{ROOT}/replies/replay_events", transaction_is("again"))
        assert len(live.on(f"{ROOT}/events/#")) == 4 + 4  # the four events, then the four replayed
        await wait_until(lambda: not journal.outbox(), what="the outbox to empty")
        async with MqttRecorder(mosquitto, [f"{ROOT}/result"]) as late:
            (retained,) = await late.wait_for_count(f"{ROOT}/result", 1)
            assert retained.retain
            assert retained.payload == latest.model_dump_json().encode()
        assert len(live.on(f"{ROOT}/result")) == 2

        # a broker that restarted without its retained messages gets it again when the table reconnects
        connects = bus.stats.connects
        mosquitto.stop()
        mosquitto.persistence = False
        mosquitto.start()
        await wait_until(lambda: bus.stats.connects > connects and bus.connected, what="the bus back")
        async with MqttRecorder(mosquitto, [f"{ROOT}/result"]) as late:
            (retained,) = await late.wait_for_count(f"{ROOT}/result", 1)
            assert retained.payload == latest.model_dump_json().encode()


async def test_cancelling_run_without_close_still_leaves_offline(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    bus = TableBus(settings_for(mosquitto), root=ROOT, journal=journal, handle_command=RecordingHandler())
    task = asyncio.create_task(bus.run())
    await wait_until(lambda: bus.connected, what="the bus to connect")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not bus.connected
    async with MqttRecorder(mosquitto, [f"{ROOT}/status"]) as after:
        (status,) = await after.wait_for_count(f"{ROOT}/status", 1)
        assert status.json() == {"status": "offline", "boot": 1}


async def test_device_names_must_be_one_topic_level(mosquitto: MosquittoBroker, journal: Journal) -> None:
    bus = TableBus(settings_for(mosquitto), root=ROOT, journal=journal, handle_command=RecordingHandler())
    for bad in ("", "a/b", "shoe+", "#"):
        with pytest.raises(ValueError, match="topic level"):
            bus.set_device(bad, {"status": "online"})


# --- events --------------------------------------------------------------------------------------------


async def test_events_are_published_in_order_and_acknowledged(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/events/#"]) as watcher,
        running_bus(settings_for(mosquitto), journal) as bus,
    ):
        sent = commit(journal, bus, 1, 2, 3) + commit(journal, bus, 4) + commit(journal, bus, 5)
        received = await watcher.wait_for_count(f"{ROOT}/events/#", 5)
        await wait_until(lambda: not journal.outbox(), what="the outbox to empty")
        assert bus.stats.published == 5

    assert [m.topic for m in received] == [f"{ROOT}/events/round.opened"] * 5
    # Byte for byte what the journal stored: connected throughout, so none is historical.
    assert [m.payload for m in received] == [e.model_dump_json().encode() for e in sent]
    events = [m.json() for m in received]
    assert [e["sequence"] for e in events] == ["000000000001", "000000000002", "000000000003", "000000000004",
                                               "000000000005"]  # fmt: skip
    assert [e["historical"] for e in events] == [False] * 5
    assert all(e["source"] == ROOT and e["specversion"] == "1.0" for e in events)
    assert not any(m.retain for m in received)


async def test_backlog_journaled_before_start_is_sent_first_and_historical(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    journal.append([round_opened(1), round_opened(2)])
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/events/#"]) as watcher,
        running_bus(settings_for(mosquitto), journal) as bus,
    ):
        commit(journal, bus, 3)
        received = await watcher.wait_for_count(f"{ROOT}/events/#", 3)
    events = [m.json() for m in received]
    assert [(int(e["sequence"]), e["historical"]) for e in events] == [(1, True), (2, True), (3, False)]


async def test_broker_outage_delays_events_but_loses_none(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    # A durable subscriber: the restarted broker keeps its queue, as the rules engine's would be.
    watcher = MqttRecorder(mosquitto, [f"{ROOT}/events/#"], client_id="rules-engine-test", persistent=True)
    async with watcher, running_bus(settings_for(mosquitto), journal) as bus:
        commit(journal, bus, 1, 2)
        await watcher.wait_for_count(f"{ROOT}/events/#", 2)
        await wait_until(lambda: not journal.outbox(), what="the broker's PUBACKs")

        mosquitto.stop()
        await wait_until(lambda: not bus.connected, what="the bus to notice the broker is gone")
        commit(journal, bus, 3)
        commit(journal, bus, 4, 5)
        await asyncio.sleep(0.3)  # a few failed reconnects
        assert len(journal.outbox()) == 3
        mosquitto.start()

        received = await watcher.wait_for_count(f"{ROOT}/events/#", 5, timeout=10)
        await wait_until(lambda: not journal.outbox(), what="the outbox to empty")
        commit(journal, bus, 6)  # live again
        received = await watcher.wait_for_count(f"{ROOT}/events/#", 6)
        assert bus.stats.reconnects >= 1

    events = first_occurrences(received)
    assert [int(e["sequence"]) for e in events] == [1, 2, 3, 4, 5, 6]
    assert [e["historical"] for e in events] == [False, False, True, True, True, False]
    assert [e["data"]["round_id"] for e in events] == ["r1", "r2", "r3", "r4", "r5", "r6"]


async def test_a_backlog_drains_through_the_window_in_order_while_live_events_keep_coming(
    tmp_path: Path, journal: Journal
) -> None:
    # the broker queues everything for the watcher (Mosquitto drops QoS 1 past 1000 queued by default)
    broker = MosquittoBroker(require_mosquitto(), tmp_path / "broker", extra_config="max_queued_messages 0")
    broker.start()
    backlog = 900
    journal.append([round_opened(n) for n in range(1, backlog + 1)])  # waited through an outage
    try:
        async with (
            MqttRecorder(broker, [f"{ROOT}/events/#"], protocol="5") as watcher,
            running_bus(settings_for(broker, max_inflight=32), journal) as bus,
        ):
            for n in range(backlog + 1, backlog + 21):  # the table goes on while the backlog drains
                commit(journal, bus, n)
                await asyncio.sleep(0.005)
            received = await watcher.wait_for_count(f"{ROOT}/events/#", backlog + 20, timeout=30)
            await wait_until(lambda: not journal.outbox(), what="the outbox to empty")
            assert bus.stats.published == backlog + 20
            assert 1 < bus.stats.inflight_peak <= 32  # a window, not one publish at a time
    finally:
        broker.kill()
    events = first_occurrences(received)
    assert [int(e["sequence"]) for e in events] == list(range(1, backlog + 21))
    assert all(e["historical"] for e in events[:backlog])


async def test_a_publish_the_client_refuses_never_reaches_the_committer_and_loses_nothing(
    mosquitto: MosquittoBroker, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    # events are published from inside the service's step, right after the commit: a failing client (the link
    # going down) must not look like a failed commit to the caller, which then ACKs the device
    failures = iter([True])

    def flaky(self: Any, topic: str, payload: str, on_ack: Any) -> None:
        if next(failures, False):
            raise bus_module.aiomqtt.MqttCodeError(4, "Could not publish message")
        original(self, topic, payload, on_ack)

    original = AcknowledgingClient.publish_nowait
    monkeypatch.setattr(AcknowledgingClient, "publish_nowait", flaky)
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/events/#"]) as watcher,
        running_bus(settings_for(mosquitto), journal) as bus,
    ):
        commit(journal, bus, 1, 2)  # does not raise
        commit(journal, bus, 3)
        received = await watcher.wait_for_count(f"{ROOT}/events/#", 3, timeout=10)
        await wait_until(lambda: not journal.outbox(), what="the outbox to empty")
        assert bus.stats.reconnects >= 1
    assert [int(e["sequence"]) for e in first_occurrences(received)] == [1, 2, 3]


async def test_nothing_after_a_refused_event_leaves_the_outbox_before_it(
    tmp_path: Path, journal: Journal
) -> None:
    acl = tmp_path / "acl"
    # the table may publish round.opened but not round.closed: the third event is refused, the ones after it
    # (already in flight in the window) are taken by the broker
    acl.write_text(TABLE_GRANTS.format(root=ROOT, events=f"topic write {ROOT}/events/round.opened"))
    broker = secured_broker(tmp_path, {"table-t1": "table-pw", "auditor": "auditor-pw"}, acl)
    broker.start()
    table = settings_for(
        broker, username="table-t1", password=pydantic.SecretStr("table-pw"), protocol="5", max_inflight=8
    )
    auditor = MqttRecorder(
        broker,
        [f"{ROOT}/events/#"],
        username="auditor",
        password="auditor-pw",
        client_id="auditor",
        persistent=True,
    )
    closed = make_event("round.closed", RoundClosed(round_id="r2"), time=1_700_000_002.5)
    journal.append([round_opened(1), round_opened(2), closed, round_opened(3), round_opened(4)])
    try:
        async with auditor, running_bus(table, journal) as bus:
            await wait_until(lambda: bus.stats.refused >= 2, what="the refusal and a retry")
            # 1 and 2 went; 3 was refused; 4 and 5 stay in the outbox behind it, whatever the broker did (the
            # acknowledgements of 1 and 2 are committed in a batch, up to 50 ms later: wait for them)
            await wait_until(
                lambda: [int(e.sequence) for e in journal.outbox()] == [3, 4, 5], what="3, 4, 5 kept"
            )
            assert bus.stats.published == 2

            acl.write_text(TABLE_GRANTS.format(root=ROOT, events=f"topic write {ROOT}/events/+"))
            broker.stop()
            broker.start()
            await wait_until(lambda: not journal.outbox(), timeout=15, what="the outbox to empty")

            def delivered() -> list[int]:
                return [int(m.json()["sequence"]) for m in auditor.on(f"{ROOT}/events/#")]

            await wait_until(lambda: delivered()[-1:] == [5] and 3 in delivered(), what="3, 4, 5 delivered")
    finally:
        broker.kill()
    sequences = [int(m.json()["sequence"]) for m in auditor.on(f"{ROOT}/events/#")]
    # nothing lost, and once 3 is delivered everything after it follows in order (re-sent, same ids)
    assert set(sequences) == {1, 2, 3, 4, 5}
    assert sequences[:2] == [1, 2]
    assert sequences[sequences.index(3) :] == [3, 4, 5]


async def test_last_will_says_offline_when_the_controller_is_killed(
    mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    journal_path = tmp_path / "table.sqlite"

    def start_controller(append: int) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "controller.testing.bus_process", "--url", mosquitto.url,
                   "--root", ROOT, "--journal", str(journal_path), "--append", str(append)]  # fmt: skip
        return subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    async with MqttRecorder(mosquitto, [f"{ROOT}/status", f"{ROOT}/events/#"]) as watcher:

        def status_is(status: str, boot: int) -> Callable[[Received], bool]:
            return lambda m: m.json() == {**m.json(), "status": status, "boot": boot}

        controller = start_controller(append=2)
        try:
            await watcher.wait_for_message(f"{ROOT}/status", status_is("online", 1), timeout=15)
            await watcher.wait_for_count(f"{ROOT}/events/#", 2)
        finally:
            controller.send_signal(signal.SIGKILL)
            controller.wait()
        will = await watcher.wait_for_message(f"{ROOT}/status", status_is("offline", 1))
        assert will.json() == {"status": "offline", "boot": 1}

        # The restarted controller is boot 2 and continues the sequence where the killed one stopped.
        controller = start_controller(append=1)
        try:
            await watcher.wait_for_message(f"{ROOT}/status", status_is("online", 2), timeout=15)
            await watcher.wait_for_count(f"{ROOT}/events/#", 3)
            controller.send_signal(signal.SIGTERM)  # graceful: offline, same boot
            await watcher.wait_for_message(f"{ROOT}/status", status_is("offline", 2))
            assert controller.wait(timeout=10) == 0, controller.stderr.read() if controller.stderr else ""
        finally:
            if controller.poll() is None:
                os.kill(controller.pid, signal.SIGKILL)
                controller.wait()

    events = first_occurrences(watcher.on(f"{ROOT}/events/#"))
    assert [int(e["sequence"]) for e in events] == [1, 2, 3]
    # All three were journaled before their controller connected, so they waited: historical.
    assert [e["historical"] for e in events] == [True, True, True]


# --- commands and inputs -------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
async def test_malformed_commands_get_an_error_reply_and_change_nothing(
    mosquitto: MosquittoBroker, journal: Journal, protocol: str
) -> None:
    handler = RecordingHandler()
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/replies/#"]) as panel,
        running_bus(settings_for(mosquitto, protocol=protocol), journal, handler) as bus,
    ):
        panel.publish(f"{ROOT}/commands/pause/supervisor", b"not json {")
        panel.publish(f"{ROOT}/commands/pause/supervisor", b"\xff\xfe\x00")
        panel.publish(f"{ROOT}/commands/pause/supervisor", b'["a", "list"]')
        panel.publish(f"{ROOT}/commands/launch_rockets/supervisor", {"transaction": "t4"})
        panel.publish(f"{ROOT}/commands/pause/supervisor", {"transaction": 5, "reason": ""})
        panel.publish(f"{ROOT}/commands/pause/supervisor", {"transaction": "t6", "colour": "red"})
        panel.publish(f"{ROOT}/inputs/pause/rules-engine", {"transaction": "t7"})  # a command is not an input
        panel.publish(f"{ROOT}/commands/replay_events/supervisor", {"transaction": "t8", "from_sequence": 0})
        panel.publish(
            f"{ROOT}/commands/pause/supervisor", {"transaction": "t9", "reason": "smoke in the pit"}
        )
        replies = await panel.wait_for_count(f"{ROOT}/replies/#", 9)

    bodies = [m.json() for m in replies]
    assert [
        (m.topic.rsplit("/", 1)[1], b["transaction"], b["status"])
        for m, b in zip(replies, bodies, strict=True)
    ] == [
        ("pause", None, "error"),
        ("pause", None, "error"),
        ("pause", None, "error"),
        ("launch_rockets", "t4", "error"),
        ("pause", 5, "error"),
        ("pause", "t6", "error"),
        ("pause", "t7", "error"),
        ("replay_events", "t8", "error"),
        ("pause", "t9", "ok"),
    ]
    assert bodies[0]["error"] == "payload is not valid JSON"
    assert bodies[1]["error"] == "payload is not UTF-8"
    assert bodies[2]["error"] == "payload must be a JSON object"
    assert bodies[3]["error"].startswith("unknown command 'launch_rockets'")
    assert bodies[4]["error"].startswith("invalid pause: reason:")
    assert bodies[5]["error"].startswith("invalid pause: colour:")
    assert bodies[6]["error"].startswith("unknown input 'pause'")
    assert bodies[7]["error"].startswith("invalid replay_events: from_sequence:")
    assert all(set(b) == {"transaction", "status", "error"} for b in bodies[:8])
    assert bodies[8] == {"transaction": "t9", "status": "ok", "data": {"accepted": "Pause"}}
    assert handler.calls == [Pause(transaction="t9", reason="smoke in the pit", by="supervisor")]
    assert bus.stats.rejected_commands == 8
    assert bus.stats.replies == 9


async def test_handler_answers_and_failures_become_replies(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    handler = RecordingHandler(
        {
            VoidRound: CommandError("no round to void"),
            Pause: RuntimeError("bug in the flow"),
            CloseBetting: {"round_id": "r9", "betting": "closed"},
        }
    )
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/replies/#"]) as panel,
        running_bus(settings_for(mosquitto), journal, handler) as bus,
    ):
        panel.publish(f"{ROOT}/commands/void_round/supervisor", {"transaction": 1})
        panel.publish(f"{ROOT}/commands/pause/supervisor", {"transaction": 2})
        panel.publish(f"{ROOT}/inputs/close_betting/rules-engine", {"transaction": 3})
        replies = await panel.wait_for_count(f"{ROOT}/replies/#", 3)
        assert bus.connected  # the handler's bug did not take the bus down

    assert [(m.topic, m.json()) for m in replies] == [
        (f"{ROOT}/replies/void_round", {"transaction": 1, "status": "error", "error": "no round to void"}),
        (f"{ROOT}/replies/pause", {"transaction": 2, "status": "error", "error": "internal error"}),
        (
            f"{ROOT}/replies/close_betting",
            {"transaction": 3, "status": "ok", "data": {"round_id": "r9", "betting": "closed"}},
        ),
    ]
    assert [type(c) for c in handler.calls] == [VoidRound, Pause, CloseBetting]
    assert (bus.stats.rejected_commands, bus.stats.internal_errors) == (2, 1)


async def test_a_retained_command_is_never_executed(mosquitto: MosquittoBroker, journal: Journal) -> None:
    handler = RecordingHandler()
    async with MqttRecorder(mosquitto, [f"{ROOT}/replies/#"]) as supervisor:
        # Left behind by a careless client: would void a round on every reconnect if obeyed.
        supervisor.publish(f"{ROOT}/commands/void_round/supervisor", {"transaction": "stale"}, retain=True)
        await asyncio.sleep(0.05)
        async with running_bus(settings_for(mosquitto), journal, handler) as bus:
            supervisor.publish(f"{ROOT}/commands/resume/supervisor", {"transaction": "live"})
            (reply,) = await supervisor.wait_for_count(f"{ROOT}/replies/#", 1)
            assert reply.json()["transaction"] == "live"
            assert bus.stats.rejected_commands == 1
    assert [c.transaction for c in handler.calls] == ["live"]


async def test_rebirth_republishes_everything_retained(mosquitto: MosquittoBroker, journal: Journal) -> None:
    handler = RecordingHandler()
    async with running_bus(settings_for(mosquitto), journal, handler) as bus:
        bus.set_state({"phase": "dealing"})
        bus.set_device("shoe", {"status": "online"})
        topics = [f"{ROOT}/status", f"{ROOT}/state", f"{ROOT}/devices/+", f"{ROOT}/replies/#"]
        async with MqttRecorder(mosquitto, topics) as supervisor:
            await supervisor.wait_for_message(f"{ROOT}/state", lambda m: m.json() == {"phase": "dealing"})
            await supervisor.wait_for_count(f"{ROOT}/devices/+", 1)
            supervisor.clear()
            supervisor.publish(f"{ROOT}/commands/rebirth/supervisor", {"transaction": "rb-1"})
            (reply,) = await supervisor.wait_for_count(f"{ROOT}/replies/#", 1)
            assert reply.json() == {"transaction": "rb-1", "status": "ok", "data": {}}
            # The replies come after the republished topics (same connection, in order).
            assert [m.topic for m in supervisor.messages] == [
                f"{ROOT}/status",
                f"{ROOT}/state",
                f"{ROOT}/devices/shoe",
                f"{ROOT}/replies/rebirth",
            ]
            assert supervisor.messages[0].json()["status"] == "online"
    assert handler.calls == []  # served by the bus, not the table


async def test_replay_events_resends_journaled_events_as_historical(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    handler = RecordingHandler()
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/events/#", f"{ROOT}/replies/#"]) as auditor,
        running_bus(settings_for(mosquitto), journal, handler) as bus,
    ):
        originals = commit(journal, bus, 1, 2, 3, 4)
        await auditor.wait_for_count(f"{ROOT}/events/#", 4)
        auditor.clear()
        auditor.publish(
            f"{ROOT}/commands/replay_events/supervisor",
            {"transaction": "gap", "from_sequence": 2, "to_sequence": 3},
        )
        (reply,) = await auditor.wait_for_count(f"{ROOT}/replies/#", 1)
        assert reply.json() == {"transaction": "gap", "status": "ok", "data": {"count": 2}}
        auditor.publish(
            f"{ROOT}/commands/replay_events/supervisor", {"transaction": "tail", "from_sequence": 4}
        )
        auditor.publish(
            f"{ROOT}/commands/replay_events/supervisor", {"transaction": "none", "from_sequence": 50}
        )
        auditor.publish(
            f"{ROOT}/commands/replay_events/supervisor",
            {"transaction": "bad", "from_sequence": 3, "to_sequence": 2},
        )
        replies = await auditor.wait_for_count(f"{ROOT}/replies/#", 4)
        replayed = auditor.on(f"{ROOT}/events/#")
        assert bus.stats.replayed == 3

    # A bad request is answered at once; valid ones by the replay task, in order.
    by_transaction = {m.json()["transaction"]: m.json() for m in replies[1:]}
    assert [by_transaction[t]["data"] for t in ("tail", "none")] == [{"count": 1}, {"count": 0}]
    assert by_transaction["bad"] == {
        "transaction": "bad",
        "status": "error",
        "error": "to_sequence must not be before from_sequence",
    }
    # Same events, same ids, byte-identical but for the historical flag.
    expected = [originals[1], originals[2], originals[3]]
    assert [m.payload for m in replayed] == [
        e.model_copy(update={"historical": True}).model_dump_json().encode() for e in expected
    ]
    assert handler.calls == []


async def test_mqtt5_reply_goes_to_the_response_topic_with_correlation_data(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    response_topic = f"{ROOT}/replies/panel-7f3a"
    handler = RecordingHandler()
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/replies/#"], protocol="5") as panel,
        running_bus(settings_for(mosquitto, protocol="5"), journal, handler),
    ):
        request = Properties(PacketTypes.PUBLISH)
        request.ResponseTopic = response_topic
        request.CorrelationData = b"\x00req-42"
        panel.publish(f"{ROOT}/commands/pause/supervisor", {"reason": "dealer break"}, properties=request)
        # A request without a response topic still answers on replies/<name>; it also proves, arriving
        # second, that the first reply went nowhere else.
        panel.publish(f"{ROOT}/commands/resume/supervisor", {"transaction": "r"})
        replies = await panel.wait_for_count(f"{ROOT}/replies/#", 2)

    assert [m.topic for m in replies] == [response_topic, f"{ROOT}/replies/resume"]
    assert replies[0].json() == {"transaction": None, "status": "ok", "data": {"accepted": "Pause"}}
    assert replies[0].properties is not None
    assert getattr(replies[0].properties, "CorrelationData", None) == b"\x00req-42"
    assert not hasattr(replies[1].properties, "CorrelationData")


# --- security: the example ACL, username/password and TLS ---------------------------------------------


async def test_example_acl_lets_each_identity_do_only_its_job(tmp_path: Path) -> None:
    # The table of examples/baccarat.toml, with its broker user, against the example ACL as it ships.
    example = TABLE_CONFIGS.load(REPO / "examples" / "baccarat.toml", environ={})
    root, table_user = example.topic_root, example.broker.username
    assert table_user is not None
    users = {table_user: "table-secret", "supervisor-desk-1": "desk-1", "supervisor-desk-2": "desk-2"}
    users["rules-engine"] = "rules-secret"
    broker = secured_broker(tmp_path, users, REPO / "examples" / "mosquitto" / "acl")
    broker.start()
    journal = Journal(tmp_path / "journal.sqlite", root)
    handler = RecordingHandler()
    try:
        table = settings_for(broker, username=table_user, password=pydantic.SecretStr("table-secret"))
        desk = MqttRecorder(broker, ["studio/#"], username="supervisor-desk-1", password="desk-1")
        rules = MqttRecorder(
            broker,
            [f"{root}/events/#", f"{root}/replies/#"],
            username="rules-engine",
            password="rules-secret",
        )
        async with desk, rules, running_bus(table, journal, handler, root=root) as bus:
            commit(journal, bus, 1)
            await rules.wait_for_count(f"{root}/events/#", 1)
            # the table retains its last result; supervisors read it
            journal.append([round_result(1)])
            bus.events_committed()
            await desk.wait_for_count(f"{root}/result", 1)
            await desk.wait_for_message(f"{root}/status", lambda m: m.json()["status"] == "online")

            desk.publish(f"{root}/commands/pause/supervisor-desk-1", {"transaction": "sup"})
            await desk.wait_for_message(f"{root}/replies/pause", transaction_is("sup"))
            # A supervisor cannot send as another supervisor, the rules engine cannot send commands at all
            # (not even under its own name), and a supervisor cannot send inputs: the broker drops them. The
            # rules engine's input, sent after its command on the same connection, is answered, so the
            # command would have been by then.
            desk.publish(f"{root}/commands/void_round/supervisor-desk-2", {"transaction": "posing"})
            desk.publish(f"{root}/inputs/close_betting/supervisor-desk-1", {"transaction": "not-an-input"})
            rules.publish(f"{root}/commands/pause/rules-engine", {"transaction": "forbidden"})
            rules.publish(f"{root}/inputs/close_betting/rules-engine", {"transaction": "allowed"})
            reply = await rules.wait_for_message(f"{root}/replies/#", transaction_is("allowed"))
            assert reply.json()["status"] == "ok"
            # A supervisor cannot pose as the table.
            desk.publish(f"{root}/status", {"status": "offline", "boot": 99})
            desk.publish(f"{root}/commands/resume/supervisor-desk-1", {"transaction": "after"})
            await desk.wait_for_message(f"{root}/replies/resume", lambda m: True)

        assert [(type(c).__name__, c.transaction, c.by) for c in handler.calls] == [
            ("Pause", "sup", "supervisor-desk-1"),
            ("CloseBetting", "allowed", "rules-engine"),
            ("Resume", "after", "supervisor-desk-1"),
        ]
        assert all(m.json().get("boot") != 99 for m in desk.on(f"{root}/status"))
        # Without the right password the table does not get in at all.
        wrong = settings_for(broker, username=table_user, password=pydantic.SecretStr("guess"))
        async with running_bus(wrong, journal, handler, wait_connected=False) as locked_out:
            await asyncio.sleep(0.3)
            assert not locked_out.connected and locked_out.stats.connects == 0
            assert locked_out.stats.reconnects >= 1
    finally:
        journal.close()
        broker.kill()


async def test_tls_with_a_client_certificate(tmp_path: Path) -> None:
    pki = make_test_pki(tmp_path / "pki")
    tls_port = free_port()
    broker = MosquittoBroker(
        require_binary("mosquitto", "/usr/sbin"),
        tmp_path / "broker",
        extra_config=(
            f"listener {tls_port} 127.0.0.1\n"
            f"cafile {pki['ca.crt']}\ncertfile {pki['server.crt']}\nkeyfile {pki['server.key']}\n"
            "require_certificate true\n"
        ),
    )
    broker.start()
    journal = Journal(tmp_path / "journal.sqlite", ROOT)
    try:
        secure = settings_for(
            broker,
            url=f"mqtts://127.0.0.1:{tls_port}",
            tls_ca_file=pki["ca.crt"],
            tls_cert_file=pki["client.crt"],
            tls_key_file=pki["client.key"],
        )
        async with (
            MqttRecorder(broker, [f"{ROOT}/events/#"]) as watcher,  # on the plain listener
            running_bus(secure, journal) as bus,
        ):
            commit(journal, bus, 1)
            (event,) = await watcher.wait_for_count(f"{ROOT}/events/#", 1)
            assert event.json()["data"]["round_id"] == "r1"

        # Without a client certificate the broker refuses the TLS handshake.
        no_cert = settings_for(broker, url=f"mqtts://127.0.0.1:{tls_port}", tls_ca_file=pki["ca.crt"])
        async with running_bus(no_cert, journal, wait_connected=False) as refused:
            await asyncio.sleep(0.5)
            assert not refused.connected and refused.stats.connects == 0
    finally:
        journal.close()
        broker.kill()


# --- who sent it: the topic's user level, never the payload -------------------------------------------


async def test_the_sender_is_the_topics_user_level_never_a_payload_field(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    handler = RecordingHandler()
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/replies/#"]) as desk,
        running_bus(settings_for(mosquitto), journal, handler) as bus,
    ):
        desk.publish(f"{ROOT}/commands/pause/supervisor-desk-2", {"transaction": "ok"})
        # "by" in a payload is refused, whatever it claims (it once voided a round "by system")
        desk.publish(
            f"{ROOT}/commands/void_round/supervisor-desk-2", {"transaction": "claim", "by": "system"}
        )
        # identities the controller records for itself, and the panel's, are not for MQTT senders
        for user in ("system", "device", "replay", "panel", "dealer:7", ""):
            desk.publish(f"{ROOT}/commands/void_round/{user}", {"transaction": f"as-{user}"})
        # the old topic without the user level only gets an error saying where to send
        desk.publish(f"{ROOT}/commands/void_round", {"transaction": "no-user"})
        desk.publish(f"{ROOT}/inputs/close_betting/rules-engine", {"transaction": "input"})
        replies = await desk.wait_for_count(f"{ROOT}/replies/#", 10)
        assert bus.stats.rejected_commands == 8

    bodies = {m.json()["transaction"]: m.json() for m in replies}
    assert bodies["ok"]["status"] == bodies["input"]["status"] == "ok"
    assert bodies["claim"]["status"] == "error"
    assert "must not contain 'by'" in bodies["claim"]["error"]
    for user in ("system", "device", "replay"):
        assert bodies[f"as-{user}"]["error"] == f"identity {user!r} is reserved for the controller itself"
    for user in ("panel", "dealer:7"):
        assert bodies[f"as-{user}"]["error"] == f"identity {user!r} is reserved for the dealer's panel"
    assert bodies["as-"]["error"] == "the sender's identity is empty"
    assert bodies["no-user"]["error"].startswith(f"send commands to {ROOT}/commands/void_round/<user>")
    assert [(type(c).__name__, c.by) for c in handler.calls] == [
        ("Pause", "supervisor-desk-2"),
        ("CloseBetting", "rules-engine"),
    ]


# --- MQTT 5 response topics ----------------------------------------------------------------------------


async def test_a_response_topic_outside_replies_is_not_honoured(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    handler = RecordingHandler()
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/#", "elsewhere/#"], protocol="5") as watcher,
        running_bus(settings_for(mosquitto, protocol="5"), journal, handler) as bus,
    ):
        await watcher.wait_for_count(f"{ROOT}/status", 1)
        for n, response_topic in enumerate(
            [f"{ROOT}/events/round.result", f"{ROOT}/status", "elsewhere/inbox", f"{ROOT}/replies/desk-2"]
        ):
            request = Properties(PacketTypes.PUBLISH)
            request.ResponseTopic = response_topic
            request.CorrelationData = f"c{n}".encode()
            watcher.publish(f"{ROOT}/commands/resume/desk-2", {"transaction": n}, properties=request)
        replies = await watcher.wait_for_count(f"{ROOT}/replies/#", 4)
        assert bus.stats.refused_response_topics == 3

    assert [(m.topic, m.json()["transaction"]) for m in replies] == [
        (f"{ROOT}/replies/resume", 0),
        (f"{ROOT}/replies/resume", 1),
        (f"{ROOT}/replies/resume", 2),
        (f"{ROOT}/replies/desk-2", 3),
    ]
    # the correlation data still comes back, so the requester can match the reply it did get
    assert [getattr(m.properties, "CorrelationData", None) for m in replies] == [b"c0", b"c1", b"c2", b"c3"]
    assert watcher.on(f"{ROOT}/events/#") == [] and watcher.on("elsewhere/#") == []
    assert all("transaction" not in m.json() for m in watcher.on(f"{ROOT}/status"))


# --- unbounded inputs ----------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
async def test_oversized_deep_and_undecodable_payloads_get_an_error_reply(
    mosquitto: MosquittoBroker, journal: Journal, protocol: str
) -> None:
    handler = RecordingHandler()
    settings = settings_for(mosquitto, protocol=protocol, max_payload_bytes=4096)
    topic = f"{ROOT}/commands/pause/desk-2"
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/replies/#"]) as desk,
        running_bus(settings, journal, handler) as bus,
    ):
        desk.publish(topic, json.dumps({"transaction": "big", "reason": "x" * 5000}))
        desk.publish(topic, b"[" * 2000 + b"]" * 2000)  # RecursionError in json.loads
        desk.publish(topic, json.dumps({"transaction": "deep", "reason": [[[[[[[[[["x"]]]]]]]]]]}))
        desk.publish(topic, json.dumps({"transaction": "t" * 65}))
        desk.publish(topic, json.dumps({"transaction": "long-reason", "reason": "r" * 201}))
        desk.publish(topic, b'{"transaction": "latin-1", "reason": "caf\xe9"}')
        desk.publish(topic, json.dumps({"transaction": 2**64}))  # not echoed: beyond the schema's integers
        desk.publish(topic, json.dumps({"transaction": "fine", "reason": "still answering"}))
        replies = await desk.wait_for_count(f"{ROOT}/replies/#", 8)
        assert bus.connected

    bodies = [m.json() for m in replies]
    assert [b["transaction"] for b in bodies] == [None, None, None, None, "long-reason", None, None, "fine"]
    assert [b["status"] for b in bodies] == ["error"] * 7 + ["ok"]
    assert bodies[0]["error"].startswith("payload is 5") and bodies[0]["error"].endswith("the limit is 4096")
    assert bodies[1]["error"] == bodies[2]["error"] == "payload is nested deeper than 8 levels"
    assert bodies[3]["error"].startswith("invalid pause: transaction")
    assert bodies[5]["error"] == "payload is not UTF-8"
    assert bodies[6]["error"].startswith("invalid pause: transaction")
    assert [c.transaction for c in handler.calls] == ["fine"]


async def test_mqtt5_broker_does_not_even_deliver_a_huge_command(
    mosquitto: MosquittoBroker, journal: Journal
) -> None:
    handler = RecordingHandler()
    settings = settings_for(mosquitto, protocol="5", max_payload_bytes=4096)  # packets over 64 KiB: dropped
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/replies/#"]) as desk,
        running_bus(settings, journal, handler),
    ):
        desk.publish(
            f"{ROOT}/commands/pause/desk-2", json.dumps({"transaction": "huge", "reason": "x" * 2**20})
        )
        desk.publish(f"{ROOT}/commands/pause/desk-2", json.dumps({"transaction": "next"}))
        (reply,) = await desk.wait_for_count(f"{ROOT}/replies/#", 1)
        await asyncio.sleep(0.2)
        assert len(desk.on(f"{ROOT}/replies/#")) == 1
    assert reply.json()["transaction"] == "next"
    assert [c.transaction for c in handler.calls] == ["next"]


async def test_replay_runs_beside_the_commands_at_a_bounded_rate(
    mosquitto: MosquittoBroker, journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bus_module, "REPLAY_EVENTS_PER_SECOND", 400.0)
    monkeypatch.setattr(bus_module, "REPLAY_MAX_EVENTS", 500)
    for envelope in journal.append([round_opened(n) for n in range(1, 601)]):
        journal.acknowledge(int(envelope.sequence))  # published long ago
    handler = RecordingHandler()
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/replies/#", f"{ROOT}/events/#"]) as auditor,
        running_bus(settings_for(mosquitto), journal, handler) as bus,
    ):
        started = asyncio.get_running_loop().time()
        auditor.publish(f"{ROOT}/commands/replay_events/auditor", {"transaction": "all", "from_sequence": 1})
        await auditor.wait_for_count(f"{ROOT}/events/#", 10)
        auditor.publish(f"{ROOT}/commands/pause/desk-2", {"transaction": "meanwhile"})
        pause = await auditor.wait_for_message(f"{ROOT}/replies/#", transaction_is("meanwhile"))
        answered_pause = asyncio.get_running_loop().time() - started
        replay = await auditor.wait_for_message(f"{ROOT}/replies/#", transaction_is("all"), timeout=10)
        replay_took = asyncio.get_running_loop().time() - started
        assert bus.stats.replayed == 500

    assert pause.json()["status"] == "ok" and answered_pause < 1.0
    assert auditor.on(f"{ROOT}/replies/#")[0].json()["transaction"] == "meanwhile"
    # capped at REPLAY_MAX_EVENTS, with where to continue; 500 events at 400/s take over a second
    assert replay.json()["data"] == {"count": 500, "next_sequence": 501}
    assert replay_took >= 1.1
    replayed = [int(m.json()["sequence"]) for m in auditor.on(f"{ROOT}/events/#")]
    assert replayed == list(range(1, 501))


# --- events the broker refuses (MQTT 5 PUBACK reason codes) -------------------------------------------

TABLE_GRANTS = """\
user table-t1
topic write {root}/status
topic write {root}/state
topic write {root}/devices/+
topic write {root}/replies/#
topic read {root}/commands/#
topic read {root}/inputs/#
{events}
user auditor
topic read studio/#
"""


async def test_refused_events_stay_in_the_outbox_until_the_broker_takes_them(
    tmp_path: Path, journal: Journal, caplog: pytest.LogCaptureFixture
) -> None:
    acl = tmp_path / "acl"
    acl.write_text(TABLE_GRANTS.format(root=ROOT, events=""))  # the table may not publish events
    broker = secured_broker(tmp_path, {"table-t1": "table-pw", "auditor": "auditor-pw"}, acl)
    broker.start()
    table = settings_for(broker, username="table-t1", password=pydantic.SecretStr("table-pw"), protocol="5")
    auditor = MqttRecorder(
        broker,
        [f"{ROOT}/status", f"{ROOT}/events/#"],
        username="auditor",
        password="auditor-pw",
        client_id="auditor",
        persistent=True,
    )
    try:
        async with auditor, running_bus(table, journal) as bus:
            commit(journal, bus, 1, 2)
            refused = await auditor.wait_for_message(
                f"{ROOT}/status", lambda m: m.json().get("delivery") == "refused"
            )
            commit(journal, bus, 3)
            await wait_until(lambda: bus.stats.refused >= 3, what="a few retries")
            assert [int(e.sequence) for e in journal.outbox()] == [1, 2, 3]
            assert bus.stats.published == 0 and bus.delivery_refused
            assert refused.json() == {
                **refused.json(),
                "status": "online",
                "delivery_reason": "Not authorized",
                "delivery_code": 0x87,
                "refused_sequence": 1,
            }
            # Logged once for the episode, not once per retry.
            assert len([r for r in caplog.records if "refused event" in r.getMessage()]) == 1

            # The studio fixes its ACL; the broker restarts with it.
            acl.write_text(TABLE_GRANTS.format(root=ROOT, events=f"topic write {ROOT}/events/+"))
            broker.stop()
            broker.start()
            received = await auditor.wait_for_count(f"{ROOT}/events/#", 3, timeout=15)
            await wait_until(lambda: not journal.outbox(), what="the outbox to empty")
            await auditor.wait_for_message(
                f"{ROOT}/status", lambda m: m.json()["status"] == "online" and "delivery" not in m.json()
            )
            assert not bus.delivery_refused
    finally:
        broker.kill()
    assert [int(e["sequence"]) for e in first_occurrences(received)] == [1, 2, 3]
    assert any("takes events again" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("protocol", "may_refuse", "warned"), [("3.1.1", True, True), ("3.1.1", False, False), ("5", True, False)]
)
async def test_mqtt311_refusals_are_warned_of_only_where_a_broker_can_refuse(
    mosquitto: MosquittoBroker,
    journal: Journal,
    caplog: pytest.LogCaptureFixture,
    protocol: str,
    may_refuse: bool,
    warned: bool,
) -> None:
    caplog.set_level("INFO", logger="controller.bus")
    bus = TableBus(
        settings_for(mosquitto, protocol=protocol),
        root=ROOT,
        journal=journal,
        handle_command=RecordingHandler(),
        broker_may_refuse=may_refuse,
    )
    task = asyncio.create_task(bus.run())
    try:
        await wait_until(lambda: bus.connected, what="the bus to connect")
    finally:
        await asyncio.wait_for(bus.close(), 10)
        await asyncio.wait_for(task, 10)
    warnings = [r for r in caplog.records if "MQTT 3.1.1" in r.getMessage()]
    assert len(warnings) == int(warned), [r.getMessage() for r in caplog.records]
    assert all(r.levelname == "WARNING" for r in warnings)


# --- a command delivered twice (QoS 1) is applied once -------------------------------------------------


def baccarat_table(tmp_path: Path, broker: MosquittoBroker, port: str) -> TableConfig:
    return TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": "s1", "table_id": "t1", "game": "baccarat", "data_dir": str(tmp_path)},
            "broker": {"url": broker.url, "reconnect_min_seconds": 0.05, "reconnect_max_seconds": 0.2},
            "devices": {"shoe": {"protocol": "shoe-line", "port": port}},
            "game": {"betting_seconds": 60, "round_gap_seconds": 0.5},
        },
        environ={},
        source="test",
    )


async def test_a_command_delivered_twice_is_applied_once_even_across_a_restart(
    mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    shoe = ShoeSimulator(cards=["9S", "8D", "KC", "5H"] * 4, cut_position=None)
    config = baccarat_table(tmp_path, mosquitto, await shoe.start_pty(str(tmp_path / "shoe.pty")))
    manual_card = f"{ROOT}/commands/manual_card"
    try:
        async with (
            MqttRecorder(mosquitto, [f"{ROOT}/replies/#", f"{ROOT}/events/card.dealt"]) as desk,
            running_service(config) as service,
        ):
            await wait_until(lambda: service.public_state()["round_phase"] == "betting_open", timeout=10)
            desk.publish(f"{ROOT}/inputs/close_betting/rules-engine", {"transaction": "close"})
            await desk.wait_for_message(f"{ROOT}/replies/#", transaction_is("close"))

            async def card_not_read() -> None:
                # a card is entered by hand only for one the reader could not read
                await wait_until(lambda: not shoe.locked, what="the shoe's gate to open")
                shoe.force_noread()
                assert shoe.draw()
                await wait_until(lambda: service.public_state()["game_state"]["awaiting_rescan"])

            await card_not_read()
            # QoS 1 delivers the same command twice: one card, two identical replies
            desk.publish(f"{manual_card}/desk-2", {"transaction": "m1", "card": "QS"})
            desk.publish(f"{manual_card}/desk-2", {"transaction": "m1", "card": "QS"})
            first, again = await desk.wait_for_count(f"{ROOT}/replies/manual_card", 2)
            await card_not_read()
            # the same transaction from another sender is another command; reused for another command, refused
            desk.publish(f"{manual_card}/desk-1", {"transaction": "m1", "card": "JH"})
            desk.publish(f"{ROOT}/commands/pause/desk-2", {"transaction": "m1"})
            other = await desk.wait_for_count(f"{ROOT}/replies/manual_card", 3)
            reused = await desk.wait_for_message(f"{ROOT}/replies/pause", transaction_is("m1"))
            await desk.wait_for_count(f"{ROOT}/events/card.dealt", 2)
            assert service.public_state()["game_state"]["player"] == ["QS"]
            assert service.public_state()["game_state"]["banker"] == ["JH"]

        assert first.payload == again.payload and first.json()["status"] == "ok"
        assert other[2].json()["status"] == "ok"
        assert reused.json()["error"] == "transaction 'm1' was already used for manual_card; use a new one"

        # After a restart the repeat is still recognised: the reply was journaled with the card's event.
        async with (
            MqttRecorder(mosquitto, [f"{ROOT}/replies/#"]) as desk,
            running_service(config) as service,
        ):
            desk.publish(f"{manual_card}/desk-2", {"transaction": "m1", "card": "QS"})
            (late,) = await desk.wait_for_count(f"{ROOT}/replies/manual_card", 1)
            assert service.public_state()["game_state"]["player"] == ["QS"]
        assert late.payload == first.payload
        journal = Journal(config.table.data_dir / "t1-journal.sqlite3", ROOT)
        try:
            dealt = [e.data["card"] for e in journal.read(1) if e.type == "card.dealt"]
        finally:
            journal.close()
        assert dealt == ["QS", "JH"]
    finally:
        await shoe.stop()
