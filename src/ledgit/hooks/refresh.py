"""The post-checkout, post-merge and post-rewrite hooks (githooks(5), DESIGN §8): refresh this
worktree's index of every board, bounded in time, never failing the Git command. Apart from
:mod:`ledgit.hooks.dispatch` so that the pre-commit hook imports none of it."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

from ledgit.core.errors import OK, LedgitError
from ledgit.git import repository
from ledgit.integration.gate import board_prefixes
from ledgit.storage.board import Board, find_board
from ledgit.storage.index import Index
from ledgit.storage.locate import LEDGIT_DIR

INDEX_BUDGET = 5.0  # seconds a post-* hook may spend refreshing the index


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def refresh_index(cwd: Path, budget: float = INDEX_BUDGET) -> int:
    """Refresh this worktree's index within ``budget`` seconds; always 0.

    Past the budget the process ends at once (the refresh is one SQLite transaction, so the
    index stays consistent) and the next read finishes the work.
    """
    def give_up() -> None:
        _say(f"ledgit: index refresh took over {budget:g}s; the next read finishes it")
        sys.stderr.flush()
        os._exit(0)

    timer = threading.Timer(budget, give_up)
    timer.daemon = True
    timer.start()
    try:
        # Every board of the work tree, each with its own index (docs/git.md, "Every board
        # is guarded"): the one found from cwd and those the index tracks.
        top = repository.toplevel(cwd)
        boards = [Board(top / p) for p in board_prefixes(cwd, configs_only=True)
                  if (top / p / LEDGIT_DIR).is_dir()] if top is not None else []
        if not boards:
            try:
                boards = [find_board(cwd)]  # LEDGIT_ROOT may pin one outside the work tree
            except LedgitError:
                boards = []
        for board in boards:  # none: no board on this branch, nothing to index
            with Index.open(board) as index:
                index.refresh()
    except Exception as exc:  # noqa: BLE001 - a post-* hook must never fail the command
        _say(f"ledgit: index refresh skipped: {exc}")
    finally:
        timer.cancel()
    return OK
