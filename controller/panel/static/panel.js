// The dealer's touch panel. Plain JavaScript, no framework, no network but this controller.
// Every text that comes from the table goes through textContent (never innerHTML): a pause reason typed
// by a supervisor or a device's detail string must never be able to inject markup into the page.
"use strict";

(() => {
  const SUITS = {
    S: { symbol: "\u2660", red: false, name: "spades" },
    H: { symbol: "\u2665", red: true, name: "hearts" },
    D: { symbol: "\u2666", red: true, name: "diamonds" },
    C: { symbol: "\u2663", red: false, name: "clubs" },
  };
  const RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K"];
  const PHASES = {
    waiting: "Waiting",
    betting_open: "Betting open",
    betting_closed: "Betting closed",
    in_play: "In play",
    paused: "PAUSED",
  };
  // The game's layout, its name and how many cards a place usually holds come with the state (`view`, from
  // the game's spec): its cards are sized for that many from the first card on, so they do not shrink while the
  // round is dealt. Only a hint: a place holding more gets smaller cards, any game. A place's own hint (by
  // its name) comes before its game's.
  const DEFAULT_USUAL_CARDS = 3;
  // Up to this many places in one row, more in two rows (stud: 7 hands + the dealer is 4 x 2).
  const ONE_ROW_UP_TO = 4;
  // From this many places on the panels are narrow: smaller heads.
  const COMPACT_FROM = 4;
  // Card sizes (px): never bigger than the old fixed size, never too small to read at arm's length.
  const MIN_CARD_WIDTH = 36;
  const MAX_CARD_WIDTH = 240;
  const CARD_HEIGHT_RATIO = 7 / 5;
  // In a fan each card covers all but this share of the one before it; its corner index stays visible.
  const FAN_VISIBLE = 0.5;
  // A rank's size relative to the card's width, laid out flat (centred) and fanned (corner index).
  const FLAT_RANK_SCALE = 0.5;
  const FAN_RANK_SCALE = 0.36;
  // A fan only when it makes the ranks this much bigger: flat cards are easier to read.
  const FAN_GAIN = 1.15;
  const STREAM_RETRY_MS = 2000;
  const MAX_TOASTS = 2;
  // the dealer's line while the table is paused (controller.pause_reasons.WAIT_FOR_SUPERVISOR)
  const WAIT_FOR_SUPERVISOR = "Do not deal \u2014 wait for the supervisor";
  const UNKNOWN_PROMPT = "No connection to the table \u2014 the panel does not know what to deal. Do not deal; call the supervisor if this lasts";

  const { $, el, meta } = web; // /static/web.js

  // This boot's values, put in the page by the controller: every POST carries the token (a page of another
  // web site cannot read it), and a stream from another boot means this page is stale.
  const PAGE_TOKEN = meta("panel-token");
  const BOOT_ID = meta("panel-boot");

  let state = null;
  let connected = false;
  let dealer = null; // the signed-in dealer's id
  let pickerContext = null; // what the table looked like when the picker opened
  let pickedRank = null;
  let pickedSuit = null;

  // ---- cards ------------------------------------------------------------------------------------------
  const rankLabel = (rank) => (rank === "T" ? "10" : rank);

  function cardLabel(code) {
    const suit = SUITS[code.slice(-1)];
    return suit ? rankLabel(code.slice(0, -1)) + suit.symbol : code;
  }

  // A flow's prompt names cards by their codes ("Game card QS — …"): the dealer reads "Q♠". Only the
  // rendering changes; the published prompt stays as the flow wrote it.
  // how a flow publishes a card that lies face down (controller.games.blackjack.flow.FACE_DOWN)
  const FACE_DOWN = "XX";
  const CARD_CODE = /\b([2-9TJQKA])([SHDC])\b/g;
  function promptText(text) {
    return String(text).replace(CARD_CODE, (code) => cardLabel(code));
  }

  function cardNode(code, extraClass) {
    const suit = SUITS[code.slice(-1)];
    const node = el("div", "card" + (extraClass ? " " + extraClass : ""));
    node.dataset.code = code;
    if (code === FACE_DOWN) {
      // a card not shown yet (blackjack's hole card): its back, as it lies on the felt
      node.classList.add("back");
      node.setAttribute("aria-label", "face-down card");
      return node;
    }
    if (!suit) {
      node.textContent = code;
      return node;
    }
    if (suit.red) node.classList.add("red");
    const rank = el("span", "rank", rankLabel(code.slice(0, -1)));
    if (rank.textContent.length > 1) rank.classList.add("wide"); // "10": two digits in a card's corner
    node.append(rank, el("span", "suit", suit.symbol));
    node.setAttribute("aria-label", `${rankLabel(code.slice(0, -1))} of ${suit.name}`);
    return node;
  }

  // ---- rendering ----------------------------------------------------------------------------------------
  function show(node, visible) {
    node.hidden = !visible;
  }

  // Long texts (a detailed fault reason) get a smaller size instead of pushing the table off the screen.
  function setSizedText(id, text) {
    setText(id, text);
    const length = String(text || "").length;
    $(id).dataset.length = length <= 48 ? "short" : length <= 100 ? "medium" : "long";
  }

  function setText(id, text) {
    const node = $(id);
    const value = text === undefined || text === null ? "" : String(text);
    if (node.textContent !== value) node.textContent = value;
  }

  function render(next) {
    state = next;
    const game = state.game_state || {};
    document.body.dataset.game = state.game || "";
    document.body.classList.toggle("paused", !!state.paused);

    setText("table-id", state.table_id);
    setText("game-name", gameName(state));
    setText("round-id", state.round_id || "—");
    // games without a shoe of many rounds (a fresh deck every round) have no number in the shoe (0 or null)
    show($("round-number-box"), !!state.round_number_in_shoe);
    setText("round-number", state.round_number_in_shoe);
    const phase = $("phase");
    setText("phase", PHASES[state.phase] || state.phase);
    phase.dataset.phase = state.phase;
    renderCountdown();

    renderDevices(state.devices || {});

    renderPause();
    setSizedText("prompt", promptText(state.prompt || ""));
    $("prompt-box").classList.toggle("attention", !!game.awaiting_rescan);
    $("prompt-box").classList.remove("unknown");
    if (!connected) renderUnknown();

    // Any card game publishes its places as `positions`: the panel draws them without knowing the game.
    const positions = Array.isArray(game.positions) ? game.positions : null;
    show($("cards-view"), !!positions);
    const kind = viewKind(state);
    show($("roulette-view"), !positions && kind === "wheel");
    show($("dice-view"), !positions && kind === "dice");
    if (positions) renderPositions(game, positions);
    else if (kind === "wheel") renderRoulette(game);
    else if (kind === "dice") renderDice(game);

    renderActions(game);
    guardPicker();
    if (state.paused) closeOverlay("pause-dialog");
  }

  // The pause as the controller explains it (`pause_explained`, from the same state as the device chips):
  // what happened and what fixes it, what the dealer does now, what the pause still waits for.
  function renderPause() {
    const paused = !!state.paused && connected;
    show($("pause-banner"), paused);
    show($("prompt-box"), !state.paused || !connected);
    if (!paused) return;
    const pause = state.pause || {};
    const explained = state.pause_explained || {};
    setSizedText("pause-text", `PAUSED: ${explained.headline || pause.reason || "no reason given"}`);
    const action = explained.dealer_action || "";
    show($("pause-action"), !!action && action.toLowerCase() !== WAIT_FOR_SUPERVISOR.toLowerCase());
    setText("pause-action", action);
    const detail = [];
    // a person's own words (the dealer's or supervisor's reason); a device's driver text is not for the dealer
    if (["dealer", "supervisor", "game"].includes(explained.code) && pause.reason) detail.push(pause.reason);
    if (explained.waits_for) detail.push(`waiting for ${explained.waits_for}`);
    if (pause.since) detail.push(`since ${new Date(pause.since).toLocaleTimeString()}`);
    if (state.held_readings) detail.push(`${state.held_readings} reading(s) held`);
    setText("pause-detail", detail.join(" \u00b7 "));
  }

  // What the dealer sees while the panel has no live state: not the last prompt (it may be long out of
  // date), but that the panel does not know, and what to do.
  function renderUnknown() {
    show($("pause-banner"), false);
    show($("prompt-box"), true);
    setSizedText("prompt", UNKNOWN_PROMPT);
    $("prompt-box").classList.remove("attention");
    $("prompt-box").classList.add("unknown");
  }

  function renderDevices(devices) {
    const box = $("devices");
    box.replaceChildren(
      ...Object.entries(devices).map(([name, device]) => {
        const chip = el("div", "chip " + device.status);
        chip.dataset.device = name;
        chip.append(el("span", "chip-name", name), el("span", "chip-status", device.status));
        const detail = [device.code, device.detail].filter((part) => part && part !== device.status);
        if (detail.length) chip.append(el("span", "chip-detail", detail.join(" ")));
        return chip;
      }),
    );
  }

  // How the game is laid out (`view.kind`: cards-two-hands, boxes, game-card-and-sides, wheel, dice): the
  // panel switches on it, never on a game's name.
  function viewKind(state) {
    return (state.view && state.view.kind) || "";
  }

  function gameName(state) {
    const game = state.game;
    if (!game) return "";
    const title = state.view && state.view.title;
    return title || game.charAt(0).toUpperCase() + game.slice(1).replaceAll("_", " ");
  }

  // Where the next card goes, as the dealer should see it: not while the table is paused, nor while a
  // timed betting window is open (baccarat names the next hand all round long; no card comes out then).
  function nextPositionShown(game, positions) {
    if (state.paused) return null;
    if (state.round_phase === "betting_open" && game.betting_closes_at) return null;
    const next = positions.find((position) => position.next);
    return next ? next.name : null;
  }

  function gridColumns(count) {
    return count <= ONE_ROW_UP_TO ? Math.max(count, 1) : Math.ceil(count / 2);
  }

  function positionNode(position, compact) {
    const hand = el("div", "hand");
    hand.id = `hand-${position.name}`;
    hand.dataset.position = position.name;
    const head = el("div", "hand-head");
    const total = el("span", "hand-total");
    total.id = `${position.name}-total`;
    head.append(
      el("span", "hand-name", position.label),
      el("span", "next-badge", compact ? "NEXT \u279c" : "NEXT CARD \u279c"),
      total,
    );
    const cards = el("div", "cards");
    cards.id = `${position.name}-cards`;
    hand.append(head, cards);
    cardsResized.observe(cards);
    return hand;
  }

  function renderPositions(game, positions) {
    const box = $("positions");
    // The panels are built once per layout (a game, its places); after that only their content changes.
    const places = positions.map((position) => `${position.name}:${position.label}`);
    const layout = [viewKind(state), ...places].join("|");
    if (box.dataset.layout !== layout) {
      const compact = positions.length >= COMPACT_FROM;
      cardsResized.disconnect();
      box.dataset.layout = layout;
      box.dataset.view = viewKind(state);
      box.classList.toggle("compact", compact);
      box.style.setProperty("--columns", String(gridColumns(positions.length)));
      box.replaceChildren(...positions.map((position) => positionNode(position, compact)));
    }
    const next = nextPositionShown(game, positions);
    for (const position of positions) renderPosition(position, next === position.name);
    fitAllCards();
    renderShoeInfo(game);
  }

  function renderPosition(position, isNext) {
    const row = $(`${position.name}-cards`);
    const cards = Array.isArray(position.cards) ? position.cards : [];
    const key = cards.join(" ") + (isNext ? " +next" : "");
    if (row.dataset.key !== key) {
      row.dataset.key = key;
      const nodes = cards.map((code) => cardNode(code));
      // an empty slot where the next card goes: the dealer's eye lands on the right place at once
      if (isNext) nodes.push(el("div", "slot", "?"));
      row.replaceChildren(...nodes);
    }
    const total = position.total === null || position.total === undefined ? "" : position.total;
    setText(`${position.name}-total`, total);
    $(`hand-${position.name}`).classList.toggle("next", isNext);
  }

  function renderShoeInfo(game) {
    const info = [];
    if (game.shoe_id) info.push(`Shoe ${game.shoe_id}`);
    if (game.cards_left_in_shoe !== undefined && game.cards_left_in_shoe !== null) {
      info.push(`${game.cards_left_in_shoe} cards left`);
    }
    if (game.cards_left_in_deck !== undefined && game.cards_left_in_deck !== null) {
      info.push(`${game.cards_left_in_deck} cards left in the deck`);
    }
    if (game.cards_dealt !== undefined && game.cards_dealt !== null && game.cards_dealt > 0) {
      info.push(`${game.cards_dealt} cards dealt`);
    }
    if (game.last_round_of_shoe) info.push("LAST ROUND OF THE SHOE");
    if (game.shoe_finished) info.push("SHOE FINISHED");
    setText("shoe-info", info.join(" \u00b7 "));
  }

  // ---- card sizes ---------------------------------------------------------------------------------------
  // Each place's cards get the biggest size at which all of them (and the slot) fit its box, with no
  // scrolling: a stud table of 8 places and a long Andar row both stay on screen. The flex layout in
  // panel.css is simulated here, line by line, with the same widths and margins.

  const cardsResized = new ResizeObserver(() => fitAllCards());

  function cardGap() {
    return Math.round(Math.min(16, Math.max(8, window.innerHeight * 0.012)));
  }

  // How many lines the items take at card width `width`, or Infinity if one does not fit on a line.
  function linesNeeded(widths, room) {
    let lines = 1;
    let used = 0;
    for (const width of widths) {
      if (width > room) return Infinity;
      if (used > 0 && used + width > room) {
        lines += 1;
        used = 0;
      }
      used += width;
    }
    return lines;
  }

  function fits(width, fan, items, room, height, gap) {
    const cardHeight = width * CARD_HEIGHT_RATIO;
    // Flat: items side by side, a gap between them (none needed after a line's last). Fanned: each item
    // takes FAN_VISIBLE of its width (the next one covers the rest), and the box's right padding takes the
    // covered part of a line's last one (see .cards.fan in panel.css).
    const itemWidth = fan ? width * FAN_VISIBLE : width + gap;
    const lineRoom = fan ? room - width * (1 - FAN_VISIBLE) : room + gap;
    const lines = linesNeeded(new Array(items).fill(itemWidth), lineRoom);
    return lines * cardHeight + (lines - 1) * gap <= height;
  }

  function largestWidth(fan, items, room, height, gap, largest) {
    for (let width = largest; width >= MIN_CARD_WIDTH; width -= 1) {
      if (fits(width, fan, items, room, height, gap)) return width;
    }
    return null;
  }

  // The biggest cards that fit `row`'s box, flat or fanned; null while the box is hidden (it is fitted when
  // it shows: the ResizeObserver calls again).
  function cardPlan(row, gap, largest) {
    // clientWidth/Height are rounded: a pixel less, so that a line planned to fit exactly does not wrap
    const room = row.clientWidth - 1;
    const height = row.clientHeight - 1;
    if (room <= 0 || height <= 0) return null;
    const cardCount = row.querySelectorAll(".card").length;
    const withSlot = !!row.querySelector(".slot");
    // sized for the usual number of cards from the start (with room for the slot), so no jumps mid-round
    const place = row.parentElement ? row.parentElement.dataset.position : "";
    const view = (state && state.view) || {};
    const usual = (view.usual_cards_at || {})[place] || view.usual_cards || DEFAULT_USUAL_CARDS;
    const planned = Math.max(cardCount + (withSlot ? 1 : 0), usual);
    const flat = largestWidth(false, planned, room, height, gap, largest);
    const fanned = planned >= 3 ? largestWidth(true, planned, room, height, gap, largest) : null;
    const flatRank = flat === null ? 0 : flat * FLAT_RANK_SCALE;
    const fanRank = fanned === null ? 0 : fanned * FAN_RANK_SCALE;
    const box = `${room}x${height}`;
    if (fanned !== null && (flat === null || fanRank > flatRank * FAN_GAIN)) {
      return { box, width: fanned, fan: true, rank: fanRank };
    }
    if (flat !== null) return { box, width: flat, fan: false, rank: flatRank };
    // nothing fits even at the smallest size (dozens of cards in one place): the smallest fan, clipped
    return { box, width: MIN_CARD_WIDTH, fan: true, rank: 0 };
  }

  // Places of the same size (stud's hands and dealer, Andar and Bahar) show cards of the same size: the
  // size that fits the fullest of them.
  function fitAllCards() {
    const rows = [...document.querySelectorAll("#positions .cards")];
    const gap = cardGap();
    const largest = Math.floor(Math.min(MAX_CARD_WIDTH, window.innerWidth * 0.1, window.innerHeight * 0.22));
    const plans = rows.map((row) => cardPlan(row, gap, largest));
    const tightest = new Map();
    for (const plan of plans) {
      if (!plan) continue;
      const known = tightest.get(plan.box);
      if (!known || plan.rank < known.rank) tightest.set(plan.box, plan);
    }
    rows.forEach((row, i) => {
      if (!plans[i]) return;
      const plan = tightest.get(plans[i].box);
      row.classList.toggle("fan", plan.fan);
      row.style.setProperty("--card-w", `${plan.width}px`);
      row.style.setProperty("--card-gap", `${gap}px`);
      row.style.setProperty("--fan-cover", String(1 - FAN_VISIBLE));
    });
  }

  function renderRoulette(game) {
    const last = game.last_result;
    const pocket = $("last-number");
    setText("last-number", last ? last.number : "—");
    pocket.dataset.color = last ? last.color : "";
    setText("last-color", last ? last.color : "");
    setText("spin", game.spin === null || game.spin === undefined ? "—" : game.spin);
    setText("direction", game.wheel_direction || "—");
    setText("ball", game.ball_launched ? "launched" : "not launched");
  }

  // Sic bo: the frame the camera read (served by the panel from the camera's capture), each die's box in
  // green (read) or red (refused), and the values. The frame is an <img>: no pixels pass through the state.
  const STAGES = {
    idle: "betting",
    shaking: "shaking",
    reading: "reading",
    supervisor: "waiting for the supervisor",
  };

  function renderDice(game) {
    const read = game.last_read;
    // a new shake has started: the read on screen belongs to the round before
    $("dice-view").classList.toggle("previous", game.stage === "shaking");
    const img = $("dice-frame-img");
    const frame = read && read.frame ? read.frame.split("/").pop() : "";
    const src = frame ? `/api/frames/${encodeURIComponent(game.camera)}/${encodeURIComponent(frame)}` : "";
    if (img.dataset.src !== src) {
      img.dataset.src = src;
      if (src) img.src = src;
      else img.removeAttribute("src");
    }
    show(img, !!src);
    show($("dice-no-frame"), !src);
    const svg = $("dice-boxes");
    const boxes = [];
    if (read) {
      // the reader's boxes are in frame pixels: the view box is the frame's own size
      const width = img.naturalWidth || 640;
      const height = img.naturalHeight || 480;
      svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
      for (const die of read.dice || []) {
        const [x, y, w, h] = die.box || [0, 0, 0, 0];
        const rect = document.createElementNS(svg.namespaceURI, "rect");
        rect.setAttribute("class", die.value ? "read" : "refused");
        for (const [name, value] of Object.entries({ x, y, width: w, height: h })) rect.setAttribute(name, value);
        const label = document.createElementNS(svg.namespaceURI, "text");
        label.setAttribute("x", x);
        label.setAttribute("y", Math.max(24, y - 6));
        label.textContent = die.value ? String(die.value) : "?";
        boxes.push(rect, label);
      }
    }
    svg.replaceChildren(...boxes);
    if (!img.dataset.sized) {
      img.dataset.sized = "1";
      img.addEventListener("load", () => state && renderDice(state.game_state || {}));
    }
    setText("dice-values", read && read.values ? read.values.join(" ") : "—");
    setText("dice-read-reason", read && !read.values ? read.reason : "");
    setText("dice-stage", STAGES[game.stage] || game.stage || "—");
    setText("dice-cycle", game.cycle_id || "—");
    setText("dice-reshakes", game.reshakes === undefined ? "—" : game.reshakes);
    const last = game.last_result;
    setText("dice-last-result", last ? `${last.dice.join(" ")} = ${last.total} ${last.size || "triple"}` : "—");
  }

  function renderActions(game) {
    const positions = Array.isArray(game.positions) ? game.positions : null;
    const live = !state.paused;
    // A card is entered by hand only for the one the scanner could not read (the table refuses any other):
    // the picker is offered exactly while that card waits for its re-scan.
    // Once entered, a card a supervisor must confirm is no longer the dealer's to enter: the prompt says
    // what the table waits for ("Waiting for a supervisor to confirm 7D").
    const manual = $("btn-manual");
    const entering = !!game.awaiting_rescan && !state.manual_card_pending;
    show(manual, !!positions && live && entering);
    manual.classList.toggle("urgent", entering);
    // what the state offers: betting that is open (andar bahar's opens with the game card), and a new
    // shoe only for a game whose shoe can finish (baccarat's `shoe_finished`)
    show($("btn-close-betting"), live && state.round_phase === "betting_open");
    show($("btn-new-shoe"), live && game.shoe_finished === true);
    const supervisor = $("btn-supervisor");
    supervisor.disabled = !!state.paused;
    setText("btn-supervisor", state.paused ? "Table paused" : "Call supervisor");
  }

  // The window that is running now: betting, or (stud) the players' bet-or-fold decisions.
  function runningWindow() {
    const game = (state && state.game_state) || {};
    if (!state || state.paused) return null;
    if (state.round_phase === "betting_open" && game.betting_closes_at) {
      return { kind: "betting", closes: game.betting_closes_at, text: "closes in" };
    }
    if (state.round_phase === "betting_open" && game.launch_at) {
      // roulette in user start: the table launches the ball then; the wheel's "no more bets" follows
      return { kind: "betting", closes: game.launch_at, text: "ball launch in" };
    }
    if (game.decisions_close_at) {
      return { kind: "decisions", closes: game.decisions_close_at, text: "decisions close in" };
    }
    return null;
  }

  function renderCountdown() {
    const box = $("countdown");
    const running = runningWindow();
    if (!running) {
      show(box, false);
      return;
    }
    const seconds = Math.max(0, Math.ceil((Date.parse(running.closes) - Date.now()) / 1000));
    setText("countdown", `${running.text} ${seconds} s`);
    box.dataset.kind = running.kind;
    show(box, true);
  }

  // ---- connection -------------------------------------------------------------------------------------
  function setConnected(value) {
    connected = value;
    document.body.classList.toggle("offline", !value);
    document.body.classList.remove("connecting");
    show($("connection-lost"), !value);
    if (!value) renderUnknown();
    for (const button of document.querySelectorAll("button.action, button.reason, #btn-deal")) {
      button.classList.toggle("blocked", !value);
    }
  }

  // The live stream is for a signed-in dealer only (an open stream holds one of the panel's few
  // connections); until then the page shows the table from /api/state, refreshed every STREAM_RETRY_MS.
  let source = null;
  let polling = null;

  function connect() {
    if (source) return;
    stopPolling();
    source = new EventSource("/api/stream");
    const current = source;
    current.addEventListener("boot", (event) => {
      // the controller restarted: this page's token is no longer valid, and nobody is signed in
      if (JSON.parse(event.data) !== BOOT_ID) window.location.reload();
    });
    current.addEventListener("state", (event) => {
      setConnected(true);
      render(JSON.parse(event.data));
    });
    current.addEventListener("error", () => {
      setConnected(false);
      // The browser retries by itself while the stream is CONNECTING; after an error status (the session
      // ended: 401; the controller restarting) it gives up (CLOSED): then ask again who is signed in.
      if (current.readyState === EventSource.CLOSED) {
        disconnect();
        setTimeout(checkSession, STREAM_RETRY_MS);
      }
    });
  }

  function disconnect() {
    if (source) source.close();
    source = null;
  }

  async function pollState() {
    try {
      const response = await fetch("/api/state", { credentials: "same-origin" });
      if (!response.ok) throw new Error(`status ${response.status}`);
      const next = await response.json();
      setConnected(true);
      render(next);
    } catch (_) {
      setConnected(false);
    }
  }

  function startPolling() {
    if (polling !== null) return;
    pollState();
    polling = setInterval(pollState, STREAM_RETRY_MS);
  }

  function stopPolling() {
    if (polling !== null) clearInterval(polling);
    polling = null;
  }

  // ---- requests -----------------------------------------------------------------------------------------
  async function request(method, path, payload) {
    const response = await fetch(path, {
      method,
      headers: { "Content-Type": "application/json", "X-Panel-Token": PAGE_TOKEN },
      body: payload === undefined ? undefined : JSON.stringify(payload),
      credentials: "same-origin",
    });
    let body = null;
    try {
      body = await response.json();
    } catch (_) {
      body = null;
    }
    if (response.status === 403 && body && String(body.error).startsWith("stale page")) {
      window.location.reload(); // served by an earlier boot of the controller
    }
    return { response, body };
  }

  // ---- dealer sign-in ---------------------------------------------------------------------------------
  function setDealer(id) {
    dealer = id || null;
    if (dealer) {
      connect();
    } else {
      disconnect();
      startPolling();
    }
    setText("dealer-name", dealer ? `Dealer ${dealer}` : "Signed out");
    show($("btn-sign-out"), !!dealer);
    show($("sign-in"), !dealer);
    $("dealer-pin").value = "";
    if (!dealer) $("dealer-id").focus();
  }

  async function checkSession() {
    try {
      const response = await fetch("/api/session", { credentials: "same-origin" });
      const body = await response.json();
      setDealer(body.dealer);
      if (!body.dealers_configured) {
        setText("sign-in-error", "No dealers are configured for this panel — call the supervisor");
      }
    } catch (_) {
      setConnected(false);
      setTimeout(checkSession, STREAM_RETRY_MS);
    }
  }

  async function signIn(event) {
    event.preventDefault();
    const button = $("btn-sign-in");
    button.disabled = true;
    setText("sign-in-error", "");
    try {
      const { response, body } = await request("POST", "/api/session", {
        dealer: $("dealer-id").value.trim(),
        pin: $("dealer-pin").value,
      });
      if (response.ok && body && body.status === "ok") {
        setDealer(body.dealer);
        toast(`Signed in as dealer ${body.dealer}`, "ok");
      } else {
        $("dealer-pin").value = "";
        setText("sign-in-error", body && body.error ? body.error : `The controller answered ${response.status}`);
      }
    } catch (error) {
      setText("sign-in-error", `No answer from the controller: ${error.message}`);
    } finally {
      button.disabled = false;
    }
  }

  async function signOut() {
    try {
      await request("DELETE", "/api/session");
    } finally {
      setDealer(null);
    }
  }

  // ---- commands ---------------------------------------------------------------------------------------
  async function send(kind, name, payload, button) {
    if (!connected) {
      toast("No connection to the controller — call the supervisor", "error");
      return false;
    }
    if (button) button.disabled = true; // one tap, one command
    try {
      const { response, body } = await request("POST", `/api/${kind}/${name}`, payload || {});
      if (response.ok && body && body.status === "ok") return true;
      if (response.status === 401) setDealer(null); // the sign-in expired: sign in, then tap again
      toast(body && body.error ? body.error : `The controller answered ${response.status}`, "error");
      return false;
    } catch (error) {
      toast(`No answer from the controller: ${error.message}`, "error");
      return false;
    } finally {
      if (button) button.disabled = false;
      if (state) renderActions(state.game_state || {});
    }
  }

  let toastCounter = 0;
  function toast(message, kind) {
    const node = el("div", `toast ${kind || "ok"}`, message);
    node.dataset.toast = String(++toastCounter);
    node.addEventListener("click", () => node.remove());
    const box = $("toasts");
    box.prepend(node); // newest first: shown nearest the buttons
    while (box.children.length > MAX_TOASTS) box.lastElementChild.remove();
    setTimeout(() => node.remove(), kind === "error" ? 9000 : 4000);
  }

  // ---- dialogs ----------------------------------------------------------------------------------------
  function openOverlay(id) {
    show($(id), true);
  }

  function closeOverlay(id) {
    show($(id), false);
    if (id === "card-picker") pickerContext = null;
  }

  function dealtCount() {
    const game = (state && state.game_state) || {};
    const positions = Array.isArray(game.positions) ? game.positions : [];
    return positions.reduce((count, position) => count + (position.cards || []).length, 0);
  }

  function openPicker() {
    pickedRank = null;
    pickedSuit = null;
    updatePicked();
    const game = (state && state.game_state) || {};
    pickerContext = { round: state ? state.round_id : null, dealt: dealtCount() };
    const next = (game.positions || []).find((position) => position.next);
    const where = next ? `Next card \u2192 ${next.label}` : "";
    const why = game.awaiting_rescan ? "The scanner could not read the card. " : "";
    setText("picker-hint", `${why}${where}`);
    openOverlay("card-picker");
  }

  // A picker left open while the table moved on (the card was re-scanned after all, a new round) would
  // put a card in the wrong place: close it and say why.
  function guardPicker() {
    if (!pickerContext || pickerContext.sending || $("card-picker").hidden) return;
    const game = (state && state.game_state) || {};
    const moved = state.round_id !== pickerContext.round || dealtCount() !== pickerContext.dealt;
    if (state.paused || moved || !game.awaiting_rescan) {
      closeOverlay("card-picker");
      toast("The table moved on: card entry closed. Check the prompt.", "info");
    }
  }

  function updatePicked() {
    const picked = $("picked");
    for (const button of document.querySelectorAll("#rank-grid button")) {
      button.classList.toggle("selected", button.dataset.rank === pickedRank);
    }
    for (const button of document.querySelectorAll("#suit-grid button")) {
      button.classList.toggle("selected", button.dataset.suit === pickedSuit);
    }
    if (pickedRank && pickedSuit) {
      const code = pickedRank + pickedSuit;
      picked.replaceWith(Object.assign(cardNode(code, "big"), { id: "picked" }));
      $("btn-deal").disabled = false;
      setText("btn-deal", `Deal ${cardLabel(code)}`);
    } else {
      const empty = el("div", "card big empty", pickedRank ? rankLabel(pickedRank) + "?" : "?");
      empty.id = "picked";
      picked.replaceWith(empty);
      $("btn-deal").disabled = true;
      setText("btn-deal", "Deal this card");
    }
  }

  function buildPicker() {
    const ranks = $("rank-grid");
    for (const rank of RANKS) {
      const button = el("button", "pick rank", rankLabel(rank));
      button.type = "button";
      button.dataset.rank = rank;
      button.addEventListener("click", () => {
        pickedRank = rank;
        updatePicked();
      });
      ranks.append(button);
    }
    const suits = $("suit-grid");
    for (const [code, suit] of Object.entries(SUITS)) {
      const button = el("button", "pick suit" + (suit.red ? " red" : ""), suit.symbol);
      button.type = "button";
      button.dataset.suit = code;
      button.setAttribute("aria-label", suit.name);
      button.addEventListener("click", () => {
        pickedSuit = code;
        updatePicked();
      });
      suits.append(button);
    }
  }

  // ---- wiring -----------------------------------------------------------------------------------------
  function wire() {
    buildPicker();
    $("btn-supervisor").addEventListener("click", () => openOverlay("pause-dialog"));
    $("pause-cancel").addEventListener("click", () => closeOverlay("pause-dialog"));
    for (const button of document.querySelectorAll("#pause-reasons button")) {
      button.addEventListener("click", async () => {
        const reason = `dealer called the supervisor: ${button.dataset.reason}`;
        if (await send("commands", "pause", { reason }, button)) {
          closeOverlay("pause-dialog");
          toast("Supervisor called — the table is paused", "ok");
        }
      });
    }
    $("btn-manual").addEventListener("click", openPicker);
    $("picker-cancel").addEventListener("click", () => closeOverlay("card-picker"));
    $("btn-deal").addEventListener("click", async () => {
      if (!pickedRank || !pickedSuit) return;
      const code = pickedRank + pickedSuit;
      // the new state (one more card) may arrive before the answer: that is this card, not a surprise
      if (pickerContext) pickerContext.sending = true;
      const dealt = await send("commands", "manual_card", { card: code }, $("btn-deal"));
      if (pickerContext) pickerContext.sending = false;
      if (dealt) {
        closeOverlay("card-picker");
        toast(`Card ${cardLabel(code)} entered`, "ok");
      } else {
        updatePicked();
        guardPicker();
      }
    });
    $("btn-close-betting").addEventListener("click", async (event) => {
      if (await send("inputs", "close_betting", {}, event.currentTarget)) toast("Betting closed", "ok");
    });
    $("btn-new-shoe").addEventListener("click", async (event) => {
      if (await send("commands", "new_shoe", {}, event.currentTarget)) toast("New shoe loaded", "ok");
    });
    $("sign-in-form").addEventListener("submit", signIn);
    $("btn-sign-out").addEventListener("click", signOut);
    setInterval(renderCountdown, 250);
    checkSession();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", wire);
  } else {
    wire();
  }
})();
