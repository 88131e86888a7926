"""The `ledgit get` readout (DESIGN §4): everything a fresh process needs about one task.

Pure: built from a Record plus where it was read (path, revision) and the clock. Anything
missing, contradictory or stale is listed in ``unknown`` as ``{"field", "reason"}`` and shown
as ``UNKNOWN (reason)`` in text, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledgit.ops import acceptance_of, claim_freshness, goal_of
from ledgit.record import Record, lifecycle_problems

READOUT_VERSION = 1
ACTIVE = ("open", "in_progress", "waiting", "monitoring", "parked")


def build_readout(record: Record, *, path: str, now: str, ttl: int,
                  revision: str | None = None) -> dict[str, Any]:
    """The readout as a JSON-ready dict (shape documented in docs/cli.md, ``readout: 1``).

    ``path``: the task file relative to the repository root; ``revision``: the record's
    revision (computed when None); ``ttl``: claim TTL in seconds.
    """
    f = record.fields
    status = f["status"]
    goal = goal_of(record.body)
    acceptance = acceptance_of(record.body)
    fresh = claim_freshness(record, now, ttl)
    items: list[dict[str, Any]] = f.get("items", [])
    unknown: list[dict[str, str]] = []

    def missing(field: str, reason: str) -> None:
        unknown.append({"field": field, "reason": reason})

    for field, message in lifecycle_problems(f):
        missing(field, f"contradictory: {message}")
    if goal is None:
        missing("goal", "no '## Goal' section in the body")
    if acceptance is None:
        missing("acceptance", "no '## Acceptance' section in the body")
    elif not acceptance:
        missing("acceptance", "the '## Acceptance' section is empty")
    if fresh.state in ("stale", "contested"):
        missing("claim", fresh.reason)
    if status == "in_progress" and not f.get("claim"):
        missing("claim", "status in_progress but nobody holds a claim")
    if status in ACTIVE:
        if not f.get("next_action"):
            missing("next_action", "not set")
        if not f.get("gate"):
            missing("gate", "not set")
    if status == "monitoring" and not f.get("signal"):
        missing("signal", "status monitoring but no signal recorded")
    candidates = [i for i in items if i["trust"] == "candidate"]
    if candidates and not f.get("owner"):
        missing("owner", f"not set: {len(candidates)} candidate item(s) wait for an owner "
                         "to accept them")
    if f.get("claim") and status in ("open", "waiting", "monitoring"):
        missing("claim", f"contradictory: a claim is held but status is {status}")
    return {
        "readout": READOUT_VERSION,
        "id": record.id,
        "title": f["title"],
        "status": status,
        "path": path,
        "revision": revision or record.revision,
        "created": f["created"],
        "last_modified": f["last_modified"],
        "priority": f.get("priority"),
        "owner": f.get("owner"),
        "worker": f.get("worker"),
        "claim": f.get("claim"),
        "freshness": {"state": fresh.state, "reason": fresh.reason,
                      "age_seconds": fresh.age, "ttl_seconds": fresh.ttl},
        "contested": f.get("contested", []),
        "next_action": f.get("next_action"),
        "gate": f.get("gate"),
        "waiting_on": f.get("waiting_on"),
        "signal": f.get("signal"),
        "outcome": f.get("outcome"),
        "response": f.get("response"),
        "depends_on": f.get("depends_on", []),
        "labels": f.get("labels", []),
        "commits": f.get("commits", []),
        "goal": goal,
        "acceptance": acceptance or [],
        "locked_items": [i for i in items if i["trust"] == "locked"],
        "artifacts": [i for i in items if i["kind"] == "artifact" and i["trust"] != "deprecated"],
        "candidate_items": candidates,
        "deprecated_items": [i["id"] for i in items if i["trust"] == "deprecated"],
        "unknown": unknown,
        "fields": dict(f),
        "body": record.body,
    }


def _unknown_for(readout: Mapping[str, Any], field: str) -> str | None:
    reasons = [u["reason"] for u in readout["unknown"] if u["field"] == field]
    return "; ".join(reasons) if reasons else None


def render_readout(readout: Mapping[str, Any], *, body: bool = True) -> str:
    """The readout as text: labelled lines, then goal, acceptance, items, UNKNOWNs, body."""
    r = readout

    def show(field: str, value: Any) -> str:
        reason = _unknown_for(r, field)
        if value in (None, "", [], {}):
            return f"UNKNOWN ({reason or 'not set'})"
        return str(value) + (f"  [UNKNOWN: {reason}]" if reason else "")

    lines = [f"{r['id']}  {r['title']}",
             f"status:        {r['status']}",
             f"path:          {r['path']}",
             f"revision:      {r['revision']}",
             f"created:       {r['created']}",
             f"last_modified: {r['last_modified']}"]
    people = []
    for key in ("priority", "owner", "worker"):
        if r.get(key) is not None:
            people.append(f"{key} {r[key]}")
    if people:
        lines.append("who:           " + ", ".join(people))
    claim = r["claim"]
    fr = r["freshness"]
    if claim:
        lines.append(f"claim:         {claim['by']} since {claim['at']} ({fr['state']}: "
                     f"{fr['reason']})")
        if claim.get("note"):
            lines.append(f"claim note:    {claim['note']}")
        for c in r.get("contested") or []:
            lines.append(f"contested by:  {c['by']} (claimed {c['at']}, lost in a merge)")
    else:
        extra = _unknown_for(r, "claim")
        lines.append("claim:         none" + (f"  [UNKNOWN: {extra}]" if extra else ""))
    lines.append(f"next_action:   {show('next_action', r['next_action'])}")
    lines.append(f"gate:          {show('gate', r['gate'])}")
    if r["waiting_on"] or r["status"] == "waiting":
        lines.append(f"waiting_on:    {show('waiting_on', r['waiting_on'])}")
    if r["signal"] or r["status"] == "monitoring":
        lines.append(f"signal:        {show('signal', r['signal'])}")
    outcome = r["outcome"]
    if outcome:
        text = outcome["kind"] + (f": {outcome['reason']}" if outcome.get("reason") else "")
        if outcome.get("reuse"):
            text += f" (reuse: {outcome['reuse']})"
        lines.append(f"outcome:       {text}")
    elif r["status"] in ("parked", "dropped"):
        lines.append(f"outcome:       {show('outcome', None)}")
    if r["response"]:
        lines.append(f"response:      {r['response']}")
    if r["depends_on"]:
        lines.append(f"depends_on:    {', '.join(r['depends_on'])}")
    if r["labels"]:
        lines.append(f"labels:        {', '.join(r['labels'])}")
    if r["commits"]:
        lines.append(f"commits:       {', '.join(r['commits'])}")
    lines.append("goal:")
    lines.append("  " + show("goal", r["goal"]).replace("\n", "\n  "))
    lines.append("acceptance:")
    if r["acceptance"]:
        lines += [f"  - {a}" for a in r["acceptance"]]
    else:
        lines.append(f"  {show('acceptance', None)}")
    lines.append("locked items:" + ("" if r["locked_items"] else " none"))
    lines += [_item_line(i) for i in r["locked_items"]]
    lines.append("artifacts:" + ("" if r["artifacts"] else " none"))
    lines += [_item_line(i) for i in r["artifacts"]]
    if r["candidate_items"]:
        lines.append(f"candidate items ({len(r['candidate_items'])}, not yet accepted):")
        lines += [_item_line(i) for i in r["candidate_items"]]
    if r["deprecated_items"]:
        lines.append(f"deprecated items: {len(r['deprecated_items'])} "
                     "(see --json or the task file)")
    if r["unknown"]:
        lines.append("UNKNOWN:")
        lines += [f"  {u['field']}: {u['reason']}" for u in r["unknown"]]
    text = "\n".join(lines) + "\n"
    if body and r["body"]:
        text += "---\n" + str(r["body"])
    return text


def _item_line(item: Mapping[str, Any]) -> str:
    line = f"  {item['id']} [{item['kind']}, {item['trust']}] {item['text']}"
    if item.get("why"):
        line += f" (why: {item['why']})"
    if item.get("evidence"):
        line += f" (evidence: {item['evidence']})"
    if item.get("supersedes"):
        line += f" (supersedes {', '.join(item['supersedes'])})"
    return str(line).replace("\n", "\n    ")
