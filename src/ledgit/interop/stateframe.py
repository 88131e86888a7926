"""Stateframe ``task.ledger.json`` <-> one ledgit task (docs/interop.md, "Stateframe").

Import: the file is validated against Stateframe's own JSON Schema (vendored, MIT:
``ledgit/data/stateframe.*``) plus its validator's reference rules, then mapped:

- ``task`` → the record: ``id`` (the UUID is a valid ledgit id), ``title``, ``objective`` →
  body ``## Goal``, ``status`` (:data:`STATUS_MAP`), ``tags`` → ``labels``, ``created_at`` /
  ``updated_at`` → ``created`` / ``last_modified``; ``domain`` under ``x.stateframe``;
- ``commits`` → ``x.stateframe.commits`` (keyed by commit id, each with its position ``seq``);
  the latest ``requested_next_action`` also becomes ``next_action``;
- ``state_items`` → ``items``: id (the UUID), type → kind (:data:`KIND_MAP`), content → text,
  rationale → why, status → trust (provisional ↔ candidate, locked, deprecated), confidence →
  ``confidence`` as a decimal string (``repr`` of the float: the shortest text that reads back
  as the same float, so it is lossless; ledgit's hashed content holds no floats), ``by`` = the
  author of the introducing commit; ``introduced_in_commit``, ``superseded_in_commit``,
  ``correction_of``, ``provenance`` and a type with no kind of its own under the item's
  ``x.stateframe``.

Export writes the same shape back (a task imported and not changed exports to the same JSON),
and turns what happened in ledgit since (or, for a task born in ledgit, its whole history) into
commits: one per history event, with deterministic UUIDs (uuid5 of the event id).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

import jsonschema

from ledgit.core.errors import USAGE, LedgitError, located
from ledgit.core.history import HistoryError, parse_events, replay, topological_order
from ledgit.core.importroot import is_root
from ledgit.core.merge import NO_ACCOUNT
from ledgit.core.record import Record, make_record
from ledgit.core.schema import is_valid_id
from ledgit.core.timestamps import format_timestamp, normalize_timestamp, parse_timestamp
from ledgit.interop.incoming import Incoming, Skip
from ledgit.storage.safefiles import read_source

SOURCE = "stateframe"
SCHEMA_FILE = "stateframe.task.ledger.schema.json"
#: uuid5 namespace of the ids ledgit makes up on export (tasks, items, commits).
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://ledgit.invalid/stateframe")

#: Stateframe task status -> ledgit status (and back: :data:`STATUS_BACK`).
STATUS_MAP = {"active": "open", "paused": "parked", "complete": "done", "abandoned": "dropped"}
STATUS_BACK = {"open": "active", "in_progress": "active", "waiting": "active",
               "monitoring": "active", "parked": "paused", "done": "complete",
               "archived": "complete", "dropped": "abandoned"}
PAUSED_REASON = "paused in Stateframe"
ABANDONED_REASON = "abandoned in Stateframe"
#: Stateframe state item type -> ledgit item kind (and back: :data:`KIND_BACK`).
KIND_MAP = {"decision": "decision", "rejected_option": "rejected", "artifact": "artifact",
            "blocker": "blocker", "assumption": "fact", "open_question": "question",
            "resolved_question": "question", "next_step": "next_step",
            "context_fact": "fact"}
KIND_BACK = {"fact": "context_fact", "decision": "decision", "question": "open_question",
             "blocker": "blocker", "rejected": "rejected_option", "artifact": "artifact",
             "next_step": "next_step"}
TRUST_MAP = {"provisional": "candidate", "locked": "locked", "deprecated": "deprecated"}
TRUST_BACK = {v: k for k, v in TRUST_MAP.items()}
DEFAULT_CONFIDENCE = 0.8  # Stateframe's CLI default (`add --confidence`)
DEFAULT_DOMAIN = "coding"
TASK_KEYS = ("id", "title", "objective", "domain", "status", "created_at", "updated_at", "tags")
COMMIT_KEYS = ("id", "task_id", "parent_commit_id", "author_type", "author_id", "session_tool",
               "timestamp", "summary", "requested_next_action", "raw_context_ref")
ITEM_KEYS = ("id", "task_id", "introduced_in_commit", "superseded_in_commit", "type", "content",
             "rationale", "confidence", "provenance", "status", "correction_of", "created_at")


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    """The vendored Stateframe JSON Schema (draft 2020-12)."""
    text = resources.files("ledgit").joinpath(f"data/{SCHEMA_FILE}").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def problems(ledger: Any) -> list[str]:
    """Why ``ledger`` is not a valid Stateframe file: JSON Schema errors (with their JSON
    path), then the reference rules of Stateframe's validator (task ids, dangling commit and
    item references, a deprecated item without ``superseded_in_commit``), then timestamps
    that are not RFC 3339. Empty when valid."""
    validator = jsonschema.Draft202012Validator(
        schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    out = [f"{_path(e.absolute_path)}: {e.message}"
           for e in sorted(validator.iter_errors(ledger), key=lambda e: list(e.absolute_path))]
    if out:
        return out
    task = ledger["task"]
    commits = {c["id"] for c in ledger["commits"]}
    items = {i["id"] for i in ledger["state_items"]}
    for n, c in enumerate(ledger["commits"]):
        if c["task_id"] != task["id"]:
            out.append(f"commits[{n}].task_id: not the task's id")
        if c["parent_commit_id"] is not None and c["parent_commit_id"] not in commits:
            out.append(f"commits[{n}].parent_commit_id: no such commit")
    for n, i in enumerate(ledger["state_items"]):
        if i["task_id"] != task["id"]:
            out.append(f"state_items[{n}].task_id: not the task's id")
        for key in ("introduced_in_commit", "superseded_in_commit"):
            if i[key] is not None and i[key] not in commits:
                out.append(f"state_items[{n}].{key}: no such commit")
        if i["correction_of"] is not None and i["correction_of"] not in items:
            out.append(f"state_items[{n}].correction_of: no such state item")
        if i["status"] == "deprecated" and i["superseded_in_commit"] is None:
            out.append(f"state_items[{n}].superseded_in_commit: a deprecated item needs it")
    stamps = [("task.created_at", task["created_at"]), ("task.updated_at", task["updated_at"])]
    stamps += [(f"commits[{n}].timestamp", c["timestamp"]) for n, c in enumerate(ledger["commits"])]
    stamps += [(f"state_items[{n}].created_at", i["created_at"])
               for n, i in enumerate(ledger["state_items"])]
    for where, text in stamps:
        try:
            parse_timestamp(text)
        except ValueError as exc:
            out.append(f"{where}: {exc}")
    return out


def _path(parts: Sequence[Any]) -> str:
    text = ""
    for p in parts:
        text += f"[{p}]" if isinstance(p, int) else (f".{p}" if text else str(p))
    return text or "(top level)"


# --------------------------------------------------------------------------- import


def _stamp(text: str) -> tuple[str, str | None]:
    canonical = normalize_timestamp(text)
    return canonical, (None if canonical == text else text)


def _confidence_text(value: float | int) -> str:
    """A JSON number as lossless decimal text: ``repr`` of the float (shortest round trip)."""
    return repr(float(value))


def ledger_to_record(ledger: Any, where: str = "<stateframe>") -> Record:
    """Map a (validated) Stateframe ledger onto one Record. Raises LedgitError (exit 2)
    listing the first problems when the file is not a valid Stateframe ledger."""
    found = problems(ledger)
    if found:
        more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
        raise LedgitError(located("not a valid Stateframe ledger: " + "; ".join(found[:3])
                                  + more, where), USAGE)
    task = ledger["task"]
    sid: str = task["id"]
    fields: dict[str, Any] = {}
    x: dict[str, Any] = {}
    fields["id"] = sid if is_valid_id(sid) else "SF-" + uuid.uuid5(NAMESPACE, sid).hex[:12]
    if fields["id"] != sid:
        x["task_id"] = sid
    title: str = task["title"]
    if "\n" in title or "\r" in title or not title.strip():
        fields["title"] = " ".join(title.split()) or "(untitled)"
        x["title"] = title
    else:
        fields["title"] = title
    status = STATUS_MAP[task["status"]]
    fields["status"] = status
    if status == "parked":
        fields["outcome"] = {"kind": "park", "reason": PAUSED_REASON}
    elif status == "dropped":
        fields["outcome"] = {"kind": "drop", "reason": ABANDONED_REASON}
    elif status == "done":
        fields["response"] = NO_ACCOUNT
    tags = task["tags"]
    if all(t == t.strip() and t and "\n" not in t for t in tags) and len(set(tags)) == len(tags):
        if tags:
            fields["labels"] = list(tags)
    else:
        x["json"] = {"tags": json.dumps(tags, ensure_ascii=False)}
    fields["created"], verbatim = _stamp(task["created_at"])
    if verbatim:
        x["created_at"] = verbatim
    fields["last_modified"], verbatim = _stamp(task["updated_at"])
    if verbatim:
        x["updated_at"] = verbatim
    x["domain"] = task["domain"]

    commits: dict[str, Any] = {}
    authors: dict[str, str] = {}
    for n, c in enumerate(ledger["commits"]):
        entry = {k: c[k] for k in COMMIT_KEYS[2:] if c[k] is not None}
        entry["seq"] = str(n)
        commits[c["id"]] = entry
        authors[c["id"]] = c["author_id"]
    if commits:
        x["commits"] = commits
    asked = [c["requested_next_action"] for c in ledger["commits"]
             if c["requested_next_action"] is not None]
    if asked and status not in ("archived",):
        fields["next_action"] = asked[-1]

    items = []
    for i in ledger["state_items"]:
        kind = KIND_MAP[i["type"]]
        at, verbatim = _stamp(i["created_at"])
        ix: dict[str, Any] = {"introduced_in_commit": i["introduced_in_commit"],
                              "provenance": i["provenance"]}
        for key in ("superseded_in_commit", "correction_of"):
            if i[key] is not None:
                ix[key] = i[key]
        if KIND_BACK[kind] != i["type"]:
            ix["type"] = i["type"]
        if verbatim:
            ix["created_at"] = verbatim
        item: dict[str, Any] = {
            "id": i["id"], "kind": kind, "text": i["content"],
            "trust": TRUST_MAP[i["status"]],
            "by": authors.get(i["introduced_in_commit"], SOURCE), "at": at,
            "confidence": _confidence_text(i["confidence"]), "x": {SOURCE: ix}}
        if i["rationale"] is not None:
            item["why"] = i["rationale"]
        items.append(item)
    if items:
        fields["items"] = items
    objective: str = task["objective"].replace("\r\n", "\n").replace("\r", "\n")
    if any(line.startswith("## ") for line in objective.split("\n")):
        x["objective"] = objective  # the body alone could not say where it ends
    fields["x"] = {SOURCE: x}
    return make_record(fields, f"## Goal\n\n{objective}\n", where)


def load_stateframe(path: str) -> tuple[list[Incoming], list[Skip]]:
    """Read one ``task.ledger.json``: ([the task], []) or ([], [why not])."""
    name = os.path.basename(path)
    data = read_source(path)
    try:
        ledger = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return [], [Skip(name, f"not JSON: {exc}")]
    try:
        record = ledger_to_record(ledger, name)
    except LedgitError as exc:
        return [], [Skip(name, exc.message.removeprefix(f"{name}: "))]
    return [Incoming(record, name, str(ledger["task"]["id"]))], []


# --------------------------------------------------------------------------- export


def _sx(mapping: Mapping[str, Any]) -> dict[str, Any]:
    value = mapping.get("x", {}).get(SOURCE, {})
    return dict(value) if isinstance(value, Mapping) else {}


def _uuid(*parts: str) -> str:
    return str(uuid.uuid5(NAMESPACE, "/".join(parts)))


def _is_uuid(text: Any) -> bool:
    try:
        return isinstance(text, str) and str(uuid.UUID(text)) == text.lower() and len(text) == 36
    except ValueError:
        return False


def _when(verbatim: Any, canonical: str) -> str:
    """The source's own text for a timestamp while it is still the same instant."""
    if isinstance(verbatim, str):
        try:
            if format_timestamp(parse_timestamp(verbatim)) == canonical:
                return verbatim
        except ValueError:
            pass
    return canonical


def _objective(record: Record) -> str:
    body = record.body
    kept = _sx(record.fields).get("objective")
    if isinstance(kept, str) and body == f"## Goal\n\n{kept}\n":
        return kept
    if body.startswith("## Goal\n\n") and body.endswith("\n"):
        rest = body[len("## Goal\n\n"):-1]
        if rest and "\n## " not in "\n" + rest:
            return rest
    lines = body.split("\n")
    for n, line in enumerate(lines):
        if line.strip() == "## Goal":
            section = []
            for later in lines[n + 1:]:
                if later.startswith("## "):
                    break
                section.append(later)
            text = "\n".join(section).strip("\n")
            if text.strip():
                return text
    return body.strip("\n") if body.strip() else str(record.fields["title"])


def _number(text: Any) -> float | int:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return DEFAULT_CONFIDENCE
    value = min(max(value, 0.0), 1.0)
    return int(value) if value.is_integer() else value


def record_to_ledger(record: Record, history: str | None = None) -> dict[str, Any]:
    """A Stateframe ledger for one task (see the module doc). ``history``: the task's history
    file text; its events after the import (all of them for a task born in ledgit) become
    commits. Raises LedgitError (exit 1) if the result does not validate (a bug)."""
    f = record.fields
    sx = _sx(f)
    task_id = str(sx.get("task_id") or (record.id if _is_uuid(record.id)
                                        else _uuid("task", record.id)))
    tags_json = sx.get("json", {}).get("tags") if isinstance(sx.get("json"), Mapping) else None
    status = STATUS_BACK[f["status"]]
    task = {
        "id": task_id,
        "title": str(sx["title"]) if "title" in sx and " ".join(
            str(sx["title"]).split()) == f["title"] else f["title"],
        "objective": _objective(record),
        "domain": sx.get("domain") or DEFAULT_DOMAIN,
        "status": status,
        "created_at": _when(sx.get("created_at"), f["created"]),
        "updated_at": _when(sx.get("updated_at"), f["last_modified"]),
        "tags": json.loads(tags_json) if tags_json and "labels" not in f else
        list(f.get("labels", [])),
    }

    commits: list[dict[str, Any]] = []
    imported = sx.get("commits", {})
    if isinstance(imported, Mapping):
        for cid, c in sorted(imported.items(), key=lambda kv: (int(kv[1].get("seq", "0")),
                                                               kv[0])):
            commits.append({"id": cid, "task_id": task_id,
                             **{k: c.get(k) for k in COMMIT_KEYS[2:]}})
    # Events of the history that are not the import itself (nor its root): one commit each.
    events: list[dict[str, Any]] = []
    states: dict[str, Any] = {}
    if history:
        try:
            events = topological_order(parse_events(history, record.id))
            states = replay(events, record.id)
        except HistoryError:
            events, states = [], {}
    event_commit: dict[str, str] = {}
    previous_state: dict[str, Any] = {}
    for e in events:
        state = states.get(e["id"], {})
        if (e.get("meta") or {}).get("source") == SOURCE or is_root(e, state):
            previous_state = state
            continue
        cid = _uuid("commit", e["id"])
        before_next = previous_state.get("fields", {}).get("next_action")
        after_next = state.get("fields", {}).get("next_action")
        commits.append({
            "id": cid, "task_id": task_id,
            "parent_commit_id": commits[-1]["id"] if commits else None,
            "author_type": "system" if e["actor"] in ("ledgit",) or e["op"] in ("merge",)
            else "agent",
            "author_id": e["actor"], "session_tool": "ledgit", "timestamp": e["at"],
            "summary": e.get("note") or f"ledgit {e['op']}",
            "requested_next_action": after_next if after_next and after_next != before_next
            else None,
            "raw_context_ref": None})
        event_commit[e["id"]] = cid
        previous_state = state
    if not commits:
        commits.append({"id": _uuid("commit", record.id, "created"), "task_id": task_id,
                        "parent_commit_id": None, "author_type": "system",
                        "author_id": "ledgit", "session_tool": "ledgit",
                        "timestamp": f["created"], "summary": "Task created",
                        "requested_next_action": None, "raw_context_ref": None})

    def first_commit_where(test: Any) -> str | None:
        for e in events:
            if e["id"] in event_commit and test(states.get(e["id"], {})):
                return event_commit[e["id"]]
        return None

    def item_in(state: Mapping[str, Any], iid: str) -> dict[str, Any] | None:
        for it in state.get("fields", {}).get("items", []):
            if it.get("id") == iid:
                return dict(it)
        return None

    items_out = []
    ids = {str(i["id"]): (str(i["id"]) if _is_uuid(i["id"]) else _uuid("item", task_id, i["id"]))
           for i in f.get("items", [])}
    commit_ids = {c["id"] for c in commits}
    for it in f.get("items", []):
        ix = _sx(it)
        iid = ids[str(it["id"])]
        introduced = ix.get("introduced_in_commit")
        if introduced not in commit_ids:
            introduced = first_commit_where(lambda s, i=it: item_in(s, i["id"]) is not None) \
                or commits[0]["id"]
        superseded = ix.get("superseded_in_commit")
        if it["trust"] == "deprecated" and superseded not in commit_ids:
            superseded = first_commit_where(
                lambda s, i=it: (item_in(s, i["id"]) or {}).get("trust") == "deprecated") \
                or commits[-1]["id"]
        if superseded not in commit_ids:
            superseded = None
        kind = it["kind"]
        stype = ix.get("type") if KIND_MAP.get(str(ix.get("type"))) == kind else KIND_BACK[kind]
        correction = ix.get("correction_of")
        if correction is None and it.get("supersedes"):
            correction = ids.get(it["supersedes"][0])
        items_out.append({
            "id": iid, "task_id": task_id, "introduced_in_commit": introduced,
            "superseded_in_commit": superseded, "type": stype, "content": it["text"],
            "rationale": it.get("why"),
            "confidence": _number(it["confidence"]) if "confidence" in it
            else DEFAULT_CONFIDENCE,
            "provenance": ix.get("provenance") or f"ledgit item by {it['by']}",
            "status": TRUST_BACK[it["trust"]],
            "correction_of": correction if correction in ids.values() else None,
            "created_at": _when(ix.get("created_at"), it["at"])})
    ledger = {"task": task, "commits": commits, "state_items": items_out}
    found = problems(ledger)
    if found:
        raise LedgitError(f"{record.id}: the exported ledger does not validate: "
                          + "; ".join(found[:3]), 1)
    return ledger


def export_text(record: Record, history: str | None = None) -> str:
    """The ledger as Stateframe writes it: 2-space indented JSON and a newline."""
    return json.dumps(record_to_ledger(record, history), indent=2, ensure_ascii=False) + "\n"
