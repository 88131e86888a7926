"""``ledgit check [ID...] [--fix]``: the validator on the working tree (DESIGN §6, §9).

Without ``--fix`` it is ``ledgit verify`` (every task when no id is given). With ``--fix`` it
first rolls interrupted writes forward (:meth:`ledgit.storage.board.Board.repair`, as ``ledgit
doctor
--repair``) and records every hand edit (:meth:`ledgit.storage.board.Board.record_edit`, as ``ledgit
record ID``: an ``edit`` event, or a genesis ``create`` event for a hand-made task file), then
checks again. What cannot be fixed that way -- conflict markers, more than one head, a
schema error, a damaged history -- is reported with its own fix; exit 1 while any remains.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ledgit.cli.commands.output import report_problems
from ledgit.cli.commands.running import checked_board
from ledgit.cli.main import by_option, json_option
from ledgit.core.errors import CHECK_FAILED, OK, LedgitError
from ledgit.operations.arguments import resolve_ids
from ledgit.storage.actor import actor_name
from ledgit.storage.boardcheck import verify_board
from ledgit.storage.boardrepair import repair_board
from ledgit.storage.safefiles import BOARD_FILE_LIMIT, read_board_file
from ledgit.storage.writepath import record_edit, task_layout_loss

if TYPE_CHECKING:
    from ledgit.storage.board import Board

# The rules record_edit settles: the file differs from its history head, or has no history.
RECORDABLE = ("record-head", "missing")


@click.command("check")
@click.argument("tasks", nargs=-1)
@click.option("--fix", is_flag=True,
              help="Roll interrupted writes forward and record every hand edit, then check.")
@click.option("--normalize", is_flag=True,
              help="With --fix: also record hand edits that hold YAML comments, custom "
                   "quoting or layout, rewriting those files in the canonical form.")
@by_option
@json_option
def check_cmd(tasks: tuple[str, ...], fix: bool, normalize: bool, by: str | None,
              as_json: bool) -> int:
    """Check task files and histories in the working tree (all tasks without IDs); with
    --fix, repair what ledgit can first. Exit 1 with one line per remaining problem."""
    board = checked_board()
    ids = resolve_ids(board, tasks) if tasks else None
    fixed = fix_board(board, ids, by, normalize=normalize) if fix else []
    code = report_problems(board, ids, verify_board(board, ids), as_json, "checked", fixed)
    # A comment the next write would drop is said, and fails the check like a problem.
    return max(code, CHECK_FAILED if any(x.startswith("not kept: ") for x in fixed) else OK)


def fix_board(board: Board, ids: list[str] | None, by: str | None, *,
              normalize: bool = False) -> list[str]:
    """``check --fix``: :meth:`Board.repair` (board-wide: interrupted writes are never a
    choice), then :meth:`Board.record_edit` for each of ``ids`` (all when None) whose file
    differs from its history head or has no history. One line per action (``repaired: ...``,
    ``recorded: ...``, ``not recorded: ...``); a task that cannot be recorded (e.g. its
    schema is broken, or, without ``normalize``, its file holds a YAML comment, custom
    quoting or layout that the canonical writer would not keep) is left for the check that
    follows."""
    done = [f"repaired: {line}" for line in repair_board(board)]
    pending = sorted({p.task for p in verify_board(board, ids) if p.rule in RECORDABLE})
    # A comment-only hand edit leaves the revision as it was (comments are not content):
    # found by its '#', it is said too, or, with normalize, rewritten away.
    commented = [tid for tid in (ids if ids is not None else board.list_ids())
                 if tid not in pending and _commented(board, tid)]
    for tid in commented:
        if normalize:
            pending.append(tid)
            continue
        loss = task_layout_loss(board, tid, board.read(tid))
        if loss is not None:
            done.append(f"not kept: {tid}: {board.rel(board.task_file(tid))}:{loss[0]}: "
                        f"{loss[1]} would be dropped by the next write (move the text into "
                        f"the body, or: ledgit check --fix --normalize)")
    if not pending:
        return done
    actor = actor_name(by, board.root)
    for tid in pending:
        try:
            loss = task_layout_loss(board, tid, board.read(tid))
            event: dict[str, Any] | None = record_edit(board, tid, actor,
                                                             normalize=normalize)
        except LedgitError as exc:
            done.append(f"not recorded: {tid}: {exc.message}")
            continue
        if event is not None:
            done.append(f"recorded: {tid}: {event.get('op', 'edit')} event "
                        f"{str(event.get('id', ''))[:12]} by {actor}")
        if loss is not None:
            done.append(f"normalized: {tid}: rewrote {board.rel(board.task_file(tid))} in "
                        f"the canonical form (line {loss[0]}: {loss[1]})")
    return done


def _commented(board: Board, tid: str) -> bool:
    """Whether the task file's front matter holds a ``#`` (a cheap test before parsing:
    a YAML comment needs one)."""
    try:
        data = read_board_file(board.task_file(tid), BOARD_FILE_LIMIT)
    except OSError:
        return False
    end = data.find(b"\n---", 3)
    return b"#" in (data[:end] if end > 0 else data)


__all__ = ["check_cmd", "fix_board"]
