"""Notes: append-only lines ``{at, by, text}`` on a task (DESIGN §4, issue 24). Pure.

A note says what happened or what was learnt, in one line, with who and when; it is never
edited or removed by ledgit. Notes live in the record's ``notes`` field (docs/format.md), so a
merge joins both sides' notes, each once, oldest first (:func:`ledgit.core.merge.merge_notes`):
two agents noting on one task never stop a pull.
"""

from __future__ import annotations

from typing import Any

from ledgit.core.change import Change
from ledgit.core.errors import USAGE, LedgitError
from ledgit.core.record import Record, make_record
from ledgit.operations.changes import finish


def new_note(text: str, *, by: str, now: str) -> dict[str, str]:
    """The note ``{at: now, by, text}`` (text stripped). Raises LedgitError exit 2 for an
    empty text or one with a line break (a note is one line: add several notes)."""
    clean = text.strip()
    if not clean:
        raise LedgitError("the note text is empty (give one line)", USAGE)
    if any(c in clean for c in "\n\r\u2028\u2029\x85"):
        raise LedgitError("a note is one line (no line breaks): add one note per line", USAGE)
    return {"at": now, "by": by, "text": clean}


def note(record: Record, *, text: str, by: str, now: str) -> Change:
    """Append the note ``text`` by ``by`` at ``now`` to ``record`` (op ``note``; meta
    ``{"note": {at, by, text}}``). Any status: notes are history of the work, kept after it
    ended. Raises LedgitError exit 2 as :func:`new_note` and for a note over the schema's
    rules (NUL, lone surrogate)."""
    added = new_note(text, by=by, now=now)
    fields = dict(record.fields)
    fields["notes"] = [*record.fields.get("notes", []), added]
    return finish(record, fields, "note", None, {"note": added})


def with_note(change: Change, *, text: str, by: str, now: str) -> Change:
    """``change`` with the note ``text`` appended to its record too (``update`` with a
    note: one event); its meta gains ``note``."""
    added = new_note(text, by=by, now=now)
    rec = change.record
    fields: dict[str, Any] = dict(rec.fields)
    fields["notes"] = [*rec.fields.get("notes", []), added]
    try:
        record = make_record(fields, rec.body, path=rec.id)
    except LedgitError as exc:
        raise LedgitError(str(exc), USAGE) from None
    return Change(record, change.op, change.note, {**(change.meta or {}), "note": added})
