"""The ACK a card shoe receives is a promise: the card is in the journal. Proved against the real parts.

- kill -9 of `tablectl run` at the instant the shoe reads a card's ACK, 20 times: every card the shoe saw
  ACKed is in the journal file, and the card the shoe was still repeating is dealt by the restarted service;
- a journal whose disk is full (SQLite fails with SQLITE_FULL) fail-stops the service without ACKing the card
  it could not journal, and nothing is ACKed after that; on a real full tmpfs under the subprocess too;
- a crash after the commit but before the ACK left: the shoe repeats the card, which must not be dealt twice.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.chaos import Campaign, CampaignSettings, mount_tmpfs, unmount
from controller.events import CardDealt
from controller.journal import Journal
from controller.runtime import make_event
from controller.service import ServiceFailure, TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until
from controller.testing.table_process import (
    BASE,
    CARDS,
    TABLE,
    ServiceProcess,
    draw,
    events,
    wait_event,
    write_config,
)
from drivers.line.fields import seq_text
from drivers.shoe.protocol import Ack, Card, Hello, State
from drivers.shoe.session import ShoeSession
from drivers.shoe.simulator import ShoeSimulator


def journal_rows(path: Path, type_: str) -> list[dict]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT envelope FROM events WHERE type = ? ORDER BY sequence", (type_,)).fetchall()
    finally:
        db.close()
    return [json.loads(row[0]) for row in rows]


def acked_cards(shoe: ShoeSimulator) -> list[str]:
    return [line.text for line in shoe.device.acknowledged if line.text.startswith("CARD ")]


@pytest.mark.e2e
@pytest.mark.timeout(400)
async def test_a_kill_9_at_the_instant_of_an_ack_never_loses_the_acknowledged_card(tmp_path: Path) -> None:
    campaign = Campaign(
        CampaignSettings(
            faults=20, seed=11, kinds=("kill_at_ack",), workdir=tmp_path, use_tmpfs=False, settle=(0.0, 0.3)
        )
    )
    report = await campaign.run()
    assert report["violations"] == []
    assert report["injected"] == {"kill_at_ack": 20}
    assert report["exit_codes"]["kill -9"] == 20
    # a card the shoe sent while the restarted table was paused is held until the supervisor's resume: the
    # campaign waits for that before it stops the service, so every ACKed card is dealt by then
    assert report["cards_held_at_stop"] == 0

    # Read back from the journal file itself: every card the shoe saw ACKed, in order, once.
    dealt = [e["data"]["raw"] for e in journal_rows(campaign.journal_path, "card.dealt")]
    acked = acked_cards(campaign.shoe)
    assert len(acked) >= 20
    assert dealt == acked
    assert [e["data"]["card"] for e in journal_rows(campaign.journal_path, "card.dealt")] == campaign.drawn
    # The dealer pulled two cards at once whenever the round took two more: at the kill, the second was
    # still un-ACKed; the shoe repeated it to the restarted service, which dealt it (once, after the first).
    repeated = [seq for seq in campaign.outstanding_at_kill if seq is not None]
    assert len(repeated) >= 5, campaign.outstanding_at_kill
    for seq in repeated:
        lines = [line for line in dealt if line.startswith(f"CARD {seq_text(seq)} ")]
        assert len(lines) == 1, (seq, lines)


@pytest.fixture
async def shoe(tmp_path: Path) -> AsyncIterator[ShoeSimulator]:
    simulator = ShoeSimulator(cards=CARDS * 5, cut_position=None)
    await simulator.start_pty(str(tmp_path / "shoe.pty"))
    yield simulator
    await simulator.stop()


def fill_database(db: sqlite3.Connection) -> None:
    """The database file may not grow any more, and what free space it had is used: SQLITE_FULL from now."""
    db.execute("CREATE TABLE IF NOT EXISTS filler (x BLOB)")
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")
    for size in (4096, 512, 64, 8):
        with pytest.raises(sqlite3.OperationalError, match="full"):
            for _ in range(100_000):
                db.execute("INSERT INTO filler VALUES (randomblob(?))", (size,))


@pytest.mark.integration
async def test_a_full_disk_fail_stops_without_acknowledging_the_card_it_could_not_journal(
    tmp_path: Path, mosquitto: MosquittoBroker, shoe: ShoeSimulator
) -> None:
    config = TABLE_CONFIGS.from_dict(
        {
            "table": {"studio_id": "s1", "table_id": TABLE, "game": "baccarat", "data_dir": str(tmp_path)},
            "broker": {"url": mosquitto.url},
            "devices": {"shoe": {"protocol": "shoe-line", "port": str(tmp_path / "shoe.pty")}},
            "game": {"betting_seconds": 0.5, "round_gap_seconds": 0.2},
        },
        environ={},
    )
    service = TableService(config)
    async with MqttRecorder(mosquitto, [f"{BASE}/#"], client_id="full-watch") as watch:
        running = asyncio.create_task(service.run())
        await wait_event(watch, "round.betting_closed")
        await draw(shoe, watch, 1)
        assert len(acked_cards(shoe)) == 1
        fill_database(service.journal._db)
        # The card that needs a page more is refused by SQLite: a few cards at most (each is a ~1 kB row, the
        # last one's step adds the result), and only cards write to the journal while the round is dealt.
        for _ in range(3):
            await wait_until(
                lambda: shoe.draw() or running.done(), timeout=10, what="the gate open for the next card"
            )
            await wait_until(
                lambda: shoe.device.awaiting_ack is None or running.done(), timeout=10, what="ACK or stop"
            )
            if running.done():
                break
        with pytest.raises(ServiceFailure, match=r"cannot write the journal.*full"):
            await asyncio.wait_for(running, 15)
        waiting = shoe.device.awaiting_ack
        assert waiting is not None, "the card that could not be journaled was acknowledged"
        acked = acked_cards(shoe)
        assert f"CARD {seq_text(waiting)} " not in "\n".join(acked)
        await asyncio.sleep(1.0)  # the shoe keeps repeating it; nobody answers any more
        assert acked_cards(shoe) == acked
        assert shoe.device.awaiting_ack == waiting

    journaled = [e["data"]["raw"] for e in journal_rows(service.journal_path, "card.dealt")]
    assert journaled == acked
    assert [
        e["data"]["raw"] for e in events(watch, "card.dealt")
    ] == journaled  # nothing unjournaled published


@pytest.mark.e2e
async def test_on_a_full_tmpfs_the_service_fail_stops_and_acks_nothing_it_did_not_journal(
    tmp_path: Path,
) -> None:
    probe = tmp_path / "probe"
    if not mount_tmpfs(probe, "1m"):
        pytest.skip("cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN); the in-process test covers it")
    unmount(probe)
    campaign = Campaign(
        CampaignSettings(
            faults=3, seed=5, kinds=("disk_full",), workdir=tmp_path / "campaign", settle=(0.2, 1)
        )
    )
    report = await campaign.run()
    assert report["violations"] == []
    assert report["disk_full_failstops"] == 3
    assert report["exit_codes"]["exit 1"] == 3
    dealt = [e["data"]["raw"] for e in journal_rows(campaign.journal_path, "card.dealt")]
    assert dealt == acked_cards(campaign.shoe)
    for acks_at_fill, acks_at_stop, waiting in campaign.failstops:
        # whatever was ACKed between the fill and the stop had been journaled (checked above); a card the
        # shoe still repeated at the stop was dealt after the restart, once
        assert acks_at_stop >= acks_at_fill
        if waiting is not None:
            assert len([line for line in dealt if line.startswith(f"CARD {seq_text(waiting)} ")]) <= 1


# The service, with the window between the journal's commit and the ACK's write held open: after a card's
# step is committed it stops (blocking its event loop) before the step's bytes (the ACK) can be written
# (then `tablectl run` starts: `ServiceProcess` ends every hook with it).
HOLD_ACK = """
import os, time
import controller.service as service
from drivers.readings import CardSeen
committed = service.TableService.commit
def commit(self, step, **kwargs):
    done = committed(self, step, **kwargs)
    if any(isinstance(r, CardSeen) for r in step.readings) and os.path.exists(os.environ["HOLD_ARM"]):
        os.unlink(os.environ["HOLD_ARM"])
        open(os.environ["HOLD_HELD"], "w").close()
        time.sleep(60)
    return done
service.TableService.commit = commit
"""


@pytest.mark.e2e
async def test_a_card_journaled_but_not_yet_acked_at_a_crash_is_dealt_once(
    tmp_path: Path, mosquitto: MosquittoBroker, shoe: ShoeSimulator
) -> None:
    config = write_config(tmp_path, mosquitto, str(tmp_path / "shoe.pty"))
    arm, held = tmp_path / "arm", tmp_path / "held"
    first = ServiceProcess(
        config, tmp_path / "service.log", hook=HOLD_ACK, env={"HOLD_ARM": str(arm), "HOLD_HELD": str(held)}
    )
    service = ServiceProcess(config, tmp_path / "service.log")
    async with MqttRecorder(mosquitto, [f"{BASE}/#"], client_id="held-watch", persistent=True) as watch:
        first.start()
        try:
            await wait_event(watch, "round.betting_closed")
            await draw(shoe, watch, 1)
            arm.touch()
            await wait_until(shoe.draw, timeout=10, what="the second card")
            await wait_until(held.exists, timeout=10, what="the second card committed")
            first.kill9()
            assert acked_cards(shoe) == [line for line in acked_cards(shoe) if " 9S*" in line]
            assert shoe.device.awaiting_ack is not None  # the shoe repeats 8D: it was never ACKed

            service.start()
            await wait_event(watch, "round.paused")
            await watch.wait_for_message(
                f"{BASE}/devices/shoe", lambda m: m.json()["status"] == "online", timeout=15
            )
            await wait_until(lambda: shoe.device.awaiting_ack is None, timeout=10, what="8D acknowledged")
            watch.publish(f"{BASE}/commands/resume/supervisor", {"transaction": "held-1"})
            reply = await watch.wait_for_message(
                f"{BASE}/replies/resume", lambda m: m.json()["transaction"] == "held-1", timeout=10
            )
            assert reply.json()["status"] == "ok", reply.json()
            for _ in range(2):
                await wait_until(shoe.draw, timeout=10, what="a draw")
                await wait_until(lambda: shoe.device.awaiting_ack is None, timeout=10, what="its ACK")
            result = (await wait_event(watch, "round.result"))[-1]
        finally:
            assert service.stop() == 0, (tmp_path / "service.log").read_text()
    journal = tmp_path / "data" / f"{TABLE}-journal.sqlite3"
    assert [e["data"]["card"] for e in journal_rows(journal, "card.dealt")] == ["9S", "8D", "KC", "5H"]
    assert result["data"]["player"]["cards"] == ["9S", "KC"]
    assert result["data"]["banker"]["cards"] == ["8D", "5H"]


@pytest.mark.integration
def test_a_full_disk_is_reported_as_such_even_when_sqlite_rolled_the_transaction_back_itself(
    tmp_path: Path,
) -> None:
    """SQLITE_FULL can end the transaction by itself; the journal's own ROLLBACK must not then replace the
    reason (the operator reads "database or disk is full", not "cannot rollback")."""
    journal = Journal(tmp_path / "journal.sqlite3", "s1/t1")
    dealt = CardDealt(
        round_id="r1", card="9S", position="player", index=0, rescan=False, raw="CARD 0001 9S*7F"
    )
    for _ in range(30):
        journal.append([make_event("card.dealt", dealt, 0.0)], snapshot=b"x" * 3000)
    pages = journal._db.execute("PRAGMA page_count").fetchone()[0]
    journal._db.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        for _ in range(20):
            journal.append([make_event("card.dealt", dealt, 0.0)], snapshot=b"y" * 3001)
    assert journal.last_sequence == 30
    assert len(journal.read(1)) == 30
    journal.close()


@pytest.mark.unit
def test_a_restarted_shoe_session_acks_the_repeat_of_a_journaled_card_without_reading_it_again() -> None:
    card, state = Card(5, "9S").encode(), State("READY").encode()
    session = ShoeSession("shoe")
    session.delivered_before(card.decode().strip())
    session.delivered_before(state.decode().strip())  # a message without seq: nothing to remember
    session.connection_made(0.0)
    session.data_to_send()
    readings = session.data_received(Hello("SIMSHOE", "1.0.0", "SIM0001").encode() + card, 0.1)
    assert [type(r).__name__ for r in readings] == ["DeviceOnline"]
    assert session.data_to_send() == Ack(5).encode()  # acknowledged: the shoe stops repeating it
    assert session.stats.duplicates == 1
    readings = session.data_received(Card(6, "8D").encode(), 0.2)
    assert [getattr(r, "code", None) for r in readings] == ["8D"]
