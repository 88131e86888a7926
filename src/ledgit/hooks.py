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
from ledgit.gate import (
    Finding,
    _prefix_of,
    board_prefixes,
    check_growth,
    check_task,
    task_of,
    task_paths,
)
from ledgit.locate import LEDGIT_DIR, TASKS_DIR, find_root, git_dir_for

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path


PRE_COMMIT = "pre-commit"
PRE_MERGE_COMMIT = "pre-merge-commit"  # git merge's own commit: the pre-commit checks
INDEX_HOOKS = ("post-checkout", "post-merge", "post-rewrite", "index")
NAMES = (PRE_COMMIT, PRE_MERGE_COMMIT, *INDEX_HOOKS)
INDEX_BUDGET = 5.0  # seconds a post-* hook may spend refreshing the index


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def pre_commit(cwd: Path) -> int:
    """Check the staged tasks; 0 when they pass, 1 (with one line each) when not.

    A task is checked when its file or its history is staged; the other file is read from
    HEAD, which the index matches for every path that is not staged. Every board with a
    staged file is checked (docs/git.md, "Every board is guarded"). A staged history must
    keep every event of HEAD's, and during a merge, cherry-pick or rebase step what the
    commit takes from the other side (:func:`_check_operation`, DESIGN §8). Git is asked
    through :mod:`ledgit.git`.
    """
    if git.toplevel(cwd) is None:
        raise LedgitError(f"{cwd}: not inside a Git work tree", USAGE)
    problems: list[Finding] = []
    tasks: list[str] = []
    notes: list[str] = []
    paths = git.staged_board_paths(cwd)
    for prefix in sorted({p for p in map(_prefix_of, paths) if p is not None}):
        staged = git.staged_files(cwd, f"{prefix}{LEDGIT_DIR}/")
        problems += _check_staged(prefix, staged, lambda path: _at_head(cwd, path), tasks,
                                  notes, str(git.toplevel(cwd) or cwd))
    problems += _check_operation(cwd, paths, tasks, notes)
    return _report(problems, tasks, notes)


def _pre_commit_in_hook(cwd: str) -> int | None:
    """:func:`pre_commit` as Git runs it (at the top of the work tree) with two git processes
    and no discovery: :func:`ledgit.git.staged_changes_in_hook` over the work tree (every
    board's staged paths, with their blob ids at HEAD and in the index), then one
    ``git cat-file --batch`` for those blobs and, for a task staged by half, the other file's
    index entry (``:path``: not staged, so the same as at HEAD). None where that cannot
    answer (not at the top, a merge, pick, revert or rebase stopped, an unborn branch): then
    :func:`pre_commit` does."""
    if not os.path.exists(os.path.join(cwd, ".git")):
        return None  # not the top of a work tree: pre_commit finds every board
    worktree_git_dir = git_dir_for(cwd)
    if worktree_git_dir is None or _operation_pending(worktree_git_dir) or _merging_heads():
        return None  # the other parents are read by pre_commit
    changes = git.staged_changes_in_hook(cwd, ".")
    if changes is None:
        return None
    boards: dict[str, dict[str, git.StagedChange]] = {}
    for path, change in changes.items():
        prefix = _prefix_of(path)
        if prefix is not None:
            boards.setdefault(prefix, {})[path] = change
    tasks: list[str] = []
    notes: list[str] = []
    if not boards:
        return _report([], tasks, notes)
    # HEAD's side of each staged task: the unstaged half of the pair (for the check) and the
    # parent's history the staged one must keep (growth)
    halves = [p for prefix, found in boards.items()
              for t in sorted({t for t in (task_of(p, prefix) for p in found) if t})
              for p in task_paths(prefix, t) if p not in found]
    names = [*(oid for found in boards.values() for change in found.values()
               for oid in change if oid is not None), *(f":{p}" for p in halves)]
    blobs = git.cat_blobs_in_hook(cwd, list(dict.fromkeys(names)))
    at_head = {p: blobs[f":{p}"] for p in halves}
    problems: list[Finding] = []
    for prefix in sorted(boards):
        staged: dict[str, bytes | None] = {}
        for path, (head, oid) in boards[prefix].items():
            staged[path] = None if oid is None else blobs[oid]
            at_head[path] = None if head is None else blobs[head]
        problems += _check_staged(prefix, staged, at_head.get, tasks, notes, cwd)
    return _report(problems, tasks, notes)


def _operation_pending(git_dir: str) -> bool:
    """Whether a merge, cherry-pick, revert or rebase is stopped in this worktree (the state
    files of git-status(1)): the next commit then takes from more than HEAD. REBASE_HEAD
    alone is no sign: Git leaves it behind when a rebase ends."""
    return any(os.path.exists(os.path.join(git_dir, name)) for name in (
        "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply"))


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
                  other: Callable[[str], bytes | None], tasks: list[str],
                  notes: list[str] | None = None, top: str | None = None) -> list[Finding]:
    """The problems of the staged tasks of one board (``prefix``: ``""`` or ``"sub/"``).

    ``staged``: repository path -> staged blob (None: deleted), the paths under the board
    that the index changes; ``other(path)``: a task's file at HEAD (which the index matches
    for what is not staged). The ids checked are appended to ``tasks``, notes (an archived
    task removed) to ``notes``. A staged config must load too, a staged temp file of an
    interrupted write is refused (issue 13), and a staged history must keep every event of
    HEAD's (:func:`ledgit.gate.check_growth`). ``top``: the work tree, to tell a pair staged
    by half (the other file changed but not staged) from a hand edit."""
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
        if hist in staged:
            found, said = check_growth(
                task, md, hist, (other(md), other(hist)), (data[md], data[hist]),
                against="HEAD", way_back=f"the way back: git checkout HEAD -- {md} {hist}, "
                                         f"then redo the change with ledgit")
            problems += found
            if notes is not None:
                notes += said
            if data[md] is None and data[hist] is None:
                continue
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


def _check_operation(cwd: Path, staged_paths: list[str], tasks: list[str],
                     notes: list[str]) -> list[Finding]:
    """Growth against what a stopped operation brings in (DESIGN §8; docs/git.md):

    * merge: every MERGE_HEAD is a parent of the new commit, so each of its histories must be
      kept whole -- the tasks where the index differs from it (``checkout --ours``,
      ``merge -s ours`` included);
    * rebase step (REBASE_HEAD): the new commit replaces the stopped one, which leaves the
      branch, so every event that commit added must be in the index;
    * cherry-pick: the histories the commit stages must hold every event the picked commit
      added to them (a task left as HEAD has it is a choice not to pick it; the picked commit
      still holds its events);
    * revert: HEAD is the only parent and holds the reverted events, which must stay (the
      HEAD check): undoing is a new event, ``ledgit revert TASK EVENT``.
    """
    heads = git.operation_heads(cwd)
    if "merge" not in heads and _merging_heads():
        heads["merge"] = _merging_heads()
    found: list[Finding] = []
    jobs: list[tuple[str, str, list[str], str | None]] = []  # (label, rev, paths, base rev)
    for oid in heads.get("merge", []):
        jobs.append((f"MERGE_HEAD {oid[:12]}", oid, git.index_diff_paths(cwd, oid), None))
    for operation, name in (("rebase", "REBASE_HEAD"), ("cherry-pick", "CHERRY_PICK_HEAD")):
        for oid in heads.get(operation, [])[:1]:
            picked_parents = git.commit_parents(cwd, [oid]).get(oid, [])
            if not picked_parents or oid == git.head_oid(cwd):
                continue  # a root commit adds to nothing; an `edit` stop is HEAD itself
            changed = git.tree_diff_paths(cwd, picked_parents[0], oid)
            if operation == "cherry-pick":
                changed = sorted(set(changed) & set(staged_paths))
            jobs.append((f"{name} {oid[:12]}", oid, changed, picked_parents[0]))
    for label, rev, paths, base in jobs:
        pairs = sorted({(p, t) for p, t in ((p, task_of(path, p)) for path in paths
                                            for p in [_prefix_of(path)] if p is not None)
                        if t is not None})
        files = [f for p, t in pairs for f in task_paths(p, t)]
        ours = git.blobs_at(cwd, None, files)
        theirs = git.blobs_at(cwd, rev, files)
        before = git.blobs_at(cwd, base, [f for f in files if f.endswith(".jsonl")]) \
            if base is not None else {}
        for prefix, task in pairs:
            md, hist = task_paths(prefix, task)
            if task not in tasks:
                tasks.append(task)
            more, said = check_growth(
                task, md, hist, (theirs[md], theirs[hist]), (ours[md], ours[hist]),
                against=label, rev=rev[:12],
                base_history=None if base is None else (before.get(hist) or b""),
                way_back=f"the way back: git checkout -m -- {md} {hist} (merges both sides "
                         f"again), then git add them"
                         + ("; or git merge --abort, then merge without -s ours"
                            if base is None else ""))
            found += more
            notes += said
    return found


def _merging_heads() -> list[str]:
    """The commits ``git merge`` is merging while it runs ``pre-merge-commit``, before it has
    written MERGE_HEAD: git-merge exports ``GITHEAD_<oid>=<name>`` for each (the labels it
    gives merge strategies and drivers, builtin/merge.c)."""
    return sorted(k[8:] for k in os.environ
                  if k.startswith("GITHEAD_") and len(k) in (48, 72)
                  and all(c in "0123456789abcdef" for c in k[8:]))


def _report(problems: list[Finding], tasks: list[str], notes: list[str] | None = None) -> int:
    for note in notes or ():
        _say(f"ledgit pre-commit: note: {note}")
    for p in problems:
        _say(f"ledgit pre-commit: {p}")
    if problems:
        _say(f"ledgit pre-commit: commit refused: {len(problems)} problem(s) in "
             f"{len(tasks)} staged task(s); fix them and `git add` again (a hand edit of a "
             f"task file is recorded with: ledgit record ID)")
        return CHECK_FAILED
    return OK


def _at_head(cwd: Path, path: str) -> bytes | None:
    """``path`` at HEAD (None on an unborn branch or where HEAD has no such blob)."""
    if git.head_oid(cwd) is None:
        return None
    return git.blob_at(cwd, "HEAD", path)


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

        # Every board of the work tree, each with its own index (docs/git.md, "Every board
        # is guarded"): the one found from cwd and those the index tracks.
        top = git.toplevel(cwd)
        boards = [Board(top / p) for p in board_prefixes(cwd)
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


def run_hook(name: str, args: list[str], cwd: Path | None = None) -> int:
    """Dispatch ``ledgit hook NAME ARGS``; ``args`` are the hook's own (ignored)."""
    del args  # post-checkout's refs and flag, post-rewrite's command: not needed
    if name == PRE_COMMIT:
        answer = _pre_commit_in_hook(os.getcwd() if cwd is None else str(cwd))
        if answer is not None:
            return answer
    from pathlib import Path  # lazy: pathlib costs the pre-commit hook ~2.5 ms (bench precommit)

    where = Path(os.getcwd()) if cwd is None else cwd
    if name in (PRE_COMMIT, PRE_MERGE_COMMIT):
        return pre_commit(where)
    if name in INDEX_HOOKS:
        return refresh_index(where)
    raise LedgitError(f"unknown hook {name!r} (one of {', '.join(NAMES)})", USAGE)
