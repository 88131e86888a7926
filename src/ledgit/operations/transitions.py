"""Pure task transitions: lifecycle, claims, state items, writeback, handoff (DESIGN §4-§5).

Every operation is a function ``Record (+ arguments) -> Change`` that never touches the disk:
the board calls it under the task's lock with the record it just read (the truth) and writes
what it returns. Each result is validated against the schema and the lifecycle invariants of
:func:`ledgit.core.lifecycle.lifecycle_problems`; anything that would break them is refused with a
LedgitError (exit 2, one line) and nothing is written. Refusals caused by someone else's claim
use exit 6.

Times are RFC 3339 UTC text (``now``); claim TTLs are seconds (``ttl``).
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from ledgit.core.change import Change
from ledgit.core.errors import CHECK_FAILED, CLAIM, NOT_FOUND, USAGE, LedgitError
from ledgit.core.history import ancestors
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.merge import merge_records
from ledgit.core.readout import (
    NOT_READY_OUTCOMES,
    Freshness,
    _section,
    acceptance_of,
    format_duration,
    format_ttl,
    freshness_of,
    goal_of,
    handoff_of,
    render_handoff,
)
from ledgit.core.record import Record, make_record
from ledgit.core.revision import sha256_hex
from ledgit.core.schema import ITEM_KINDS, OUTCOME_KINDS
from ledgit.core.timestamps import parse_timestamp

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

# Statuses a task can be claimed from, and the statuses each transition may start from.
CLAIMABLE = ("open", "in_progress")
ENDED = ("done", "dropped", "archived")
# Fields `update --set` and `writeback --set` may write (lifecycle fields have their commands).
SETTABLE = ("title", "priority", "owner", "worker", "response", "next_action", "gate",
            "waiting_on", "signal", "depends_on", "labels", "commits")
_LIFECYCLE_HINT = {
    "status": "use claim/release/complete/wait/monitor/park/drop/archive/reopen",
    "claim": "use claim/heartbeat/release",
    "contested": "use claim --take-over or release",
    "outcome": "use park/drop/complete --outcome",
    "items": "use item add/accept/revise/writeback",
    "id": "ids never change",
    "created": "set once at creation",
    "last_modified": "stamped by every write",
}


# --------------------------------------------------------------------------- helpers


# Statuses whose lifecycle has not ended: complete, wait, monitor and park start from them.
ACTIVE = ("open", "in_progress", "waiting", "monitoring", "parked")

def fail(message: str, code: int = USAGE) -> LedgitError:
    """A LedgitError to raise: ``raise fail("...")``."""
    return LedgitError(message, code)


def _seconds_between(earlier: str, later: str) -> float:
    return (parse_timestamp(later) - parse_timestamp(earlier)).total_seconds()


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _copy_fields(record: Record) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in record.fields.items():
        if isinstance(v, list):
            out[k] = [dict(i) if isinstance(i, dict) else i for i in v]
        elif isinstance(v, dict):
            out[k] = dict(v)
        else:
            out[k] = v
    return out


def _drop_empty(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v not in (None, "", [], {})}


def finish(before: Record, fields: Mapping[str, Any], op: str, note: str | None = None,
           meta: Mapping[str, Any] | None = None, body: str | None = None) -> Change:
    """Validate new fields (schema + lifecycle invariants) into a Change; refuse with exit 2.

    The message names the task and the first broken rule: ``T-1: waiting_on: status waiting
    needs waiting_on``.
    """
    task = before.id
    clean = _drop_empty(dict(fields))
    problems = lifecycle_problems(clean)
    if problems:
        field, message = problems[0]
        raise fail(f"{task}: {field}: {message}")
    try:
        record = make_record(clean, before.body if body is None else body, path=task)
    except LedgitError as exc:
        raise fail(str(exc)) from None
    return Change(record, op, note or None, dict(meta) if meta else None)


def _need_text(value: str | None, what: str) -> str:
    text = (value or "").strip()
    if not text:
        raise fail(what)
    return text


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
    title = _need_text(title, "a task needs a title")
    if "\n" in title or "\r" in title:
        raise fail("title: must be one line")
    if task_id is not None and task_id in depends:
        raise fail(f"{task_id}: depends_on: a task cannot depend on itself")
    fields = _drop_empty({
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


# --------------------------------------------------------------------------- claims


def claim_freshness(record: Record, now: str, ttl: int) -> Freshness:
    """Freshness of the task's claim (DESIGN §4): see :func:`ledgit.core.readout.freshness_of`."""
    return freshness_of(record.fields, now, ttl)


def lost_to(record: Record, by: str) -> str | None:
    """The current holder when ``by`` lost a contested claim in a merge, else None."""
    claim = record.fields.get("claim")
    for c in record.fields.get("contested") or []:
        if c.get("by") == by and (not claim or claim.get("by") != by):
            return str(claim["by"]) if claim else "nobody (the claim has since ended)"
    return None


_ENDED_BY = {"complete": "completed", "drop": "dropped", "park": "parked",
             "archive": "archived"}


def claim_ended_by(events: Sequence[Mapping[str, Any]], by: str) -> str | None:
    """``"completed by bob at <time>"`` when a merge ended ``by``'s claim: ``by``'s last claim
    or heartbeat is concurrent with someone else's ``complete`` (or drop, park, archive) --
    neither is an ancestor of the other -- and ``by`` has written nothing after that end.
    None otherwise. ``events``: the task's history (DESIGN §6), in file order."""
    mine = [e for e in events if e.get("actor") == by and e.get("op") in ("claim",
                                                                         "heartbeat")]
    ends = [e for e in events if e.get("op") in _ENDED_BY and e.get("actor") != by]
    if not mine or not ends:
        return None
    claim_event = max(mine, key=lambda e: (e["at"], e["id"]))
    end = max(ends, key=lambda e: (e["at"], e["id"]))
    if claim_event["id"] in ancestors(events, end["id"]):
        return None  # the end came after the claim: nothing was lost in a merge
    if end["id"] in ancestors(events, claim_event["id"]):
        return None
    for e in events:
        if e.get("actor") == by and end["id"] in ancestors(events, e["id"]) \
                and e["id"] != end["id"]:
            return None  # by has written since: this was said already
    return f"{_ENDED_BY[end['op']]} by {end['actor']} at {end['at']}"


def _guard_holder(record: Record, by: str, now: str, ttl: int, action: str) -> None:
    """Refuse (exit 6) when ``by`` lost a contested claim or someone else holds the claim."""
    winner = lost_to(record, by)
    if winner is not None:
        raise fail(f"{record.id}: claim lost to {winner} (contested in a merge); "
                   f"cannot {action}", CLAIM)
    claim = record.fields.get("claim")
    if claim and claim["by"] != by:
        fr = claim_freshness(record, now, ttl)
        hint = (" (stale: take it with claim --take-over)" if fr.state == "stale"
                else "")
        raise fail(f"{record.id}: claimed by {claim['by']} ({fr.state}: {fr.reason}); "
                   f"only the holder may {action} it{hint}", CLAIM)


def claim(record: Record, *, by: str, now: str, ttl: int, note: str | None = None,
          take_over: bool = False, force: bool = False,
          dependency_status: Mapping[str, str | None] | None = None) -> Change:
    """Claim the task for ``by``: status in_progress, ``claim {by, at, heartbeat, note}``.

    Refused: an ended status or waiting/monitoring/parked (exit 2, reopen first); a
    dependency not done unless ``force`` (exit 2; ``dependency_status`` maps each id in
    depends_on to its status, None when missing); held by someone else (exit 6, fresh or
    stale) unless stale and ``take_over`` (meta ``took_over_from``); a claim ``by`` lost in a
    merge (exit 6). Re-claiming one's own claim refreshes it and keeps ``at``.
    """
    by = _need_text(by, "claim needs an actor (--by)")
    f = _copy_fields(record)
    status = f["status"]
    if status not in CLAIMABLE:
        raise fail(f"{record.id}: cannot claim {_a(status)} task (ledgit reopen {record.id} "
                   f"first)")
    meta: dict[str, Any] = {}
    held = f.get("claim")
    if held and held["by"] != by:
        fr = claim_freshness(record, now, ttl)
        stale = fr.stale
        winner = lost_to(record, by)
        if winner is not None and not stale:
            raise fail(f"{record.id}: claim lost to {winner} (contested in a merge)", CLAIM)
        if not stale:
            raise fail(f"{record.id}: claimed by {held['by']} ({fr.state}: {fr.reason})",
                       CLAIM)
        if not take_over:
            raise fail(f"{record.id}: claimed by {held['by']} (stale: {fr.reason}); take it "
                       f"over with --take-over", CLAIM)
        meta["took_over_from"] = dict(held)
    if not force:
        deps = list(f.get("depends_on") or [])
        statuses = dependency_status or {}
        pending = [f"{d} ({statuses.get(d) or 'missing'})" for d in deps
                   if statuses.get(d) != "done"]
        if pending:
            raise fail(f"{record.id}: not ready: dependencies not done: {', '.join(pending)} "
                       f"(--force to claim anyway)")
    if held and held["by"] == by:
        new_claim = {"by": by, "at": held["at"], "heartbeat": now}
        if note is not None:
            if note.strip():
                new_claim["note"] = note
        elif held.get("note"):
            new_claim["note"] = held["note"]
    else:
        new_claim = {"by": by, "at": now, "heartbeat": now}
        if note and note.strip():
            new_claim["note"] = note
        f.pop("contested", None)
    f["claim"] = new_claim
    f["status"] = "in_progress"
    op_note = note
    if "took_over_from" in meta:
        prev = meta["took_over_from"]
        fr = claim_freshness(record, now, ttl)
        took = f"took over from {prev['by']} ({fr.state}: {fr.reason})"
        op_note = f"{took}: {note}" if note else took
    if force and f.get("depends_on"):
        meta["forced"] = True
    return finish(record, f, "claim", op_note, meta)


def heartbeat(record: Record, *, by: str, now: str, ttl: int) -> Change:
    """Renew ``by``'s claim (``claim.heartbeat = now``).

    Refused with exit 6 when ``by`` lost the claim in a merge ("claim lost to X (contested in a
    merge)"), when someone else holds it, or when nobody does.
    """
    winner = lost_to(record, by)
    if winner is not None:
        raise fail(f"{record.id}: claim lost to {winner} (contested in a merge)", CLAIM)
    held = record.fields.get("claim")
    if not held:
        raise fail(f"{record.id}: no claim to renew (claim it first)", CLAIM)
    if held["by"] != by:
        fr = claim_freshness(record, now, ttl)
        # The record does not say whether `by` held it before (taken over) or never did:
        # the message is true either way.
        raise fail(f"{record.id}: claimed by {held['by']} at {held.get('at', '?')} "
                   f"({fr.state}: {fr.reason}); only the holder renews a claim, and {by} "
                   f"does not hold it", CLAIM)
    f = _copy_fields(record)
    f["claim"] = dict(held, heartbeat=now)
    return finish(record, f, "heartbeat")


def release(record: Record, *, by: str, now: str, ttl: int, note: str | None = None) -> Change:
    """Give up ``by``'s claim: claim and contested cleared; in_progress goes back to open.

    Refused with exit 6 when nobody or someone else holds it.
    """
    held = record.fields.get("claim")
    if not held:
        winner = lost_to(record, by)
        if winner is not None:
            raise fail(f"{record.id}: claim lost to {winner} (contested in a merge)", CLAIM)
        raise fail(f"{record.id}: no claim to release", CLAIM)
    _guard_holder(record, by, now, ttl, "release")
    f = _copy_fields(record)
    f.pop("claim", None)
    f.pop("contested", None)
    if f["status"] == "in_progress":
        f["status"] = "open"
    return finish(record, f, "release", note)


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
        raise fail(f"{record.id}: cannot {action} {_a(status)} task{hint}")
    _guard_holder(record, by, now, ttl, action)
    f = _copy_fields(record)
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
        f["outcome"] = _drop_empty({"kind": outcome, "reason": (reason or "").strip()})
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
    f["outcome"] = _drop_empty({"kind": "park", "reason": text, "reuse": (reuse or "").strip()})
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
    f["outcome"] = _drop_empty({"kind": kind, "reason": text, "reuse": (reuse or "").strip()})
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
    f = _copy_fields(record)
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
            item = _new_item(record, kind=kind, text=text, by=by, now=now,
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


def _settable(name: str) -> None:
    if name in SETTABLE or name.startswith("x."):
        return
    if name in _LIFECYCLE_HINT:
        raise fail(f"{name} cannot be set directly: {_LIFECYCLE_HINT[name]}")
    raise fail(f"unknown field {name!r} (settable: {', '.join(SETTABLE)}, x.KEY)")


def _set_field(f: dict[str, Any], name: str, value: str) -> None:
    """Assign a text value to a settable field in ``f`` (empty value unsets it)."""
    _settable(name)
    value = value.strip() if name not in ("response",) else value
    if name.startswith("x."):
        key = name[2:]
        if not key:
            raise fail("x. needs a key: x.KEY=VALUE")
        x = dict(f.get("x") or {})
        if value:
            x[key] = value
        else:
            x.pop(key, None)
        f["x"] = x
    elif name == "priority":
        if value and value not in ("0", "1", "2", "3", "4"):
            raise fail(f"priority must be an integer 0-4, got {value!r}")
        f["priority"] = int(value) if value else None
    elif name in ("depends_on", "labels", "commits"):
        f[name] = [v.strip() for v in value.split(",") if v.strip()]
    else:
        f[name] = value


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
    f = _copy_fields(record)
    for name, value in (("title", title), ("response", response),
                        ("next_action", next_action), ("gate", gate), ("owner", owner),
                        ("worker", worker)):
        if value is not None:
            _set_field(f, name, value)
    if priority is not None:
        f["priority"] = priority
    for name, value in sets:
        _set_field(f, name, value)
    if add_commits:
        f["commits"] = _set_union(f.get("commits", []), add_commits, ())
    if depends_add or depends_remove:
        if record.id in depends_add:
            raise fail(f"{record.id}: depends_on: a task cannot depend on itself")
        f["depends_on"] = _set_union(f.get("depends_on", []), depends_add, depends_remove)
    if labels_add or labels_remove:
        f["labels"] = _set_union(f.get("labels", []), labels_add, labels_remove)
    changed = sorted(k for k in set(f) | set(record.fields)
                     if _drop_empty({k: f.get(k)}).get(k) != record.fields.get(k))
    return finish(record, f, "update", note, {"fields": changed} if changed else None)


# --------------------------------------------------------------------------- items


def item_id(task: str, by: str, now: str, kind: str, text: str, salt: int = 0) -> str:
    """A short item id derived from its content: ``i-`` + 8 lower-case base32 characters
    (40 bits of sha256). Deterministic, so a replayed or merged item keeps its id."""

    digest = bytes.fromhex(sha256_hex(f"{task}\0{by}\0{now}\0{kind}\0{text}\0{salt}".encode()))
    return "i-" + base64.b32encode(digest).decode("ascii")[:8].lower()


def _new_item(record: Record, *, kind: str, text: str, by: str, now: str,
              why: str | None = None, evidence: str | None = None, trust: str = "candidate",
              supersedes: Sequence[str] = (), extra: Mapping[str, Any] | None = None,
              taken: Iterable[str] = ()) -> dict[str, Any]:
    if kind not in ITEM_KINDS:
        raise fail(f"unknown item kind {kind!r} (one of {', '.join(ITEM_KINDS)})")
    text = _need_text(text, "an item needs text: --text TEXT")
    used = {i["id"] for i in record.fields.get("items", [])} | set(taken)
    salt = 0
    iid = item_id(record.id, by, now, kind, text)
    while iid in used:
        salt += 1
        iid = item_id(record.id, by, now, kind, text, salt)
    item: dict[str, Any] = {"id": iid, "kind": kind, "text": text}
    if why and why.strip():
        item["why"] = why.strip()
    if evidence and evidence.strip():
        item["evidence"] = evidence.strip()
    item.update({"trust": trust, "by": by, "at": now})
    if supersedes:
        item["supersedes"] = list(supersedes)
    if extra:
        item["x"] = dict(extra)
    return item


def may_lock(record: Record, by: str, trusted: bool) -> bool:
    """True when ``by`` may lock state: the task's owner, or a trusted workflow."""
    return trusted or (bool(record.fields.get("owner")) and record.fields.get("owner") == by)


def _lock_refusal(record: Record, by: str, what: str) -> LedgitError:
    owner = record.fields.get("owner")
    who = f"the owner ({owner})" if owner else "the owner (none set: update --owner)"
    return fail(f"{record.id}: only {who} or --trusted may {what}; {by} is not the owner")


def resolve_item(record: Record, text: str) -> dict[str, Any]:
    """The item whose id is ``text`` or starts with it (unique); exit 4 otherwise."""
    items: list[dict[str, Any]] = record.fields.get("items", [])
    exact = [i for i in items if i["id"] == text]
    if exact:
        return exact[0]
    found = [i for i in items if text and i["id"].startswith(text)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise fail(f"{record.id}: no item {text!r}", NOT_FOUND)
    raise fail(f"{record.id}: item {text!r} is ambiguous: "
               + ", ".join(i["id"] for i in found), NOT_FOUND)


def item_add(record: Record, *, kind: str, text: str, by: str, now: str,
             why: str | None = None, evidence: str | None = None, lock: bool = False,
             trusted: bool = False) -> Change:
    """Add a state item, candidate by default (``lock`` needs the owner or ``trusted``).
    The new id is in the meta as ``item``."""
    if lock and not may_lock(record, by, trusted):
        raise _lock_refusal(record, by, "add locked items")
    item = _new_item(record, kind=kind, text=text, by=by, now=now, why=why,
                     evidence=evidence, trust="locked" if lock else "candidate")
    f = _copy_fields(record)
    f["items"] = [*f.get("items", []), item]
    return finish(record, f, "item", f"{kind}: {item['text']}",
                  {"item": item["id"], "trust": item["trust"]})


def _apply_proposal(f: dict[str, Any], item: Mapping[str, Any]) -> str | None:
    """Apply a writeback's proposed field (``x.field``/``x.value``) on acceptance."""
    x = item.get("x") or {}
    name = x.get("field")
    if not name:
        return None
    _set_field(f, str(name), str(x.get("value", "")))
    return str(name)


def accept(record: Record, *, items: Sequence[str], by: str, now: str,
           trusted: bool = False) -> Change:
    """Lock candidate items (only the owner or ``trusted``; exit 2 otherwise).

    Accepting an item that supersedes others deprecates them; accepting a writeback's field
    proposal applies it. Refused: unknown item (exit 4), a deprecated item, nothing to lock.
    """
    if not items:
        raise fail("accept needs at least one ITEM id")
    if not may_lock(record, by, trusted):
        raise _lock_refusal(record, by, "accept items")
    f = _copy_fields(record)
    by_id = {i["id"]: i for i in f.get("items", [])}
    chosen: list[str] = []
    for text in items:
        iid = resolve_item(record, text)["id"]
        item = by_id[iid]
        if item["trust"] == "deprecated":
            raise fail(f"{record.id}: item {iid} is deprecated{_superseded_by(item)}")
        if item["trust"] == "candidate" and iid not in chosen:
            chosen.append(iid)
    if not chosen:
        raise fail(f"{record.id}: nothing to accept: already locked")
    deprecated: list[str] = []
    applied: list[str] = []
    for iid in chosen:
        item = by_id[iid]
        item["trust"] = "locked"
        for old in item.get("supersedes", []):
            target = by_id.get(old)
            if target is not None and target["trust"] != "deprecated":
                _deprecate(target, iid)
                deprecated.append(old)
        name = _apply_proposal(f, item)
        if name:
            applied.append(name)
    f["items"] = list(by_id.values())
    meta: dict[str, Any] = {"accepted": chosen, "trusted": trusted}
    if deprecated:
        meta["supersedes"] = deprecated
    if applied:
        meta["fields"] = applied
    return finish(record, f, "accept", None, meta)


def _superseded_by(item: Mapping[str, Any]) -> str:
    """`` (superseded by A, B)`` naming the items that superseded ``item``; empty when none
    is recorded (e.g. imported deprecated, or deprecated by a merge): "deprecated" alone."""
    later = [str(i) for i in item.get("superseded_by") or []]
    return f" (superseded by {', '.join(later)})" if later else ""


def _deprecate(item: dict[str, Any], by_item: str) -> None:
    item["trust"] = "deprecated"
    later = list(item.get("superseded_by", []))
    if by_item not in later:
        later.append(by_item)
    item["superseded_by"] = later


def revise(record: Record, *, supersedes: Sequence[str], text: str, by: str, now: str,
           kind: str | None = None, why: str | None = None, evidence: str | None = None,
           trusted: bool = False) -> Change:
    """A state revision: a new item that supersedes ``supersedes`` (which become deprecated,
    with ``superseded_by``); the event meta lists ``supersedes`` and the new ``item``.

    The new item is locked when ``by`` is the owner or ``trusted``, else candidate. Locked
    state is the owner's: a non-owner may supersede only candidate items (exit 2 otherwise),
    so a worker cannot silently unlock accepted state. ``kind`` defaults to the first
    superseded item's kind.
    """
    if not supersedes:
        raise fail("revise needs --supersedes ITEM")
    owner_ok = may_lock(record, by, trusted)
    f = _copy_fields(record)
    by_id = {i["id"]: i for i in f.get("items", [])}
    olds: list[str] = []
    for t in supersedes:
        item = resolve_item(record, t)
        if item["trust"] == "deprecated":
            later = item.get("superseded_by") or []
            raise fail(f"{record.id}: item {item['id']} is already deprecated"
                       f"{_superseded_by(item)}; "
                       + ("revise the newer item" if later else "revise a current item"))
        if item["trust"] == "locked" and not owner_ok:
            raise _lock_refusal(record, by, f"supersede locked item {item['id']}")
        if item["id"] not in olds:
            olds.append(item["id"])
    new = _new_item(record, kind=kind or by_id[olds[0]]["kind"], text=text, by=by, now=now,
                    why=why, evidence=evidence,
                    trust="locked" if owner_ok else "candidate", supersedes=olds)
    for old in olds:
        _deprecate(by_id[old], new["id"])
    f["items"] = [*by_id.values(), new]
    return finish(record, f, "revise", None,
                  {"item": new["id"], "supersedes": olds, "trust": new["trust"]})


# --------------------------------------------------------------------------- writeback


def writeback(record: Record, *, by: str, now: str, evidence: str | None,
              sets: Sequence[tuple[str, str]] = (), artifacts: Sequence[str] = (),
              gate: str | None = None, trusted: bool = False) -> Change:
    """A worker's report: changed fields, artifacts, verification ``evidence`` (required,
    exit 2) and the remaining ``gate``.

    From anyone but the owner (or ``trusted``) it lands as candidate items only: an
    ``artifact`` item per artifact, a ``fact`` item per proposed field change (``x.field``,
    ``x.value``; applied when the owner accepts it), a ``blocker`` item proposing the gate,
    and with none of those one ``fact`` item holding the evidence. From the owner the items are
    locked and the fields are set at once. The meta lists the new ``items``.
    """
    proof = (evidence or "").strip()
    if not proof:
        raise fail(f"{record.id}: writeback needs verification evidence: --evidence TEXT")
    owner_ok = may_lock(record, by, trusted)
    trust = "locked" if owner_ok else "candidate"
    proposals = list(sets)
    if gate is not None and gate.strip():
        proposals.append(("gate", gate))
    f = _copy_fields(record)
    new: list[dict[str, Any]] = []

    def add(kind: str, text: str, extra: Mapping[str, Any] | None = None) -> None:
        new.append(_new_item(record, kind=kind, text=text, by=by, now=now, evidence=proof,
                             trust=trust, extra=extra, taken=[i["id"] for i in new]))

    for name, value in proposals:
        _settable(name)
        _set_field(dict(f), name, value)  # validate the value now, not at accept time
        kind = "blocker" if name == "gate" else "fact"
        add(kind, f"{name}: {value.strip() or '(unset)'}", {"field": name, "value": value})
    for artifact in artifacts:
        add("artifact", artifact)
    if not new:
        add("fact", proof)
    applied: list[str] = []
    if owner_ok:
        for item in new:
            proposed = _apply_proposal(f, item)
            if proposed:
                applied.append(proposed)
    f["items"] = [*f.get("items", []), *new]
    meta: dict[str, Any] = {"items": [i["id"] for i in new], "trust": trust}
    if proposals:
        meta["proposed"] = [n for n, _ in proposals]
    if applied:
        meta["fields"] = applied
    return finish(record, f, "writeback", proof, meta)


# --------------------------------------------------------------------------- handoff


def handoff_packet(record: Record) -> dict[str, Any]:
    """The compact handoff packet of a record: see :func:`ledgit.core.readout.handoff_of`."""
    return handoff_of(record.fields, record.body, record.revision)


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
    return _seconds_between(since, now)


# --------------------------------------------------------------------------- revert, re-import

#: Fields that say when, not what: never a clash, never restored by a revert.
_STAMPS = ("id", "created", "last_modified", "contested")


def clashes(base: Record | None, ours: Record, theirs: Record) -> list[str]:
    """Where both sides changed the same thing to different values, which the merge policy
    (:func:`ledgit.core.merge.merge_records`) would settle by a rule -- the later side, the
    terminal status, the earlier claim -- rather than by combining both: a scalar field, the
    claim, the outcome, one field of one item (``items.ID.KEY``), one leaf of ``x``
    (``x.beads.KEY``). Sets (labels, depends_on, commits, an item's supersedes) combine and
    never clash; the body's line merge reports its own conflicts. Sorted paths."""
    found: list[str] = []
    bf: Mapping[str, Any] = base.fields if base is not None else {}
    of, tf = ours.fields, theirs.fields
    for key in sorted((set(bf) | set(of) | set(tf)) - set(_STAMPS)):
        b, o, t = bf.get(key), of.get(key), tf.get(key)
        if key in ("depends_on", "labels", "commits") or not _both_changed(b, o, t):
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



__all__ = ["CLAIMABLE", "Change", "Freshness", "NOT_READY_OUTCOMES", "SETTABLE", "accept",
           "acceptance_of", "age_seconds", "archive", "claim", "claim_freshness", "complete",
           "compose_body", "create_fields", "drop", "fail", "finish", "format_duration",
           "format_ttl", "goal_of", "handoff_packet", "heartbeat", "is_ready", "item_add",
           "item_id", "lost_to", "may_lock", "monitor", "park", "parse_assignment", "release",
           "render_handoff", "reopen", "resolve_item", "revert", "revise", "update", "wait",
           "writeback", "claim_ended_by", "clashes"]
