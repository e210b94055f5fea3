"""The CLI's operator errors, in process: replaying a game that has no replay rules is refused; `simulate
studio`'s options.

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


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["simulate", "shoe", "--tables", "3"], "--tables is for `simulate studio`"),
        (["simulate", "studio", "--pty", "/tmp/x"], "--pty is for one simulated device"),
        (["simulate", "studio", "--tables", "0"], "--tables is between 1 and 32"),
        (["simulate", "studio", "--games", "baccarat,poker"], "unknown game(s) poker"),
    ],
)
def test_simulate_studio_options_are_checked_before_anything_starts(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from controller.cli import EXIT_USAGE, main

    assert main(argv) == EXIT_USAGE
    assert said in capsys.readouterr().err


def test_a_simulated_studio_has_every_game_in_its_first_tables() -> None:
    from controller.games import GAMES
    from controller.studio_demo import GAME_ORDER, SHORT, studio_tables

    games = len(GAMES)
    layout = studio_tables(games + 2)
    assert [game for _, game in layout[:games]] == list(GAME_ORDER)
    assert sorted(GAME_ORDER) == sorted(GAMES)  # every game of the registry, once
    assert len(set(SHORT.values())) == games  # two games' tables never share an id
    assert layout[0] == ("bac-01", "baccarat") and layout[games] == (f"bac-{games + 1:02d}", "baccarat")
    assert len({table for table, _ in layout}) == games + 2


async def test_a_simulated_studio_names_its_broker_without_a_password() -> None:
    import asyncio
    import contextlib
    import io
    import time

    from controller.studio_demo import run_studio

    out = io.StringIO()
    studio = asyncio.create_task(
        run_studio(
            1,
            mqtt_url="mqtt://table:S3cr3tPW@127.0.0.1:9",
            games=("baccarat",),
            out=out,
            commands=asyncio.StreamReader(),
            signals=False,
        )
    )
    try:
        deadline = time.monotonic() + 20
        while "studio sim on" not in out.getvalue():
            assert time.monotonic() < deadline and not studio.done(), out.getvalue()
            await asyncio.sleep(0.01)
    finally:
        studio.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await studio
    assert "studio sim on mqtt://***@127.0.0.1:9:" in out.getvalue() and "S3cr3tPW" not in out.getvalue()
