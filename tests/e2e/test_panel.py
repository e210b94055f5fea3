"""The dealer's touch panel, end to end: a real TableService with a simulated shoe on a pty and a real
Mosquitto, the panel served by uvicorn, and a real headless Chromium (Playwright) tapping the screen.

What the dealer sees must follow the table live (Server-Sent Events, no reload), and what the dealer can do
is exactly: call the supervisor (pause), enter a card by hand, close betting, load a new shoe. Every card game
is drawn from the same `positions` view (baccarat, andar bahar, stud), and its cards must stay on screen and
readable on the kiosk's screens (1280x800, 1920x1080), up to stud's 7 hands and the dealer.

Its e2e tests; the unit ones are in `tests/unit/core/test_panel.py`, the integration ones in
`tests/integration/test_panel.py`."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from controller.testing.console import chromium
from controller.testing.mosquitto import wait_until
from tests.helpers import panel as shared
from tests.helpers.panel import (
    CARDS,
    DEALER,
    DEALER_IDENTITY,
    ONE_DECK,
    PIN,
    Table,
    TableFactory,
    dealer_client,
)

pytestmark = pytest.mark.e2e
start_table = shared.start_table  # a fixture (tests/helpers/panel.py)


def deck_starting_with(*first: str) -> list[str]:
    """One whole deck, `first` on top (as dealt), the rest in a fixed order."""
    assert len(set(first)) == len(first) and set(first) <= set(ONE_DECK)
    return [*first, *(code for code in ONE_DECK if code not in first)]


# Andar Bahar: the game card 7H, then 20 cards without a 7 alternating Andar, Bahar, ..., then 7S to
# Andar (the 21st card): Andar wins with 11 cards against 10 — a long round, to see two long rows.
AB_NO_SEVENS = ["2C", "TD", "KS", "3H", "QD", "4C", "JH", "5S", "9D", "6C"]
AB_NO_SEVENS += ["8H", "AS", "2D", "TH", "KC", "3S", "QH", "4D", "JS", "5C"]
ANDAR_BAHAR_DECK = deck_starting_with("7H", *AB_NO_SEVENS, "7S")
# Stud with 3 hands, dealt round the hands five times, then the dealer: pairs of 2s, 3s and 4s against the
# dealer's pair of aces.
STUD_DEALING = ["2C", "3C", "4C", "2D", "3D", "4D", "5H", "6H", "7H", "8S", "9S", "TS", "JC", "QC", "KC"]
STUD_DECK = deck_starting_with(*STUD_DEALING, "AS", "AH", "9D", "6C", "5D")
UI_TIMEOUT_MS = 10_000
expect.set_options(timeout=UI_TIMEOUT_MS)


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as launched:  # the system's Chromium, never a downloaded one
        yield launched


async def open_panel(
    browser: Browser, table: Table, width: int = 1280, height: int = 800
) -> tuple[Page, list[str]]:
    """The panel on a kiosk-sized screen, and the list its uncaught JavaScript errors go to."""
    page = await browser.new_page(viewport={"width": width, "height": height})
    js_errors: list[str] = []
    page.on("pageerror", lambda error: js_errors.append(str(error)))
    await page.goto(table.url)
    await page.evaluate("window.loadedOnce = true")  # gone if the page ever reloads
    page.set_default_timeout(UI_TIMEOUT_MS)
    # nobody acts on the table before signing in: the sign-in covers the panel until then
    await page.fill("#dealer-id", DEALER)
    await page.fill("#dealer-pin", PIN)
    await page.click("#btn-sign-in")
    await expect(page.locator("#sign-in")).to_be_hidden()
    await expect(page.locator("#dealer-name")).to_have_text(f"Dealer {DEALER}")
    return page, js_errors


async def draw(table: Table, count: int = 1) -> None:
    """The dealer pulls the next card(s) (the gate opens a moment after the prompt appears)."""
    for _ in range(count):
        await wait_until(table.device.draw, timeout=10, what="the shoe's gate to open for a draw")


async def wait_dealt(table: Table, count: int) -> None:
    """Until the table has taken `count` cards (draws go faster than the table reads them)."""
    await wait_until(
        lambda: len([e for e in table.events if e.type == "card.dealt"]) >= count,
        timeout=10,
        what=f"{count} cards dealt",
    )


# Everything a card panel shows must be on screen, whole: every card and slot inside its place's box (no
# scrolling), every place inside the table's area and clear of the others, and in a fan each card's corner
# index clear of the card that covers the rest of it. Returns what is wrong, and the smallest rank's size.
LAYOUT_PROBLEMS_JS = """() => {
  const problems = [];
  const inside = (inner, outer) => inner.left >= outer.left - 1 && inner.right <= outer.right + 1
    && inner.top >= outer.top - 1 && inner.bottom <= outer.bottom + 1;
  const area = document.getElementById("positions").getBoundingClientRect();
  const actions = document.getElementById("actions").getBoundingClientRect();
  if (area.bottom > actions.top + 1) problems.push("the places run under the buttons");
  const hands = [...document.querySelectorAll("#positions .hand")];
  hands.forEach((hand, i) => {
    const box = hand.getBoundingClientRect();
    if (!inside(box, area)) problems.push(`${hand.id} is outside the table's area`);
    hands.slice(i + 1).forEach((other) => {
      const o = other.getBoundingClientRect();
      const apart = box.right <= o.left + 1 || o.right <= box.left + 1
        || box.bottom <= o.top + 1 || o.bottom <= box.top + 1;
      if (!apart) problems.push(`${hand.id} overlaps ${other.id}`);
    });
    const name = hand.querySelector(".hand-name");
    if (name.scrollWidth > name.clientWidth + 1) problems.push(`${hand.id}: its name is cut`);
  });
  let smallestRank = Infinity;
  for (const row of document.querySelectorAll("#positions .cards")) {
    if (row.scrollHeight > row.clientHeight + 1) problems.push(`${row.id} scrolls`);
    const rowBox = row.getBoundingClientRect();
    const items = [...row.children];
    items.forEach((item, i) => {
      const box = item.getBoundingClientRect();
      const what = `${row.id} ${item.dataset.code || "slot"}`;
      if (!inside(box, rowBox)) problems.push(`${what} is outside its box`);
      if (box.height < 40) problems.push(`${what} is too small (${box.height}px high)`);
      const rank = item.querySelector(".rank");
      if (!rank) return;
      smallestRank = Math.min(smallestRank, parseFloat(getComputedStyle(rank).fontSize));
      const next = items[i + 1];
      if (next && Math.abs(next.getBoundingClientRect().top - box.top) < 1) {
        const covering = next.getBoundingClientRect().left;
        for (const index of item.querySelectorAll(".rank, .suit")) {
          const range = document.createRange();
          range.selectNodeContents(index);
          const right = range.getBoundingClientRect().right;
          if (right > covering + 1) problems.push(`${what}: its index is covered`);
        }
      }
    });
  }
  return { problems, smallestRank };
}"""


async def assert_cards_readable(page: Page, smallest_rank_px: float) -> None:
    layout = await page.evaluate(LAYOUT_PROBLEMS_JS)
    assert layout["problems"] == [], layout["problems"]
    assert layout["smallestRank"] >= smallest_rank_px, layout


# -- through the dealer's screen ----------------------------------------------------------------------------


async def test_dealer_follows_the_round_live_enters_a_card_by_hand_and_calls_the_supervisor(
    start_table: TableFactory, browser: Browser, tmp_path: Path
) -> None:
    table = await start_table(betting_seconds=1.0)
    page, js_errors = await open_panel(browser, table)
    prompt = page.locator("#prompt")

    await expect(page.locator("#table-id")).to_have_text("bac-panel")
    await expect(prompt).to_have_text("Deal to Player")
    await expect(page.locator("#positions .hand-name")).to_have_text(["Player", "Banker"])
    await expect(page.locator("#hand-player")).to_have_class("hand next")
    await expect(page.locator('#devices .chip[data-device="shoe"]')).to_have_class("chip online")
    round_id = table.service.core.flow.rounds.round_id
    assert round_id is not None
    await expect(page.locator("#round-id")).to_have_text(round_id)
    await expect(page.locator("#round-number")).to_have_text("1")

    # a card drawn from the shoe appears without a reload
    await draw(table)
    player_cards = page.locator("#player-cards .card")
    await expect(player_cards).to_have_count(1)
    await expect(player_cards.first).to_have_attribute("data-code", "9S")
    await expect(player_cards.first).to_have_text("9♠")
    await expect(player_cards.first).not_to_have_class("card red")
    await expect(page.locator("#player-total")).to_have_text("9")
    await expect(prompt).to_have_text("Deal to Banker")
    await expect(page.locator("#hand-banker")).to_have_class("hand next")
    await expect(page.locator("#hand-player")).to_have_class("hand")

    # a card is expected, but the shoe reads it: nothing offers to choose it by hand
    manual = page.locator("#btn-manual")
    await expect(manual).to_be_hidden()

    # the scanner cannot read the next card: re-scan prompt, and the picker is offered prominently
    table.device.force_noread()
    await draw(table)
    await expect(prompt).to_have_text("Re-scan the card")
    await expect(manual).to_be_visible()
    await expect(manual).to_have_class("action urgent")

    # a card the shoe cannot hold, entered by hand, is refused: the reason shows in red, nothing is dealt
    await manual.click()
    await expect(page.locator("#card-picker")).to_be_visible()
    await expect(page.locator("#picker-hint")).to_have_text(
        "The scanner could not read the card. Next card → Banker"
    )
    await page.click('#rank-grid button[data-rank="9"]')
    await page.click('#suit-grid button[data-suit="S"]')
    await page.click("#btn-deal")
    refused = page.locator(".toast.error").first
    await expect(refused).to_contain_text("already came out 1 times")
    assert await refused.evaluate("node => getComputedStyle(node).backgroundColor") == "rgb(176, 14, 9)"
    await expect(page.locator("#banker-cards .card")).to_have_count(0)
    await expect(page.locator("#card-picker")).to_be_visible()  # the unread card still waits: try again
    await page.click('#rank-grid button[data-rank="8"]')
    await page.click('#suit-grid button[data-suit="D"]')
    await expect(page.locator("#btn-deal")).to_have_text("Deal 8♦")
    await page.click("#btn-deal")
    await expect(page.locator("#card-picker")).to_be_hidden()
    banker_cards = page.locator("#banker-cards .card")
    await expect(banker_cards).to_have_count(1)
    await expect(banker_cards.first).to_have_attribute("data-code", "8D")
    await expect(banker_cards.first).to_have_class("card red")
    await expect(page.locator(".toast.ok").first).to_have_text("Card 8♦ entered")
    await expect(prompt).to_have_text("Deal to Player")
    dealt = [e.data for e in table.events if e.type == "card.dealt"]
    assert [(d["card"], d["position"]) for d in dealt] == [("9S", "player"), ("8D", "banker")]
    assert "manual_card 8D" in dealt[1]["raw"]
    assert (dealt[0]["manual"], dealt[1]["manual"]) == (False, True)
    await expect(manual).to_be_hidden()  # the unread card is settled: the next one comes from the shoe

    # "Call supervisor" asks for a confirming tap (the reason), then pauses the table in the dealer's name
    await page.click("#btn-supervisor")
    await expect(page.locator("#pause-dialog")).to_be_visible()
    assert not table.service.core.paused, "the first tap alone must not pause the table"
    await page.click('#pause-reasons button[data-reason="card problem"]')
    banner = page.locator("#pause-banner")
    await expect(banner).to_be_visible()
    await expect(page.locator("#pause-text")).to_have_text("PAUSED: The dealer called the supervisor")
    await expect(page.locator("#pause-wait")).to_have_text("Do not deal — wait for the supervisor")
    await expect(page.locator("#phase")).to_have_text("PAUSED")
    await expect(page.locator("#btn-supervisor")).to_be_disabled()
    await expect(page.locator("#btn-manual")).to_be_hidden()
    pause = table.service.core.pause
    assert pause is not None and pause.by == DEALER_IDENTITY
    paused = [e.data for e in table.events if e.type == "round.paused"]
    assert paused == [{**paused[0], "round_id": round_id, "by": DEALER_IDENTITY, "device": None}]

    # the kiosk screen as the dealer sees it
    await page.screenshot(path=str(tmp_path / "panel-paused.png"))
    await assert_cards_readable(page, smallest_rank_px=60)
    assert (tmp_path / "panel-paused.png").stat().st_size > 10_000
    assert await page.evaluate("window.loadedOnce === true"), "the page reloaded"
    assert js_errors == []


async def test_panel_shows_connection_lost_and_reconnects_by_itself(
    start_table: TableFactory, browser: Browser
) -> None:
    table = await start_table(betting_seconds=30.0)
    page, js_errors = await open_panel(browser, table)
    await expect(page.locator("#prompt")).to_have_text("Betting open — do not deal yet")
    await expect(page.locator("#countdown")).to_contain_text("closes in")
    # baccarat names the next hand all round long; while bets are taken no card comes out: no highlight
    await expect(page.locator("#positions .hand.next")).to_have_count(0)
    await expect(page.locator("#btn-manual")).to_be_hidden()

    await table.stop_panel()
    await expect(page.locator("#connection-lost")).to_be_visible()
    await expect(page.locator("#connection-lost")).to_have_text(
        "Connection to the table lost — reconnecting…"
    )
    # the last prompt is not left on screen as if it were still true: the panel says it does not know
    await expect(page.locator("#prompt")).to_contain_text("the panel does not know what to deal")

    table.start_panel()
    await expect(page.locator("#connection-lost")).to_be_hidden()
    # and it is live again: closing betting from the panel shows the new prompt through the new stream
    await page.click("#btn-close-betting")
    await expect(page.locator(".toast.ok").first).to_have_text("Betting closed")
    await expect(page.locator("#prompt")).to_have_text("Deal to Player")
    await expect(page.locator("#btn-close-betting")).to_be_hidden()
    closed = [e.data for e in table.events if e.type == "round.betting_closed"]
    assert [c["reason"] for c in closed] == ["input"]
    assert await page.evaluate("window.loadedOnce === true"), "the page reloaded"
    assert js_errors == []


async def test_pause_banner_follows_the_device_and_always_says_what_to_do_now(
    start_table: TableFactory, browser: Browser
) -> None:
    table = await start_table(betting_seconds=30.0)
    page, js_errors = await open_panel(browser, table, 1024, 600)
    await expect(page.locator("#prompt")).to_have_text("Betting open — do not deal yet")
    table.device.fault("COVER_OPEN")
    await expect(page.locator("#pause-text")).to_have_text("PAUSED: Shoe cover is open — close the cover")
    await expect(page.locator("#pause-action")).to_have_text("Close the cover, then wait for the supervisor")
    await expect(page.locator("#pause-wait")).to_have_text("Do not deal — wait for the supervisor")
    await expect(page.locator("#pause-detail")).to_contain_text("waiting for the shoe to be back online")
    await expect(page.locator("#prompt-box")).to_be_hidden()
    # the cover is closed: the banner follows the chip beside it, and still says not to deal
    table.device.clear_fault()
    await expect(page.locator('.chip[data-device="shoe"] .chip-status')).to_have_text("online")
    await expect(page.locator("#pause-text")).to_have_text(
        "PAUSED: Shoe was interrupted and is back — the supervisor decides"
    )
    await expect(page.locator("#pause-action")).to_be_hidden()
    await expect(page.locator("#pause-wait")).to_be_visible()
    await expect(page.locator("#pause-detail")).not_to_contain_text("waiting for")
    await expect(page.locator("#pause-banner")).not_to_contain_text("cover is open")
    # the Sign out button is a touch target like the others
    box = await page.locator("#btn-sign-out").bounding_box()
    assert box is not None and box["height"] >= 64 and box["width"] >= 64, box
    assert js_errors == []


async def test_new_shoe_is_offered_when_the_shoe_is_finished_and_loads_one(
    start_table: TableFactory, browser: Browser
) -> None:
    # the cut card comes out before the second card: the first round is the shoe's last
    table = await start_table(cut_position=len(CARDS) * 2 - 1, settings={"auto_new_shoe": False})
    page, js_errors = await open_panel(browser, table)
    await expect(page.locator("#prompt")).to_have_text("Deal to Player")
    await expect(page.locator("#btn-new-shoe")).to_be_hidden()
    for _ in range(4):  # 9S 8D KC 5H: a natural, the hand is complete
        await draw(table)
    await expect(page.locator("#prompt")).to_have_text(
        "Natural — Player wins 9 to 3. Shoe finished: load a new shoe"
    )
    await expect(page.locator("#shoe-info")).to_contain_text("SHOE FINISHED")
    await page.click("#btn-new-shoe")
    await expect(page.locator(".toast.ok").first).to_have_text("New shoe loaded")
    await expect(page.locator("#btn-new-shoe")).to_be_hidden()
    await expect(page.locator("#shoe-info")).to_contain_text("Shoe bac-panel-shoe0002")
    assert [e.data["shoe_id"] for e in table.events if e.type == "shoe.started"] == [
        "bac-panel-shoe0001",
        "bac-panel-shoe0002",
    ]
    assert js_errors == []


async def test_roulette_view_shows_the_wheels_last_number_with_its_colour(
    start_table: TableFactory, browser: Browser
) -> None:
    table = await start_table(betting_seconds=1.0, game="roulette")
    page, js_errors = await open_panel(browser, table)
    await expect(page.locator("#roulette-view")).to_be_visible()
    await expect(page.locator("#cards-view")).to_be_hidden()
    await expect(page.locator("#btn-manual")).to_be_hidden()
    await wait_until(lambda: "round.result" in table.event_types(), timeout=20, what="a spin's result")
    # freeze the table (the wheel goes on by itself) so that what the screen shows can be compared exactly
    async with dealer_client(table) as client:
        # markup in a reason (typed by anyone) is shown as text, never interpreted
        paused = await client.post("/api/commands/pause", json={"reason": "checking <b>the</b> screen"})
    assert paused.status_code == 200, paused.json()
    result = [e.data for e in table.events if e.type == "round.result"][-1]
    game_state = table.service.public_state()["game_state"]
    assert game_state["last_result"] == {"number": result["number"], "color": result["color"]}
    pocket = page.locator("#last-number")
    await expect(pocket).to_have_text(str(result["number"]))
    await expect(pocket).to_have_attribute("data-color", result["color"])
    await expect(page.locator("#last-color")).to_have_text(result["color"])
    await expect(page.locator("#spin")).to_have_text(str(game_state["spin"]))
    await expect(page.locator("#direction")).to_have_text(game_state["wheel_direction"])
    await expect(page.locator("#pause-text")).to_have_text("PAUSED: The dealer called the supervisor")
    # the reason the dealer gave is shown as text, never as markup
    await expect(page.locator("#pause-detail")).to_contain_text("checking <b>the</b> screen")
    await expect(page.locator("#pause-banner b")).to_have_count(0)
    colours = {"red": "rgb(200, 16, 46)", "black": "rgb(17, 17, 17)", "green": "rgb(10, 138, 58)"}
    background = await pocket.evaluate("node => getComputedStyle(node).backgroundColor")
    assert background == colours[result["color"]]
    assert js_errors == []


async def test_roulette_counts_down_to_the_launch_while_betting_is_open(
    start_table: TableFactory, browser: Browser
) -> None:
    # user start (the default): the table asks the wheel to launch `betting_seconds` after the round opened
    table = await start_table(betting_seconds=20.0, game="roulette")
    page, js_errors = await open_panel(browser, table)
    await wait_until(lambda: "round.opened" in table.event_types(), timeout=20, what="a round")
    countdown = page.locator("#countdown")
    await expect(countdown).to_have_text(re.compile(r"^ball launch in (1[0-9]|20) s$"))
    game_state = table.service.public_state()["game_state"]
    assert game_state["launch_at"] is not None
    # the dealer closes betting: the launch is asked at once, nothing is left to count down
    async with dealer_client(table) as client:
        closed = await client.post("/api/inputs/close_betting", json={})
    assert closed.status_code == 200, closed.json()
    await expect(countdown).to_be_hidden()
    assert js_errors == []


async def test_andar_bahar_game_card_first_then_andar_and_bahar_in_turn(
    start_table: TableFactory, browser: Browser, tmp_path: Path
) -> None:
    table = await start_table(
        betting_seconds=30.0,
        game="andar_bahar",
        cards=ANDAR_BAHAR_DECK,
        settings={"round_gap_seconds": 60.0},
    )
    page, js_errors = await open_panel(browser, table)
    prompt = page.locator("#prompt")
    game_place, andar, bahar = (page.locator(f"#hand-{name}") for name in ("game", "andar", "bahar"))

    # between rounds the game card is asked for: it is where the next card goes, no betting yet
    await expect(prompt).to_have_text("Draw the game card")
    await expect(page.locator("#game-name")).to_have_text("Andar Bahar")
    await expect(page.locator("#positions .hand-name")).to_have_text(["Game card", "Andar", "Bahar"])
    await expect(game_place).to_have_class("hand next")
    await expect(page.locator("#positions .hand.next")).to_have_count(1)
    await expect(page.locator("#game-cards .slot")).to_have_count(1)
    await expect(page.locator("#btn-manual")).to_be_hidden()  # the shoe reads the game card: no picker
    await expect(page.locator("#btn-close-betting")).to_be_hidden()
    await expect(page.locator("#btn-new-shoe")).to_be_hidden()
    await expect(page.locator("#round-number-box")).to_be_hidden()

    # the game card opens the round: it shows in its place, betting opens with a countdown, nothing is next
    await draw(table)
    game_cards = page.locator("#game-cards .card")
    await expect(game_cards).to_have_count(1)
    await expect(game_cards.first).to_have_attribute("data-code", "7H")
    await expect(game_cards.first).to_have_text("7♥")
    await expect(game_cards.first).to_have_class("card red")
    # the flow publishes "7H"; the dealer reads "7♥"
    await expect(prompt).to_have_text("Game card 7♥ — betting open, do not deal yet")
    await expect(page.locator("#positions .hand.next")).to_have_count(0)
    await expect(page.locator("#countdown")).to_contain_text("closes in")
    await expect(page.locator("#btn-manual")).to_be_hidden()
    round_id = table.service.core.flow.rounds.round_id
    assert round_id is not None
    await expect(page.locator("#round-id")).to_have_text(round_id)

    # the dealer closes betting: the next card goes to Andar, and appears there
    await page.click("#btn-close-betting")
    await expect(prompt).to_have_text("Deal to Andar")
    await expect(andar).to_have_class("hand next")
    await expect(game_place).to_have_class("hand")
    await expect(page.locator("#countdown")).to_be_hidden()
    await expect(page.locator("#btn-close-betting")).to_be_hidden()
    await draw(table)
    andar_cards = page.locator("#andar-cards .card")
    await expect(andar_cards).to_have_count(1)
    await expect(andar_cards.first).to_have_attribute("data-code", "2C")
    await expect(andar_cards.first).to_have_text("2♣")
    await expect(prompt).to_have_text("Deal to Bahar")
    await expect(bahar).to_have_class("hand next")
    await expect(andar).to_have_class("hand")
    await draw(table)  # a ten shows as "10", in red
    bahar_cards = page.locator("#bahar-cards .card")
    await expect(bahar_cards.first).to_have_text("10♦")
    await expect(bahar_cards.first).to_have_class("card red")
    await expect(andar).to_have_class("hand next")

    # a long round: every card stays on screen, in its row, its corner readable
    await draw(table, len(AB_NO_SEVENS) - 2)
    await expect(page.locator("#shoe-info")).to_contain_text("20 cards dealt")
    await expect(andar_cards).to_have_count(10)
    await expect(bahar_cards).to_have_count(10)
    await expect(andar).to_have_class("hand next")
    await page.screenshot(path=str(tmp_path / "andar-bahar-1280x800.png"))
    await assert_cards_readable(page, smallest_rank_px=24)
    await draw(table)
    await expect(prompt).to_have_text(
        "Andar wins — 7♠ matches 7♥ (21 cards). Collect the cards and take the shuffled deck"
    )
    await expect(andar_cards.last).to_have_attribute("data-code", "7S")
    await expect(page.locator("#positions .hand.next")).to_have_count(0)
    await expect(page.locator("#btn-manual")).to_be_hidden()
    dealt = [(e.data["card"], e.data["position"]) for e in table.events if e.type == "card.dealt"]
    assert dealt[:4] == [("7H", "game"), ("2C", "andar"), ("TD", "bahar"), ("KS", "andar")]
    assert len(dealt) == 22
    await page.set_viewport_size({"width": 1920, "height": 1080})
    await page.screenshot(path=str(tmp_path / "andar-bahar-1920x1080.png"))
    await assert_cards_readable(page, smallest_rank_px=32)
    assert js_errors == []


async def test_stud_hands_and_dealer_with_the_next_card_going_round_the_hands(
    start_table: TableFactory, browser: Browser, tmp_path: Path
) -> None:
    table = await start_table(
        betting_seconds=1.0,
        game="stud",
        cards=STUD_DECK,
        settings={"hands": 3, "decision_seconds": 2.0, "round_gap_seconds": 60.0},
    )
    page, js_errors = await open_panel(browser, table)
    prompt = page.locator("#prompt")
    await expect(page.locator("#game-name")).to_have_text("5 Card Stud")
    await expect(page.locator("#positions .hand-name")).to_have_text(["Hand 1", "Hand 2", "Hand 3", "Dealer"])
    await expect(prompt).to_have_text("Deal to Hand 1")
    next_place = page.locator("#positions .hand.next")

    # one card at a time round the hands, the highlight (and the slot) moving with it
    for dealt, (hand, card) in enumerate(zip([1, 2, 3, 1], STUD_DEALING[:4], strict=True)):
        await expect(next_place).to_have_count(1)
        await expect(next_place).to_have_attribute("id", f"hand-hand{hand}")
        await expect(page.locator(f"#hand{hand}-cards .slot")).to_have_count(1)
        await draw(table)
        await wait_dealt(table, dealt + 1)
        await expect(page.locator(f"#hand{hand}-cards .card").last).to_have_attribute("data-code", card)
    await expect(prompt).to_have_text("Deal to Hand 2")

    # the hands complete, the dealer's first card: the players decide, with their countdown, nothing is next
    await draw(table, len(STUD_DEALING) - 4)
    await expect(next_place).to_have_attribute("id", "hand-dealer")
    await expect(prompt).to_have_text("Deal to Dealer")
    for hand, first in ((1, "2C"), (2, "3C"), (3, "4C")):
        cards = page.locator(f"#hand{hand}-cards .card")
        await expect(cards).to_have_count(5)
        await expect(cards.first).to_have_attribute("data-code", first)
    await page.screenshot(path=str(tmp_path / "stud-3-1280x800.png"))
    await assert_cards_readable(page, smallest_rank_px=30)
    await draw(table)
    await expect(prompt).to_have_text("Players decide: bet or fold — do not deal")
    countdown = page.locator("#countdown")
    await expect(countdown).to_have_text(re.compile(r"^decisions close in [012] s$"))
    await expect(next_place).to_have_count(0)
    await expect(page.locator("#btn-manual")).to_be_hidden()
    await expect(page.locator("#btn-close-betting")).to_be_hidden()
    await page.screenshot(path=str(tmp_path / "stud-3-deciding.png"))

    # the decision window runs out: the dealer's four other cards, then the result
    await expect(prompt).to_have_text("Deal to Dealer")
    await expect(countdown).to_be_hidden()
    await expect(next_place).to_have_attribute("id", "hand-dealer")
    await draw(table, 4)
    await expect(prompt).to_have_text(
        "Dealer has one pair (qualifies) — Hand 1 loses, Hand 2 loses, Hand 3 loses"
    )
    await expect(page.locator("#dealer-cards .card")).to_have_count(5)
    await expect(next_place).to_have_count(0)
    assert js_errors == []


async def test_stud_with_seven_hands_fits_both_kiosk_screens(
    start_table: TableFactory, browser: Browser, tmp_path: Path
) -> None:
    table = await start_table(
        betting_seconds=0.5, game="stud", settings={"hands": 7, "round_gap_seconds": 60.0}
    )
    page, js_errors = await open_panel(browser, table)
    await expect(page.locator("#positions .hand")).to_have_count(8)
    await expect(page.locator("#prompt")).to_have_text("Deal to Hand 1")
    # 33 of the 35 hand cards: hands 1-5 complete, 6 and 7 have four, the next card goes to hand 6
    await draw(table, 33)
    await wait_dealt(table, 33)
    await expect(page.locator("#prompt")).to_have_text("Deal to Hand 6")
    await expect(page.locator("#positions .hand.next")).to_have_attribute("id", "hand-hand6")
    await expect(page.locator("#positions .card")).to_have_count(33)
    await page.screenshot(path=str(tmp_path / "stud-7-1280x800.png"))
    await assert_cards_readable(page, smallest_rank_px=28)
    await page.set_viewport_size({"width": 1920, "height": 1080})
    await expect(page.locator("#positions .card")).to_have_count(33)
    await page.screenshot(path=str(tmp_path / "stud-7-1920x1080.png"))
    await assert_cards_readable(page, smallest_rank_px=40)
    assert js_errors == []


async def stream_state(page: Page, table: Table, state: dict[str, object]) -> None:
    """From now on the page's live stream sends `state` (a state this table's flow would not reach here)."""
    stream = f"event: state\ndata: {json.dumps(state)}\n\n"
    await page.route(
        "**/api/stream",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=stream),
    )
    await table.stop_panel()  # the page's live stream ends; its next one is `state`
    table.start_panel()


async def test_a_face_down_card_is_drawn_as_a_card_back(start_table: TableFactory, browser: Browser) -> None:
    # blackjack's hole card is published as the face-down code: the panel draws its back, not the code
    table = await start_table(betting_seconds=30.0)
    page, js_errors = await open_panel(browser, table)
    await expect(page.locator("#prompt")).to_have_text("Betting open — do not deal yet")
    state = table.service.public_state()
    state["game_state"]["positions"][1]["cards"] = ["9S", "XX"]
    await stream_state(page, table, state)
    back = page.locator('#positions .card[data-code="XX"]')
    await expect(back).to_have_count(1)
    await expect(back).to_have_class("card back")
    await expect(back).to_have_text("")
    await expect(back).to_have_attribute("aria-label", "face-down card")
    assert js_errors == []


def dice_state(table: Table, stage: str) -> dict[str, object]:
    state = table.service.public_state()
    read = {"frame": "f1.png", "dice": [{"box": [10, 10, 60, 60], "value": 3}], "values": [3, 4, 5]}
    game = {"stage": stage, "camera": "dice_camera", "cycle_id": "c2", "reshakes": 0, "last_read": read}
    return {**state, "game": "sicbo", "view": {"kind": "dice"}, "game_state": game, "paused": False}


@pytest.mark.parametrize(("width", "height"), [(1024, 600), (1280, 800)])
async def test_sic_bo_camera_frame_is_whole_and_the_last_read_shrinks_during_the_next_shake(
    start_table: TableFactory, browser: Browser, width: int, height: int
) -> None:
    table = await start_table(betting_seconds=30.0)
    page, js_errors = await open_panel(browser, table, width, height)
    await stream_state(page, table, dice_state(table, "reading"))
    await expect(page.locator("#dice-view")).to_be_visible()
    boxes = await page.evaluate(
        """() => Object.fromEntries(["dice-frame", "prompt-box", "actions"].map(
             (id) => [id, document.getElementById(id).getBoundingClientRect().toJSON()]))"""
    )
    frame, prompt, actions = boxes["dice-frame"], boxes["prompt-box"], boxes["actions"]
    assert frame["top"] >= prompt["bottom"] and frame["bottom"] <= actions["top"], boxes
    assert frame["left"] >= 0 and frame["right"] <= width and frame["height"] > 150, boxes
    assert abs(frame["width"] / frame["height"] - 4 / 3) < 0.02, frame  # the camera's own shape
    big = frame["width"]
    await stream_state(page, table, dice_state(table, "shaking"))
    await expect(page.locator("#dice-view")).to_have_class(re.compile(r"\bprevious\b"))
    small = await page.locator("#dice-frame").evaluate("node => node.getBoundingClientRect().width")
    assert small < big * 0.7, (small, big)
    assert js_errors == []
