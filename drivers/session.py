"""The sans-IO interface every device driver implements.

A `DeviceSession` is a device's protocol plus the host-side rules for it (acknowledgements, de-duplication,
heartbeat watchdog, exception timing). It never touches a port or a clock: the caller passes bytes and the
time in, and takes readings and bytes to send out. The live service (`drivers.runner`) and the replay command
drive the very same session objects, so a capture replays exactly as it was lived.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

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


class DeviceSession(ABC):
    """Host side of one device link. Subclasses: one per protocol (`shoe-line`, `cammegh-ss2`, ...)."""

    #: protocol name as used in config (`protocol = "shoe-line"`)
    protocol: str = ""

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
        """Called about every 100 ms (and between capture records in a replay): timeouts, polls."""

    def next_deadline(self) -> float | None:
        """When `tick` must be called even if no bytes arrive (a watchdog, a poll); None: not until
        something else happens."""
        return None

    def command(self, command: DeviceCommand, now: float) -> list[Reading]:
        """A request from the table. Raise UnknownDeviceCommand for what this device cannot do."""
        raise UnknownDeviceCommand(f"{self.protocol} device {self.name!r} has no command {command.name!r}")

    # -- acknowledged messages across a restart ----------------------------------------------------
    def acknowledges(self, raw: str) -> bool:
        """Whether `raw` (a reading's device text) is a message the device repeats until the host ACKs it."""
        return False

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
