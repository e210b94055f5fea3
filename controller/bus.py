"""The table's MQTT side: retained status/state/devices/result, the event outbox, commands and inputs.

What it guarantees (see the MQTT contract):
- `<root>/status` is retained `online` with the journal's boot counter on every (re)connect; the Last Will
  sets `offline` with the same counter when the controller dies, and `close()` sets it when it stops.
- Events leave the journal's outbox in sequence order, QoS 1, with up to `max_inflight` of them published and
  not yet acknowledged (the in-flight window; the broker's MQTT 5 Receive Maximum lowers it); an event leaves
  the journal's outbox only after the broker's PUBACK, and only once every event before it did. A broker
  outage or a controller restart delays events, never loses or reorders them; a reconnect may repeat the
  events that were in flight (same `id`).
- Under MQTT 5 a PUBACK with a failure reason code (e.g. 0x87 "not authorized": the broker's ACL denies the
  table's user) is a refusal, not a delivery: the event stays in the outbox and is retried with backoff, and
  the retained status says `"delivery": "refused"` until the broker takes events again. Nothing after a
  refused event leaves the outbox before it: the events that were already in flight behind it are sent again
  after it (same ids), and retries go one at a time until the broker takes one. MQTT 3.1.1 has no reason
  code: a broker that drops a publish still acknowledges it, and the bus cannot tell.
- Each `round.result` the broker acknowledged is also retained on `<root>/result`, the same bytes as its
  event: a late subscriber (a console signing in) sees the table's last result at once. It is published
  from the outbox's PUBACK, so never before the event is journaled, nor for an event the broker refused,
  and only the latest of a backlog; a replay never changes it, and nothing clears it (a void does not).
- Commands and inputs arrive on `<root>/commands/<name>/<user>` and `<root>/inputs/<name>/<user>`; the last
  level is the sender's identity, which the broker's ACL confines to the publisher's user name. A payload
  never names its sender.
- Every inbound command/input gets exactly one reply; a malformed, oversized or deeply nested one changes
  nothing and never stops the bus, nor does one that fails inside the table ("internal error", counted).
  A reply is never larger than `max_payload_bytes` (a broker's `max_packet_size` disconnects a client that
  publishes more): an error lists a few problems and counts the rest, and quotes what the sender sent only
  as a short excerpt. Log lines about a message are bounded the same way. Replies go to
  `<root>/replies/<name>`, or to an MQTT 5 response topic if (and only if) that lies under `<root>/replies/`.
- `replay_events` is served by its own task at a bounded rate, so other commands are answered meanwhile.
- A broker that closes the table's session because another client connected with its client id (MQTT 5
  DISCONNECT 0x8E, "session taken over"; Mosquitto sends it from 2.0.15 on) is logged as that, loudly when
  it repeats, and counted apart from lost connections (`BusStats.sessions_taken_over`).

Unlike a fire-and-forget publish, nothing here is dropped while disconnected: events wait in the journal, the
retained topics are republished from the latest values on the next connection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import sqlite3
import time
import traceback
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from controller.command_base import MAX_TRANSACTION_LENGTH
from controller.commands import (
    BUS_COMMANDS,
    MAX_NAME_LENGTH,
    Command,
    CommandError,
    ReplayEvents,
    check_remote_identity,
    excerpt,
    parse_command,
)
from controller.config import BrokerSettings, redact_url, tls_insecure_warning
from controller.events import Envelope, iso_ms
from controller.journal import Journal, PendingEvent
from controller.mqtt_client import ACK_TIMEOUT_SECONDS, AcknowledgingClient, code_value
from drivers.backoff import Backoff
from drivers.waiting import wait_event

logger = logging.getLogger(__name__)

#: how long a stopping bus waits to say `offline` before disconnecting anyway
OFFLINE_TIMEOUT_SECONDS = 2.0
#: of the broker's Receive Maximum, this many publishes are left to the retained topics, replies and replays
#: (each of those has at most one publish in flight); the events' window has the rest
RESERVED_INFLIGHT = 4
#: acknowledged events leave the journal's outbox in one transaction per this many, or this long after the
#: first of them was acknowledged (a crash in between only re-sends them, with the same ids)
ACK_BATCH = 500
ACK_BATCH_SECONDS = 0.05
#: a change of the retained topics made while events are in flight is published once the broker acknowledged
#: them, or after this long: it then reaches the broker behind them, not in the instant they are delivered
RETAINED_AFTER_EVENTS_SECONDS = 0.05
#: a server-side failure (MQTT SUBACK/PUBACK reason codes from 0x80 on)
_FAILURE_CODE = 0x80
#: a command or input is a flat JSON object; anything nested deeper than this is refused unread
MAX_PAYLOAD_DEPTH = 8
#: under MQTT 5 the broker is told not to send the table packets larger than this many times the payload
#: limit at all (it drops them): memory stays bounded even on a broker without `max_packet_size`. Payloads
#: between the limit and this get an error reply.
MAX_PACKET_FACTOR = 16
#: replay_events: events read from the journal per chunk, the most one command replays, and the rate
REPLAY_CHUNK = 100
REPLAY_MAX_EVENTS = 10_000
REPLAY_EVENTS_PER_SECOND = 500.0
#: replay_events waiting for the replay task; more are refused ("busy") rather than queued without bound
REPLAY_QUEUE = 4
#: takeovers within this many seconds of each other are repeated: logged as an error, not a warning
TAKEOVER_WINDOW_SECONDS = 600.0
#: the longest error message a reply carries (and a log line quotes); longer ones are cut, with `...`
MAX_ERROR_CHARS = 500
#: what a log line quotes of an inbound topic (a topic may be 64 KiB long; its user level is the sender's)
MAX_TOPIC_EXCERPT = 160


def _stop_if_cancelled() -> None:
    """aiomqtt waits for a PUBACK with `asyncio.wait_for`, which on Python 3.11 swallows a cancellation that
    arrives as the PUBACK does: the bus's task would then loop on and the service never stop. A task that
    was asked to stop (`cancelling()`) stops here instead."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


@dataclass
class BusStats:
    published: int = 0  # events from the outbox acknowledged by the broker
    refused: int = 0  # event publishes the broker refused (MQTT 5 PUBACK reason code >= 0x80)
    replayed: int = 0  # events re-sent by replay_events
    replies: int = 0
    rejected_commands: int = 0  # error replies, whatever the cause
    internal_errors: int = 0  # handle_command raised something other than CommandError
    refused_response_topics: int = 0  # MQTT 5 response topics outside <root>/replies/, not honoured
    connects: int = 0
    reconnects: int = 0  # connection attempts that failed or connections that were lost
    sessions_taken_over: int = 0  # connections the broker closed for another client with the table's id
    inflight_peak: int = 0  # the most events published and not yet acknowledged at once


@dataclass
class _Refusal:
    """An episode of refused event publishes: from the first refusal to the next accepted event."""

    code: int
    reason: str
    sequence: int
    since: str
    attempts: int = 1
    backoff: float = 0.0


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
        broker_may_refuse: bool = True,
    ) -> None:
        """`broker_may_refuse=False` only for a broker that refuses no publish (the demo's own, without an
        ACL): MQTT 3.1.1's undetectable refusals are then not warned of."""
        self._settings = settings
        self._broker_may_refuse = broker_may_refuse
        self._root = root.rstrip("/")
        self._journal = journal
        self._handle_command = handle_command
        self._client_id = client_id or settings.client_id or "tablectl-" + self._root.replace("/", "-")
        self.stats = BusStats()
        # what the logs name: the settings refuse a URL with credentials, and this never shows any either
        self._shown_url = redact_url(settings.url)

        self._state: bytes | None = None
        self._state_source: Callable[[], dict[str, Any]] | None = None
        self._state_dirty = False
        self._devices: dict[str, bytes] = {}
        self._dirty_devices: set[str] = set()
        self._result: bytes | None = None  # the last round.result the broker took, retained on `result`
        self._result_dirty = False
        self._retained_changed = asyncio.Event()
        self._sender: _EventSender | None = None  # publishes the outbox while connected

        self._stop_requested = asyncio.Event()
        self._finished = asyncio.Event()
        self._running = False
        self._connected = False
        self._since = ""  # when the current connection was established (ISO, ms)
        self._refusal: _Refusal | None = None  # the broker is refusing events (MQTT 5 PUBACK >= 0x80)
        self._disk: dict[str, Any] | None = None  # free space, in the status (`set_disk`)
        self._status_dirty = False
        self._client: AcknowledgingClient | None = None  # the current (or last) connection's client
        self._takeovers: deque[float] = deque(maxlen=64)  # when the broker said "session taken over"

    # --- public API --------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def delivery_refused(self) -> bool:
        """True while the broker refuses the table's events (they wait in the outbox)."""
        return self._refusal is not None

    def events_committed(self) -> None:
        """Publish what was just journaled; call after Journal.append (from the event loop's thread).

        Connected, the events are handed to the client at once (within the in-flight window), from the
        journal's memory: no task switch, no read-back."""
        sender = self._sender
        if sender is not None:
            # never raises: the events are committed whatever happens to the link (the caller then ACKs the
            # device); a failed publish ends this connection and they go on the next one
            sender.pump()

    def set_state(self, state: dict[str, Any] | Callable[[], dict[str, Any]]) -> None:
        """The latest full table state, retained on `<root>/state`. Only the latest is sent.

        Given a function, the state is built and encoded only when it is published: a burst of steps costs
        one state, not one per step, and no step waits for it."""
        if callable(state):
            self._state_source = state
        else:
            self._state_source = None
            self._state = _to_json(state)
        self._state_dirty = True
        self._retained_changed.set()

    def _current_state(self) -> bytes | None:
        if self._state_source is not None:
            self._state = _to_json(self._state_source())
            self._state_source = None
        return self._state

    def set_device(self, name: str, health: dict[str, Any]) -> None:
        """One device's health, retained on `<root>/devices/<name>`."""
        if not name or any(c in name for c in "/+#"):
            raise ValueError(f"device name {name!r} must be one non-empty MQTT topic level")
        self._devices[name] = _to_json(health)
        self._dirty_devices.add(name)
        self._retained_changed.set()

    def set_disk(self, free_bytes: int, status: str, used_bytes: int | None = None) -> None:
        """The free space where the table writes, whether it is "low", and what the table's own files take:
        `"disk"` in the retained status. The status is republished when `status` changes, and at every check
        while it is low."""
        changed = self._disk is None or self._disk["status"] != status or status != "ok"
        self._disk = {"free_bytes": free_bytes, "status": status}
        if used_bytes is not None:
            self._disk["used_bytes"] = used_bytes
        if changed:
            self._status_dirty = True
            self._retained_changed.set()

    def _result_delivered(self, envelope: str) -> None:
        """A `round.result` event left the outbox (the broker's PUBACK): retain its copy on `<root>/result`.
        Events are acknowledged in sequence order, so the latest one is the table's last result."""
        self._result = envelope.encode()
        self._result_dirty = True
        self._retained_changed.set()

    async def run(self) -> None:
        """Stay connected until close() or cancellation, reconnecting with backoff."""
        if self._running:
            raise RuntimeError("TableBus.run() is already running")
        self._running = True
        self._finished.clear()
        # On every start, not once per install: an insecure setting left on must keep showing in the logs.
        insecure = tls_insecure_warning(self._settings)
        if insecure is not None:
            logger.warning("%s", insecure)
        backoff = Backoff(self._settings.reconnect_min_seconds, self._settings.reconnect_max_seconds)
        try:
            while not self._stop_requested.is_set():
                connects_before = self.stats.connects
                self._client = None
                try:
                    await self._attempt_connection()
                except* aiomqtt.MqttError as group:
                    if not self._was_taken_over():
                        logger.warning(
                            "MQTT broker %s: %s", self._shown_url, "; ".join(str(e) for e in group.exceptions)
                        )
                except* Exception as group:
                    # A bug of ours must not stop the table from reporting: log it and connect afresh.
                    logger.error("MQTT bus failed, reconnecting", exc_info=group)
                if self._was_taken_over():
                    self._session_taken_over()
                if self._stop_requested.is_set():
                    break
                if self.stats.connects > connects_before:
                    backoff.reset()
                self.stats.reconnects += 1
                # Jitter, so a studio full of tables does not reconnect in lockstep after a broker restart.
                pause = backoff.next() * random.uniform(0.8, 1.2)
                logger.info("reconnecting to the MQTT broker in %.1f s", pause)
                await wait_event(self._stop_requested, pause)
        finally:
            self._running = False
            self._connected = False
            self._finished.set()

    def _was_taken_over(self) -> bool:
        return self._client is not None and self._client.taken_over

    def _session_taken_over(self) -> None:
        """Another client connected with this table's client id and the broker closed the table's session.

        Not a broker outage: someone holds the table's identity (a second controller started for the same
        table, or a client that knows the id, on a broker that does not tie client ids to users). Each one is
        counted and logged; repeated ones are logged as errors."""
        self._client = None
        self.stats.sessions_taken_over += 1
        now = time.monotonic()
        self._takeovers.append(now)
        recent = sum(1 for when in self._takeovers if now - when <= TAKEOVER_WINDOW_SECONDS)
        if recent > 1:
            logger.error(
                "the MQTT broker closed this table's session again (%d times in %d s): another client "
                "keeps connecting with its client id %r. Stop the other controller of this table, or make "
                "the broker tie client ids to users (Mosquitto: use_username_as_clientid true)",
                recent,
                TAKEOVER_WINDOW_SECONDS,
                self._client_id,
            )
        else:
            logger.warning(
                "the MQTT broker closed this table's session: another client connected with its client id %r "
                "(session taken over, MQTT 5 reason 0x8E); reconnecting",
                self._client_id,
            )

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
        status: dict[str, Any] = {"status": "online", "boot": self._journal.boot, "since": self._since}
        refusal = self._refusal
        if refusal is not None:
            status |= {
                "delivery": "refused",
                "delivery_reason": refusal.reason,
                "delivery_code": refusal.code,
                "refused_sequence": refusal.sequence,
                "refused_since": refusal.since,
            }
        if self._disk is not None:
            status["disk"] = self._disk
        return _to_json(status)

    def _new_client(self) -> AcknowledgingClient:
        settings = self._settings
        v5 = settings.protocol == "5"
        connect_properties = None
        if v5:
            # The broker drops packets for the table above this size instead of sending them.
            connect_properties = Properties(PacketTypes.CONNECT)
            connect_properties.MaximumPacketSize = MAX_PACKET_FACTOR * settings.max_payload_bytes
        tls_params = None
        if settings.tls:
            tls_params = aiomqtt.TLSParameters(
                ca_certs=_path_or_none(settings.tls_ca_file),
                certfile=_path_or_none(settings.tls_cert_file),
                keyfile=_path_or_none(settings.tls_key_file),
            )
        return AcknowledgingClient(
            settings.host,
            settings.port,
            username=settings.username,
            password=settings.password.get_secret_value() if settings.password else None,
            identifier=self._client_id,
            protocol=aiomqtt.ProtocolVersion.V5 if v5 else aiomqtt.ProtocolVersion.V311,
            will=aiomqtt.Will(self._topic("status"), self._offline_payload(), qos=1, retain=True),
            keepalive=settings.keepalive,
            timeout=ACK_TIMEOUT_SECONDS,
            tls_params=tls_params,
            tls_insecure=True if settings.tls_insecure else None,
            properties=connect_properties,
            # no limit in paho: the event window (`_EventSender`) keeps within the broker's Receive Maximum
            max_inflight_messages=0,
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
        client = self._client = self._new_client()
        async with client:
            # Taken after CONNACK: events recorded before this moment waited through an outage.
            self._since = iso_ms(self._journal.clock())
            self._connected = True
            self.stats.connects += 1
            logger.info("connected to MQTT broker %s as %s", self._shown_url, self._client_id)
            if self._settings.protocol != "5" and self.stats.connects == 1 and self._broker_may_refuse:
                logger.warning(
                    "MQTT 3.1.1: a publish the broker refuses (e.g. denied by its ACL) is acknowledged like "
                    "a delivered one and cannot be detected; use protocol 5 to keep refused events queued"
                )
            try:
                await self._serve(client)
            except asyncio.CancelledError:
                # Cancelled without close(): still leave `offline` behind, not a stale `online`.
                await self._say_offline(client)
                raise
            finally:
                self._connected = False

    async def _serve(self, client: AcknowledgingClient) -> None:
        await client.while_connected(self._announce(client))
        replays: asyncio.Queue[tuple[ReplayEvents, _Reply]] = asyncio.Queue(REPLAY_QUEUE)
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._serve_inbound(client, replays))
                tasks.create_task(self._serve_replays(client, replays))
                tasks.create_task(self._drain_outbox(client, self._since))
                tasks.create_task(self._publish_retained_changes(client))
                tasks.create_task(self._raise_when_stop_requested())
        except* _StopRequested:
            await self._say_offline(client)

    async def _announce(self, client: AcknowledgingClient) -> None:
        # Subscribe before announcing `online`, so a command sent on seeing it is not lost. The last level is
        # the sender; `<kind>/<name>` without it only gets an error reply saying where to send instead.
        topics = [self._topic(kind, "+", "+") for kind in ("commands", "inputs")]
        topics += [self._topic(kind, "+") for kind in ("commands", "inputs")]
        codes = await client.subscribe([(topic, 1) for topic in topics])
        if any(code_value(code) >= _FAILURE_CODE for code in codes):
            logger.error(
                "the broker refused the subscription to %s commands/inputs (codes %s): "
                "check the broker's ACL for this table's identity",
                self._root,
                [str(code) for code in codes],
            )
        await self._publish_birth(client)

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
        self._status_dirty = False
        await self._publish_retained(client, self._topic("status"), self._online_payload())
        self._state_dirty = False
        self._dirty_devices.clear()
        state = self._current_state()
        if state is not None:
            await self._publish_retained(client, self._topic("state"), state)
        for name, health in list(self._devices.items()):
            await self._publish_retained(client, self._topic("devices", name), health)
        self._result_dirty = False
        if self._result is not None:  # a broker that lost its retained messages gets it again
            await self._publish_retained(client, self._topic("result"), self._result)

    async def _publish_retained_changes(self, client: aiomqtt.Client) -> None:
        while True:
            _stop_if_cancelled()
            await self._retained_changed.wait()
            sender = self._sender
            if sender is not None and sender.inflight:
                # a step's state follows its events: published with them, it held up their delivery
                await wait_event(sender.acknowledged, RETAINED_AFTER_EVENTS_SECONDS)
            self._retained_changed.clear()
            # The payload is read at publish time, so the last publish always carries the latest value.
            if self._status_dirty:
                self._status_dirty = False
                await self._publish_retained(client, self._topic("status"), self._online_payload())
            if self._state_dirty:
                self._state_dirty = False
                state = self._current_state()
                if state is not None:
                    await self._publish_retained(client, self._topic("state"), state)
            while self._dirty_devices:
                name = self._dirty_devices.pop()
                await self._publish_retained(client, self._topic("devices", name), self._devices[name])
            if self._result_dirty and self._result is not None:
                self._result_dirty = False
                await self._publish_retained(client, self._topic("result"), self._result)

    async def _publish_retained(self, client: aiomqtt.Client, topic: str, payload: bytes) -> None:
        await client.publish(topic, payload, qos=1, retain=True)
        _stop_if_cancelled()

    # --- events ------------------------------------------------------------------------------------

    async def _drain_outbox(self, client: AcknowledgingClient, connected_since: str) -> None:
        """Publish the outbox on this connection (`_EventSender`); handle refusals and lost PUBACKs."""
        window = self._settings.max_inflight
        if client.receive_maximum is not None:
            window = max(1, min(window, client.receive_maximum - RESERVED_INFLIGHT))
        sender = _EventSender(self, client, connected_since, window)
        self._sender = sender
        try:
            sender.pump()
            while True:
                _stop_if_cancelled()
                if sender.link_failed is not None:
                    raise aiomqtt.MqttError(f"could not publish an event: {sender.link_failed}")
                sender.wake.clear()
                oldest = sender.oldest_sent()
                timeout = None if oldest is None else oldest + ACK_TIMEOUT_SECONDS - time.monotonic()
                if timeout is not None and timeout <= 0:
                    raise aiomqtt.MqttError("the broker did not acknowledge a publish in time")
                await wait_event(sender.wake, timeout)
                if sender.link_failed is not None:
                    continue
                if sender.restored:
                    sender.restored = False
                    if self._refusal is not None:
                        await self._delivery_restored(client)
                refused = sender.refused
                if refused is not None and not sender.inflight:
                    await self._delivery_refused(client, *refused)
                    sender.retry(refused[0].sequence)
        finally:
            self._sender = None
            sender.close()

    async def _publish_event(
        self, client: AcknowledgingClient, envelope: Envelope, *, historical: bool
    ) -> ReasonCode:
        if historical:
            envelope = envelope.model_copy(update={"historical": True})
        # replay_events: one at a time, waiting for PUBACK
        code = await client.publish_acknowledged(
            self._topic("events", envelope.type), envelope.model_dump_json()
        )
        _stop_if_cancelled()
        return code

    async def _delivery_refused(
        self, client: AcknowledgingClient, event: PendingEvent, code: ReasonCode
    ) -> None:
        """The broker refused an event: say so (once per episode), then wait before trying it again."""
        self.stats.refused += 1
        sequence = event.sequence
        refusal = self._refusal
        settings = self._settings
        if refusal is None:
            refusal = _Refusal(
                code=code_value(code),
                reason=str(code),
                sequence=sequence,
                since=iso_ms(self._journal.clock()),
                backoff=settings.reconnect_min_seconds,
            )
            self._refusal = refusal
            logger.error(
                "the MQTT broker refused event %s (%s) with reason %s (0x%02X); it stays in the outbox and "
                "is retried until the broker takes it: check the broker's ACL for this table's user %r",
                sequence,
                event.type,
                refusal.reason,
                refusal.code,
                settings.username,
            )
            await self._publish_retained(client, self._topic("status"), self._online_payload())
        else:
            refusal.attempts += 1
            refusal.backoff = min(refusal.backoff * 2, settings.reconnect_max_seconds)
            logger.debug("event %s refused again (%s), attempt %d", sequence, code, refusal.attempts)
        await asyncio.sleep(refusal.backoff * random.uniform(0.8, 1.2))

    async def _delivery_restored(self, client: aiomqtt.Client) -> None:
        refusal, self._refusal = self._refusal, None
        if refusal is not None:
            logger.warning(
                "the MQTT broker takes events again after %d refused attempt(s) since %s",
                refusal.attempts,
                refusal.since,
            )
        await self._publish_retained(client, self._topic("status"), self._online_payload())

    # --- commands and inputs -----------------------------------------------------------------------

    async def _serve_inbound(
        self, client: aiomqtt.Client, replays: asyncio.Queue[tuple[ReplayEvents, _Reply]]
    ) -> None:
        # One at a time, in arrival order: "pause" then "resume" must not be swapped.
        async for message in client.messages:
            _stop_if_cancelled()
            try:
                await self._handle_message(client, message, replays)
            except aiomqtt.MqttError:
                raise
            except Exception as exc:
                _log_internal_error(f"could not handle a message on {_topic_excerpt(message)}", exc)
                self.stats.internal_errors += 1

    async def _handle_message(
        self,
        client: aiomqtt.Client,
        message: aiomqtt.Message,
        replays: asyncio.Queue[tuple[ReplayEvents, _Reply]],
    ) -> None:
        levels = message.topic.value[len(self._root) + 1 :].split("/")
        kind, name = levels[0], levels[1] if len(levels) > 1 else ""
        if message.retain:
            # A retained command would run again on every reconnect: never act on one.
            logger.warning(
                "ignored a retained message on %s: commands must not be retained", _topic_excerpt(message)
            )
            self.stats.rejected_commands += 1
            return
        reply = _Reply(client, message, self._root, name, self.stats, self._settings.max_payload_bytes)
        transaction: str | int | None = None
        try:
            payload = _decode_payload(message.payload, self._settings.max_payload_bytes)
            transaction = _echoable_transaction(payload)
            if len(levels) != 3:
                shown = excerpt(name) if name else "<name>"
                raise CommandError(
                    f"send {kind} to {self._topic(kind, shown, '<user>')}: the last level is the "
                    "sender's user name, which the broker authenticated"
                )
            command = parse_command(kind, name, payload, by=check_remote_identity(levels[2]))
            if isinstance(command, ReplayEvents):
                _check_replay(command)
                try:
                    replays.put_nowait((command, reply))
                except asyncio.QueueFull:
                    raise CommandError(
                        f"{REPLAY_QUEUE} replays are already waiting; try again when one has been answered"
                    ) from None
                return  # answered by the replay task
            if kind == "commands" and name in BUS_COMMANDS:
                await self._publish_birth(client)  # rebirth
                data: dict[str, Any] = {}
            else:
                # Shielded: losing the broker must not cancel the table half-way through a command.
                data = await asyncio.shield(self._handle_command(command))
        except CommandError as exc:
            await reply.error(transaction, str(exc))
            return
        except aiomqtt.MqttError:
            raise
        except Exception as exc:
            # One request's failure is answered and counted; it never ends the connection.
            _log_internal_error(f"command {_topic_excerpt(message)} failed", exc)
            self.stats.internal_errors += 1
            await reply.error(transaction, "internal error")
            return
        await reply.ok(command.transaction, data or {})

    async def _serve_replays(
        self, client: AcknowledgingClient, replays: asyncio.Queue[tuple[ReplayEvents, _Reply]]
    ) -> None:
        """replay_events, one request at a time, beside the inbound loop (which keeps answering commands)."""
        while True:
            _stop_if_cancelled()
            command, reply = await replays.get()
            try:
                data = await self._replay(client, command)
            except CommandError as exc:
                await reply.error(command.transaction, str(exc))
            except aiomqtt.MqttError:
                raise  # the link is gone: the connection is rebuilt
            except Exception as exc:
                # A bug or a journal error answers this request; it must not end the connection (and with
                # it every other request and the events' delivery).
                _log_internal_error(f"replay_events {reply.topic} failed", exc)
                self.stats.internal_errors += 1
                await reply.error(command.transaction, "internal error")
            else:
                await reply.ok(command.transaction, data)

    async def _replay(self, client: AcknowledgingClient, command: ReplayEvents) -> dict[str, Any]:
        """Re-send journaled events as historical, at most REPLAY_EVENTS_PER_SECOND, REPLAY_MAX_EVENTS."""
        pruned = self._journal.pruned_through
        if command.from_sequence <= pruned:
            # Said, not skipped: a consumer filling a gap must know these events are only in the archive.
            raise CommandError(
                f"events up to {pruned} were archived and are no longer in the journal; "
                f"replay from {pruned + 1}"
            )
        loop = asyncio.get_running_loop()
        started = loop.time()
        upper = command.to_sequence
        next_sequence = command.from_sequence
        count = 0
        while count < REPLAY_MAX_EVENTS:
            chunk = self._journal.read(
                next_sequence, upper, limit=min(REPLAY_CHUNK, REPLAY_MAX_EVENTS - count)
            )
            if not chunk:
                break
            for envelope in chunk:
                code = await self._publish_event(client, envelope, historical=True)
                if code_value(code) >= _FAILURE_CODE:
                    raise CommandError(
                        f"the broker refused replayed event {envelope.sequence} ({code}) "
                        f"after {count} event(s)"
                    )
                count += 1
                self.stats.replayed += 1
            next_sequence = int(chunk[-1].sequence) + 1
            # Rate limit: the replay shares the link with the live events and the replies.
            await asyncio.sleep(max(0.0, started + count / REPLAY_EVENTS_PER_SECOND - loop.time()))
        data: dict[str, Any] = {"count": count}
        more = self._journal.read(next_sequence, upper, limit=1) if count >= REPLAY_MAX_EVENTS else []
        if more:
            # Capped: the sender asks again from here.
            data["next_sequence"] = next_sequence
        return data


class _EventSender:
    """The outbox on one connection: events published in sequence order, up to `window` of them in flight.

    Everything here runs synchronously on the event loop: `pump()` hands the next events to the client (from
    `events_committed` right after a commit, and from each PUBACK), and each PUBACK is matched to its event.
    Only the leading run of acknowledged events leaves the journal's outbox, in batches. After a refusal
    (PUBACK reason code >= 0x80) nothing more is sent and nothing after the refused event is acknowledged:
    once the PUBACKs of what was in flight are in, the bus's task says so, waits, and `retry` starts again at
    the refused event, one event in flight at a time until the broker takes one.
    """

    def __init__(self, bus: TableBus, client: AcknowledgingClient, connected_since: str, window: int) -> None:
        self.bus = bus
        self.journal = bus._journal
        self.client = client
        self.since = connected_since
        self.window = window
        #: [sequence, send time (monotonic), reason code once acknowledged], in sequence order
        self.inflight: deque[list[Any]] = deque()
        self.cursor = 0  # the last sequence handed to the client on this connection
        self.refused: tuple[PendingEvent, ReasonCode] | None = None
        self.probing = bus._refusal is not None  # one in flight until the broker takes events again
        self.restored = False
        self.wake = asyncio.Event()
        #: set while no event is in flight (every event published on this connection was acknowledged)
        self.acknowledged = asyncio.Event()
        self._events: dict[int, PendingEvent] = {}  # in flight, for the refusal's report
        self._acked: list[int] = []
        self._flush_handle: asyncio.TimerHandle | None = None
        self._closed = False
        self._pump_scheduled = False
        #: the client refused a publish: the connection is going (its task raises it)
        self.link_failed: Exception | None = None

    def pump(self) -> None:
        """Hand the client the next events, as many as the window has room for. Never raises: a publish the
        client refuses (the link is going) ends the connection (`link_failed`, seen by the bus's task)."""
        try:
            self._pump()
        except Exception as exc:
            if self.link_failed is None:
                self.link_failed = exc
                logger.warning("publishing an event failed (%s); reconnecting", exc)
            self.wake.set()

    def _pump(self) -> None:
        if self._closed or self.refused is not None or self.link_failed is not None:
            return
        room = (1 if self.probing else self.window) - len(self.inflight)
        if room <= 0 or self.cursor >= self.journal.last_sequence:
            return
        batch = self.journal.pending(self.cursor, room)
        if not batch:
            return
        topic_prefix = self.bus._root + "/events/"
        now = time.monotonic()
        for event in batch:
            payload = self._payload(event)
            entry = [event.sequence, now, None]
            self.client.publish_nowait(topic_prefix + event.type, payload, partial(self._ack, entry))
            self.inflight.append(entry)
            self._events[event.sequence] = event
            self.cursor = event.sequence
        self.acknowledged.clear()
        self.client.flush()
        stats = self.bus.stats
        stats.inflight_peak = max(stats.inflight_peak, len(self.inflight))

    def _payload(self, event: PendingEvent) -> str:
        """The envelope as published on this connection: marked historical if it waited through an outage."""
        # Same-format ISO strings compare like the instants they name.
        return _historical(event.envelope) if event.recordedtime < self.since else event.envelope

    def _ack(self, entry: list[Any], code: ReasonCode) -> None:
        if self._closed:
            return  # the connection's task is gone: the event stays in the outbox and is sent again
        entry[2] = code
        inflight = self.inflight
        while inflight and inflight[0][2] is not None:
            sequence, _sent, code = inflight.popleft()
            event = self._events.pop(sequence)
            if self.refused is not None:
                continue  # behind a refused event: stays in the outbox, sent again after it
            if code_value(code) >= _FAILURE_CODE:
                self.refused = (event, code)
                continue
            self._acked.append(sequence)
            self.bus.stats.published += 1
            if event.type == "round.result":
                self.bus._result_delivered(self._payload(event))
            if self.probing:
                self.probing = False
                self.restored = True
                self.wake.set()
        if not inflight:
            self.acknowledged.set()
        if len(self._acked) >= ACK_BATCH:
            self.flush_acks()
        elif self._acked and self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_later(ACK_BATCH_SECONDS, self.flush_acks)
        if self.refused is not None:
            if not inflight:
                self.wake.set()
            return
        if not self._pump_scheduled:
            # once per turn of the loop, after every PUBACK read in it: one write for the events they free
            # room for, not one per PUBACK
            self._pump_scheduled = True
            asyncio.get_running_loop().call_soon(self._scheduled_pump)

    def _scheduled_pump(self) -> None:
        self._pump_scheduled = False
        self.pump()

    def flush_acks(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        acked, self._acked = self._acked, []
        try:
            self.journal.acknowledge_many(acked)
        except sqlite3.Error as exc:
            # Not fatal: the events are sent again (same ids) unless a later batch takes them out.
            logger.error("could not remove %d acknowledged events from the outbox: %s", len(acked), exc)

    def oldest_sent(self) -> float | None:
        return self.inflight[0][1] if self.inflight else None

    def retry(self, sequence: int) -> None:
        self.refused = None
        self.probing = True
        self.cursor = sequence - 1
        self.pump()

    def close(self) -> None:
        self._closed = True
        if self._acked:
            self.flush_acks()
        elif self._flush_handle is not None:
            self._flush_handle.cancel()


def _historical(envelope: str) -> str:
    """The journaled envelope marked `historical` (published late). The journal writes `"historical":false`
    before `data`, and no string value can hold that sequence unescaped."""
    marked = envelope.replace('"historical":false', '"historical":true', 1)
    if marked == envelope:
        data = json.loads(envelope)
        data["historical"] = True
        marked = Envelope.model_validate(data).model_dump_json()
    return marked


class _Reply:
    """Where and how to answer one inbound message. Every reply fits in the table's own payload limit
    (`max_payload_bytes`), whatever the sender sent: a reply the broker refuses as too large would make it
    disconnect the table (Mosquitto's `max_packet_size`)."""

    def __init__(
        self,
        client: aiomqtt.Client,
        message: aiomqtt.Message,
        root: str,
        name: str,
        stats: BusStats,
        limit: int,
    ) -> None:
        self._client = client
        self._stats = stats
        self._limit = limit
        # The name is the sender's topic level: a long one is no command, and is not repeated in a topic.
        if not name or len(name) > MAX_NAME_LENGTH:
            name = "unknown"
        self.topic = f"{root}/replies/{name}"
        self._properties: Properties | None = None
        # MQTT 5 request/response: answer on the requester's response topic, echoing its correlation data,
        # but only under the table's replies/: a response topic must not make the table publish on its own
        # events/ or status (nor anywhere else its ACL lets it write).
        response_topic = getattr(message.properties, "ResponseTopic", None)
        if isinstance(response_topic, str) and response_topic:
            if response_topic.startswith(f"{root}/replies/") and not any(c in response_topic for c in "+#"):
                self.topic = response_topic
            else:
                stats.refused_response_topics += 1
                logger.warning(
                    "refused the response topic '%s' of a message on %s: response topics must lie under "
                    "%s/replies/; replying on %s",
                    excerpt(response_topic, MAX_TOPIC_EXCERPT),
                    _topic_excerpt(message),
                    root,
                    self.topic,
                )
        correlation = getattr(message.properties, "CorrelationData", None)
        if correlation is not None:
            self._properties = Properties(PacketTypes.PUBLISH)
            self._properties.CorrelationData = correlation

    async def error(self, transaction: str | int | None, error: str) -> None:
        self._stats.rejected_commands += 1
        if len(error) > MAX_ERROR_CHARS:
            error = error[:MAX_ERROR_CHARS] + "..."
        body = _to_json({"transaction": transaction, "status": "error", "error": error})
        while len(body) > self._limit and len(error) > 8:
            # Only a limit near its minimum with a long non-ASCII message gets here: cut it until it fits.
            error = error[: len(error) // 2] + "..."
            body = _to_json({"transaction": transaction, "status": "error", "error": error})
        logger.info("rejected %s: %s", excerpt(self.topic, MAX_TOPIC_EXCERPT), error)
        await self.send(body)

    async def ok(self, transaction: str | int | None, data: dict[str, Any]) -> None:
        body = _to_json({"transaction": transaction, "status": "ok", "data": data})
        if len(body) > self._limit:
            # Not sent as it is: the broker may refuse (and disconnect the table for) a packet that large.
            logger.error(
                "the reply on %s would be %d bytes, over the payload limit of %d; an error is sent instead",
                self.topic,
                len(body),
                self._limit,
            )
            self._stats.internal_errors += 1
            await self.error(
                transaction, f"the reply would be {len(body)} bytes, over the table's limit of {self._limit}"
            )
            return
        await self.send(body)

    async def send(self, body: bytes) -> None:
        await self._client.publish(self.topic, body, qos=1, properties=self._properties)
        self._stats.replies += 1
        _stop_if_cancelled()


def _topic_excerpt(message: aiomqtt.Message) -> str:
    return excerpt(message.topic.value, MAX_TOPIC_EXCERPT)


def _log_internal_error(what: str, exc: BaseException) -> None:
    """A bug's traceback (its frames: code, bounded) and an excerpt of its message, which may quote what a
    sender sent."""
    frames = "".join(traceback.format_tb(exc.__traceback__, limit=-8))
    logger.error("%s: %s: %s\n%s", what, type(exc).__name__, excerpt(str(exc), 200), frames.rstrip())


def _decode_payload(payload: Any, limit: int) -> Any:
    """The JSON value of an inbound payload, checked for size, encoding and nesting before it is used."""
    if isinstance(payload, str):
        payload = payload.encode()
    if not isinstance(payload, bytes | bytearray):
        raise CommandError("payload must be a JSON object")
    if len(payload) > limit:
        raise CommandError(f"payload is {len(payload)} bytes; the limit is {limit}")
    try:
        text = bytes(payload).decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError("payload is not UTF-8") from None
    try:
        value = json.loads(text)
    except RecursionError:
        raise CommandError(f"payload is nested deeper than {MAX_PAYLOAD_DEPTH} levels") from None
    except ValueError:
        raise CommandError("payload is not valid JSON") from None
    if _depth_exceeds(value, MAX_PAYLOAD_DEPTH):
        raise CommandError(f"payload is nested deeper than {MAX_PAYLOAD_DEPTH} levels")
    return value


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value nests containers deeper than `limit` (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _echoable_transaction(payload: Any) -> str | int | None:
    """The payload's `transaction` if it may be echoed in an error reply (bounded), else None."""
    transaction = payload.get("transaction") if isinstance(payload, dict) else None
    if isinstance(transaction, bool):
        return None
    if isinstance(transaction, str) and 0 < len(transaction) <= MAX_TRANSACTION_LENGTH:
        return transaction
    if isinstance(transaction, int) and -(2**63) <= transaction < 2**63:
        return transaction
    return None


def _check_replay(command: ReplayEvents) -> None:
    if command.to_sequence is not None and command.to_sequence < command.from_sequence:
        raise CommandError("to_sequence must not be before from_sequence")


def _to_json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _path_or_none(path: Path | None) -> str | None:
    return None if path is None else str(path)
