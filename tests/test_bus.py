"""TableBus against a real Mosquitto: retained topics, the outbox, the Last Will, commands and replies."""

from __future__ import annotations

import asyncio
import contextlib
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

from controller.bus import TableBus
from controller.commands import CloseBetting, Command, CommandError, Pause, VoidRound
from controller.config import BrokerSettings
from controller.events import Envelope, Event, RoundOpened, make_event
from controller.journal import Journal
from tests.mosquitto import MosquittoBroker, MqttRecorder, Received, free_port, require_binary, wait_until

ROOT = "studio/s1/table/t1"
REPO = Path(__file__).resolve().parent.parent

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
    settings: BrokerSettings, journal: Journal, handler: Handler | None = None, *, wait_connected: bool = True
) -> AsyncIterator[TableBus]:
    bus = TableBus(settings, root=ROOT, journal=journal, handle_command=handler or RecordingHandler())
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


# --- settings ----------------------------------------------------------------------------------------


def test_settings_read_host_port_and_tls_from_the_url() -> None:
    plain = BrokerSettings()
    assert (plain.host, plain.port, plain.tls) == ("127.0.0.1", 1883, False)
    secure = BrokerSettings(url="mqtts://broker.example", tls_ca_file=Path("ca.pem"))
    assert (secure.host, secure.port, secure.tls) == ("broker.example", 8883, True)
    assert BrokerSettings(url="mqtt://broker.studio.example:1884").port == 1884


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"url": "http://broker:1883"}, "mqtt:// or mqtts://"),
        ({"url": "mqtt://"}, "names no host"),
        ({"url": "mqtt://broker:99999"}, "Port out of range"),
        ({"url": "mqtt://broker", "tls_ca_file": "ca.pem"}, "need an mqtts://"),
        ({"url": "mqtts://broker", "tls_cert_file": "c.pem"}, "both tls_cert_file and tls_key_file"),
        ({"reconnect_min_seconds": 5, "reconnect_max_seconds": 1}, "reconnect_max_seconds"),
        ({"hostname": "broker"}, "Extra inputs are not permitted"),
    ],
)
def test_settings_reject_what_cannot_work(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(pydantic.ValidationError, match=problem):
        BrokerSettings(**fields)


def test_settings_keep_the_password_out_of_reprs() -> None:
    settings = BrokerSettings(username="table", password=pydantic.SecretStr("hunter2"))
    assert "hunter2" not in repr(settings)
    assert "hunter2" not in settings.model_dump_json()


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


async def test_last_will_says_offline_when_the_controller_is_killed(
    mosquitto: MosquittoBroker, tmp_path: Path
) -> None:
    journal_path = tmp_path / "table.sqlite"

    def start_controller(append: int) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-m", "tests.bus_process", "--url", mosquitto.url, "--root", ROOT,
                   "--journal", str(journal_path), "--append", str(append)]  # fmt: skip
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
        panel.publish(f"{ROOT}/commands/pause", b"not json {")
        panel.publish(f"{ROOT}/commands/pause", b"\xff\xfe\x00")
        panel.publish(f"{ROOT}/commands/pause", b'["a", "list"]')
        panel.publish(f"{ROOT}/commands/launch_rockets", {"transaction": "t4"})
        panel.publish(f"{ROOT}/commands/pause", {"transaction": 5, "reason": ""})
        panel.publish(f"{ROOT}/commands/pause", {"transaction": "t6", "colour": "red"})
        panel.publish(f"{ROOT}/inputs/pause", {"transaction": "t7"})  # a command is not an input
        panel.publish(f"{ROOT}/commands/replay_events", {"transaction": "t8", "from_sequence": 0})
        panel.publish(f"{ROOT}/commands/pause", {"transaction": "t9", "reason": "smoke in the pit"})
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
    assert bodies[0]["error"] == bodies[1]["error"] == "payload is not valid JSON"
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
        panel.publish(f"{ROOT}/commands/void_round", {"transaction": 1})
        panel.publish(f"{ROOT}/commands/pause", {"transaction": 2})
        panel.publish(f"{ROOT}/inputs/close_betting", {"transaction": 3, "by": "rules-engine"})
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
        supervisor.publish(f"{ROOT}/commands/void_round", {"transaction": "stale"}, retain=True)
        await asyncio.sleep(0.05)
        async with running_bus(settings_for(mosquitto), journal, handler) as bus:
            supervisor.publish(f"{ROOT}/commands/resume", {"transaction": "live"})
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
            supervisor.publish(f"{ROOT}/commands/rebirth", {"transaction": "rb-1"})
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
            f"{ROOT}/commands/replay_events", {"transaction": "gap", "from_sequence": 2, "to_sequence": 3}
        )
        (reply,) = await auditor.wait_for_count(f"{ROOT}/replies/#", 1)
        assert reply.json() == {"transaction": "gap", "status": "ok", "data": {"count": 2}}
        auditor.publish(f"{ROOT}/commands/replay_events", {"transaction": "tail", "from_sequence": 4})
        auditor.publish(f"{ROOT}/commands/replay_events", {"transaction": "none", "from_sequence": 50})
        auditor.publish(
            f"{ROOT}/commands/replay_events", {"transaction": "bad", "from_sequence": 3, "to_sequence": 2}
        )
        replies = await auditor.wait_for_count(f"{ROOT}/replies/#", 4)
        replayed = auditor.on(f"{ROOT}/events/#")
        assert bus.stats.replayed == 3

    assert [m.json()["data"] for m in replies[1:3]] == [{"count": 1}, {"count": 0}]
    assert replies[3].json() == {
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
        panel.publish(f"{ROOT}/commands/pause", {"reason": "dealer break"}, properties=request)
        # A request without a response topic still answers on replies/<name>; it also proves, arriving
        # second, that the first reply went nowhere else.
        panel.publish(f"{ROOT}/commands/resume", {"transaction": "r"})
        replies = await panel.wait_for_count(f"{ROOT}/replies/#", 2)

    assert [m.topic for m in replies] == [response_topic, f"{ROOT}/replies/resume"]
    assert replies[0].json() == {"transaction": None, "status": "ok", "data": {"accepted": "Pause"}}
    assert replies[0].properties is not None
    assert getattr(replies[0].properties, "CorrelationData", None) == b"\x00req-42"
    assert not hasattr(replies[1].properties, "CorrelationData")


# --- security: the example ACL, username/password and TLS ---------------------------------------------


async def test_example_acl_lets_each_identity_do_only_its_job(tmp_path: Path) -> None:
    passwd = require_binary("mosquitto_passwd", "/usr/bin")
    password_file = tmp_path / "passwd"
    users = {"table-s1-t1": "table-secret", "supervisor": "super-secret", "rules-engine": "rules-secret"}
    for n, (user, password) in enumerate(users.items()):
        flags = ["-c"] if n == 0 else []
        subprocess.run([passwd, "-b", *flags, str(password_file), user, password], check=True)
    acl = REPO / "examples" / "mosquitto" / "acl"
    broker = MosquittoBroker(
        require_binary("mosquitto", "/usr/sbin"),
        tmp_path / "broker",
        extra_config=f"allow_anonymous false\npassword_file {password_file}\nacl_file {acl}\n",
    )
    broker.start()
    journal = Journal(tmp_path / "journal.sqlite", ROOT)
    handler = RecordingHandler()
    try:
        table = settings_for(broker, username="table-s1-t1", password=pydantic.SecretStr("table-secret"))
        supervisor = MqttRecorder(broker, ["studio/#"], username="supervisor", password="super-secret")
        rules = MqttRecorder(
            broker,
            [f"{ROOT}/events/#", f"{ROOT}/replies/#"],
            username="rules-engine",
            password="rules-secret",
        )
        async with supervisor, rules, running_bus(table, journal, handler) as bus:
            commit(journal, bus, 1)
            await rules.wait_for_count(f"{ROOT}/events/#", 1)
            await supervisor.wait_for_message(f"{ROOT}/status", lambda m: m.json()["status"] == "online")

            supervisor.publish(f"{ROOT}/commands/pause", {"transaction": "sup", "by": "supervisor"})
            await supervisor.wait_for_message(f"{ROOT}/replies/pause", transaction_is("sup"))
            # The rules engine may send inputs but not commands: the broker drops its pause. Its input,
            # sent after it on the same connection, is answered, so the pause would have been by then.
            rules.publish(f"{ROOT}/commands/pause", {"transaction": "forbidden", "by": "rules-engine"})
            rules.publish(f"{ROOT}/inputs/close_betting", {"transaction": "allowed", "by": "rules-engine"})
            reply = await rules.wait_for_message(f"{ROOT}/replies/#", transaction_is("allowed"))
            assert reply.json()["status"] == "ok"
            # A supervisor cannot pose as the table.
            supervisor.publish(f"{ROOT}/status", {"status": "offline", "boot": 99})
            supervisor.publish(f"{ROOT}/commands/resume", {"transaction": "after"})
            await supervisor.wait_for_message(f"{ROOT}/replies/resume", lambda m: True)

        assert [(type(c).__name__, c.transaction) for c in handler.calls] == [
            ("Pause", "sup"),
            ("CloseBetting", "allowed"),
            ("Resume", "after"),
        ]
        assert all(m.json().get("boot") != 99 for m in supervisor.on(f"{ROOT}/status"))
        # Without the right password the table does not get in at all.
        wrong = settings_for(broker, username="table-s1-t1", password=pydantic.SecretStr("guess"))
        async with running_bus(wrong, journal, handler, wait_connected=False) as locked_out:
            await asyncio.sleep(0.3)
            assert not locked_out.connected and locked_out.stats.connects == 0
            assert locked_out.stats.reconnects >= 1
    finally:
        journal.close()
        broker.kill()


def make_test_pki(directory: Path) -> dict[str, Path]:
    """A throwaway CA, a server certificate for 127.0.0.1 and a client certificate (openssl CLI)."""
    openssl = require_binary("openssl", "/usr/bin")
    directory.mkdir()
    files = {name: directory / name for name in ("ca.key", "ca.crt", "server.key", "server.crt",
                                                  "client.key", "client.crt")}  # fmt: skip

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True, cwd=directory)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=test CA")
    (directory / "server.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    (directory / "client.ext").write_text("extendedKeyUsage=clientAuth\n")
    for role in ("server", "client"):
        run("req", *ec, "-keyout", f"{role}.key", "-out", f"{role}.csr", "-subj", f"/CN={role}")
        run("x509", "-req", "-in", f"{role}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", f"{role}.crt", "-days", "2", "-extfile", f"{role}.ext")  # fmt: skip
    return files


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
