"""The console's model of a studio, message by message (pure: no broker, no clock)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.console.model import RECENT_EVENTS, SharedEvents, StudioModel

pytestmark = pytest.mark.unit

ROOT = "studio/s1/table"


def msg(
    model: StudioModel, topic: str, payload: Any, *, retained: bool = False, now: float = 1000.0
) -> str | None:
    body = (
        b""
        if payload is None
        else json.dumps(payload).encode()
        if not isinstance(payload, bytes)
        else payload
    )
    return model.on_message(f"{ROOT}/{topic}", body, retained, now)


def state(
    round_id: str | None = "t1-0001", *, paused: bool = False, last_sequence: int = 3
) -> dict[str, Any]:
    return {
        "table_id": "t1",
        "game": "baccarat",
        "phase": "paused" if paused else "in_play",
        "round_id": round_id,
        "paused": paused,
        "pause": {
            "reason": "shoe offline: link lost",
            "by": "device",
            "device": "shoe",
            "since": "2026-12-01T10:00:00.000Z",
        }
        if paused
        else None,
        "devices": {"shoe": {"status": "online", "detail": "online", "code": None, "since": None}},
        "last_sequence": last_sequence,
        "view": {"title": "Baccarat"},
        "prompt": "Deal to Player",
    }


def event(sequence: int, type_: str, data: dict[str, Any], subject: str | None = "t1-0001") -> dict[str, Any]:
    return {
        "id": f"id-{sequence}",
        "type": type_,
        "sequence": str(sequence).zfill(12),
        "time": "2026-12-01T10:00:00.000Z",
        "subject": subject,
        "historical": False,
        "data": data,
    }


def test_a_table_appears_with_its_retained_topics_and_leaves_when_they_are_cleared() -> None:
    model = StudioModel("s1")
    assert msg(model, "t1/status", {"status": "online", "boot": 3}, retained=True) == "t1"
    msg(model, "t1/state", state(), retained=True)
    msg(model, "t1/devices/shoe", {"status": "online", "detail": "online"}, retained=True)
    summary = model.summary("t1")
    assert summary is not None
    assert (summary["link"], summary["boot"], summary["title"], summary["round_id"]) == (
        "online",
        3,
        "Baccarat",
        "t1-0001",
    )
    assert summary["attention"] is False and summary["devices"]["shoe"]["status"] == "online"
    # the same value again changes nothing (a reconnection re-reads every retained topic)
    version = model.version
    assert msg(model, "t1/status", {"status": "online", "boot": 3}, retained=True) is None
    assert model.version == version
    for topic in ("t1/status", "t1/state"):
        msg(model, topic, None, retained=True)
    assert "t1" in model.tables  # its device is still retained
    msg(model, "t1/devices/shoe", None, retained=True)
    assert "t1" not in model.tables and model.summary("t1") is None


def test_offline_and_paused_tables_need_attention_and_say_since_when() -> None:
    model = StudioModel("s1")
    msg(model, "t1/status", {"status": "offline", "boot": 2}, retained=True, now=500.0)
    summary = model.summary("t1")
    assert summary is not None and summary["attention"] and summary["link"] == "offline"
    # read at subscription time: it was offline already, since before the console knew
    assert summary["waiting_since_known"] is False
    msg(model, "t2/status", {"status": "online", "boot": 1})
    msg(model, "t2/status", {"status": "offline", "boot": 1}, now=1500.0)
    summary = model.summary("t2")
    assert summary is not None and summary["waiting_since"] == "1970-01-01T00:25:00.000Z"
    assert summary["waiting_since_known"] is True
    msg(model, "t3/state", state(paused=True))
    summary = model.summary("t3")
    assert summary is not None and summary["attention"] and summary["paused"]
    assert summary["waiting_since"] == "2026-12-01T10:00:00.000Z"
    assert summary["pause"]["reason"] == "shoe offline: link lost"


def test_a_reconnection_forgets_what_the_broker_no_longer_holds_and_lists_a_silent_table_as_missing() -> None:
    model = StudioModel("s1")
    for table in ("t1", "t2"):
        msg(model, f"{table}/status", {"status": "online", "boot": 1}, retained=True)
        msg(model, f"{table}/devices/shoe", {"status": "online"}, retained=True)
    msg(model, "t1/state", state(), retained=True)
    model.begin_resync()
    # the broker sends t1's topics again, but not t2's, nor t1's device
    msg(model, "t1/status", {"status": "online", "boot": 1}, retained=True)
    msg(model, "t1/state", state(), retained=True)
    assert model.end_resync(2000.0) == ["t2"]
    assert model.tables["t1"].devices == {}
    # t2: nothing of it came back (a broker restarted without its retained messages, or a dead table): it
    # is not dropped without a word but listed as missing, "not heard from since", until dismissed
    missing = model.summary("t2")
    assert missing is not None and missing["link"] == "missing" and missing["attention"]
    assert missing["waiting_since"] == "1970-01-01T00:33:20.000Z"
    assert missing["devices"]["shoe"]["status"] == "unknown"
    assert model.dismiss("t1") is False  # a table that is there cannot be dismissed
    assert model.dismiss("t2") is True
    assert list(model.tables) == ["t1"]


def test_a_missing_table_heard_of_again_is_no_longer_missing() -> None:
    model = StudioModel("s1")
    msg(model, "t1/status", {"status": "online", "boot": 1}, retained=True)
    model.begin_resync()
    assert model.end_resync(2000.0) == ["t1"]
    assert model.summary("t1")["link"] == "missing"  # type: ignore[index]
    # the same retained status again, when the table reconnects: it is there
    msg(model, "t1/status", {"status": "online", "boot": 1}, retained=True)
    assert model.summary("t1")["link"] == "online"  # type: ignore[index]
    assert model.dismiss("t1") is False


def test_events_are_kept_once_each_with_results_backlog_and_who_did_what() -> None:
    model = StudioModel("s1")
    msg(model, "t1/state", state(last_sequence=5))
    assert model.summary("t1")["backlog"] is None  # type: ignore[index]  # no event seen yet
    msg(model, "t1/events/round.opened", event(1, "round.opened", {"round_id": "t1-0001"}))
    msg(
        model,
        "t1/events/card.dealt",
        event(2, "card.dealt", {"card": "9S", "position": "player", "index": 0}),
    )
    assert (
        msg(model, "t1/events/card.dealt", event(2, "card.dealt", {"card": "9S"})) is None
    )  # re-sent: same id
    msg(model, "t1/events/round.paused", event(3, "round.paused", {"reason": "shoe fault", "by": "device"}))
    assert model.summary("t1")["backlog"] == 2  # type: ignore[index]  # journaled up to 5, seen up to 3
    msg(model, "t1/events/round.resumed", event(4, "round.resumed", {"by": "supervisor-desk-2"}))
    result = {
        "game": "baccarat",
        "round_id": "t1-0001",
        "player": {"cards": ["9S", "KC"], "total": 9},
        "banker": {"cards": ["8D", "5H"], "total": 3},
        "winner": "player",
        "natural": True,
    }
    msg(model, "t1/events/round.result", event(5, "round.result", result))
    summary = model.summary("t1")
    assert summary is not None and summary["backlog"] == 0 and summary["last_sequence_seen"] == 5
    assert summary["last_result"]["text"] == "Player 9S KC (9) vs Banker 8D 5H (3) -> PLAYER natural"
    detail = model.detail("t1")
    assert detail is not None
    assert [e["type"] for e in detail["round_events"]] == [
        "round.opened",
        "card.dealt",
        "round.paused",
        "round.resumed",
        "round.result",
    ]
    assert detail["round_seen_from_start"] is True
    assert detail["round_events"][1]["text"] == "9S to player"
    assert [(h["who"], h["what"]) for h in detail["history"]] == [
        ("supervisor-desk-2", "resumed"),
        ("device", "paused"),
    ]


def test_a_command_sent_from_the_console_gets_its_reply_or_its_refusal() -> None:
    model = StudioModel("s1")
    msg(model, "t1/state", state())
    model.record_command("t1", user="desk-1", name="resume", payload={}, transaction="c-1", now=1.0)
    model.record_command(
        "t1", user="desk-1", name="pause", payload={"reason": "x"}, transaction="c-2", now=2.0
    )
    msg(
        model,
        "t1/replies/resume",
        {"transaction": "c-1", "status": "error", "error": "the table is not paused"},
    )
    model.command_outcome("t1", "c-2", "refused", "refused by the broker: Not authorized (0x87)")
    # someone else's command: its reply alone
    msg(model, "t1/replies/void_round", {"transaction": "other", "status": "ok", "data": {}})
    history = model.detail("t1")["history"]  # type: ignore[index]
    assert [(h["what"], h["status"], h["outcome"] if "outcome" in h else h["detail"]) for h in history] == [
        ("reply to void_round", "ok", "ok"),
        ("pause", "refused", "refused by the broker: Not authorized (0x87)"),
        ("resume", "error", "error: the table is not paused"),
    ]


def test_what_is_not_a_table_message_is_ignored() -> None:
    model = StudioModel("s1")
    assert model.on_message("studio/s2/table/t1/status", b'{"status": "online"}', True, 0.0) is None
    assert msg(model, "t1/status", b"not json") is None
    assert msg(model, "t1/status", b"[1, 2]") is None
    assert msg(model, "t1/events/x", {"no": "id"}) is None
    assert msg(model, "t1/devices/a/b", {"status": "online"}) is None
    assert model.tables == {} and model.ignored == 5


def test_an_offline_tables_devices_and_prompt_are_unknown_not_what_it_last_said() -> None:
    # a table killed outright (its Last Will says offline) kept its green "shoe online" and its prompt
    model = StudioModel("s1")
    msg(model, "t1/status", {"status": "online", "boot": 1}, retained=True)
    msg(model, "t1/state", state(), retained=True)
    msg(model, "t1/devices/shoe", {"status": "online", "detail": "online"}, retained=True)
    summary = model.summary("t1")
    assert summary is not None and summary["devices"]["shoe"]["status"] == "online"
    assert summary["prompt"] == "Deal to Player"
    msg(model, "t1/status", {"status": "offline", "boot": 1}, now=1500.0)  # its Will, seen as it fired
    summary = model.summary("t1")
    assert summary is not None
    shoe = summary["devices"]["shoe"]
    assert (shoe["status"], shoe["last_status"], shoe["last_seen"]) == (
        "unknown",
        "online",
        "1970-01-01T00:25:00.000Z",
    )
    assert summary["device_problems"] == ["shoe"] and summary["prompt"] is None
    # nor is its phase: it may have moved on, or died mid-round ("in play" shown as if current, before)
    assert (summary["phase"], summary["last_phase"]) == (None, "in_play")
    assert (summary["last_seen"], summary["last_seen_known"]) == ("1970-01-01T00:25:00.000Z", True)
    # back online: what it says is true again
    msg(model, "t1/status", {"status": "online", "boot": 2}, retained=True, now=1600.0)
    summary = model.summary("t1")
    assert summary is not None and summary["phase"] == "in_play" and summary["last_seen"] is None


def test_a_table_offline_already_at_subscription_was_last_seen_before_then() -> None:
    model = StudioModel("s1")
    msg(model, "t1/state", state(), retained=True, now=500.0)
    msg(model, "t1/status", {"status": "offline", "boot": 1}, retained=True, now=500.0)
    summary = model.summary("t1")
    assert summary is not None and summary["phase"] is None
    assert (summary["last_seen"], summary["last_seen_known"]) == ("1970-01-01T00:08:20.000Z", False)


def test_a_pause_is_explained_in_words_with_what_it_waits_for() -> None:
    model = StudioModel("s1")
    msg(model, "t1/status", {"status": "online", "boot": 1}, retained=True)
    paused = state(paused=True)
    raw = "lost connection to /dev/ttyUSB0: device reports readiness to read but returned no data"
    paused["pause"] = {**paused["pause"], "cause": "device", "reason": f"shoe offline: {raw}"}
    paused["devices"] = {"shoe": {"status": "offline", "detail": raw}}
    msg(model, "t1/state", paused, retained=True)
    explained = model.summary("t1")["explanation"]  # type: ignore[index]
    assert explained["headline"] == "Shoe disconnected — check its cable"
    assert explained["waits_for"] == "the shoe to be back online" and explained["ready_to_resume"] is False
    assert explained["detail"] == raw  # the driver's words, once, for the detail view
    # the shoe is back: the pause waits for nobody but the supervisor, whose resume would be accepted
    msg(model, "t1/devices/shoe", {"status": "online", "detail": "online"}, retained=True)
    explained = model.summary("t1")["explanation"]  # type: ignore[index]
    assert explained["ready_to_resume"] is True and explained["waits_for"] is None
    # the table itself goes offline: no resume can be accepted until it is back
    msg(model, "t1/status", {"status": "offline", "boot": 1}, retained=True)
    explained = model.summary("t1")["explanation"]  # type: ignore[index]
    assert explained["waits_for"] == "the table to be back online" and explained["ready_to_resume"] is False


def test_the_rounds_story_is_in_the_tables_order_and_tells_the_driver_text_in_short() -> None:
    # a resume that applies held readings publishes them after the resume; a re-sent event may arrive late:
    # the story follows the table's sequence, not the order of arrival
    model = StudioModel("s1")
    msg(model, "t1/state", state(last_sequence=5))
    raw = "lost connection to /dev/ttyUSB0: device reports readiness to read but returned no data"
    opened = {"round_id": "t1-0001", "betting_closes_at": "2026-12-01T10:00:15.000Z"}
    for sequence, type_, data in [
        (1, "round.opened", opened),
        (3, "round.paused", {"reason": f"shoe offline: {raw}", "by": "device", "device": "shoe"}),
        (2, "device.offline", {"device": "shoe", "status": "offline", "detail": raw}),
        (5, "card.dealt", {"card": "9S", "position": "player", "index": 0}),
        (4, "round.resumed", {"by": "supervisor-desk-2"}),
    ]:
        subject = None if type_.startswith("device.") else "t1-0001"
        msg(model, f"t1/events/{type_}", event(sequence, type_, data, subject))
    detail = model.detail("t1")
    assert detail is not None
    lines = detail["round_events"]
    assert [e["type"] for e in lines] == ["round.opened", "round.paused", "round.resumed", "card.dealt"]
    # the time a round's betting closes is given apart, for the page to write in local time
    assert (lines[0]["text"], lines[0]["until"]) == ("betting open", "2026-12-01T10:00:15.000Z")
    assert lines[1]["text"] == "shoe offline by device"
    assert all(raw not in e["text"] for e in detail["recent_events"])
    assert detail["history"][-1]["detail"] == "shoe offline (device shoe)"


def test_wills_that_fire_as_the_broker_goes_down_are_not_taken_for_dead_tables() -> None:
    # a broker that stops disconnects every client and fires their Last Wills: healthy tables turned
    # OFFLINE (1 of 50, then 7 of 49) as it went down
    model = StudioModel("s1")
    model.set_link(True, "connected", 1000.0)
    for table in ("t1", "t2"):
        msg(model, f"{table}/status", {"status": "online", "boot": 1}, retained=True, now=1000.0)
    msg(model, "t2/status", {"status": "offline", "boot": 1}, now=1500.0)  # died long before
    msg(model, "t1/status", {"status": "offline", "boot": 1}, now=1999.0)  # its Will, as the broker stops
    model.set_link(False, "connection lost", 2000.0)
    t1, t2 = model.summary("t1"), model.summary("t2")
    assert t1 is not None and t2 is not None
    assert (t1["link"], t1["offline_with_broker"], t1["attention"]) == ("unknown", True, False)
    assert (t2["link"], t2["attention"]) == ("offline", True)
    # the broker is back: what it holds of t1 decides (a live table says online again; a dead one stays
    # offline, now for real)
    model.set_link(True, "connected", 2010.0)
    model.begin_resync()
    msg(model, "t1/status", {"status": "offline", "boot": 1}, retained=True, now=2011.0)
    assert model.summary("t1")["link"] == "offline"  # type: ignore[index]


BACCARAT_NATURAL = {
    "game": "baccarat",
    "round_id": "t1-0001",
    "player": {"cards": ["9S", "KC"], "total": 9},
    "banker": {"cards": ["4D", "4H"], "total": 8},
    "winner": "player",
    "natural": True,
    "player_pair": False,
    "banker_pair": True,
}


def test_the_retained_result_shows_each_tables_last_result_at_subscription() -> None:
    # after a sign-in every tile said "no result seen yet" until the table's next round ended
    model = StudioModel("s1")
    last = event(41, "round.result", BACCARAT_NATURAL)
    # the retained copy may come before anything else of its table: it waits for the table, and alone
    # does not make one (a table whose other topics were cleared stays gone)
    assert msg(model, "t1/result", last, retained=True) is None
    assert model.tables == {}
    msg(model, "t1/status", {"status": "online", "boot": 1}, retained=True)
    msg(model, "t1/state", state(last_sequence=41), retained=True)
    summary = model.summary("t1")
    assert summary is not None and summary["last_result"]["round_id"] == "t1-0001"
    # on the tile: what was dealt, and the outcome apart with its extras short, shown whole
    assert (summary["last_result"]["dealt"], summary["last_result"]["outcome"]) == (
        "Player 9S KC (9) vs Banker 4D 4H (8)",
        "PLAYER, natural, B pair",
    )
    # not an event seen: the backlog and the round's story are not made up from it
    assert summary["backlog"] is None and summary["last_sequence_seen"] is None
    # the same result again (the live event, a reconnection's re-read) is one result
    assert msg(model, "t1/result", last, retained=True) is None
    msg(model, "t1/events/round.result", last)
    assert len(model.detail("t1")["results"]) == 1  # type: ignore[index]
    # a void does not clear it
    msg(model, "t1/events/round.voided", event(43, "round.voided", {"reason": "misdeal", "by": "s"}, "t1-2"))
    assert model.summary("t1")["last_result"]["round_id"] == "t1-0001"  # type: ignore[index]
    # an older copy read after a newer live result (a reconnection) does not take its place
    newer = event(50, "round.result", {**BACCARAT_NATURAL, "round_id": "t1-0003"}, "t1-0003")
    older = event(30, "round.result", {**BACCARAT_NATURAL, "round_id": "t1-0000"}, "t1-0000")
    msg(model, "t1/events/round.result", newer)
    msg(model, "t1/result", older, retained=True)
    assert model.summary("t1")["last_result"]["round_id"] == "t1-0003"  # type: ignore[index]
    # a result of a game without tile words is told whole
    msg(model, "t2/status", {"status": "online", "boot": 1}, retained=True)
    roulette = {
        "game": "roulette",
        "number": 17,
        "color": "black",
        "spin": 3,
        "rotor_rpm": 24,
        "direction": "cw",
    }
    msg(model, "t2/result", event(7, "round.result", roulette, "t2-7"), retained=True)
    shown = model.summary("t2")["last_result"]  # type: ignore[index]
    assert shown["outcome"] is None and shown["text"].startswith("17 black")


def test_the_details_list_what_a_resume_would_apply() -> None:
    model = StudioModel("s1")
    paused = state(paused=True)
    paused["held_readings"] = 2
    paused["held"] = [
        {"device": "shoe", "reading": "CardSeen", "card": "9S", "raw": "CARD 7 9S"},
        {"device": "shoe", "reading": "CardSeen", "card": None, "raw": ""},
    ]
    msg(model, "t1/state", paused, retained=True)
    detail = model.detail("t1")
    assert detail is not None and detail["held_readings"] == 2
    assert [(h["card"], h["raw"]) for h in detail["held"]] == [("9S", "CARD 7 9S"), (None, "")]
    # a table from before the list: none to show, the count still said
    del paused["held"]
    msg(model, "t1/state", paused, retained=True)
    assert model.detail("t1")["held"] == []  # type: ignore[index]


def test_the_sessions_of_one_console_keep_each_event_once() -> None:
    # Every sign-in receives the same events on its own connection: the models keep the same objects, so
    # the console's memory does not grow with sign-ins x tables x events.
    shared = SharedEvents()
    desks = [StudioModel("s1", shared=shared) for _ in range(3)]
    for desk in desks:
        msg(desk, "t1/state", state())
        for n in range(1, 4):
            msg(desk, "t1/events/card.dealt", event(n, "card.dealt", {"card": "9S", "position": "player"}))
    first, *others = (list(desk.tables["t1"].events) for desk in desks)
    assert all(a is b for events in others for a, b in zip(first, events, strict=True))
    assert len(shared) == 3
    # an event re-sent after an outage says so (`historical`): it is not taken for the live copy
    late = {**event(4, "round.paused", {"reason": "shoe fault", "by": "device"}), "historical": True}
    msg(desks[0], "t1/events/round.paused", late)
    msg(desks[1], "t1/events/round.paused", {**late, "historical": False})
    assert desks[0].tables["t1"].events[-1]["historical"] is True
    assert desks[1].tables["t1"].events[-1]["historical"] is False


def test_the_shared_events_are_bounded_per_table_and_in_tables() -> None:
    shared = SharedEvents(max_tables=2)
    for table in ("t1", "t2", "t3"):
        for n in range(RECENT_EVENTS + 5):
            shared.intern(table, event(n, "card.dealt", {"card": "9S"}))
    assert len(shared) == 2 * RECENT_EVENTS  # the oldest events left; a third table is not kept at all
    envelope = event(1, "card.dealt", {})
    assert shared.intern("t3", envelope) is envelope
