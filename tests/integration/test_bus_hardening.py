"""What a sender allowed on the broker must not be able to do to a table, against a real Mosquitto running the
shipped example config (`examples/mosquitto/`): knock it off the broker with a reply too large for the broker,
take over its session with its client id, or end its bus with a number the journal cannot hold."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import string
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pydantic
import pytest

from controller.bus import TableBus
from controller.commands import Command
from controller.config import BrokerSettings
from controller.events import RoundOpened, make_event
from controller.journal import Journal
from controller.metrics import TableMetrics
from controller.service import TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import (
    ExampleBroker,
    MosquittoBroker,
    MqttRecorder,
    TakeoverRelay,
    mqtt5_connect,
    wait_until,
)
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers.paths import REPO

pytestmark = pytest.mark.integration

EXAMPLE = TABLE_CONFIGS.load(REPO / "examples" / "baccarat.toml", environ={})
ROOT = EXAMPLE.topic_root
TABLE_USER = EXAMPLE.broker.username or ""
#: the id the service gives itself (TableService): predictable from the studio and table ids
TABLE_CLIENT_ID = f"tablectl-{EXAMPLE.table.studio_id}-{EXAMPLE.table.table_id}"
PASSWORDS = {TABLE_USER: "table-pw", "rules-engine": "rules-pw", "supervisor-desk-1": "desk-pw"}


async def answer(command: Command) -> dict[str, Any]:
    return {"accepted": type(command).__name__}


@pytest.fixture
def example_broker(tmp_path: Path) -> Iterator[ExampleBroker]:
    broker = ExampleBroker(tmp_path / "example", PASSWORDS)
    broker.start()
    try:
        yield broker
    finally:
        broker.kill()


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    journal = Journal(tmp_path / "journal.sqlite", ROOT)
    yield journal
    journal.close()


def table_settings(broker: MosquittoBroker, **fields: Any) -> BrokerSettings:
    return BrokerSettings(
        url=broker.url,
        username=TABLE_USER,
        password=pydantic.SecretStr(PASSWORDS[TABLE_USER]),
        reconnect_min_seconds=0.05,
        reconnect_max_seconds=0.2,
        **fields,
    )


@contextlib.asynccontextmanager
async def running_table(settings: BrokerSettings, journal: Journal) -> AsyncIterator[TableBus]:
    bus = TableBus(settings, root=ROOT, journal=journal, handle_command=answer, client_id=TABLE_CLIENT_ID)
    task = asyncio.create_task(bus.run())
    try:
        await wait_until(lambda: bus.connected, what="the table to connect")
        yield bus
    finally:
        await asyncio.wait_for(bus.close(), 10)
        await asyncio.wait_for(task, 10)


def as_user(broker: MosquittoBroker, user: str, topics: list[str], **kwargs: Any) -> MqttRecorder:
    return MqttRecorder(broker, topics, username=user, password=PASSWORDS[user], protocol="5", **kwargs)


def statuses(recorder: MqttRecorder) -> list[str]:
    return [m.json()["status"] for m in recorder.on(f"{ROOT}/status")]


def many_unknown_keys(count: int) -> dict[str, Any]:
    """`count` distinct keys, as short as they come (1, 2, then 3 characters): about 7.5 bytes a key."""
    alphabet = string.ascii_letters + string.digits
    keys = list(alphabet) + [a + b for a in alphabet for b in alphabet]
    keys += [a + b + c for a in alphabet for b in alphabet for c in alphabet]
    keys = [key for key in keys if key != "by"][:count]
    return {"transaction": "many-keys", **dict.fromkeys(keys, 0)}


async def test_a_reply_listing_thousands_of_problems_stays_small_and_the_table_on_the_broker(
    example_broker: ExampleBroker, journal: Journal, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="controller")
    settings = table_settings(example_broker)
    payload = json.dumps(many_unknown_keys(8617), separators=(",", ":"))
    # under the table's payload limit, so it is parsed; each key is one validation problem
    assert 60_000 < len(payload) < settings.max_payload_bytes
    async with (
        as_user(example_broker, "rules-engine", [f"{ROOT}/replies/#", f"{ROOT}/status"]) as rules,
        running_table(settings, journal) as bus,
    ):
        await rules.wait_for_message(f"{ROOT}/status", lambda m: m.json()["status"] == "online")
        rules.publish(f"{ROOT}/inputs/close_betting/rules-engine", payload)
        rules.publish(f"{ROOT}/inputs/close_betting/rules-engine", {"transaction": "after"})
        reply = await rules.wait_for_message(
            f"{ROOT}/replies/#", lambda m: m.json()["transaction"] == "many-keys"
        )
        after = await rules.wait_for_message(
            f"{ROOT}/replies/#", lambda m: m.json()["transaction"] == "after"
        )
        await asyncio.sleep(0.3)  # a disconnect would show as `offline` and a second `online` by now
        assert (bus.stats.connects, bus.stats.reconnects) == (1, 0)
        assert statuses(rules) == ["online"]

    error = reply.json()["error"]
    assert len(reply.payload) < 1024, len(reply.payload)
    assert error.startswith("invalid close_betting: 8617 problems: ") and error.endswith("; and 8614 more")
    assert after.json()["status"] == "ok"
    assert bus.stats.rejected_commands == 1
    longest = max(len(record.getMessage()) for record in caplog.records)
    assert longest < 2000, longest


async def test_a_key_or_name_of_any_length_is_quoted_as_an_excerpt(
    mosquitto: MosquittoBroker, journal: Journal, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="controller")
    # packets up to 16 KiB reach the table (16 times its payload limit): a 10,000-character name does
    settings = BrokerSettings(url=mosquitto.url, max_payload_bytes=1024)
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/replies/#"]) as desk,
        running_table(settings, journal) as bus,
    ):
        desk.publish(f"{ROOT}/commands/pause/desk-1", {"transaction": "key", "k" * 900: 1})
        desk.publish(f"{ROOT}/commands/{'n' * 10_000}/desk-1", {"transaction": "name"})
        desk.publish(f"{ROOT}/commands/{'n' * 10_000}", {"transaction": "no-user"})
        replies = await desk.wait_for_count(f"{ROOT}/replies/#", 3)
        assert bus.stats.connects == 1

    assert [m.topic for m in replies] == [f"{ROOT}/replies/pause"] + [f"{ROOT}/replies/unknown"] * 2
    for message in replies:
        assert len(message.payload) < 500, message.payload
        assert message.json()["status"] == "error"
    assert "k" * 40 + "...: Extra inputs are not permitted" in replies[0].json()["error"]
    assert replies[1].json()["error"].startswith("unknown command '" + "n" * 40 + "...'")
    assert max(len(record.getMessage()) for record in caplog.records) < 2000


async def test_replay_events_beyond_the_journals_integers_is_refused_and_the_bus_stays(
    example_broker: ExampleBroker, journal: Journal
) -> None:
    journal.append(
        [
            make_event("round.opened", RoundOpened(game="baccarat", round_id=f"r{n}", round_number_in_shoe=n,
                                                   betting_closes_at=None), time=1_700_000_000.0 + n)
            for n in (1, 2, 3)
        ]
    )  # fmt: skip
    replay = f"{ROOT}/commands/replay_events/supervisor-desk-1"
    async with (
        as_user(example_broker, "supervisor-desk-1", [f"{ROOT}/replies/#", f"{ROOT}/status"]) as desk,
        running_table(table_settings(example_broker), journal) as bus,
    ):
        desk.publish(replay, {"transaction": "2^63", "from_sequence": 2**63})
        desk.publish(replay, {"transaction": "to 2^63", "from_sequence": 1, "to_sequence": 2**63})
        desk.publish(replay, '{"transaction": "1e300", "from_sequence": 1e300}')
        desk.publish(replay, {"transaction": "fraction", "from_sequence": 1.5})
        desk.publish(replay, {"transaction": "fine", "from_sequence": 1})
        replies = await desk.wait_for_count(f"{ROOT}/replies/replay_events", 5)
        assert (bus.stats.connects, bus.stats.reconnects) == (1, 0)
        assert statuses(desk) == ["online"]

    bodies = {m.json()["transaction"]: m.json() for m in replies}
    for transaction, field in (
        ("2^63", "from_sequence"),
        ("to 2^63", "to_sequence"),
        ("1e300", "from_sequence"),
    ):
        assert bodies[transaction]["error"] == (
            f"invalid replay_events: {field}: Input should be less than or equal to 9223372036854775807"
        )
    assert bodies["fraction"]["error"].startswith("invalid replay_events: from_sequence: Input should be")
    assert bodies["fine"] == {"transaction": "fine", "status": "ok", "data": {"count": 3}}
    assert bus.stats.rejected_commands == 4


async def test_a_request_that_fails_inside_the_table_is_answered_and_the_bus_stays(
    mosquitto: MosquittoBroker, journal: Journal, caplog: pytest.LogCaptureFixture
) -> None:
    def broken_read(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.DatabaseError("database disk image is malformed " + "x" * 5000)

    journal.read = broken_read  # type: ignore[method-assign]
    async with (
        MqttRecorder(mosquitto, [f"{ROOT}/replies/#"]) as desk,
        running_table(BrokerSettings(url=mosquitto.url), journal) as bus,
    ):
        desk.publish(f"{ROOT}/commands/replay_events/desk-1", {"transaction": "r", "from_sequence": 1})
        desk.publish(f"{ROOT}/commands/pause/desk-1", {"transaction": "p"})
        replies = await desk.wait_for_count(f"{ROOT}/replies/#", 2)
        assert (bus.stats.connects, bus.stats.reconnects) == (1, 0)

    bodies = {m.json()["transaction"]: m.json() for m in replies}
    assert bodies["r"] == {"transaction": "r", "status": "error", "error": "internal error"}
    assert bodies["p"]["status"] == "ok"
    assert (bus.stats.internal_errors, bus.stats.rejected_commands) == (1, 1)
    (logged,) = [r.getMessage() for r in caplog.records if "replay_events" in r.getMessage()]
    assert "DatabaseError: database disk image is malformed" in logged and len(logged) < 3000


# --- client ids ---------------------------------------------------------------------------------------


async def test_the_example_broker_lets_nobody_take_over_a_tables_session(
    example_broker: ExampleBroker, journal: Journal
) -> None:
    async with (
        as_user(example_broker, "supervisor-desk-1", [f"{ROOT}/status"]) as desk,
        running_table(table_settings(example_broker), journal) as bus,
    ):
        await desk.wait_for_message(f"{ROOT}/status", lambda m: m.json()["status"] == "online")
        for _ in range(3):
            # the rules engine connects with the table's (predictable) client id, and is let in
            code, intruder = await mqtt5_connect(
                example_broker.port,
                TABLE_CLIENT_ID,
                username="rules-engine",
                password=PASSWORDS["rules-engine"],
            )
            assert code == 0
            await asyncio.sleep(0.3)
            intruder.close()
        assert bus.connected
        assert (bus.stats.connects, bus.stats.reconnects, bus.stats.sessions_taken_over) == (1, 0, 0)
        assert statuses(desk) == ["online"]


def shoe_table(tmp_path: Path, url: str, port: str) -> Any:
    return TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": EXAMPLE.table.studio_id, "table_id": EXAMPLE.table.table_id,
                      "game": "baccarat", "data_dir": str(tmp_path / "data")},
            "broker": {"url": url, "reconnect_min_seconds": 0.05, "reconnect_max_seconds": 0.2},
            "devices": {"shoe": {"protocol": "shoe-line", "port": port}},
        },
        environ={},
    )  # fmt: skip


async def test_a_session_taken_over_is_logged_counted_and_told_from_an_outage(
    mosquitto: MosquittoBroker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A broker that does not tie client ids to users (the test fixture's): the takeover happens, and the
    # table must tell it for what it is. Mosquitto 2.0.11 only closes the connection; the relay adds the
    # DISCONNECT 0x8E that later versions (and other MQTT 5 brokers) send.
    caplog.set_level(logging.INFO, logger="controller")
    shoe = ShoeSimulator(cards=["9S", "8D"] * 8, cut_position=None)
    relay = TakeoverRelay(mosquitto)
    port = await shoe.start_pty(str(tmp_path / "shoe.pty"))
    service = TableService(shoe_table(tmp_path, relay.url, port))
    bus = service.bus
    metrics = TableMetrics(service)
    async with relay:
        running = asyncio.create_task(service.run())
        try:
            await wait_until(lambda: bus.connected, timeout=10, what="the table to connect")
            # a broker outage first: a lost connection, not a takeover
            mosquitto.stop()
            mosquitto.start()
            await wait_until(lambda: bus.stats.connects == 2, timeout=10, what="the table to reconnect")
            assert bus.stats.sessions_taken_over == 0
            for n in range(1, 4):
                relay.expect_takeover()
                code, intruder = await mqtt5_connect(mosquitto.port, TABLE_CLIENT_ID)
                assert code == 0
                await wait_until(lambda: bus.stats.sessions_taken_over == n, what=f"takeover {n}")  # noqa: B023
                intruder.close()
                await wait_until(lambda: bus.connected, what="the table to reconnect")
            exposition = metrics.exposition().decode()
        finally:
            service.stop()
            await asyncio.wait_for(running, 10)
            await shoe.stop()

    messages = [r.getMessage() for r in caplog.records]
    taken = [r for r in caplog.records if "session" in r.getMessage() and "client id" in r.getMessage()]
    assert [r.levelname for r in taken] == ["WARNING", "ERROR", "ERROR"], messages
    assert "session taken over" in taken[0].getMessage() and TABLE_CLIENT_ID in taken[0].getMessage()
    assert "3 times" in taken[2].getMessage() and "use_username_as_clientid" in taken[2].getMessage()
    # the outage was reported as one, the takeovers were not
    assert len([m for m in messages if m.startswith("MQTT broker ")]) == 1, messages
    labels = f'studio="{EXAMPLE.table.studio_id}",table="{EXAMPLE.table.table_id}"'
    assert f"tablectl_broker_session_taken_over_total{{{labels}}} 3.0" in exposition
    assert f"tablectl_broker_reconnects_total{{{labels}}} 4.0" in exposition


# --- the security officer's script ------------------------------------------------------------------------


async def test_the_attack_script_holds_on_the_example_broker_and_reports_a_takeover_elsewhere(
    example_broker: ExampleBroker,
    mosquitto: MosquittoBroker,
    journal: Journal,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bench import attacks_bus

    monkeypatch.setattr(attacks_bus, "SETTLE_SECONDS", 0.5)  # the test table reconnects within 0.2 s
    table = ["--studio", EXAMPLE.table.studio_id, "--table", EXAMPLE.table.table_id, "--timeout", "2"]
    rules = ["--username", "rules-engine", "--password", PASSWORDS["rules-engine"]]
    async with running_table(table_settings(example_broker), journal) as bus:
        held = await attacks_bus.run_attacks(
            attacks_bus.parse_args(["--broker", example_broker.url, *rules, *table])
        )
        assert (bus.stats.connects, bus.stats.reconnects) == (1, 0)
    assert [(name.split(",")[0], ok) for name, ok, _ in held] == [
        ("attack 1", True),
        ("attack 5", True),
        ("attack 2", True),
    ], held
    assert "8617 problems" in held[0][2]
    assert "ACL keeps this principal from sending commands" in held[1][2]

    # A broker that does not tie client ids to users, nor confine commands (the test fixture's): the
    # replay reaches the table and is refused, the takeover knocks the table off, and the script says so.
    other = Journal(tmp_path / "other.sqlite", ROOT)
    try:
        plain = BrokerSettings(url=mosquitto.url, reconnect_min_seconds=0.05, reconnect_max_seconds=0.2)
        async with running_table(plain, other):
            found = await attacks_bus.run_attacks(attacks_bus.parse_args(["--broker", mosquitto.url, *table]))
    finally:
        other.close()
    assert [ok for _, ok, _ in found] == [True, True, False], found
    assert found[1][2].startswith("refused: invalid replay_events: from_sequence")
    assert "the table reconnected" in found[2][2]
    # the table has stopped (its status is `offline`): nothing to attack, exit code 2
    assert await asyncio.to_thread(attacks_bus.main, ["--broker", mosquitto.url, *table]) == 2


async def test_the_supervisors_console_works_on_the_example_broker(
    example_broker: ExampleBroker, journal: Journal
) -> None:
    # use_username_as_clientid replaces the console's own client id (tablectl-console-<user>-<random>) with
    # its user name: nothing of the console depends on the id it sent.
    from controller.console.link import StudioLink
    from controller.console.model import StudioModel

    link = StudioLink(
        BrokerSettings(url=example_broker.url),
        StudioModel(EXAMPLE.table.studio_id),
        username="supervisor-desk-1",
        password=PASSWORDS["supervisor-desk-1"],
    )
    async with running_table(table_settings(example_broker), journal) as bus:
        await link.start()
        try:
            reply = await link.send(EXAMPLE.table.table_id, "pause", {"reason": "console check"})
        finally:
            await link.close()
        assert bus.stats.connects == 1
    assert reply["status"] == "ok", reply
