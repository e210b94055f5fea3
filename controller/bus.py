"""The table's MQTT side: retained status/state/devices, the event outbox, commands and inputs.

What it guarantees (see the MQTT contract):
- `<root>/status` is retained `online` with the journal's boot counter on every (re)connect; the Last Will
  sets `offline` with the same counter when the controller dies, and `close()` sets it when it stops.
- Events leave the journal's outbox in sequence order, one at a time, QoS 1; an event is acknowledged in the
  journal only after the broker's PUBACK. A broker outage or a controller restart delays events, never loses
  or reorders them; a reconnect may repeat the last one (same `id`).
- Every inbound command/input gets exactly one reply; a malformed one changes nothing and never stops the bus.

Unlike a fire-and-forget publish, nothing here is dropped while disconnected: events wait in the journal, the
retained topics are republished from the latest values on the next connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.commands import BUS_COMMANDS, Command, CommandError, ReplayEvents, parse_command
from controller.config import BrokerSettings
from controller.events import Envelope, iso_ms
from controller.journal import Journal

logger = logging.getLogger(__name__)

#: how long to wait for the broker to acknowledge a publish or a subscription before giving up on the link
ACK_TIMEOUT_SECONDS = 10.0
#: how long a stopping bus waits to say `offline` before disconnecting anyway
OFFLINE_TIMEOUT_SECONDS = 2.0
#: events read from the journal per round trip to SQLite
OUTBOX_BATCH = 100
#: a server-side failure (MQTT SUBACK/PUBACK reason codes from 0x80 on)
_FAILURE_CODE = 0x80


@dataclass
class BusStats:
    published: int = 0  # events from the outbox acknowledged by the broker
    replayed: int = 0  # events re-sent by replay_events
    replies: int = 0
    rejected_commands: int = 0  # error replies, whatever the cause
    internal_errors: int = 0  # handle_command raised something other than CommandError
    connects: int = 0
    reconnects: int = 0  # connection attempts that failed or connections that were lost


class _StopRequested(Exception):
    """Raised inside the connection's task group to end it when close() is called."""


CommandHandler = Callable[[Command], Awaitable[dict[str, Any]]]


class TableBus:
    def __init__(
        self,
        settings: BrokerSettings,
        *,
        root: str,
        journal: Journal,
        handle_command: CommandHandler,
        client_id: str | None = None,
    ) -> None:
        self._settings = settings
        self._root = root.rstrip("/")
        self._journal = journal
        self._handle_command = handle_command
        self._client_id = client_id or settings.client_id or "tablectl-" + self._root.replace("/", "-")
        self.stats = BusStats()

        self._state: bytes | None = None
        self._state_dirty = False
        self._devices: dict[str, bytes] = {}
        self._dirty_devices: set[str] = set()
        self._retained_changed = asyncio.Event()
        self._outbox_changed = asyncio.Event()

        self._stop_requested = asyncio.Event()
        self._finished = asyncio.Event()
        self._running = False
        self._connected = False
        self._since = ""  # when the current connection was established (ISO, ms)

    # --- public API --------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    def events_committed(self) -> None:
        """Wake the outbox publisher; call after Journal.append (from the event loop's thread)."""
        self._outbox_changed.set()

    def set_state(self, state: dict[str, Any]) -> None:
        """The latest full table state, retained on `<root>/state`. Only the latest is sent."""
        self._state = _to_json(state)
        self._state_dirty = True
        self._retained_changed.set()

    def set_device(self, name: str, health: dict[str, Any]) -> None:
        """One device's health, retained on `<root>/devices/<name>`."""
        if not name or any(c in name for c in "/+#"):
            raise ValueError(f"device name {name!r} must be one non-empty MQTT topic level")
        self._devices[name] = _to_json(health)
        self._dirty_devices.add(name)
        self._retained_changed.set()

    async def run(self) -> None:
        """Stay connected until close() or cancellation, reconnecting with backoff."""
        if self._running:
            raise RuntimeError("TableBus.run() is already running")
        self._running = True
        self._finished.clear()
        delay = self._settings.reconnect_min_seconds
        try:
            while not self._stop_requested.is_set():
                connects_before = self.stats.connects
                try:
                    await self._attempt_connection()
                except* aiomqtt.MqttError as group:
                    logger.warning(
                        "MQTT broker %s: %s", self._settings.url, "; ".join(str(e) for e in group.exceptions)
                    )
                except* Exception as group:
                    # A bug of ours must not stop the table from reporting: log it and connect afresh.
                    logger.error("MQTT bus failed, reconnecting", exc_info=group)
                if self._stop_requested.is_set():
                    break
                if self.stats.connects > connects_before:
                    delay = self._settings.reconnect_min_seconds
                self.stats.reconnects += 1
                # Jitter, so a studio full of tables does not reconnect in lockstep after a broker restart.
                pause = delay * random.uniform(0.8, 1.2)
                logger.info("reconnecting to the MQTT broker in %.1f s", pause)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop_requested.wait(), pause)
                delay = min(delay * 2, self._settings.reconnect_max_seconds)
        finally:
            self._running = False
            self._connected = False
            self._finished.set()

    async def close(self) -> None:
        """Say `offline` (retained, same boot) and disconnect. A closed bus stays closed."""
        self._stop_requested.set()
        if self._running:
            await self._finished.wait()

    # --- topics and payloads -----------------------------------------------------------------------

    def _topic(self, *levels: str) -> str:
        return "/".join((self._root, *levels))

    def _offline_payload(self) -> bytes:
        return _to_json({"status": "offline", "boot": self._journal.boot})

    def _online_payload(self) -> bytes:
        return _to_json({"status": "online", "boot": self._journal.boot, "since": self._since})

    def _new_client(self) -> aiomqtt.Client:
        settings = self._settings
        tls_params = None
        if settings.tls:
            tls_params = aiomqtt.TLSParameters(
                ca_certs=_path_or_none(settings.tls_ca_file),
                certfile=_path_or_none(settings.tls_cert_file),
                keyfile=_path_or_none(settings.tls_key_file),
            )
        return aiomqtt.Client(
            settings.host,
            settings.port,
            username=settings.username,
            password=settings.password.get_secret_value() if settings.password else None,
            identifier=self._client_id,
            protocol=aiomqtt.ProtocolVersion.V5 if settings.protocol == "5" else aiomqtt.ProtocolVersion.V311,
            will=aiomqtt.Will(self._topic("status"), self._offline_payload(), qos=1, retain=True),
            keepalive=settings.keepalive,
            timeout=ACK_TIMEOUT_SECONDS,
            tls_params=tls_params,
            tls_insecure=True if settings.tls_insecure else None,
        )

    # --- one connection ----------------------------------------------------------------------------

    async def _attempt_connection(self) -> None:
        """One connection's life; abandoned at once if close() comes before the broker let us in.

        (aiomqtt waits for CONNACK up to its timeout even when the link already failed, e.g. a TLS
        handshake the broker rejected; a stopping controller should not wait for that.)
        """
        attempt = asyncio.create_task(self._serve_one_connection())
        stop = asyncio.create_task(self._stop_requested.wait())
        try:
            await asyncio.wait((attempt, stop), return_when=asyncio.FIRST_COMPLETED)
            if not attempt.done() and not self._connected:
                attempt.cancel()
            await asyncio.wait((attempt,))
        finally:
            stop.cancel()
            if not attempt.done():  # run() itself was cancelled: let the connection say offline first
                attempt.cancel()
                await asyncio.wait((attempt,))
        if not attempt.cancelled():
            attempt.result()  # re-raise what ended the connection

    async def _serve_one_connection(self) -> None:
        async with self._new_client() as client:
            # Taken after CONNACK: events recorded before this moment waited through an outage.
            self._since = iso_ms(self._journal.clock())
            self._connected = True
            self.stats.connects += 1
            logger.info("connected to MQTT broker %s as %s", self._settings.url, self._client_id)
            try:
                await self._serve(client)
            except asyncio.CancelledError:
                # Cancelled without close(): still leave `offline` behind, not a stale `online`.
                await self._say_offline(client)
                raise
            finally:
                self._connected = False

    async def _serve(self, client: aiomqtt.Client) -> None:
        # Subscribe before announcing `online`, so a command sent on seeing it is not lost.
        codes = await client.subscribe([(self._topic("commands", "+"), 1), (self._topic("inputs", "+"), 1)])
        if any(_code_value(code) >= _FAILURE_CODE for code in codes):
            logger.error(
                "the broker refused the subscription to %s commands/inputs (codes %s): "
                "check the broker's ACL for this table's identity",
                self._root,
                [str(code) for code in codes],
            )
        await self._publish_birth(client)
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._serve_inbound(client))
                tasks.create_task(self._drain_outbox(client, self._since))
                tasks.create_task(self._publish_retained_changes(client))
                tasks.create_task(self._raise_when_stop_requested())
        except* _StopRequested:
            await self._say_offline(client)

    async def _raise_when_stop_requested(self) -> None:
        await self._stop_requested.wait()
        raise _StopRequested

    async def _say_offline(self, client: aiomqtt.Client) -> None:
        try:
            await client.publish(
                self._topic("status"),
                self._offline_payload(),
                qos=1,
                retain=True,
                timeout=OFFLINE_TIMEOUT_SECONDS,
            )
        except aiomqtt.MqttError as exc:
            # The link is probably gone, and then the broker publishes the Last Will instead.
            logger.warning("could not publish status offline: %s", exc)

    # --- retained topics ---------------------------------------------------------------------------

    async def _publish_birth(self, client: aiomqtt.Client) -> None:
        """Status online, then the latest state and every device (on connect and on rebirth)."""
        await self._publish_retained(client, self._topic("status"), self._online_payload())
        self._state_dirty = False
        self._dirty_devices.clear()
        if self._state is not None:
            await self._publish_retained(client, self._topic("state"), self._state)
        for name, health in list(self._devices.items()):
            await self._publish_retained(client, self._topic("devices", name), health)

    async def _publish_retained_changes(self, client: aiomqtt.Client) -> None:
        while True:
            await self._retained_changed.wait()
            self._retained_changed.clear()
            # The payload is read at publish time, so the last publish always carries the latest value.
            if self._state_dirty and self._state is not None:
                self._state_dirty = False
                await self._publish_retained(client, self._topic("state"), self._state)
            while self._dirty_devices:
                name = self._dirty_devices.pop()
                await self._publish_retained(client, self._topic("devices", name), self._devices[name])

    async def _publish_retained(self, client: aiomqtt.Client, topic: str, payload: bytes) -> None:
        await client.publish(topic, payload, qos=1, retain=True)

    # --- events ------------------------------------------------------------------------------------

    async def _drain_outbox(self, client: aiomqtt.Client, connected_since: str) -> None:
        while True:
            self._outbox_changed.clear()
            batch = self._journal.outbox(OUTBOX_BATCH)
            if not batch:
                await self._outbox_changed.wait()
                continue
            for envelope in batch:
                # Same-format ISO strings compare like the instants they name.
                waited_through_outage = envelope.recordedtime < connected_since
                await self._publish_event(client, envelope, historical=waited_through_outage)
                self._journal.acknowledge(int(envelope.sequence))
                self.stats.published += 1

    async def _publish_event(self, client: aiomqtt.Client, envelope: Envelope, *, historical: bool) -> None:
        if historical:
            envelope = envelope.model_copy(update={"historical": True})
        # One at a time, waiting for PUBACK: strict order, and nothing acknowledged that the broker lacks.
        await client.publish(self._topic("events", envelope.type), envelope.model_dump_json(), qos=1)

    # --- commands and inputs -----------------------------------------------------------------------

    async def _serve_inbound(self, client: aiomqtt.Client) -> None:
        # One at a time, in arrival order: "pause" then "resume" must not be swapped.
        async for message in client.messages:
            try:
                await self._handle_message(client, message)
            except aiomqtt.MqttError:
                raise
            except Exception:
                logger.exception("could not handle a message on %s", message.topic.value)

    async def _handle_message(self, client: aiomqtt.Client, message: aiomqtt.Message) -> None:
        kind, _, name = message.topic.value[len(self._root) + 1 :].partition("/")
        if message.retain:
            # A retained command would run again on every reconnect: never act on one.
            logger.warning(
                "ignored a retained message on %s: commands must not be retained", message.topic.value
            )
            self.stats.rejected_commands += 1
            return
        reply = _Reply(client, message, self._topic("replies", name or "unknown"), self.stats)
        try:
            payload = json.loads(message.payload) if isinstance(message.payload, bytes | str) else None
        except ValueError:
            await reply.error(None, "payload is not valid JSON")
            return
        transaction = payload.get("transaction") if isinstance(payload, dict) else None
        if isinstance(transaction, bool) or not isinstance(transaction, str | int):
            transaction = None
        try:
            command = parse_command(kind, name, payload)
        except CommandError as exc:
            await reply.error(transaction, str(exc))
            return
        try:
            if kind == "commands" and name in BUS_COMMANDS:
                data = await self._serve_bus_command(client, command)
            else:
                # Shielded: losing the broker must not cancel the table half-way through a command.
                data = await asyncio.shield(self._handle_command(command))
            body = _to_json({"transaction": command.transaction, "status": "ok", "data": data or {}})
        except CommandError as exc:
            await reply.error(command.transaction, str(exc))
            return
        except aiomqtt.MqttError:
            raise
        except Exception:
            logger.exception("command %s/%s failed", kind, name)
            self.stats.internal_errors += 1
            await reply.error(command.transaction, "internal error")
            return
        await reply.send(body)

    async def _serve_bus_command(self, client: aiomqtt.Client, command: Command) -> dict[str, Any]:
        if isinstance(command, ReplayEvents):
            if command.to_sequence is not None and command.to_sequence < command.from_sequence:
                raise CommandError("to_sequence must not be before from_sequence")
            envelopes = self._journal.read(command.from_sequence, command.to_sequence)
            for envelope in envelopes:
                await self._publish_event(client, envelope, historical=True)
                self.stats.replayed += 1
            return {"count": len(envelopes)}
        # rebirth
        await self._publish_birth(client)
        return {}


class _Reply:
    """Where and how to answer one inbound message."""

    def __init__(
        self, client: aiomqtt.Client, message: aiomqtt.Message, default_topic: str, stats: BusStats
    ) -> None:
        self._client = client
        self._stats = stats
        self._topic = default_topic
        self._properties: Properties | None = None
        # MQTT 5 request/response: answer on the requester's response topic, echoing its correlation data.
        response_topic = getattr(message.properties, "ResponseTopic", None)
        if isinstance(response_topic, str) and response_topic and not any(c in response_topic for c in "+#"):
            self._topic = response_topic
            correlation = getattr(message.properties, "CorrelationData", None)
            if correlation is not None:
                self._properties = Properties(PacketTypes.PUBLISH)
                self._properties.CorrelationData = correlation

    async def error(self, transaction: str | int | None, error: str) -> None:
        self._stats.rejected_commands += 1
        logger.info("rejected %s: %s", self._topic, error)
        await self.send(_to_json({"transaction": transaction, "status": "error", "error": error}))

    async def send(self, body: bytes) -> None:
        await self._client.publish(self._topic, body, qos=1, properties=self._properties)
        self._stats.replies += 1


def _to_json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _path_or_none(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _code_value(code: Any) -> int:
    """SUBACK codes: ints under MQTT 3.1.1, ReasonCode objects under MQTT 5."""
    return int(getattr(code, "value", code))
