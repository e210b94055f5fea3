"""What the tests of `test_panel_guard`, split by kind, share: `tests/unit/core/test_panel_guard.py`,
`tests/integration/test_panel_guard.py`."""

from __future__ import annotations

from typing import Any

from controller.commands import Command
from controller.pins import hash_pin

PINS = {"d1": "2468", "d2": "13579"}
HASHES = {dealer: hash_pin(pin, log2_n=10) for dealer, pin in PINS.items()}


class FakeService:
    """What the panel uses of TableService: the public state, its listeners, and the command entry point."""

    def __init__(self) -> None:
        self.state_listeners: list[Any] = []
        self.commands: list[Command] = []

    def public_state(self) -> dict[str, Any]:
        return {"table_id": "t1", "paused": bool(self.commands)}

    async def handle_command(self, command: Command) -> dict[str, Any]:
        self.commands.append(command)
        return {"state": self.public_state()}
