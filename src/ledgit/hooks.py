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

from ledgit.errors import CHECK_FAILED, OK, USAGE, LedgitError

TYPE_CHECKING = False  # typing is not imported at run time (DESIGN §10)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from ledgit.gate import Finding

# The pre-commit path imports neither typing, pathlib, subprocess nor ledgit.git unless it has
# to (DESIGN §10: the hook's budget is twice `ledgit --version`); see _pre_commit_fast.

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
    from ``cwd``, else every board in the index (:func:`ledgit.gate.board_prefixes`).
    """
    from ledgit import git
    from ledgit.gate import LEDGIT_DIR, board_prefixes

    problems: list[Finding] = []
    tasks: list[str] = []
    for prefix in board_prefixes(cwd):
        staged = git.staged_files(cwd, f"{prefix}{LEDGIT_DIR}/")
        problems += _check_staged(prefix, staged, lambda path: _at_head(cwd, path), tasks,
                                  str(git.toplevel(cwd) or cwd))
    return _report(problems, tasks)


def _pre_commit_fast(cwd: str) -> int | None:
    """:func:`pre_commit` through :mod:`ledgit.gitfs`: the board found from ``cwd``, its
    staged paths from one ``git diff-index``, their blobs read from the object files. None
    when that is not possible (no board found here, a layout gitfs leaves to git...): then
    :func:`pre_commit` answers."""
    from ledgit import gitfs
    from ledgit.locate import LEDGIT_DIR

    try:
        repo = gitfs.discover(cwd)
        if repo is None or repo.toplevel is None:
            return None  # pre_commit words the error
        prefix = _board_prefix(cwd, repo.toplevel)
        if prefix is None:
            return None
        pending = gitfs.staged_async(repo, gitfs.index_file(repo, cwd),
                                     f"{prefix}{LEDGIT_DIR}/")
        # while git works (on another core): import what the checks need
        import ledgit.gate
        import ledgit.history  # noqa: F401

        staged = pending()
        files = {os.fsdecode(c.path): None if c.oid is None else staged.blob(c.oid)
                 for c in staged.changes}
        tasks: list[str] = []
        problems = _check_staged(prefix, files,
                                 lambda path: staged.at_head(os.fsencode(path)), tasks,
                                 repo.toplevel)
    except gitfs.Unusual:
        return None
    return _report(problems, tasks)


def _board_prefix(cwd: str, top: str) -> str | None:
    """The board directory relative to ``top`` (``""`` or ``"sub/"``) of the board
    :func:`ledgit.board.find_board` finds from ``cwd`` (``LEDGIT_ROOT``, else the nearest
    directory upward holding ``.ledgit/`` with ``tasks/`` or ``config.yaml``), without
    pathlib; None when there is none inside the work tree ``top``."""
    from ledgit.locate import find_root

    root, _pinned = find_root(cwd)
    if root is None:
        return None
    rel = os.path.relpath(os.path.realpath(root), os.path.realpath(top))
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return "" if rel == os.curdir else rel.replace(os.sep, "/") + "/"


def _check_staged(prefix: str, staged: Mapping[str, bytes | None],
                  other: Callable[[str], bytes | None], tasks: list[str],
                  top: str | None = None) -> list[Finding]:
    """The problems of the staged tasks of one board (``prefix``: ``""`` or ``"sub/"``).

    ``staged``: repository path -> staged blob (None: deleted), the paths under the board
    that the index changes; ``other(path)``: the unstaged file of a task (from the index or
    HEAD). The ids checked are appended to ``tasks``. A staged config must load too, and a
    staged temp file of an interrupted write is refused (issue 13). ``top``: the work tree,
    to tell a pair staged by half (the other file changed but not staged) from a hand edit."""
    from ledgit.gate import LEDGIT_DIR, Finding, check_task, task_of, task_paths
    from ledgit.locate import TASKS_DIR

    problems: list[Finding] = []
    temp_dir = f"{prefix}{LEDGIT_DIR}/{TASKS_DIR}/"
    for path in sorted(staged):
        name = path[len(temp_dir):] if path.startswith(temp_dir) else ""
        if staged[path] is not None and name.startswith(".") and ".md.tmp-" in name:
            problems.append(Finding(path, 0, "temp-file", "the temp file of an interrupted "
                                    f"ledgit write is staged (unstage it: git rm --cached "
                                    f"{path}; ledgit doctor --repair removes it)", None))
    these = sorted({t for t in (task_of(p, prefix) for p in staged) if t is not None})
    tasks += these
    for task in these:
        md, hist = task_paths(prefix, task)
        data = {p: staged[p] if p in staged else other(p) for p in (md, hist)}
        found = check_task(task, md, data[md], hist, data[hist])
        half = [p for p in (md, hist) if p not in staged]
        if top is not None and len(half) == 1 and any(f.rule == "record-head" for f in found):
            unstaged = half[0]
            try:
                with open(os.path.join(top, unstaged), "rb") as fh:
                    in_tree: bytes | None = fh.read()
            except OSError:
                in_tree = None
            if in_tree is not None and in_tree != data[unstaged]:
                staged_one = md if unstaged == hist else hist
                found = [f._replace(message=f"only {staged_one} of the pair is staged; "
                                            f"stage {unstaged} too (git add {unstaged})")
                         if f.rule == "record-head" else f for f in found]
        problems += found
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


def _at_head(cwd: Path, path: str) -> bytes | None:
    from ledgit import git

    if git.head_oid(cwd) is None:
        return None
    return git.blob_at(cwd, "HEAD", path)


def _check_config(path: str, data: bytes) -> list[Finding]:
    """The staged board config must load (ledgit.config rules)."""
    import tempfile
    from pathlib import Path

    from ledgit.config import load_config
    from ledgit.gate import Finding

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

    import threading  # here: the pre-commit hook never needs it

    from ledgit import git

    timer = threading.Timer(budget, give_up)
    timer.daemon = True
    timer.start()
    try:
        from ledgit.board import LEDGIT_DIR, Board, find_board
        from ledgit.index import Index

        try:
            boards = [find_board(cwd)]
        except LedgitError:
            # Git runs hooks at the top: a board kept in a subdirectory is found from the
            # index (docs/git.md, "Boards in subdirectories").
            from ledgit.gate import board_prefixes

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
        fast = _pre_commit_fast(os.getcwd() if cwd is None else str(cwd))
        if fast is not None:
            return fast
    from pathlib import Path

    where = Path(os.getcwd()) if cwd is None else cwd
    if name == PRE_COMMIT:
        return pre_commit(where)
    if name in INDEX_HOOKS:
        return refresh_index(where)
    raise LedgitError(f"unknown hook {name!r} (one of {', '.join(NAMES)})", USAGE)
