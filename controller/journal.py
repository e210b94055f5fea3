"""Durable event journal and outbox: an event exists once it is here, before anything is published.

One SQLite file per table, WAL mode with synchronous=FULL so a commit survives a power cut. `append` gives
each event its per-table sequence number and its id in the same transaction that stores it (and the latest
state record, with the device messages it came from), so after a crash the file holds either all of a batch
or none of it. The outbox is a cursor: every event after `acked_through` (in `meta`) waits for the broker, but
those acknowledged out of order (`acked_ahead`, usually empty); the bus moves it only after the broker
acknowledged an event (at-least-once). So a card's transaction writes two pages of the WAL: the events
table's last leaf and the state's row (it wrote six before 2026-12: bench/README.md).

The envelope is stored as the exact JSON that is published, so a re-send is byte-identical except for
`historical`. Not thread-safe: use a Journal from one thread (the event loop's).

It also keeps the replies to the latest commands, keyed by (sender, transaction), so that a command delivered
twice (MQTT QoS 1 may) is applied once: the reply is written in the same transaction as the command's events,
and a restart between the two cannot re-apply it. Only the latest `KEEP_COMMAND_REPLIES`, of the last
`KEEP_COMMAND_REPLY_SECONDS`, count.

Old events leave the journal (`controller.retention`): `prunable` lists the oldest acknowledged ones, the
caller archives them, then `prune_through` deletes them. Only a run of the oldest events goes, never one still
in the outbox nor anything after it, so what the journal holds is always `first_sequence..last_sequence`
without gaps. `last_sequence` (written when events are pruned, not by every append) and the latest pruned
event of each type stay in `meta`: the sequence never goes back and `last_event` still answers after its
event was pruned.

A file written by an older version opens and goes on (its outbox becomes the cursor, its `meta` keys are
read); an older version must not open a file this one wrote (it would miss the cursor and `last_sequence`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.events import (
    Envelope,
    Event,
    encode_compact_sorted,
    envelope_json,
    format_sequence,
    iso_ms,
    trusted_envelope,
)

#: unacknowledged events kept in memory after `append`, so the bus publishes them without reading them back;
#: past this many (a long broker outage) the rest is read from SQLite when their turn comes
PENDING_CACHE = 10_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    sequence INTEGER PRIMARY KEY,
    id       TEXT NOT NULL,  -- a uuid4: unique without an index (files of before 2026-12 have one: kept)
    type     TEXT NOT NULL,
    envelope TEXT NOT NULL
);
-- the outbox is a cursor: every event after meta's `acked_through` waits for the broker, except those
-- acknowledged out of order, listed here (the bus acknowledges in order: usually empty). Files of before
-- 2026-12 listed the waiting events in a table `outbox` instead: see `_open`.
CREATE TABLE IF NOT EXISTS acked_ahead (
    sequence INTEGER PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS command_replies (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    sender   TEXT NOT NULL,
    txn      TEXT NOT NULL,  -- the transaction as JSON, so 5 and "5" stay apart
    name     TEXT NOT NULL,
    reply    TEXT NOT NULL,  -- JSON: {"status": "ok", "data": {...}} or {"status": "error", "error": "..."}
    recorded TEXT NOT NULL,
    UNIQUE (sender, txn)
);
CREATE TABLE IF NOT EXISTS snapshot (
    slot      INTEGER PRIMARY KEY CHECK (slot = 1),
    sequence  INTEGER NOT NULL,
    data      BLOB NOT NULL,
    delivered TEXT  -- JSON {device: its last delivered messages}; NULL: in meta (`delivered:<device>`)
);
"""


#: replies kept for repeated commands; a repeat comes within seconds (a QoS 1 re-delivery, a sender's retry)
KEEP_COMMAND_REPLIES = 1000
#: and for how long: a sender that restarts its transaction counter a day later is not answered from the past
KEEP_COMMAND_REPLY_SECONDS = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """One journaled event as stored: its envelope is the exact JSON that was published."""

    sequence: int
    recordedtime: str
    envelope: str


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An event in the outbox, ready to publish: its envelope is the exact JSON journaled."""

    sequence: int
    type: str
    recordedtime: str
    envelope: str


@dataclass(frozen=True)
class CommandReply:
    """The reply given to one command, kept so that its repeat (same sender, transaction) gets it again."""

    sender: str
    transaction: str | int
    name: str
    reply: dict[str, Any]


class JournalError(RuntimeError):
    """The journal file cannot be used as asked (e.g. it belongs to another table)."""


class Journal:
    def __init__(self, path: str | Path, source: str, *, clock: Callable[[], float] = time.time) -> None:
        self.path = str(path)
        self.source = source
        #: the clock that stamps `recordedtime`; the bus compares against it to mark events historical
        self.clock = clock
        # isolation_level=None: we issue BEGIN/COMMIT ourselves so each append is exactly one transaction.
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("PRAGMA foreign_keys=ON")
        #: events appended by this process and not yet acknowledged, by sequence (see `pending`)
        self._pending: dict[int, PendingEvent] = {}
        try:
            self._db.executescript(_SCHEMA)
            self._open()
        except BaseException:
            self._db.close()
            raise

    def _open(self) -> None:
        """Check the file belongs to this table and count this boot."""
        source = self.source
        with self._transaction():
            stored_source = self._meta("source")
            if stored_source is None:
                self._set_meta("source", source)
            elif stored_source != source:
                # Sequences are per table: two tables sharing one file would each see gaps.
                raise JournalError(
                    f"journal {self.path} belongs to {stored_source!r}, not {source!r}; "
                    "give each table its own journal file"
                )
            self.boot = int(self._meta("boot") or 0) + 1
            self._set_meta("boot", str(self.boot))
            self._pruned_through = int(self._meta("pruned_through") or 0)
            # Not written by every append (it cost a page of `meta` and one of its key index per commit):
            # the highest journaled sequence, or what `prune_through` kept in `meta` once events left, or
            # what a file of before 2026-12 kept there.
            newest = self._db.execute("SELECT MAX(sequence) FROM events").fetchone()[0]
            self._last_sequence = max(
                int(newest or 0), int(self._meta("last_sequence") or 0), self._pruned_through
            )
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(snapshot)")}
            if "delivered" not in columns:  # a file of before 2026-12
                self._db.execute("ALTER TABLE snapshot ADD COLUMN delivered TEXT")
            self._delivered = self._load_delivered()
            self._open_outbox()

    def _open_outbox(self) -> None:
        """Read the outbox's cursor; a file of before 2026-12 (a row per waiting event in `outbox`) gets
        one, in the opening's transaction: the events before its first waiting one are acknowledged, and
        those acknowledged after it are listed in `acked_ahead`."""
        ahead = [row[0] for row in self._db.execute("SELECT sequence FROM acked_ahead ORDER BY sequence")]
        cursor = self._meta("acked_through")
        legacy = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'outbox'")
        if legacy.fetchone() is not None:
            waiting = [row[0] for row in self._db.execute("SELECT sequence FROM outbox ORDER BY sequence")]
            if cursor is None:
                acked_through = waiting[0] - 1 if waiting else self._last_sequence
                waiting_set = set(waiting)
                ahead = [n for n in range(acked_through + 1, self._last_sequence + 1) if n not in waiting_set]
                self._db.executemany(
                    "INSERT OR IGNORE INTO acked_ahead (sequence) VALUES (?)", ((n,) for n in ahead)
                )
                cursor = str(acked_through)
                self._set_meta("acked_through", cursor)
            self._db.execute("DROP TABLE outbox")
        elif cursor is None:
            cursor = str(self._last_sequence)  # a new file (0), or one that never had an outbox
            self._set_meta("acked_through", cursor)
        self._acked_through = int(cursor)
        self._acked_ahead: set[int] = set(ahead)

    # --- writing -----------------------------------------------------------------------------------

    def append(
        self,
        events: Sequence[Event],
        snapshot: bytes | None = None,
        *,
        reply: CommandReply | None = None,
        delivered: tuple[str, str] | None = None,
        envelopes: bool = True,
    ) -> list[Envelope]:
        """Journal events (and the state snapshot after them) in one committed transaction; with `reply`, the
        reply to the command that caused them too, so the command is never applied again; with `delivered`
        (device, raw), the device message they came from (several lines: joined by newlines; see
        `delivered`). Returns the journaled envelopes; with `envelopes=False`, none (a caller that has no use
        for them: the bus publishes the journal's own text, `pending`)."""
        recorded = iso_ms(self.clock())
        journaled: list[Envelope] = []
        pending: list[PendingEvent] = []
        with self._transaction():
            sequence = self._last_sequence
            for event in events:
                sequence += 1
                # built here from the journal's own counter and clock and an event whose data its model
                # checked (`make_event`): encoded once, not validated again (`envelope_json`)
                fields = {
                    "id": _event_id(),
                    "source": self.source,
                    "type": event.type,
                    "time": iso_ms(event.time),
                    "recordedtime": recorded,
                    "sequence": format_sequence(sequence),
                    "subject": event.subject,
                    "historical": False,
                    "data": event.data,
                }
                text = envelope_json(fields)
                self._db.execute(
                    "INSERT INTO events (sequence, id, type, envelope) VALUES (?, ?, ?, ?)",
                    (sequence, fields["id"], event.type, text),
                )
                if envelopes:
                    journaled.append(trusted_envelope(fields))
                pending.append(PendingEvent(sequence, event.type, recorded, text))
            # The device messages delivered go in the state's row: the same page, not one more (see
            # `delivered`); every device's, so that the row alone answers after a restart.
            delivered_now = self._delivered
            if delivered is not None:
                delivered_now = {**self._delivered, delivered[0]: delivered[1]}
            delivered_json = encode_compact_sorted(delivered_now)
            if snapshot is not None:
                self._db.execute(
                    "INSERT OR REPLACE INTO snapshot (slot, sequence, data, delivered) VALUES (1, ?, ?, ?)",
                    (sequence, snapshot, delivered_json),
                )
            elif delivered is not None:
                updated = self._db.execute(
                    "UPDATE snapshot SET delivered = ? WHERE slot = 1", (delivered_json,)
                ).rowcount
                if not updated:  # no state row yet (a caller that stores none)
                    self._set_meta(f"delivered:{delivered[0]}", delivered[1])
            if reply is not None:
                self._store_reply(reply, recorded)
        # Only after COMMIT succeeded: a failed transaction must not advance the counter, and nothing
        # uncommitted may be handed to the bus.
        self._last_sequence = sequence
        self._delivered = delivered_now
        for item in pending:
            if len(self._pending) >= PENDING_CACHE:
                break
            self._pending[item.sequence] = item
        return journaled

    def acknowledge(self, sequence: int) -> None:
        """The broker acknowledged this event: it no longer needs sending (see `acknowledge_many`)."""
        self.acknowledge_many((sequence,))

    def acknowledge_many(self, sequences: Sequence[int]) -> None:
        """The broker acknowledged these events: they leave the outbox, in one transaction.

        Committed without waiting for the disk (synchronous=NORMAL, for this transaction only): losing an
        acknowledgement in a power cut only re-sends the event with the same id, which the contract allows,
        while an fsync per PUBACK on the event loop delayed the next card's event (see bench/README.md).
        The next `append` (synchronous=FULL) makes it durable anyway.
        """
        cursor = self._acked_through
        ahead = self._acked_ahead | {n for n in sequences if cursor < n <= self._last_sequence}
        if ahead == self._acked_ahead:
            return  # nothing new (a duplicate PUBACK)
        while cursor + 1 in ahead:
            cursor += 1
            ahead.discard(cursor)
        self._db.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._transaction():
                if cursor != self._acked_through:
                    self._set_meta("acked_through", str(cursor))
                if ahead or self._acked_ahead:
                    self._db.execute("DELETE FROM acked_ahead")
                    self._db.executemany(
                        "INSERT INTO acked_ahead (sequence) VALUES (?)", ((n,) for n in sorted(ahead))
                    )
        finally:
            self._db.execute("PRAGMA synchronous=FULL")
        self._acked_through, self._acked_ahead = cursor, ahead
        for sequence in sequences:
            self._pending.pop(sequence, None)

    def record_reply(self, reply: CommandReply) -> None:
        """Keep (or replace) the reply to a command, in its own transaction."""
        recorded = iso_ms(self.clock())
        with self._transaction():
            self._store_reply(reply, recorded)

    def _store_reply(self, reply: CommandReply, recorded: str) -> None:
        self._db.execute(
            "INSERT OR REPLACE INTO command_replies (sender, txn, name, reply, recorded) "
            "VALUES (?, ?, ?, ?, ?)",
            (
                reply.sender,
                json.dumps(reply.transaction),
                reply.name,
                json.dumps(reply.reply, default=str),
                recorded,
            ),
        )
        self._db.execute(
            "DELETE FROM command_replies WHERE id <= (SELECT MAX(id) FROM command_replies) - ?",
            (KEEP_COMMAND_REPLIES,),
        )

    def prune_through(self, sequence: int) -> int:
        """Delete the journaled events up to `sequence` (the caller archived them first). Returns how many.

        Refused (JournalError, nothing deleted) if one of them is still in the outbox. One transaction; the
        latest deleted event of each type is kept in `meta` for `last_event`."""
        if sequence <= self._pruned_through:
            return 0
        with self._transaction():
            waiting = self._first_waiting()
            if waiting is not None and waiting <= sequence:
                raise JournalError(f"event {waiting} is still in the outbox: events to {sequence} must stay")
            latest = self._db.execute(
                "SELECT type, envelope FROM events WHERE sequence IN "
                "(SELECT MAX(sequence) FROM events WHERE sequence <= ? GROUP BY type)",
                (sequence,),
            ).fetchall()
            for type_, envelope in latest:
                self._set_meta(f"pruned_last:{type_}", str(envelope))
            deleted = self._db.execute("DELETE FROM events WHERE sequence <= ?", (sequence,)).rowcount
            self._set_meta("pruned_through", str(sequence))
            # the sequence never goes back, even once every event left (see `_open`)
            self._set_meta("last_sequence", str(self._last_sequence))
        self._pruned_through = sequence
        return int(deleted)

    # --- reading -----------------------------------------------------------------------------------

    def prunable(self, recorded_before: str, limit: int) -> list[StoredEvent]:
        """The oldest events, in order, while they are acknowledged (not in the outbox) and were recorded
        before `recorded_before` (ISO, as `recordedtime`): at most `limit`; none past one that is not."""
        rows = self._db.execute(
            "SELECT sequence, json_extract(envelope, '$.recordedtime'), envelope "
            "FROM events WHERE sequence <= ? ORDER BY sequence LIMIT ?",
            (self._acked_through, limit),
        ).fetchall()
        found: list[StoredEvent] = []
        for sequence, recorded, envelope in rows:
            if not isinstance(recorded, str) or recorded >= recorded_before:
                break
            found.append(StoredEvent(int(sequence), recorded, str(envelope)))
        return found

    @property
    def pruned_through(self) -> int:
        """The last sequence that left the journal (archived or dropped); 0 if none did."""
        return self._pruned_through

    def command_reply(self, sender: str, transaction: str | int) -> CommandReply | None:
        """The reply kept for this sender's transaction, if the command was applied (in the last day)."""
        row = self._db.execute(
            "SELECT name, reply FROM command_replies WHERE sender = ? AND txn = ? AND recorded >= ?",
            (sender, json.dumps(transaction), iso_ms(self.clock() - KEEP_COMMAND_REPLY_SECONDS)),
        ).fetchone()
        if row is None:
            return None
        reply = json.loads(row[1])
        return CommandReply(sender=sender, transaction=transaction, name=str(row[0]), reply=reply)

    def outbox(self, limit: int = 100) -> list[Envelope]:
        """Events not yet acknowledged by the broker, oldest first."""
        return [Envelope.model_validate_json(row[2]) for row in self._waiting(self._acked_through, limit)]

    def outbox_summary(self) -> tuple[int, str | None]:
        """How many events wait in the outbox, and when the oldest of them was journaled (ISO, or None)."""
        count, oldest = self.outbox_size(), self._first_waiting()
        if oldest is None:
            return 0, None
        row = self._db.execute(
            "SELECT json_extract(envelope, '$.recordedtime') FROM events WHERE sequence = ?", (oldest,)
        ).fetchone()
        return int(count), None if row is None else str(row[0])

    def pending(self, after: int, limit: int) -> list[PendingEvent]:
        """Outbox events after sequence `after`, oldest first, at most `limit`: what the bus publishes next.

        Events this process appended come from memory, exactly as journaled (no read-back, no re-validation);
        older ones (a backlog from before a restart, or past `PENDING_CACHE`) are read from SQLite."""
        found: list[PendingEvent] = []
        cache = self._pending
        sequence = after + 1
        while len(found) < limit and (event := cache.get(sequence)) is not None:
            found.append(event)
            sequence += 1
        if found:
            return found
        return [
            PendingEvent(int(sequence), str(type_), _recordedtime(envelope), str(envelope))
            for sequence, type_, envelope in self._waiting(max(after, self._acked_through), limit)
        ]

    def _waiting(self, after: int, limit: int) -> list[tuple[int, str, str]]:
        """(sequence, type, envelope) of the outbox's events after `after`, oldest first, at most `limit`."""
        ahead = self._acked_ahead
        rows = self._db.execute(
            "SELECT sequence, type, envelope FROM events WHERE sequence > ? ORDER BY sequence LIMIT ?",
            (after, limit + len(ahead)),
        ).fetchall()
        return [row for row in rows if row[0] not in ahead][:limit]

    def _first_waiting(self) -> int | None:
        """The oldest event in the outbox (the cursor's next: never one acknowledged ahead), or None."""
        return self._acked_through + 1 if self._acked_through < self._last_sequence else None

    def outbox_size(self) -> int:
        """How many events wait for the broker's acknowledgement."""
        return self._last_sequence - self._acked_through - len(self._acked_ahead)

    def read(self, from_sequence: int, to_sequence: int | None = None, limit: int = 10_000) -> list[Envelope]:
        """Journaled events from `from_sequence` to `to_sequence` (inclusive), at most `limit` of them."""
        upper = self._last_sequence if to_sequence is None else to_sequence
        rows = self._db.execute(
            "SELECT envelope FROM events WHERE sequence BETWEEN ? AND ? ORDER BY sequence LIMIT ?",
            (from_sequence, upper, limit),
        ).fetchall()
        return [Envelope.model_validate_json(row[0]) for row in rows]

    def last_event(self, type_: str) -> Envelope | None:
        """The most recent journaled event of this type, if any."""
        row = self._db.execute(
            "SELECT envelope FROM events WHERE type = ? ORDER BY sequence DESC LIMIT 1", (type_,)
        ).fetchone()
        if row is None:
            pruned = self._meta(f"pruned_last:{type_}")
            return None if pruned is None else Envelope.model_validate_json(pruned)
        return Envelope.model_validate_json(row[0])

    def delivered(self, device: str) -> list[str]:
        """The acknowledged-protocol messages of `device` whose readings were journaled last (those of one
        read: usually one line): after a crash before their ACK left, the device repeats them, and the
        restarted table must not apply them twice."""
        value = self._delivered.get(device)
        return value.split("\n") if value else []

    def _load_delivered(self) -> dict[str, str]:
        """Every device's last delivered messages: those a file of before 2026-12 kept in `meta`, then the
        state row's (written with every step since, so it holds the latest of each device)."""
        found = {
            str(key).removeprefix("delivered:"): str(value)
            for key, value in self._db.execute("SELECT key, value FROM meta WHERE key LIKE 'delivered:%'")
        }
        row = self._db.execute("SELECT delivered FROM snapshot WHERE slot = 1").fetchone()
        if row is not None and row[0] is not None:
            found.update({str(k): str(v) for k, v in json.loads(row[0]).items()})
        return found

    @property
    def last_sequence(self) -> int:
        return self._last_sequence

    def snapshot(self) -> bytes | None:
        row = self._db.execute("SELECT data FROM snapshot WHERE slot = 1").fetchone()
        return None if row is None else bytes(row[0])

    def close(self) -> None:
        self._db.close()

    # --- internals ---------------------------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK if the block raised."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            # SQLite may have rolled back already (e.g. on SQLITE_FULL); a second ROLLBACK would raise
            # "no transaction is active" and hide the reason.
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def read_outbox(db: sqlite3.Connection) -> tuple[int, int, frozenset[int]]:
    """(last sequence, acknowledged through, acknowledged beyond that) of a journal file read as it is,
    without opening it as a `Journal` (which counts a boot and brings an older file's outbox up to date):
    for the tools that inspect a table's files. The outbox is every event after the second, but the
    third's."""
    newest = db.execute("SELECT MAX(sequence) FROM events").fetchone()[0]
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('last_sequence', 'acked_through')"))
    last = max(int(newest or 0), int(meta.get("last_sequence") or 0))
    if "acked_through" in meta:
        ahead = frozenset(row[0] for row in db.execute("SELECT sequence FROM acked_ahead"))
        return last, int(meta["acked_through"]), ahead
    # a file of before 2026-12: a row per waiting event
    waiting = [row[0] for row in db.execute("SELECT sequence FROM outbox ORDER BY sequence")]
    if not waiting:
        return last, last, frozenset()
    waiting_set = set(waiting)
    return last, waiting[0] - 1, frozenset(n for n in range(waiting[0], last + 1) if n not in waiting_set)


def _event_id() -> str:
    """A new event id: a random (version 4) UUID's 32 hex digits, `uuid.uuid4().hex` without building the
    UUID object (on the path of every event)."""
    value = int.from_bytes(os.urandom(16), "big") & ~(0xC000 << 48 | 0xF000 << 64) | 0x8000 << 48 | 0x4 << 76
    return f"{value:032x}"


def _recordedtime(envelope: str) -> str:
    """`recordedtime` of a journaled envelope (written by `append`: a plain ISO string, never escaped)."""
    start = envelope.find('"recordedtime":"')
    if start < 0:
        return str(json.loads(envelope)["recordedtime"])
    start += len('"recordedtime":"')
    return envelope[start : envelope.index('"', start)]
