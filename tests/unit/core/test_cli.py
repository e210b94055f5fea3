"""The CLI's operator errors, in process: replaying a game that has no replay rules is refused.

Its unit tests; the integration ones are in `tests/integration/test_cli.py`, the e2e ones in
`tests/e2e/test_cli.py`."""

from __future__ import annotations

import dataclasses

import pytest

pytestmark = pytest.mark.unit


def test_replay_of_a_game_without_replay_rules_is_refused(monkeypatch) -> None:
    from controller.config import ConfigError
    from controller.games import GAMES
    from controller.replay import replay_config

    monkeypatch.setitem(
        GAMES, "andar_bahar", dataclasses.replace(GAMES["andar_bahar"], replay_overrides=None)
    )
    with pytest.raises(ConfigError, match="andar_bahar captures cannot be replayed yet"):
        replay_config("andar_bahar", "shoe-line")
    # a table's own capture (with its `meta` record) needs no replay policy
    assert replay_config("andar_bahar", "shoe-line", meta={"table_id": "ab-1", "settings": {}})
