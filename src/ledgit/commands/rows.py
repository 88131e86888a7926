"""The rows of ``list``, ``search`` and ``ready`` (and of ``ledgit mcp``'s list tools): the
filters they ask the index with, a row's documented shape (docs/cli.md) with its claim's
freshness, its text line, and printing them with the index's warnings.

Standard library and :mod:`ledgit.readout` only: no YAML, no record.py on a list.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ledgit.commands.arguments import split_list
from ledgit.commands.output import err, out, out_json
from ledgit.readout import NOT_READY_OUTCOMES, epoch_seconds, format_duration, format_ttl

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ledgit.board import Board

ROW_KEYS = ("id", "title", "status", "priority", "owner", "worker", "claim", "labels",
            "depends_on", "outcome", "next_action", "gate", "created", "last_modified",
            "path", "revision")


def filters_of(status: Sequence[str], owner: str | None, worker: str | None,
               label: Sequence[str], include_all: bool, outcome: str | None
               ) -> dict[str, Any]:
    """The keywords of :meth:`ledgit.index.Index.rows` / ``search`` for the list filters
    (only those given; ``label`` split at commas; archived tasks only with ``include_all``
    or ``--status archived``)."""
    filters: dict[str, Any] = {}
    if status:
        filters["status"] = list(status)
    if owner:
        filters["owner"] = owner
    if worker:
        filters["worker"] = worker
    if label:
        filters["label"] = split_list(label)
    if outcome:
        filters["outcome"] = outcome
    filters["include_archived"] = include_all or "archived" in status
    return filters


def is_negative(row: dict[str, Any]) -> bool:
    """Whether an index row's outcome keeps the task off ``ready`` (drop, no_change:
    DESIGN §4)."""
    return (row.get("outcome") or {}).get("kind") in NOT_READY_OUTCOMES


def row_view(row: dict[str, Any], now: float, ttl: int) -> dict[str, Any]:
    """A list/search/ready row in the documented shape (docs/cli.md): :data:`ROW_KEYS` and
    ``freshness`` ({state: fresh/stale/contested/none, reason}) of the claim, from ``now``
    (epoch seconds) and ``ttl`` (seconds)."""
    view = {k: row.get(k) for k in ROW_KEYS}
    for k in ("labels", "depends_on"):
        view[k] = list(view[k] or [])
    claim = view["claim"]
    if claim:
        last = claim.get("heartbeat") or claim.get("at")
        age = max(now - epoch_seconds(last), 0.0)
        state = "stale" if age > ttl else "fresh"
        if row.get("contested"):
            state = "contested"
        beat = "last heartbeat" if claim.get("heartbeat") else "claimed"
        view["freshness"] = {"state": state,
                             "reason": f"claim by {claim.get('by')} {beat} "
                                       f"{format_duration(age)} ago, TTL {format_ttl(ttl)}"}
    else:
        view["freshness"] = {"state": "none", "reason": "nobody holds a claim"}
    return view


def row_line(v: dict[str, Any]) -> str:
    """The text line of one :func:`row_view` (list, search, ready): id, status, priority,
    title, the claim's holder and freshness, the outcome kind; ends with a newline."""
    prio = "-" if v["priority"] is None else str(v["priority"])
    claim = f"  [{v['claim'].get('by')} {v['freshness']['state']}]" if v["claim"] else ""
    outcome = f"  ({v['outcome']['kind']})" if v.get("outcome") else ""
    return f"{v['id']}  {v['status']:<11}  P{prio}  {v['title']}{claim}{outcome}\n"


def warn_markers(task_id: Any, body: Any, path: Any) -> None:
    """One stderr line when a task's body holds conflict markers (a line merge committed)."""
    if not isinstance(body, str) or not ("<<<<<<<" in body or ">>>>>>>" in body
                                         or "|||||||" in body):
        return  # no marker can be there (ledgit.markers: 7 or more of <, > or |)
    from ledgit.markers import has_markers  # lazy: 0.4 ms (-X importtime) that a read skips

    if has_markers(body):
        err(f"ledgit: warning: {task_id}: the body holds conflict markers "
            f"(run: ledgit resolve {path}, or edit it, then: ledgit record {task_id})")


def print_rows(rows: list[dict[str, Any]], as_json: bool, board: Board,
               errors: list[tuple[str, str]]) -> None:
    """Print index ``rows`` of ``board``: one :func:`row_line` each, or JSON ``{tasks,
    count, errors}`` (docs/cli.md); a warning on stderr for each (path, message) in
    ``errors`` (files the index skipped) and for each body holding conflict markers."""
    ttl = int(board.config.claim_ttl)
    now = time.time()
    views = [row_view(r, now, ttl) for r in rows]
    for r in rows:
        warn_markers(r.get("id"), r.get("body"), r.get("path"))
    for path, message in errors:
        err(f"ledgit: warning: skipped {path}: {message}" if path not in message
            else f"ledgit: warning: skipped: {message}")
    if as_json:
        out_json({"tasks": views, "count": len(views),
                  "errors": [{"path": p, "message": m} for p, m in errors]})
        return
    out("".join(row_line(v) for v in views), nl=False)
