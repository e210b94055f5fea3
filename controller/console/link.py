"""One supervisor's connection to the studio's broker: what the console reads, and how it sends commands.

The connection is made with the supervisor's own broker user name and password (or the console's, from its
config file), so the broker's ACL decides what they see and what they may send. It subscribes to every
table's retained `status`, `state`, `devices/+` and `result`, and to their `events/+` and `replies/#`, and
feeds each message to the `StudioModel`. It reconnects with backoff (jittered) after a broker restart, and
re-reads the retained topics: what the broker no longer holds is forgotten, and a table it holds nothing of
is listed as missing (`StudioModel.end_resync`).

A command goes to `<root>/commands/<name>/<user>` at QoS 1 with a fresh `transaction`; under MQTT 5 a
broker that refuses it (ACL: 0x87 "not authorized") says so in the PUBACK, which is reported as it came.
Otherwise the table's reply (matched by transaction, on `<root>/replies/#`) is awaited.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import re
import secrets
import time
from collections.abc import Callable
from typing import Any

import aiomqtt
from paho.mqtt.reasoncodes import ReasonCode

from controller.config import BrokerSettings
from controller.console.model import StudioModel
from controller.mqtt_client import AcknowledgingClient

log = logging.getLogger(__name__)

#: CONNACK codes that mean "these credentials are refused" (3.1.1: 4, 5; MQTT 5: 0x86, 0x87, 0x8C)
AUTH_REFUSED = frozenset({4, 5, 0x86, 0x87, 0x8C})
#: a server-side failure in a PUBACK (MQTT 5)
FAILURE_CODE = 0x80
#: after the subscription, the retained values are in once none came for this long (at most RESYNC_MAX)
RESYNC_QUIET_SECONDS = 0.5
RESYNC_MAX_SECONDS = 5.0
#: the first connection (the sign-in) gives up after this long
FIRST_CONNECT_TIMEOUT = 10.0
#: a user name is one MQTT topic level (the sender level of a command's topic)
USER_PATTERN = re.compile(r"^[^/+#\s]{1,64}$")
TABLE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class SignInRefused(Exception):
    """The broker refused the credentials (or the console could not reach it); worded for the page."""

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class StudioLink:
    def __init__(
        self,
        settings: BrokerSettings,
        model: StudioModel,
        *,
        username: str | None,
        password: str | None,
        on_change: Callable[[], None] = lambda: None,
        reply_timeout: float = 10.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.model = model
        self.username = username
        self._password = password
        self._on_change = on_change
        self.reply_timeout = reply_timeout
        self.clock = clock
        self.client_id = f"tablectl-console-{username or 'anonymous'}-{secrets.token_hex(4)}"
        self._client: AcknowledgingClient | None = None
        self._connected = False
        self._task: asyncio.Task[None] | None = None
        self._first: asyncio.Future[None] | None = None
        self._pending: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}
        self._last_retained = 0.0
        self.messages = 0
        self.connects = 0

    @property
    def connected(self) -> bool:
        return self._connected

    # --- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect (the sign-in): returns once the broker let us in; raises SignInRefused if it did not
        (and then stops). Afterwards the link keeps reconnecting by itself until `close()`."""
        loop = asyncio.get_running_loop()
        self._first = loop.create_future()
        self._task = asyncio.create_task(self._run(), name=f"console-link-{self.username}")
        try:
            await asyncio.wait_for(asyncio.shield(self._first), FIRST_CONNECT_TIMEOUT)
        except TimeoutError:
            await self.close()
            raise SignInRefused(
                f"the broker {self.settings.host}:{self.settings.port} did not answer", unreachable=True
            ) from None
        except SignInRefused:
            await self.close()
            raise

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for future in self._pending.values():
            if not future.done():
                future.cancel()
        self._pending.clear()

    async def _run(self) -> None:
        delay = self.settings.reconnect_min_seconds
        while True:
            connects = self.connects
            try:
                await self._serve_one_connection()
            except aiomqtt.MqttCodeError as exc:
                if self._refused_at_first(exc):
                    return
                self._lost(f"broker: {exc}")
            except aiomqtt.MqttError as exc:
                if self._unreachable_at_first(exc):
                    return
                self._lost(f"broker: {exc}")
            except OSError as exc:
                if self._unreachable_at_first(exc):
                    return
                self._lost(f"broker: {exc}")
            if self.connects > connects:
                delay = self.settings.reconnect_min_seconds
            pause = delay * random.uniform(0.8, 1.2)  # 50 consoles do not come back in lockstep
            await asyncio.sleep(pause)
            delay = min(delay * 2, self.settings.reconnect_max_seconds)

    def _refused_at_first(self, exc: aiomqtt.MqttCodeError) -> bool:
        code = _code_value(exc.rc)
        if self._first is not None and not self._first.done():
            if code in AUTH_REFUSED:
                message = f"the broker refused user {self.username!r}: {_code_text(exc.rc)}"
                self._first.set_exception(SignInRefused(message))
            else:
                self._first.set_exception(SignInRefused(f"the broker refused the connection: {exc}"))
            return True
        return False

    def _unreachable_at_first(self, exc: Exception) -> bool:
        if self._first is not None and not self._first.done():
            where = f"{self.settings.host}:{self.settings.port}"
            self._first.set_exception(
                SignInRefused(f"cannot reach the broker {where}: {exc}", unreachable=True)
            )
            return True
        return False

    def _lost(self, detail: str) -> None:
        if self._connected or self.model.link.detail != detail:
            log.warning("console (%s): %s; reconnecting", self.username, detail)
        self._connected = False
        self._client = None
        self.model.set_link(False, detail, self.clock())
        self._on_change()

    def _new_client(self) -> AcknowledgingClient:
        settings = self.settings
        tls_params = None
        if settings.tls:
            tls_params = aiomqtt.TLSParameters(
                ca_certs=str(settings.tls_ca_file) if settings.tls_ca_file else None,
                certfile=str(settings.tls_cert_file) if settings.tls_cert_file else None,
                keyfile=str(settings.tls_key_file) if settings.tls_key_file else None,
            )
        v5 = settings.protocol == "5"
        return AcknowledgingClient(
            settings.host,
            settings.port,
            username=self.username,
            password=self._password,
            identifier=self.client_id,
            protocol=aiomqtt.ProtocolVersion.V5 if v5 else aiomqtt.ProtocolVersion.V311,
            keepalive=settings.keepalive,
            timeout=10.0,
            tls_params=tls_params,
            tls_insecure=True if settings.tls_insecure else None,
        )

    async def _serve_one_connection(self) -> None:
        async with self._new_client() as client:
            self._client = client
            self._connected = True
            self.connects += 1
            self.model.begin_resync()
            prefix = self.model.prefix
            # `result` (each table's last result, retained) after the topics that make a table known: a
            # broker sends the retained messages of each filter in turn, so its table is there already
            levels = ("status", "state", "devices/+", "result", "events/+", "replies/#")
            topics = [f"{prefix}+/{level}" for level in levels]
            await client.subscribe([(topic, 1) for topic in topics])
            self._last_retained = time.monotonic()
            self.model.set_link(True, "connected", self.clock())
            self._on_change()
            if self._first is not None and not self._first.done():
                self._first.set_result(None)
            log.info("console: connected to %s as %s", self.settings.url, self.username)
            resync = asyncio.create_task(self._finish_resync())
            try:
                async for message in client.messages:
                    self._on_message(message)
            finally:
                resync.cancel()
                self._connected = False
                self._client = None

    async def _finish_resync(self) -> None:
        """Forget what the broker did not send again once the retained messages are in."""
        started = time.monotonic()
        while True:
            now = time.monotonic()
            quiet_for = now - self._last_retained
            if quiet_for >= RESYNC_QUIET_SECONDS or now - started >= RESYNC_MAX_SECONDS:
                break
            await asyncio.sleep(RESYNC_QUIET_SECONDS - quiet_for + 0.01)
        missing = self.model.end_resync(self.clock())
        if missing:
            log.warning(
                "console: the broker holds nothing of %d table(s) after reconnecting; listed as missing: %s",
                len(missing),
                ", ".join(missing),
            )
        self._on_change()

    def _on_message(self, message: aiomqtt.Message) -> None:
        self.messages += 1
        topic = message.topic.value
        payload = message.payload if isinstance(message.payload, bytes | bytearray) else b""
        if message.retain:
            self._last_retained = time.monotonic()
        changed = self.model.on_message(topic, bytes(payload), bool(message.retain), self.clock())
        if "/replies/" in topic and self._pending:
            self._match_reply(topic, bytes(payload))
        if changed is not None:
            self._on_change()

    def _match_reply(self, topic: str, payload: bytes) -> None:
        table_id = topic[len(self.model.prefix) :].partition("/")[0]
        try:
            reply = json.loads(payload)
        except ValueError:
            return
        if not isinstance(reply, dict):
            return
        future = self._pending.get((table_id, str(reply.get("transaction"))))
        if future is not None and not future.done():
            future.set_result(reply)

    # --- commands ------------------------------------------------------------------------------------

    async def send(self, table_id: str, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one command to a table as this link's user; what became of it, for the page.

        `status` is the reply's ("ok" or "error"), or "refused" (the broker's PUBACK said no), "no_reply"
        (nothing came back in time: the table is offline, or under MQTT 3.1.1 the ACL dropped it), or
        "not_connected"."""
        if not TABLE_PATTERN.match(table_id):
            return {"status": "error", "error": f"no table {table_id!r}"}
        client = self._client
        if client is None or not self._connected or self.username is None:
            return {"status": "not_connected", "error": "the console is not connected to the broker"}
        transaction = f"console-{secrets.token_hex(6)}"
        body = {**payload, "transaction": transaction}
        topic = f"{self.model.prefix}{table_id}/commands/{name}/{self.username}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        key = (table_id, transaction)
        self._pending[key] = future
        self.model.record_command(
            table_id,
            user=self.username,
            name=name,
            payload=payload,
            transaction=transaction,
            now=self.clock(),
        )
        self._on_change()
        outcome: dict[str, Any] = {"transaction": transaction, "topic": topic}
        try:
            try:
                code = await client.publish_acknowledged(topic, json.dumps(body))
            except aiomqtt.MqttError as exc:
                outcome |= {"status": "not_connected", "error": f"not sent: {exc}"}
                self._outcome(table_id, transaction, "not_connected", outcome["error"])
                return outcome
            value = _code_value(code)
            outcome["puback"] = {"code": value, "reason": _code_text(code)}
            if value >= FAILURE_CODE:
                error = f"refused by the broker: {_code_text(code)} (0x{value:02X})"
                outcome |= {"status": "refused", "error": error}
                self._outcome(table_id, transaction, "refused", error)
                return outcome
            try:
                reply = await asyncio.wait_for(asyncio.shield(future), self.reply_timeout)
            except TimeoutError:
                error = f"no reply from {table_id} within {self.reply_timeout:g} s"
                if self.settings.protocol != "5":
                    error += " (under MQTT 3.1.1 a publish the broker's ACL refuses is dropped silently)"
                outcome |= {"status": "no_reply", "error": error}
                self._outcome(table_id, transaction, "no_reply", error)
                return outcome
            outcome |= {"status": reply.get("status", "error"), "reply": reply}
            if reply.get("status") != "ok":
                outcome["error"] = str(reply.get("error", ""))
            return outcome
        finally:
            self._pending.pop(key, None)

    def _outcome(self, table_id: str, transaction: str, status: str, text: str) -> None:
        self.model.command_outcome(table_id, transaction, status, text)
        self._on_change()


def _code_value(code: Any) -> int:
    return int(getattr(code, "value", code))


def _code_text(code: Any) -> str:
    if isinstance(code, ReasonCode):
        return str(code)
    return {4: "Bad user name or password", 5: "Not authorised"}.get(_code_value(code), f"code {code}")
