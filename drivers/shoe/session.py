"""`ShoeSession`: host side of a `shoe-line` card shoe. Pure: bytes and time in, readings and bytes out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from drivers.line.fields import seq_text
from drivers.line.session import CommandBuilder, LineDeviceSession, fixed
from drivers.readings import CardSeen, CardUnread, CutCardSeen, Reading
from drivers.shoe.protocol import (
    LINE_PROTOCOL,
    Card,
    Cut,
    DeviceMessage,
    Fault,
    InvalidCardRead,
    Lock,
    NoRead,
    Rescan,
    StatusQuery,
    Unlock,
)


class ShoeSession(LineDeviceSession[DeviceMessage]):
    protocol = "shoe-line"
    line_protocol = LINE_PROTOCOL
    commands: ClassVar[Mapping[str, CommandBuilder]] = {
        "lock": fixed(Lock()),
        "unlock": fixed(Unlock()),
        "status": fixed(StatusQuery()),
    }
    fault_states: ClassVar[Mapping[str, str]] = {
        "COVER_OPEN": "shoe cover is open",
        "FAULT": "shoe reports a fault",
    }
    # A cover opened while the shoe reports another fault is reported all the same.
    overriding_fault_states = frozenset({"COVER_OPEN"})
    operational_states = frozenset({"READY", "LOCKED"})

    def handle_message(self, message: DeviceMessage, raw: str, now: float) -> list[Reading]:
        device = self.name
        if isinstance(message, Card):
            return [CardSeen(device=device, time=now, raw=raw, code=message.code, ref=seq_text(message.seq))]
        if isinstance(message, Rescan):
            ref = seq_text(message.seq)
            return [CardSeen(device=device, time=now, raw=raw, code=message.code, ref=ref, rescan_of=ref)]
        if isinstance(message, NoRead):
            return [CardUnread(device=device, time=now, raw=raw, ref=seq_text(message.seq))]
        if isinstance(message, InvalidCardRead):
            # Acknowledged already (by seq); the round waits for a re-scan or a hand-entered card.
            self.stats.reject("bad card code")
            ref = seq_text(message.seq)
            rescan_of = ref if message.kind == "RESCAN" else None  # the same card again, not a new one
            return [CardUnread(device=device, time=now, raw=raw, ref=ref, rescan_of=rescan_of)]
        if isinstance(message, Cut):
            return [CutCardSeen(device=device, time=now, raw=raw, ref=seq_text(message.seq))]
        if isinstance(message, Fault):
            return [self._fault_reported(message.code, message.text, raw, now)]
        return []
