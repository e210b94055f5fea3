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
  const DEALING_PHASES = ["betting_closed", "in_play"];
  const STREAM_RETRY_MS = 2000;
  const MAX_TOASTS = 2;

  const $ = (id) => document.getElementById(id);
  const el = (tag, className, text) => {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };

  let state = null;
  let connected = false;
  let pickerContext = null; // what the table looked like when the picker opened
  let pickedRank = null;
  let pickedSuit = null;

  // ---- cards ------------------------------------------------------------------------------------------
  const rankLabel = (rank) => (rank === "T" ? "10" : rank);

  function cardLabel(code) {
    const suit = SUITS[code.slice(-1)];
    return suit ? rankLabel(code.slice(0, -1)) + suit.symbol : code;
  }

  function cardNode(code, extraClass) {
    const suit = SUITS[code.slice(-1)];
    const node = el("div", "card" + (extraClass ? " " + extraClass : ""));
    node.dataset.code = code;
    if (!suit) {
      node.textContent = code;
      return node;
    }
    if (suit.red) node.classList.add("red");
    node.append(el("span", "rank", rankLabel(code.slice(0, -1))), el("span", "suit", suit.symbol));
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
    setText("game-name", state.game ? state.game.charAt(0).toUpperCase() + state.game.slice(1) : "");
    setText("round-id", state.round_id || "—");
    show($("round-number-box"), state.round_number_in_shoe !== null && state.round_number_in_shoe !== undefined);
    setText("round-number", state.round_number_in_shoe);
    const phase = $("phase");
    setText("phase", PHASES[state.phase] || state.phase);
    phase.dataset.phase = state.phase;
    renderCountdown();

    renderDevices(state.devices || {});

    show($("pause-banner"), !!state.paused);
    show($("prompt-box"), !state.paused);
    if (state.paused) {
      const pause = state.pause || {};
      setSizedText("pause-text", `PAUSED: ${pause.reason || "no reason given"} \u2014 call the supervisor`);
      const detail = [`by ${pause.by || "?"}`];
      if (pause.device) detail.push(`device ${pause.device}`);
      if (pause.since) detail.push(`since ${new Date(pause.since).toLocaleTimeString()}`);
      if (state.held_readings) detail.push(`${state.held_readings} reading(s) held`);
      setText("pause-detail", detail.join(" \u00b7 "));
    }
    setSizedText("prompt", state.prompt || "");
    $("prompt-box").classList.toggle("attention", !!game.awaiting_rescan);

    show($("baccarat-view"), state.game === "baccarat");
    show($("roulette-view"), state.game === "roulette");
    if (state.game === "baccarat") renderBaccarat(game);
    if (state.game === "roulette") renderRoulette(game);

    renderActions(game);
    guardPicker();
    if (state.paused) closeOverlay("pause-dialog");
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

  function renderHand(position, cards, total, next) {
    const row = $(`${position}-cards`);
    const key = cards.join(" ") + (next === position ? " +next" : "");
    if (row.dataset.key !== key) {
      row.dataset.key = key;
      const nodes = cards.map((code) => cardNode(code));
      // an empty slot where the next card goes: the dealer's eye lands on the right hand at once
      if (next === position) nodes.push(el("div", "slot", "?"));
      row.replaceChildren(...nodes);
    }
    setText(`${position}-total`, total === null || total === undefined ? "" : total);
    $(`hand-${position}`).classList.toggle("next", next === position);
  }

  function renderBaccarat(game) {
    // The arrow shows only while a card is actually wanted (not while bets are still being taken).
    const dealing =
      DEALING_PHASES.includes(state.round_phase) ||
      (state.round_phase === "betting_open" && !game.betting_closes_at);
    const next = !state.paused && dealing ? game.next_position : null;
    renderHand("player", game.player || [], game.player_total, next);
    renderHand("banker", game.banker || [], game.banker_total, next);
    const info = [];
    if (game.shoe_id) info.push(`Shoe ${game.shoe_id}`);
    if (game.cards_left_in_shoe !== undefined && game.cards_left_in_shoe !== null) {
      info.push(`${game.cards_left_in_shoe} cards left`);
    }
    if (game.last_round_of_shoe) info.push("LAST ROUND OF THE SHOE");
    if (game.shoe_finished) info.push("SHOE FINISHED");
    setText("shoe-info", info.join(" \u00b7 "));
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

  function renderActions(game) {
    const baccarat = state.game === "baccarat";
    const live = !state.paused;
    const wantsCard = live && DEALING_PHASES.includes(state.round_phase) && !!game.next_position;
    const manual = $("btn-manual");
    show(manual, baccarat && live && (!!game.awaiting_rescan || wantsCard));
    manual.classList.toggle("urgent", !!game.awaiting_rescan);
    show($("btn-close-betting"), live && state.round_phase === "betting_open");
    show($("btn-new-shoe"), baccarat && live && !!game.shoe_finished);
    const supervisor = $("btn-supervisor");
    supervisor.disabled = !!state.paused;
    setText("btn-supervisor", state.paused ? "Table paused" : "Call supervisor");
  }

  function renderCountdown() {
    const box = $("countdown");
    const closes = state && state.game_state ? state.game_state.betting_closes_at : null;
    if (!closes || state.paused || state.round_phase !== "betting_open") {
      show(box, false);
      return;
    }
    const seconds = Math.max(0, Math.ceil((Date.parse(closes) - Date.now()) / 1000));
    setText("countdown", `closes in ${seconds} s`);
    show(box, true);
  }

  // ---- connection -------------------------------------------------------------------------------------
  function setConnected(value) {
    connected = value;
    document.body.classList.toggle("offline", !value);
    document.body.classList.remove("connecting");
    show($("connection-lost"), !value);
    for (const button of document.querySelectorAll("button.action, button.reason, #btn-deal")) {
      button.classList.toggle("blocked", !value);
    }
  }

  function connect() {
    const source = new EventSource("/api/stream");
    source.addEventListener("state", (event) => {
      setConnected(true);
      render(JSON.parse(event.data));
    });
    source.addEventListener("error", () => {
      setConnected(false);
      // The browser retries by itself while the stream is CONNECTING; after some failures (e.g. an error
      // status while the controller restarts) it gives up (CLOSED): then we start over ourselves.
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        setTimeout(connect, STREAM_RETRY_MS);
      }
    });
  }

  // ---- commands ---------------------------------------------------------------------------------------
  async function send(kind, name, payload, button) {
    if (!connected) {
      toast("No connection to the controller — call the supervisor", "error");
      return false;
    }
    if (button) button.disabled = true; // one tap, one command
    try {
      const response = await fetch(`/api/${kind}/${name}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(payload || {}),
      });
      let body = null;
      try {
        body = await response.json();
      } catch (_) {
        body = null;
      }
      if (response.ok && body && body.status === "ok") return true;
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
    return (game.player || []).length + (game.banker || []).length;
  }

  function openPicker() {
    pickedRank = null;
    pickedSuit = null;
    updatePicked();
    const game = (state && state.game_state) || {};
    pickerContext = { round: state ? state.round_id : null, dealt: dealtCount() };
    const where = game.next_position ? `Next card \u2192 ${game.next_position === "player" ? "Player" : "Banker"}` : "";
    const why = game.awaiting_rescan ? "The scanner could not read the card. " : "";
    setText("picker-hint", `${why}${where}`);
    openOverlay("card-picker");
  }

  // A picker left open while the table moved on (the card was re-scanned after all, a new round) would
  // put a card in the wrong place: close it and say why.
  function guardPicker() {
    if (!pickerContext || pickerContext.sending || $("card-picker").hidden) return;
    if (state.paused || state.round_id !== pickerContext.round || dealtCount() !== pickerContext.dealt) {
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
    setInterval(renderCountdown, 250);
    connect();
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", wire);
  } else {
    wire();
  }
})();
