"""The journaled table state: how a `TableRecord` is stored in the journal's state row and read back.

The row holds the record as UTF-8 JSON with its `state_version`. Reading it back migrates older versions
by code (`MIGRATIONS`, one function per version step) and refuses what it cannot read — a newer version, a
damaged row, or the pickled snapshot of the first release — with one line for the operator. It never
silently starts afresh: the paused round that recovery exists to protect would be lost without a word.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from controller.runtime import STATE_VERSION, StateMismatch


def _v1_to_v2(record: dict[str, Any]) -> dict[str, Any]:
    """Version 2: a card game's flow lists the round's hand-entered cards (`manual_cards`); a version-1 round
    had none marked."""
    flow = record.get("flow")
    if isinstance(flow, dict) and "composition" in flow:
        flow.setdefault("manual_cards", [])
    return record


def _v2_to_v3(record: dict[str, Any]) -> dict[str, Any]:
    """Version 3: a card game's flow keeps the shuffle its next round waits for. A version-2 table asked
    nothing of a shuffler that it waits for: none is pending (the next need comes at the end of a round)."""
    flow = record.get("flow")
    if isinstance(flow, dict) and "composition" in flow and "shuffle" not in flow:
        flow["shuffle"] = {
            "wanted": False,
            "reason": "",
            "ids": [],
            "requested": 0,
            "failure": None,
            "round_waits": False,
        }
    return record


def _v3_to_v4(record: dict[str, Any]) -> dict[str, Any]:
    """Version 4: a pause keeps its cause (`controller.events.PauseCause`), told from who paused and why as
    version 3 wrote them; a version-3 card game held no card out of procedure (such a card was rejected)."""
    pause = record.get("pause")
    if isinstance(pause, dict) and "cause" not in pause:
        by, reason = pause.get("by"), str(pause.get("reason", ""))
        if by == "device":
            cause = "device"
        elif by != "system":
            cause = "supervisor"
        elif reason.startswith("controller restarted"):
            cause = "restart"
        elif reason.startswith("internal error"):
            cause = "internal_error"
        else:
            cause = "game"
        pause["cause"] = cause
    flow = record.get("flow")
    if isinstance(flow, dict) and "composition" in flow:
        flow.setdefault("out_of_procedure", None)
        flow.setdefault("set_aside_refs", [])
    return record


def _v4_to_v5(record: dict[str, Any]) -> dict[str, Any]:
    """Version 5: Infinite Blackjack keeps the codes of the cards burned this shoe (`burned_cards`, secret).
    A version-4 table kept only their number: those burned before the upgrade are not known (until the
    next shoe, a re-passed one of them could be named as version 4 would have named it)."""
    flow = record.get("flow")
    if record.get("game") == "infinite_blackjack" and isinstance(flow, dict):
        flow.setdefault("burned_cards", [])
    return record


#: version N -> a function turning a version-N record into a version-(N+1) record
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
}

DISCARD_HINT = (
    "fix the configuration, or start once with --discard-state to drop the stored state "
    "(a round in progress is then lost; its events stay in the journal)"
)


def encode_state(record: dict[str, Any]) -> bytes:
    return json.dumps(record, separators=(",", ":"), sort_keys=True).encode("utf-8")


def decode_state(blob: bytes) -> dict[str, Any]:
    """The stored record, migrated to STATE_VERSION. Raises StateMismatch with the reason."""
    if not blob.lstrip().startswith(b"{"):
        raise StateMismatch(
            "the journal's table state is a snapshot of an earlier release (not a JSON record), "
            "which this version does not read"
        )
    try:
        record = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StateMismatch(f"the journal's table state is damaged ({exc})") from None
    if not isinstance(record, dict) or not isinstance(record.get("state_version"), int):
        raise StateMismatch("the journal's table state has no state_version")
    return migrate(record)


def migrate(
    record: dict[str, Any],
    migrations: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
    target: int = STATE_VERSION,
) -> dict[str, Any]:
    steps = MIGRATIONS if migrations is None else migrations
    version = record["state_version"]
    if version > target:
        raise StateMismatch(
            f"the journal's table state is version {version}, written by a newer tablectl "
            f"(this one reads up to {target})"
        )
    while version < target:
        step = steps.get(version)
        if step is None:
            raise StateMismatch(f"no migration from table state version {version}")
        record = step(record)
        version += 1
        record["state_version"] = version
    return record
