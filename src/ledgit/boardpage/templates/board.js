"use strict";
// The board page (docs/board.md). Task text is only ever put in the page as text
// (textContent, option text); the two kinds of markup the page inserts are made by ledgit:
// a body rendered by cmarkgfm with raw HTML dropped, and the plots' SVG.
(function () {
  const LIVE = document.body.dataset.live === "yes";
  const PAGE = parseInt(document.body.dataset.pageSize, 10) || 50;
  let data = JSON.parse(document.getElementById("board-data").textContent);
  const shownPerColumn = {};
  let selected = null;     // id of the selected card
  let openId = null;       // id of the task whose detail is open
  let view = "board";
  let showEmpty = false;   // empty columns at full width

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function age(seconds) {
    if (seconds === null || seconds === undefined) return "";
    const s = Math.max(0, Math.round(seconds));
    if (s < 90) return s + " s";
    if (s < 5400) return Math.round(s / 60) + " min";
    if (s < 172800) return Math.round(s / 3600) + " h";
    return Math.round(s / 86400) + " d";
  }
  const $ = (id) => document.getElementById(id);
  // Times as a person reads them (issue 28): how long ago and the local date and time, the
  // RFC 3339 stamp on hover. Stamps carry microseconds; Date parses milliseconds.
  function parseStamp(iso) {
    const t = Date.parse(String(iso).replace(/(\.\d{3})\d+/, "$1"));
    return isNaN(t) ? null : t;
  }
  function localTime(t) {
    return new Date(t).toLocaleString([], {year: "numeric", month: "short", day: "numeric",
                                           hour: "2-digit", minute: "2-digit"});
  }
  function relative(t) {
    const s = (Date.now() - t) / 1000;
    return s < 0 ? "in " + age(-s) : (s < 45 ? "just now" : age(s) + " ago");
  }
  function when(iso) {
    const node = el("time", "when");
    const t = parseStamp(iso);
    if (iso === null || iso === undefined || t === null) { node.textContent = iso || "?"; return node; }
    node.dateTime = iso;
    node.title = iso;
    node.textContent = relative(t) + " (" + localTime(t) + ")";
    return node;
  }
  function fillTimes(root) {  // <time data-iso> put in the page by the template
    for (const node of root.querySelectorAll("time[data-iso]")) {
      node.replaceWith(Object.assign(when(node.dataset.iso), {id: node.id}));
    }
  }
  const UNKNOWN_WHY = "UNKNOWN: the record does not say, so ledgit does not guess";
  function unknownMark(reasons) {
    const mark = el("span", "unknown-mark", "UNKNOWN");
    mark.title = UNKNOWN_WHY + (reasons.length ? ":\n- " + reasons.join("\n- ") : "");
    return mark;
  }

  // ------------------------------------------------------------------ filters
  function fillSelect(id, values) {
    const select = $(id);
    const keep = select.value;
    while (select.options.length > 1) select.remove(1);
    for (const v of values) {
      const opt = el("option", null, v);
      opt.value = v;
      select.appendChild(opt);
    }
    select.value = values.includes(keep) ? keep : "";
  }
  function fillFilters() {
    const owners = new Set(), workers = new Set(), labels = new Set();
    for (const c of data.cards) {
      if (c.owner) owners.add(c.owner);
      if (c.worker) workers.add(c.worker);
      for (const l of c.labels) labels.add(l);
    }
    const sorted = (s) => Array.from(s).sort();
    fillSelect("f-owner", sorted(owners));
    fillSelect("f-worker", sorted(workers));
    fillSelect("f-label", sorted(labels));
  }
  function filters() {
    return {status: $("f-status").value, owner: $("f-owner").value,
            worker: $("f-worker").value, label: $("f-label").value,
            text: $("f-text").value.trim().toLowerCase()};
  }
  function matches(c, f) {
    if (f.status && c.column !== f.status) return false;
    if (f.owner && c.owner !== f.owner) return false;
    if (f.worker && c.worker !== f.worker) return false;
    if (f.label && !c.labels.includes(f.label)) return false;
    if (f.text) {
      const hay = (c.id + "\n" + c.title + "\n" + (c.next_action || "")).toLowerCase();
      if (!hay.includes(f.text)) return false;
    }
    return true;
  }

  // ------------------------------------------------------------------ cards
  function claimLine(c) {
    if (c.claim) {
      const cl = c.claim;
      const line = el("div", "claim " + cl.state,
        cl.state + ": " + cl.holder + " · " + age(cl.age) + " ago");
      line.title = cl.reason + (cl.heartbeat || cl.since ? "\nlast heartbeat " + (cl.heartbeat || cl.since) : "");
      if (c.claim_unknown.length) {
        line.appendChild(document.createTextNode(" · "));
        line.appendChild(unknownMark(c.claim_unknown));
      }
      return line;
    }
    if (c.claim_unknown.length) {
      const line = el("div", "claim unknown", "claim ");
      line.appendChild(unknownMark(c.claim_unknown));
      return line;
    }
    return null;
  }
  function card(c) {
    const node = el("article", "card");
    node.tabIndex = 0;
    node.dataset.id = c.id;
    if (c.id === selected) node.classList.add("selected");
    const head = el("div", "id");
    if (c.priority !== null && c.priority !== undefined) head.appendChild(el("span", "prio", "P" + c.priority));
    head.appendChild(document.createTextNode(c.id));
    node.appendChild(head);
    node.appendChild(el("div", "title", c.title));
    const people = [];
    if (c.owner) people.push("owner " + c.owner);
    if (c.worker) people.push("worker " + c.worker);
    if (people.length) node.appendChild(el("div", "meta", people.join(" · ")));
    if (c.labels.length) {
      const tags = el("div", "labels");
      for (const l of c.labels) tags.appendChild(el("span", "tag", l));
      node.appendChild(tags);
    }
    if (c.deps.length) {
      const deps = el("div", "meta deps", "deps: ");
      c.deps.forEach((d, i) => {
        if (i) deps.appendChild(document.createTextNode(", "));
        const span = el("span", "dep" + (d.blocking ? " blocking" : ""), d.id);
        span.title = d.status === null ? "not on this board" : d.status;
        deps.appendChild(span);
      });
      node.appendChild(deps);
    }
    const why = c.blocked_by.filter((r) => !r.startsWith("depends on "));  // deps: shown above
    if (why.length) node.appendChild(el("div", "meta blocked", "blocked: " + why.join("; ")));
    const claim = claimLine(c);
    if (claim) node.appendChild(claim);
    for (const lost of c.contested) node.appendChild(el("div", "claim contested", "contested: " + lost.by + " lost"));
    if (c.outcome) {
      node.appendChild(el("div", "outcome", c.outcome.kind + (c.outcome.reason ? ": " + c.outcome.reason : "")));
    }
    if (c.status === "waiting" && c.waiting_on) node.appendChild(el("div", "meta", "waiting on " + c.waiting_on));
    return node;
  }

  function renderBoard() {
    const f = filters();
    const byColumn = {};
    for (const col of data.columns) byColumn[col.key] = [];
    let shown = 0;
    for (const c of data.cards) {
      if (byColumn[c.column] && matches(c, f)) { byColumn[c.column].push(c); shown++; }
    }
    const root = $("view-board");
    root.replaceChildren();
    let empty = 0;
    for (const col of data.columns) {
      if (f.status && col.key !== f.status) continue;
      const list = byColumn[col.key];
      const section = el("section", "column");
      section.dataset.column = col.key;
      // A column with no card shown is a narrow strip, unless asked for (issue 28: eight
      // fixed columns overflowed a 1400 px window while six were empty).
      if (!list.length && !f.status) {
        empty++;
        if (!showEmpty) {
          section.classList.add("empty");
          section.title = col.title + ": no task" + (col.count ? " matches the filters" : "") +
            " (the button above shows empty columns)";
        }
      }
      const h = el("h2", null, col.title);
      const count = el("span", "count", list.length === col.count ? String(col.count)
        : list.length + " of " + col.count);
      h.appendChild(count);
      section.appendChild(h);
      const limit = shownPerColumn[col.key] || PAGE;
      for (const c of list.slice(0, limit)) section.appendChild(card(c));
      if (list.length > limit) {
        const more = el("button", "more", "show " + Math.min(PAGE, list.length - limit) +
          " more (" + (list.length - limit).toLocaleString() + " not shown)");
        more.type = "button";
        more.addEventListener("click", () => { shownPerColumn[col.key] = limit + PAGE; renderBoard(); });
        section.appendChild(more);
      }
      root.appendChild(section);
    }
    const toggle = $("toggle-empty");
    toggle.hidden = !empty;
    toggle.textContent = (showEmpty ? "hide " : "show ") + empty + " empty column" + (empty === 1 ? "" : "s");
    toggle.setAttribute("aria-pressed", showEmpty ? "true" : "false");
    $("unknown-legend").hidden = !root.querySelector(".unknown-mark");
    $("match-count").textContent = shown.toLocaleString() + " of " + data.meta.shown.toLocaleString() +
      " task(s) match";
    $("match-count").dataset.count = String(shown);
    $("match-count").dataset.text = f.text;  // the text filter this count is for (bench)
    document.body.dataset.renderedAt = String(Date.now());  // ms since the epoch (tests, bench)
  }

  function renderLanes() {
    const root = $("view-lanes");
    root.replaceChildren();
    if (!data.lanes.length) root.appendChild(el("p", "meta", "Nobody holds a claim."));
    for (const lane of data.lanes) {
      const box = el("section", "lane");
      box.dataset.agent = lane.agent;
      const h = el("h2", null, lane.agent + " · " + lane.tasks.length + " task(s)");
      if (lane.last_heartbeat) {
        h.appendChild(document.createTextNode(" · last heartbeat "));
        h.appendChild(when(lane.last_heartbeat));
      }
      box.appendChild(h);
      const ul = el("ul");
      for (const t of lane.tasks) {
        const li = el("li", "claim " + t.state);
        const link = el("a", null, t.id);
        link.href = "#";
        link.addEventListener("click", (e) => { e.preventDefault(); openDetail(t.id); });
        li.appendChild(link);
        li.appendChild(document.createTextNode(" " + t.title + " — " + t.state + " since "));
        li.appendChild(when(t.since));
        if (t.heartbeat) {
          li.appendChild(document.createTextNode(", heartbeat "));
          li.appendChild(when(t.heartbeat));
        }
        li.title = t.reason;
        ul.appendChild(li);
      }
      box.appendChild(ul);
      root.appendChild(box);
    }
  }

  // ------------------------------------------------------------------ detail
  function cardOf(id) { return data.cards.find((c) => c.id === id) || null; }
  // A file page embeds every task's detail in its own script element, parsed on the first
  // detail opened (the first paint parses only the cards); a served page fetches them.
  let embeddedDetails;
  function details() {
    if (embeddedDetails === undefined) {
      const node = document.getElementById("board-details");
      embeddedDetails = node ? JSON.parse(node.textContent) : null;
    }
    return embeddedDetails;
  }
  function field(parent, name, value) {
    if (value === null || value === undefined || value === "" ||
        (Array.isArray(value) && !value.length)) return;
    const p = el("div", "meta");
    p.appendChild(el("b", null, name + ": "));
    p.appendChild(document.createTextNode(Array.isArray(value) ? value.join(", ") : String(value)));
    parent.appendChild(p);
  }
  function renderDetail(c, d) {
    const box = $("detail");
    box.replaceChildren();
    const close = el("button", "close", "×");
    close.type = "button";
    close.title = "close (Esc)";
    close.addEventListener("click", closeDetail);
    box.appendChild(close);
    box.appendChild(el("div", "id", c.id + " · " + c.status + " · " + c.path));
    box.appendChild(el("h2", "title", c.title));
    field(box, "priority", c.priority);
    field(box, "owner", c.owner);
    field(box, "worker", c.worker);
    field(box, "labels", c.labels);
    field(box, "depends on", c.deps.map((x) => x.id + " (" + (x.status || "not on this board") + ")"));
    field(box, "next action", c.next_action);
    field(box, "gate", d.gate);
    field(box, "waiting on", c.waiting_on);
    field(box, "signal", d.signal);
    field(box, "commits", d.commits);
    if (c.claim) box.appendChild(el("div", "claim " + c.claim.state, c.claim.state + ": " + c.claim.reason));
    else if (c.claim_unknown.length) box.appendChild(el("div", "claim unknown", "claim UNKNOWN: " + c.claim_unknown.join("; ")));
    for (const lost of c.contested) {
      const line = el("div", "claim contested", "contested: " + lost.by + " (claimed ");
      line.appendChild(when(lost.at));
      line.appendChild(document.createTextNode(") lost it in a merge"));
      box.appendChild(line);
    }
    if (c.outcome) field(box, "outcome", c.outcome.kind + (c.outcome.reason ? ": " + c.outcome.reason : "") +
      (c.outcome.reuse ? " (reuse: " + c.outcome.reuse + ")" : ""));
    field(box, "response", d.response);
    if (c.unknown.length) {
      const h = el("h3", null, "Unknown");
      h.title = UNKNOWN_WHY;
      box.appendChild(h);
      const ul = el("ul", "unknown-list");
      for (const u of c.unknown) ul.appendChild(el("li", null, u.field + ": UNKNOWN (" + u.reason + ")"));
      box.appendChild(ul);
    }
    box.appendChild(el("h3", null, "Body"));
    const body = el("div", "body");
    body.innerHTML = d.body_html;  // cmarkgfm, raw HTML dropped (render.py)
    box.appendChild(body);
    for (const trust of ["locked", "candidate", "deprecated"]) {
      const items = d.items[trust] || [];
      if (!items.length) continue;
      box.appendChild(el("h3", null, trust + " items (" + items.length + ")"));
      for (const it of items) {
        const p = el("div", "item " + trust);
        p.id = "item-" + it.id;
        p.appendChild(el("b", null, "[" + it.kind + "] "));
        p.appendChild(document.createTextNode(it.text + (it.why ? " — why: " + it.why : "") +
          " (" + it.id + ", " + (it.by || "?") + ", "));
        p.appendChild(when(it.at));
        p.appendChild(document.createTextNode(")"));
        for (const [word, ids] of [["supersedes", it.supersedes], ["superseded by", it.superseded_by]]) {
          if (!ids.length) continue;
          p.appendChild(document.createTextNode(" " + word + " "));
          ids.forEach((x, i) => {
            if (i) p.appendChild(document.createTextNode(", "));
            const a = el("a", null, x);
            a.href = "#item-" + x;
            a.addEventListener("click", (e) => { e.preventDefault(); const t = document.getElementById("item-" + x); if (t) t.scrollIntoView(); });
            p.appendChild(a);
          });
        }
        box.appendChild(p);
      }
    }
    box.appendChild(el("h3", null, "History (" + d.timeline.length + " events)"));
    if (d.history_error) box.appendChild(el("p", "unknown-list", "history: " + d.history_error));
    const ul = el("ul", "timeline");
    for (const ev of d.timeline) {
      const li = el("li", ev.merge ? "merge" : null);
      li.appendChild(el("b", null, ev.op));
      li.appendChild(document.createTextNode(" by " + ev.actor + " "));
      li.appendChild(when(ev.at));
      if (ev.changed.length) li.appendChild(document.createTextNode(" — " + ev.changed.join(", ")));
      if (ev.note) li.appendChild(el("div", "meta", ev.note));
      if (ev.merge) {
        const m = ev.merge;
        li.appendChild(el("div", "meta", "sides: " + m.sides.map((s) => s.actor + " (" + s.event.slice(0, 8) + ", " + s.at + ")").join(" + ")));
        if (m.fields.length) {
          const table = el("table", "provenance");
          for (const f of m.fields) {
            const tr = el("tr");
            tr.appendChild(el("td", null, f.field));
            tr.appendChild(el("td", null, "from " + f.from));
            table.appendChild(tr);
          }
          li.appendChild(table);
        }
        if (m.claim && m.claim.winner) {
          li.appendChild(el("div", "claim " + (m.claim.lost.length ? "contested" : "fresh"),
            "claim won by " + m.claim.winner + (m.claim.lost.length ? "; lost: " + m.claim.lost.join(", ") : "")));
        }
        if (m.conflicts.length) li.appendChild(el("div", "claim contested", "conflicts: " + m.conflicts.join(", ")));
      }
      ul.appendChild(li);
    }
    box.appendChild(ul);
    box.hidden = false;
  }
  function openDetail(id) {
    const c = cardOf(id);
    if (!c) return;
    openId = id;
    selected = id;
    const embedded = details();
    if (embedded) {
      if (embedded[id]) renderDetail(c, embedded[id]);
      return;
    }
    fetch("task/" + encodeURIComponent(id) + ".json", {cache: "no-store"})
      .then((r) => r.ok ? r.json() : Promise.reject(new Error(r.statusText)))
      .then((d) => { if (openId === id) renderDetail(cardOf(id) || c, d); })
      .catch((e) => { const box = $("detail"); box.replaceChildren(el("p", "unknown-list", "could not load " + id + ": " + e.message)); box.hidden = false; });
  }
  function closeDetail() { openId = null; $("detail").hidden = true; }

  // ------------------------------------------------------------------ views, keys
  // A view that is not shown is rendered when it is shown next (a 10,000-task board's lanes
  // are thousands of nodes a live update would otherwise rebuild unseen).
  const stale = {lanes: true, plots: false};  // the page comes with the plots of its data
  function renderShown() {
    if (view === "lanes" && stale.lanes) { renderLanes(); stale.lanes = false; }
    if (view === "plots" && stale.plots) {
      $("plot-opened-done").innerHTML = data.plots.opened_done;  // ledgit's SVG (plots.py)
      $("plot-claims").innerHTML = data.plots.claims;
      stale.plots = false;
    }
  }
  function setView(name) {
    view = name;
    for (const b of document.querySelectorAll(".views button")) b.classList.toggle("active", b.dataset.view === name);
    $("view-board").hidden = name !== "board";
    $("view-lanes").hidden = name !== "lanes";
    $("view-plots").hidden = name !== "plots";
    $("filters").hidden = name !== "board";
    $("unknown-legend").hidden = name !== "board" || !document.querySelector("#view-board .unknown-mark");
    renderShown();
  }
  function render(fresh) {
    renderBoard();
    stale.lanes = true;
    if (fresh) stale.plots = true;
    renderShown();
    document.body.dataset.ready = "yes";
  }
  function focusCard(node) {
    if (!node) return;
    for (const s of document.querySelectorAll(".card.selected")) s.classList.remove("selected");
    node.classList.add("selected");
    selected = node.dataset.id;
    node.focus();
  }
  function move(dx, dy) {
    const columns = Array.from(document.querySelectorAll("#view-board .column")).filter((c) => c.querySelector(".card"));
    if (!columns.length) return;
    const current = document.querySelector("#view-board .card.selected");
    let ci = current ? columns.indexOf(current.closest(".column")) : -1;
    if (ci < 0) { focusCard(columns[0].querySelector(".card")); return; }
    const cards = Array.from(columns[ci].querySelectorAll(".card"));
    let ri = cards.indexOf(current);
    if (dx) {
      ci = Math.max(0, Math.min(columns.length - 1, ci + dx));
      const next = columns[ci].querySelectorAll(".card");
      focusCard(next[Math.min(ri, next.length - 1)]);
    } else {
      ri = Math.max(0, Math.min(cards.length - 1, ri + dy));
      focusCard(cards[ri]);
    }
  }
  document.addEventListener("keydown", (e) => {
    const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement;
    if (e.key === "Escape") { if (typing) e.target.blur(); closeDetail(); return; }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    const keys = {j: [0, 1], ArrowDown: [0, 1], k: [0, -1], ArrowUp: [0, -1],
                  h: [-1, 0], ArrowLeft: [-1, 0], l: [1, 0], ArrowRight: [1, 0]};
    if (e.key === "/") { e.preventDefault(); setView("board"); $("f-text").focus(); }
    else if (keys[e.key] && view === "board") { e.preventDefault(); move(keys[e.key][0], keys[e.key][1]); }
    else if (e.key === "Enter" && selected) { e.preventDefault(); openDetail(selected); }
    else if (e.key === "b") setView("board");
    else if (e.key === "a") setView("lanes");
    else if (e.key === "p") setView("plots");
  });
  $("view-board").addEventListener("click", (e) => {
    const node = e.target.closest(".card");
    if (node) { focusCard(node); openDetail(node.dataset.id); }
  });
  for (const b of document.querySelectorAll(".views button")) b.addEventListener("click", () => setView(b.dataset.view));
  for (const id of ["f-status", "f-owner", "f-worker", "f-label"]) $(id).addEventListener("change", renderBoard);
  $("f-text").addEventListener("input", renderBoard);
  // The filters are never sent anywhere (and the policy allows no inline handler to say so).
  $("filters").addEventListener("submit", (e) => e.preventDefault());
  $("toggle-empty").addEventListener("click", () => { showEmpty = !showEmpty; renderBoard(); });

  // ------------------------------------------------------------------ live
  function refresh() {
    return fetch("data.json", {cache: "no-store"})
      .then((r) => r.ok ? r.json() : Promise.reject(new Error(r.statusText)))
      .then((next) => {
        data = next;
        document.body.dataset.serial = String(data.meta.serial);
        const summary = "The board holds " + data.meta.total.toLocaleString() + " task(s)" +
          (data.meta.archived && !data.meta.archived_shown ? ", " + data.meta.archived.toLocaleString() +
           " of them archived and hidden (ledgit board --archived shows them)" : "") +
          ". Updated ";
        $("summary").replaceChildren(document.createTextNode(summary), when(data.meta.generated),
                                     document.createTextNode("."));
        fillFilters();
        render(true);
        if (openId) openDetail(openId);
      });
  }
  if (LIVE) {
    const source = new EventSource("events?since=" + (data.meta.serial || ""));
    source.addEventListener("changed", () => { refresh().catch(() => {}); });
    source.addEventListener("open", () => { $("live-state").textContent = "live"; $("live-state").classList.remove("down"); });
    source.addEventListener("error", () => { $("live-state").textContent = "reconnecting"; $("live-state").classList.add("down"); });
  }
  document.body.dataset.serial = String(data.meta.serial || "");
  fillTimes(document);
  fillFilters();
  render(false);
})();
