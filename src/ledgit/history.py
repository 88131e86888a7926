"""The audit layer: hash-linked events in a DAG, replay and continuity checks (DESIGN §6). Pure.

A history file holds one event per line, each the canonical JSON of::

    {"id", "parents", "at", "actor", "op", "patch", "before", "after", "note"?, "meta"?}

``id`` is the sha256 of the canonical JSON of the event without ``id``; ``patch`` is an
RFC 6902 JSON Patch turning the state at ``parents[0]`` (``{}`` for the genesis event) into
the new state ``{"fields": ..., "body": ...}``; ``before``/``after`` are record revisions.
"""

from __future__ import annotations

import copy
import hashlib
import heapq
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonpatch

from ledgit.record import Record, canonical_json, record_from_state, revision_of

EVENT_KEYS = frozenset(("id", "parents", "at", "actor", "op", "patch", "before", "after", "note",
                        "meta"))
GENESIS_OP = "create"
MERGE_OP = "merge"

Event = dict[str, Any]
State = dict[str, Any]


@dataclass(frozen=True)
class Problem:
    """One broken continuity rule: ``task``, 1-based ``line`` (0 = whole file), ``rule``."""

    task: str
    line: int
    rule: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "history"
        return f"{self.task}: {where}: {self.rule}: {self.message}"


class HistoryError(ValueError):
    """A history that cannot be read or replayed; ``problem`` says where and why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def event_id(event: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``event`` without its ``id`` (DESIGN §6).

    The parser's private ``_line`` key is not content and is left out too.
    """
    body = {k: v for k, v in event.items() if k != "id" and k != "_line"}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def make_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The RFC 6902 patch turning ``before`` into ``after`` (jsonpatch, deterministic)."""
    ops: list[dict[str, Any]] = jsonpatch.make_patch(before, after).patch
    return ops


def apply_patch(state: Mapping[str, Any], patch: Sequence[Mapping[str, Any]]) -> State:
    """Apply an RFC 6902 patch to a copy of ``state``. Raises ValueError when it does not apply."""
    try:
        result: State = jsonpatch.apply_patch(copy.deepcopy(dict(state)), list(patch),
                                              in_place=True)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, KeyError,
            IndexError, TypeError) as exc:
        raise ValueError(f"patch does not apply: {exc}") from None
    return result


def new_event(*, parents: Sequence[str], at: str, actor: str, op: str,
              before_state: Mapping[str, Any], after_state: Mapping[str, Any],
              note: str | None = None, meta: Mapping[str, Any] | None = None) -> Event:
    """Build a hashed event from the state at ``parents[0]`` (``{}`` for genesis) to the new one."""
    event: Event = {
        "parents": list(parents),
        "at": at,
        "actor": actor,
        "op": op,
        "patch": make_patch(before_state, after_state),
        "before": revision_of(before_state) if parents else None,
        "after": revision_of(after_state),
    }
    if note:
        event["note"] = note
    if meta:
        event["meta"] = dict(meta)
    event["id"] = event_id(event)
    return event


def event_line(event: Mapping[str, Any]) -> str:
    """The file line of an event: its canonical JSON plus ``\\n``."""
    return canonical_json(dict(event)).decode("utf-8") + "\n"


def render_history(events: Iterable[Mapping[str, Any]]) -> str:
    """A whole history file: one :func:`event_line` per event."""
    return "".join(event_line(e) for e in events)


def parse_events(text: str | bytes, task: str) -> list[Event]:
    """Parse history text (or the file's bytes) into events; ids are checked by :func:`verify`.

    Each event gets a private ``_line`` key (1-based file line). Raises HistoryError (rule
    ``parse``) naming the first line that is not UTF-8 or not a JSON event object.
    """
    return [event for _, event in _parse_lines(text, task)]


def _parse_lines(text: str | bytes, task: str) -> list[tuple[str, Event]]:
    """(line text, event) per non-blank line. Raises HistoryError (rule ``parse``)."""
    out: list[tuple[str, Event]] = []
    lines: Iterable[str | bytes] = text.split(b"\n") if isinstance(text, bytes) else \
        text.split("\n")
    for n, raw in enumerate(lines, start=1):
        if isinstance(raw, bytes):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise HistoryError(Problem(task, n, "parse", "not valid UTF-8")) from None
        else:
            line = raw
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError as exc:
            raise HistoryError(Problem(task, n, "parse", f"not JSON: {exc}")) from None
        problem = _shape_problem(event)
        if problem:
            raise HistoryError(Problem(task, n, "parse", problem))
        event["_line"] = n
        out.append((line, event))
    return out


def _shape_problem(event: Any) -> str | None:
    if not isinstance(event, dict):
        return "an event must be a JSON object"
    for key in ("id", "parents", "at", "actor", "op", "patch", "after"):
        if key not in event:
            return f"missing key {key!r}"
    unknown = set(event) - EVENT_KEYS
    if unknown:
        return f"unknown key {sorted(unknown)[0]!r}"
    if not isinstance(event["parents"], list) or not all(
            isinstance(p, str) for p in event["parents"]):
        return "parents must be a list of event ids"
    if not isinstance(event["patch"], list):
        return "patch must be a list of RFC 6902 operations"
    for key in ("id", "at", "actor", "op", "after"):
        if not isinstance(event[key], str):
            return f"{key} must be a string"
    return None


def strip_lines(events: Iterable[Event]) -> list[Event]:
    """Events without the parser's private ``_line`` key (for hashing and rendering)."""
    return [{k: v for k, v in e.items() if k != "_line"} for e in events]


def heads(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Ids of events that are nobody's parent, sorted."""
    referenced = {p for e in events for p in e["parents"]}
    return sorted(e["id"] for e in events if e["id"] not in referenced)


def replay(events: Sequence[Mapping[str, Any]], task: str = "?") -> dict[str, State]:
    """Replay every event's patch from its ``parents[0]``: ``{event id: state after it}``.

    Raises HistoryError at the first event whose parent is unknown or whose patch fails.
    """
    states: dict[str, State] = {}
    for e in events:
        line = int(e.get("_line", 0))
        parents = e["parents"]
        if parents:
            if parents[0] not in states:
                raise HistoryError(Problem(task, line, "parent-order",
                                           f"parent {parents[0][:12]} does not precede it"))
            base = states[parents[0]]
        else:
            base = {}
        try:
            states[e["id"]] = apply_patch(base, e["patch"])
        except ValueError as exc:
            raise HistoryError(Problem(task, line, "replay", str(exc))) from None
    return states


def verify(task: str, text: str | bytes | None, record: Record | None,
           record_error: str | None = None) -> list[Problem]:
    """Check a task's history continuity (DESIGN §6); one Problem per broken rule.

    ``text``: the history file as text or bytes (None = missing); ``record``: the parsed task
    file (None when missing or unparsable; pass ``record_error`` to say why). Rules: missing,
    parse, hash, duplicate, parent-order, genesis, replay, before, after, heads, record-head,
    schema (docs/history.md).
    """
    problems: list[Problem] = []
    if text is None:
        return [Problem(task, 0, "missing", "the task has no history file")]
    try:
        parsed = _parse_lines(text, task)
    except HistoryError as exc:
        return [exc.problem]
    if not parsed:
        return [Problem(task, 0, "genesis", "the history is empty")]
    events = [e for _, e in parsed]
    seen: dict[str, int] = {}
    for raw, e in parsed:
        line = e["_line"]
        body = {k: v for k, v in e.items() if k not in ("id", "_line")}
        try:
            computed = hashlib.sha256(canonical_json(body)).hexdigest()
        except ValueError as exc:
            problems.append(Problem(task, line, "hash", str(exc)))
            continue
        if computed != e["id"]:
            problems.append(Problem(task, line, "hash",
                                    f"id {e['id'][:12]} does not match the event's content "
                                    f"(sha256 {computed[:12]}): the line was edited"))
        elif raw.removesuffix("\r") != canonical_json(dict(body, id=e["id"])).decode("utf-8"):
            # Same content, other bytes (e.g. "\u001F" for "\u001f"): still an edit.
            problems.append(Problem(task, line, "hash",
                                    "the line is not the canonical JSON of its event: "
                                    "the line was edited"))
        if e["id"] in seen:
            problems.append(Problem(task, line, "duplicate",
                                    f"event {e['id'][:12]} already on line {seen[e['id']]}"))
        for p in e["parents"]:
            if p not in seen:
                problems.append(Problem(task, line, "parent-order",
                                        f"parent {p[:12]} does not precede this event"))
        seen.setdefault(e["id"], line)
    geneses = [e for e in events if not e["parents"]]
    if len(geneses) != 1:
        problems.append(Problem(task, geneses[1]["_line"] if len(geneses) > 1 else 0, "genesis",
                                f"expected exactly one genesis event, found {len(geneses)}"))
    elif geneses[0] is not events[0]:
        problems.append(Problem(task, geneses[0]["_line"], "genesis",
                                "the genesis event must be the first line"))
    if problems:
        return problems
    states: dict[str, State] = {}
    for e in events:
        line = e["_line"]
        base = states[e["parents"][0]] if e["parents"] else {}
        try:
            state = apply_patch(base, e["patch"])
        except ValueError as exc:
            problems.append(Problem(task, line, "replay", str(exc)))
            return problems
        states[e["id"]] = state
        expected_before = revision_of(base) if e["parents"] else None
        if e.get("before") != expected_before:
            problems.append(Problem(task, line, "before",
                                    "before does not equal the revision at parents[0]"))
        try:
            after = revision_of(state)
        except ValueError as exc:
            problems.append(Problem(task, line, "replay", str(exc)))
            return problems
        if after != e["after"]:
            problems.append(Problem(task, line, "after",
                                    "replaying the patch does not give the recorded 'after'"))
    hs = heads(events)
    if len(hs) != 1:
        problems.append(Problem(task, 0, "heads",
                                f"expected one head, found {len(hs)}: "
                                + ", ".join(h[:12] for h in hs)
                                + " (merge it: ledgit resolve)"))
    head_state = states[events[-1]["id"]] if len(hs) != 1 else states[hs[0]]
    if record is None:
        problems.append(Problem(task, 0, "record-head",
                                record_error or "the task file is missing"))
    elif not problems:
        if record.revision != revision_of(head_state):
            problems.append(Problem(task, 0, "record-head",
                                    "record differs from its history head "
                                    f"(hand edit? run: ledgit record {task})"))
        else:
            # The head state must itself be a valid record.
            try:
                record_from_state(head_state)
            except Exception as exc:  # noqa: BLE001 - reported, not raised
                problems.append(Problem(task, 0, "schema", f"head state is invalid: {exc}"))
    return problems


def head_state(events: Sequence[Mapping[str, Any]], task: str = "?") -> tuple[str, State]:
    """(head id, state at the head) of a history with exactly one head. Raises HistoryError."""
    states = replay(events, task)
    hs = heads(events)
    if len(hs) != 1:
        raise HistoryError(Problem(task, 0, "heads", f"expected one head, found {len(hs)}"))
    return hs[0], states[hs[0]]


def ancestors(events: Sequence[Mapping[str, Any]], start: str) -> set[str]:
    """Every event id reachable from ``start`` through parents, ``start`` included."""
    parents = {e["id"]: e["parents"] for e in events}
    seen: set[str] = set()
    stack = [start]
    while stack:
        eid = stack.pop()
        if eid in seen or eid not in parents:
            continue
        seen.add(eid)
        stack.extend(parents[eid])
    return seen


def topological_order(events: Iterable[Mapping[str, Any]]) -> list[Event]:
    """Events in a deterministic topological order: parents first, ties by (at, id).

    Independent of the input order, so a merge of A into B and B into A agree byte for byte.
    """
    by_id: dict[str, Event] = {}
    for e in events:
        by_id.setdefault(e["id"], {k: v for k, v in e.items() if k != "_line"})
    pending = {eid: sum(1 for p in set(e["parents"]) if p in by_id) for eid, e in by_id.items()}
    children: dict[str, list[str]] = {}
    for eid, e in by_id.items():
        for p in set(e["parents"]):
            if p in by_id:
                children.setdefault(p, []).append(eid)
    ready = [(by_id[eid]["at"], eid) for eid, n in pending.items() if n == 0]
    heapq.heapify(ready)
    out: list[Event] = []
    while ready:
        _, eid = heapq.heappop(ready)
        out.append(by_id[eid])
        for c in children.get(eid, ()):
            pending[c] -= 1
            if pending[c] == 0:
                heapq.heappush(ready, (by_id[c]["at"], c))
    if len(out) != len(by_id):  # a cycle cannot come from hashes; keep what is left stable
        rest = sorted((e for eid, e in by_id.items() if e not in out),
                      key=lambda e: (e["at"], e["id"]))
        out.extend(rest)
    return out
