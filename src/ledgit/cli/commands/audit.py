"""The audit commands (DESIGN §6): ``verify`` (records and history continuity, and the
``project`` rule for ``ALIAS:ID`` dependencies) and ``record`` (a hand edit of a task file
recorded as an ``edit`` event). ``ledgit check`` (:mod:`ledgit.cli.check`) is ``verify`` with
repairs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledgit.cli.commands.output import out, out_json, report_problems
from ledgit.cli.commands.running import checked_board, command_board
from ledgit.core.errors import OK, LedgitError
from ledgit.core.history import Problem
from ledgit.integration.resolve import stage_if_unmerged
from ledgit.operations import projects
from ledgit.operations.arguments import resolve_ids
from ledgit.storage.actor import actor_or_warn
from ledgit.storage.boardcheck import verify_board
from ledgit.storage.index import Index
from ledgit.storage.writepath import record_edit, task_layout_loss

if TYPE_CHECKING:
    from ledgit.storage.board import Board


def verify_cmd(tasks: tuple[str, ...], check_all: bool, as_json: bool) -> int:
    """``ledgit verify`` on the working tree: every task (or ``tasks``) checked
    (:meth:`ledgit.storage.board.Board.verify`, plus the ``project`` rule); one line per
    problem, and a warning per dependency that names a task no board holds (it may be on
    another branch: issue 36). Returns 1 while any problem remains, else 0; LedgitError
    exit 2 for ids and --all together or a malformed ``config.yaml``, 4 for an unknown id."""
    board = checked_board()
    if tasks and check_all:
        raise LedgitError("give task ids or --all, not both")
    ids = resolve_ids(board, tasks) if tasks else None
    deps = _dependencies(board, ids)
    problems = verify_board(board, ids) + _project_problems(board, deps)
    warnings = [{"task": task, "field": "depends_on", "value": dep, "dependency": dep,
                 "message": f"{why} (kept by --allow-unknown-deps: it may be on another "
                            f"branch)"}
                for task, dep, why in projects.unknown_dependencies(board, deps)]
    return report_problems(board, ids, problems, as_json, "verified", warnings=warnings)


def _dependencies(board: Board, ids: list[str] | None) -> dict[str, list[str]]:
    """``{task: depends_on}`` of every task (of ``ids``) that has dependencies."""
    with Index.open(board) as index:
        rows = index.rows(include_archived=True)
    return {r["id"]: list(r.get("depends_on") or []) for r in rows
            if (ids is None or r["id"] in ids) and r.get("depends_on")}


def _project_problems(board: Board, deps_by_task: dict[str, list[str]]) -> list[Problem]:
    """Rule ``project``: every ``ALIAS:ID`` dependency names a registered project, and no
    dependency cycle runs across boards (ledgit.operations.projects)."""
    deps = {k: [d for d in v if ":" in d] for k, v in deps_by_task.items()}
    deps = {k: v for k, v in deps.items() if v}
    if not deps:
        return []

    problems = [Problem(line.split(":", 1)[0], 0, "project", line.split(": ", 1)[1])
                for line in projects.unregistered(board, deps)]
    for task in deps:
        cycle = projects.find_cycle(board, task)
        if cycle:
            problems.append(Problem(task, 0, "project",
                                    f"dependency cycle across boards: {' -> '.join(cycle)}"))
    return problems


def record_cmd(task: str, normalize: bool, by: str | None, as_json: bool) -> int:
    """``ledgit record``: TASK's hand edit recorded as an ``edit`` event
    (:meth:`ledgit.storage.board.Board.record_edit`; with ``normalize``, the file rewritten in the
    canonical form first), its files staged when Git had them unmerged. Returns 0;
    LedgitError exit 2 when the file holds what ledgit will not keep (YAML comments,
    custom quoting or layout) without ``normalize``."""
    board = command_board()
    tid = board.resolve_id(task)
    loss = task_layout_loss(board, tid, board.read(tid))  # harmless layout: rewritten (issue 26)
    event = record_edit(board, tid, actor_or_warn(by, board.root_str), normalize=normalize)
    staged = stage_if_unmerged(board.root, [board.task_path(tid), board.history_path(tid)])
    if as_json:
        out_json({"id": tid, "event": event, "normalized": loss is not None})
        return OK
    if event is None:
        out(f"{tid}: the record matches its history head; nothing to record")
    else:
        out(f"{tid}: recorded {event.get('op', 'edit')} event {event['id'][:12]}")
    if staged and not as_json:
        out(f"{tid}: staged {' '.join(board.rel(p) for p in staged)} (the file was unmerged)")
    if loss is not None:
        out(f"{tid}: rewrote {board.rel(board.task_file(tid))} in the canonical form "
            f"(line {loss[0]}: {loss[1]})")
    return OK
