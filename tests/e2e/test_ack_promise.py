"""The ACK a card shoe receives is a promise: the card is in the journal. Proved against the real parts.

- kill -9 of `tablectl run` at the instant the shoe reads a card's ACK, 20 times: every card the shoe saw
  ACKed is in the journal file, and the card the shoe was still repeating is dealt by the restarted service;
- a journal whose disk is full (SQLite fails with SQLITE_FULL) fail-stops the service without ACKing the card
  it could not journal, and nothing is ACKed after that; on a real full tmpfs under the subprocess too;
- a crash after the commit but before the ACK left: the shoe repeats the card, which must not be dealt twice.

Its e2e tests; the unit ones are in `tests/unit/core/test_ack_promise.py`, the integration ones in
`tests/integration/test_ack_promise.py`."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.chaos import Campaign, CampaignSettings, mount_tmpfs, unmount
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, wait_until
from controller.testing.table_process import (
    BASE,
    TABLE,
    ServiceProcess,
    draw,
    wait_event,
    write_config,
)
from drivers.line.fields import seq_text
from drivers.shoe.simulator import ShoeSimulator
from tests.helpers import ack_promise as shared
from tests.helpers.ack_promise import acked_cards, journal_rows

pytestmark = pytest.mark.e2e
shoe = shared.shoe  # a fixture (tests/helpers/ack_promise.py)


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
