"""What a game is to the rest of the controller: one `GameSpec`, which its package under `controller.games`
builds as `GAME` and the registry (`controller.games`) lists.

The spec holds the game's classes themselves: its flow, its settings, its result model (the `round.result`
contract), its own events, inputs (MQTT `inputs/<name>` payload models) and supervisor commands, its
devices, its replay policy, how the demo plays it (`Demo`) and how a screen draws it (`View`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from controller.command_base import Command
from controller.events import GameEvent, RoundResult
from controller.flow import GameFlow
from controller.games.card_flow import CardFlow

#: what a game's demo players send now: (a key the demo sends once, the input's name, its payload)
DemoInput = tuple[str, str, dict[str, Any]]
#: a game's demo players: the table's public state and a random source in, what to send now out
DemoPlayers = Callable[[dict[str, Any], random.Random], list[DemoInput]]

#: what can read a card game's cards: a scanning shoe, or a USB barcode scanner and barcoded cards
CARD_READERS: tuple[str, ...] = ("shoe-line", "hid-barcode")
#: a card game's optional shuffler (`CardGameSettings.shuffler_device`)
SHUFFLER: Mapping[str, tuple[str, ...]] = {"shuffler": ("shuffler-line",)}

#: how a screen lays the game out (the dealer's panel switches on it, never on a game's name):
#: `cards-two-hands` two hands side by side (Player and Banker, the common hand and the Dealer);
#: `boxes` a row (or two) of places of the same size: the boxes (or hands) and the dealer;
#: `game-card-and-sides` the game card, narrow, beside two sides (Andar and Bahar);
#: `wheel` the winning number; `dice` the dice and the frame they were read from
ViewKind = Literal["cards-two-hands", "boxes", "game-card-and-sides", "wheel", "dice"]


@dataclass(frozen=True, slots=True)
class View:
    """How a screen draws the game (`state.view`): its layout, its name, and how many cards a place usually
    holds (its cards are sized for that many from the first card on); `usual_cards_at` per place name."""

    kind: ViewKind
    title: str
    usual_cards: int = 3
    usual_cards_at: Mapping[str, int] = field(default_factory=dict)

    def as_state(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "title": self.title,
            "usual_cards": self.usual_cards,
            "usual_cards_at": dict(self.usual_cards_at),
        }


@dataclass(frozen=True, slots=True)
class Demo:
    """How `tablectl demo` plays the game."""

    #: the game settings (short windows, so that rounds go by quickly)
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: the simulated shoe holds this many decks
    decks: int = 8
    #: where the demo's dealer puts the cut card: this many cards before the shoe's end (None: the
    #: simulator's usual place); a shoe game's demo with an early cut card shows a whole shoe's end
    cut_position: int | None = None
    #: the stand-in for the rules engine's players (None: the game's inputs come from the policy or nobody)
    players: DemoPlayers | None = None
    #: the game's place in a simulated studio's mix (`tablectl simulate studio`): its tables take the games
    #: in this order (equal places in the registry's), so that the first tables have one of each game
    studio_place: int = 100


@dataclass(frozen=True, slots=True)
class GameSpec:
    #: the game's procedure; it names the game (`game`) and its `round.result` model (`result_model`)
    flow: type[GameFlow]
    settings: type[BaseModel]
    view: View
    #: device name -> protocols that can serve it (the first is the default, used by the demo's simulator)
    devices: Mapping[str, tuple[str, ...]]
    #: the result's data dict in words, for the demo and the supervisor's console
    describe: Callable[[dict[str, Any]], str]
    #: the game in a few letters (`bac`): a simulated studio's table ids start with it (`bac-01`)
    short: str
    #: the result in two parts for a console tile: what was dealt, and the outcome in few words (the extras
    #: shortened), which the tile always shows whole however long the cards run. None: `describe`'s words,
    #: cut at the tile's edge where they must be.
    tile_result: Callable[[dict[str, Any]], tuple[str, str]] | None = None
    #: the game's own events: type -> data model (each a `GameEvent` of that `TYPE`)
    events: tuple[type[GameEvent], ...] = ()
    #: the game's own inputs: name -> payload model
    inputs: Mapping[str, type[Command]] = field(default_factory=dict)
    #: the game's own supervisor commands (MQTT `commands/<name>`), handled by the flow like its inputs
    commands: Mapping[str, type[Command]] = field(default_factory=dict)
    #: devices whose capture the game's results point at (sic bo's camera frames): the config must set it
    captured_devices: tuple[str, ...] = ()
    #: a freshly shuffled pack for every round (no cut card): the demo's dealer reloads the shoe after each
    fresh_deck_each_round: bool = False
    #: devices the game can use but does not need: role -> protocols that can serve it. The game setting
    #: `<role>_device` names the configured device that plays the role (None: the table has none), e.g.
    #: `shuffler_device = "shuffler"` with `[devices.shuffler] protocol = "shuffler-line"`.
    optional_devices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: the replay policy for a capture of device traffic only (it knows nothing of bets and decisions):
    #: game settings laid over the table's. None: such captures of this game cannot be replayed.
    replay_overrides: Mapping[str, Any] | None = None
    demo: Demo = field(default_factory=Demo)

    def __post_init__(self) -> None:
        game = self.result.model_fields["game"].default
        if game != self.name:
            raise ValueError(f"{self.name}: its result model {self.result.__name__} is for {game!r}")

    @property
    def name(self) -> str:
        """The name in `[table] game = "..."`, the result's `game` and the journal's."""
        return self.flow.game

    @property
    def result(self) -> type[RoundResult]:
        """The `round.result` data model (it has `game: Literal["<name>"]`)."""
        return self.flow.result_model

    @property
    def cards_entered_by_hand(self) -> bool:
        """Whether its dealer may enter a card by hand after a no-read (a card game's): then
        `[table] manual_card_confirmation` says who decides such a card."""
        return issubclass(self.flow, CardFlow)

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
