"""The shuffler at a card table: every card game waits for a counted shuffle when it needs one.

Flow level (pure, any card game): when the shuffle is asked for, that the next round waits for it, what a
failed or foreign shuffle does, and that the record keeps it across a restart. Table level: the real
`shuffler-line` session's bytes through `TableCore`, so a miscounted deck pauses the table with the reason
and the resumed table shuffles again. Config: the shuffler is an optional device of every card game.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.commands import NewShoe, Resume, Shuffle
from controller.config import ConfigError
from controller.flow import FlowOutput, GameFlow, InputRejected
from controller.games import GAMES
from controller.games.andar_bahar import AndarBaharFlow, AndarBaharSettings
from controller.games.baccarat import BaccaratFlow, BaccaratSettings
from controller.games.card_flow import PROMPT_SHUFFLING, CardFlow
from controller.games.stud import StudFlow, StudSettings
from controller.runtime import TableCore
from controller.table_build import TABLE_CONFIGS
from controller.testing.card_table import UNLOCK, DrivesCardFlow, event_types, held, only
from drivers.line.framing import encode_line
from drivers.readings import CutCardSeen, DeviceOnline, Reading
from drivers.shuffler.session import ShufflerSession

pytestmark = pytest.mark.unit

T0 = 1_700_000_000.0


def shuffles_asked(out: FlowOutput) -> list[dict[str, Any]]:
    return [r.command.args for r in out.requests if r.device == "shuffler" and r.command.name == "shuffle"]


@dataclass
class Table(DrivesCardFlow):
    flow: GameFlow
    now: float = T0
    seq: int = 0
    log: list[str] = field(default_factory=list)


def andar_bahar(**settings: Any) -> Table:
    defaults = {"shuffler_device": "shuffler", "round_gap_seconds": 2.0, "betting_seconds": 10.0}
    return Table(AndarBaharFlow("ab1", AndarBaharSettings(**{**defaults, **settings})))


# --- when the shuffle is asked for, and the wait --------------------------------------------------------


def test_a_new_table_shuffles_before_the_first_game_card_and_deals_nothing_meanwhile() -> None:
    table = andar_bahar()
    out = table.tick()
    (asked,) = shuffles_asked(out)
    assert asked == {"shuffle_id": table.awaited_shuffle(), "decks": 1}
    assert only(out, "shuffle.started")["reason"] == "table start"
    assert table.flow.prompt == PROMPT_SHUFFLING
    assert table.flow.public_state()["next_position"] is None
    assert table.flow.next_deadline() is None  # nothing to do until the shuffler answers
    assert "shuffled" in held(table.card("KS"))["reason"]
    done = table.shuffle_done()
    assert only(done, "shuffle.done") == {
        "shuffle_id": asked["shuffle_id"],
        "device": "shuffler",
        "decks": 1,
        "cards": 52,
        "raw": f"DONE 0001 {asked['shuffle_id']} 1 52",
    }
    assert done.requests == [UNLOCK]
    assert table.flow.public_state()["next_position"] == "game"
    assert event_types(table.card("KS")) == ["round.opened", "card.dealt"]


def test_every_andar_bahar_round_waits_for_its_own_shuffle_after_the_gap() -> None:
    table = andar_bahar()
    table.tick()
    table.shuffle_done()
    ids = set()
    for _ in range(3):
        table.card("KS")
        table.tick(10)
        out = table.card("KD")  # the first Andar card matches: the round is over
        assert "round.result" in event_types(out)
        assert shuffles_asked(out) == []  # the dealer first clears the table and loads the shuffler
        assert table.tick(1.9).events == []
        asked = table.tick(0.1)
        assert only(asked, "shuffle.started")["reason"] == "round over"
        ids.add(table.awaited_shuffle())
        assert table.flow.public_state()["next_position"] is None
        assert table.tick(60).events == []  # however long the shuffler takes
        table.shuffle_done()
        assert table.flow.public_state()["next_position"] == "game"
    assert len(ids) == 3  # a new id for every shuffle


def test_a_stud_round_opens_only_once_its_deck_is_shuffled() -> None:
    table = Table(StudFlow("st1", StudSettings(shuffler_device="shuffler", round_gap_seconds=1.0)))
    out = table.tick()
    assert event_types(out) == ["shuffle.started"]
    assert "round.opened" not in event_types(table.tick(100))
    assert event_types(table.shuffle_done())[:2] == ["shuffle.done", "round.opened"]
    # a voided round's deck is reshuffled too
    table.flow.void_round(table.now, "test", "supervisor")
    assert event_types(table.tick(1.0)) == ["shuffle.started"]


def test_a_shoe_game_shuffles_its_decks_only_when_the_shoe_is_finished() -> None:
    table = Table(BaccaratFlow("b1", BaccaratSettings(shuffler_device="shuffler", round_gap_seconds=1.0)))
    out = table.tick()
    assert shuffles_asked(out)[0]["decks"] == 8
    assert event_types(table.shuffle_done()) == ["shuffle.done", "shoe.started", "round.opened"]

    def play_round(cut_card: bool = False) -> FlowOutput:
        table.tick(15)  # betting closes
        if cut_card:
            table.read(CutCardSeen(device="shoe", time=table.now, raw="CUT 0099"))
        out = FlowOutput()
        for code in ("9S", "9H", "9D", "9C"):  # two naturals: the hand is complete
            out.extend(table.card(code))
        return out

    assert "round.result" in event_types(play_round())
    assert event_types(table.tick(1.0)) == ["round.opened"]  # mid-shoe: no shuffle
    assert "round.result" in event_types(play_round(cut_card=True))
    with pytest.raises(InputRejected, match="shuffler has not finished"):
        table.flow.on_command(NewShoe(), table.now + 0.5)
    asked = table.tick(1.0)
    assert only(asked, "shuffle.started")["reason"] == "shoe finished"
    assert event_types(table.shuffle_done()) == ["shuffle.done", "shoe.started", "round.opened"]


def test_without_a_shuffler_nothing_waits() -> None:
    table = Table(AndarBaharFlow("ab1", AndarBaharSettings()))
    assert table.tick().requests == [UNLOCK]
    with pytest.raises(InputRejected, match="no shuffle is awaited"):
        table.flow.on_command(Shuffle(), table.now)


# --- failed, foreign and lost shuffles ----------------------------------------------------------------


def test_a_miscounted_deck_is_never_dealt_and_the_resumed_table_shuffles_again() -> None:
    table = andar_bahar()
    table.tick()
    first = table.awaited_shuffle()
    reason = f"shuffle {first} counted 51 cards, expected 52 (1 x 52): the deck must not be used"
    failed = table.shuffle_failed("COUNT_MISMATCH", reason, expected=52, actual=51)
    assert only(failed, "shuffle.failed") == {
        "shuffle_id": first,
        "device": "shuffler",
        "code": "COUNT_MISMATCH",
        "reason": reason,
        "expected": 52,
        "actual": 51,
        "raw": f"ERR 0002 COUNT_MISMATCH {reason}",
    }
    assert table.flow.prompt.startswith("Shuffle failed (COUNT_MISMATCH: ")
    assert table.flow.public_state()["next_position"] is None
    assert table.flow.next_deadline() is None
    # the failed shuffle's id is no longer awaited: a late DONE for it cannot open a round
    late = table.shuffle_done(shuffle_id=first)
    assert event_types(late) == ["reading.rejected"]
    # the shuffler is fixed and the supervisor resumes: the cards are shuffled and counted again
    resumed = table.flow.on_resume(table.now)
    (again,) = shuffles_asked(resumed)
    assert again["shuffle_id"] != first
    assert only(resumed, "shuffle.started")["reason"] == "again"
    assert table.flow.on_resume(table.now).requests == []  # one shuffle at a time
    assert table.shuffle_done().requests == [UNLOCK]


def test_a_shuffle_the_table_did_not_ask_for_opens_nothing() -> None:
    table = andar_bahar()
    table.tick()
    foreign = table.shuffle_done(shuffle_id="1234")
    assert only(foreign, "reading.rejected")["reason"].startswith("shuffle 1234 finished, but the table")
    assert table.flow.public_state()["next_position"] is None


def test_a_shuffle_of_the_wrong_number_of_decks_is_a_failure() -> None:
    table = Table(BaccaratFlow("b1", BaccaratSettings(shuffler_device="shuffler", decks=6)))
    table.tick()
    from drivers.readings import ShuffleDone

    shuffle_id = table.awaited_shuffle()
    done = ShuffleDone(device="shuffler", time=table.now, shuffle_id=shuffle_id, decks=8, cards=416)
    out = table.read(done)
    assert only(out, "shuffle.failed")["code"] == "DECKS_MISMATCH"
    assert "round.opened" not in event_types(out)


def test_a_shuffle_that_never_finishes_can_be_asked_for_again() -> None:
    table = andar_bahar()
    table.tick()
    first = table.awaited_shuffle()
    again = table.flow.on_command(Shuffle(), table.now + 30)
    assert only(again, "shuffle.started")["reason"] == "again"
    second = table.awaited_shuffle()
    # whichever of the two the shuffler finishes, the round may open
    assert table.shuffle_done(shuffle_id=first).requests == [UNLOCK]
    assert event_types(table.shuffle_done(shuffle_id=second)) == ["reading.rejected"]


def test_the_awaited_shuffle_survives_a_restart() -> None:
    table = andar_bahar()
    table.tick()
    restored = AndarBaharFlow("ab1", table.flow.settings)
    restored.restore_state(json.loads(json.dumps(table.flow.export_state())))
    assert restored.shuffle == table.flow.shuffle  # type: ignore[attr-defined]
    table.flow = restored
    assert table.shuffle_done().requests == [UNLOCK]


# --- the real shuffler session through the table's runtime -------------------------------------------------


def test_a_miscounted_deck_pauses_the_table_with_the_reason_until_the_shuffler_is_fixed() -> None:
    flow = AndarBaharFlow("ab1", AndarBaharSettings(shuffler_device="shuffler"))
    core = TableCore(table_id="ab1", game="andar_bahar", flow=flow, devices=["shoe", "shuffler"])
    session = ShufflerSession("shuffler")
    now = T0

    def from_shuffler(*bodies: str) -> list[str]:
        readings: list[Reading] = []
        for body in bodies:
            readings += session.data_received(encode_line(body), now)
        events = []
        for reading in readings:
            events += [e.type for e in core.on_reading(reading, now).events]
        return events

    session.connection_made(now)
    core.on_reading(DeviceOnline(device="shoe", time=now), now)
    assert from_shuffler("HELLO SIMSHUF 1.0.0 SIM0002", "STATE LOADING") == ["device.online"]
    step = core.on_tick(now)
    (request,) = [r for r in step.requests if r.device == "shuffler"]
    session.command(request.command, now)
    shuffle_id = request.command.args["shuffle_id"]
    assert session.data_to_send().endswith(encode_line(f"SHUFFLE {shuffle_id} 1"))

    events = from_shuffler(f"DONE 0001 {shuffle_id} 1 51", "STATE READY")
    assert events == ["shuffle.failed", "device.fault", "round.paused"]
    state = core.state()
    assert state["paused"] and state["pause"]["device"] == "shuffler"
    assert "counted 51 cards, expected 52" in state["pause"]["reason"]
    assert state["game_state"]["next_position"] is None  # the miscounted deck is not asked for
    with pytest.raises(Exception, match="cannot resume: device shuffler is fault"):
        core.on_command(Resume(by="supervisor"), now)
    # the dealer takes the bad deck out, finds the missing card and loads the whole deck again
    assert from_shuffler("STATE IDLE", "STATE LOADING") == ["device.online"]
    resumed, _ = core.on_command(Resume(by="supervisor"), now + 60)
    (again,) = [r for r in resumed.requests if r.device == "shuffler"]
    assert again.command.args["shuffle_id"] != shuffle_id
    assert [e.type for e in resumed.events] == ["round.resumed", "shuffle.started"]
    session.command(again.command, now)
    events = from_shuffler(f"DONE 0002 {again.command.args['shuffle_id']} 1 52")
    assert events == ["shuffle.done"]
    assert core.state()["game_state"]["next_position"] == "game"


# --- configuration ---------------------------------------------------------------------------------------


def card_table(game: str, devices: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """A table of `game` with the devices it needs, each served by its first protocol (on /dev/ttyACM0, 2,
    ...: the shuffler's is /dev/ttyACM1), and `devices`."""
    needed = {
        name: {"protocol": protocols[0], "port": f"/dev/ttyACM{2 * n}"}
        for n, (name, protocols) in enumerate(GAMES[game].devices.items())
    }
    return {
        "table": {"table_id": "t1", "game": game, "data_dir": "/tmp/x"},
        "devices": {**needed, **devices},
        "game": settings,
    }


SHUFFLER = {"shuffler": {"protocol": "shuffler-line", "port": "/dev/ttyACM1"}}
#: the card games whose spec takes a shuffler (the blackjack variants' do not)
SHUFFLER_GAMES = [
    name
    for name, spec in GAMES.items()
    if issubclass(spec.flow, CardFlow) and "shuffler" in spec.optional_devices
]


def test_the_card_games_that_take_a_shuffler() -> None:
    # the games the next test runs over, as the registry's specs say (a new card game with a shuffler joins)
    assert {"andar_bahar", "baccarat", "stud"} <= set(SHUFFLER_GAMES)


@pytest.mark.parametrize("game", SHUFFLER_GAMES)
def test_every_card_game_takes_an_optional_shuffler(game: str) -> None:
    assert GAMES[game].optional_devices == {"shuffler": ("shuffler-line",)}
    assert issubclass(GAMES[game].flow, CardFlow)
    config = TABLE_CONFIGS.from_dict(card_table(game, SHUFFLER, {"shuffler_device": "shuffler"}), environ={})
    assert config.game_settings().shuffler_device == "shuffler"  # type: ignore[attr-defined]
    without = TABLE_CONFIGS.from_dict(card_table(game, {}, {}), environ={})
    assert without.game_settings().shuffler_device is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("devices", "settings", "problem"),
    [
        ({}, {"shuffler_device": "shuffler"}, "game.shuffler_device names devices.shuffler, which is not"),
        (
            SHUFFLER,
            {},
            "devices.shuffler is configured but game.shuffler_device is not set: set game.shuffler",
        ),
        (
            {"shuffler": {"protocol": "shaker-line", "port": "/dev/ttyACM1"}},
            {"shuffler_device": "shuffler"},
            "devices.shuffler.protocol 'shaker-line' cannot be the shuffler of a andar_bahar table",
        ),
    ],
)
def test_a_shuffler_that_cannot_work_is_named_in_the_config(
    devices: dict[str, Any], settings: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match="^config: " + problem.replace("(", r"\(").replace(".", r"\.")):
        TABLE_CONFIGS.from_dict(card_table("andar_bahar", devices, settings), environ={})
