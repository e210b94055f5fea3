"""The dealer's touch panel, end to end: a real TableService with a simulated shoe on a pty and a real
Mosquitto, the panel served by uvicorn, and a real headless Chromium (Playwright) tapping the screen.

What the dealer sees must follow the table live (Server-Sent Events, no reload), and what the dealer can do
is exactly: call the supervisor (pause), enter a card by hand, close betting, load a new shoe. Every card game
is drawn from the same `positions` view (baccarat, andar bahar, stud), and its cards must stay on screen and
readable on the kiosk's screens (1280x800, 1920x1080), up to stud's 7 hands and the dealer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from controller.config import PanelSettings
from controller.events import Envelope
from controller.panel import app as panel_app
from controller.panel import serve_panel
from controller.panel.app import StateSubscription, new_auth
from controller.panel.auth import PanelAuth
from controller.pins import hash_pin
from controller.service import TableService
from controller.table_build import TABLE_CONFIGS
from controller.testing.console import chromium
from controller.testing.mosquitto import HOST, MosquittoBroker, free_port, wait_until
from drivers.shoe.simulator import ShoeSimulator
from drivers.wheel.simulator import WheelSimulator

# Player 9S, Banker 8D (read as NOREAD, entered by hand), Player KC, Banker 5H
CARDS = ["9S", "8D", "KC", "5H", "2C", "3D", "4H", "TS", "AS", "QD"]
ONE_DECK = [rank + suit for suit in "SHDC" for rank in "A23456789TJQK"]


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
# the dealer who signs in on the panel; every action is recorded in this name
DEALER, PIN = "d7", "2468"
DEALER_IDENTITY = f"dealer:{DEALER}"
PIN_HASH = hash_pin(PIN)
expect.set_options(timeout=UI_TIMEOUT_MS)


@dataclass
class Table:
    service: TableService
    device: Any  # the ShoeSimulator, or the WheelSimulator for roulette
    url: str
    settings: PanelSettings
    auth: PanelAuth  # one per service process: kept when the panel alone restarts
    events: list[Envelope] = field(default_factory=list)
    panel: asyncio.Task[None] | None = None

    def start_panel(self) -> None:
        self.panel = asyncio.create_task(serve_panel(self.service, self.settings, auth=self.auth))

    async def stop_panel(self) -> None:
        assert self.panel is not None
        self.panel.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(self.panel, 10)

    async def wait_panel_up(self) -> None:
        async with httpx.AsyncClient(base_url=self.url) as client:
            for _ in range(500):
                with contextlib.suppress(httpx.TransportError):
                    if (await client.get("/api/state")).status_code == 200:
                        return
                await asyncio.sleep(0.02)
        raise AssertionError("the panel did not come up")

    def event_types(self) -> list[str]:
        return [e.type for e in self.events]


TableFactory = Callable[..., Awaitable[Table]]


@pytest.fixture
async def start_table(tmp_path: Path, mosquitto: MosquittoBroker) -> AsyncIterator[TableFactory]:
    started: list[tuple[Table, asyncio.Task[None]]] = []

    async def start(
        betting_seconds: float = 1.0,
        game: str = "baccarat",
        cut_position: int | None = None,
        settings: dict[str, Any] | None = None,
        cards: list[str] | None = None,
    ) -> Table:
        device: Any
        game_settings: dict[str, Any]
        if game == "baccarat":
            device = ShoeSimulator(cards=cards or CARDS * 2, cut_position=cut_position)
            name, protocol, game_settings = "shoe", "shoe-line", {"decks": 1}
        elif game in ("andar_bahar", "stud"):
            # one deck, no cut card: these games take a fresh deck every round
            device = ShoeSimulator(cards=cards or ONE_DECK, cut_position=None)
            name, protocol, game_settings = "shoe", "shoe-line", {}
        else:
            device = WheelSimulator(seed=11, speed=10.0, boot_seconds=0.5)
            name, protocol, game_settings = "wheel", "cammegh-ss2", {}
        port_path = await device.start_pty(str(tmp_path / f"{name}.pty"))
        config = TABLE_CONFIGS.from_dict(
            {
                "table": {
                    "studio_id": "s1",
                    "table_id": f"{game[:3]}-panel",
                    "game": game,
                    "data_dir": str(tmp_path / "data"),
                },
                "broker": {"url": mosquitto.url},
                "devices": {name: {"protocol": protocol, "port": port_path}},
                "game": {
                    "betting_seconds": betting_seconds,
                    "round_gap_seconds": 0.5,
                    **game_settings,
                    **(settings or {}),
                },
            },
            environ={},
            source="test",
        )
        service = TableService(config)
        port = free_port()
        settings = PanelSettings(host=HOST, port=port, allowed_hosts=[HOST], dealers={DEALER: PIN_HASH})
        table = Table(service, device, f"http://{HOST}:{port}", settings, new_auth(settings))
        service.listeners.append(table.events.append)
        running = asyncio.create_task(service.run())
        started.append((table, running))
        table.start_panel()
        await table.wait_panel_up()
        return table

    yield start
    for table, running in started:
        if table.panel is not None and not table.panel.done():
            await table.stop_panel()
        table.service.stop()
        await asyncio.wait_for(running, 10)
        await table.device.stop()


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


@contextlib.asynccontextmanager
async def dealer_client(table: Table) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client that does what the panel's page does: the page's token and Origin on every POST, and
    a dealer's sign-in (its session cookie)."""
    async with httpx.AsyncClient(base_url=table.url, timeout=10) as client:
        page = await client.get("/")
        match = re.search(r'<meta name="panel-token" content="([^"]+)">', page.text)
        assert match is not None, page.text
        client.headers.update({"origin": table.url, "x-panel-token": match.group(1)})
        signed_in = await client.post("/api/session", json={"dealer": DEALER, "pin": PIN})
        assert signed_in.status_code == 200, signed_in.text
        yield client


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


@pytest.mark.e2e
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
    await expect(page.locator("#pause-text")).to_have_text(
        "PAUSED: dealer called the supervisor: card problem — call the supervisor"
    )
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


@pytest.mark.e2e
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
    await expect(page.locator("#connection-lost")).to_have_text("Connection lost — reconnecting…")

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


@pytest.mark.e2e
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


@pytest.mark.e2e
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
    await expect(page.locator("#pause-text")).to_have_text(
        "PAUSED: checking <b>the</b> screen — call the supervisor"
    )
    await expect(page.locator("#pause-text b")).to_have_count(0)
    colours = {"red": "rgb(200, 16, 46)", "black": "rgb(17, 17, 17)", "green": "rgb(10, 138, 58)"}
    background = await pocket.evaluate("node => getComputedStyle(node).backgroundColor")
    assert background == colours[result["color"]]
    assert js_errors == []


@pytest.mark.e2e
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
    await expect(prompt).to_have_text("Game card 7H — betting open, do not deal yet")
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
        "Andar wins — 7S matches 7H (21 cards). Collect the cards and take the shuffled deck"
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


@pytest.mark.e2e
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


@pytest.mark.e2e
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


# -- the HTTP API -----------------------------------------------------------------------------------------


async def read_sse_states(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    event = ""
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            event = line[len("event: ") :]
        elif line.startswith("data: ") and event == "state":
            yield json.loads(line[len("data: ") :])


@pytest.mark.integration
async def test_api_refuses_supervisor_commands_and_bad_bodies_and_acts_as_the_dealer(
    start_table: TableFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = await start_table(betting_seconds=30.0)
    service = table.service
    async with dealer_client(table) as client:
        await wait_until(lambda: service.core.flow.rounds.phase == "betting_open", timeout=10)
        state = (await client.get("/api/state")).json()
        assert state["table_id"] == "bac-panel" and state["round_phase"] == "betting_open"
        current = service.public_state()
        assert state.keys() == current.keys()
        stable = ("table_id", "game", "round_id", "round_phase", "paused", "prompt", "waiting_for_devices")
        assert {key: state[key] for key in stable} == {key: current[key] for key in stable}
        page = await client.get("/")
        assert page.status_code == 200 and "Dealer panel" in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert (await client.get("/static/panel.js")).status_code == 200

        for kind, name in [
            ("commands", "resume"),
            ("commands", "void_round"),
            ("commands", "device_action"),
            ("commands", "rebirth"),
            ("commands", "replay_events"),
        ]:
            refused = await client.post(f"/api/{kind}/{name}", json={})
            assert refused.status_code == 403, name
            assert refused.json()["status"] == "error"
            assert f"{name} is for the supervisors (over MQTT)" in refused.json()["error"]

        headers = {"content-type": "application/json"}
        bad = {
            "not json": (400, "the payload is not valid JSON"),
            "[1, 2]": (400, "payload must be a JSON object"),
            '{"reason": 5}': (400, "invalid pause: reason: Input should be a valid string"),
            '{"reason": "x", "force": true}': (400, "invalid pause: force: Extra inputs are not permitted"),
        }
        for body, (status, message) in bad.items():
            answer = await client.post("/api/commands/pause", content=body, headers=headers)
            assert (answer.status_code, answer.json()["status"]) == (status, "error"), body
            assert message in answer.json()["error"], answer.json()
        unknown = await client.post("/api/commands/explode", json={})
        assert unknown.status_code == 400 and "unknown command 'explode'" in unknown.json()["error"]
        text_plain = await client.post(
            "/api/commands/pause", content="{}", headers={"content-type": "text/plain"}
        )
        assert text_plain.status_code == 415
        foreign = await client.post("/api/commands/pause", json={}, headers={"origin": "http://evil.example"})
        assert foreign.status_code == 403
        rebound = await client.post(
            "/api/commands/pause",
            json={},
            headers={
                "host": f"evil.example:{table.settings.port}",
                "origin": f"http://evil.example:{table.settings.port}",
            },
        )
        assert rebound.status_code == 421
        without_token = await client.post("/api/commands/pause", json={}, headers={"x-panel-token": "guess"})
        assert without_token.status_code == 403
        assert (await client.get("/api/commands/pause")).status_code == 405
        assert not service.core.paused, "a refused command changed the table"

        # the live stream: the current state at once, then each new one; its listener goes with it
        listeners_before = len(service.state_listeners)
        async with client.stream("GET", "/api/stream") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            states = read_sse_states(stream)
            first = await anext(states)
            assert first["round_phase"] == "betting_open" and first["round_id"] == state["round_id"]
            assert len(service.state_listeners) == listeners_before + 1
            closed = await client.post("/api/inputs/close_betting", json={"by": "someone else"})
            assert closed.status_code == 200 and closed.json()["status"] == "ok", closed.json()
            assert closed.json()["data"]["state"]["prompt"] == "Deal to Player"
            async with asyncio.timeout(5):
                while (await anext(states))["prompt"] != "Deal to Player":
                    pass
            await states.aclose()  # a suspended reader would keep the response (and the server's stream) open
        # normally at once (the server sees the disconnect); at the latest when the next heartbeat (15 s)
        # cannot be written: rarely, on a loaded machine, the disconnect is only noticed then
        await wait_until(
            lambda: len(service.state_listeners) == listeners_before,
            timeout=20,
            what="the closed stream's listener to be removed",
        )

        # a quiet stream still says it is alive (every 15 s; shortened here)
        monkeypatch.setattr(panel_app, "HEARTBEAT_SECONDS", 0.05)
        async with client.stream("GET", "/api/stream") as stream:
            lines: list[str] = []
            async with asyncio.timeout(5):
                async for line in stream.aiter_lines():
                    lines.append(line)
                    if line == ": heartbeat":
                        break
        assert lines[:3] == ["retry: 2000", "", "event: state"]
        assert lines[4:6] == ["", "event: boot"]
        assert lines[-1] == ": heartbeat"

        # whoever the payload claims to be, the panel is the dealer
        paused = await client.post(
            "/api/commands/pause",
            json={"reason": "dealer needs help", "by": "supervisor:boss", "transaction": 7},
        )
        assert paused.status_code == 200, paused.json()
        assert paused.json()["transaction"] == 7
        assert paused.json()["data"]["state"]["pause"]["by"] == DEALER_IDENTITY
        assert paused.json()["data"]["state"]["prompt"] == "PAUSED: dealer needs help — call the supervisor"
        again = await client.post("/api/commands/pause", json={"transaction": "t2"})
        assert again.status_code == 400
        assert again.json() == {
            "status": "error",
            "transaction": "t2",
            "error": "the table is already paused",
        }
    assert [e.data["by"] for e in table.events if e.type == "round.paused"] == [DEALER_IDENTITY]


@pytest.mark.unit
async def test_a_slow_screen_only_gets_the_latest_state_and_never_blocks_the_service() -> None:
    subscription = StateSubscription()
    for number in range(1000):  # far more than any queue would hold: offer never waits nor raises
        subscription.offer({"n": number})
    assert await asyncio.wait_for(subscription.next(), 1) == {"n": 999}
    waiting = asyncio.create_task(subscription.next())
    await asyncio.sleep(0.01)
    assert not waiting.done(), "an already sent state must not be sent again"
    subscription.offer({"n": 1000})
    assert await asyncio.wait_for(waiting, 1) == {"n": 1000}


@pytest.mark.unit
async def test_the_panel_app_needs_no_network_beyond_itself() -> None:
    """The page references only its own static files (no CDN): it must work with the studio network down."""
    static = panel_app.STATIC_DIR
    html = (static / "index.html").read_text()
    for text in (html, (static / "panel.css").read_text(), (static / "panel.js").read_text()):
        assert "http://" not in text and "https://" not in text and "//cdn" not in text
    assert 'src="/static/panel.js"' in html and 'href="/static/panel.css"' in html
