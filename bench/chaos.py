"""Fault-injection campaign against the whole table: `tablectl run` as a subprocess, a simulated shoe on a
real pty, a real Mosquitto, an independent subscriber, a virtual dealer and a virtual supervisor.

Faults, one at a time at random moments, each followed by the recovery a studio would do:

- `kill_mid_round`: kill -9 of the service while a round is being dealt; restarted at once (like systemd);
- `kill_at_ack`: kill -9 at the instant the shoe reads the ACK of a card (the simulator's ACK callback);
- `kill_mid_flush`: the broker stops while the table plays (events wait in the journal's outbox), comes back,
  and the service is killed while it flushes that backlog;
- `broker_kill`: kill -9 of Mosquitto, restarted on the same port after a moment;
- `unplug`: the shoe's cable is pulled and plugged back in;
- `corrupt`: the shoe's line is spoiled for a while (bad checksums, noise bursts, duplicated lines:
  ShoeFaults) and raw garbage is put on it;
- `kill_at_restart_repeat` (aimed: random timing misses its window of a few milliseconds): the service is
  killed while a card is in flight (drawn, its ACK not yet read by the shoe), so that the restarted service's
  first line is often the shoe's repeat of it; that restarted service is killed right after its first
  journal commit that took the shoe online (a hook in its process: `RESTART_HOOK`), then started again.
  Committed in two transactions (the shoe online, then its card), that instant lost the card behind an ACK;
- `disk_full`: the data directory is a small tmpfs (mounted by the campaign; needs the right to mount, else
  this kind is not injected and the in-process test `tests/integration/test_ack_promise.py` is what covers
  it); the campaign truncates the journal's WAL (a checkpoint, as any reader may do) and fills the file
  system, so the service's next commit really fails with ENOSPC; it must fail-stop, and is restarted once
  space is freed.

The virtual dealer draws exactly the cards each round takes (it knows punto banco, from the independent
reference) and only while the shoe's gate is open; the virtual supervisor resumes every paused round
(`resume` on `<root>/commands/resume/<user>`), retrying while the table refuses (a device still offline).

Checks, from the journal file, the subscriber's record and what the shoe dealt and saw acknowledged:

- every card the shoe saw ACKed is journaled as dealt, once, in order (the ACK is a promise);
- the journal's `card.dealt` are exactly the cards the shoe dealt, in order;
- every journaled event reached the subscriber (events missing after a broker kill -9 are fetched with
  `replay_events`, as a consumer does on a gap, and counted apart: the broker acknowledged them, then died);
  no gap, no reused `sequence`, no `id` with two contents, and what arrived equals what was journaled;
- every `round.result` equals the independent punto banco reference of the cards dealt in that round;
- every crash that happened mid-round came back as a paused round, and no card of it was dealt before a
  supervisor's resume.

Reports restart-to-online and resume times (p50/p99), writes `bench/results/chaos.json` and prints
a Markdown table. `python bench/chaos.py --faults 1000 --seed 7`; `tests/e2e/test_chaos_short.py` runs a short
one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__:  # imported as `bench.chaos` (the tests)
    from bench import common
else:  # `python bench/chaos.py`: Python puts bench/ on the path
    import common

from controller.journal import read_outbox
from controller.testing.baccarat_reference import ExpectedRound, as_expected, expected_rounds, from_reference
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until
from controller.testing.table_process import BASE, TABLE, ServiceProcess, write_config
from drivers.line.device import LoggedLine
from drivers.line.fields import SEQ_MODULO, seq_text
from drivers.shoe.simulator import ShoeFaults, ShoeSimulator

log = logging.getLogger("chaos")

KINDS = (
    "kill_mid_round",
    "kill_at_ack",
    "kill_mid_flush",
    "broker_kill",
    "unplug",
    "corrupt",
    "kill_at_restart_repeat",
    "disk_full",
)
DECKS = 8
CUT_POSITION = 16
JOURNAL_NAME = f"{TABLE}-journal.sqlite3"
RESTART_REASON = "controller restarted mid-round"
#: a card the dealer drew for a round that the table voided meanwhile (the shoe was offline before the round's
#: first card reached the table): the table refuses it, and the dealer sets it aside
EXPECTED_REJECTIONS = ("the round was voided", "no card is expected")
#: a table that makes no progress for this long after a fault's recovery is stuck: a violation
STALL_S = 45.0


# The service process for `kill_at_restart_repeat`: `tablectl run` with the journal's commit wrapped. Right
# after the first commit that takes a device online (while the arm file exists) it writes what that commit
# held to the fired file and dies at once, as a kill -9 would leave it: nothing after the commit happens.
# (`ServiceProcess` runs `tablectl run` after it.)
RESTART_HOOK = """
import json, os
import controller.journal as journal
append = journal.Journal.append
def hooked(self, events, *args, **kwargs):
    result = append(self, events, *args, **kwargs)
    arm = os.environ["CHAOS_ARM"]
    if os.path.exists(arm) and any(e.type == "device.online" for e in events):
        os.unlink(arm)
        with open(os.environ["CHAOS_FIRED"], "w") as out:
            json.dump({"types": [e.type for e in events], "delivered": kwargs.get("delivered")}, out)
        os._exit(137)
    return result
journal.Journal.append = hooked
"""


def fault_plan(kinds: list[str], faults: int, seed: int) -> list[str]:
    """Which fault comes when: every kind once in each run of len(kinds) faults, in an order drawn from `seed`
    alone. A short campaign still injects every kind (drawn independently, 30 faults of 7 kinds missed one in
    about 7% of runs), and the plan does not depend on the timing of the run (the campaign's own random
    source is also drawn from while it waits)."""
    rng = random.Random(f"fault plan {seed}")
    plan: list[str] = []
    while len(plan) < faults:
        block = list(kinds)
        rng.shuffle(block)
        plan += block
    return plan[:faults]


def mount_tmpfs(path: Path, size: str) -> bool:
    """Mount a tmpfs of `size` on `path`; False when this machine does not allow it (no CAP_SYS_ADMIN)."""
    path.mkdir(parents=True, exist_ok=True)
    mount = shutil.which("mount")
    if mount is None:
        return False
    done = subprocess.run(
        [mount, "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def unmount(path: Path) -> None:
    umount = shutil.which("umount")
    if umount is not None:
        subprocess.run([umount, "-l", str(path)], capture_output=True, check=False)


def fill_file_system(directory: Path) -> Path:
    """Write a file until the file system is full; returns it (remove it to free the space)."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        stat = os.statvfs(directory)
        with contextlib.suppress(OSError):
            os.posix_fallocate(fd, 0, max(1, stat.f_bavail * stat.f_frsize))
        os.lseek(fd, 0, os.SEEK_END)
        size = 1 << 20
        while size >= 1:
            try:
                os.write(fd, b"\0" * size)
            except OSError:
                size //= 2
    finally:
        os.close(fd)
    return filler


@dataclass
class ShoeLoad:
    """One shoe put in the simulator: its cards, the cut, the cards the dealer drew and those set aside (the
    table rejected them: dealt into a round it had voided), and the reference's rounds of what was played."""

    cards: list[str]
    cut_index: int
    drawn: int = 0
    aside: set[int] = field(default_factory=set)
    rounds: list[ExpectedRound] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.replan()

    def replan(self) -> None:
        played = [card for n, card in enumerate(self.cards) if n not in self.aside]
        cut = self.cut_index - sum(1 for n in self.aside if n < self.cut_index)
        self.rounds = expected_rounds(played, cut)

    @property
    def played(self) -> list[str]:
        """The cards drawn and not set aside, in order."""
        return [card for n, card in enumerate(self.cards[: self.drawn]) if n not in self.aside]

    def position(self) -> tuple[int, int] | None:
        """(round index, cards drawn in it) for the next card; None when the shoe's last round is dealt."""
        count = len(self.played)
        start = 0
        for index, round_ in enumerate(self.rounds):
            size = len(round_.player) + len(round_.banker)
            if count < start + size:
                return index, count - start
            start += size
        return None


@dataclass
class KillRecord:
    kind: str
    at_sequence: int  # the journal's last sequence when the process was dead
    round_id: str | None  # the round in progress then (None: between rounds)
    already_paused: bool
    outbox: int  # events still in the outbox then


@dataclass
class Violation:
    check: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"check": self.check, "detail": self.detail}


@dataclass
class CampaignSettings:
    faults: int = 1000
    seed: int = 1
    kinds: tuple[str, ...] = KINDS
    workdir: Path | None = None
    #: `disk_full` needs a tmpfs: False injects the other kinds only
    use_tmpfs: bool = True
    #: the dealer pulls two cards at once when the round takes two more (one waits, un-ACKed, behind the
    #: first): a kill at the first one's ACK leaves a card for the restarted service to deal
    double_draw: bool = True
    #: play between two faults (seconds, uniform)
    settle: tuple[float, float] = (0.3, 2.0)
    betting_seconds: float = 0.3
    round_gap_seconds: float = 0.2
    max_seconds: float | None = None


@dataclass
class Timings:
    restart_to_online: list[float] = field(default_factory=list)
    restart_to_resumed: list[float] = field(default_factory=list)
    pause_to_resumed: list[float] = field(default_factory=list)


class Campaign:
    """The table, its parts and the campaign's own actors; `run()` injects and checks, returns the report."""

    def __init__(self, settings: CampaignSettings) -> None:
        self.settings = settings
        self.rng = random.Random(settings.seed)
        self._own_workdir = settings.workdir is None
        self.workdir = settings.workdir or Path(tempfile.mkdtemp(prefix="tablectl-chaos-"))
        self.data_dir = self.workdir / "data"
        self.journal_path = self.data_dir / JOURNAL_NAME
        self.tmpfs = False
        self.injected: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.violations: list[Violation] = []
        self.kills: list[KillRecord] = []
        self.exit_codes: Counter[str] = Counter()
        self.timings = Timings()
        self.notes: list[str] = []
        self.flush_kills_with_backlog = 0
        self.disk_full_failstops = 0
        self.acks_withheld_at_failstop = 0
        self.stalls = 0
        #: kill_at_restart_repeat: restarts whose first committed line was a card (the shoe's repeat), and
        #: kills that landed right after that first commit
        self.restart_repeats_first = 0
        self.restart_kills_landed = 0
        #: kill_at_ack: the seq the shoe was still waiting an ACK for when the service died (None: nothing)
        self.outstanding_at_kill: list[int | None] = []
        #: disk_full: (ACKs the shoe had seen when the disk filled, when the service had stopped, the seq it
        #: was still waiting an ACK for then)
        self.failstops: list[tuple[int, int, int | None]] = []
        # the shoe: every shoe loaded, every card drawn (in order)
        self.shoes: list[ShoeLoad] = []
        self._card_at: dict[str, tuple[int, int]] = {}  # a CARD line's seq -> (shoe, position in it)
        self._rejections_seen = 0
        self.rejected: list[dict[str, Any]] = []
        # what the supervisor has read so far (the recorders only grow: each message is looked at once)
        self._supervisor_seen = 0
        self._state: dict[str, Any] | None = None
        self._boot_online = 0
        self._replies: dict[str, dict[str, Any]] = {}
        self._shoe_seed = settings.seed * 1000
        self._transaction = 0
        self._pause_seen_at: float | None = None
        self._spawned_at: float | None = None
        self._awaiting_resume_after_spawn = False
        self._dealer_hold = False
        self.started_at = 0.0
        self.started_utc = common.now()
        self.broker_binary = "mosquitto"

    # -- parts -----------------------------------------------------------------------------------------
    async def _start_parts(self) -> None:
        binary = self.broker_binary = common.mosquitto_binary()
        if "disk_full" in self.settings.kinds and self.settings.use_tmpfs:
            self.tmpfs = mount_tmpfs(self.data_dir, "512m")
            if not self.tmpfs:
                self.notes.append("could not mount a tmpfs here: disk_full was not injected")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # The broker persists sessions and queued messages at every change: what a kill -9 can still lose
        # is what it acknowledged between two saves (counted apart, see the module docstring).
        self.broker = MosquittoBroker(
            binary,
            self.workdir / "mosquitto",
            extra_config="autosave_interval 1\nautosave_on_changes true\nmax_queued_messages 0",
        )
        self.broker.start()
        self.shoe = ShoeSimulator(decks=DECKS, seed=self._next_shoe_seed(), cut_position=CUT_POSITION)
        self._shoe_loaded()
        self.pty = str(self.workdir / "shoe.pty")
        await self.shoe.start_pty(self.pty)
        config = write_config(self.workdir, self.broker, self.pty)
        text = config.read_text()
        text = text.replace("betting_seconds = 1.0", f"betting_seconds = {self.settings.betting_seconds}")
        text = text.replace(
            "round_gap_seconds = 0.5", f"round_gap_seconds = {self.settings.round_gap_seconds}"
        )
        config.write_text(text)
        self.service = ServiceProcess(config, self.workdir / "service.log")
        self.subscriber = MqttRecorder(
            self.broker, [f"{BASE}/events/#"], client_id="chaos-subscriber", persistent=True
        )
        await self.subscriber.__aenter__()
        self.supervisor = MqttRecorder(
            self.broker,
            [f"{BASE}/status", f"{BASE}/state", f"{BASE}/replies/#"],
            client_id="chaos-supervisor",
        )
        await self.supervisor.__aenter__()

    async def _stop_parts(self) -> None:
        with contextlib.suppress(Exception):
            if self.service.process is not None and self.service.process.poll() is None:
                self.service.kill9()
        for client in (getattr(self, "subscriber", None), getattr(self, "supervisor", None)):
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.__aexit__(None, None, None)
        if hasattr(self, "shoe"):
            await self.shoe.stop()
        if hasattr(self, "broker"):
            self.broker.kill()
        if self.tmpfs:
            # the journal outlives the tmpfs, for the checks and for a look afterwards
            kept = self.workdir / JOURNAL_NAME
            with contextlib.suppress(sqlite3.Error):
                source, target = sqlite3.connect(self.journal_path), sqlite3.connect(kept)
                source.backup(target)
                source.close()
                target.close()
                self.journal_path = kept
            unmount(self.data_dir)
        if self._own_workdir and not self.violations:
            shutil.rmtree(self.workdir, ignore_errors=True)
        elif self._own_workdir:
            self.notes.append(f"kept for inspection: {self.workdir}")

    def _next_shoe_seed(self) -> int:
        self._shoe_seed += 1
        return self._shoe_seed

    def _shoe_loaded(self) -> None:
        device = self.shoe.device
        assert device.cut_index is not None
        self.shoes.append(ShoeLoad(list(device.cards), device.cut_index))

    # -- the virtual dealer ------------------------------------------------------------------------------
    @property
    def drawn(self) -> list[str]:
        """Every card the shoe dealt, in order (set-aside ones included)."""
        return [card for shoe in self.shoes for card in shoe.cards[: shoe.drawn]]

    @property
    def mid_round(self) -> bool:
        position = self.shoes[-1].position()
        if position is None:
            return False
        index, count = position
        return 0 < count < len(self.shoes[-1].rounds[index].cards_in_dealing_order)

    def _notice_rejections(self) -> None:
        """A card the table rejected (it voided the round, e.g. the shoe went offline before the round's first
        card reached it) is set aside by the dealer; the rounds after it are dealt from the next cards."""
        messages = self.subscriber.messages[self._rejections_seen :]
        self._rejections_seen += len(messages)
        for message in messages:
            data = message.json()["data"]
            # a card out of procedure: held by the pause, set aside by the supervisor's resume
            held = message.topic.endswith("/round.paused") and data.get("cause") == "out_of_procedure"
            if not (message.topic.endswith("/card.rejected") or held):
                continue
            self.rejected.append(data)
            fields = str(data.get("raw") or "").split()
            where = self._card_at.get(fields[1]) if len(fields) >= 2 and fields[0] == "CARD" else None
            if where is not None and where[1] not in self.shoes[where[0]].aside:
                shoe = self.shoes[where[0]]
                shoe.aside.add(where[1])
                shoe.replan()

    def _locked_since_last_card(self) -> bool:
        """Whether the shoe received a LOCK after the ACK of the last card: the next round has opened (the
        gate stays open after a round's last card until then)."""
        device = self.shoe.device
        cards = [line for line in device.acknowledged if line.text.startswith("CARD ")]
        # From when the last card was drawn, not from its ACK: a table killed before it wrote that ACK comes
        # back, asks for the gate (LOCK) as it comes online, may open the next round (LOCK) at once, and only
        # then acknowledges the shoe's repeat of the card; from that ACK on no LOCK follows, and the dealer
        # would wait for the next round forever.
        last = None
        if cards:
            drawn = (line.time for line in device.sent if line.text == cards[-1].text)
            last = next(drawn, cards[-1].time)
        for line in reversed(device.received):
            if last is not None and line.time < last:
                return False
            if line.text == "LOCK":
                return True
        return False

    async def _dealer(self) -> None:
        device = self.shoe.device
        while True:
            await asyncio.sleep(0.01 + self.rng.random() * 0.02)
            if self._dealer_hold or device.queued:
                continue  # a card (or the cut card) not acknowledged yet: the dealer waits for the shoe
            self._notice_rejections()
            shoe = self.shoes[-1]
            position = shoe.position()
            if position is None:
                # the shoe's last round is dealt and its last card acknowledged
                self.shoe.load_new_deck(self._next_shoe_seed(), decks=DECKS, cut_position=CUT_POSITION)
                self._shoe_loaded()
                continue
            index, count = position
            size = len(shoe.rounds[index].cards_in_dealing_order)
            if device.locked:
                continue
            if count == 0 and not self._locked_since_last_card():
                continue  # the gate is still open from the last round
            draws = 2 if self.settings.double_draw and size - count >= 2 else 1
            for _ in range(draws):
                if not self.shoe.draw():
                    break
                self._card_at[seq_text((device._next_seq - 1) % SEQ_MODULO)] = (
                    len(self.shoes) - 1,
                    shoe.drawn,
                )
                shoe.drawn += 1

    # -- the virtual supervisor -------------------------------------------------------------------------
    def _read_supervisor(self) -> None:
        messages = self.supervisor.messages[self._supervisor_seen :]
        self._supervisor_seen += len(messages)
        for message in messages:
            with contextlib.suppress(ValueError):
                body = message.json()
                if message.topic == f"{BASE}/state":
                    self._state = body
                elif message.topic == f"{BASE}/status" and body.get("status") == "online":
                    self._boot_online = max(self._boot_online, int(body.get("boot", 0)))
                elif message.topic == f"{BASE}/replies/resume" and isinstance(body.get("transaction"), str):
                    self._replies[body["transaction"]] = body

    def _latest_state(self) -> dict[str, Any] | None:
        self._read_supervisor()
        return self._state

    async def _supervisor_loop(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            state = self._latest_state()
            if state is None or not state.get("paused"):
                self._pause_seen_at = None
                continue
            if self._pause_seen_at is None:
                self._pause_seen_at = time.monotonic()
            self._transaction += 1
            transaction = f"chaos-{self.settings.seed}-{self._transaction}"
            with contextlib.suppress(Exception):
                self.supervisor.publish(f"{BASE}/commands/resume/supervisor", {"transaction": transaction})
            reply = await self._reply(transaction, timeout=5)
            if reply is not None and reply.get("status") == "ok":
                now = time.monotonic()
                self.timings.pause_to_resumed.append(now - self._pause_seen_at)
                if self._awaiting_resume_after_spawn and self._spawned_at is not None:
                    self.timings.restart_to_resumed.append(now - self._spawned_at)
                    self._awaiting_resume_after_spawn = False
                self._pause_seen_at = None
                # until the table publishes its state again, the retained one still says paused
                with contextlib.suppress(AssertionError):
                    await wait_until(lambda: not (self._latest_state() or {}).get("paused"), timeout=3)
            else:
                await asyncio.sleep(0.2)  # refused (a device still offline) or no answer: try again

    async def _reply(self, transaction: str, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._read_supervisor()
            reply = self._replies.pop(transaction, None)
            if reply is not None:
                return reply
            await asyncio.sleep(0.02)
        return None

    # -- the service ------------------------------------------------------------------------------------
    def _boot(self) -> int:
        """The highest boot counter the table has said `online` with."""
        self._read_supervisor()
        return self._boot_online

    async def _spawn(self) -> None:
        """Start `tablectl run` (again) and wait until it says online with a new boot counter."""
        before = self._boot()
        self._spawned_at = time.monotonic()
        self.service.start()
        try:
            await wait_until(lambda: self._boot() > before, timeout=30, what="the service online")
        except AssertionError:
            self.violations.append(
                Violation("restart", f"not online 30 s after a restart:\n{self._log_tail()}")
            )
            return
        self.timings.restart_to_online.append(time.monotonic() - self._spawned_at)

    def _log_tail(self, lines: int = 30) -> str:
        text = (self.workdir / "service.log").read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def _journal_position(self) -> tuple[int, str | None, bool, int]:
        """(last sequence, round in progress, paused, outbox size) from the journal file (service dead)."""
        db = sqlite3.connect(self.journal_path, timeout=10)
        try:
            last = db.execute("SELECT COALESCE(MAX(sequence), 0) FROM events").fetchone()[0]
            newest, acked_through, acked_ahead = read_outbox(db)
            outbox = newest - acked_through - len(acked_ahead)
            rows = db.execute(
                "SELECT type, envelope FROM events WHERE type IN "
                "('round.opened', 'round.closed', 'round.voided', 'round.paused', 'round.resumed') "
                "ORDER BY sequence"
            ).fetchall()
        finally:
            db.close()
        round_id: str | None = None
        paused = False
        for type_, envelope in rows:
            subject = json.loads(envelope)["subject"]
            if type_ == "round.opened":
                round_id = subject
            elif type_ in ("round.closed", "round.voided"):
                round_id = None
            elif type_ == "round.paused":
                paused = True
            elif type_ == "round.resumed":
                paused = False
        return int(last), round_id, paused, int(outbox)

    async def _kill(self, kind: str) -> None:
        self.service.kill9()
        self.exit_codes["kill -9"] += 1
        await self._after_death(kind)

    async def _after_death(self, kind: str) -> None:
        last, round_id, paused, outbox = self._journal_position()
        self.kills.append(KillRecord(kind, last, round_id, paused, outbox))
        # a round in progress comes back paused: the time until the supervisor's resume is measured
        self._awaiting_resume_after_spawn = round_id is not None
        await self._spawn()

    # -- faults -----------------------------------------------------------------------------------------
    async def _wait_progress(self, acks: int = 1) -> None:
        """Wait until the shoe saw `acks` more cards acknowledged: the table plays again."""
        target = self._card_acks() + acks
        try:
            await wait_until(lambda: self._card_acks() >= target, timeout=STALL_S, what="progress")
        except AssertionError:
            self.stalls += 1
            state = self._latest_state() or {}
            self.violations.append(
                Violation(
                    "progress",
                    f"no card acknowledged for {STALL_S:g} s after a fault: shoe locked={self.shoe.locked} "
                    f"queued={self.shoe.device.queued} plugged={self.shoe.port.plugged}, dealer at "
                    f"{self.shoes[-1].position()}, last state seen: round {state.get('round_id')} "
                    f"{state.get('phase')} paused={state.get('paused')} prompt={state.get('prompt')!r}\n"
                    f"{self._log_tail()}",
                )
            )
            if self.service.process is None or self.service.process.poll() is not None:
                await self._spawn()

    def _card_acks(self) -> int:
        return sum(1 for line in self.shoe.device.acknowledged if line.text.startswith("CARD "))

    async def _wait_mid_round(self, timeout: float = 20) -> bool:
        with contextlib.suppress(AssertionError):
            await wait_until(lambda: self.mid_round, timeout=timeout, what="a round being dealt")
            return True
        return False

    async def fault_kill_mid_round(self) -> None:
        if not await self._wait_mid_round():
            self.skipped["kill_mid_round"] += 1
            return
        await asyncio.sleep(self.rng.uniform(0, 0.4))
        await self._kill("kill_mid_round")

    async def fault_kill_at_ack(self) -> None:
        process = self.service.process
        assert process is not None
        killed = asyncio.Event()

        def on_ack(line: LoggedLine) -> None:
            if line.text.startswith("CARD ") and not killed.is_set():
                os.kill(process.pid, 9)  # at the instant the shoe reads the ACK
                killed.set()
                self.outstanding_at_kill.append(self.shoe.device.awaiting_ack)

        self.shoe.device.on_acknowledged = on_ack
        try:
            await asyncio.wait_for(killed.wait(), 30)
        except TimeoutError:
            self.skipped["kill_at_ack"] += 1
            return
        finally:
            self.shoe.device.on_acknowledged = None
        process.wait(10)
        self.exit_codes["kill -9"] += 1
        await self._after_death("kill_at_ack")

    async def fault_kill_at_restart_repeat(self) -> None:
        # a card in flight: the shoe drew it and waits for its ACK (the dealer often draws two at once)
        try:
            await wait_until(
                lambda: self.shoe.device.awaiting_ack is not None, timeout=20, what="a card awaiting its ACK"
            )
        except AssertionError:
            self.skipped["kill_at_restart_repeat"] += 1
            return
        self.service.kill9()
        self.exit_codes["kill -9"] += 1
        last, round_id, paused, outbox = self._journal_position()
        self.kills.append(KillRecord("kill_at_restart_repeat", last, round_id, paused, outbox))
        arm, fired = self.workdir / "restart-hook.arm", self.workdir / "restart-hook.fired"
        fired.unlink(missing_ok=True)
        arm.touch()
        normal = self.service
        hooked = ServiceProcess(
            normal.config,
            normal.log,
            hook=RESTART_HOOK,
            env={"CHAOS_ARM": str(arm), "CHAOS_FIRED": str(fired)},
        )
        self.service = hooked
        try:
            hooked.start()
            process = hooked.process
            assert process is not None
            try:
                await wait_until(lambda: process.poll() is not None, timeout=30, what="the hooked restart")
            except AssertionError:
                hooked.kill9()  # the shoe never came online: no commit to kill after
                self.notes.append("kill_at_restart_repeat: the restarted service never took the shoe online")
            else:
                self.exit_codes[f"exit {process.returncode}"] += 1
                if fired.exists():
                    self.restart_kills_landed += 1
                    first = json.loads(fired.read_text())
                    if first.get("delivered") or {"card.dealt", "reading.held"} & set(first["types"]):
                        self.restart_repeats_first += 1
        finally:
            arm.unlink(missing_ok=True)
            self.service = normal
        await self._after_death("kill_at_restart_repeat")

    async def fault_kill_mid_flush(self) -> None:
        self.broker.stop()
        await asyncio.sleep(self.rng.uniform(1.0, 2.5))  # the table plays on: events wait in the outbox
        before = len(self.subscriber.messages)
        self.broker.start()
        with contextlib.suppress(AssertionError):
            await wait_until(lambda: len(self.subscriber.messages) > before, timeout=15, what="the flush")
        await asyncio.sleep(self.rng.uniform(0, 0.05))
        self.service.kill9()
        self.exit_codes["kill -9"] += 1
        await self._after_death("kill_mid_flush")
        if self.kills[-1].outbox:
            self.flush_kills_with_backlog += 1

    async def fault_broker_kill(self) -> None:
        self.broker.kill()
        await asyncio.sleep(self.rng.uniform(0.3, 2.0))
        self.broker.start()

    async def fault_unplug(self) -> None:
        await self.shoe.unplug()
        await asyncio.sleep(self.rng.uniform(0.3, 2.0))
        await self.shoe.replug()

    async def fault_corrupt(self) -> None:
        self.shoe.faults = ShoeFaults(
            bad_checksum_rate=0.3, noise_rate=0.3, duplicate_rate=0.3, seed=self.rng.randrange(1 << 30)
        )
        end = time.monotonic() + self.rng.uniform(1.0, 3.0)
        while time.monotonic() < end:
            garbage = bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 40)))
            self.shoe.inject(garbage + b"\r\n")
            await asyncio.sleep(self.rng.uniform(0.05, 0.4))
        self.shoe.faults = ShoeFaults()

    async def fault_disk_full(self) -> None:
        if not self.tmpfs:
            self.skipped["disk_full"] += 1
            return
        process = self.service.process
        assert process is not None
        await self._wait_mid_round(timeout=10)
        # An empty WAL: the next commit has to grow it, on a file system with no space left.
        for _ in range(50):
            db = sqlite3.connect(self.journal_path, timeout=5)
            try:
                busy = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            finally:
                db.close()
            if not busy:
                break
            await asyncio.sleep(0.02)
        filler = fill_file_system(self.data_dir)
        acks_at_fill = len(self.shoe.device.acknowledged)
        try:
            await wait_until(lambda: process.poll() is not None, timeout=30, what="the fail-stop")
        except AssertionError:
            filler.unlink()
            self.violations.append(Violation("fail-stop", "the service kept running 30 s on a full disk"))
            return
        code = process.wait()
        self.exit_codes[f"exit {code}"] += 1
        if code != 1 or "cannot write the journal" not in self._log_tail(80):
            self.violations.append(
                Violation("fail-stop", f"exit status {code} on a full disk:\n{self._log_tail()}")
            )
        self.disk_full_failstops += 1
        # what the service acknowledged between the fill and its stop is checked like every ACK
        waiting = self.shoe.device.awaiting_ack
        self.failstops.append((acks_at_fill, len(self.shoe.device.acknowledged), waiting))
        self.acks_withheld_at_failstop += waiting is not None
        filler.unlink()  # the operator frees space; systemd restarts the service
        await self._after_death("disk_full")

    # -- the campaign ---------------------------------------------------------------------------------
    async def run(self) -> dict[str, Any]:
        self.started_at = time.monotonic()
        self.started_utc = common.now()
        try:
            await self._start_parts()
            await self._spawn()
            actors = [
                asyncio.create_task(self._dealer(), name="dealer"),
                asyncio.create_task(self._supervisor_loop(), name="supervisor"),
            ]
            try:
                await self._wait_progress(3)
                kinds = [k for k in self.settings.kinds if k != "disk_full" or self.tmpfs]
                plan = fault_plan(kinds, self.settings.faults, self.settings.seed)
                for n, kind in enumerate(plan):
                    if (
                        self.settings.max_seconds
                        and time.monotonic() - self.started_at > self.settings.max_seconds
                    ):
                        self.notes.append(f"stopped after {n} faults: --max-seconds reached")
                        break
                    log.info("fault %d/%d: %s", n + 1, self.settings.faults, kind)
                    await asyncio.sleep(self.rng.uniform(*self.settings.settle))
                    await getattr(self, f"fault_{kind}")()
                    self.injected[kind] += 1
                    await self._wait_progress(1)
                await self._quiesce()
            finally:
                for actor in actors:
                    actor.cancel()
                for actor in actors:
                    with contextlib.suppress(asyncio.CancelledError):
                        await actor
            code = self.service.stop()
            self.exit_codes[f"final stop: exit {code}"] += 1
            if code != 0:
                self.violations.append(
                    Violation("stop", f"exit status {code} on SIGTERM:\n{self._log_tail()}")
                )
            self._check()
        finally:
            await self._stop_parts()
        return self.report()

    async def _quiesce(self) -> None:
        """Stop dealing once the shoe has nothing outstanding; wait until the outbox is empty and every
        journaled event reached the subscriber (asking for a replay of what a broker crash lost)."""
        self._dealer_hold = True
        with contextlib.suppress(AssertionError):
            await wait_until(lambda: not self.shoe.device.queued, timeout=30, what="the shoe quiet")
        await asyncio.sleep(1.0)
        # A card the shoe sent while the table was paused (after the last restart) is held, not dealt, until
        # the supervisor's resume: on a loaded machine that takes longer than the second above.
        with contextlib.suppress(AssertionError):
            await wait_until(self._settled, timeout=30, what="the table resumed, nothing held")
        with contextlib.suppress(AssertionError):
            await wait_until(lambda: self._outbox_size() == 0, timeout=60, what="an empty outbox")
        self.replayed = await self._repair_gaps()

    def _settled(self) -> bool:
        state = self._latest_state() or {}
        return state.get("paused") is False and state.get("held_readings") == 0

    def _journal_count(self, query: str) -> int:
        db = sqlite3.connect(self.journal_path, timeout=5)
        try:
            return int(db.execute(query).fetchone()[0])
        finally:
            db.close()

    def _outbox_size(self) -> int:
        db = sqlite3.connect(self.journal_path, timeout=5)
        try:
            last, acked_through, acked_ahead = read_outbox(db)
        finally:
            db.close()
        return last - acked_through - len(acked_ahead)

    def _received_sequences(self) -> set[int]:
        return {int(m.json()["sequence"]) for m in self.subscriber.on(f"{BASE}/events/#")}

    def _journal_last_sequence(self) -> int:
        return self._journal_count("SELECT COALESCE(MAX(sequence), 0) FROM events")

    async def _repair_gaps(self) -> list[int]:
        """What a consumer does when `sequence` shows a gap: ask the table for those events again."""
        await asyncio.sleep(1.0)
        last = self._journal_last_sequence()
        missing = sorted(set(range(1, last + 1)) - self._received_sequences())
        if not missing:
            return []
        for start, end in _ranges(missing):
            self._transaction += 1
            self.supervisor.publish(
                f"{BASE}/commands/replay_events/consumer",
                {"transaction": f"gap-{self._transaction}", "from_sequence": start, "to_sequence": end},
            )
        with contextlib.suppress(AssertionError):
            await wait_until(
                lambda: not set(missing) - self._received_sequences(), timeout=60, what="the replayed events"
            )
        return missing

    # -- checks -----------------------------------------------------------------------------------------
    def _journal_events(self) -> list[dict[str, Any]]:
        db = sqlite3.connect(self.journal_path, timeout=5)
        try:
            rows = db.execute("SELECT sequence, id, envelope FROM events ORDER BY sequence").fetchall()
        finally:
            db.close()
        events = []
        for sequence, id_, envelope in rows:
            body = json.loads(envelope)
            if int(body["sequence"]) != sequence or body["id"] != id_:
                self.violations.append(
                    Violation("journal", f"row {sequence} holds envelope {body['sequence']}")
                )
            events.append(body)
        return events

    def _check(self) -> None:
        # The dealer stopped reading the table once the campaign quiesced, but the table may still have set
        # cards aside since (the held cards of the last restart, released by the supervisor's resume): the
        # shoe's account of what was played must know them before it is compared with the journal.
        self._notice_rejections()
        journal = self._journal_events()
        self.journal_events = len(journal)
        self._check_sequences(journal)
        self._check_subscriber(journal)
        self._check_cards(journal)
        self._check_results(journal)
        self._check_recoveries(journal)

    def _check_sequences(self, journal: list[dict[str, Any]]) -> None:
        sequences = [int(e["sequence"]) for e in journal]
        if sequences != list(range(1, len(sequences) + 1)):
            self.violations.append(Violation("sequence", "the journal's sequences are not 1..n without gaps"))
        ids = Counter(e["id"] for e in journal)
        for id_, count in ids.items():
            if count > 1:
                self.violations.append(Violation("id", f"id {id_} journaled {count} times"))

    def _check_subscriber(self, journal: list[dict[str, Any]]) -> None:
        by_sequence = {int(e["sequence"]): e for e in journal}
        by_id = {e["id"]: e for e in journal}
        received = [m.json() for m in self.subscriber.on(f"{BASE}/events/#")]
        self.received_events = len(received)
        seen: dict[int, dict[str, Any]] = {}
        for event in received:
            sequence = int(event["sequence"])
            plain = {**event, "historical": False}
            first = seen.setdefault(sequence, plain)
            if first != plain:
                self.violations.append(Violation("sequence reused", f"sequence {sequence} with two contents"))
            journaled = by_sequence.get(sequence)
            if journaled is None:
                self.violations.append(Violation("invented", f"sequence {sequence} is not in the journal"))
            elif {**journaled, "historical": False} != plain:
                self.violations.append(Violation("content", f"sequence {sequence} differs from the journal"))
            same_id = by_id.get(event["id"])
            if same_id is not None and {**same_id, "historical": False} != plain:
                self.violations.append(Violation("id", f"id {event['id']} with two contents"))
        missing = sorted(set(by_sequence) - set(seen))
        if missing:
            self.violations.append(
                Violation(
                    "missing", f"{len(missing)} journaled events never reached the subscriber: {missing[:20]}"
                )
            )

    def _check_cards(self, journal: list[dict[str, Any]]) -> None:
        dealt = [e for e in journal if e["type"] == "card.dealt"]
        # every card line the table took: dealt, rejected, or held out of procedure (journaled as such, and
        # set aside by the supervisor's decision)
        out_of_procedure = [
            e for e in journal if e["type"] == "round.paused" and e["data"].get("cause") == "out_of_procedure"
        ]
        dealt_lines = [
            e["data"]["raw"]
            for e in journal
            if e["type"] in ("card.dealt", "card.rejected")
            or (e in out_of_procedure and e["data"]["raw"].startswith("CARD "))
        ]
        self.cards_out_of_procedure = len(out_of_procedure)
        set_aside = [e for e in journal if e["type"] == "card.set_aside"]
        if len(set_aside) + bool(self._latest_paused_out_of_procedure(journal)) < len(out_of_procedure):
            self.violations.append(
                Violation("set aside", f"{len(out_of_procedure)} cards held, {len(set_aside)} set aside")
            )
        # A card still held at the stop (the table paused, no resume yet) was ACKed and journaled, as
        # `reading.held` and in the state row that brings it back after a restart: the promise is kept.
        held = [e["data"]["raw"] for e in journal if e["type"] == "reading.held"]
        taken = Counter(dealt_lines)
        held_at_stop = []
        for raw in held:
            if taken[raw] > 0:
                taken[raw] -= 1  # released by a resume and dealt (or rejected) since
            elif raw.startswith("CARD "):
                held_at_stop.append(raw)
        self.cards_held_at_stop = len(held_at_stop)
        dealt_lines = dealt_lines + held_at_stop
        acked = [line.text for line in self.shoe.device.acknowledged if line.text.startswith("CARD ")]
        self.cards_acked = len(acked)
        self.cards_dealt = len(dealt)
        for n, line in enumerate(acked):
            if n >= len(dealt_lines):
                self.violations.append(
                    Violation("ack promise", f"{len(acked) - n} ACKed card(s) not journaled, first {line}")
                )
                break
            if dealt_lines[n] != line:
                self.violations.append(
                    Violation("ack promise", f"ACKed card #{n + 1} {line} but journaled {dealt_lines[n]}")
                )
                break
        if len(dealt_lines) > len(acked):
            self.violations.append(
                Violation(
                    "dealt", f"{len(dealt_lines) - len(acked)} card(s) dealt that the shoe never saw ACKed"
                )
            )
        codes = [e["data"]["card"] for e in dealt] + [raw.split()[2].split("*")[0] for raw in held_at_stop]
        played = [card for shoe in self.shoes for card in shoe.played]
        if codes != played:
            self.violations.append(
                Violation(
                    "cards",
                    f"journal dealt {len(codes)} cards, the shoe {len(played)} (not set aside): not the same",
                )
            )
        rejected = [e["data"] for e in journal if e["type"] == "card.rejected"] + [
            e["data"] for e in out_of_procedure
        ]
        self.cards_rejected = len(rejected)
        for data in rejected:
            if not any(reason in data["reason"] for reason in EXPECTED_REJECTIONS):
                self.violations.append(Violation("rejected", f"card rejected: {data}"))

    @staticmethod
    def _latest_paused_out_of_procedure(journal: list[dict[str, Any]]) -> bool:
        """Whether the table stopped paused for a card out of procedure that nobody decided on yet."""
        for event in reversed(journal):
            if event["type"] == "round.resumed":
                return False
            if event["type"] == "round.paused":
                return bool(event["data"].get("cause") == "out_of_procedure")
        return False

    def _check_results(self, journal: list[dict[str, Any]]) -> None:
        results = [e for e in journal if e["type"] == "round.result"]
        expected: list[ExpectedRound] = []
        for shoe in self.shoes:
            played = len(shoe.played)
            position = 0
            for round_ in shoe.rounds:
                position += len(round_.player) + len(round_.banker)
                if position > played:
                    break
                expected.append(round_)
        self.rounds_checked = len(results)
        if len(results) > len(expected):
            self.violations.append(
                Violation("result", f"{len(results)} results for {len(expected)} rounds dealt")
            )
        for event, want in zip(results, expected, strict=False):
            got, ref = as_expected(event["data"]), from_reference(want)
            if got != ref:
                self.violations.append(Violation("result", f"{event['subject']}: {got} != reference {ref}"))

    def _check_recoveries(self, journal: list[dict[str, Any]]) -> None:
        self.mid_round_crashes = 0
        for kill in self.kills:
            if kill.round_id is None:
                continue
            self.mid_round_crashes += 1
            after = [e for e in journal if int(e["sequence"]) > kill.at_sequence]
            paused = kill.already_paused
            ok = True
            for event in after:
                if event["type"] == "round.paused" and event["subject"] == kill.round_id:
                    paused = paused or event["data"]["reason"] == RESTART_REASON
                elif event["type"] == "round.resumed":
                    if not paused:
                        ok = False
                    paused = False
                    break
                elif event["type"] in ("card.dealt", "round.result") and event["subject"] == kill.round_id:
                    ok = False
                    break
                elif event["type"] in ("round.voided", "round.closed") and event["subject"] == kill.round_id:
                    break
            if not ok or not (paused or kill.already_paused or _paused_then(after, kill.round_id)):
                self.violations.append(
                    Violation(
                        "recovery", f"{kill.kind} mid-round {kill.round_id}: not recovered to a paused round"
                    )
                )

    # -- report -------------------------------------------------------------------------------------------
    def report(self) -> dict[str, Any]:
        def summary(values: list[float]) -> dict[str, Any]:
            return common.summary(values, unit="s")

        return {
            **common.header(
                "chaos",
                self.started_utc,
                common.machine_info(self.broker_binary),
                what="fault injection against a whole table: the ACK promise, cards, results, events",
            ),
            "ended_utc": common.date_utc(common.now()),
            "settings": {
                "faults": self.settings.faults,
                "seed": self.settings.seed,
                "kinds": list(self.settings.kinds),
                "double_draw": self.settings.double_draw,
                "disk_full_on_tmpfs": self.tmpfs,
            },
            "duration_s": round(time.monotonic() - self.started_at, 1),
            "injected": dict(self.injected),
            "skipped": dict(self.skipped),
            "exit_codes": dict(self.exit_codes),
            "mid_round_crashes": getattr(self, "mid_round_crashes", 0),
            "flush_kills_with_backlog": self.flush_kills_with_backlog,
            "disk_full_failstops": self.disk_full_failstops,
            "failstops_with_a_card_left_unacknowledged": self.acks_withheld_at_failstop,
            "cards_dealt_by_shoe": len(self.drawn),
            "cards_acked": getattr(self, "cards_acked", 0),
            "cards_rejected_in_voided_rounds": getattr(self, "cards_rejected", 0),
            "cards_out_of_procedure": getattr(self, "cards_out_of_procedure", 0),
            "cards_journaled": getattr(self, "cards_dealt", 0),
            "cards_held_at_stop": getattr(self, "cards_held_at_stop", 0),
            "rounds_checked_against_reference": getattr(self, "rounds_checked", 0),
            "shoes": len(self.shoes),
            "journal_events": getattr(self, "journal_events", 0),
            "events_received": getattr(self, "received_events", 0),
            "events_lost_by_broker_kill_repaired_by_replay": len(getattr(self, "replayed", [])),
            "stalls": self.stalls,
            "restart_kills_after_first_commit": self.restart_kills_landed,
            "restarts_whose_first_commit_was_a_card": self.restart_repeats_first,
            "restart_to_online": summary(self.timings.restart_to_online),
            "restart_to_resumed": summary(self.timings.restart_to_resumed),
            "pause_to_resumed": summary(self.timings.pause_to_resumed),
            "violations": [v.as_dict() for v in self.violations],
            "notes": self.notes,
        }


def _paused_then(events: list[dict[str, Any]], round_id: str | None) -> bool:
    return any(e["type"] == "round.paused" and e["subject"] == round_id for e in events)


def _ranges(numbers: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in numbers:
        if out and out[-1][1] == n - 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def markdown(report: dict[str, Any]) -> str:
    def seconds(value: float | None) -> str:
        return "–" if value is None else f"{value:.2f} s"

    lines = [
        f"Chaos campaign, {report['date_utc']} to {report['ended_utc']}, commit {report['git_commit']}, "
        f"{report['machine']['cpu']} ({report['machine']['arch']}), {report['machine']['cores']} cores, "
        f"seed {report['settings']['seed']}, {report['duration_s']} s",
        "",
        "| fault | injected |",
        "| --- | ---: |",
    ]
    for kind in KINDS:
        lines.append(f"| {kind} | {report['injected'].get(kind, 0)} |")
    lines += [
        f"| **total** | **{sum(report['injected'].values())}** |",
        "",
        "| measure | count | p50 | p99 | max |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for key in ("restart_to_online", "restart_to_resumed", "pause_to_resumed"):
        s = report[key]
        times = " | ".join(seconds(s[k]) for k in ("p50_s", "p99_s", "max_s"))
        lines.append(f"| {key} | {s['count']} | {times} |")
    lines += [
        "",
        "| check | value |",
        "| --- | ---: |",
        f"| cards dealt by the shoe / ACKed / journaled | {report['cards_dealt_by_shoe']}"
        f" / {report['cards_acked']} / {report['cards_journaled']} |",
        f"| rounds checked against the reference | {report['rounds_checked_against_reference']} |",
        f"| cards rejected (dealt into a round the table had voided) | "
        f"{report['cards_rejected_in_voided_rounds']} |",
        f"| journal events / received by the subscriber | {report['journal_events']}"
        f" / {report['events_received']} |",
        f"| crashes mid-round (all must come back paused) | {report['mid_round_crashes']} |",
        f"| kills with a backlog in the outbox | {report['flush_kills_with_backlog']} |",
        f"| disk-full fail-stops | {report['disk_full_failstops']} |",
        f"| events lost by a broker kill -9, repaired by replay | "
        f"{report['events_lost_by_broker_kill_repaired_by_replay']} |",
        f"| **violations** | **{len(report['violations'])}** |",
    ]
    for violation in report["violations"][:20]:
        lines.append(f"- {violation['check']}: {violation['detail'][:300]}")
    for note in report["notes"]:
        lines.append(f"- note: {note}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = common.parser(__doc__)
    parser.add_argument("--faults", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated fault kinds")
    parser.add_argument("--max-seconds", type=float, default=None, help="stop injecting after this long")
    common.add_output_argument(parser, "chaos")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(asctime)s %(message)s"
    )
    kinds = tuple(k for k in args.kinds.split(",") if k)
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown fault kinds: {', '.join(sorted(unknown))}")
    settings = CampaignSettings(faults=args.faults, seed=args.seed, kinds=kinds, max_seconds=args.max_seconds)
    report = asyncio.run(Campaign(settings).run())
    output = common.write_result("chaos", report, args.output)
    print(markdown(report))
    print(f"\nwritten: {output}")
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
