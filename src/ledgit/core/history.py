"""Hash-linked events in a DAG (DESIGN §6): the event format, ids, parsing, rendering, new
events, replay and the DAG's heads, ancestors and order. Pure.

A history file holds one event per line, each the canonical JSON of::

    {"id", "parents", "at", "actor", "op", "patch", "before", "after", "note"?, "meta"?}

``id`` is the sha256 of the canonical JSON of the event without ``id``; ``patch`` is an
RFC 6902 JSON Patch turning the state at ``parents[0]`` (``{}`` for the genesis event) into
the new state ``{"fields": ..., "body": ...}``; ``before``/``after`` are record revisions.

The continuity checks (``verify``, and ``parse_checked`` for the write path) are
:mod:`ledgit.core.historycheck`; what a commit may not lose of a history ("a history only
grows") is :mod:`ledgit.core.historygrowth`; merging histories is
:mod:`ledgit.core.historymerge`.
"""

from __future__ import annotations

import heapq
import json
from typing import TYPE_CHECKING

from ledgit.core.patch import apply_patch as apply_rfc6902
from ledgit.core.patch import make_patch as rfc6902_patch
from ledgit.core.record import MAX_RECORD_BYTES
from ledgit.core.revision import canonical_json, revision_of, sha256_hex

EVENT_KEYS = frozenset(("id", "parents", "at", "actor", "op", "patch", "before", "after", "note",
                        "meta"))
GENESIS_OP = "create"
MERGE_OP = "merge"

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

    Event = dict[str, Any]
    State = dict[str, Any]
else:
    Event = State = dict  # the same aliases at run time, for callers that import them


class Problem:
    """One broken continuity rule: ``task``, 1-based ``line`` (0 = whole file), ``rule``,
    ``message``. Immutable; equal when all four are."""

    __slots__ = ("task", "line", "rule", "message")

    task: str
    line: int
    rule: str
    message: str

    def __init__(self, task: str, line: int, rule: str, message: str) -> None:
        for name, value in (("task", task), ("line", line), ("rule", rule),
                            ("message", message)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Problem is immutable: cannot set {name}")

    def _key(self) -> tuple[str, int, str, str]:
        return (self.task, self.line, self.rule, self.message)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Problem) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return "Problem(task={!r}, line={!r}, rule={!r}, message={!r})".format(*self._key())

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "history"
        return f"{self.task}: {where}: {self.rule}: {self.message}"


class HistoryError(ValueError):
    """A history that cannot be read or replayed; ``problem`` says where and why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def _not_json(exc: Exception) -> str:
    if isinstance(exc, RecursionError):
        return "not JSON: nested too deeply"
    return f"not JSON: {exc}"


#: The longest event line, in characters (issue 7; docs/format.md "Size limits"): an event
#: holds at most one body (MAX_RECORD_BYTES), which JSON escaping can make up to six times
#: longer (``\\u0001``). A longer line is refused before it is decoded.
MAX_EVENT_LINE = 8 * MAX_RECORD_BYTES


def _check_size(line: str, task: str, n: int) -> None:
    if len(line) > MAX_EVENT_LINE:
        raise HistoryError(Problem(task, n, "parse", f"the line is {len(line) / 1048576:.1f} "
                                   f"Mi characters; the limit is "
                                   f"{MAX_EVENT_LINE // 1048576} Mi"))


#: Nesting levels an event line may have (issue 7). A valid event nests about 40 deep at
#: most (a record's front matter nests 32 below its top mapping); deeper values would make
#: hashing and patching recurse past Python's limit.
MAX_EVENT_DEPTH = 64


def _check_depth(line: str, event: Any, task: str, n: int) -> None:
    """Raise HistoryError (``parse``) when ``event`` nests deeper than MAX_EVENT_DEPTH. Only
    a line holding more brackets than that is walked (two C scans otherwise)."""
    if line.count("[") + line.count("{") <= MAX_EVENT_DEPTH:
        return
    stack: list[tuple[Any, int]] = [(event, 1)]
    while stack:
        value, depth = stack.pop()
        if value.__class__ is dict:
            children: Iterable[Any] = value.values()
        elif value.__class__ is list:
            children = value
        else:
            continue
        if depth > MAX_EVENT_DEPTH:
            raise HistoryError(Problem(task, n, "parse", f"nested more than {MAX_EVENT_DEPTH} "
                                                         "levels deep"))
        stack.extend((child, depth + 1) for child in children)


def event_id(event: Mapping[str, Any]) -> str:
    """sha256 hex of the canonical JSON of ``event`` without its ``id`` (DESIGN §6).

    The parser's private ``_line`` key is not content and is left out too.
    """
    body = {k: v for k, v in event.items() if k != "id" and k != "_line"}
    return sha256_hex(canonical_json(body))


def make_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The RFC 6902 patch turning ``before`` into ``after``: jsonpatch's, made by
    :func:`ledgit.core.patch.make_patch` (which imports jsonpatch only for lists and moves)."""
    return rfc6902_patch(before, after)


def apply_patch(state: Mapping[str, Any], patch: Sequence[Mapping[str, Any]]) -> State:
    """Apply an RFC 6902 patch to a copy of ``state``. Raises ValueError when it does not apply
    (:func:`ledgit.core.patch.apply_patch`; replay applies the usual patches itself,
    :func:`_apply_shared`)."""
    return apply_rfc6902(state, patch)


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
    """Parse history text (or the file's bytes) into events; ids are checked by
    :func:`ledgit.core.historycheck.verify`.

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
        _check_size(line, task, n)
        try:
            event = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
            raise HistoryError(Problem(task, n, "parse", _not_json(exc))) from None
        _check_depth(line, event, task, n)
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
