"""The aiomqtt internals `controller.mqtt_client.AcknowledgingClient` relies on, checked against the installed
aiomqtt and paho-mqtt: an upgrade that renames, reshapes or stops registering one of them fails here."""

from __future__ import annotations

import asyncio
import inspect
import re
import socket
import tomllib
from importlib.metadata import version
from typing import Any

import aiomqtt
import paho.mqtt.client as paho
import pytest

from controller.mqtt_client import AcknowledgingClient
from tests.helpers.paths import REPO

pytestmark = pytest.mark.unit

#: each private hook the client overrides -> the parameters it expects aiomqtt's own to take (and to be
#: called with by paho's callback API v2)
HOOKS = {
    "_on_connect": ["self", "client", "userdata", "flags", "reason_code", "properties"],
    "_on_disconnect": ["self", "client", "userdata", "flags", "reason_code", "properties"],
    "_on_publish": ["self", "client", "userdata", "mid", "reason_code", "properties"],
    "_on_socket_register_write": ["self", "client", "userdata", "sock"],
}
#: the paho callback each hook is registered as
PAHO_CALLBACKS = {
    "_on_connect": "on_connect",
    "_on_disconnect": "on_disconnect",
    "_on_publish": "on_publish",
    "_on_socket_register_write": "on_socket_register_write",
}


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_each_overridden_hook_exists_in_aiomqtt_with_the_expected_parameters(hook: str) -> None:
    assert hook in vars(AcknowledgingClient), f"AcknowledgingClient no longer overrides {hook}"
    theirs = getattr(aiomqtt.Client, hook, None)
    assert theirs is not None, f"aiomqtt {aiomqtt.__version__} has no Client.{hook}"
    assert list(inspect.signature(theirs).parameters) == HOOKS[hook]
    assert list(inspect.signature(getattr(AcknowledgingClient, hook)).parameters) == HOOKS[hook]


def test_aiomqtt_registers_the_hooks_as_paho_callbacks_api_v2_and_keeps_the_attributes_used() -> None:
    async def made() -> AcknowledgingClient:
        return AcknowledgingClient("127.0.0.1", 1883, protocol=aiomqtt.ProtocolVersion.V5)

    client = asyncio.run(made())
    assert isinstance(client._client, paho.Client)
    assert client._client._callback_api_version == paho.CallbackAPIVersion.VERSION2
    for hook, callback in PAHO_CALLBACKS.items():
        assert getattr(client._client, callback) == getattr(client, hook), f"{hook} is not paho's {callback}"
    assert isinstance(client._loop, asyncio.AbstractEventLoop)
    assert isinstance(client._disconnected, asyncio.Future)
    for used in ("publish", "loop_write", "socket", "want_write"):
        assert callable(getattr(client._client, used))


def test_the_installed_versions_are_the_minor_releases_pinned() -> None:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for name in ("aiomqtt", "paho-mqtt"):
        pin = next(d for d in dependencies if re.match(rf"{name}\b", d))
        low, high = re.fullmatch(rf"{name}>=(\d+\.\d+),<(\d+\.\d+)", pin).groups()  # type: ignore[union-attr]
        installed = tuple(int(part) for part in version(name).split(".")[:2])
        assert installed == tuple(int(part) for part in low.split(".")), f"{name} {version(name)} vs {pin}"
        assert installed < tuple(int(part) for part in high.split("."))


def test_a_batch_published_then_flushed_adds_no_writer_unless_the_socket_keeps_some_of_it() -> None:
    # publish_nowait leaves the writing to flush(): a writer is added only for what the socket did not take
    async def scenario() -> tuple[bytes, int, bool, bool]:
        client = AcknowledgingClient("127.0.0.1", 1883, protocol=aiomqtt.ProtocolVersion.V5)
        ours, broker = socket.socketpair()
        ours.setblocking(False)
        broker.setblocking(False)
        client._client._sock = ours  # as if connected: paho writes to its socket
        loop = asyncio.get_running_loop()
        added: list[int] = []
        add_writer = loop.add_writer

        def counted(fd: int, callback: Any, *args: Any) -> None:
            added.append(fd)
            add_writer(fd, callback, *args)

        loop.add_writer = counted  # type: ignore[method-assign]
        try:
            acks: list[object] = []
            client.publish_nowait("t/a", "one", acks.append)
            client.publish_nowait("t/b", "two", acks.append)
            client.flush()
            received = broker.recv(65536)
            writers_for_the_batch = len(added)
            no_writer = not loop.remove_writer(ours.fileno())
            # a payload larger than the socket takes at once: the rest goes on the loop's writer
            client.publish_nowait("t/c", "x" * (8 << 20), acks.append)
            client.flush()
            writer_added = loop.remove_writer(ours.fileno())
            return received, writers_for_the_batch, no_writer, writer_added
        finally:
            client._client._sock = None
            ours.close()
            broker.close()

    received, writers_for_the_batch, no_writer, writer_added = asyncio.run(scenario())
    assert b"t/a" in received and b"one" in received and b"t/b" in received and b"two" in received
    assert writers_for_the_batch == 0  # none added then removed again: what flush wrote needed none
    assert no_writer
    assert writer_added
