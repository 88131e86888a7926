"""Pure task transitions (DESIGN §4): create, the lifecycle statuses (complete, wait, monitor,
park, drop, archive, reopen), field updates and readiness (``revert``:
:mod:`ledgit.operations.revert`). Claims are
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
from ledgit.core.errors import LedgitError
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
