"""The games this controller runs: `game = "baccarat"` in the config finds everything about the game here.

A game is a folder: its package under `controller.games` holds its flow and settings, its result model and
its own events, its inputs and commands, its demo presets and players, and how a screen draws it, and
builds its `GameSpec` as `GAME` (`controller.games.spec`). `GAMES` lists them, each imported by name below:
nothing is registered anywhere by importing a game. What the games add to the MQTT contract (their result
models, events, inputs and commands) is read from here: `controller.commands` lays the inputs and commands
beside the table's own, `tablectl schema` documents the rest. Nothing else in the controller names a game.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, TypeVar, Union

from pydantic import BaseModel, Field

from controller.command_base import Command
from controller.events import EVENT_MODELS as COMMON_EVENT_MODELS
from controller.events import EventData, RoundResult
from controller.flow import GameFlow
from controller.games import (
    andar_bahar,
    baccarat,
    blackjack,
    infinite_blackjack,
    roulette,
    sicbo,
    single_deck_blackjack,
    stud,
)
from controller.games.spec import GameSpec

#: name -> spec, in the order the contract lists the games' models
GAMES: dict[str, GameSpec] = {
    spec.name: spec
    for spec in (
        baccarat.GAME,
        roulette.GAME,
        andar_bahar.GAME,
        stud.GAME,
        blackjack.GAME,
        infinite_blackjack.GAME,
        single_deck_blackjack.GAME,
        sicbo.GAME,
    )
}

T = TypeVar("T")


def _joined(what: str, tables: Iterable[Mapping[str, T]]) -> dict[str, T]:
    """One name -> model table of several; a name that two of them give different models is an error."""
    joined: dict[str, T] = {}
    for table in tables:
        for name, model in table.items():
            known = joined.setdefault(name, model)
            if known is not model:
                raise ValueError(f"{what} {name!r} is {known!r} and {model!r}")
    return joined


#: game -> its `round.result` data model (each has `game: Literal["<game>"]`, the union's discriminator)
RESULT_MODELS: dict[str, type[RoundResult]] = {name: spec.result for name, spec in GAMES.items()}
#: the games' own inputs (MQTT `inputs/<name>`) and supervisor commands (`commands/<name>`)
GAME_INPUTS: dict[str, type[Command]] = _joined("input", (spec.inputs for spec in GAMES.values()))
GAME_COMMANDS: dict[str, type[Command]] = _joined("command", (spec.commands for spec in GAMES.values()))
#: every event type of the contract -> its data model: the events every game shares, then each game's own
EVENT_MODELS: dict[str, type[EventData]] = _joined(
    "event",
    [COMMON_EVENT_MODELS, *({event.TYPE: event for event in spec.events} for spec in GAMES.values())],
)


def result_union() -> Any:
    """The `round.result` data: one of the games' result models, discriminated on `game`."""
    models = tuple(RESULT_MODELS.values())
    if len(models) == 1:
        return models[0]
    return Annotated[Union[models], Field(discriminator="game")]  # noqa: UP007 - a union built at run time


class UnknownGame(KeyError):
    def __str__(self) -> str:
        return f"unknown game {self.args[0]!r}; this controller runs: {', '.join(sorted(GAMES))}"


def game_spec(game: str) -> GameSpec:
    try:
        return GAMES[game]
    except KeyError:
        raise UnknownGame(game) from None


def make_flow(game: str, table_id: str, settings: BaseModel) -> GameFlow:
    flow_cls: Any = game_spec(game).flow
    flow: GameFlow = flow_cls(table_id, settings)
    return flow
