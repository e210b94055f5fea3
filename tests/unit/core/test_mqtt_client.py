"""The aiomqtt internals `controller.mqtt_client.AcknowledgingClient` relies on, checked against the installed
aiomqtt and paho-mqtt: an upgrade that renames, reshapes or stops registering one of them fails here."""

from __future__ import annotations

import asyncio
import inspect
import re
import tomllib
from importlib.metadata import version

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
    for used in ("publish", "loop_write"):
        assert callable(getattr(client._client, used))


def test_the_installed_versions_are_the_minor_releases_pinned() -> None:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for name in ("aiomqtt", "paho-mqtt"):
        pin = next(d for d in dependencies if re.match(rf"{name}\b", d))
        low, high = re.fullmatch(rf"{name}>=(\d+\.\d+),<(\d+\.\d+)", pin).groups()  # type: ignore[union-attr]
        installed = tuple(int(part) for part in version(name).split(".")[:2])
        assert installed == tuple(int(part) for part in low.split(".")), f"{name} {version(name)} vs {pin}"
        assert installed < tuple(int(part) for part in high.split("."))
