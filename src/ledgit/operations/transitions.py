"""Pure task transitions (DESIGN §4): create, the lifecycle statuses (complete, wait, monitor,
park, drop, archive, reopen), field updates, readiness, and ``revert``. Claims are
:mod:`ledgit.operations.claims`, state items :mod:`ledgit.operations.stateitems`, and the
building of a Change they share :mod:`ledgit.operations.changes`.

Every operation is a function ``Record (+ arguments) -> Change`` that never touches the disk:
the board calls it under the task's lock with the record it just read (the truth) and writes
what it returns. Each result is validated against the schema and the lifecycle invariants of
:func:`ledgit.core.lifecycle.lifecycle_problems`; anything that would break them is refused with a
LedgitError (exit 2, one line) and nothing is written. Refusals caused by someone else's claim
use exit 6.

Times are RFC 3339 UTC text (``now``); claim TTLs are seconds (``ttl``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledgit.core.change import Change
from ledgit.core.errors import CHECK_FAILED, LedgitError
from ledgit.core.merge import merge_records
from ledgit.core.readout import (
    NOT_READY_OUTCOMES,
    _section,
)
from ledgit.core.record import Record, make_record
from ledgit.core.schema import OUTCOME_KINDS

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
from ledgit.operations.changes import (
    ACTIVE,
    ENDED,
    copy_fields,
    drop_empty,
    fail,
    finish,
    need_text,
    seconds_between,
    set_field,
    with_article,
)
from ledgit.operations.claims import guard_holder
from ledgit.operations.stateitems import new_item

# --------------------------------------------------------------------------- create


def compose_body(goal: str | None = None, accept: Sequence[str] = (),
                 body: str | None = None) -> str:
    """The conventional body: ``## Goal`` and ``## Acceptance`` (one ``- `` line each), then
    any free ``body`` text after a blank line. Refuses a ``body`` that already has one of the
    sections it would add (exit 2)."""
    parts: list[str] = []
    extra = (body or "").replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    if goal is not None and goal.strip():
        if _section(extra, "goal") is not None:
            raise fail("--goal given but the body already has a '## Goal' section")
        parts.append("## Goal\n" + goal.strip() + "\n")
    lines = [a.strip() for a in accept if a.strip()]
    for a in lines:
        if "\n" in a:
            raise fail("an acceptance criterion is one line (repeat --accept for more)")
    if lines:
        if _section(extra, "acceptance") is not None:
            raise fail("--accept given but the body already has a '## Acceptance' section")
        parts.append("## Acceptance\n" + "".join(f"- {a}\n" for a in lines))
    if extra:
        if parts and not extra.startswith("#"):
            extra = "## Notes\n" + extra  # keep free text out of the Acceptance section
        parts.append(extra + "\n")
    return "\n".join(parts)


def create_fields(*, title: str, goal: str | None = None, accept: Sequence[str] = (),
                  body: str | None = None, priority: int | None = None,
                  depends: Sequence[str] = (), labels: Sequence[str] = (),
                  owner: str | None = None, worker: str | None = None,
                  task_id: str | None = None) -> tuple[dict[str, Any], str]:
    """Typed fields and body of a new open task, validated (LedgitError exit 2 otherwise).

    The fields hold no ``id``, ``created`` or ``last_modified`` (the board assigns them);
    ``task_id``, when known, only serves the self-dependency check and messages.
    """
    title = need_text(title, "a task needs a title")
    if "\n" in title or "\r" in title:
        raise fail("title: must be one line")
    if task_id is not None and task_id in depends:
        raise fail(f"{task_id}: depends_on: a task cannot depend on itself")
    fields = drop_empty({
        "title": title, "status": "open", "priority": priority,
        "owner": (owner or "").strip(), "worker": (worker or "").strip(),
        "depends_on": list(dict.fromkeys(depends)),
        "labels": list(dict.fromkeys(x.strip() for x in labels if x.strip())),
    })
    text = compose_body(goal, accept, body)
    probe = dict(fields, id=task_id or "T-new", created="2000-01-01T00:00:00.000000Z",
                 last_modified="2000-01-01T00:00:00.000000Z")
    try:
        make_record(probe, text, path=task_id or "<new task>")
    except LedgitError as exc:
        raise fail(str(exc)) from None
    return fields, text


# --------------------------------------------------------------------------- lifecycle


def _leave(f: dict[str, Any], to: str) -> None:
    """Clear what only the old status needed when moving to ``to``."""
    if to != "waiting":
        f.pop("waiting_on", None)
    if to != "monitoring":
        f.pop("signal", None)
    if to != "in_progress":
        f.pop("claim", None)
        f.pop("contested", None)


def _transition(record: Record, *, by: str, now: str, ttl: int, to: str, op: str,
                allowed: Iterable[str], action: str) -> dict[str, Any]:
    status = record.fields["status"]
    if status not in allowed:
        hint = f" (ledgit reopen {record.id} first)" if status in ENDED else ""
        raise fail(f"{record.id}: cannot {action} {with_article(status)} task{hint}")
    guard_holder(record, by, now, ttl, action)
    f = copy_fields(record)
    _leave(f, to)
    f["status"] = to
    return f


def complete(record: Record, *, by: str, response: str | None, now: str, ttl: int,
             outcome: str | None = None, reason: str | None = None) -> Change:
    """Finish the task: status done with the account ``response`` (required, exit 2).

    Only the claim holder may complete a claimed task (exit 6). Clears claim, waiting_on,
    signal and any earlier outcome; ``outcome`` optionally records a terminal kind (e.g.
    ``no_change``) with ``reason``.
    """
    account = (response or "").strip()
    if not account:
        raise fail(f"{record.id}: complete needs an account of the work: --response TEXT")
    f = _transition(record, by=by, now=now, ttl=ttl, to="done", op="complete",
                    allowed=ACTIVE,
                    action="complete")
    f["response"] = response
    f.pop("outcome", None)
    if outcome:
        if outcome not in OUTCOME_KINDS:
            raise fail(f"outcome must be one of {', '.join(OUTCOME_KINDS)}")
        f["outcome"] = drop_empty({"kind": outcome, "reason": (reason or "").strip()})
    return finish(record, f, "complete", None, {"outcome": outcome} if outcome else None)


def wait(record: Record, *, by: str, on: str | None, now: str, ttl: int) -> Change:
    """Status waiting on a person, condition or date ``on`` (required, exit 2).

    The claim is released: a waiting task is not being worked; resuming means claiming again.
    """
    return _hold(record, by=by, now=now, ttl=ttl, text=on, to="waiting", op="wait",
                 field="waiting_on", action="put on wait",
                 missing="wait needs what it waits on: --on TEXT")


def monitor(record: Record, *, by: str, signal: str | None, now: str, ttl: int) -> Change:
    """Status monitoring: observe ``signal`` (required, exit 2); manufactures no work."""
    return _hold(record, by=by, now=now, ttl=ttl, text=signal, to="monitoring", op="monitor",
                 field="signal", action="monitor",
                 missing="monitor needs the signal to observe: --signal TEXT")


def _hold(record: Record, *, by: str, now: str, ttl: int, text: str | None, to: str, op: str,
          field: str, action: str, missing: str) -> Change:
    """wait/monitor: status ``to`` from any active status, ``field`` set to the stripped
    ``text`` (required: refused with ``<id>: <missing>``, exit 2)."""
    value = (text or "").strip()
    if not value:
        raise fail(f"{record.id}: {missing}")
    f = _transition(record, by=by, now=now, ttl=ttl, to=to, op=op,
                    allowed=ACTIVE,
                    action=action)
    f[field] = value
    return finish(record, f, op, value)


def park(record: Record, *, by: str, reason: str | None, now: str, ttl: int,
         reuse: str | None = None) -> Change:
    """Status parked with outcome ``{kind: park, reason, reuse?}``; reason required (exit 2)."""
    text = (reason or "").strip()
    if not text:
        raise fail(f"{record.id}: park needs a reason: --reason TEXT")
    f = _transition(record, by=by, now=now, ttl=ttl, to="parked", op="park",
                    allowed=ACTIVE,
                    action="park")
    f["outcome"] = drop_empty({"kind": "park", "reason": text, "reuse": (reuse or "").strip()})
    return finish(record, f, "park", text)


def drop(record: Record, *, by: str, reason: str | None, now: str, ttl: int,
         reuse: str | None = None, kind: str = "drop") -> Change:
    """Status dropped with outcome ``{kind, reason, reuse?}`` (kind drop unless given, e.g.
    no_change or no_publish); reason required (exit 2). A negative result the next agent
    reads instead of repeating a disproved path."""
    text = (reason or "").strip()
    if not text:
        raise fail(f"{record.id}: drop needs a reason: --reason TEXT")
    if kind not in OUTCOME_KINDS:
        raise fail(f"outcome must be one of {', '.join(OUTCOME_KINDS)}")
    f = _transition(record, by=by, now=now, ttl=ttl, to="dropped", op="drop",
                    allowed=ACTIVE,
                    action="drop")
    f["outcome"] = drop_empty({"kind": kind, "reason": text, "reuse": (reuse or "").strip()})
    return finish(record, f, "drop", text)


def archive(record: Record, *, by: str, now: str, ttl: int, note: str | None = None) -> Change:
    """Status archived: the lifecycle ended; clears claim, waiting_on, signal, next_action.
    The outcome stays."""
    f = _transition(record, by=by, now=now, ttl=ttl, to="archived", op="archive",
                    allowed=("open", "in_progress", "waiting", "monitoring", "parked",
                             "done", "dropped"),
                    action="archive")
    f.pop("next_action", None)
    return finish(record, f, "archive", note)


def reopen(record: Record, *, by: str, now: str, note: str | None = None) -> Change:
    """Back to open from waiting, monitoring, parked, done, dropped or archived.

    The outcome is cleared from the front matter, but not forgotten: when it had a reason it is
    kept as a new candidate item (``rejected`` for drop/no_change/no_publish, ``fact``
    otherwise) so the negative result still guides; the event meta has ``previous_outcome``.
    """
    status = record.fields["status"]
    if status in ("open", "in_progress"):
        hint = " (use release to give up a claim)" if status == "in_progress" else ""
        raise fail(f"{record.id}: already {status}{hint}")
    f = copy_fields(record)
    _leave(f, "open")
    f["status"] = "open"
    meta: dict[str, Any] = {"from": status}
    outcome = f.pop("outcome", None)
    if outcome:
        meta["previous_outcome"] = outcome
        if outcome.get("reason"):
            kind = ("rejected" if outcome["kind"] in ("drop", "no_change", "no_publish")
                    else "fact")
            text = f"earlier outcome {outcome['kind']} ({status}): {outcome['reason']}"
            item = new_item(record, kind=kind, text=text, by=by, now=now,
                             why=outcome.get("reuse"), trust="candidate")
            f["items"] = [*f.get("items", []), item]
            meta["item"] = item["id"]
    return finish(record, f, "reopen", note, meta)


# --------------------------------------------------------------------------- update


def parse_assignment(text: str) -> tuple[str, str]:
    """``FIELD=VALUE`` → (field, value); exit 2 when there is no ``=``."""
    if "=" not in text:
        raise fail(f"expected FIELD=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    return name.strip(), value


def _set_union(current: Iterable[str], add: Iterable[str], remove: Iterable[str]) -> list[str]:
    out = [v for v in current if v not in set(remove)]
    for v in add:
        if v not in out:
            out.append(v)
    return out


def update(record: Record, *, title: str | None = None, priority: int | None = None,
           response: str | None = None, sets: Sequence[tuple[str, str]] = (),
           add_commits: Sequence[str] = (), depends_add: Sequence[str] = (),
           depends_remove: Sequence[str] = (), labels_add: Sequence[str] = (),
           labels_remove: Sequence[str] = (), next_action: str | None = None,
           gate: str | None = None, owner: str | None = None, worker: str | None = None,
           note: str | None = None) -> Change:
    """Edit fields: the named options, ``sets`` of (FIELD, VALUE) (an empty VALUE unsets),
    commits and set-field adds/removes. Status, claim, outcome and items have their own
    commands (exit 2 here). The meta lists the ``fields`` that changed."""
    f = copy_fields(record)
    for name, value in (("title", title), ("response", response),
                        ("next_action", next_action), ("gate", gate), ("owner", owner),
                        ("worker", worker)):
        if value is not None:
            set_field(f, name, value)
    if priority is not None:
        f["priority"] = priority
    for name, value in sets:
        set_field(f, name, value)
    if add_commits:
        f["commits"] = _set_union(f.get("commits", []), add_commits, ())
    if depends_add or depends_remove:
        if record.id in depends_add:
            raise fail(f"{record.id}: depends_on: a task cannot depend on itself")
        f["depends_on"] = _set_union(f.get("depends_on", []), depends_add, depends_remove)
    if labels_add or labels_remove:
        f["labels"] = _set_union(f.get("labels", []), labels_add, labels_remove)
    changed = sorted(k for k in set(f) | set(record.fields)
                     if drop_empty({k: f.get(k)}).get(k) != record.fields.get(k))
    return finish(record, f, "update", note, {"fields": changed} if changed else None)


# --------------------------------------------------------------------------- readiness


def is_ready(fields: Mapping[str, Any], dependency_status: Mapping[str, str | None]) -> bool:
    """Ready = open, every dependency done, and no drop/no_change outcome (DESIGN §4)."""
    if fields.get("status") != "open":
        return False
    if (fields.get("outcome") or {}).get("kind") in NOT_READY_OUTCOMES:
        return False
    return all(dependency_status.get(d) == "done" for d in fields.get("depends_on") or [])


def age_seconds(since: str, now: str) -> float:
    """Seconds from ``since`` to ``now`` (both RFC 3339)."""
    return seconds_between(since, now)


# --------------------------------------------------------------------------- revert, re-import

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
