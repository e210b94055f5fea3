"""`AcknowledgingClient`: aiomqtt's MQTT client plus what aiomqtt drops, for the table's bus
(`controller.bus`) and the supervisors' console (`controller.console.link`).

What it adds:

- the reason code of the broker's PUBACK: aiomqtt's `publish` returns once the PUBACK arrives, whatever its
  code, so an MQTT 5 broker's "not authorized" (0x87) looks like a delivery (`publish_acknowledged`,
  `publish_nowait` with a callback per publish);
- the broker's Receive Maximum from its CONNACK (`receive_maximum`), and whether the broker closed the
  connection because another client connected with the same client id (`taken_over`, MQTT 5 DISCONNECT
  0x8E): aiomqtt only raises "Disconnected during message iteration" and the like;
- a publish's writer added at once on the loop's own thread, and `flush()`, rather than one wake-up of the
  loop per publish;
- `while_connected`: an await that ends as soon as the connection is lost.

It does so through aiomqtt's INTERNALS, which is why `aiomqtt` (and `paho-mqtt`, whose callback API v2 the
hooks receive) are pinned to a minor release in pyproject.toml, and why tests/unit/core/test_mqtt_client.py
checks them against the installed versions: an upgrade that renames or reshapes one fails there, loudly,
before it fails a table. It relies on:

- the methods aiomqtt registers as paho's callbacks in `aiomqtt.Client.__init__`, overridden here and each
  calling aiomqtt's own: `_on_connect(client, userdata, flags, reason_code, properties=None)` (paho's
  `on_connect`: the CONNACK's properties), `_on_disconnect(client, userdata, flags, reason_code,
  properties=None)` (`on_disconnect`: the DISCONNECT's reason code and whether the server sent it),
  `_on_publish(client, userdata, mid, reason_code, properties)` (`on_publish`: the PUBACK's reason code),
  `_on_socket_register_write(client, userdata, sock)` (`on_socket_register_write`);
- the attributes `_client` (the paho client: `publish`, `loop_write`), `_loop` (the event loop the client
  was made on) and `_disconnected` (the future aiomqtt completes when the connection is lost).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiomqtt
import paho.mqtt.client as paho
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from drivers.waiting import with_timeout

#: how long a publish waits for its PUBACK by default
ACK_TIMEOUT_SECONDS = 10.0
#: MQTT 5 DISCONNECT reason code "Session taken over": another client connected with the same client id
SESSION_TAKEN_OVER = 0x8E


def code_value(code: Any) -> int:
    """A reason code as a number: SUBACK codes are ints under MQTT 3.1.1, ReasonCode objects under MQTT 5."""
    return int(getattr(code, "value", code))


class AcknowledgingClient(aiomqtt.Client):
    """aiomqtt's client plus the PUBACK's reason code, the broker's Receive Maximum and its takeover
    notice (see the module's docstring for the aiomqtt internals this relies on)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pubacks: dict[int, asyncio.Future[ReasonCode]] = {}
        self._ack_callbacks: dict[int, Callable[[ReasonCode], None]] = {}
        #: the broker's Receive Maximum (MQTT 5 CONNACK): how many QoS 1 publishes it takes in flight
        self.receive_maximum: int | None = None
        #: the broker closed this connection because another client connected with the same client id
        #: (MQTT 5 DISCONNECT 0x8E). aiomqtt only raises "Disconnected during message iteration" and the like,
        #: with the code on an exception's __cause__ at best; paho hands it to on_disconnect.
        self.taken_over = False
        #: inside `publish_nowait`: paho's request for a writer waits for `flush()` (see there)
        self._batching = False
        self._writer_wanted = False

    def _on_connect(
        self,
        client: paho.Client,
        userdata: Any,
        flags: Any,
        reason_code: ReasonCode,
        properties: Properties | None = None,
    ) -> None:
        maximum = getattr(properties, "ReceiveMaximum", None)
        if isinstance(maximum, int) and maximum > 0:
            self.receive_maximum = maximum
        super()._on_connect(client, userdata, flags, reason_code, properties)

    def _on_disconnect(
        self,
        client: paho.Client,
        userdata: Any,
        flags: Any,
        reason_code: ReasonCode,
        properties: Properties | None = None,
    ) -> None:
        from_server = getattr(flags, "is_disconnect_packet_from_server", False)
        if from_server and code_value(reason_code) == SESSION_TAKEN_OVER:
            self.taken_over = True
        super()._on_disconnect(client, userdata, flags, reason_code, properties)

    def _on_publish(
        self,
        client: paho.Client,
        userdata: Any,
        mid: int,
        reason_code: ReasonCode,
        properties: Properties,
    ) -> None:
        callback = self._ack_callbacks.pop(mid, None)
        if callback is not None:
            callback(reason_code)
        ack = self._pubacks.pop(mid, None)
        if ack is not None and not ack.done():
            ack.set_result(reason_code)
        super()._on_publish(client, userdata, mid, reason_code, properties)

    def _on_socket_register_write(self, client: paho.Client, userdata: Any, sock: Any) -> None:
        # aiomqtt schedules add_writer with call_soon_threadsafe (paho may call this from the executor thread
        # that connects): a wake-up of the loop per publish, and a writer added after `flush()` already wrote.
        # On the loop's own thread the writer is added at once.
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:
            on_loop = False
        if not on_loop:
            super()._on_socket_register_write(client, userdata, sock)
            return
        if self._batching:
            # `flush()` follows and writes it now: a writer added here would only be removed again by it
            self._writer_wanted = True
            return
        self._add_writer(client, sock)

    def _add_writer(self, client: paho.Client, sock: Any) -> None:

        def write() -> None:
            try:
                client.loop_write()
            except Exception as exc:  # a broken pipe: the connection is gone (as aiomqtt does)
                if not self._disconnected.done():
                    self._disconnected.set_exception(exc)

        self._loop.add_writer(sock.fileno(), write)

    async def while_connected(self, work: Awaitable[Any]) -> Any:
        """`work`'s result, or MqttError as soon as the connection is lost. aiomqtt's subscribe and publish
        wait for their acknowledgement until their timeout even when the broker has already closed the
        connection (a session taken over, say): the table would sit on a dead link for that long."""
        task = asyncio.ensure_future(work)
        try:
            await asyncio.wait((task, self._disconnected), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        lost = self._disconnected.exception()
        raise aiomqtt.MqttError("the connection was lost") from lost

    def publish_nowait(self, topic: str, payload: str, on_ack: Callable[[ReasonCode], None]) -> None:
        """Publish at QoS 1, not retained, without waiting: `on_ack` gets the PUBACK's reason code (on this
        loop). Call `flush()` after the last of a batch, before the next await: the bytes go out there (what
        the socket does not take then goes on the loop's writer), not before."""
        self._batching = True
        try:
            info = self._client.publish(topic, payload, qos=1)
        finally:
            self._batching = False
        if info.rc != paho.MQTT_ERR_SUCCESS:
            raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
        self._ack_callbacks[info.mid] = on_ack

    def flush(self) -> None:
        """Write what is queued now rather than on the loop's next turn; what the socket does not take goes
        on the loop's writer callback. After `publish_nowait`, no writer is added for what this writes at
        once: two epoll changes less per event."""
        wanted, self._writer_wanted = self._writer_wanted, False
        try:
            self._client.loop_write()
        finally:
            sock = self._client.socket()
            if wanted and sock is not None and self._client.want_write():
                self._add_writer(self._client, sock)

    async def publish_acknowledged(
        self, topic: str, payload: bytes | str, *, timeout: float = ACK_TIMEOUT_SECONDS
    ) -> ReasonCode:
        """Publish at QoS 1, not retained; return the PUBACK's reason code (always success under 3.1.1)."""
        info = self._client.publish(topic, payload, qos=1)
        if info.rc != paho.MQTT_ERR_SUCCESS:
            raise aiomqtt.MqttCodeError(info.rc, "Could not publish message")
        # No await since paho's publish: the PUBACK is read on this loop, so it cannot have been handled yet.
        ack: asyncio.Future[ReasonCode] = asyncio.get_running_loop().create_future()
        self._pubacks[info.mid] = ack
        try:
            return await with_timeout(ack, timeout)
        except TimeoutError:
            raise aiomqtt.MqttError("the broker did not acknowledge a publish in time") from None
        finally:
            self._pubacks.pop(info.mid, None)
