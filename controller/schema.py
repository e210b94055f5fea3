"""Machine-readable MQTT contract: JSON Schemas and an AsyncAPI 3 document, generated from the code's models.

Nothing here restates a field. Every schema comes from the pydantic models the controller itself builds and
validates with (`controller.events`, `controller.commands`, and the retained-topic payload models below), so
adding a field to a model changes the published contract with it.

Event schemas are JSON Schema draft 2020-12 documents of the whole envelope as published on
`<root>/events/<type>`: the envelope's `type` is pinned to that event type and `data` is that type's model
(for `round.result`, a union discriminated on `data.game`). The AsyncAPI document gathers the same schemas
under `components.schemas` and adds topics, directions, QoS and retain flags.

CLI: `tablectl schema [--event TYPE | --asyncapi] [--out DIR]`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from controller.command_base import Command, Transaction
from controller.commands import BUS_COMMANDS, INPUTS, TABLE_COMMANDS
from controller.events import Envelope, RoundResult
from controller.flow import Phase
from controller.games import EVENT_MODELS, result_union

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
ASYNCAPI_VERSION = "3.0.0"
MQTT_BINDING_VERSION = "0.2.0"
CONTENT_TYPE = "application/json"
#: every topic of the contract is QoS 1 (docs/mqtt-contract.md): at-least-once; duplicates are harmless
#: by design
QOS = 1

# The controller produces events and retained payloads and consumes commands: each is documented in the
# mode of its direction (pydantic's serialization vs validation schema). Identical for today's models, they
# differ as soon as a model gains a custom serializer or a computed field.
OUTBOUND: JsonSchemaMode = "serialization"
INBOUND: JsonSchemaMode = "validation"


# --- payload models of the retained topics and of replies --------------------------------------------
# These topics have no event model; the models live here so the bus can build its payloads from them.


class DiskStatus(BaseModel):
    """The free space of the file systems the table writes to (the smallest), as the last check found it."""

    model_config = ConfigDict(extra="forbid")

    free_bytes: int = Field(ge=0)
    status: Literal["ok", "low"] = Field(
        description="low: under the configured threshold (retention.disk_low_bytes); free space before the "
        "journal can no longer be written and the table stops"
    )
    used_bytes: int | None = Field(
        default=None,
        ge=0,
        description="what the table's own files take (journal, event archive, captures, camera frames), each "
        "kept within its retention bound",
    )


class StatusMessage(BaseModel):
    """Retained on `<root>/status`. The Last Will publishes `offline` with the same boot counter."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["online", "offline"]
    boot: int = Field(
        ge=0, description="the controller's boot counter; a new value means the controller restarted"
    )
    since: str | None = Field(default=None, description="UTC, ms: when this status began")
    delivery: Literal["refused"] | None = Field(
        default=None,
        description="present while the broker refuses the table's events (MQTT 5 PUBACK reason code >= 0x80, "
        "e.g. its ACL denies them): they wait in the outbox and are retried; absent when delivery works",
    )
    delivery_reason: str | None = Field(
        default=None, description="the broker's reason, e.g. 'Not authorized'"
    )
    delivery_code: int | None = Field(default=None, description="the PUBACK reason code, e.g. 135 (0x87)")
    refused_sequence: int | None = Field(default=None, description="the first event the broker refused")
    refused_since: str | None = Field(default=None, description="UTC, ms: when the refusals began")
    disk: DiskStatus | None = Field(
        default=None,
        description="free space where the table writes (journal, captures); absent before the first check",
    )


class DeviceMessage(BaseModel):
    """Retained on `<root>/devices/<device>`: one device's health."""

    # a snapshot may grow keys before this model does; consumers must not break on them
    model_config = ConfigDict(extra="allow")

    status: Literal["online", "offline", "fault"]
    detail: str = Field(description="what the controller knows about the status, for a supervisor to read")
    since: str | None = Field(description="UTC, ms: when this status began; null if never connected")
    code: str | None = Field(default=None, description="the device's own fault code, when it gave one")
    state: str | None = Field(
        default=None, description="the device's last informational state (e.g. the shoe's READY)"
    )


class PauseMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    reason: str
    by: str = Field(description="device | supervisor | dealer | system")
    device: str | None = Field(default=None, description="the device whose fault paused the table, if any")
    since: str | None = Field(default=None, description="UTC, ms")


class StateMessage(BaseModel):
    """Retained on `<root>/state`: everything a late subscriber needs. Never a secret card.

    Permissive on purpose: a game adds its own keys, and a consumer must ignore keys it does not know.
    """

    model_config = ConfigDict(extra="allow")

    table_id: str | None = None
    game: str | None = None
    phase: str | None = Field(
        default=None, description="one of " + ", ".join(phase.value for phase in Phase) + ", or 'paused'"
    )
    round_phase: str | None = Field(default=None, description="the round's phase, also while paused")
    round_id: str | None = None
    round_number_in_shoe: int | None = Field(
        default=None, description="1-based; null between rounds and for shoeless games"
    )
    paused: bool | None = None
    pause: PauseMessage | None = Field(
        default=None, description="why and since when the table is paused; null if not"
    )
    waiting_for_devices: list[str] | None = Field(
        default=None, description="devices not yet online since start-up; the table waits for them"
    )
    prompt: str | None = Field(default=None, description="what the dealer is told to do now")
    devices: dict[str, DeviceMessage] | None = Field(default=None, description="device name -> health")
    game_state: dict[str, Any] | None = Field(
        default=None, description="the game's public state, e.g. the public cards per position"
    )
    rejected: dict[str, int] | None = Field(default=None, description="rejected readings so far, by reason")
    last_sequence: int | None = Field(
        default=None, ge=0, description="sequence of the last event journaled (the envelope's, unpadded)"
    )


class ReplyMessage(BaseModel):
    """Published on `<root>/replies/<name>` (or an MQTT 5 response topic under replies/) for every command
    and input."""

    model_config = ConfigDict(extra="forbid")

    transaction: Transaction = Field(
        default=None,
        description="echoed from the command, to match the reply to it (null if none or invalid)",
    )
    status: Literal["ok", "error"]
    error: str | None = Field(default=None, description="what was wrong, for the sender; null when ok")
    data: dict[str, Any] | None = Field(default=None, description="the command's result, if it has one")


# --- event envelopes ---------------------------------------------------------------------------------


def event_model_name(event_type: str) -> str:
    """`round.betting_closed` -> `RoundBettingClosedEvent` (the schema's title and component name)."""
    words = re.split(r"[._\-]", event_type)
    return "".join(word[:1].upper() + word[1:] for word in words if word) + "Event"


@cache
def envelope_model(event_type: str) -> type[Envelope]:
    """The Envelope narrowed to one event type: `type` is that literal, `data` that type's data model."""
    data_model = EVENT_MODELS.get(event_type)
    if data_model is RoundResult:
        data_model = result_union()
    if data_model is None:
        raise KeyError(f"unknown event type {event_type!r}; known: {', '.join(sorted(EVENT_MODELS))}")
    # Literal[...] of a runtime value: built by subscription so the type checker does not read it as a type
    type_literal = cast(Any, Literal).__getitem__(event_type)
    return create_model(
        event_model_name(event_type),
        __base__=Envelope,
        __doc__=f"Envelope of a `{event_type}` event, as published on `<root>/events/{event_type}`.",
        type=(type_literal, Field(description="the event type, also the last topic level")),
        data=(data_model, Field(description=f"the `{event_type}` payload")),
    )


def _with_dialect(schema: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": JSON_SCHEMA_DIALECT, **schema}


def event_schema(event_type: str) -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of the whole envelope published for `event_type`."""
    return _with_dialect(envelope_model(event_type).model_json_schema(mode=OUTBOUND))


def all_event_schemas() -> dict[str, dict[str, Any]]:
    return {event_type: event_schema(event_type) for event_type in EVENT_MODELS}


def _command_table(kind: str) -> dict[str, type[Command]]:
    # the same tables parse_command reads, so the schema and the validator cannot disagree on names
    if kind == "commands":
        return {**TABLE_COMMANDS, **BUS_COMMANDS}
    if kind == "inputs":
        return dict(INPUTS)
    raise KeyError(f"unknown kind {kind!r}; known: commands, inputs")


def command_schema(kind: str, name: str) -> dict[str, Any]:
    """JSON Schema of the payload of `<root>/<kind>/<name>/<user>` (the sender is the topic's `<user>`, never
    a payload field)."""
    table = _command_table(kind)
    model = table.get(name)
    if model is None:
        raise KeyError(f"unknown {kind[:-1]} {name!r}; known: {', '.join(sorted(table))}")
    return _with_dialect(model.model_json_schema(mode=INBOUND))


def reply_schema() -> dict[str, Any]:
    return _with_dialect(ReplyMessage.model_json_schema(mode=OUTBOUND))


def status_schema() -> dict[str, Any]:
    return _with_dialect(StatusMessage.model_json_schema(mode=OUTBOUND))


def state_schema() -> dict[str, Any]:
    return _with_dialect(StateMessage.model_json_schema(mode=OUTBOUND))


def device_schema() -> dict[str, Any]:
    return _with_dialect(DeviceMessage.model_json_schema(mode=OUTBOUND))


# --- AsyncAPI 3 --------------------------------------------------------------------------------------

COMPONENT_SCHEMA_REF = "#/components/schemas/"

PARAMETER_DESCRIPTIONS = {
    "studio_id": "the studio's id (first level of the topic root)",
    "table_id": "the table's id, unique within the studio",
    "device": "a device's configured name, e.g. shoe or wheel",
    "name": "the command or input being answered",
    "user": "the sender's MQTT user name, recorded as who sent the command; the broker's ACL lets each user "
    "publish only under its own name. Reserved (refused): system, device, replay, panel, dealer:*",
}


def _pointer(*tokens: str) -> str:
    """A local JSON pointer reference (RFC 6901 escaping), e.g. #/channels/events.round.opened."""
    return "#/" + "/".join(token.replace("~", "~0").replace("/", "~1") for token in tokens)


def _ref(*tokens: str) -> dict[str, str]:
    return {"$ref": _pointer(*tokens)}


def _drop_openapi_discriminators(node: Any) -> None:
    """pydantic writes OpenAPI's object-valued `discriminator`; AsyncAPI's Schema Object wants a string
    with inheritance semantics. The `const` on each branch's tag already tells the branches apart."""
    if isinstance(node, dict):
        if isinstance(node.get("discriminator"), dict):
            del node["discriminator"]
        for value in node.values():
            _drop_openapi_discriminators(value)
    elif isinstance(node, list):
        for item in node:
            _drop_openapi_discriminators(item)


def _component_schemas() -> tuple[dict[str, Any], dict[Any, dict[str, str]]]:
    """All payload schemas in one namespace, refs pointing into components/schemas."""
    entries: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (envelope_model(event_type), OUTBOUND) for event_type in EVENT_MODELS
    ]
    entries += [(model, INBOUND) for model in _command_table("commands").values()]
    entries += [(model, INBOUND) for model in _command_table("inputs").values()]
    entries += [(model, OUTBOUND) for model in (StatusMessage, StateMessage, DeviceMessage, ReplyMessage)]
    entries = list(dict.fromkeys(entries))
    mapping, definitions = models_json_schema(entries, ref_template=COMPONENT_SCHEMA_REF + "{model}")
    schemas = definitions.get("$defs", {})
    _drop_openapi_discriminators(schemas)
    return schemas, {model: ref for (model, _mode), ref in mapping.items()}


def _message(
    name: str, title: str, payload_ref: dict[str, str], summary: str, correlated: bool = False
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "name": name,
        "title": title,
        "summary": summary,
        "contentType": CONTENT_TYPE,
        "payload": payload_ref,
    }
    if correlated:
        message["correlationId"] = {
            "description": "the sender's `transaction`, echoed in the reply",
            "location": "$message.payload#/transaction",
        }
    return message


def _parameters(address: str, reply_names: list[str]) -> dict[str, Any]:
    parameters: dict[str, Any] = {}
    for name in re.findall(r"\{([^{}]+)\}", address):
        parameter: dict[str, Any] = {"description": PARAMETER_DESCRIPTIONS.get(name, name)}
        if name == "name":
            parameter["enum"] = reply_names
        elif name == "device":
            parameter["examples"] = ["shoe", "wheel"]
        parameters[name] = parameter
    return parameters


def _description(model: type[BaseModel]) -> str:
    return (model.__doc__ or "").strip().split("\n")[0]


def asyncapi_document(studio_id: str = "{studio_id}", table_id: str = "{table_id}") -> dict[str, Any]:
    """The whole MQTT contract as an AsyncAPI 3.0.0 document, from the controller's point of view.

    With the default ids the topic root keeps `{studio_id}` / `{table_id}` as channel parameters; pass real
    ids to document one table.
    """
    root = f"studio/{studio_id}/table/{table_id}"
    schemas, refs = _component_schemas()
    commands, inputs = _command_table("commands"), _command_table("inputs")
    reply_names = sorted({*commands, *inputs})

    messages: dict[str, Any] = {
        "status": _message("status", "Controller status", refs[StatusMessage], _description(StatusMessage)),
        "state": _message("state", "Table state", refs[StateMessage], _description(StateMessage)),
        "device": _message("device", "Device health", refs[DeviceMessage], _description(DeviceMessage)),
        "reply": _message("reply", "Reply", refs[ReplyMessage], _description(ReplyMessage), correlated=True),
    }
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}

    def add(
        channel_id: str,
        address: str,
        message_id: str,
        *,
        action: Literal["send", "receive"],
        retained: bool,
        description: str,
        reply: bool = False,
    ) -> None:
        channel: dict[str, Any] = {
            "address": address,
            "description": description,
            "messages": {message_id: _ref("components", "messages", message_id)},
        }
        parameters = _parameters(address, reply_names)
        if parameters:
            channel["parameters"] = parameters
        channels[channel_id] = channel
        operation: dict[str, Any] = {
            "action": action,
            "channel": _ref("channels", channel_id),
            "summary": f"the controller {'publishes' if action == 'send' else 'subscribes to'} {address}",
            "messages": [_ref("channels", channel_id, "messages", message_id)],
            "bindings": {"mqtt": {"qos": QOS, "retain": retained, "bindingVersion": MQTT_BINDING_VERSION}},
        }
        if reply:
            operation["reply"] = {
                "channel": _ref("channels", "replies"),
                "messages": [_ref("channels", "replies", "messages", "reply")],
            }
        operations[f"{action}.{channel_id}"] = operation

    add(
        "status",
        f"{root}/status",
        "status",
        action="send",
        retained=True,
        description="Availability. Republished on every (re)connect; the Last Will sets `offline`.",
    )
    add(
        "state",
        f"{root}/state",
        "state",
        action="send",
        retained=True,
        description="Full snapshot of the table; a late subscriber needs nothing else.",
    )
    add(
        "devices",
        f"{root}/devices/{{device}}",
        "device",
        action="send",
        retained=True,
        description="One device's health.",
    )
    for event_type in EVENT_MODELS:
        message_id = f"event.{event_type}"
        messages[message_id] = _message(
            event_type,
            event_model_name(event_type),
            refs[envelope_model(event_type)],
            f"`{event_type}` event envelope",
        )
        add(
            f"events.{event_type}",
            f"{root}/events/{event_type}",
            message_id,
            action="send",
            retained=False,
            description="Event stream: at-least-once, in order; `id` de-duplicates, `sequence` reveals gaps.",
        )
    for kind, table, singular in (("commands", commands, "command"), ("inputs", inputs, "input")):
        for name, model in table.items():
            message_id = f"{singular}.{name}"
            messages[message_id] = _message(
                name,
                model.__name__,
                refs[model],
                _description(model) or f"the `{name}` {singular}",
                correlated=True,
            )
            add(
                f"{kind}.{name}",
                f"{root}/{kind}/{name}/{{user}}",
                message_id,
                action="receive",
                retained=False,
                description=(
                    "The last level is the sender's MQTT user name (its identity on record). Validated "
                    f"before anything changes; answered on replies/{name}. Repeating it with the same "
                    "`transaction` "
                    "from the same user gets the first reply again, without applying it twice."
                ),
                reply=True,
            )
    add(
        "replies",
        f"{root}/replies/{{name}}",
        "reply",
        action="send",
        retained=False,
        description=(
            "Reply to a command or input; or on the MQTT 5 response topic the sender gave, if that lies "
            "under replies/ (any other response topic is ignored)."
        ),
    )

    return {
        "asyncapi": ASYNCAPI_VERSION,
        "info": {
            "title": "tablectl table controller",
            "version": _version(),
            "description": (
                "MQTT contract of one casino table controller: availability, state, device health, the event "
                "stream, and the commands and inputs it accepts. Generated from the controller's models."
            ),
        },
        "defaultContentType": CONTENT_TYPE,
        "servers": {
            "broker": {
                "host": "{broker}",
                "protocol": "mqtt",
                "description": "The studio's MQTT broker (3.1.1 or 5; TLS and username/password supported).",
                "variables": {"broker": {"description": "host:port of the broker"}},
                "security": [_ref("components", "securitySchemes", "userPassword")],
                "bindings": {
                    "mqtt": {
                        "lastWill": {"topic": f"{root}/status", "qos": QOS, "retain": True},
                        "bindingVersion": MQTT_BINDING_VERSION,
                    }
                },
            }
        },
        "channels": channels,
        "operations": operations,
        "components": {
            "schemas": schemas,
            "messages": messages,
            "securitySchemes": {"userPassword": {"type": "userPassword"}},
        },
    }


def _version() -> str:
    try:
        return metadata.version("tablectl")
    except metadata.PackageNotFoundError:  # running from a source tree
        return "0.0.0"


# --- CLI ---------------------------------------------------------------------------------------------


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--event", metavar="TYPE", choices=sorted(EVENT_MODELS), help="only this event type's schema"
    )
    what.add_argument("--asyncapi", action="store_true", help="only the AsyncAPI document")
    parser.add_argument("--out", metavar="DIR", type=Path, help="write files into DIR instead of printing")
    parser.add_argument(
        "--studio-id", default="{studio_id}", help="document one studio (default: a parameter)"
    )
    parser.add_argument("--table-id", default="{table_id}", help="document one table (default: a parameter)")


def _documents(args: argparse.Namespace) -> Iterator[tuple[str, dict[str, Any]]]:
    """(file name, document) pairs selected by the arguments."""
    if args.event:
        yield f"{args.event}.schema.json", event_schema(args.event)
        return
    if not args.asyncapi:
        for event_type, schema in all_event_schemas().items():
            yield f"{event_type}.schema.json", schema
    if args.asyncapi or args.out is not None:
        yield "asyncapi.json", asyncapi_document(args.studio_id, args.table_id)


def _dumps(document: Any) -> str:
    return json.dumps(document, indent=2) + "\n"


def run(args: argparse.Namespace) -> int:
    """Handler of `tablectl schema` (set as `func` by `register`)."""
    documents = dict(_documents(args))
    if args.out is None:
        if args.event or args.asyncapi:
            (document,) = documents.values()
        else:
            document = {name.removesuffix(".schema.json"): schema for name, schema in documents.items()}
        sys.stdout.write(_dumps(document))
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, document in documents.items():
        path = args.out / name
        path.write_text(_dumps(document), encoding="utf-8")
        print(path)
    return 0


SUMMARY = "print or write the JSON Schemas and the AsyncAPI document of the MQTT contract"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `schema` to the `tablectl` command line; dispatch with `args.func(args)`."""
    parser = subparsers.add_parser("schema", help=SUMMARY, description=SUMMARY)
    _add_arguments(parser)
    parser.set_defaults(func=run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tablectl schema", description=SUMMARY)
    _add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
