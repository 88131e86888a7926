"""The reads of one task straight from its files, without the index: ``item list`` (the
state items of its record) and ``history`` (its events). They write nothing.
"""

from __future__ import annotations

from ledgit.cli.commands.output import out, out_json
from ledgit.cli.commands.rows import more_line
from ledgit.cli.commands.running import command_board
from ledgit.core import history
from ledgit.core.errors import CHECK_FAILED, OK, ArgumentError, LedgitError
from ledgit.core.markers import line_merge_refusal
from ledgit.operations import paging


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


def history_cmd(task: str, limit: int | None, cursor: str | None, as_json: bool) -> int:
    """``ledgit history``: TASK's events, oldest first (DESIGN §6; one line each: time, id,
    actor, op, note; or JSON ``{id, events, total, next_cursor}``), at most ``limit`` from
    just after the event ``cursor`` names (DESIGN §14: a history only grows, so a position
    is an event). Returns 0; LedgitError exit 1 for a missing or damaged history, 4 for an
    unknown id; ArgumentError exit 2 for a cursor of another task or a damaged one."""

    board = command_board()
    tid = board.resolve_id(task)
    query = {"what": "history", "task": tid}
    after = paging.decode_cursor(cursor, query, "--cursor", paging.one_string)
    text = board.read_history_text(tid)
    if text is None:
        raise LedgitError(f"{tid}: the task has no history file (record it: ledgit record {tid})",
                          CHECK_FAILED)
    try:
        events = history.strip_lines(history.parse_events(text, tid))
    except history.HistoryError as exc:
        marked = line_merge_refusal(board.rel(board.history_path(tid)), text)
        raise LedgitError(marked or str(exc), CHECK_FAILED) from None
    start = 0
    if after is not None:
        ids = [e.get("id") for e in events]
        if after[0] not in ids:
            raise ArgumentError("--cursor", f"its event is not in {tid}'s history",
                                paging.CURSOR_EXPECTED)
        start = ids.index(after[0]) + 1
    shown = events[start:] if limit is None else events[start:start + limit]
    more = start + len(shown) < len(events)
    next_cursor = paging.encode_cursor(query, [shown[-1]["id"]]) if more and shown else None
    if as_json:
        out_json({"id": tid, "events": shown, "total": len(events),
                  "next_cursor": next_cursor})
        return OK
    for e in shown:
        note = f"  {e['note']}" if e.get("note") else ""
        out(f"{e['at']}  {e['id'][:12]}  {e['actor']}  {e['op']}{note}")
    more_line(len(shown), len(events), next_cursor)
    return OK
