"""A short run of the fault-injection campaign (`bench/chaos.py`, the same code): every kind of fault, at
random moments, against the real service, shoe pty and Mosquitto; no check may find a violation.

Its e2e tests; the unit ones are in `tests/unit/core/test_chaos_short.py`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.chaos import KINDS, Campaign, CampaignSettings, markdown

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(600)
async def test_a_short_chaos_campaign_finds_no_violation(tmp_path: Path) -> None:
    campaign = Campaign(CampaignSettings(faults=30, seed=2026, workdir=tmp_path))
    report = await campaign.run()
    (tmp_path / "report.json").write_text(json.dumps(report, indent=2))
    assert report["violations"] == [], markdown(report)
    assert sum(report["injected"].values()) == 30
    kinds = set(KINDS) if campaign.tmpfs else set(KINDS) - {"disk_full"}
    assert set(report["injected"]) == kinds, report["injected"]
    # every ACKed card is journaled: dealt, rejected into a round voided meanwhile, or held by a pause
    # still waiting for its resume at the stop (the card-by-card match is the "ack promise" check above)
    kept = (
        report["cards_journaled"] + report["cards_rejected_in_voided_rounds"] + report["cards_held_at_stop"]
    )
    assert report["cards_acked"] == kept, (report["cards_acked"], kept)
    assert report["cards_journaled"] > 30
    assert report["rounds_checked_against_reference"] > 5
    assert report["mid_round_crashes"] > 0
    assert report["exit_codes"]["final stop: exit 0"] == 1


@pytest.mark.timeout(400)
async def test_a_kill_right_after_the_restarts_first_commit_loses_no_card(tmp_path: Path) -> None:
    # the aimed fault: the restarted service's first line is often the shoe's repeat of a card in flight;
    # killed right after the commit that took the shoe online, it must have committed that card with it
    settings = CampaignSettings(faults=8, seed=3, kinds=("kill_at_restart_repeat",), workdir=tmp_path)
    campaign = Campaign(settings)
    report = await campaign.run()
    (tmp_path / "report.json").write_text(json.dumps(report, indent=2))
    assert report["violations"] == [], markdown(report)
    assert report["restart_kills_after_first_commit"] >= 6, report
    assert report["restarts_whose_first_commit_was_a_card"] >= 2, report
