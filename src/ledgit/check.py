"""``ledgit check [ID...] [--fix]``: the validator on the working tree (DESIGN §6, §9).

Without ``--fix`` it is ``ledgit verify`` (every task when no id is given). With ``--fix`` it
first rolls interrupted writes forward (:meth:`ledgit.board.Board.repair`, as ``ledgit doctor
--repair``) and records every hand edit (:meth:`ledgit.board.Board.record_edit`, as ``ledgit
record ID``: an ``edit`` event, or a genesis ``create`` event for a hand-made task file), then
checks again. What cannot be fixed that way -- conflict markers, more than one head, a
schema error, a damaged history -- is reported with its own fix; exit 1 while any remains.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ledgit.cli import _board, _resolve_ids, by_option, json_option, report_problems
from ledgit.errors import LedgitError

if TYPE_CHECKING:
    from ledgit.board import Board

# The rules record_edit settles: the file differs from its history head, or has no history.
RECORDABLE = ("record-head", "missing")


@click.command("check")
@click.argument("tasks", nargs=-1)
@click.option("--fix", is_flag=True,
              help="Roll interrupted writes forward and record every hand edit, then check.")
@by_option
@json_option
def check_cmd(tasks: tuple[str, ...], fix: bool, by: str | None, as_json: bool) -> int:
    """Check task files and histories in the working tree (all tasks without IDs); with
    --fix, repair what ledgit can first. Exit 1 with one line per remaining problem."""
    board = _board()
    ids = _resolve_ids(board, tasks) if tasks else None
    fixed = fix_board(board, ids, by) if fix else []
    return report_problems(board, ids, board.verify(ids), as_json, "checked", fixed)


def fix_board(board: Board, ids: list[str] | None, by: str | None) -> list[str]:
    """``check --fix``: :meth:`Board.repair` (board-wide: interrupted writes are never a
    choice), then :meth:`Board.record_edit` for each of ``ids`` (all when None) whose file
    differs from its history head or has no history. One line per action (``repaired: ...``,
    ``recorded: ...``, ``not recorded: ...``); a task that
    cannot be recorded (e.g. its schema is broken) is left for the check that follows."""
    from ledgit.board import actor_name

    done = [f"repaired: {line}" for line in board.repair()]
    pending = sorted({p.task for p in board.verify(ids) if p.rule in RECORDABLE})
    if not pending:
        return done
    actor = actor_name(by, board.root)
    for tid in pending:
        try:
            event: dict[str, Any] | None = board.record_edit(tid, actor)
        except LedgitError as exc:
            done.append(f"not recorded: {tid}: {exc.message}")
            continue
        if event is not None:
            done.append(f"recorded: {tid}: {event.get('op', 'edit')} event "
                        f"{str(event.get('id', ''))[:12]} by {actor}")
    return done


__all__ = ["check_cmd", "fix_board"]
