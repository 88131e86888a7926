"""The reads answered from the worktree's index: ``list``, ``ready`` and ``handoff`` (``get``:
:mod:`ledgit.cli.commands.get`, ``search``: :mod:`ledgit.cli.commands.search`). They ask the
index after its stat-level freshness check (DESIGN §10; ``handoff`` falls back to the one
task file without an index) and write nothing but the derived index. ``item list`` and
``history`` read one task's files: :mod:`ledgit.cli.commands.file_reads`.

No YAML and no write-path code (ops, record, history) on these paths: tests/test_cli.py
checks the modules a read imports.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ledgit.cli.commands.get import one_task
from ledgit.cli.commands.output import err, out, out_json
from ledgit.cli.commands.rows import print_rows, row_line
from ledgit.cli.commands.running import command_board
from ledgit.cli.commands.table import STATUSES
from ledgit.core.errors import OK
from ledgit.core.readout import (
    NOT_READY_OUTCOMES,
    handoff_of,
    render_handoff,
)
from ledgit.operations import projects
from ledgit.operations.leases import (
    blocks_ready,
    board_leases,
    unleased,
)
from ledgit.operations.rows import filters_of, is_negative, row_view
from ledgit.storage.board import find_board
from ledgit.storage.index import Index

if TYPE_CHECKING:
    from ledgit.storage.board import Board

FINISHED = ("done", "dropped", "archived")  # `list` shows them after the work in play


def list_cmd(status: tuple[str, ...], owner: str | None, worker: str | None,
             label: tuple[str, ...], outcome: str | None, include_all: bool, sort: str,
             limit: int | None, ready: bool, as_json: bool, projects: bool = False) -> int:
    """``ledgit list``: the tasks matching the filters, the work in play first, then done
    and dropped (archived only with ``include_all``); within each, by last_modified
    (``sort``: asc/desc); at most ``limit``. ``projects``: over every registered board
    too. Prints rows (:func:`ledgit.cli.commands.rows.print_rows`); returns 0."""
    if projects:
        if ready:
            return _across_projects("ready", as_json, owner=owner, worker=worker,
                                    label=label, limit=limit)
        return _across_projects("list", as_json, status=status, owner=owner, worker=worker,
                                label=label, outcome=outcome, include_all=include_all,
                                sort=sort, limit=limit)
    board = command_board()
    with Index.open(board) as index:
        filters = filters_of(status, owner, worker, label, include_all, outcome)
        wanted = list(status) or [s for s in STATUSES if include_all or s != "archived"]
        rows: list[dict[str, Any]] = []
        for group in ([s for s in wanted if s not in FINISHED],
                      [s for s in wanted if s in FINISHED]):
            left = None if limit is None else limit - len(rows)
            if group and left != 0:
                rows += index.rows(ready=ready, sort=sort, limit=left,
                                   **dict(filters, status=group))
        if ready:
            rows = [r for r in rows if not is_negative(r)]
        errors = index.errors()
    leases = board_leases(board)
    if ready and leases:
        rows = unleased(rows, leases)
    print_rows(rows, as_json, board, errors, leases)
    return OK


def ready_cmd(owner: str | None, worker: str | None, label: tuple[str, ...],
              limit: int | None, as_json: bool, projects: bool = False) -> int:
    """``ledgit ready``: tasks ready to claim (open, every dependency done, no drop or
    no_change outcome), most urgent first (priority, then oldest); with none, why not, on
    stderr (:func:`why_nothing_ready`). ``projects``: over every registered board too.
    Returns 0."""
    if projects:
        return _across_projects("ready", as_json, owner=owner, worker=worker, label=label,
                                limit=limit)
    board = command_board()
    leases = board_leases(board)
    rows, errors = ready_rows(board, owner, worker, label, limit, leases)
    why = None
    if not rows and not as_json:
        with Index.open(board) as index:
            why = why_nothing_ready(index, filters_of((), owner, worker, label, False, None),
                                    leases)
    print_rows(rows, as_json, board, errors, leases)
    if why is not None:
        if errors and "no tasks yet" in why:
            why = (f"nothing is ready: {len(errors)} task file(s) could not be read "
                   f"(the warnings above say why and what to run)")
        err(f"ledgit ready: {why}")
    return OK


def ready_rows(board: Board, owner: str | None, worker: str | None, label: tuple[str, ...],
               limit: int | None, leases: dict[str, Any] | None = None
               ) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The ready rows of ``board`` (and the index's errors): a task that depends on another
    board's task (``ALIAS:ID``) is ready only once that task is done there; one a remote
    lease holds (``leases``, :func:`board_leases`) is left out."""
    with Index.open(board) as index:
        filters = filters_of((), owner, worker, label, False, None)
        rows = [r for r in index.rows(ready=True, sort="priority",
                                      limit=None if leases else limit, **filters)
                if not is_negative(r)]
        if leases:
            rows = unleased(rows, leases)[:limit]
        pending = [r for r in index.rows(pending_external=True, sort="priority", **filters)
                   if not is_negative(r)]
        if leases:
            pending = unleased(pending, leases)
        errors = index.errors()
    if pending:

        cache: dict[str, Any] = {}
        for row in pending:
            deps = [d for d in row.get("depends_on") or [] if ":" in d]
            if all(projects.external_status(board, d, cache).status == "done" for d in deps):
                rows.append(row)
        rows.sort(key=lambda r: (5 if r.get("priority") is None else r["priority"],
                                 r.get("created") or "", r["id"]))
        rows = rows[:limit] if limit is not None else rows
    return rows, errors


def _across_projects(what: str, as_json: bool, **kw: Any) -> int:
    """``list``/``ready`` over this board and every registered one, each row naming its
    board (``board``: this board's name, or the alias). A registered board that cannot be
    read fails closed (exit 4 or 2, naming the alias); one that is this board or repeats an
    earlier alias (:func:`ledgit.operations.projects.duplicate_of`) is left out with a warning."""

    here = find_board()
    boards = [(projects.board_name(here), here)]
    regs = projects.registrations(here)
    repeats = projects.duplicate_of(here, regs)
    for alias in sorted(regs):
        if alias in repeats:  # its rows would be listed twice
            same = f"project {repeats[alias]}" if repeats[alias] else "this board"
            user = " --user" if regs[alias].source == "user" else ""
            err(f"ledgit: warning: project {alias} is {same} ({regs[alias].location}); left "
                f"out (ledgit project remove {alias}{user})")
            continue
        boards.append((alias, projects.open_project(here, alias)))
    views: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    now = time.time()
    for name, board in boards:
        if what == "ready":
            rows, errs = ready_rows(board, kw["owner"], kw["worker"], kw["label"],
                                    kw["limit"])
        else:
            with Index.open(board) as index:
                filters = filters_of(kw["status"], kw["owner"], kw["worker"], kw["label"],
                                     kw["include_all"], kw["outcome"])
                rows = index.rows(sort=kw["sort"], limit=kw["limit"], **filters)
                errs = index.errors()
        ttl = int(board.config.claim_ttl)
        for row in rows:
            views.append({"board": name, **row_view(row, now, ttl)})
        for path, message in errs:
            err(f"ledgit: warning: {name}: skipped {path}: {message}")
            errors.append({"board": name, "path": path, "message": message})
    if as_json:
        out_json({"tasks": views, "count": len(views), "errors": errors,
                  "boards": [name for name, _ in boards]})
        return OK
    width = max(len(name) for name, _ in boards)
    lines = [f"{v['board']:<{width}}  {row_line(v)}" for v in views]
    out("".join(lines), nl=False)
    return OK


def why_nothing_ready(index: Index, filters: dict[str, Any],
                      leases: dict[str, Any] | None = None) -> str:
    """Why ``ready`` offers nothing, in one line with the next step: how many tasks are open
    and what keeps each from being ready (a dependency not done, named with its status; a
    drop/no_change outcome; a claim; a lease on the remote, from ``leases``), or, with none
    open, what the tasks are doing."""
    scope = " with these filters" if set(filters) - {"include_archived"} else ""
    status_of = {r["id"]: r.get("status") for r in index.rows(include_archived=True)}
    rows = index.rows(sort="priority", **dict(filters, include_archived=False))
    open_rows = [r for r in rows if r.get("status") == "open"]
    if not open_rows:
        counts: dict[str, int] = {}
        for r in rows:
            counts[str(r.get("status"))] = counts.get(str(r.get("status")), 0) + 1
        if not counts:
            if scope:
                return f"nothing is ready: no tasks{scope}"
            return ("nothing is ready: no tasks yet (make one: ledgit create TITLE)"
                    if not status_of else "nothing is ready: every task is archived")
        doing = ", ".join(f"{n} {st}" for st, n in sorted(counts.items(),
                                                          key=lambda kv: STATUSES.index(kv[0])
                                                          if kv[0] in STATUSES else 99))
        return (f"nothing is ready: no open task{scope} ({doing}; ledgit list shows them; "
                f"make one: ledgit create TITLE)")
    blocked: list[str] = []
    negative = claimed = leased = 0
    now = time.time()
    for r in open_rows:
        if leases and r["id"] in leases and blocks_ready(leases[r["id"]], r, now):
            leased += 1
            continue
        waiting = [d for d in r.get("depends_on") or [] if status_of.get(d) != "done"]
        if waiting:
            blocked.append(f"{r['id']} waits for " + ", ".join(
                f"{d} [{status_of.get(d) or 'not on this board'}]" for d in waiting))
        elif (r.get("outcome") or {}).get("kind") in NOT_READY_OUTCOMES:
            negative += 1
        elif r.get("claim"):
            claimed += 1
    parts = []
    if blocked:
        shown = "; ".join(blocked[:3]) + ("; ..." if len(blocked) > 3 else "")
        parts.append(f"{len(blocked)} blocked by a dependency not done: {shown}")
    if negative:
        parts.append(f"{negative} with a drop/no_change outcome (ledgit reopen ID offers it "
                     "again)")
    if claimed:
        parts.append(f"{claimed} claimed while open (ledgit check shows why)")
    if leased:
        parts.append(f"{leased} leased or ended on the remote (ledgit lease list shows them)")
    return f"nothing is ready: {len(open_rows)} open{scope}, " + ", ".join(parts)


def handoff_cmd(task: str, as_json: bool) -> int:
    """``ledgit handoff``: print TASK's handoff packet (DESIGN §5: goal, acceptance, status,
    next action, gate, locked items; Markdown, or JSON: docs/cli.md). Returns 0; exit 4 for
    an unknown id."""
    board = command_board()
    fields, body, _path, revision = one_task(board, task)
    packet = handoff_of(fields, body, revision)
    if as_json:
        out_json(packet)
    else:
        out(render_handoff(packet), nl=False)
    return OK
