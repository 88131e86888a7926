"""``ledgit note``: append a timestamped, attributed line to a task's notes
(:func:`ledgit.operations.notes.note`, written through
:func:`ledgit.cli.commands.writes.mutate`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledgit.cli.commands.writes import mutate
from ledgit.operations import notes

if TYPE_CHECKING:
    from ledgit.core.change import Change
    from ledgit.core.record import Record


def note_cmd(task: str, text: str, by: str | None, expect: str | None, as_json: bool) -> int:
    """``ledgit note TASK TEXT``: the note ``{at: now, by: actor, text}`` appended to TASK
    (any status). Prints ``ID: noted (status S, rev R)`` or the mutation JSON (meta
    ``note``). Returns 0; LedgitError exit 2 for an empty or multi-line text, 4 for an
    unknown task, 3 for a stale ``expect``."""
    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        return notes.note(r, text=text, by=actor, now=now)

    def show(rec: Record, _ch: Change) -> str:
        return f"{rec.id}: noted (status {rec.fields['status']}, rev {rec.revision[:12]})"

    return mutate(task, by, expect, op, as_json, show)
