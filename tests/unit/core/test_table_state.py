"""The journaled table state: a versioned JSON record, applied to a core built from the configuration.

Golden records of every state version (each game's tests folder keeps its own,
tests/unit/games/<folder>/golden_state/v<N>/<game>.json, committed) must keep loading;
what does not fit is refused with one clear line, never silently replaced by a fresh table.

Its unit tests; the integration ones are in `tests/integration/test_table_state.py`."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from pydantic import Field

from controller.cards import Card, CardCode
from controller.flow import SECRET, FlowRecord, secret_fields
from controller.games import GAMES
from controller.games.baccarat import BaccaratFlow, BaccaratSettings
from controller.runtime import STATE_VERSION, StateMismatch, TableCore
from controller.table_state import decode_state, encode_state, migrate
from drivers.readings import DeviceOnline
from tests.helpers.paths import golden_state_records
from tests.helpers.table_state import fresh_core

pytestmark = pytest.mark.unit


GOLDEN_RECORDS = golden_state_records()


def golden(version: int, game: str) -> dict[str, Any]:
    return json.loads(GOLDEN_RECORDS[version, game].read_text())


def test_there_is_a_golden_record_of_every_version_for_every_game() -> None:
    # every version has golden records of the games it knew; the current one of every game there is
    versions = sorted({version for version, _ in GOLDEN_RECORDS})
    assert versions == list(range(1, STATE_VERSION + 1))
    assert {game for _, game in GOLDEN_RECORDS} <= set(GAMES)
    assert {game for version, game in GOLDEN_RECORDS if version == STATE_VERSION} == set(GAMES)


GOLDEN_FILES = sorted(GOLDEN_RECORDS)


@pytest.mark.parametrize(("version", "game"), GOLDEN_FILES, ids=[f"v{v}-{g}" for v, g in GOLDEN_FILES])
def test_golden_records_load_and_round_trip(version: int, game: str) -> None:
    record = migrate(golden(version, game))
    core = fresh_core(game)
    core.restore_state(record)
    assert core.flow.rounds.round_id == "golden-0000001"  # each golden record is mid-round
    assert core.export_state() == record
    # what the service journals with every step: the same record, encoded without the dict round trip
    assert decode_state(core.export_state_json()) == record


def test_the_record_holds_every_attribute_of_every_flow() -> None:
    # nothing a flow keeps may be left out of its record (it would be lost on a restart)
    configuration = {"settings"}
    for game in GAMES:
        flow = fresh_core(game).flow
        # what a flow declares it keeps off the record on purpose (safe to lose in a crash) is named; a
        # part it holds (a card game's shoe) keeps its attributes in the record as the flow's own
        parts = [getattr(flow, name) for name in flow.parts]
        kept = set(vars(flow)) - configuration - flow.ephemeral - set(flow.parts)
        kept |= {name for part in parts for name in vars(part)}
        assert kept == set(flow.record_model.model_fields), game


def test_restart_after_an_unrelated_class_change_still_recovers_the_round(monkeypatch) -> None:
    core = fresh_core("baccarat")
    core.restore_state(golden(1, "baccarat"))
    blob = encode_state(core.export_state())
    monkeypatch.setattr(BaccaratFlow, "some_new_constant", 42, raising=False)  # a pickle would choke on less
    monkeypatch.setattr(BaccaratFlow, "game_label", "Punto Banco", raising=False)
    restarted = fresh_core("baccarat")
    restarted.restore_state(decode_state(blob))
    assert restarted.flow.rounds.in_round and restarted.recovered(0).events[0].type == "round.paused"
    assert restarted.state()["game_state"]["player"] == ["2C", "3S"]


def test_a_record_of_another_game_or_with_other_decks_mid_shoe_is_refused() -> None:
    with pytest.raises(StateMismatch, match="of a baccarat table, but the config says stud"):
        fresh_core("stud").restore_state(golden(1, "baccarat"))
    with pytest.raises(StateMismatch, match=r"holds 8 decks but game\.decks is now 6"):
        fresh_core("baccarat", decks=6).restore_state(golden(1, "baccarat"))
    with pytest.raises(StateMismatch, match=r"has boxes \[1, 2, 3, 4, 5, 6, 7\] but this table has 3 seats"):
        fresh_core("blackjack", seats=3).restore_state(golden(1, "blackjack"))
    with pytest.raises(StateMismatch, match=r"has 1 hands but game\.hands is now 3"):
        fresh_core("stud", hands=3).restore_state(golden(1, "stud"))
    broken = golden(1, "baccarat")
    broken["flow"]["player"] = ["ZZ"]
    core = fresh_core("baccarat")
    with pytest.raises(StateMismatch, match="does not fit"):
        core.restore_state(broken)
    assert not core.flow.rounds.in_round, "a refused record changes nothing"


def test_unreadable_newer_damaged_and_pickled_states_are_refused() -> None:
    with pytest.raises(StateMismatch, match="version 99, written by a newer tablectl"):
        decode_state(json.dumps({**golden(1, "baccarat"), "state_version": 99}).encode())
    with pytest.raises(StateMismatch, match="damaged"):
        decode_state(b'{"state_version": 1,')
    with pytest.raises(StateMismatch, match="earlier release"):
        decode_state(b"\x80\x05\x95 a pickle")
    with pytest.raises(StateMismatch, match="no state_version"):
        decode_state(b'{"game": "baccarat"}')


def test_older_versions_are_migrated_step_by_step() -> None:
    def v1_to_v2(record: dict[str, Any]) -> dict[str, Any]:
        return {**record, "note": "from v1"}

    def v2_to_v3(record: dict[str, Any]) -> dict[str, Any]:
        return {**record, "note": record["note"] + ", then v2"}

    migrated = migrate({"state_version": 1}, {1: v1_to_v2, 2: v2_to_v3}, target=3)
    assert migrated == {"state_version": 3, "note": "from v1, then v2"}
    with pytest.raises(StateMismatch, match="no migration from table state version 2"):
        migrate({"state_version": 1}, {1: v1_to_v2}, target=3)


class _HoleCardRecord(FlowRecord):
    up: list[CardCode] = Field(default_factory=list)
    hole: CardCode | None = Field(None, json_schema_extra=SECRET)


class _HoleCardFlow(BaccaratFlow):
    """Baccarat with a face-down card on the side: the secret mechanism, without a game that needs it yet."""

    record_model: ClassVar[type[FlowRecord]] = type("_Rec", (_HoleCardRecord, BaccaratFlow.record_model), {})

    def __init__(self, table_id: str, settings: BaccaratSettings) -> None:
        super().__init__(table_id, settings)
        self.up: list[Card] = []
        self.hole: Card | None = Card.parse("QH")


def test_a_secret_field_is_kept_in_the_record_and_nowhere_public() -> None:
    flow = _HoleCardFlow("t", BaccaratSettings())
    # every card game's record also keeps, secret, a card held out of procedure (it may be a hole copy)
    assert secret_fields(flow.record_model) == {"hole", "out_of_procedure"}
    core = TableCore(table_id="t", game="baccarat", flow=flow, devices=["shoe"])
    core.on_reading(DeviceOnline(device="shoe", time=1.0), 1.0)
    events = core.on_tick(1.0).events + core.on_tick(20.0).events
    assert core.export_state()["flow"]["hole"] == "QH"
    public = json.dumps([core.state(), [e.data for e in events]])
    assert "QH" not in public
    restored = TableCore(
        table_id="t", game="baccarat", flow=_HoleCardFlow("t", BaccaratSettings()), devices=["shoe"]
    )
    restored.flow.hole = None  # type: ignore[attr-defined]
    restored.restore_state(json.loads(json.dumps(core.export_state())))
    assert restored.flow.hole == Card.parse("QH")  # type: ignore[attr-defined]
