"""The sans-IO interface every device driver implements.

A `DeviceSession` is a device's protocol plus the host-side rules for it (acknowledgements, de-duplication,
heartbeat watchdog, exception timing). It never touches a port or a clock: the caller passes bytes and the
time in, and takes readings and bytes to send out; `next_deadline()` says when it next needs the time.
The live service (`drivers.runner`) and the replay command drive the very same session objects, so a capture
replays exactly as it was lived.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from drivers.readings import Reading


class UnknownDeviceCommand(ValueError):
    """A command the device (or its protocol) does not support."""


@dataclass(frozen=True, slots=True)
class DeviceCommand:
    """A request from the table to a device, e.g. `DeviceCommand("lock")` for a shoe."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class SessionStats:
    """Counters an operator looks at: what was rejected and why (never silently dropped)."""

    bytes_received: int = 0
    lines_received: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0

    def reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    @property
    def rejected_total(self) -> int:
        return sum(self.rejected.values())


class SessionOptions(BaseModel):
    """A protocol's session options (`[devices.<name>.options]`): the keyword arguments of its session.

    A protocol with options subclasses this with one field per constructor keyword, defaults included;
    unknown keys are refused, so a typo fails when the config is loaded, not when the table starts."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DeviceSession(ABC):
    """Host side of one device link. Subclasses: one per protocol (`shoe-line`, `cammegh-ss2`, ...)."""

    #: protocol name as used in config (`protocol = "shoe-line"`)
    protocol: str = ""
    #: the options its constructor takes besides the device name (none by default)
    Options: ClassVar[type[SessionOptions]] = SessionOptions

    def __init__(self, name: str) -> None:
        self.name = name
        self.stats = SessionStats()
        self._outgoing = bytearray()

    # -- inputs ------------------------------------------------------------------------------------
    @abstractmethod
    def connection_made(self, now: float) -> list[Reading]:
        """The transport opened (first time or after a reconnect). May queue a handshake."""

    @abstractmethod
    def connection_lost(self, now: float, reason: str) -> list[Reading]:
        """The transport closed or failed. Must return a DeviceOffline reading."""

    @abstractmethod
    def data_received(self, data: bytes, now: float) -> list[Reading]:
        """Bytes from the device. Never raises on bad input: bad lines are counted in `stats`."""

    @abstractmethod
    def tick(self, now: float) -> list[Reading]:
        """The time passed `now` with no bytes: fire the timers that are due (watchdogs, retransmits, polls).

        Calling it early, or more often than `next_deadline()` asks, is harmless: it does nothing new."""

    @abstractmethod
    def next_deadline(self) -> float | None:
        """The earliest time at which `tick` must be called even if no bytes arrive; None: no timer pending.

        Like aioquic's `get_timer()` / quinn-proto's `poll_timeout()`: the caller sleeps until this time or
        the next bytes, whichever comes first, then calls `tick` (a replay jumps straight to it). Ticking
        at each deadline gives the same readings and bytes as ticking every 100 ms. It may change after
        every input (`connection_made`, `data_received`, `command`, `tick`): ask again each time."""

    def next_reading_deadline(self) -> float | None:
        """The earliest deadline at which `tick` may produce a reading (a watchdog), leaving out the timers
        that only send bytes (polls, repeated requests). A replay, which sends nothing anywhere, ticks only
        at these: the readings are the same as when ticking at every deadline. Default: `next_deadline()`."""
        return self.next_deadline()

    def command(self, command: DeviceCommand, now: float) -> list[Reading]:
        """A request from the table. Raise UnknownDeviceCommand for what this device cannot do."""
        raise UnknownDeviceCommand(f"{self.protocol} device {self.name!r} has no command {command.name!r}")

    # -- acknowledged messages across a restart ----------------------------------------------------
    # A reading of a message the device repeats until it is ACKed carries the message's key (`Reading.ack`,
    # set by the session as it parses): the table journals that key as delivered with the reading's events.
    def delivered_before(self, raw: str) -> None:
        """The table journaled this message's readings before it restarted, but its ACK may not have left:
        the device's repeat of it is a duplicate, not a new message."""
        return None

    # -- outputs -----------------------------------------------------------------------------------
    def data_to_send(self) -> bytes:
        """Drain the bytes queued for the device."""
        out = bytes(self._outgoing)
        self._outgoing.clear()
        return out

    def _send(self, data: bytes) -> None:
        self._outgoing += data
