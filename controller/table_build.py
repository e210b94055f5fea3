"""The table as its configuration says: its configuration, its core (the game's flow) and the sessions of its
devices.

`TABLE_CONFIGS` reads a table's file against the games this controller runs (`controller.games.GAMES`): every
table config is loaded through it (`tablectl run`, `check-config`, `replay`, the demo, the tests).
`build_core` and `build_session` are what the live service (`controller.service`) and `tablectl replay`
(`controller.replay`) both build their `controller.machine.TableMachine` from, so that a capture replays on
the very table that recorded it.
"""

from __future__ import annotations

from typing import Any

from controller.config import ConfigLoader, TableConfig
from controller.games import GAMES, make_flow
from controller.games.card_flow import CardFlow
from controller.runtime import TableCore
from drivers.registry import session_class
from drivers.session import DeviceSession

#: the one way a table's config is read: `TABLE_CONFIGS.load(path)`, `.from_dict(raw)`, `.problems(path)`
TABLE_CONFIGS = ConfigLoader(GAMES)


def build_core(config: TableConfig) -> TableCore:
    """The table's core, fresh: its game's flow with the configured settings, and its devices."""
    flow = make_flow(config.table.game, config.table.table_id, config.game_settings())
    if isinstance(flow, CardFlow):
        flow.manual_card_confirmation = config.table.manual_card_confirmation
    return TableCore(
        table_id=config.table.table_id, game=config.table.game, flow=flow, devices=list(config.devices)
    )


def build_session(name: str, protocol: str, options: dict[str, Any]) -> DeviceSession:
    """The session (sans-IO protocol state) of the device `name`, speaking `protocol` with its options."""
    cls: Any = session_class(protocol)
    session: DeviceSession = cls(name, **options)
    return session
