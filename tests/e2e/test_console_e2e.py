"""The supervisor's console end to end: three real `tablectl run` processes on simulated shoes (real ptys), a
real Mosquitto that authenticates every client and confines it with an ACL, and the console in a real
headless Chromium, signed in with the supervisor's own broker user.

A shoe unplugged mid-round pauses its table; the console shows it within a second, in words, with what it
waits for; the supervisor resumes it from the console (not offered while the shoe is still out, which the
table would refuse; then accepted) and the table's events record that supervisor; a void asks for a reason
and a confirmation; and a supervisor whose broker user may not send commands sees the broker's refusal
(MQTT 5 PUBACK 0x87) as it came.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import expect

from controller.testing.console import (
    chromium,
    console_client,
    open_console,
    running_console,
    tile_order,
)
from controller.testing.mosquitto import MosquittoBroker, MqttRecorder, free_port, secured_broker, wait_until
from controller.testing.table_process import CARDS, TableProcess
from drivers.shoe.simulator import ShoeSimulator

pytestmark = pytest.mark.e2e

STUDIO = "s1"
TABLES = ("bac-1", "bac-2", "bac-3")
PASSWORDS = {
    **{f"table-{table}": f"pw-{table}" for table in TABLES},
    "supervisor-desk-1": "desk-1-pw",
    "viewer-1": "viewer-pw",
    "watcher": "watcher-pw",
}
PAUSED = re.compile(r"\bpaused\b")


def acl_text() -> str:
    lines = []
    for table in TABLES:
        root = f"studio/{STUDIO}/table/{table}"
        lines += [f"user table-{table}"]
        lines += [
            f"topic write {root}/{level}" for level in ("status", "state", "devices/+", "events/+", "result")
        ]
        lines += [
            f"topic write {root}/replies/#",
            f"topic read {root}/commands/#",
            f"topic read {root}/inputs/#",
        ]
        lines.append("")
    lines += [
        "user supervisor-desk-1",
        "topic read studio/#",
        "topic write studio/+/table/+/commands/+/supervisor-desk-1",
        "",
        "# may watch, may not send anything",
        "user viewer-1",
        "topic read studio/#",
        "",
        "user watcher",
        "topic read studio/#",
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[MosquittoBroker]:
    acl = tmp_path / "acl"
    acl.write_text(acl_text())
    secured = secured_broker(tmp_path / "broker", PASSWORDS, acl)
    secured.start()
    try:
        yield secured
    finally:
        secured.kill()


@pytest.fixture
async def studio(
    tmp_path: Path, broker: MosquittoBroker
) -> AsyncIterator[dict[str, tuple[TableProcess, ShoeSimulator]]]:
    tables: dict[str, tuple[TableProcess, ShoeSimulator]] = {}
    try:
        for table in TABLES:
            shoe = ShoeSimulator(cards=CARDS * 5, cut_position=None)
            port = await shoe.start_pty(str(tmp_path / f"{table}.pty"))
            process = TableProcess(tmp_path, broker, table, port, studio=STUDIO)
            process.start()
            tables[table] = (process, shoe)
        yield tables
    finally:
        codes = {table: process.stop() for table, (process, _) in tables.items()}
        for _, shoe in tables.values():
            await shoe.stop()
        logs = {table: process.log.read_text() for table, (process, _) in tables.items()}
        assert all(code == 0 for code in codes.values()), (codes, logs)


def root(table: str) -> str:
    return f"studio/{STUDIO}/table/{table}"


def events(recorder: MqttRecorder, table: str, kind: str = "#") -> list[dict[str, Any]]:
    return [m.json() for m in recorder.on(f"{root(table)}/events/{kind}")]


async def deal(recorder: MqttRecorder, table: str, shoe: ShoeSimulator, count: int) -> None:
    """The dealer draws `count` cards, each once the table has taken the one before."""
    for _ in range(count):
        before = len(events(recorder, table, "card.dealt"))
        await wait_until(shoe.draw, timeout=15, what=f"{table}'s shoe gate to open")
        await recorder.wait_for_count(f"{root(table)}/events/card.dealt", before + 1, timeout=15)


async def test_supervisor_sees_a_fault_within_a_second_resumes_voids_and_a_viewer_is_refused(
    broker: MosquittoBroker, studio: dict[str, tuple[TableProcess, ShoeSimulator]]
) -> None:
    async with (
        # viewer-1 is let in for this test: a user who may watch but not send
        running_console(broker.url, STUDIO, sign_in_users=["supervisor-*", "viewer-*"]) as console,
        MqttRecorder(
            broker, [f"studio/{STUDIO}/table/#"], protocol="5", username="watcher", password="watcher-pw"
        ) as watch,
        chromium() as browser,
    ):
        page, errors = await open_console(
            browser, console.url, "supervisor-desk-1", PASSWORDS["supervisor-desk-1"]
        )
        tiles = page.locator("#grid .tile")
        await expect(tiles).to_have_count(3, timeout=20_000)
        for table in TABLES:
            tile = page.locator(f'#grid .tile[data-table="{table}"]')
            await expect(tile.locator(".tile-link")).to_have_text("ONLINE", timeout=20_000)
            await expect(tile.locator('.chip[data-device="shoe"]')).to_have_text(
                "shoe online", timeout=20_000
            )

        # bac-2: its first round is played out (it began before the supervisor signed in); in the second
        # one, after its first card, the shoe's cable is pulled
        _, shoe2 = studio["bac-2"]
        await watch.wait_for_count(f"{root('bac-2')}/events/round.betting_closed", 1, timeout=20)
        await deal(watch, "bac-2", shoe2, 4)
        await watch.wait_for_count(f"{root('bac-2')}/events/round.betting_closed", 2, timeout=20)
        await deal(watch, "bac-2", shoe2, 1)
        await shoe2.unplug()
        paused = await watch.wait_for_message(
            f"{root('bac-2')}/events/round.paused", lambda m: True, timeout=15
        )
        seen_paused = time.monotonic()
        tile2 = page.locator('#grid .tile[data-table="bac-2"]')
        await expect(tile2).to_have_class(PAUSED, timeout=1000)
        shown_after = time.monotonic() - seen_paused
        assert shown_after < 1.0, shown_after
        reason = paused.json()["data"]["reason"]
        assert reason.startswith("shoe offline: ")
        # in a person's words on the tile; the driver's text once, in the details
        await expect(tile2.locator(".tile-alert")).to_contain_text(
            "PAUSED: Shoe disconnected — check its cable"
        )
        assert reason not in (await tile2.locator(".tile-alert").inner_text())
        await expect(tile2.locator('.chip[data-device="shoe"]')).to_have_text("shoe offline")
        assert (await tile_order(page))[0] == "bac-2"

        # the supervisor opens it: the round so far, step by step
        await tile2.click()
        await expect(page.locator("#d-pause-reason")).to_have_text(
            "PAUSED: Shoe disconnected — check its cable"
        )
        await expect(page.locator("#d-pause-tech")).to_have_text(
            f"Technical detail: {reason.removeprefix('shoe offline: ')}"
        )
        assert (await page.locator("#detail").inner_text()).count(reason.removeprefix("shoe offline: ")) == 1
        await expect(page.locator("#d-pause-detail")).to_contain_text("by device · device shoe")
        await expect(page.locator('#d-cards .place[data-position="player"] .card')).to_have_text(["2♣"])
        await expect(page.locator("#d-round-note")).to_be_hidden()
        story = page.locator("#d-round-events li .ev-type")
        await expect(story).to_have_text(
            ["round.opened", "round.betting_closed", "card.dealt", "device.offline", "round.paused"]
        )

        # while the shoe is still out a resume would be refused: it is not offered, and the pause says
        # what it waits for
        await expect(page.locator("#btn-resume")).to_be_disabled()
        await expect(page.locator("#d-pause-waits")).to_contain_text("Waiting for the shoe to be back online")
        outcome = page.locator("#d-outcome")

        # the shoe is back: resume, in the supervisor's own name
        await shoe2.replug()
        await expect(page.locator('#d-devices tr[data-device="shoe"] .dev-status')).to_have_text(
            "online", timeout=15_000
        )
        await expect(page.locator("#d-pause-waits")).to_contain_text("Ready to resume")
        await expect(page.locator("#btn-resume")).to_be_enabled()
        await page.click("#btn-resume")
        await expect(outcome).to_have_attribute("data-status", "ok")
        await expect(outcome).to_have_text("resume → bac-2: ok")
        resumed = await watch.wait_for_message(f"{root('bac-2')}/events/round.resumed", lambda m: True)
        assert resumed.json()["data"]["by"] == "supervisor-desk-1"
        assert resumed.json()["subject"] == paused.json()["subject"]
        await expect(tile2).not_to_have_class(PAUSED)
        history = page.locator("#d-history tbody tr")
        await expect(history.filter(has_text="resumed").locator(".who")).to_have_text("supervisor-desk-1")
        # the commands this supervisor sent, newest first, each with the table's reply
        sent = page.locator("#d-history tbody tr.console")
        await expect(sent.locator(".what")).to_have_text(["resume"])
        await expect(sent.locator(".who")).to_have_text(["supervisor-desk-1"])
        await expect(sent.nth(0).locator(".outcome")).to_have_text("ok")
        # and the round goes on to its result
        # (player 2C 4H = 6 stands, banker 3D TS = 3 draws: four more cards)
        await deal(watch, "bac-2", shoe2, 4)
        await watch.wait_for_count(f"{root('bac-2')}/events/round.result", 2, timeout=15)
        await expect(tile2.locator(".tile-result")).to_contain_text("PLAYER")

        # bac-3: a void needs a reason, and a confirmation
        await watch.wait_for_count(f"{root('bac-3')}/events/round.betting_closed", 1, timeout=20)
        await page.locator('#grid .tile[data-table="bac-3"]').click()
        await expect(page.locator("#d-table")).to_have_text("bac-3")
        await expect(page.locator("#d-round")).to_have_text(re.compile(r"^bac-3-\d+$"))
        round_id = await page.locator("#d-round").text_content()
        await page.click("#btn-void")
        await expect(page.locator("#btn-void-next")).to_be_disabled()
        await page.fill("#void-reason", "   ")
        await expect(page.locator("#btn-void-next")).to_be_disabled()
        await page.fill("#void-reason", "misdeal seen on camera")
        await page.click("#btn-void-next")
        await expect(page.locator("#void-question")).to_contain_text(f"Void round {round_id} of bac-3")
        await page.click("#btn-void-confirm")
        await expect(outcome).to_have_text("void_round → bac-3: ok")
        voided = await watch.wait_for_message(f"{root('bac-3')}/events/round.voided", lambda m: True)
        assert voided.json()["data"] == {
            **voided.json()["data"],
            "by": "supervisor-desk-1",
            "reason": "misdeal seen on camera",
            "round_id": round_id,
        }

        # a supervisor whose broker user may watch but not send: the broker's refusal, as it came
        viewer, viewer_errors = await open_console(browser, console.url, "viewer-1", PASSWORDS["viewer-1"])
        await expect(viewer.locator("#grid .tile")).to_have_count(3)
        # signed in after bac-2's last result: it is on the tile at once, from the table's retained copy
        await expect(viewer.locator('#grid .tile[data-table="bac-2"] .result-outcome')).to_have_text(
            re.compile(r"^→ (PLAYER|BANKER|TIE)\b")
        )
        await viewer.locator('#grid .tile[data-table="bac-1"]').click()
        await viewer.click("#btn-pause")
        await viewer.fill("#pause-reason", "checking the shoe")
        await viewer.click("#btn-pause-send")
        refused = viewer.locator("#d-outcome")
        await expect(refused).to_have_attribute("data-status", "refused")
        await expect(refused).to_have_text("pause → bac-1: refused by the broker: Not authorized (0x87)")
        assert events(watch, "bac-1", "round.paused") == []
        assert errors == [] and viewer_errors == []


async def test_sign_in_with_a_wrong_password_is_refused_by_the_broker(broker: MosquittoBroker) -> None:
    async with (
        running_console(
            broker.url, STUDIO, sign_in_attempts=2, sign_in_users=["supervisor-*", "viewer-*"]
        ) as console,
        chromium() as browser,
    ):
        page = await browser.new_page()
        await page.goto(console.url)
        await page.fill("#si-user", "supervisor-desk-1")
        await page.fill("#si-password", "not-the-password")
        await page.click("#btn-sign-in")
        await expect(page.locator("#si-error")).to_contain_text("the broker refused user 'supervisor-desk-1'")
        await page.click("#btn-sign-in")
        await page.click("#btn-sign-in")
        await expect(page.locator("#si-error")).to_contain_text("too many refused sign-ins")
        # nothing without a session
        async with console_client(console.url, "viewer-1", PASSWORDS["viewer-1"]) as client:
            assert (await client.get("/api/tables/bac-1")).status_code == 404
            client.cookies.clear()
            assert (await client.get("/api/tables/bac-1")).status_code == 401
            assert (await client.post("/api/tables/bac-1/commands/resume", json={})).status_code == 401


async def test_a_page_open_across_a_console_restart_reloads_itself_and_says_why(
    broker: MosquittoBroker,
) -> None:
    # before, the page fell to the sign-in dialog without a word, and signing in there answered "stale
    # page: reload it"; and the sign-in page showed a red "Broker: connecting…" before anyone signed in
    port = free_port()
    async with chromium() as browser:
        async with running_console(broker.url, STUDIO, port=port) as console:
            page = await browser.new_page()
            await page.goto(console.url)
            await expect(page.locator("#sign-in")).to_be_visible()
            await expect(page.locator("#link")).to_be_hidden()
            await page.fill("#si-user", "supervisor-desk-1")
            await page.fill("#si-password", PASSWORDS["supervisor-desk-1"])
            await page.click("#btn-sign-in")
            await expect(page.locator("#user-name")).to_have_text("Signed in as supervisor-desk-1")
            await expect(page.locator("#link-text")).to_have_text("connected")
            old_token = await page.locator('meta[name="console-token"]').get_attribute("content")
        async with running_console(broker.url, STUDIO, port=port):
            await expect(page.locator("#si-error")).to_have_text(
                "The console restarted: sign in again.", timeout=15_000
            )
            assert await page.locator('meta[name="console-token"]').get_attribute("content") != old_token
            assert page.url.endswith("/")  # the marker is not left in the address
            await page.fill("#si-user", "supervisor-desk-1")
            await page.fill("#si-password", PASSWORDS["supervisor-desk-1"])
            await page.click("#btn-sign-in")
            await expect(page.locator("#user-name")).to_have_text("Signed in as supervisor-desk-1")
            await expect(page.locator("#link-text")).to_have_text("connected")
