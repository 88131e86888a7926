"""The page model: what the board page shows, as JSON-ready dicts (docs/board.md).

:func:`build_model` reads every task from the index (one query, no task file parsed when the
index is fresh), puts each in a column, makes its card (claim freshness and UNKNOWNs from
:mod:`ledgit.core.readout`, the dependencies that block it, its outcome), the lanes per agent and
the two plots. The per-task work that needs the task's history and body -- the rendered
Markdown, the timeline with its merge provenance, the plot points -- is
:func:`task_extras`, kept in a :class:`ExtrasCache` keyed by the task's revision and its
history file's stat, so that a live page recomputes only what changed. Every text stays
text here; escaping is the renderer's and the browser's (``textContent``) job.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ledgit.boardpage.plots import claims_plot, opened_done_plot
from ledgit.core.history import MERGE_OP, HistoryError, parse_events, replay
from ledgit.core.historymerge import best_common_ancestor
from ledgit.core.readout import NOT_READY_OUTCOMES, build_readout, epoch_seconds, freshness_of
from ledgit.storage import parallel

#: Column keys and titles, in board order (DESIGN §4; open is split into ready / blocked).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("ready", "Ready"), ("blocked", "Blocked"), ("in_progress", "In progress"),
    ("waiting", "Waiting"), ("monitoring", "Monitoring"), ("parked", "Parked"),
    ("done", "Done"), ("dropped", "Dropped"), ("archived", "Archived"))
TRUST_GROUPS = ("locked", "candidate", "deprecated")
MODEL_VERSION = 1
SHORT_ID = 12  # hex digits of an event id or revision the page shows (as `ledgit history`)

Extras = dict[str, Any]
RenderBody = Callable[[str], str]
EncodeDetail = Callable[[Any], bytes]


def column_of(fields: Mapping[str, Any], status_of: Mapping[str, str]
              ) -> tuple[str, list[str]]:
    """(column key, reasons it is blocked) of one task. An open task is ``ready`` when it is
    unclaimed, every dependency is done and it has no drop/no_change outcome (as ``ledgit
    ready``), else ``blocked`` with the reasons; any other status is its own column."""
    status = str(fields["status"])
    if status != "open":
        return status, []
    reasons = []
    for dep in fields.get("depends_on") or []:
        state = status_of.get(dep)
        if state is None:
            reasons.append(f"depends on {dep}, which is not on this board")
        elif state != "done":
            reasons.append(f"depends on {dep} ({state})")
    kind = (fields.get("outcome") or {}).get("kind")
    if kind in NOT_READY_OUTCOMES:
        reasons.append(f"outcome {kind}")
    if fields.get("claim"):
        reasons.append(f"claimed by {fields['claim'].get('by')} while open")
    return ("blocked" if reasons else "ready"), reasons


def card_of(row: Mapping[str, Any], status_of: Mapping[str, str], now: str,
            ttl: int, unknown: Sequence[Mapping[str, str]] | None = None) -> dict[str, Any]:
    """One task's card: id, title, status, column, priority, owner, worker, labels,
    dependencies (each with its status and whether it blocks), claim freshness (state,
    reason, holder, since, heartbeat, age in s; ``UNKNOWN`` reasons from the readout), the
    outcome, next action, times and the readout's UNKNOWN list. ``row``: an index row;
    ``unknown``: :func:`static_unknown` of the row when known (else computed here)."""
    f: Mapping[str, Any] = row["fields"]
    column, blocked_by = column_of(f, status_of)
    fresh = freshness_of(f, now, ttl)
    if unknown is None:
        unknown = static_unknown(row, now, ttl)
    unknown = list(unknown)
    if fresh.state in ("stale", "contested"):  # as build_readout: it changes with the clock
        unknown.append({"field": "claim", "reason": fresh.reason})
    claim = f.get("claim")
    claim_view = None
    if claim:
        claim_view = {"holder": claim.get("by"), "since": claim.get("at"),
                      "heartbeat": claim.get("heartbeat"), "note": claim.get("note"),
                      "state": fresh.state, "reason": fresh.reason, "age": fresh.age}
    claim_unknown = [u["reason"] for u in unknown if u["field"] == "claim"]
    deps = []
    for dep in f.get("depends_on") or []:
        state = status_of.get(dep)
        deps.append({"id": dep, "status": state, "blocking": state != "done"})
    return {
        "id": f["id"], "title": f["title"], "status": f["status"], "column": column,
        "priority": f.get("priority"), "owner": f.get("owner"), "worker": f.get("worker"),
        "labels": list(f.get("labels") or []), "deps": deps, "blocked_by": blocked_by,
        "claim": claim_view, "claim_unknown": claim_unknown,
        "contested": [{"by": c.get("by"), "at": c.get("at")} for c in f.get("contested", [])],
        "outcome": f.get("outcome"), "next_action": f.get("next_action"),
        "waiting_on": f.get("waiting_on"), "created": f.get("created"),
        "last_modified": f.get("last_modified"), "path": row["path"],
        "revision": str(row["revision"])[:SHORT_ID], "unknown": unknown,
    }


def static_unknown(row: Mapping[str, Any], now: str, ttl: int) -> list[dict[str, str]]:
    """The readout's UNKNOWN list of an index row (:func:`ledgit.core.readout.build_readout`)
    without the entry that claim freshness adds (stale, contested): what depends only on the
    record, so it can be kept while the revision stays the same."""
    f: Mapping[str, Any] = row["fields"]
    readout = build_readout(f, str(row["body"]), path=str(row["path"]),
                            revision=str(row["revision"]), now=now, ttl=ttl)
    fresh = freshness_of(f, now, ttl)
    dynamic = fresh.reason if fresh.state in ("stale", "contested") else None
    return [u for u in readout["unknown"] if not (u["field"] == "claim"
                                                  and u["reason"] == dynamic)]


def lanes_of(cards: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One lane per agent holding a claim: ``{agent, tasks: [{id, title, since, heartbeat,
    state, reason}], last_heartbeat}``, agents sorted by name, tasks by claim time. A
    contested claim's losers get a lane entry too, marked ``lost``."""
    lanes: dict[str, list[dict[str, Any]]] = {}
    for card in cards:
        claim = card["claim"]
        if claim:
            lanes.setdefault(str(claim["holder"]), []).append(
                {"id": card["id"], "title": card["title"], "since": claim["since"],
                 "heartbeat": claim["heartbeat"], "state": claim["state"],
                 "reason": claim["reason"], "status": card["status"]})
        for lost in card["contested"]:
            lanes.setdefault(str(lost["by"]), []).append(
                {"id": card["id"], "title": card["title"], "since": lost["at"],
                 "heartbeat": None, "state": "lost",
                 "reason": f"lost this claim in a merge to {claim['holder'] if claim else '?'}",
                 "status": card["status"]})
    out = []
    for agent in sorted(lanes):
        tasks = sorted(lanes[agent], key=lambda t: (str(t["since"]), t["id"]))
        beats = [str(t["heartbeat"] or t["since"]) for t in tasks if t["state"] != "lost"]
        out.append({"agent": agent, "tasks": tasks,
                    "last_heartbeat": max(beats) if beats else None})
    return out


# --------------------------------------------------------------------------- per task


def task_extras(row: Mapping[str, Any], history: str | bytes | None,
                render_body: RenderBody, now: str, ttl: int) -> Extras:
    """What a task's detail and the plots need beyond its row: ``body_html`` (the body
    rendered by ``render_body``), ``timeline`` (see :func:`timeline_of`), ``history_error``
    (why the history could not be read or replayed, else None), ``done_at`` (when it was last
    made done), ``claims`` ([agent, at] per new claim) and ``unknown``
    (:func:`static_unknown`). ``history``: the history file's text or bytes
    (:func:`ledgit.core.history.parse_events`), None when it is missing. ``row``: an index row.
    Marshal-able (it crosses :mod:`ledgit.storage.parallel`)."""
    task_id = str(row["id"])
    extras: Extras = {"id": task_id, "body_html": render_body(str(row["body"])),
                      "timeline": [], "history_error": None, "done_at": None, "claims": [],
                      "unknown": static_unknown(row, now, ttl)}
    if history is None:
        extras["history_error"] = "no history file"
        return extras
    try:
        events = parse_events(history, task_id)
        extras["timeline"] = timeline_of(events, task_id)
    except HistoryError as exc:
        extras["history_error"] = str(exc)
        return extras
    for entry in extras["timeline"]:
        if entry.pop("done"):
            extras["done_at"] = entry["at"]
        claimed_by = entry.pop("claimed_by")
        if claimed_by:
            extras["claims"].append([claimed_by, entry["at"]])
    return extras


def timeline_of(events: Sequence[Mapping[str, Any]], task_id: str) -> list[dict[str, Any]]:
    """The history as a timeline, file order: per event ``{id, at, actor, op, note,
    changed (field names, "body"), done (it made the status done), claimed_by (a new claim's
    holder, else None), merge}``; ``merge`` is :func:`merge_provenance` for a merge event,
    else None. Raises HistoryError when a merge event's history cannot be replayed."""
    states = None
    by_id = {e["id"]: e for e in events}
    out = []
    for e in events:
        changed: list[str] = []
        done = False
        claimed_by = None
        for op in e.get("patch") or []:
            path = str(op.get("path", ""))
            parts = path.split("/")
            if path == "/body":
                name = "body"
            elif len(parts) >= 3 and parts[1] == "fields":
                name = parts[2]
            elif path == "/fields":
                value = op.get("value") or {}
                changed.extend(k for k in value if k not in changed)
                done = done or value.get("status") == "done"
                if isinstance(value.get("claim"), dict):
                    claimed_by = value["claim"].get("by")
                continue
            else:
                continue
            if name not in changed:
                changed.append(name)
            if path == "/fields/status" and op.get("value") == "done":
                done = True
            if path == "/fields/claim" and op.get("op") in ("add", "replace") and \
                    isinstance(op.get("value"), dict):
                claimed_by = op["value"].get("by")
        merge = None
        if e["op"] == MERGE_OP and len(e["parents"]) > 1:
            if states is None:
                states = replay(events, task_id)
            merge = merge_provenance(events, states, e, by_id)
            if merge["claim"] and merge["claim"]["changed"]:
                claimed_by = None  # the merge picks a claim; it makes none
        out.append({"id": e["id"][:SHORT_ID], "at": e["at"], "actor": e["actor"],
                    "op": e["op"], "note": e.get("note"), "changed": changed, "done": done,
                    "claimed_by": claimed_by, "merge": merge})
    return out


def merge_provenance(events: Sequence[Mapping[str, Any]], states: Mapping[str, Any],
                     event: Mapping[str, Any], by_id: Mapping[str, Mapping[str, Any]]
                     ) -> dict[str, Any]:
    """Where a merge event's fields came from: ``{sides: [{event, actor, at}], fields:
    [{field, from}], claim, conflicts}``. ``from`` names the side (its head's actor, with the
    event id when two sides share an actor) whose state holds the merged value, ``both``
    when every side does, ``merged`` when none does (sets, items, bodies combined by rule,
    DESIGN §7); only fields that differ from the sides' common ancestor are listed.
    ``claim``: ``{winner, lost, changed}`` when a side held a claim (``lost``: claimants
    contested by this merge, not already on a side's list), else None."""
    parents = list(event["parents"])
    merged = _flat(states[event["id"]])
    actors = [("merge " + p[:8] if by_id[p]["op"] == "merge" else str(by_id[p]["actor"]))
              if p in by_id else "?" for p in parents]
    names = [a if actors.count(a) == 1 else f"{a} ({p[:8]})"
             for a, p in zip(actors, parents, strict=True)]
    sides = [{"event": p[:SHORT_ID], "actor": a, "at": by_id[p]["at"] if p in by_id else None}
             for p, a in zip(parents, actors, strict=True)]
    base_id = best_common_ancestor([dict(e) for e in events], parents[0], parents[1])
    base = _flat(states[base_id]) if base_id is not None and base_id in states else {}
    side_states = [_flat(states[p]) if p in states else {} for p in parents]
    fields = []
    keys = sorted(set(merged) | set(base) | {k for s in side_states for k in s})
    for key in keys:
        if key == "last_modified" or merged.get(key) == base.get(key):
            continue
        holders = [n for n, s in zip(names, side_states, strict=True)
                   if s.get(key) == merged.get(key)]
        source = "both" if len(holders) == len(names) else (
            ", ".join(holders) if holders else "merged")
        fields.append({"field": key, "from": source})
    claim = None
    merged_claim = merged.get("claim")
    side_claims = [s.get("claim") for s in side_states]
    if merged_claim or any(side_claims):
        winner = merged_claim.get("by") if isinstance(merged_claim, dict) else None
        before = {str(c.get("by")) for s in side_states for c in s.get("contested") or []}
        lost = sorted({str(c.get("by")) for c in merged.get("contested") or []} - before)
        claim = {"winner": winner, "lost": lost,
                 "changed": merged_claim != base.get("claim")}
    meta = event.get("meta") or {}
    return {"sides": sides, "fields": fields, "claim": claim,
            "conflicts": list(meta.get("conflicts") or [])}


def _flat(state: Mapping[str, Any]) -> dict[str, Any]:
    """A replayed state's fields plus ``body``, one dict."""
    out = dict(state.get("fields") or {})
    out["body"] = state.get("body", "")
    return out


class ExtrasCache:
    """:func:`task_extras` per task id, kept while the task's revision and its history
    file's (mtime_ns, size, inode) stay the same. ``render_body``: the Markdown renderer."""

    def __init__(self, render_body: RenderBody) -> None:
        self.render_body = render_body
        self._entries: dict[str, tuple[tuple[Any, ...], Extras]] = {}

    def fill(self, rows: Sequence[Mapping[str, Any]], history_dir: str, *, now: str,
             ttl: int, fork: bool = True, encode_detail: EncodeDetail | None = None
             ) -> dict[str, Extras]:
        """The extras of every row (index rows), computing only the missing or outdated
        ones -- in forked workers when ``fork`` and there are many (:mod:`ledgit.storage.parallel`).
        Entries of tasks not in ``rows`` are dropped. A kept entry costs one stat of its
        history; a missing one is computed from the history read once (its key from the
        open file's stat, taken before the read: an append in between only makes the key
        older than the text, so the next fill computes it again).

        ``encode_detail`` (a file page, which embeds every detail): the worker also makes
        the task's :func:`detail_of` and encodes it with this function (JSON bytes) as
        ``detail_json``: the member ``"ID":{...}`` of the page's ``details`` object, in
        place of ``body_html`` and ``timeline``; so the details are built and encoded in
        the forked workers rather than after them in this process, which only joins the
        members (~0.2 s of the ~1.5 s of ``board --html`` at 10,000 tasks,
        bench/board_bench.py)."""
        keys: dict[str, tuple[Any, ...]] = {}
        mode = (encode_detail is not None,)
        todo: list[tuple[Mapping[str, Any], str]] = []
        for row in rows:
            tid = str(row["id"])
            path = os.path.join(history_dir, f"{tid}.jsonl")
            known = self._entries.get(tid)
            if known is not None:
                hkey: tuple[int, ...]
                try:
                    hkey = _history_key(os.stat(path))
                except OSError:
                    hkey = ()
                if known[0] == (row["revision"], *hkey, *mode):
                    keys[tid] = known[0]
                    continue
            todo.append((row, path))
        render = self.render_body

        def work(part: Sequence[tuple[Mapping[str, Any], str]]) -> list[Any]:
            out = []
            for row, path in part:
                hkey, text = _read_history(path)
                extras = task_extras(row, text, render, now, ttl)
                if encode_detail is not None:
                    extras["detail_json"] = b"".join((encode_detail(str(row["id"])), b":",
                                                      encode_detail(detail_of(row, extras))))
                    del extras["body_html"], extras["timeline"]
                out.append(((row["revision"], *hkey, *mode), extras))
            return out

        workers = parallel.workers_for(len(todo), 200) if fork else 1
        done = parallel.map_slices(todo, work, workers) if workers > 1 else work(todo)
        for key, extras in done:
            keys[extras["id"]] = tuple(key)
            self._entries[extras["id"]] = (tuple(key), extras)
        for tid in set(self._entries) - set(keys):
            del self._entries[tid]
        return {tid: entry[1] for tid, entry in self._entries.items()}


def _history_key(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _read_history(path: str) -> tuple[tuple[int, ...], bytes | None]:
    """(stat key, bytes) of a history file; ((), None) when there is none. Bytes: a line that
    is not UTF-8 is then named by parse_events (and ~0.05 s less at 10,000 histories).
    Unbuffered (one read to the end, no buffer object): ~0.05 s less CPU at 10,000."""
    try:
        with open(path, "rb", buffering=0) as fh:
            hkey = _history_key(os.fstat(fh.fileno()))
            return hkey, fh.readall()
    except FileNotFoundError:
        return (), None


# --------------------------------------------------------------------------- the board


def detail_of(row: Mapping[str, Any], extras: Mapping[str, Any]) -> dict[str, Any]:
    """A task's detail (``row``: its index row, ``extras``: its :func:`task_extras`): its
    id, the body as HTML, the response, state items grouped by
    trust (``locked``/``candidate``/``deprecated``; each with ``supersedes`` and
    ``superseded_by`` ids), the timeline, commits, gate and the history's problem if any."""
    f: Mapping[str, Any] = row["fields"]
    items = [dict(i) for i in f.get("items") or []]
    superseded_by: dict[str, list[str]] = {}
    for item in items:
        sup = item.get("supersedes") or []
        for old in [sup] if isinstance(sup, str) else sup:
            superseded_by.setdefault(str(old), []).append(str(item["id"]))
    groups: dict[str, list[dict[str, Any]]] = {t: [] for t in TRUST_GROUPS}
    for item in items:
        sup = item.get("supersedes") or []
        item["supersedes"] = [sup] if isinstance(sup, str) else list(sup)
        item["superseded_by"] = superseded_by.get(str(item["id"]), [])
        groups.setdefault(str(item.get("trust")), []).append(item)
    return {"id": str(row["id"]), "body_html": extras["body_html"], "response": f.get("response"),
            "gate": f.get("gate"), "commits": list(f.get("commits") or []),
            "signal": f.get("signal"), "items": groups, "timeline": extras["timeline"],
            "history_error": extras["history_error"]}


def build_model(rows: Sequence[Mapping[str, Any]], errors: Sequence[tuple[str, str]],
                extras: Mapping[str, Extras], *, now: str, ttl: int, archived: bool,
                board_name: str, details: bool,
                card_cache: dict[str, tuple[Any, dict[str, Any]]] | None = None
                ) -> dict[str, Any]:
    """The page model (docs/board.md): ``meta`` (board name, generated at, TTL, ``total``
    tasks on the board -- archived included, as ``ledgit list --all`` -- ``shown``,
    ``archived`` count and whether they are shown, skipped malformed files), ``columns``
    (key, title, count), ``cards``, ``lanes``, ``plots`` (SVG text) and, when ``details``,
    ``details`` per task id (:func:`detail_of`, or the JSON bytes of the member
    ``"ID":{...}`` that the extras hold as ``detail_json``, see
    :meth:`ExtrasCache.fill`). ``rows``: every valid task's index row, archived included.
    ``card_cache``: cards of an earlier call, reused while a task's revision and its
    dependencies' statuses stay the same and it holds no claim (whose age moves with the
    clock); updated in place."""
    status_of = {str(r["id"]): str(r["fields"]["status"]) for r in rows}
    cache = card_cache if card_cache is not None else {}
    all_cards = []
    for r in rows:
        tid = str(r["id"])
        f = r["fields"]
        key = (r["revision"], tuple(status_of.get(d) for d in f.get("depends_on") or ()))
        known = cache.get(tid)
        if known is not None and known[0] == key and not f.get("claim"):
            all_cards.append(known[1])
            continue
        card = card_of(r, status_of, now, ttl,
                       extras[tid]["unknown"] if tid in extras else None)
        cache[tid] = (key, card)
        all_cards.append(card)
    for tid in set(cache) - set(status_of):
        del cache[tid]
    cards = [c for c in all_cards if archived or c["column"] != "archived"]
    counts: dict[str, int] = {}
    for c in cards:
        counts[c["column"]] = counts.get(c["column"], 0) + 1
    columns = [{"key": k, "title": t, "count": counts.get(k, 0)} for k, t in COLUMNS
               if k != "archived" or archived]
    archived_count = sum(1 for c in all_cards if c["column"] == "archived")
    opened = [str(r["fields"].get("created")) for r in rows if r["fields"].get("created")]
    done = [str(e["done_at"]) for e in extras.values() if e.get("done_at")]
    claims = [(str(a), str(at)) for e in extras.values() for a, at in e.get("claims", [])]
    model: dict[str, Any] = {
        "version": MODEL_VERSION,
        "meta": {"board": board_name, "generated": now, "ttl": ttl, "total": len(all_cards),
                 "shown": len(cards), "archived": archived_count, "archived_shown": archived,
                 "errors": [{"path": p, "message": m} for p, m in errors],
                 "now_epoch": epoch_seconds(now)},
        "columns": columns,
        "cards": cards,
        "lanes": lanes_of(all_cards),
        "plots": {"opened_done": opened_done_plot(opened, done),
                  "claims": claims_plot(claims)},
    }
    if details:
        by_id = {str(r["id"]): r for r in rows}
        model["details"] = {
            c["id"]: (extras[c["id"]]["detail_json"] if "detail_json" in extras[c["id"]]
                      else detail_of(by_id[c["id"]], extras[c["id"]]))
            for c in cards if c["id"] in extras}
    return model
