"""The reads of one task straight from its files, without the index: ``item list`` (the
state items of its record) and ``history`` (its events). They write nothing.
"""

from __future__ import annotations

from ledgit.cli.commands.output import out, out_json
from ledgit.cli.commands.running import command_board
from ledgit.core import history
from ledgit.core.errors import CHECK_FAILED, OK, LedgitError
from ledgit.core.markers import line_merge_refusal


def item_list_cmd(task: str, trusts: tuple[str, ...], as_json: bool) -> int:
    """``ledgit item list``: TASK's state items (DESIGN §5), only those of ``trusts`` when
    given; one line each (id, trust, kind, text, what supersedes it), or JSON
    ``{task, items}``. Returns 0; exit 4 for an unknown id."""
    board = command_board()
    record = board.read(board.resolve_id(task))
    items = [i for i in record.fields.get("items", []) if not trusts or i["trust"] in trusts]
    if as_json:
        out_json({"task": record.id, "items": items})
        return OK
    for i in items:
        extra = f" -> {', '.join(i['superseded_by'])}" if i.get("superseded_by") else ""
        out(f"{i['id']}  {i['trust']:<10}  {i['kind']:<9}  {i['text']}{extra}")
    return OK


def history_cmd(task: str, as_json: bool) -> int:
    """``ledgit history``: TASK's events, oldest first (DESIGN §6; one line each: time, id,
    actor, op, note; or JSON ``{id, events}``). Returns 0; LedgitError exit 1 for a missing
    or damaged history, 4 for an unknown id."""

    board = command_board()
    tid = board.resolve_id(task)
    text = board.read_history_text(tid)
    if text is None:
        raise LedgitError(f"{tid}: the task has no history file (record it: ledgit record {tid})",
                          CHECK_FAILED)
    try:
        events = history.strip_lines(history.parse_events(text, tid))
    except history.HistoryError as exc:
        marked = line_merge_refusal(board.rel(board.history_path(tid)), text)
        raise LedgitError(marked or str(exc), CHECK_FAILED) from None
    if as_json:
        out_json({"id": tid, "events": events})
        return OK
    for e in events:
        note = f"  {e['note']}" if e.get("note") else ""
        out(f"{e['at']}  {e['id'][:12]}  {e['actor']}  {e['op']}{note}")
    return OK
