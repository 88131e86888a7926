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
from ledgit.core.errors import OK, ArgumentError
from ledgit.core.readout import (
    NOT_READY_OUTCOMES,
    handoff_of,
    render_handoff,
)
from ledgit.operations import paging, projects
from ledgit.operations.leases import (
    blocks_ready,
    board_leases,
    unleased,
)
from ledgit.operations.rows import filters_of, row_view
from ledgit.storage.board import find_board
from ledgit.storage.index import Index

if TYPE_CHECKING:
    from ledgit.storage.board import Board

def list_cmd(status: tuple[str, ...], owner: str | None, worker: str | None,
             label: tuple[str, ...], outcome: str | None, include_all: bool, sort: str,
             limit: int | None, cursor: str | None, ready: bool, as_json: bool,
             projects: bool = False) -> int:
    """``ledgit list``: the tasks matching the filters, the work in play first, then done
    and dropped (archived only with ``include_all``); within each, by last_modified
    (``sort``: asc/desc); at most ``limit``, from just after ``cursor`` (a ``next_cursor``
    of the same query: DESIGN §14). ``projects``: over every registered board too. Prints
    rows (:func:`ledgit.cli.commands.rows.print_rows`); returns 0; ArgumentError exit 2 for
    a cursor of another query or a damaged one."""
    if projects:
        no_cursor(cursor)
        if ready:
            return _across_projects("ready", as_json, owner=owner, worker=worker,
                                    label=label, limit=limit)
        return _across_projects("list", as_json, status=status, owner=owner, worker=worker,
                                label=label, outcome=outcome, include_all=include_all,
                                sort=sort, limit=limit)
    query = {"what": "list", "status": sorted(status), "owner": owner, "worker": worker,
             "label": sorted(label), "outcome": outcome, "all": include_all, "sort": sort,
             "ready": ready}
    after = paging.decode_cursor(cursor, query, "--cursor", paging.grouped_fits(sort))
    board = command_board()
    leases = board_leases(board)
    with Index.open(board) as index:
        filters = filters_of(status, owner, worker, label, include_all, outcome)
        wanted = list(status) or [s for s in STATUSES if include_all or s != "archived"]
        listing = paging.grouped_rows(index, wanted, sort=sort, after=after,
                                      chunk=paging.chunk_of(limit), ready=ready,
                                      leases=leases if ready else None, **filters)
        rows, position = paging.take(listing, limit)
        errors = index.errors()
    print_rows(rows, as_json, board, errors, leases, total=listing.total,
               next_cursor=None if position is None else paging.encode_cursor(query, position))
    return OK


def no_cursor(cursor: str | None) -> None:
    """Refuse ``--cursor`` with ``--projects`` (exit 2): rows of several boards have no one
    order to continue in."""
    if cursor is not None:
        raise ArgumentError("--cursor", "does not combine with --projects",
                            "no --cursor (narrow the filters instead)")


def ready_cmd(owner: str | None, worker: str | None, label: tuple[str, ...],
              limit: int | None, cursor: str | None, as_json: bool,
              projects: bool = False) -> int:
    """``ledgit ready``: tasks ready to claim (open, every dependency done, no drop or
    no_change outcome), most urgent first (priority, then oldest), at most ``limit`` from
    just after ``cursor``; with none, why not, on stderr (:func:`why_nothing_ready`).
    ``projects``: over every registered board too. Returns 0."""
    if projects:
        no_cursor(cursor)
        return _across_projects("ready", as_json, owner=owner, worker=worker, label=label,
                                limit=limit)
    query = {"what": "ready", "owner": owner, "worker": worker, "label": sorted(label)}
    after = paging.decode_cursor(cursor, query, "--cursor", paging.cursor_fits("priority"))
    board = command_board()
    leases = board_leases(board)
    with Index.open(board) as index:
        listing = ready_listing(board, index, owner, worker, label, leases, after,
                                paging.chunk_of(limit))
        rows, position = paging.take(listing, limit)
        errors = index.errors()
        why = None
        if not rows and not as_json and after is None:
            why = why_nothing_ready(index, filters_of((), owner, worker, label, False, None),
                                    leases)
    print_rows(rows, as_json, board, errors, leases, total=listing.total,
               next_cursor=None if position is None else paging.encode_cursor(query, position))
    if why is not None:
        if errors and "no tasks yet" in why:
            why = (f"nothing is ready: {len(errors)} task file(s) could not be read "
                   f"(the warnings above say why and what to run)")
        err(f"ledgit ready: {why}")
    return OK


def ready_listing(board: Board, index: Index, owner: str | None, worker: str | None,
                  label: tuple[str, ...], leases: dict[str, Any] | None,
                  after: list[Any] | None = None, chunk: int = 1_000) -> paging.Listing:
    """The ready tasks of ``board`` (from its open ``index``), most urgent first, from just
    after the position ``after``: a task that depends on another board's task
    (``ALIAS:ID``) is ready only once that task is done there; one a remote lease holds
    (``leases``, :func:`board_leases`) is left out."""
    filters = filters_of((), owner, worker, label, False, None)
    ready = paging.task_rows(index, sort="priority", after=after, chunk=chunk, ready=True,
                             leases=leases, **filters)
    pending = index.rows(pending_external=True, sort="priority", **filters)
    if leases:
        pending = unleased(pending, leases)
    if not pending:
        return ready
    cache: dict[str, Any] = {}
    found = [row for row in pending
             if all(projects.external_status(board, d, cache).status == "done"
                    for d in row.get("depends_on") or [] if ":" in d)]
    if not found:
        return ready
    rows = paging.task_rows(index, sort="priority", after=None, chunk=1_000, ready=True,
                            leases=leases, **filters).rows
    return paging.in_memory(sorted([*rows, *found], key=ready.key), "priority", after)


def _across_projects(what: str, as_json: bool, **kw: Any) -> int:
    """``list``/``ready`` over this board and every registered one, each row naming its
    board (``board``: this board's name, or the alias); ``total``: how many matched on all
    of them (no cursor: the rows of several boards have no one order). A registered board
    that cannot be read fails closed (exit 4 or 2, naming the alias); one that is this board
    or repeats an earlier alias (:func:`ledgit.operations.projects.duplicate_of`) is left
    out with a warning."""

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
    total = 0
    for name, board in boards:
        with Index.open(board) as index:
            if what == "ready":
                listing = ready_listing(board, index, kw["owner"], kw["worker"], kw["label"],
                                        None, chunk=paging.chunk_of(kw["limit"]))
            else:
                filters = filters_of(kw["status"], kw["owner"], kw["worker"], kw["label"],
                                     kw["include_all"], kw["outcome"])
                listing = paging.task_rows(index, sort=kw["sort"], after=None,
                                           chunk=paging.chunk_of(kw["limit"]), **filters)
            rows, _more = paging.take(listing, kw["limit"])
            errs = index.errors()
        total += listing.total
        ttl = int(board.config.claim_ttl)
        for row in rows:
            views.append({"board": name, **row_view(row, now, ttl)})
        for path, message in errs:
            err(f"ledgit: warning: {name}: skipped {path}: {message}")
            errors.append({"board": name, "path": path, "message": message})
    if as_json:
        out_json({"tasks": views, "count": len(views), "total": total, "next_cursor": None,
                  "errors": errors, "boards": [name for name, _ in boards]})
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
