"""A pause explained in a person's words (`controller.pause_reasons`): the headline names what happened and
what fixes it, the pause says what it waits for, and a resume is offered only when the table would take it."""

from __future__ import annotations

import pytest

from controller.pause_reasons import FAULT_WORDS, WAIT_FOR_SUPERVISOR, device_pause_reason, explain_pause

pytestmark = pytest.mark.unit

RAW = (
    "lost connection to the port: device reports readiness to read but returned no data "
    "(device disconnected or multiple access on port?)"
)


def _device_pause(device: str, status: str, detail: str) -> dict[str, object]:
    reason = device_pause_reason(device, status, detail)
    return {"reason": reason, "by": "device", "device": device, "cause": "device", "since": 1.0}


def test_a_disconnected_shoe_reads_as_a_cable_to_check_and_waits_for_the_shoe() -> None:
    devices = {"shoe": {"status": "offline", "detail": RAW, "code": None}}
    explained = explain_pause(_device_pause("shoe", "offline", RAW), devices)
    assert explained is not None
    assert explained.headline == "Shoe disconnected — check its cable"
    assert explained.code == "device_offline"
    assert explained.waits_for == "the shoe to be back online"
    assert not explained.ready_to_resume
    # the driver's text is kept once, whole, for the detail view; the prefix the runtime adds is not repeated
    assert explained.detail == RAW


def test_once_the_device_is_back_the_pause_waits_for_the_supervisor_alone() -> None:
    devices = {"shoe": {"status": "online", "detail": "online", "code": None}}
    explained = explain_pause(_device_pause("shoe", "offline", RAW), devices)
    assert explained is not None
    assert explained.code == "device_back"
    assert explained.ready_to_resume and explained.waits_for is None
    assert explained.dealer_action == WAIT_FOR_SUPERVISOR
    assert "check its cable" not in explained.headline


def test_a_silent_device_is_told_from_an_unplugged_one() -> None:
    detail = "no data from device for 3 s"
    devices = {"shoe": {"status": "offline", "detail": detail, "code": None}}
    explained = explain_pause(_device_pause("shoe", "offline", detail), devices)
    assert explained is not None
    assert explained.headline == "Shoe stopped answering — check its power and cable"


@pytest.mark.parametrize("code", sorted(FAULT_WORDS))
def test_every_documented_fault_code_has_words_and_a_fix(code: str) -> None:
    devices = {"wheel": {"status": "fault", "detail": "raw text", "code": code}}
    explained = explain_pause(_device_pause("wheel", "fault", "raw text"), devices)
    what, fix = FAULT_WORDS[code]
    assert explained is not None and explained.headline == f"Wheel {what} — {fix}"
    assert code not in explained.headline  # words, not the code
    assert explained.waits_for == "the wheel to be back online"


def test_an_unknown_fault_code_is_still_shown() -> None:
    devices = {"shaker": {"status": "fault", "detail": "X", "code": "Z99"}}
    explained = explain_pause(_device_pause("shaker", "fault", "X"), devices)
    assert explained is not None and explained.headline == "Shaker reports fault Z99 — call a technician"


def test_another_device_down_keeps_a_supervisors_pause_waiting() -> None:
    pause = {"reason": "shift change", "by": "alice", "device": None, "cause": "supervisor", "since": 1.0}
    devices = {"shoe": {"status": "online"}, "dice_camera": {"status": "offline", "detail": "x"}}
    explained = explain_pause(pause, devices)
    assert explained is not None
    assert explained.headline == "Paused by the supervisor (alice)"
    assert explained.waits_for == "the dice camera to be back online"
    healthy = explain_pause(pause, {"shoe": {"status": "online"}})
    assert healthy is not None and healthy.ready_to_resume


@pytest.mark.parametrize(
    ("cause", "by", "code", "words"),
    [
        ("supervisor", "panel", "dealer", "The dealer called the supervisor"),
        ("supervisor", "dealer:d7", "dealer", "The dealer called the supervisor"),
        ("supervisor", "ops:anna", "supervisor", "Paused by the supervisor (ops:anna)"),
        ("out_of_procedure", "device", "out_of_procedure", "A card came out of procedure"),
        ("restart", "system", "restart", "The controller restarted mid-round"),
        ("internal_error", "system", "internal_error", "Internal error"),
        ("game", "system", "game", "Dice unreadable after 3 re-shakes"),
    ],
)
def test_each_cause_has_its_own_words(cause: str, by: str, code: str, words: str) -> None:
    pause = {"reason": "dice unreadable after 3 re-shakes", "by": by, "device": None, "cause": cause}
    explained = explain_pause(pause, {})
    assert explained is not None
    assert explained.code == code
    assert explained.headline.startswith(words)
    assert explained.dealer_action == WAIT_FOR_SUPERVISOR
    assert explained.public()["ready_to_resume"] is True


def test_no_pause_no_explanation() -> None:
    assert explain_pause(None, {}) is None
