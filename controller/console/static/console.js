// The studio supervisor's console. Plain JavaScript, no framework, no network but this console.
// Every text that comes from a table goes through textContent (never innerHTML): a pause reason or a
// device's detail string must never be able to inject markup into the page.
"use strict";

(() => {
  const { $, el, meta } = web; // /static/web.js
  const TOKEN = meta("console-token");
  const BOOT = meta("console-boot");
  // the page a restarted console served again by itself: the sign-in says why it is asked for
  const RESTARTED = new URLSearchParams(window.location.search).has("restarted");
  if (RESTARTED) window.history.replaceState(null, "", window.location.pathname);
  const reloadAfterRestart = () => window.location.replace("/?restarted=1");
  const SUITS = { S: ["\u2660", false], H: ["\u2665", true], D: ["\u2666", true], C: ["\u2663", false] };
  const PHASES = {
    waiting: "waiting",
    betting_open: "betting open",
    betting_closed: "betting closed",
    in_play: "in play",
    paused: "PAUSED",
  };
  const DETAIL_REFRESH_MS = 200; // the open table's details are fetched again at most this often

  const setText = (node, text) => {
    const value = text === undefined || text === null ? "" : String(text);
    if (node.textContent !== value) node.textContent = value;
  };

  const tables = new Map(); // table id -> {summary, tile}
  let selected = null; // the open table's id
  let selectedRev = null;
  let detail = null; // its details, as last fetched
  let detailFetch = null; // in flight
  let detailAgain = false;
  let clockOffset = 0; // the console's clock minus this browser's (ms)
  let stream = null;
  let user = null;
  // whether this console hears the broker now: while it does not, nothing shown of any table is known to
  // be true, and every tile says so (grey, "unknown") instead of keeping its last green ONLINE
  let brokerUp = true;
  // what the grid shows: the paused or offline ones only, one game, a search; and whether a table that
  // comes to need attention sounds (kept in this browser)
  const filters = { paused: false, offline: false, game: "", text: "" };
  const store = (() => {
    try {
      return window.localStorage;
    } catch (_) {
      return null;
    }
  })();
  let sound = !!(store && store.getItem("console-sound") === "on");
  let audio = null;
  let studioName = "";
  let alerts = 0; // tables that came to need attention since the page opened (also on body[data-alerts])

  const now = () => Date.now() + clockOffset;

  function duration(ms) {
    if (!(ms >= 0)) return "";
    const s = Math.floor(ms / 1000);
    if (s < 60) return `${s}s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
    const h = Math.floor(m / 60);
    return `${h}h ${String(m % 60).padStart(2, "0")}m`;
  }
  const since = (iso) => (iso ? duration(now() - Date.parse(iso)) : "");
  const clock = (iso) => (iso ? new Date(iso).toLocaleTimeString([], { hour12: false }) : "");

  function cardText(code) {
    const suit = SUITS[String(code).slice(-1)];
    if (!suit) return String(code);
    const rank = String(code).slice(0, -1);
    return (rank === "T" ? "10" : rank) + suit[0];
  }

  // the card codes in a result's words as cards ("KH" -> "K♥"), the way the detail view draws them
  const cardsInText = (text) => String(text).replace(/\b([2-9TJQKA])([SHDC])\b/g, (code) => cardText(code));

  // a round id without the table's id it begins with (the tile already names the table)
  const shortRound = (tableId, roundId) =>
    roundId && roundId.startsWith(`${tableId}-`) ? `#${roundId.slice(tableId.length + 1)}` : roundId || "";

  // ---- the grid ---------------------------------------------------------------------------------------
  function tileFor(id) {
    let entry = tables.get(id);
    if (entry) return entry;
    const tile = el("div", "tile");
    tile.dataset.table = id;
    tile.tabIndex = 0;
    tile.setAttribute("role", "button");
    const head = el("div", "tile-head");
    head.append(el("span", "tile-id", id), el("span", "tile-game"), el("span", "badge tile-link"));
    const alert = el("div", "tile-alert");
    alert.append(el("div", "alert-wait"), el("div", "alert-why"));
    // what was dealt (cut at the tile's edge if it must be) and the outcome, always whole
    const result = el("div", "tile-result");
    result.append(el("span", "result-dealt"), el("span", "result-outcome"));
    tile.append(
      head,
      el("div", "tile-round"),
      alert,
      el("div", "tile-devices"),
      el("div", "tile-flags"),
      result,
    );
    tile.addEventListener("click", () => openTable(id));
    tile.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") openTable(id);
    });
    $("grid").append(tile);
    const parts = {};
    for (const node of tile.querySelectorAll("[class]")) parts[node.className.split(" ").pop()] = node;
    entry = { summary: null, tile, parts };
    tables.set(id, entry);
    return entry;
  }

  function renderTile(summary) {
    const entry = tileFor(summary.table_id);
    const before = entry.summary;
    if (before && !before.attention && summary.attention) needsAttention(summary);
    entry.summary = summary;
    const tile = entry.tile;
    const q = (cls) => entry.parts[cls];
    const offline = summary.link === "offline" || summary.link === "missing";
    const linkShown = brokerUp ? summary.link : "unknown";
    tile.classList.toggle("paused", !!summary.paused);
    tile.classList.toggle("offline", offline);
    tile.classList.toggle("stale", !brokerUp);
    tile.classList.toggle("attention", !!summary.attention);
    tile.classList.toggle("trouble", !summary.attention && hasTrouble(summary));
    tile.dataset.link = summary.link;
    tile.dataset.seq = summary.last_sequence_seen ?? "";
    tile.dataset.rev = summary.rev;
    setText(q("tile-game"), summary.title || summary.game || "");
    const link = q("tile-link");
    setText(link, linkShown.toUpperCase());
    link.dataset.link = linkShown;
    link.title = !brokerUp
      ? `last seen ${summary.link}; this console has no broker`
      : summary.offline_with_broker
        ? "its Last Will fired as the broker went down: probably the broker's shutdown, not the table"
        : "";
    // an offline table's phase is not known: what it last said is not shown as if it were current
    const phase = offline ? `unknown (${lastSeen(summary)})` : PHASES[summary.phase] || summary.phase || "";
    setText(q("tile-round"), [phase, shortRound(summary.table_id, summary.round_id)].join("  "));
    q("tile-round").dataset.phase = offline ? "unknown" : summary.phase || "";
    renderTileAlert(entry);
    // the devices and flags are rebuilt only when they changed (most updates are a new event and state)
    const devicesKey = JSON.stringify([brokerUp, summary.devices || {}, summary.last_seen_known]);
    if (entry.devicesKey !== devicesKey) {
      entry.devicesKey = devicesKey;
      q("tile-devices").replaceChildren(
        ...Object.entries(summary.devices || {}).map(([name, device]) => {
          const status = brokerUp ? device.status || "unknown" : "unknown";
          // an offline table's device: unknown, and when it was last heard of, on the chip itself
          const seen = brokerUp && status === "unknown" && device.last_seen ? ` (${lastSeen(summary)})` : "";
          const chip = el("span", "chip " + status, `${name} ${status}${seen}`);
          chip.dataset.device = name;
          chip.title = deviceNote(device);
          return chip;
        }),
      );
    }
    const flags = [];
    if (summary.delivery_refused) flags.push(["flag bad", `delivery refused: ${summary.delivery_refused.reason}`]);
    if (summary.backlog) flags.push(["flag warn", `backlog ${summary.backlog}`]);
    if (summary.disk && summary.disk.status !== "ok") {
      flags.push(["flag bad", `disk ${summary.disk.status}: ${Math.round(summary.disk.free_bytes / 1048576)} MiB free`]);
    }
    const flagsKey = JSON.stringify(flags);
    if (entry.flagsKey !== flagsKey) {
      entry.flagsKey = flagsKey;
      q("tile-flags").replaceChildren(...flags.map(([cls, text]) => el("span", cls, text)));
    }
    renderTileResult(entry);
  }

  // when an offline (or missing) table was last heard of, in local time: "last seen 10:31:02", or "last seen
  // before 10:31:02" when it was offline already as this console connected (a Last Will carries no time)
  function lastSeen(s) {
    if (!s.last_seen) return "last seen: not known";
    return `last seen ${s.last_seen_known ? "" : "before "}${clock(s.last_seen)}`;
  }

  // what a device's chip or row says beside its status: its detail, or when its health was last known
  function deviceNote(device) {
    if (!brokerUp) return `unknown: this console has no broker (last seen ${device.status || "?"})`;
    if (device.status === "unknown" && device.last_seen) {
      return `unknown (last seen ${device.last_status || "?"} at ${clock(device.last_seen)}, ${since(device.last_seen)} ago)`;
    }
    return device.detail || "";
  }

  // a device's detail that is the pause's technical detail is shown once, in the pause
  const sameAsPause = (d, device) =>
    brokerUp && !!d.paused && !!d.explanation && !!device.detail && device.detail === d.explanation.detail;

  // a pause in a person's words (the table's raw reason is in the details, once)
  const pauseHeadline = (s) => (s.explanation && s.explanation.headline) || (s.pause && s.pause.reason) || "";

  // a table that came to need attention: counted, and a short tone if sound is on
  function needsAttention(summary) {
    alerts += 1;
    document.body.dataset.alerts = String(alerts);
    if (!sound) return;
    try {
      audio = audio || new AudioContext();
      const tone = audio.createOscillator();
      const gain = audio.createGain();
      tone.frequency.value = summary.paused ? 880 : 660;
      gain.gain.value = 0.15;
      tone.connect(gain).connect(audio.destination);
      tone.start();
      tone.stop(audio.currentTime + 0.25);
    } catch (_) {
      // no audio in this browser: the tab title and the tile still say it
    }
  }

  function shown(s) {
    if (filters.paused && !s.paused) return false;
    if (filters.offline && !(s.link === "offline" || s.link === "missing")) return false;
    if (filters.game && s.game !== filters.game) return false;
    if (filters.text) {
      const words = `${s.table_id} ${s.title || ""} ${s.game || ""}`.toLowerCase();
      if (!words.includes(filters.text)) return false;
    }
    return true;
  }

  function hasTrouble(s) {
    return !!(s.delivery_refused || (s.disk && s.disk.status !== "ok") || (s.device_problems || []).length);
  }

  function renderTileAlert(entry) {
    const s = entry.summary;
    const alert = entry.parts["tile-alert"];
    const parts = [];
    if (s.link === "offline") parts.push("OFFLINE");
    if (s.link === "missing") parts.push("NOT HEARD FROM (the broker has nothing of it)");
    if (s.paused) parts.push(`PAUSED: ${pauseHeadline(s)}`);
    alert.hidden = !parts.length;
    if (!parts.length) return;
    // how long first; a long reason is cut after a few lines on the tile (all of it in the title, and in
    // the table's details)
    const waited = s.waiting_since ? `waiting ${s.waiting_since_known ? "" : "≥ "}${since(s.waiting_since)}` : "";
    setText(entry.parts["alert-wait"], waited);
    const why = parts.join(" · ");
    setText(entry.parts["alert-why"], why);
    const title = s.explanation && s.explanation.waits_for ? `${why} · waiting for ${s.explanation.waits_for}` : why;
    if (alert.title !== title) alert.title = title;
  }

  function renderTileResult(entry) {
    const s = entry.summary;
    const box = entry.parts["tile-result"];
    const last = s.last_result;
    // how long ago first; what was dealt may be cut at the tile's edge, the outcome never is (all of the
    // result's words are in the title, and in the table's details)
    const text = last ? cardsInText(last.text) : "";
    const split = !!(last && last.outcome);
    const dealt = !last ? "no result seen yet" : `${since(last.time)} ago: ${cardsInText(split ? last.dealt : last.text)}`;
    setText(entry.parts["result-dealt"], dealt);
    setText(entry.parts["result-outcome"], split ? `→ ${cardsInText(last.outcome)}` : "");
    if (box.title !== text) box.title = text;
  }

  // paused and offline tables first, the longest waiting first; then the others by name
  function reorder() {
    const all = [...tables.values()].map((entry) => entry.summary);
    all.sort((a, b) => {
      if (a.attention !== b.attention) return a.attention ? -1 : 1;
      if (a.attention) {
        const wa = a.waiting_since || "9999";
        const wb = b.waiting_since || "9999";
        if (wa !== wb) return wa < wb ? -1 : 1;
      }
      return a.table_id < b.table_id ? -1 : a.table_id > b.table_id ? 1 : 0;
    });
    all.forEach((summary, index) => {
      const tile = tables.get(summary.table_id).tile;
      const order = String(index);
      if (tile.style.order !== order) tile.style.order = order;
      const hide = !shown(summary);
      if (tile.hidden !== hide) tile.hidden = hide;
    });
    const games = [...new Set(all.map((s) => s.game).filter(Boolean))].sort();
    const select = $("filter-game");
    const known = [...select.options].slice(1).map((o) => o.value);
    if (known.join() !== games.join()) {
      select.replaceChildren(el("option", null, "all games"), ...games.map((g) => el("option", null, g)));
      select.options[0].value = "";
      select.value = games.includes(filters.game) ? filters.game : "";
    }
    const paused = all.filter((s) => s.paused).length;
    const offline = all.filter((s) => s.link === "offline" || s.link === "missing").length;
    setText($("count-tables"), `${all.length} table${all.length === 1 ? "" : "s"}`);
    setText($("count-paused"), `${paused} paused`);
    setText($("count-offline"), `${offline} offline`);
    $("count-offline").hidden = !offline && !filters.offline;
    $("count-paused").hidden = !paused && !filters.paused;
    // the count in the tab's title: seen from another tab or window
    const needing = all.filter((s) => s.attention).length;
    const title = `${needing ? `(${needing}) ` : ""}Studio console${studioName ? ` — ${studioName}` : ""}`;
    if (document.title !== title) document.title = title;
  }

  function applyUpdate(update) {
    clockOffset = Date.parse(update.now) - Date.now();
    studioName = update.studio;
    setText($("studio"), update.studio);
    const link = update.link;
    const wasUp = brokerUp;
    brokerUp = !!link.connected;
    document.body.classList.toggle("no-broker", !brokerUp);
    $("link").dataset.connected = String(link.connected);
    setText($("link-text"), link.connected ? "connected" : `disconnected (${link.detail}) since ${clock(link.since)}`);
    $("link-lost").hidden = link.connected;
    setText($("link-lost"), link.connected ? "" : `Lost the broker: ${link.detail}. Reconnecting… What is shown may be out of date.`);
    if (update.full) {
      const present = new Set(update.tables.map((s) => s.table_id));
      for (const id of [...tables.keys()]) if (!present.has(id)) removeTable(id);
    }
    // the broker came or went: every tile is drawn again (its link and devices known, or unknown)
    if (wasUp !== brokerUp) for (const entry of tables.values()) if (entry.summary) renderTile(entry.summary);
    for (const summary of update.tables) renderTile(summary);
    for (const id of update.removed) removeTable(id);
    reorder();
    if (selected !== null) {
      const entry = tables.get(selected);
      if (!entry) {
        showGone();
      } else if (entry.summary.rev !== selectedRev) {
        refreshDetail();
      }
    }
  }

  function removeTable(id) {
    const entry = tables.get(id);
    if (!entry) return;
    entry.tile.remove();
    tables.delete(id);
  }

  // every second: how long each waits, and how long since each result
  setInterval(() => {
    for (const entry of tables.values()) {
      renderTileAlert(entry);
      renderTileResult(entry);
    }
    if (detail) renderPause(detail);
  }, 1000);

  // ---- one table ---------------------------------------------------------------------------------------
  function openTable(id) {
    selected = id;
    selectedRev = null;
    detail = null;
    for (const entry of tables.values()) entry.tile.classList.toggle("selected", entry.tile.dataset.table === id);
    $("detail").hidden = false;
    $("d-outcome").hidden = true;
    outcomeShownIn = null;
    $("d-held-box").hidden = true;
    // nothing of the table shown before is left, and nothing can be sent, until this one's details are in
    setText($("d-table"), id);
    for (const node of ["d-game", "d-link", "d-round", "d-phase", "d-boot", "d-prompt"]) setText($(node), "");
    for (const node of ["d-flags", "d-cards", "d-round-events", "d-results"]) $(node).replaceChildren();
    for (const table of ["d-devices", "d-history"]) $(table).tBodies[0].replaceChildren();
    $("d-pause").hidden = true;
    for (const button of document.querySelectorAll("#d-actions button")) button.disabled = true;
    refreshDetail();
  }

  function closeTable() {
    selected = null;
    detail = null;
    $("detail").hidden = true;
    for (const entry of tables.values()) entry.tile.classList.remove("selected");
  }

  function showGone() {
    setText($("d-prompt"), "This table has left the studio (its retained topics were cleared).");
    $("d-actions").hidden = true;
  }

  async function refreshDetail() {
    if (selected === null) return;
    if (detailFetch) {
      detailAgain = true;
      return;
    }
    const id = selected;
    detailFetch = (async () => {
      try {
        const reply = await fetch(`/api/tables/${encodeURIComponent(id)}`, { cache: "no-store" });
        if (reply.status === 401) return checkSession();
        if (reply.status === 404) return showGone();
        const data = await reply.json();
        if (selected === id) {
          detail = data;
          selectedRev = data.rev;
          renderDetail(data);
        }
      } catch (error) {
        // the stream's reconnection brings it back
      }
    })();
    await detailFetch;
    await new Promise((resolve) => setTimeout(resolve, DETAIL_REFRESH_MS));
    detailFetch = null;
    if (detailAgain) {
      detailAgain = false;
      refreshDetail();
    }
  }

  function renderPause(d) {
    const box = $("d-pause");
    box.hidden = !(d.paused || d.link === "offline" || d.link === "missing");
    if (box.hidden) return;
    const pause = d.pause || {};
    const explained = d.explanation;
    const what = [];
    if (d.link === "offline") what.push("OFFLINE (Last Will)");
    if (d.link === "missing") what.push("NOT HEARD FROM: the broker held nothing of this table after it came back");
    if (d.paused) what.push(`PAUSED: ${pauseHeadline(d)}`);
    setText($("d-pause-reason"), what.join(" · "));
    let waits = "";
    if (d.paused && explained) {
      waits = explained.ready_to_resume
        ? `Ready to resume — ${explained.supervisor_action}`
        : `Waiting for ${explained.waits_for} — Resume is offered once it is`;
    }
    setText($("d-pause-waits"), waits);
    $("d-pause-waits").dataset.ready = String(!!(explained && explained.ready_to_resume));
    const tech = d.paused && explained && explained.detail && explained.detail !== explained.headline ? explained.detail : "";
    setText($("d-pause-tech"), tech ? `Technical detail: ${tech}` : "");
    const info = [];
    if (d.paused) {
      info.push(`by ${pause.by || "?"}`);
      if (pause.device) info.push(`device ${pause.device}`);
      if (pause.since) info.push(`since ${clock(pause.since)} (${since(pause.since)})`);
      if (d.held_readings) info.push(`${d.held_readings} reading(s) held`);
    } else if (d.waiting_since) {
      info.push(`seen offline ${d.waiting_since_known ? "since" : "before"} ${clock(d.waiting_since)} (${since(d.waiting_since)})`);
    }
    setText($("d-pause-detail"), info.join(" · "));
  }

  function renderDetail(d) {
    $("d-actions").hidden = false;
    setText($("d-table"), d.table_id);
    setText($("d-game"), d.title || d.game || "");
    setText($("d-link"), (d.link || "").toUpperCase());
    $("d-link").dataset.link = d.link;
    setText($("d-round"), d.round_id || "—");
    const offline = d.link === "offline" || d.link === "missing";
    setText($("d-phase"), offline ? `unknown (${lastSeen(d)})` : PHASES[d.phase] || d.phase || "—");
    $("d-phase").dataset.phase = offline ? "unknown" : d.phase || "";
    setText($("d-boot"), d.boot ?? "—");
    $("detail").classList.toggle("paused", !!d.paused);
    renderPause(d);

    const flags = [];
    if (d.delivery_refused) {
      const r = d.delivery_refused;
      flags.push(`Delivery refused by the broker: ${r.reason} (code ${r.code}) since ${clock(r.since)}, from event ${r.sequence}`);
    }
    if (d.backlog) flags.push(`Backlog: ${d.backlog} event(s) journaled, not yet seen published`);
    if (d.disk && d.disk.status !== "ok") flags.push(`Disk ${d.disk.status}: ${Math.round(d.disk.free_bytes / 1048576)} MiB free`);
    if ((d.waiting_for_devices || []).length) flags.push(`Waiting for ${d.waiting_for_devices.join(", ")}`);
    $("d-flags").replaceChildren(...flags.map((text) => el("div", "flag bad", text)));
    renderHeld(d);
    forgetStaleOutcome(d);

    // Resume is offered when the table would accept it: a pause that still waits for a device (or for the
    // table itself) would only be refused
    const ready = !!d.paused && brokerUp && !(d.explanation && !d.explanation.ready_to_resume);
    $("btn-resume").disabled = !ready;
    $("btn-resume").title = d.paused && !ready && d.explanation ? `waiting for ${d.explanation.waits_for}` : "";
    $("btn-void").disabled = !d.round_id;
    $("btn-pause").disabled = !!d.paused;
    $("btn-dismiss").hidden = d.link !== "missing";
    $("btn-dismiss").disabled = d.link !== "missing";
    const devices = Object.keys(d.devices || {});
    const select = $("d-device");
    const current = select.value;
    select.replaceChildren(...devices.map((name) => el("option", null, name)));
    if (devices.includes(current)) select.value = current;
    $("btn-device").disabled = !devices.length;

    // while paused, what the supervisor does (the dealer's own prompt says "call the supervisor")
    const supervisorNow = d.paused && d.explanation ? `Supervisor: ${d.explanation.supervisor_action}` : "";
    setText($("d-prompt"), supervisorNow || (d.prompt ? `Dealer prompt: ${d.prompt}` : ""));
    renderCards(d);
    const note = $("d-round-note");
    note.hidden = !(d.round_events || []).length || d.round_seen_from_start;
    setText(note, "This round began before this console was listening: its first events are not shown.");
    $("d-round-events").replaceChildren(
      ...(d.round_events || []).map((e) => {
        const li = el("li", "event " + e.type.replaceAll(".", "-"));
        li.append(el("span", "ev-time", clock(e.time)), el("span", "ev-type", e.type), el("span", "ev-text", e.until ? `${e.text} until ${clock(e.until)}` : e.text));
        if (e.historical) li.append(el("span", "ev-hist", "late"));
        return li;
      }),
    );
    $("d-results").replaceChildren(
      ...(d.results || []).map((r) => {
        const li = el("li");
        li.append(el("span", "ev-time", clock(r.time)), el("span", "ev-round", r.round_id), el("span", "ev-text", cardsInText(r.text)));
        return li;
      }),
    );
    $("d-devices").tBodies[0].replaceChildren(
      ...Object.entries(d.devices || {}).map(([name, device]) => {
        const tr = el("tr", "device " + (device.status || ""));
        tr.dataset.device = name;
        tr.append(
          el("td", "strong", name),
          el("td", "dev-status", brokerUp ? device.status : "unknown"),
          el("td", null, [device.code, sameAsPause(d, device) ? "(the pause's technical detail, above)" : deviceNote(device)].filter(Boolean).join(" ")),
          el("td", null, device.since ? `since ${clock(device.since)}` : ""),
        );
        return tr;
      }),
    );
    $("d-history").tBodies[0].replaceChildren(
      ...(d.history || []).map((h) => {
        const tr = el("tr", "history " + (h.source || ""));
        tr.dataset.status = h.status || "";
        tr.append(
          el("td", null, clock(h.time)),
          el("td", "who", h.who),
          el("td", "what", h.what),
          el("td", null, h.detail),
          el("td", "outcome", h.outcome || ""),
        );
        return tr;
      }),
    );
  }

  // what a resume would apply, listed before the Resume button: a supervisor sees what they let through
  function renderHeld(d) {
    const held = d.paused ? d.held || [] : [];
    const count = d.paused ? d.held_readings || 0 : 0;
    $("d-held-box").hidden = !count;
    setText($("d-held-title"), `Held for the resume (${count}), applied in this order:`);
    const rows = held.map((h) => {
      const li = el("li", "held");
      const what = h.card ? cardText(h.card) : h.reading === "CardSeen" ? "a card (not named: it may lie face down)" : h.reading;
      li.append(el("span", "held-device", h.device), el("span", "held-what", what));
      if (h.raw) li.append(el("span", "held-raw", h.raw));
      return li;
    });
    // a table from before the list says only how many
    if (count > held.length) rows.push(el("li", "held", `${count - held.length} more, not listed by the table`));
    $("d-held").replaceChildren(...rows);
  }

  // the table's answer to an earlier command (a refusal, no reply) is about a situation that is gone once
  // the table's pause or round changed: it goes, rather than sit above the buttons as if about now
  const situation = (d) => JSON.stringify([!!d.paused, (d.pause && d.pause.since) || null, d.round_id || null]);
  let outcomeShownIn = null; // the situation the outcome shown was about
  function forgetStaleOutcome(d) {
    const outcome = $("d-outcome");
    if (outcome.hidden || outcomeShownIn === null) return;
    // a command that was taken changed the situation itself: its "ok" stays
    if (["ok", "sending"].includes(outcome.dataset.status)) return;
    if (situation(d) !== outcomeShownIn) {
      outcome.hidden = true;
      setText(outcome, "");
      outcomeShownIn = null;
    }
  }

  function renderCards(d) {
    const game = d.game_state || {};
    const box = $("d-cards");
    const rows = [];
    if (Array.isArray(game.positions)) {
      for (const position of game.positions) {
        const row = el("div", "place");
        row.dataset.position = position.name;
        row.append(el("span", "place-name", position.label));
        for (const code of position.cards || []) {
          const suit = SUITS[String(code).slice(-1)];
          const card = el("span", "card" + (suit && suit[1] ? " red" : ""), cardText(code));
          card.dataset.code = code;
          row.append(card);
        }
        if (position.total !== null && position.total !== undefined) row.append(el("span", "place-total", `(${position.total})`));
        rows.push(row);
      }
    } else if (game.last_result) {
      const row = el("div", "place");
      row.append(el("span", "place-name", "Last number"), el("span", `number ${game.last_result.color}`, game.last_result.number));
      if (game.ball_launched) row.append(el("span", "place-total", "ball launched"));
      rows.push(row);
    }
    box.replaceChildren(...rows);
  }

  // ---- commands ----------------------------------------------------------------------------------------
  async function send(name, payload) {
    const id = selected;
    const outcome = $("d-outcome");
    outcome.hidden = false;
    outcome.dataset.status = "sending";
    setText(outcome, `${name}: sending as ${user}…`);
    let result;
    try {
      const reply = await fetch(`/api/tables/${encodeURIComponent(id)}/commands/${name}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-console-token": TOKEN },
        body: JSON.stringify(payload),
      });
      result = await reply.json();
      if (reply.status === 401 || reply.status === 403) checkSession(); // signed out, or the console restarted
    } catch (error) {
      result = { status: "error", error: `the console did not answer: ${error}` };
    }
    if (selected !== id) return;
    outcome.dataset.status = result.status;
    const words = {
      ok: "ok",
      error: "refused by the table",
      refused: "refused by the broker",
      no_reply: "no reply",
      not_connected: "not sent",
    };
    let text = `${name} → ${id}: ${words[result.status] || result.status}`;
    if (result.status === "refused") text = `${name} → ${id}: ${result.error}`;
    else if (result.error) text += `: ${result.error}`;
    setText(outcome, text);
    outcomeShownIn = detail && detail.table_id === id ? situation(detail) : null;
    refreshDetail();
  }

  function openDialog(id) {
    for (const node of document.querySelectorAll(".dlg-table")) setText(node, selected);
    $(id).hidden = false;
  }
  function closeDialogs() {
    for (const id of ["pause-dialog", "void-dialog"]) $(id).hidden = true;
  }
  for (const button of document.querySelectorAll(".btn-cancel")) button.addEventListener("click", closeDialogs);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeDialogs();
  });

  $("btn-resume").addEventListener("click", () => send("resume", {}));
  $("btn-pause").addEventListener("click", () => {
    $("pause-reason").value = "";
    openDialog("pause-dialog");
    $("pause-reason").focus();
  });
  $("pause-form").addEventListener("submit", (event) => {
    event.preventDefault();
    closeDialogs();
    const reason = $("pause-reason").value.trim();
    send("pause", reason ? { reason } : {});
  });

  let voidRound = null;
  $("btn-void").addEventListener("click", () => {
    if (!detail || !detail.round_id) return;
    voidRound = detail.round_id;
    setText($("void-round"), voidRound || "");
    $("void-reason").value = "";
    $("btn-void-next").disabled = true;
    $("void-step-reason").hidden = false;
    $("void-step-confirm").hidden = true;
    openDialog("void-dialog");
    $("void-reason").focus();
  });
  $("void-reason").addEventListener("input", () => {
    $("btn-void-next").disabled = !$("void-reason").value.trim();
  });
  $("void-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const reason = $("void-reason").value.trim();
    if (!reason) return; // a void needs a reason
    setText($("void-question"), `Void round ${voidRound} of ${selected} ("${reason}")? Every bet of the round is refunded.`);
    $("void-step-reason").hidden = true;
    $("void-step-confirm").hidden = false;
    $("btn-void-confirm").focus();
  });
  $("btn-void-confirm").addEventListener("click", () => {
    closeDialogs();
    send("void_round", { reason: $("void-reason").value.trim(), round_id: voidRound });
  });
  $("btn-device").addEventListener("click", () => {
    send("device_action", { device: $("d-device").value, action: $("d-device-action").value });
  });
  $("btn-close-detail").addEventListener("click", closeTable);
  for (const [id, key] of [["count-paused", "paused"], ["count-offline", "offline"]]) {
    $(id).addEventListener("click", () => {
      filters[key] = !filters[key];
      $(id).setAttribute("aria-pressed", String(filters[key]));
      reorder();
    });
  }
  $("search").addEventListener("input", () => {
    filters.text = $("search").value.trim().toLowerCase();
    reorder();
  });
  $("filter-game").addEventListener("change", () => {
    filters.game = $("filter-game").value;
    reorder();
  });
  $("btn-wall").addEventListener("click", () => {
    const on = !document.body.classList.contains("wall");
    document.body.classList.toggle("wall", on);
    $("btn-wall").setAttribute("aria-pressed", String(on));
  });
  const showSound = () => {
    $("btn-sound").setAttribute("aria-pressed", String(sound));
    setText($("btn-sound"), sound ? "Sound on" : "Sound off");
  };
  $("btn-sound").addEventListener("click", () => {
    sound = !sound;
    if (store) store.setItem("console-sound", sound ? "on" : "off");
    showSound();
  });
  showSound();
  $("btn-dismiss").addEventListener("click", async () => {
    const id = selected;
    const reply = await fetch(`/api/tables/${encodeURIComponent(id)}/dismiss`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-console-token": TOKEN },
      body: "{}",
    });
    if (!reply.ok) {
      const outcome = $("d-outcome");
      outcome.hidden = false;
      outcome.dataset.status = "error";
      setText(outcome, `dismiss → ${id}: ${(await reply.json()).error}`);
    }
  });

  // ---- session and stream ------------------------------------------------------------------------------
  function startStream() {
    if (stream) stream.close();
    stream = new EventSource("/api/stream");
    stream.addEventListener("update", (message) => applyUpdate(JSON.parse(message.data)));
    stream.addEventListener("error", () => {
      if (stream.readyState === EventSource.CLOSED) {
        // refused (signed out, or the console restarted): ask again
        setTimeout(checkSession, 2000);
      }
    });
  }

  async function checkSession() {
    let info;
    try {
      info = await (await fetch("/api/session", { cache: "no-store" })).json();
    } catch (error) {
      setTimeout(checkSession, 2000);
      return;
    }
    if (info.boot && info.boot !== BOOT) {
      // served by an earlier start of the console: this page's token is stale and its sign-in is gone
      reloadAfterRestart();
      return;
    }
    setText($("studio"), info.studio);
    user = info.user;
    // the broker is the signed-in supervisor's connection: nothing to say of it before (it was a red
    // "connecting…" on the sign-in page)
    $("link").hidden = !user;
    setText($("user-name"), user ? `Signed in as ${user}` : "");
    $("btn-sign-out").hidden = !(user && info.sign_in);
    if (user) {
      $("sign-in").hidden = true;
      if (!stream || stream.readyState === EventSource.CLOSED) startStream();
    } else {
      if (stream) stream.close();
      stream = null;
      for (const id of [...tables.keys()]) removeTable(id);
      closeTable();
      $("sign-in").hidden = false;
      if (RESTARTED && !$("si-error").textContent) {
        setText($("si-error"), "The console restarted: sign in again.");
      }
      $("si-user").focus();
    }
  }

  $("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    setText($("si-error"), "");
    $("btn-sign-in").disabled = true;
    try {
      const reply = await fetch("/api/session", {
        method: "POST",
        headers: { "content-type": "application/json", "x-console-token": TOKEN },
        body: JSON.stringify({ username: $("si-user").value.trim(), password: $("si-password").value }),
      });
      const result = await reply.json();
      if (reply.status === 403 && String(result.error).startsWith("stale page")) {
        reloadAfterRestart(); // the console restarted since this page was served
        return;
      }
      if (reply.ok) {
        $("si-password").value = "";
        await checkSession();
      } else {
        setText($("si-error"), result.error || `refused (${reply.status})`);
      }
    } catch (error) {
      setText($("si-error"), `the console did not answer: ${error}`);
    } finally {
      $("btn-sign-in").disabled = false;
    }
  });

  $("btn-sign-out").addEventListener("click", async () => {
    await fetch("/api/session", { method: "DELETE", headers: { "x-console-token": TOKEN } });
    checkSession();
  });

  checkSession();
})();
