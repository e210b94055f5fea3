"""What a supervisor's console knows of a studio's tables, built from the tables' MQTT messages alone.

Pure, like the table's core: messages come in with the time they arrived (`on_message(topic, payload,
retained, now)`), and the summaries the grid draws and the details of one table come out. Nothing here
reads a clock or touches the network (`controller.console.link` does).

What it keeps per table: the retained `status`, `state` and `devices/<name>` (the latest of each), the
recent events (de-duplicated by id: a re-sent event keeps its id), the recent results (from the live
`round.result` events, and the retained `result`, the table's copy of its last one, read at subscription:
a supervisor who signs in sees every table's last result at once), and a history of who did what (the
events' `by`, the replies, and the commands this console sent).

While a table is offline (its Last Will) or missing, what it last said of its phase, prompt and devices is
not what is true now: the summary says them unknown, with when the table was last seen.

Tables come and go: a retained topic cleared (an empty retained payload) is forgotten, and a table with no
retained topic left leaves the grid. After a reconnection the broker sends every retained value again:
`begin_resync()` marks what is known as unconfirmed, each retained message confirms (or replaces) its value,
and `end_resync()` drops whatever was not sent again. A table the broker sent nothing of again is not dropped
but kept as *missing* ("not heard from since …", its last values kept) until it is heard of again or a
supervisor dismisses it: a broker restarted without its retained messages must not make a dead table
vanish without a word.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from controller.events import iso_ms
from controller.pause_reasons import explain_pause, short_reason

#: events kept per table (a baccarat round is about 10, a stud round about 30)
RECENT_EVENTS = 300
#: results kept per table
RECENT_RESULTS = 20
#: history entries kept per table (who did what)
RECENT_HISTORY = 60
#: tables at most: beyond, new table ids are ignored (a runaway publisher must not exhaust memory)
MAX_TABLES = 5000
#: payloads larger than this are ignored (a table's state is a few KiB)
MAX_PAYLOAD_BYTES = 512 * 1024
#: what the page gets of a result: its words, and for a tile what was dealt and the outcome apart
RESULT_SHOWN = ("round_id", "time", "text", "dealt", "outcome")
#: held readings listed in a table's details at most (a pause holds at most 64)
MAX_HELD_SHOWN = 64
#: the events that say who did something to a table
BY_EVENTS = ("round.paused", "round.resumed", "round.voided")
#: a table's Last Will that came this shortly before the console lost the broker is taken for the broker's
#: shutdown (a broker stopping disconnects every client and fires their Wills), not for the table's death
WILL_WITH_BROKER_LOSS_SECONDS = 3.0


class SharedEvents:
    """One copy of each event for every sign-in of the console.

    Each supervisor's session has its own broker connection (the broker's ACL says what that supervisor may
    see) and its own model, so each receives and parses the same events. Kept as they came, the recent events
    of every table cost about 2 KiB each in every session: memory that grows with sessions x tables until
    each table's history is full. Here a session's model keeps the event it parsed only if no session has
    it yet, and otherwise the copy already kept: the events are held once, the sessions hold references.
    Bounded like a model's history: the last `per_table` events of at most `max_tables` tables (an event
    evicted here while a session still holds it stays that session's, and is freed with its history)."""

    def __init__(self, *, per_table: int = RECENT_EVENTS, max_tables: int = MAX_TABLES) -> None:
        self.per_table = per_table
        self.max_tables = max_tables
        self._tables: dict[str, dict[tuple[str, bool], dict[str, Any]]] = {}

    def intern(self, table_id: str, envelope: dict[str, Any]) -> dict[str, Any]:
        """The copy of `envelope` every session shares. The key is the event's id and whether it came late
        (`historical`: an event re-sent after an outage keeps its id but says so), never its content alone."""
        events = self._tables.get(table_id)
        if events is None:
            if len(self._tables) >= self.max_tables:
                return envelope
            events = self._tables[table_id] = {}
        key = (str(envelope.get("id")), bool(envelope.get("historical")))
        known = events.get(key)
        if known is not None:
            return known
        events[key] = envelope
        if len(events) > self.per_table:
            del events[next(iter(events))]  # the oldest: dicts keep their insertion order
        return envelope

    def __len__(self) -> int:
        return sum(len(events) for events in self._tables.values())


@dataclass
class TableView:
    table_id: str
    status: dict[str, Any] | None = None
    state: dict[str, Any] | None = None
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECENT_EVENTS))
    event_ids: dict[str, None] = field(default_factory=dict)
    max_sequence: int | None = None
    results: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECENT_RESULTS))
    history: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECENT_HISTORY))
    #: when the console saw it go offline (epoch s); `offline_since_known` is False when it was offline
    #: already when the console connected (then the time is when the console learnt it)
    offline_since: float | None = None
    offline_since_known: bool = True
    #: retained topics (`status`, `state`, `devices/<name>`) not confirmed since the last reconnect
    unconfirmed: set[str] = field(default_factory=set)
    #: bumped on every change: the page redraws a table whose revision moved
    rev: int = 0
    #: when a reconnection found nothing of it on the broker (epoch s); None while it is heard of
    missing_since: float | None = None
    #: its `offline` came as the broker went away: probably the broker's shutdown firing its Will, not the
    #: table's death; unknown until the broker, back, says again what the table's status is
    offline_with_broker: bool = False

    @property
    def has_retained(self) -> bool:
        return self.status is not None or self.state is not None or bool(self.devices)


@dataclass
class Link:
    connected: bool = False
    since: float | None = None
    detail: str = "not connected yet"


class StudioModel:
    def __init__(self, studio_id: str, *, describe: Any = None, shared: SharedEvents | None = None) -> None:
        self.studio_id = studio_id
        #: where the events every session receives are kept once (None: this model keeps its own)
        self.shared = shared
        self.prefix = f"studio/{studio_id}/table/"
        self.tables: dict[str, TableView] = {}
        self.link = Link()
        #: bumped on every change of anything; streams wait for it to move
        self.version = 0
        self.ignored = 0  # messages that could not be used (bad topic, not JSON, too large)
        self._revisions = 0
        #: how a result is told in words: `describe(game, data) -> str` (default: the game's registration)
        self._describe = describe or _describe_result
        #: a retained `result` of a table not known yet (its other retained topics come after it): kept
        #: until the table is, at most one per table
        self._early_results: dict[str, dict[str, Any]] = {}

    # --- input ---------------------------------------------------------------------------------------

    def on_message(self, topic: str, payload: bytes, retained: bool, now: float) -> str | None:
        """Apply one message; returns the id of the table it changed (None if nothing changed)."""
        if not topic.startswith(self.prefix):
            self.ignored += 1
            return None
        table_id, _, rest = topic[len(self.prefix) :].partition("/")
        if not table_id or not rest:
            self.ignored += 1
            return None
        if len(payload) > MAX_PAYLOAD_BYTES:
            self.ignored += 1
            return None
        value: Any = None
        if payload:
            try:
                value = json.loads(payload)
            except ValueError:
                self.ignored += 1
                return None
            if not isinstance(value, dict):
                self.ignored += 1
                return None
        kind, _, name = rest.partition("/")
        if (kind in ("status", "state") and not name) or (kind == "devices" and name and "/" not in name):
            return self._on_retained(table_id, rest, value, retained, now)
        if value is None:
            return None
        if kind == "result" and not name:
            return self._on_result(table_id, value)
        if kind == "events":
            return self._on_event(table_id, value)
        if kind == "replies":
            return self._on_reply(table_id, name.partition("/")[0], value, now)
        self.ignored += 1
        return None

    def _table(self, table_id: str, create: bool = True) -> TableView | None:
        table = self.tables.get(table_id)
        if table is None and create and len(self.tables) < MAX_TABLES:
            table = self.tables[table_id] = TableView(table_id)
            early = self._early_results.pop(table_id, None)
            if early is not None:
                self._add_result(table, early)
        return table

    def _changed(self, table: TableView) -> str:
        self._revisions += 1
        table.rev = self._revisions
        self.version += 1
        return table.table_id

    def _on_retained(
        self, table_id: str, topic: str, value: dict[str, Any] | None, retained: bool, now: float
    ) -> str | None:
        table = self._table(table_id, create=value is not None)
        if table is None:
            return None
        table.unconfirmed.discard(topic)
        if topic == "status" and table.offline_with_broker and retained:
            table.offline_with_broker = False  # the broker, back, says what it holds of the table now
            self._changed(table)
        if value is not None and table.missing_since is not None:
            table.missing_since = None  # heard of again
            self._changed(table)
        if value is None:  # cleared: the table (or this device) is gone
            if topic == "status":
                table.status = None
                table.offline_since = None
            elif topic == "state":
                table.state = None
            else:
                table.devices.pop(topic.partition("/")[2], None)
            if not table.has_retained:
                del self.tables[table_id]
                self.version += 1
                return table_id
            return self._changed(table)
        if topic == "status":
            if value == table.status:
                return None  # the same again (a reconnect's re-read): nothing moved
            self._on_status(table, value, retained, now)
        elif topic == "state":
            if value == table.state:
                return None
            table.state = value
        else:
            name = topic.partition("/")[2]
            if table.devices.get(name) == value:
                return None
            table.devices[name] = value
        return self._changed(table)

    def _on_status(self, table: TableView, status: dict[str, Any], retained: bool, now: float) -> None:
        offline = status.get("status") == "offline"
        was_offline = table.status is not None and table.status.get("status") == "offline"
        if offline and not was_offline:
            table.offline_since = now
            # a retained `offline` read at subscription time happened before: when, the payload does not say
            table.offline_since_known = not retained
        elif not offline:
            table.offline_since = None
        table.status = status

    def _on_event(self, table_id: str, envelope: dict[str, Any]) -> str | None:
        event_id, type_ = envelope.get("id"), envelope.get("type")
        if not isinstance(event_id, str) or not isinstance(type_, str):
            self.ignored += 1
            return None
        table = self._table(table_id)
        if table is None or event_id in table.event_ids:
            return None  # a re-sent event (same id): already known
        table.event_ids[event_id] = None
        table.missing_since = None  # it publishes: it is there
        if len(table.event_ids) > 2 * RECENT_EVENTS:
            table.event_ids = {e["id"]: None for e in table.events}
            table.event_ids[event_id] = None
        if self.shared is not None:
            envelope = self.shared.intern(table_id, envelope)
        table.events.append(envelope)
        sequence = _sequence(envelope)
        if sequence is not None and (table.max_sequence is None or sequence > table.max_sequence):
            table.max_sequence = sequence
        data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
        assert isinstance(data, dict)
        if type_ == "round.result":
            self._add_result(table, envelope)
        if type_ in BY_EVENTS:
            detail = _short_reason(data)
            if data.get("device"):
                detail = f"{detail} (device {data['device']})"
            table.history.append(
                {
                    "time": envelope.get("time"),
                    "who": str(data.get("by") or "?"),
                    "what": type_.partition(".")[2],
                    "detail": detail,
                    "round_id": envelope.get("subject"),
                    "source": "event",
                }
            )
        return self._changed(table)

    def _on_result(self, table_id: str, envelope: dict[str, Any] | None) -> str | None:
        """The retained `result`: the table's copy of its last `round.result` event. A result only: it does
        not make a table appear, nor count as one of its retained topics (a table whose status, state and
        devices are cleared leaves the grid, its last result with it)."""
        if envelope is None:
            return None  # cleared: what was seen stays among the recent results
        if not isinstance(envelope.get("id"), str) or envelope.get("type") != "round.result":
            self.ignored += 1
            return None
        table = self._table(table_id, create=False)
        if table is None:
            if table_id in self._early_results or len(self._early_results) < MAX_TABLES:
                self._early_results[table_id] = envelope
            return None
        return self._changed(table) if self._add_result(table, envelope) else None

    def _add_result(self, table: TableView, envelope: dict[str, Any]) -> bool:
        """Keep a result (from its event or the retained copy), once per event id, in the table's order."""
        event_id = envelope.get("id")
        if any(result["id"] == event_id for result in table.results):
            return False
        data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
        assert isinstance(data, dict)
        game = str(data.get("game") or (table.state or {}).get("game") or "")
        dealt_and_outcome = _tile_words(game, data)
        result: dict[str, Any] = {
            "id": event_id,
            "sequence": _sequence(envelope),
            "round_id": envelope.get("subject"),
            "time": envelope.get("time"),
            "text": self._describe(game, data),
            "dealt": None if dealt_and_outcome is None else dealt_and_outcome[0],
            "outcome": None if dealt_and_outcome is None else dealt_and_outcome[1],
            "data": data,
        }
        table.results.append(result)
        # the retained copy may come after newer live results (a reconnection): the last one stays last
        if len(table.results) > 1 and (table.results[-2]["sequence"] or 0) > (result["sequence"] or 0):
            ordered = sorted(table.results, key=lambda r: r["sequence"] or 0)
            table.results.clear()
            table.results.extend(ordered)
        return True

    def _on_reply(self, table_id: str, name: str, reply: dict[str, Any], now: float) -> str | None:
        table = self._table(table_id)
        if table is None:
            return None
        transaction = reply.get("transaction")
        outcome = _reply_text(reply)
        if transaction is not None:
            for entry in table.history:
                if entry.get("source") == "console" and entry.get("transaction") == transaction:
                    entry["outcome"] = outcome
                    entry["status"] = reply.get("status")
                    return self._changed(table)
        table.history.append(
            {
                "time": iso_ms(now),
                "who": "",
                "what": f"reply to {name}",
                "detail": outcome,
                "transaction": transaction,
                "status": reply.get("status"),
                "source": "reply",
            }
        )
        return self._changed(table)

    def record_command(
        self, table_id: str, *, user: str, name: str, payload: dict[str, Any], transaction: str, now: float
    ) -> None:
        """A command this console sent (its outcome comes with the reply, or `command_outcome`)."""
        table = self._table(table_id, create=False)
        if table is None:
            return
        detail = ", ".join(f"{k}: {v}" for k, v in payload.items() if k != "transaction")
        table.history.append(
            {
                "time": iso_ms(now),
                "who": user,
                "what": name,
                "detail": detail,
                "transaction": transaction,
                "outcome": "sent",
                "status": None,
                "source": "console",
            }
        )
        self._changed(table)

    def command_outcome(self, table_id: str, transaction: str, status: str, outcome: str) -> None:
        """What became of a command this console sent, when no reply said it (refused, no reply)."""
        table = self._table(table_id, create=False)
        if table is None:
            return
        for entry in table.history:
            if entry.get("source") == "console" and entry.get("transaction") == transaction:
                if entry.get("status") is None:
                    entry["status"], entry["outcome"] = status, outcome
                    self._changed(table)
                return

    # --- the link ------------------------------------------------------------------------------------

    def set_link(self, connected: bool, detail: str, now: float) -> None:
        if not connected and self.link.connected:
            for table in self.tables.values():
                since = table.offline_since
                if (
                    since is not None
                    and table.offline_since_known
                    and now - since <= WILL_WITH_BROKER_LOSS_SECONDS
                ):
                    table.offline_with_broker = True
                    self._changed(table)
        if connected != self.link.connected or detail != self.link.detail:
            self.link = Link(connected, now, detail)
            self.version += 1

    def begin_resync(self) -> None:
        """A new connection: every retained value known is unconfirmed until the broker sends it again."""
        for table in self.tables.values():
            table.unconfirmed = {"status", "state", *(f"devices/{name}" for name in table.devices)}
            table.unconfirmed -= {t for t in ("status", "state") if getattr(table, t) is None}

    def end_resync(self, now: float) -> list[str]:
        """Forget the retained values the broker did not send again; returns the tables it sent nothing of
        again, which are kept as missing (their last values with them) until heard of or dismissed."""
        gone: list[str] = []
        for table in list(self.tables.values()):
            if not table.unconfirmed:
                continue
            retained = {"status", "state", *(f"devices/{name}" for name in table.devices)}
            retained -= {t for t in ("status", "state") if getattr(table, t) is None}
            if table.unconfirmed >= retained:
                table.unconfirmed = set()
                if table.missing_since is None:
                    table.missing_since = now
                    self._changed(table)
                gone.append(table.table_id)
                continue
            for topic in table.unconfirmed:
                if topic == "status":
                    table.status, table.offline_since = None, None
                elif topic == "state":
                    table.state = None
                else:
                    table.devices.pop(topic.partition("/")[2], None)
            table.unconfirmed = set()
            self._changed(table)
        return gone

    def dismiss(self, table_id: str) -> bool:
        """A supervisor dismisses a missing table: it leaves the grid. Only a missing one can be."""
        table = self.tables.get(table_id)
        if table is None or table.missing_since is None:
            return False
        del self.tables[table_id]
        self.version += 1
        return True

    # --- output --------------------------------------------------------------------------------------

    def summary(self, table_id: str) -> dict[str, Any] | None:
        """What the grid shows of one table."""
        table = self.tables.get(table_id)
        if table is None:
            return None
        state = table.state or {}
        status = table.status or {}
        paused = bool(state.get("paused"))
        pause = state.get("pause") if paused and isinstance(state.get("pause"), dict) else None
        link = status.get("status") if isinstance(status.get("status"), str) else "unknown"
        if table.missing_since is not None:
            link = "missing"  # the broker had nothing of it after a reconnection: not heard from since
        elif link == "offline" and table.offline_with_broker:
            link = "unknown"  # its Will fired as the broker went down: the broker's shutdown, not the table
        devices = self._devices(table)
        offline = link in ("offline", "missing")
        last_seen: str | None = None
        last_seen_known = True
        if offline:
            # what an offline table last said of its devices is not their health now: unknown, and when
            # last seen (before, a table killed outright kept its green "shoe online")
            silent = table.missing_since if table.offline_since is None else table.offline_since
            last_seen = iso_ms(silent) if silent is not None else None
            # a Will read at subscription, or a table missing after a reconnection: seen before that
            last_seen_known = table.offline_since is not None and table.offline_since_known
            devices = {name: _unknown_since(device, last_seen) for name, device in devices.items()}
        faults = [name for name, device in devices.items() if device.get("status") != "online"]
        delivery = None
        if status.get("delivery") == "refused":
            delivery = {
                "reason": status.get("delivery_reason"),
                "code": status.get("delivery_code"),
                "since": status.get("refused_since"),
                "sequence": status.get("refused_sequence"),
            }
        disk = status.get("disk") if isinstance(status.get("disk"), dict) else None
        waiting_since: str | None = None
        waiting_known = True
        if link == "offline" and table.offline_since is not None:
            waiting_since, waiting_known = iso_ms(table.offline_since), table.offline_since_known
        if link == "missing" and table.missing_since is not None:
            waiting_since, waiting_known = iso_ms(table.missing_since), False
        if pause is not None and isinstance(pause.get("since"), str):
            since = pause["since"]
            if link != "offline" or waiting_since is None or since < waiting_since:
                waiting_since, waiting_known = since, True
        last = table.results[-1] if table.results else None
        view = state.get("view") if isinstance(state.get("view"), dict) else {}
        explained = explain_pause(pause, devices)
        if explained is not None and offline:
            explained = replace(explained, waits_for="the table to be back online")
        return {
            "table_id": table.table_id,
            "rev": table.rev,
            "game": state.get("game"),
            "title": (view or {}).get("title") or state.get("game"),
            "round_id": state.get("round_id"),
            # an offline table's last phase and prompt are not where it is now (it may have moved on, or
            # died mid-round): unknown, with what they were and when the table was last seen
            "phase": None if offline else state.get("phase"),
            "last_phase": state.get("phase"),
            "last_seen": last_seen,
            "last_seen_known": last_seen_known,
            "prompt": None if offline else state.get("prompt"),
            "link": link,
            "offline_with_broker": table.offline_with_broker,
            "boot": status.get("boot"),
            "paused": paused,
            "pause": pause,
            # the pause in a person's words, what it still waits for, whether a resume would be accepted
            "explanation": None if explained is None else explained.public(),
            "devices": devices,
            "device_problems": faults,
            "delivery_refused": delivery,
            "disk": disk,
            "backlog": self._backlog(table),
            "last_sequence_seen": table.max_sequence,
            "last_result": None if last is None else {k: last[k] for k in RESULT_SHOWN},
            "attention": offline or paused,
            "waiting_since": waiting_since if (offline or paused) else None,
            "waiting_since_known": waiting_known,
        }

    def summaries(self) -> list[dict[str, Any]]:
        return [s for s in (self.summary(table_id) for table_id in self.tables) if s is not None]

    def detail(self, table_id: str) -> dict[str, Any] | None:
        """Everything the console shows of one table."""
        table = self.tables.get(table_id)
        summary = self.summary(table_id)
        if table is None or summary is None:
            return None
        state = table.state or {}
        round_id, story = self._story(table, state.get("round_id"))
        round_events = [_event_line(envelope, self._describe) for envelope in story]
        return {
            **summary,
            "status": table.status,
            "round_shown": round_id,
            "round_events": round_events,
            # False when the round began before this console was listening: its first events were not seen
            "round_seen_from_start": round_id is None
            or (bool(round_events) and round_events[0]["type"] == "round.opened"),
            "recent_events": [_event_line(e, self._describe) for e in list(table.events)[-30:]],
            "game_state": state.get("game_state"),
            "view": state.get("view"),
            "held_readings": state.get("held_readings"),
            # what a resume would apply: each held reading as the table tells it (no secret card named)
            "held": _held_list(state.get("held")),
            "waiting_for_devices": state.get("waiting_for_devices"),
            "rejected": state.get("rejected"),
            "results": [{k: r[k] for k in RESULT_SHOWN} for r in reversed(table.results)],
            "history": list(reversed(table.history)),
            "last_sequence": state.get("last_sequence"),
        }

    @staticmethod
    def _story(table: TableView, round_id: Any) -> tuple[str | None, list[dict[str, Any]]]:
        """The events to tell step by step: the round in progress; between rounds, what happened since
        the last one ended (a pause, a device) or else that last round."""
        # in the table's order (its sequence), not the order they arrived in: a resume that applies held
        # readings, or a re-sent event, may arrive after what followed it
        events = sorted(table.events, key=lambda e: _sequence(e) or 0)
        if isinstance(round_id, str):
            return round_id, [e for e in events if e.get("subject") == round_id]
        ends = [i for i, e in enumerate(events) if e.get("type") in ("round.closed", "round.voided")]
        if not ends:
            return None, events[-20:]
        last = ends[-1]
        if last < len(events) - 1:
            return None, events[last + 1 :][-20:]
        ended = events[last].get("subject")
        return (ended if isinstance(ended, str) else None), [e for e in events if e.get("subject") == ended]

    @staticmethod
    def _devices(table: TableView) -> dict[str, dict[str, Any]]:
        """Each device's health: its retained topic, or the state's copy of it."""
        from_state = (table.state or {}).get("devices")
        devices: dict[str, dict[str, Any]] = dict(from_state) if isinstance(from_state, dict) else {}
        devices.update(table.devices)
        return {
            str(name): {k: device.get(k) for k in ("status", "detail", "code", "since")}
            for name, device in devices.items()
            if isinstance(device, dict)
        }

    @staticmethod
    def _backlog(table: TableView) -> int | None:
        """Events journaled but not yet seen published: the state's `last_sequence` against the highest
        event sequence received (None until an event has been seen). The status's `outbox`, if a table
        reports one, is taken as it is."""
        status = table.status or {}
        reported = status.get("outbox")
        if isinstance(reported, int):
            return reported
        if isinstance(reported, dict) and isinstance(reported.get("depth"), int):
            return int(reported["depth"])
        last = (table.state or {}).get("last_sequence")
        if not isinstance(last, int) or table.max_sequence is None:
            return None
        return max(0, last - table.max_sequence)


def _sequence(envelope: dict[str, Any]) -> int | None:
    try:
        return int(envelope.get("sequence", ""))
    except (TypeError, ValueError):
        return None


def _reply_text(reply: dict[str, Any]) -> str:
    if reply.get("status") == "ok":
        return "ok"
    return f"{reply.get('status', '?')}: {reply.get('error', '')}".strip()


def _describe_result(game: str, data: dict[str, Any]) -> str:
    """A result in words, as the game's registration tells it; any result without one still reads."""
    from controller.games import GAMES

    spec = GAMES.get(game)
    if spec is not None:
        try:
            return spec.describe(data)
        except Exception:  # a newer table's result shape: fall back to its fields
            pass
    text = ", ".join(f"{k}: {v}" for k, v in data.items() if k not in ("game", "round_id", "raw"))
    return text[:160]


def _tile_words(game: str, data: dict[str, Any]) -> tuple[str, str] | None:
    """What was dealt and the outcome in short, for a tile, where the game's registration says them."""
    from controller.games import GAMES

    spec = GAMES.get(game)
    if spec is None or spec.tile_result is None:
        return None
    try:
        dealt, outcome = spec.tile_result(data)
    except Exception:  # a newer table's result shape: the tile shows the result's words instead
        return None
    return str(dealt), str(outcome)


def _held_list(value: Any) -> list[dict[str, Any]]:
    """The state's `held` readings, each with the fields the page shows (a table before `held` has none)."""
    if not isinstance(value, list):
        return []
    held = []
    for item in value[:MAX_HELD_SHOWN]:
        if isinstance(item, dict):
            held.append({k: item.get(k) for k in ("device", "reading", "card", "raw")})
    return held


def _event_line(envelope: dict[str, Any], describe: Any) -> dict[str, Any]:
    """One event as a line of the round's story."""
    type_ = str(envelope.get("type"))
    data = envelope.get("data") if isinstance(envelope.get("data"), dict) else {}
    assert isinstance(data, dict)
    if type_ == "card.dealt":
        text = f"{data.get('card')} to {data.get('position')}"
        if data.get("manual"):
            text += " (entered by hand)"
        elif data.get("rescan"):
            text += " (re-scanned)"
    elif type_ == "round.result":
        text = describe(str(data.get("game") or ""), data)
    elif type_ in BY_EVENTS:
        text = " ".join(x for x in (_short_reason(data), f"by {data.get('by')}") if x)
    elif type_.startswith("device."):
        # the status in short: the driver's text is the device's detail (the devices table, or the pause's
        # technical detail), not repeated in every line of the story
        text = f"{data.get('device')} {data.get('status') or type_.partition('.')[2]}"
        if data.get("code"):
            text += f" ({data['code']})"
    elif type_ == "round.opened":
        # the time itself is `until`: the page writes it in the supervisor's local time, as every other
        text = "betting open" if data.get("betting_closes_at") else "opened"
    elif type_ == "round.betting_closed":
        text = f"betting closed ({data.get('reason')})"
    else:
        text = ", ".join(f"{k}: {v}" for k, v in data.items() if k not in ("round_id", "raw"))[:160]
    return {
        "sequence": _sequence(envelope),
        "time": envelope.get("time"),
        "type": type_,
        "text": text,
        "historical": bool(envelope.get("historical")),
        "until": data.get("betting_closes_at") if type_ == "round.opened" else None,
    }


def _short_reason(data: dict[str, Any]) -> str:
    device = data.get("device")
    return short_reason(str(data.get("reason") or ""), str(device) if device else None)


def _unknown_since(device: dict[str, Any], last_seen: str | None) -> dict[str, Any]:
    """A device of a table that is offline: its health is unknown; what it was when last heard of, and
    since when the table has been silent, are kept."""
    return {
        **device,
        "status": "unknown",
        "last_status": device.get("status"),
        "detail": f"unknown: the table is offline (last seen {device.get('status') or '?'})",
        "last_seen": last_seen,
    }
