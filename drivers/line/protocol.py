"""A line device's message table, and the parsing every line device shares. Pure: text in, messages out.

Every line device speaks `HELLO`, `HB` and `STATE <s>` and understands the host's `ACK <seq>` and `STATUS?`
(`drivers.line.framing`). A device protocol module declares a `LineProtocol`: the states it reports, the
parsers of its own messages by name, and its host commands; `parse_device_message` /
`parse_host_message` then take a line BODY (checksum already verified by `parse_frame`) and return a message
or a `ParseFailure`. They never raise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from drivers.line.fields import parse_id_and_count, parse_seq_only
from drivers.line.framing import (
    MALFORMED_FIELDS,
    UNKNOWN_MESSAGE,
    Ack,
    Heartbeat,
    Hello,
    ParseFailure,
    State,
    StatusQuery,
    parse_ack,
    parse_common,
    split_fields,
)

#: Parses the fields after a message's name (the name itself is the table key).
FieldsParser = Callable[[list[str]], Any]

T = TypeVar("T")


def id_and_count(message: Callable[[str, int], T], digits: int) -> Callable[[list[str]], T | ParseFailure]:
    """The parser of a host command `<NAME> <id> <count>` (`SHUFFLE S-1 8`, `SHAKE C-7 3`)."""

    def parse(args: list[str]) -> T | ParseFailure:
        fields = parse_id_and_count(args, digits)
        return MALFORMED_FIELDS if fields is None else message(*fields)

    return parse


def seq_only(message: Callable[[int], T]) -> Callable[[list[str]], T | ParseFailure]:
    """The parser of a device message whose only field is its seq (`NOREAD <seq>`, `CUT <seq>`)."""

    def parse(args: list[str]) -> T | ParseFailure:
        seq = parse_seq_only(args)
        return MALFORMED_FIELDS if seq is None else message(seq)

    return parse


#: A device's message union (including the common Hello, Heartbeat and State) and its host command union.
DeviceMessageT = TypeVar("DeviceMessageT")
HostMessageT = TypeVar("HostMessageT")


@dataclass(frozen=True)
class LineProtocol(Generic[DeviceMessageT, HostMessageT]):
    """What one line device says and understands beyond the common messages."""

    #: the states `STATE <s>` may report; any other is a malformed line
    states: frozenset[str]
    #: device message name -> parser of its fields (returns the message or a ParseFailure)
    device_messages: Mapping[str, FieldsParser]
    #: host commands without fields, by their whole body (`STATUS?` is added)
    host_bodies: Mapping[str, object] = field(default_factory=dict)
    #: host command name -> parser of its fields (for commands that take some)
    host_messages: Mapping[str, FieldsParser] = field(default_factory=dict)
    #: the device messages that carry a seq, are retransmitted until ACKed and are de-duplicated
    acked: tuple[type, ...] = ()

    def parse_device_message(self, body: str) -> DeviceMessageT | ParseFailure:
        """A device message (`Hello`, `Heartbeat`, `State` or the device's own) from its line body."""
        return cast("DeviceMessageT | ParseFailure", self._parse_device_message(body))

    def parse_host_message(self, body: str) -> HostMessageT | ParseFailure:
        """A host command (`Ack`, `StatusQuery` or the device's own) from its line body (for simulators)."""
        return cast("HostMessageT | ParseFailure", self._parse_host_message(body))

    def _parse_device_message(self, body: str) -> object:
        common = parse_common(body)
        if common is not None:
            return common
        fields = split_fields(body)
        if fields is None:
            return MALFORMED_FIELDS
        name, args = fields[0], fields[1:]
        if name == "STATE":
            if len(args) != 1 or args[0] not in self.states:
                return MALFORMED_FIELDS
            return State(args[0])
        parser = self.device_messages.get(name)
        return UNKNOWN_MESSAGE if parser is None else parser(args)

    def _parse_host_message(self, body: str) -> object:
        ack = parse_ack(body)
        if ack is not None:
            return ack
        if body == "STATUS?":
            return StatusQuery()
        exact = self.host_bodies.get(body)
        if exact is not None:
            return exact
        if not self.host_messages:
            return UNKNOWN_MESSAGE
        fields = split_fields(body)
        if fields is None:
            return MALFORMED_FIELDS
        parser = self.host_messages.get(fields[0])
        return UNKNOWN_MESSAGE if parser is None else parser(fields[1:])

    def message_seq(self, message: object) -> int | None:
        """The seq the device expects an ACK for, or None for messages it sends only once."""
        if isinstance(message, self.acked):
            seq: int = message.seq  # type: ignore[attr-defined]
            return seq
        return None


__all__ = [
    "MALFORMED_FIELDS",
    "UNKNOWN_MESSAGE",
    "Ack",
    "FieldsParser",
    "Heartbeat",
    "Hello",
    "LineProtocol",
    "ParseFailure",
    "State",
    "StatusQuery",
    "id_and_count",
    "seq_only",
]
