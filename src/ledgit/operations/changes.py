"""How a transition makes its :class:`~ledgit.core.change.Change` (DESIGN §4): the statuses each
transition starts from, the fields ``update --set`` may write, the copy of a record's fields
to edit, and :func:`finish`, which validates the new fields (schema and lifecycle invariants)
or refuses with exit 2. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledgit.core.change import Change
from ledgit.core.errors import USAGE, LedgitError
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.record import Record, make_record
from ledgit.core.timestamps import parse_timestamp

if TYPE_CHECKING:
    from collections.abc import Mapping


# Statuses a task can be claimed from, and the statuses each transition may start from.
CLAIMABLE = ("open", "in_progress")
ENDED = ("done", "dropped", "archived")
# Fields `update --set` and `writeback --set` may write (lifecycle fields have their commands).
SETTABLE = ("title", "priority", "owner", "worker", "response", "next_action", "gate",
            "waiting_on", "signal", "depends_on", "labels", "commits")
LIFECYCLE_HINT = {
    "status": "use claim/release/complete/wait/monitor/park/drop/archive/reopen",
    "claim": "use claim/heartbeat/release",
    "contested": "use claim --take-over or release",
    "outcome": "use park/drop/complete --outcome",
    "items": "use item add/accept/revise/writeback",
    "notes": "use note (notes are append-only)",
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


def seconds_between(earlier: str, later: str) -> float:
    return (parse_timestamp(later) - parse_timestamp(earlier)).total_seconds()


def with_article(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def copy_fields(record: Record) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in record.fields.items():
        if isinstance(v, list):
            out[k] = [dict(i) if isinstance(i, dict) else i for i in v]
        elif isinstance(v, dict):
            out[k] = dict(v)
        else:
            out[k] = v
    return out


def drop_empty(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v not in (None, "", [], {})}


def finish(before: Record, fields: Mapping[str, Any], op: str, note: str | None = None,
           meta: Mapping[str, Any] | None = None, body: str | None = None) -> Change:
    """Validate new fields (schema + lifecycle invariants) into a Change; refuse with exit 2.

    The message names the task and the first broken rule: ``T-1: waiting_on: status waiting
    needs waiting_on``.
    """
    task = before.id
    clean = drop_empty(dict(fields))
    problems = lifecycle_problems(clean)
    if problems:
        field, message = problems[0]
        raise fail(f"{task}: {field}: {message}")
    try:
        record = make_record(clean, before.body if body is None else body, path=task)
    except LedgitError as exc:
        raise fail(str(exc)) from None
    return Change(record, op, note or None, dict(meta) if meta else None)


def need_text(value: str | None, what: str) -> str:
    text = (value or "").strip()
    if not text:
        raise fail(what)
    return text


def check_settable(name: str) -> None:
    if name in SETTABLE or name.startswith("x."):
        return
    if name in LIFECYCLE_HINT:
        raise fail(f"{name} cannot be set directly: {LIFECYCLE_HINT[name]}")
    raise fail(f"unknown field {name!r} (settable: {', '.join(SETTABLE)}, x.KEY)")


def set_field(f: dict[str, Any], name: str, value: str) -> None:
    """Assign a text value to a settable field in ``f`` (empty value unsets it)."""
    check_settable(name)
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
