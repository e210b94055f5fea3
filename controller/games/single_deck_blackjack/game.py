"""Single-deck Blackjack to the rest of the controller (`GAME`): a table with boxes as Live Blackjack's,
which lends it its inputs, its replay policy, its demo and how a result reads."""

from __future__ import annotations

from controller.games.blackjack.flow import BOXED_INPUTS
from controller.games.blackjack.game import (
    BLACKJACK_DEMO,
    BLACKJACK_EVENTS,
    BLACKJACK_REPLAY,
    demo_players,
    describe_result,
)
from controller.games.single_deck_blackjack.flow import SingleDeckBlackjackFlow, SingleDeckBlackjackSettings
from controller.games.spec import Demo, GameSpec, View

GAME = GameSpec(
    flow=SingleDeckBlackjackFlow,
    short="sdbj",
    settings=SingleDeckBlackjackSettings,
    view=View("boxes", "Single-deck Blackjack", usual_cards=4),
    devices={"shoe": ("shoe-line",)},
    replay_overrides=BLACKJACK_REPLAY,
    events=BLACKJACK_EVENTS,
    inputs=BOXED_INPUTS,
    fresh_deck_each_round=True,
    describe=describe_result,
    demo=Demo(studio_place=8, settings=BLACKJACK_DEMO, decks=1, players=demo_players),
)
