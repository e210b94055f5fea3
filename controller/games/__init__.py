"""Game registry: `game = "baccarat"` in the config finds everything about the game here.

A new game is its own module(s) in this package plus one `GameSpec` entry: the flow, its settings, the result
model (the `round.result` contract), its inputs (MQTT `inputs/<name>` payload models), its devices, its replay
policy, how the demo describes a result (and, where players decide, what its players say) and how the
dealer's panel sizes its places. Nothing else in the controller names a game.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from controller.commands import Command, register_command, register_input
from controller.events import EventData, register_result_model
from controller.flow import GameFlow

#: what a game's demo players send now: (a key the demo sends once, the input's name, its payload)
DemoInput = tuple[str, str, dict[str, Any]]
#: a game's demo players: the table's public state and a random source in, what to send now out
DemoPlayers = Callable[[dict[str, Any], random.Random], list[DemoInput]]


@dataclass(frozen=True, slots=True)
class GameSpec:
    flow_path: str  # "module:Class"
    settings_path: str
    #: the `round.result` data model ("module:Class"; it has `game: Literal["<game>"]`)
    result_path: str
    #: how the demo prints a result: "module:function" taking the result's data dict, returning a line
    describe_path: str
    #: device name -> protocols that can serve it (the first is the default, used by the demo's simulator)
    devices: dict[str, tuple[str, ...]]
    #: the game's own inputs: name -> payload model ("module:Class", a `controller.commands.Command`)
    inputs: dict[str, str] = field(default_factory=dict)
    #: the game's own supervisor commands (MQTT `commands/<name>`), handled by the flow like its inputs
    commands: dict[str, str] = field(default_factory=dict)
    #: devices whose capture the game's results point at (sic bo's camera frames): the config must set it
    captured_devices: tuple[str, ...] = ()
    #: the dealer's panel: the game's name, and how many cards a place usually holds (its cards are sized
    #: for that many from the first card on); `usual_cards_at` per place name
    title: str = ""
    usual_cards: int = 3
    usual_cards_at: dict[str, int] = field(default_factory=dict)
    #: the demo's simulated shoe holds this many decks
    demo_decks: int = 8
    #: a freshly shuffled pack for every round (no cut card): the demo's dealer reloads the shoe after each
    fresh_deck_each_round: bool = False
    #: devices the game can use but does not need: role -> protocols that can serve it. The game setting
    #: `<role>_device` names the configured device that plays the role (None: the table has none), e.g.
    #: `shuffler_device = "shuffler"` with `[devices.shuffler] protocol = "shuffler-line"`.
    optional_devices: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: the replay policy for a capture of device traffic only (it knows nothing of bets and decisions):
    #: game settings laid over the table's. None: such captures of this game cannot be replayed.
    replay_overrides: dict[str, Any] | None = None
    #: the demo's game settings (short windows, so that rounds go by quickly)
    demo_settings: dict[str, Any] = field(default_factory=dict)
    #: where the demo's dealer puts the cut card: this many cards before the shoe's end (None: the
    #: simulator's usual place); a shoe game's demo with an early cut card shows a whole shoe's end
    demo_cut_position: int | None = None
    #: the demo's stand-in for the rules engine's players: "module:function" taking the table's public
    #: state and a random.Random, returning [(key, input name, payload)] to send now over MQTT (each key
    #: once). None: the game's demo has none (its inputs come from the policy or nobody)
    demo_players_path: str | None = None

    def flow_class(self) -> type[GameFlow]:
        cls: type[GameFlow] = _load(self.flow_path)
        return cls

    def settings_class(self) -> type[BaseModel]:
        cls: type[BaseModel] = _load(self.settings_path)
        return cls

    def result_class(self) -> type[EventData]:
        cls: type[EventData] = _load(self.result_path)
        return cls

    def describe(self, data: dict[str, Any]) -> str:
        describe: Any = _load(self.describe_path)
        return str(describe(data))

    def optional_device_setting(self, role: str) -> str:
        """The name of the game setting that names the device playing the optional `role`."""
        return f"{role}_device"

    def optional_devices_in_use(self, settings: BaseModel) -> dict[str, str]:
        """Role -> configured device name, for the optional devices these settings use."""
        in_use = {}
        for role in self.optional_devices:
            name = getattr(settings, self.optional_device_setting(role), None)
            if isinstance(name, str):
                in_use[role] = name
        return in_use

    def demo_players(self) -> DemoPlayers | None:
        players: DemoPlayers | None = (
            None if self.demo_players_path is None else _load(self.demo_players_path)
        )
        return players

    def panel_view(self) -> dict[str, Any]:
        return {"title": self.title, "usual_cards": self.usual_cards, "usual_cards_at": self.usual_cards_at}


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


_BOXED_INPUTS = {
    name: f"controller.games.blackjack:{model}"
    for name, model in (
        ("hit", "Hit"),
        ("stand", "Stand"),
        ("double", "Double"),
        ("split", "Split"),
        ("surrender", "Surrender"),
        ("insurance", "Insurance"),
    )
}
#: blackjack captures of device traffic only know nothing of the players: the disconnect policy decides
#: every hand at once (a decision window of 0 s on the capture's clock, so it is decided before the next
#: card), insurance is declined, and a card closes betting
_BLACKJACK_REPLAY: dict[str, Any] = {
    "round_gap_seconds": 0.0,
    "betting_closes_on_first_card": True,
    "decision_seconds": 0.0,
    "insurance_seconds": 0.0,
}
_BLACKJACK_DEMO: dict[str, Any] = {
    "betting_seconds": 1.5,
    "round_gap_seconds": 1.0,
    # the demo's players (`demo_players`) answer within about half a second; the policy decides after this
    "decision_seconds": 1.5,
    "insurance_seconds": 1.5,
}
#: what can read a card game's cards: a scanning shoe, or a USB barcode scanner and barcoded cards
CARD_READERS: tuple[str, ...] = ("shoe-line", "hid-barcode")
#: a card game's optional shuffler (`CardGameSettings.shuffler_device`)
SHUFFLER: dict[str, tuple[str, ...]] = {"shuffler": ("shuffler-line",)}

GAMES: dict[str, GameSpec] = {
    "baccarat": GameSpec(
        "controller.games.baccarat:BaccaratFlow",
        "controller.games.baccarat:BaccaratSettings",
        "controller.events:BaccaratResult",
        "controller.games.baccarat:describe_result",
        {"shoe": CARD_READERS},
        optional_devices=SHUFFLER,
        title="Baccarat",
        usual_cards=3,
        replay_overrides={
            "round_gap_seconds": 0.0,
            "betting_closes_on_first_card": True,
            "auto_new_shoe": True,
        },
    ),
    "roulette": GameSpec(
        "controller.games.roulette:RouletteFlow",
        "controller.games.roulette:RouletteSettings",
        "controller.events:RouletteResult",
        "controller.games.roulette:describe_result",
        {"wheel": ("cammegh-ss2",)},
        title="Roulette",
        replay_overrides={"round_gap_seconds": 0.0, "user_start": False},
    ),
    "andar_bahar": GameSpec(
        "controller.games.andar_bahar:AndarBaharFlow",
        "controller.games.andar_bahar:AndarBaharSettings",
        "controller.events:AndarBaharResult",
        "controller.games.andar_bahar:describe_result",
        {"shoe": CARD_READERS},
        optional_devices=SHUFFLER,
        title="Andar Bahar",
        usual_cards=6,
        usual_cards_at={"game": 1},  # the game card: one card, as big as it gets
        demo_decks=1,
        fresh_deck_each_round=True,
        replay_overrides={"round_gap_seconds": 0.0, "betting_closes_on_first_card": True},
    ),
    "stud": GameSpec(
        "controller.games.stud:StudFlow",
        "controller.games.stud:StudSettings",
        "controller.events:StudResult",
        "controller.games.stud:describe_result",
        {"shoe": CARD_READERS},
        optional_devices=SHUFFLER,
        title="5 Card Stud",
        usual_cards=5,
        demo_decks=1,
        fresh_deck_each_round=True,
        replay_overrides={
            "round_gap_seconds": 0.0,
            "betting_closes_on_first_card": True,
            "decisions_end_on_dealer_card": True,
        },
    ),
    "blackjack": GameSpec(
        "controller.games.blackjack:LiveBlackjackFlow",
        "controller.games.blackjack:LiveBlackjackSettings",
        "controller.events:BlackjackResult",
        "controller.games.blackjack:describe_result",
        {"shoe": ("shoe-line",)},
        inputs={**_BOXED_INPUTS, "seated": "controller.games.blackjack:Seated"},
        title="Live Blackjack",
        usual_cards=3,
        usual_cards_at={"dealer": 5},
        replay_overrides={**_BLACKJACK_REPLAY, "auto_new_shoe": True},
        demo_settings={**_BLACKJACK_DEMO, "seats": 3},
        demo_players_path="controller.games.blackjack:demo_players",
    ),
    "infinite_blackjack": GameSpec(
        "controller.games.infinite_blackjack:InfiniteBlackjackFlow",
        "controller.games.infinite_blackjack:InfiniteBlackjackSettings",
        "controller.events:InfiniteBlackjackResult",
        "controller.games.infinite_blackjack:describe_result",
        {"shoe": ("shoe-line",)},
        inputs={
            "deal_card": "controller.games.blackjack:DealCard",
            "burn_done": "controller.games.blackjack:BurnDone",
        },
        title="Infinite Blackjack",
        usual_cards=5,
        usual_cards_at={"burn": 1},
        replay_overrides={**_BLACKJACK_REPLAY, "auto_new_shoe": True, "burn_confirmation": False},
        demo_settings={**_BLACKJACK_DEMO, "auto_new_shoe": True, "burn_confirmation": False},
        demo_players_path="controller.games.infinite_blackjack:demo_players",
        # 8 decks are 416 cards: the cut card some 30 cards in shows the shoe's end, the reshuffle and the
        # burn within a few rounds
        demo_cut_position=386,
    ),
    "single_deck_blackjack": GameSpec(
        "controller.games.blackjack:SingleDeckBlackjackFlow",
        "controller.games.blackjack:SingleDeckBlackjackSettings",
        "controller.events:SingleDeckBlackjackResult",
        "controller.games.blackjack:describe_result",
        {"shoe": ("shoe-line",)},
        inputs=_BOXED_INPUTS,
        title="Single-deck Blackjack",
        usual_cards=4,
        demo_decks=1,
        fresh_deck_each_round=True,
        replay_overrides=_BLACKJACK_REPLAY,
        demo_settings=_BLACKJACK_DEMO,
        demo_players_path="controller.games.blackjack:demo_players",
    ),
    "sicbo": GameSpec(
        "controller.games.sicbo:SicBoFlow",
        "controller.games.sicbo:SicBoSettings",
        "controller.events:SicBoResult",
        "controller.games.sicbo:describe_result",
        {"shaker": ("shaker-line",), "camera": ("camera",)},
        commands={"manual_dice": "controller.games.sicbo:ManualDice"},
        captured_devices=("camera",),
        title="Sic Bo",
        # a device-only capture (the shaker's bytes and the camera's readings) replays with betting closing
        # at once: the dice are only ever shaken after betting closed
        replay_overrides={"round_gap_seconds": 0.0, "betting_seconds": 0.001},
    ),
}


def _register() -> None:
    """Each game's result model and inputs join the contract (events, commands, schemas) here, once."""
    for spec in GAMES.values():
        register_result_model(spec.result_class())
        for name, path in spec.inputs.items():
            model: type[Command] = _load(path)
            register_input(name, model)
        for name, path in spec.commands.items():
            command: type[Command] = _load(path)
            register_command(name, command)


_register()


class UnknownGame(KeyError):
    def __str__(self) -> str:
        return f"unknown game {self.args[0]!r}; this controller runs: {', '.join(sorted(GAMES))}"


def game_spec(game: str) -> GameSpec:
    try:
        return GAMES[game]
    except KeyError:
        raise UnknownGame(game) from None


def make_flow(game: str, table_id: str, settings: BaseModel) -> GameFlow:
    spec = game_spec(game)
    flow_cls: Any = spec.flow_class()
    flow: GameFlow = flow_cls(table_id, settings)
    return flow
