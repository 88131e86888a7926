"""Hook entry points: ``ledgit hook NAME [ARGS...]`` (githooks(5), DESIGN §8).

* ``pre-commit``: validate what is staged -- task files and histories read from the index
  (the one ``GIT_INDEX_FILE`` names: ``git commit -a`` and partial commits use a temporary
  index), cost O(staged tasks), never O(board). One line per problem on stderr; exit 1 stops
  the commit.
* ``post-checkout`` (including ``git worktree add``, git-worktree(1)), ``post-merge``,
  ``post-rewrite`` (``rebase``, ``commit --amend``): refresh this worktree's private index.
  These hooks cannot change the outcome of the command, so they are bounded in time
  (:data:`INDEX_BUDGET` seconds; SQLite's journal keeps an interrupted refresh consistent)
  and always exit 0. ``index`` is the same refresh under the name the pre-commit framework's
  ``ledgit-index`` hook uses.

No hook fires for ``reset --hard``, ``stash`` or ``cherry-pick``: every read checks the index's
freshness by itself, so these hooks only warm it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ledgit import git
from ledgit.errors import CHECK_FAILED, OK, USAGE, LedgitError
from ledgit.gate import Finding, board_prefixes, check_task, task_of, task_paths
from ledgit.locate import LEDGIT_DIR, find_root

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from ledgit.git import GitPaths

PRE_COMMIT = "pre-commit"
INDEX_HOOKS = ("post-checkout", "post-merge", "post-rewrite", "index")
NAMES = (PRE_COMMIT, *INDEX_HOOKS)
INDEX_BUDGET = 5.0  # seconds a post-* hook may spend refreshing the index


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def pre_commit(cwd: Path) -> int:
    """Check the staged tasks; 0 when they pass, 1 (with one line each) when not.

    A task is checked when its file or its history is staged; the other file is read from
    HEAD, which the index matches for every path that is not staged. Boards: the one found
    from ``cwd``, else every board in the index (:func:`ledgit.gate.board_prefixes`). Git is
    asked through :mod:`ledgit.git`: one ``git rev-parse``, then per board one
    ``git diff-index --cached`` and one ``git cat-file --batch`` for every blob needed.
    """
    paths = git.discover(cwd)
    found = None
    if paths is not None and paths.toplevel is not None:
        found = _board_prefix(str(cwd), str(paths.toplevel))
    # board_prefixes words the error outside a work tree
    prefixes = board_prefixes(cwd) if found is None else [found]
    problems: list[Finding] = []
    tasks: list[str] = []
    for prefix in prefixes:
        problems += _check_board(cwd, paths, prefix, tasks)
    return _report(problems, tasks)


def _pre_commit_in_hook(cwd: str) -> int | None:
    """:func:`pre_commit` for the board found from ``cwd`` (``LEDGIT_ROOT``, else upward,
    :func:`ledgit.locate.find_root`) with two git processes and no discovery:
    :func:`ledgit.git.staged_changes_in_hook`, then one ``git cat-file --batch``. None where
    that cannot answer (no board here, an unborn branch, a board outside the work tree):
    then :func:`pre_commit` does."""
    root, _pinned = find_root(cwd)
    if root is None:
        return None
    board_dir = os.path.join(root, LEDGIT_DIR)
    changes = git.staged_changes_in_hook(cwd, os.path.relpath(board_dir, cwd))
    if changes is None:
        return None
    tasks: list[str] = []
    if not changes:
        return _report([], tasks)
    # the board's repository path, from git's answer: every path is <prefix>.ledgit/...
    first = next(iter(changes))
    inner = first.find(f"/{LEDGIT_DIR}/")
    prefix = "" if first.startswith(f"{LEDGIT_DIR}/") else first[:inner + 1] if inner >= 0 \
        else None
    if prefix is None or not all(p.startswith(f"{prefix}{LEDGIT_DIR}/") for p in changes):
        return None
    these = sorted({t for t in (task_of(p, prefix) for p in changes) if t is not None})
    at_head = [f"HEAD:{p}" for t in these for p in task_paths(prefix, t) if p not in changes]
    blobs = git.cat_blobs_in_hook(cwd, [*(oid for oid in changes.values() if oid is not None),
                                        *at_head])
    staged = {p: None if oid is None else blobs[oid] for p, oid in changes.items()}
    problems = _check_staged(prefix, staged, lambda path: blobs.get(f"HEAD:{path}"), tasks)
    return _report(problems, tasks)


def _check_board(cwd: Path, paths: GitPaths | None, prefix: str,
                 tasks: list[str]) -> list[Finding]:
    """The problems of one board's staged tasks, read with one ``git diff-index --cached``
    and one ``git cat-file --batch`` (the staged blobs, and from HEAD the unstaged file of
    each staged task)."""
    changes = git.staged_changes(cwd, f"{prefix}{LEDGIT_DIR}/", paths=paths)
    these = sorted({t for t in (task_of(p, prefix) for p in changes) if t is not None})
    at_head = [f"HEAD:{p}" for t in these for p in task_paths(prefix, t) if p not in changes]
    blobs = git.cat_blobs(cwd, [*(oid for oid in changes.values() if oid is not None),
                                *at_head], paths=paths)
    staged = {p: None if oid is None else blobs[oid] for p, oid in changes.items()}
    return _check_staged(prefix, staged, lambda path: blobs.get(f"HEAD:{path}"), tasks)


def _board_prefix(cwd: str, top: str) -> str | None:
    """The board directory relative to ``top`` (``""`` or ``"sub/"``) of the board
    :func:`ledgit.board.find_board` finds from ``cwd`` (``LEDGIT_ROOT``, else the nearest
    directory upward holding ``.ledgit/`` with ``tasks/`` or ``config.yaml``), without
    pathlib; None when there is none inside the work tree ``top``."""
    root, _pinned = find_root(cwd)
    if root is None:
        return None
    rel = os.path.relpath(os.path.realpath(root), os.path.realpath(top))
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return "" if rel == os.curdir else rel.replace(os.sep, "/") + "/"


def _check_staged(prefix: str, staged: Mapping[str, bytes | None],
                  other: Callable[[str], bytes | None], tasks: list[str]) -> list[Finding]:
    """The problems of the staged tasks of one board (``prefix``: ``""`` or ``"sub/"``).

    ``staged``: repository path -> staged blob (None: deleted), the paths under the board
    that the index changes; ``other(path)``: the unstaged file of a task (from the index or
    HEAD). The ids checked are appended to ``tasks``. A staged config must load too."""
    problems: list[Finding] = []
    these = sorted({t for t in (task_of(p, prefix) for p in staged) if t is not None})
    tasks += these
    for task in these:
        md, hist = task_paths(prefix, task)
        data = {p: staged[p] if p in staged else other(p) for p in (md, hist)}
        problems += check_task(task, md, data[md], hist, data[hist])
    config = f"{prefix}{LEDGIT_DIR}/config.yaml"
    if staged.get(config) is not None:
        problems += _check_config(config, staged[config] or b"")
    return problems


def _report(problems: list[Finding], tasks: list[str]) -> int:
    for p in problems:
        _say(f"ledgit pre-commit: {p}")
    if problems:
        _say(f"ledgit pre-commit: commit refused: {len(problems)} problem(s) in "
             f"{len(tasks)} staged task(s); fix them and `git add` again (a hand edit of a "
             f"task file is recorded with: ledgit record ID)")
        return CHECK_FAILED
    return OK


def _check_config(path: str, data: bytes) -> list[Finding]:
    """The staged board config must load (ledgit.config rules)."""
    import tempfile
    from pathlib import Path

    from ledgit.config import load_config

    with tempfile.TemporaryDirectory(prefix="ledgit-config-") as tmp:
        target = Path(tmp) / "config.yaml"
        target.write_bytes(data)
        try:
            load_config(target)
        except LedgitError as exc:
            return [Finding(path, 0, "config", exc.message.replace(str(target), path))]
    return []


def refresh_index(cwd: Path, budget: float = INDEX_BUDGET) -> int:
    """Refresh this worktree's index within ``budget`` seconds; always 0.

    Past the budget the process ends at once (the refresh is one SQLite transaction, so the
    index stays consistent) and the next read finishes the work.
    """
    def give_up() -> None:
        _say(f"ledgit: index refresh took over {budget:g}s; the next read finishes it")
        sys.stderr.flush()
        os._exit(0)

    import threading  # lazy: ~1 ms; the pre-commit hook (bench precommit) never needs it

    timer = threading.Timer(budget, give_up)
    timer.daemon = True
    timer.start()
    try:
        # lazy: the board and its index (~3 ms) are not needed by pre-commit (bench precommit)
        from ledgit.board import Board, find_board
        from ledgit.index import Index

        try:
            boards = [find_board(cwd)]
        except LedgitError:
            # Git runs hooks at the top: a board kept in a subdirectory is found from the
            # index (docs/git.md, "Boards in subdirectories").
            top = git.toplevel(cwd)
            boards = [Board(top / p) for p in board_prefixes(cwd)
                      if p and (top / p / LEDGIT_DIR).is_dir()] if top is not None else []
        for board in boards:  # none: no board on this branch, nothing to index
            with Index.open(board) as index:
                index.refresh()
    except Exception as exc:  # noqa: BLE001 - a post-* hook must never fail the command
        _say(f"ledgit: index refresh skipped: {exc}")
    finally:
        timer.cancel()
    return OK


def run_hook(name: str, args: list[str], cwd: Path | None = None) -> int:
    """Dispatch ``ledgit hook NAME ARGS``; ``args`` are the hook's own (ignored)."""
    del args  # post-checkout's refs and flag, post-rewrite's command: not needed
    if name == PRE_COMMIT:
        answer = _pre_commit_in_hook(os.getcwd() if cwd is None else str(cwd))
        if answer is not None:
            return answer
    from pathlib import Path  # lazy: pathlib costs the pre-commit hook ~2.5 ms (bench precommit)

    where = Path(os.getcwd()) if cwd is None else cwd
    if name == PRE_COMMIT:
        return pre_commit(where)
    if name in INDEX_HOOKS:
        return refresh_index(where)
    raise LedgitError(f"unknown hook {name!r} (one of {', '.join(NAMES)})", USAGE)
