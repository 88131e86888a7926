"""Printing the rows of ``list``, ``search`` and ``ready``: a row's text line, and the rows
with the index's warnings (their shape and filters: :mod:`ledgit.operations.rows`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ledgit.cli.commands.output import err, out, out_json
from ledgit.core.markers import has_markers
from ledgit.operations.leaserecord import END_OPS
from ledgit.operations.leases import add_leases
from ledgit.operations.rows import row_view

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ledgit.operations.leaserecord import Lease
    from ledgit.storage.board import Board


def row_line(v: dict[str, Any]) -> str:
    """The text line of one :func:`row_view` (list, search, ready): id, status, priority,
    title, the claim's holder and freshness, the outcome kind; ends with a newline."""
    prio = "-" if v["priority"] is None else str(v["priority"])
    claim = f"  [{v['claim'].get('by')} {v['freshness']['state']}]" if v["claim"] else ""
    outcome = f"  ({v['outcome']['kind']})" if v.get("outcome") else ""
    return f"{v['id']}  {v['status']:<11}  P{prio}  {v['title']}{claim}{outcome}" \
           f"{lease_text(v.get('lease'), v['status'])}\n"


def lease_text(view: Mapping[str, Any] | None, status: str) -> str:
    """``  {leased by bob until T}`` (or ``{completed by bob on the remote}``) for a live
    remote lease in a row (:func:`ledgit.operations.leaserecord.lease_view`); empty otherwise."""
    if not view or not view.get("live"):
        return ""
    if view["state"] == "ended":
        if status not in ("open", "in_progress"):
            return ""  # the end is known here
        return f"  {{{END_OPS.get(view['op'], view['op'])} by {view['by']} on the remote}}"
    return f"  {{leased by {view['by']} until {view['expires']}}}"


def warn_markers(task_id: Any, body: Any, path: Any) -> None:
    """One stderr line when a task's body holds conflict markers (a line merge committed)."""
    if not isinstance(body, str) or not ("<<<<<<<" in body or ">>>>>>>" in body
                                         or "|||||||" in body):
        return  # no marker can be there (ledgit.core.markers: 7 or more of <, > or |)

    if has_markers(body):
        err(f"ledgit: warning: {task_id}: the body holds conflict markers "
            f"(run: ledgit resolve {path}, or edit it, then: ledgit record {task_id})")


def print_rows(rows: list[dict[str, Any]], as_json: bool, board: Board,
               errors: list[tuple[str, str]], leases: Mapping[str, Lease] | None = None,
               *, total: int | None = None, next_cursor: str | None = None) -> None:
    """Print index ``rows`` of ``board``: one :func:`row_line` each, or JSON ``{tasks,
    count, total, next_cursor, errors}`` (docs/cli.md; ``total``: how many matched, default
    the rows'; ``next_cursor``: continues after them, None at the end); a warning on stderr
    for each (path, message) in ``errors`` (files the index skipped), for each body holding
    conflict markers, and, in text, a line naming the cursor when more remain.
    ``leases``: the remote's leases by task (rows then carry ``lease``: docs/leases.md)."""
    ttl = int(board.config.claim_ttl)
    now = time.time()
    views = [row_view(r, now, ttl) for r in rows]
    add_leases(views, leases, now)
    for r in rows:
        warn_markers(r.get("id"), r.get("body"), r.get("path"))
    for path, message in errors:
        err(f"ledgit: warning: skipped {path}: {message}" if path not in message
            else f"ledgit: warning: skipped: {message}")
    if as_json:
        out_json({"tasks": views, "count": len(views),
                  "total": len(views) if total is None else total, "next_cursor": next_cursor,
                  "errors": [{"path": p, "message": m} for p, m in errors]})
        return
    out("".join(row_line(v) for v in views), nl=False)
    more_line(len(views), total, next_cursor)


def more_line(shown: int, total: int | None, next_cursor: str | None) -> None:
    """In text, the stderr line that says a page stopped before the end: ``ledgit: 20 of
    5,722 shown; the next page: --cursor CURSOR`` (nothing at the end)."""
    if next_cursor is not None:
        of = "" if total is None else f" of {total:,}"
        err(f"ledgit: {shown:,}{of} shown; the next page: --cursor {next_cursor}")
