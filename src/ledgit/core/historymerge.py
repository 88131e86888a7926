"""Merging two histories of one task (DESIGN §7): the union of both sides' events by id in a
deterministic topological order, plus one ``merge`` event whose state is the same
:func:`ledgit.core.merge.merge_records` the task file's merge computes. Pure.

Apart from :mod:`ledgit.core.merge` because the merge driver loads it only for a history file:
a task file's merge needs no history, patch or hashing code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ledgit.core.history import (
    MERGE_OP,
    Event,
    HistoryError,
    Problem,
    _parse_lines,
    ancestors,
    event_id,
    heads,
    new_event,
    render_history,
    replay,
    topological_order,
)
from ledgit.core.importroot import is_root
from ledgit.core.merge import MergeResult, merge_records
from ledgit.core.record import Record, record_from_state
from ledgit.core.revision import revision_of, sha256_function


class HistoryMerge:
    """The merged history text, whether it conflicted, and the merge event (None when one side
    already held every event of the other)."""

    __slots__ = ("text", "conflict", "event", "record", "problem")

    def __init__(self, text: str, conflict: bool, event: Event | None = None,
                 record: MergeResult | None = None, problem: str | None = None) -> None:
        self.text = text
        self.conflict = conflict
        self.event = event
        self.record = record
        self.problem = problem

    def __repr__(self) -> str:
        return (f"HistoryMerge(text={self.text!r}, conflict={self.conflict!r}, "
                f"event={self.event!r}, problem={self.problem!r})")


def best_common_ancestor(events: Sequence[Event], x: str, y: str) -> str | None:
    """The best common ancestor of events ``x`` and ``y``: of their common ancestors that are
    no ancestor of another, the latest (by ``at``, then id); None if there is none."""

    common = ancestors(events, x) & ancestors(events, y)
    if not common:
        return None
    parents = {e["id"]: e["parents"] for e in events}
    dominated: set[str] = set()
    for c in common:
        for p in parents.get(c, []):
            dominated |= ancestors(events, p)
    best = sorted(common - dominated)
    if not best:
        return None
    at = {e["id"]: e["at"] for e in events}
    return max(best, key=lambda eid: (at[eid], eid))


def _checked_events(text: str, task: str) -> list[dict[str, Any]]:
    """The events of one side, each id checked against its content (DESIGN §7): a tampered
    copy of an event (same id, edited line) must never be picked by side. Raises
    HistoryError (rule ``hash``) naming the line; the driver then falls back to a marked line
    merge, the same both ways round. Cheap: a canonical line is hashed as it stands, without
    its id member; any other line is re-encoded first."""

    sha256 = sha256_function()
    out = []
    for raw, event in _parse_lines(text, task):
        line, eid = event.pop("_line"), event["id"]
        raw = raw.removesuffix("\r")
        member = ',"id":"' + eid + '"' if eid.__class__ is str else None
        at = raw.find(member) if member is not None else -1
        if at < 0 or sha256((raw[:at] + raw[at + len(member or ""):]).encode(
                "utf-8", "surrogatepass")).hexdigest() != eid:
            try:
                ok = event_id(event) == eid
            except (ValueError, UnicodeEncodeError):
                ok = False
            if not ok:
                raise HistoryError(Problem(task, line, "hash",
                                           f"event {str(eid)[:12]} does not match its "
                                           "content (the line was edited)"))
        out.append(event)
    return out


def merge_histories(base_text: str, ours_text: str, theirs_text: str, task: str,
                    marker_size: int = 7, names: tuple[str, str] | None = None, *,
                    added: bool = False) -> HistoryMerge:
    """Merge two histories of one task (DESIGN §7): the union of both sides' events by id, in
    a deterministic topological order, plus one ``merge`` event whose parents are the sorted
    heads, ``at`` the latest parent's, actor ``ledgit``, and state
    ``merge_records(state at the common ancestor, state at one head, state at the other)``.

    ``names``: as for :func:`merge_records` (used when each side has one head). ``added``:
    the file is new on both sides (Git's add/add: its base holds no such file); when the
    union's genesis is then an import root (:mod:`ledgit.core.importroot`: one task
    imported twice), the state is merged against that root, as the task file's add/add is.
    Symmetric in ours/theirs. Raises HistoryError when a side cannot be parsed or replayed;
    returns ``conflict=True`` (text = None-free marker text is the caller's job) only when the
    two sides share no genesis.
    """

    ours = _checked_events(ours_text, task)
    theirs = _checked_events(theirs_text, task)
    ids_o = {e["id"] for e in ours}
    ids_t = {e["id"] for e in theirs}
    if ids_o == ids_t:
        # Same events: output the canonical order so both directions agree.
        if ours_text == theirs_text:
            return HistoryMerge(ours_text, False)
        return HistoryMerge(render_history(topological_order(ours)), False)
    union = topological_order(ours + theirs)
    hs = heads(union)
    states = replay(union, task)
    if len(hs) != 1 and len([e for e in union if not e["parents"]]) != 1:
        return HistoryMerge("", True, problem="the two histories share no genesis event")
    # The task file beside this history is merged against Git's base (%O): for a cherry-pick
    # or a revert that is not the common ancestor of the events, so the states are merged
    # against the base's head too when it is known and the sides have one head each; the
    # result then equals the merged task file, and the history head agrees with it.
    base_head = _single_head(base_text, task)
    added_twice = False
    if added and base_head is None:
        # One task added twice (Git's base has no history): two imports share their import
        # root, which is then the base, as for the task file (docs/merge.md)
        base_head = import_root_of(union, states)
        added_twice = base_head is not None
    ours_head, theirs_head = heads(ours), heads(theirs)
    rec: Record | None = None
    result: MergeResult | None = None
    if base_head in states and len(ours_head) == 1 and len(theirs_head) == 1:
        result = merge_records(record_from_state(states[base_head]),
                               record_from_state(states[ours_head[0]]),
                               record_from_state(states[theirs_head[0]]), marker_size,
                               names)
        rec = result.record
        if len(hs) == 1 and rec.revision == revision_of(states[hs[0]]):
            # The union's one head is the merge: a side holding every event of the other is
            # kept as it is; otherwise the union (the same whichever side is ours).
            if ids_t <= ids_o:
                return HistoryMerge(ours_text, False)
            if ids_o <= ids_t:
                return HistoryMerge(theirs_text, False)
            return HistoryMerge(render_history(union), False)
    elif ids_t <= ids_o:
        return HistoryMerge(ours_text, False)
    elif ids_o <= ids_t:
        return HistoryMerge(theirs_text, False)
    if rec is None:
        if len(hs) == 1:
            return HistoryMerge(render_history(union), False)
        # Fold the heads pairwise in sorted order into one merged record.
        rec = record_from_state(states[hs[0]])
        for other in hs[1:]:
            lca = best_common_ancestor(union, hs[0], other)
            base_rec = record_from_state(states[lca]) if lca else None
            result = merge_records(base_rec, rec, record_from_state(states[other]), marker_size)
            rec = result.record
    at = max(e["at"] for e in union if e["id"] in set(hs))
    meta: dict[str, Any] = {}
    if result is not None and result.conflicts:
        meta["conflicts"] = result.conflicts
    note = (f"merged {len(hs)} heads" if len(hs) > 1
            else "the merge of two imports against their import root" if added_twice
            else "the merge of the task file against Git's base (a cherry-pick or revert)")
    event = new_event(parents=hs, at=at, actor="ledgit", op=MERGE_OP,
                      before_state=states[hs[0]], after_state=rec.state(),
                      note=note, meta=meta or None)
    return HistoryMerge(render_history([*union, event]), False, event, result)


def import_root_of(events: Sequence[Event], states: Mapping[str, Any]) -> str | None:
    """The id of the genesis of ``events`` (``states``: their replayed states) when it is an
    import root (:func:`ledgit.core.importroot.is_root`), else None."""
    for event in events:
        if not event["parents"]:
            return event["id"] if is_root(event, states[event["id"]]) else None
    return None


def _single_head(text: str, task: str) -> str | None:
    """The one head of the history ``text`` (Git's merge base version), or None when it is
    empty, unreadable or has more heads (then the DAG's common ancestors are used)."""

    if not text.strip():
        return None
    try:  # only its head's id is used, and only if the checked sides hold that event
        found = heads([event for _raw, event in _parse_lines(text, task)])
    except (HistoryError, KeyError, TypeError, ValueError):
        return None
    return found[0] if len(found) == 1 else None

