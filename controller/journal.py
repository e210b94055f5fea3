"""Durable event journal and outbox: an event exists once it is here, before anything is published.

One SQLite file per table, WAL mode with synchronous=FULL so a commit survives a power cut. `append` gives
each event its per-table sequence number and its id in the same transaction that puts it in the outbox (and
stores the latest state snapshot), so after a crash the file holds either all of a batch or none of it.
The bus removes an event from the outbox only after the broker acknowledged it (at-least-once).

The envelope is stored as the exact JSON that is published, so a re-send is byte-identical except for
`historical`. Not thread-safe: use a Journal from one thread (the event loop's).

It also keeps the replies to the latest commands, keyed by (sender, transaction), so that a command delivered
twice (MQTT QoS 1 may) is applied once: the reply is written in the same transaction as the command's events,
and a restart between the two cannot re-apply it. Only the latest `KEEP_COMMAND_REPLIES`, of the last
`KEEP_COMMAND_REPLY_SECONDS`, count.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.events import Envelope, Event, format_sequence, iso_ms

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    sequence INTEGER PRIMARY KEY,
    id       TEXT NOT NULL UNIQUE,
    type     TEXT NOT NULL,
    envelope TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS outbox (
    sequence INTEGER PRIMARY KEY REFERENCES events(sequence)
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
    slot     INTEGER PRIMARY KEY CHECK (slot = 1),
    sequence INTEGER NOT NULL,
    data     BLOB NOT NULL
);
"""


#: replies kept for repeated commands; a repeat comes within seconds (a QoS 1 re-delivery, a sender's retry)
KEEP_COMMAND_REPLIES = 1000
#: and for how long: a sender that restarts its transaction counter a day later is not answered from the past
KEEP_COMMAND_REPLY_SECONDS = 24 * 3600.0


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
            self._last_sequence = int(self._meta("last_sequence") or 0)

    # --- writing -----------------------------------------------------------------------------------

    def append(
        self,
        events: Sequence[Event],
        snapshot: bytes | None = None,
        *,
        reply: CommandReply | None = None,
        delivered: tuple[str, str] | None = None,
    ) -> list[Envelope]:
        """Journal events (and the state snapshot after them) in one committed transaction; with `reply`, the
        reply to the command that caused them too, so the command is never applied again; with `delivered`
        (device, raw), the device message they came from (see `delivered`)."""
        recorded = iso_ms(self.clock())
        envelopes: list[Envelope] = []
        with self._transaction():
            sequence = self._last_sequence
            for event in events:
                sequence += 1
                envelope = Envelope(
                    id=uuid.uuid4().hex,
                    source=self.source,
                    type=event.type,
                    time=iso_ms(event.time),
                    recordedtime=recorded,
                    sequence=format_sequence(sequence),
                    subject=event.subject,
                    historical=False,
                    data=event.data,
                )
                self._db.execute(
                    "INSERT INTO events (sequence, id, type, envelope) VALUES (?, ?, ?, ?)",
                    (sequence, envelope.id, envelope.type, envelope.model_dump_json()),
                )
                self._db.execute("INSERT INTO outbox (sequence) VALUES (?)", (sequence,))
                envelopes.append(envelope)
            if snapshot is not None:
                self._db.execute(
                    "INSERT OR REPLACE INTO snapshot (slot, sequence, data) VALUES (1, ?, ?)",
                    (sequence, snapshot),
                )
            self._set_meta("last_sequence", str(sequence))
            if reply is not None:
                self._store_reply(reply, recorded)
            if delivered is not None:
                self._set_meta(f"delivered:{delivered[0]}", delivered[1])
        # Only after COMMIT succeeded: a failed transaction must not advance the counter.
        self._last_sequence = sequence
        return envelopes

    def acknowledge(self, sequence: int) -> None:
        """The broker acknowledged this event: it no longer needs sending.

        Committed without waiting for the disk (synchronous=NORMAL, for this transaction only): losing an
        acknowledgement in a power cut only re-sends the event with the same id, which the contract allows,
        while an fsync per PUBACK on the event loop delayed the next card's event (see bench/README.md).
        The next `append` (synchronous=FULL) makes it durable anyway.
        """
        self._db.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._transaction():
                self._db.execute("DELETE FROM outbox WHERE sequence = ?", (sequence,))
        finally:
            self._db.execute("PRAGMA synchronous=FULL")

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

    # --- reading -----------------------------------------------------------------------------------

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
        rows = self._db.execute(
            "SELECT e.envelope FROM outbox o JOIN events e ON e.sequence = o.sequence "
            "ORDER BY o.sequence LIMIT ?",
            (limit,),
        ).fetchall()
        return [Envelope.model_validate_json(row[0]) for row in rows]

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
        return None if row is None else Envelope.model_validate_json(row[0])

    def delivered(self, device: str) -> str | None:
        """The last acknowledged-protocol message of `device` whose readings were journaled: after a crash
        before its ACK left, the device repeats it, and the restarted table must not apply it twice."""
        return self._meta(f"delivered:{device}")

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
