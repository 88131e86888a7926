"""Undo one event as a new one (DESIGN §8, mirrors ``git revert``): :func:`revert`, and
:func:`clashes`, where two sides changed the same thing to different values (what a revert
refuses and what a re-import reports). Both rest on the merge policy
(:func:`ledgit.core.merge.merge_records`), which the other transitions never need; pure, like
:mod:`ledgit.operations.transitions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledgit.core.change import Change
from ledgit.core.errors import CHECK_FAILED
from ledgit.core.merge import merge_records
from ledgit.core.record import Record
from ledgit.operations.changes import fail, finish

if TYPE_CHECKING:
    from collections.abc import Mapping

#: Fields that say when, not what: never a clash, never restored by a revert.
_STAMPS = ("id", "created", "last_modified", "contested")


def clashes(base: Record | None, ours: Record, theirs: Record) -> list[str]:
    """Where both sides changed the same thing to different values, which the merge policy
    (:func:`ledgit.core.merge.merge_records`) would settle by a rule -- the later side, the
    terminal status, the earlier claim -- rather than by combining both: a scalar field, the
    claim, the outcome, one field of one item (``items.ID.KEY``), one leaf of ``x``
    (``x.beads.KEY``). Sets (labels, depends_on, commits, an item's supersedes) combine and
    never clash, nor do notes (joined, each once); the body's line merge reports its own
    conflicts. Sorted paths."""
    found: list[str] = []
    bf: Mapping[str, Any] = base.fields if base is not None else {}
    of, tf = ours.fields, theirs.fields
    for key in sorted((set(bf) | set(of) | set(tf)) - set(_STAMPS)):
        b, o, t = bf.get(key), of.get(key), tf.get(key)
        if key in ("depends_on", "labels", "commits", "notes") or not _both_changed(b, o, t):
            continue
        if key == "items":
            found.extend(_item_clashes(b or [], o or [], t or []))
        elif key == "x":
            found.extend(_map_clashes(b, o, t, "x"))
        else:
            found.append(key)
    return sorted(found)


def _both_changed(base: Any, ours: Any, theirs: Any) -> bool:
    return bool(ours != theirs and ours != base and theirs != base)


def _item_clashes(base: list[dict[str, Any]], ours: list[dict[str, Any]],
                  theirs: list[dict[str, Any]]) -> list[str]:
    by_b = {i["id"]: i for i in base}
    by_o = {i["id"]: i for i in ours}
    by_t = {i["id"]: i for i in theirs}
    found: list[str] = []
    for iid in sorted(set(by_o) & set(by_t)):  # items are never deleted (DESIGN §5)
        ib, io, it = by_b.get(iid, {}), by_o[iid], by_t[iid]
        for k in sorted(set(ib) | set(io) | set(it)):
            if k not in ("supersedes", "superseded_by") and _both_changed(
                    ib.get(k), io.get(k), it.get(k)):
                found.append(f"items.{iid}.{k}")
    return found


def _map_clashes(base: Any, ours: Any, theirs: Any, path: str) -> list[str]:
    if not _both_changed(base, ours, theirs):
        return []
    if isinstance(ours, dict) and isinstance(theirs, dict) and isinstance(base, dict | None):
        b: dict[str, Any] = base or {}
        return [c for k in sorted(set(b) | set(ours) | set(theirs))
                for c in _map_clashes(b.get(k), ours.get(k), theirs.get(k), f"{path}.{k}")]
    return [path]


def revert(record: Record, *, event: Mapping[str, Any], before: Record, after: Record,
           later: Mapping[str, str] | None = None) -> Change:
    """Undo one event as a new one (DESIGN §8, mirrors ``git revert``): what ``event`` changed
    -- from ``before`` (the state at its ``parents[0]``) to ``after`` (its state) -- is set
    back on the current ``record``; everything else stays. It is the 3-way merge of the
    current record and ``before`` over ``after`` (:func:`ledgit.core.merge.merge_records`), so a
    set field loses what the event added and gets back what it removed, whatever else
    changed since.

    Refused, nothing written: a genesis or merge event (exit 2); a value the event changed
    that a later event changed again (exit 1, naming each such field and, from ``later``
    (path -> "op by actor at"), who changed it: revert that event first, or edit by hand).
    Op ``revert``; the meta names the event (``reverts``) and the restored ``fields``."""

    eid = str(event["id"])
    what = f"{eid[:12]} ({event['op']} by {event['actor']})"
    if not event["parents"]:
        raise fail(f"{record.id}: cannot revert the create event {what} (drop or archive the "
                   f"task instead)")
    if len(event["parents"]) > 1:
        raise fail(f"{record.id}: cannot revert the merge event {what}: revert the events it "
                   f"brought in, one by one")
    merged = merge_records(after, record, before)
    found = clashes(after, record, before)
    if "body" in merged.conflicts:
        found.append("body")
    fields = dict(merged.record.fields)
    # A merge never deletes an item (DESIGN §5); a revert removes the items the event added,
    # unless they changed since.
    had = {i["id"] for i in before.fields.get("items", [])}
    now_items = {i["id"]: i for i in record.fields.get("items", [])}
    added = {i["id"]: i for i in after.fields.get("items", []) if i["id"] not in had}
    for iid, item in added.items():
        if iid in now_items and now_items[iid] != item:
            found.append(f"items.{iid}")
    if added:
        fields["items"] = [i for i in fields.get("items", []) if i["id"] not in added]
    if found:
        since = "; ".join(f"{p} ({(later or {}).get(p.split('.')[0], 'a later event')})"
                          for p in found)
        raise fail(f"{record.id}: cannot revert {what}: changed again since: {since}; revert "
                   f"the later event(s) first, or edit by hand; nothing written", CHECK_FAILED)
    restored = sorted(k for k in set(fields) | set(record.fields)
                      if k not in _STAMPS and fields.get(k) != record.fields.get(k))
    if merged.record.body != record.body:
        restored.append("body")
    fields["last_modified"] = record.fields["last_modified"]
    return finish(record, fields, "revert", f"revert {what} of {event['at']}",
                  {"reverts": eid, "fields": restored}, body=merged.record.body)
