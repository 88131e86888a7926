"""What ``ledgit sync`` leaves between two runs (DESIGN §13): the note of a work-tree move in
progress, Git's own stopped rebase or merge, and the hand-over to Git where ledgit does not
merge in process.

* :func:`move_work_tree`: the files that differ between the branch's tip and the new tip are
  written into the work tree and Git's index (refused before anything is written where the
  user's own changes would be overwritten), then the branch moves by compare-and-swap. A note
  (``<private dir>/sync-move.json``: the branch, old and new tip, the paths) is written first
  and removed last, so a sync killed in between is finished by the next one
  (:func:`finish_interrupted`): the files still at the old or the new tip are brought to the
  new one and the branch moved. A task an agent's ledgit write changed since keeps that
  write: its files are merged with the new tip's by ledgit's policy (or kept, when the write
  went on top of the new tip's); any other file someone changed since is named and left
  alone.
* :func:`let_git_integrate`: ``git rebase`` or ``git merge`` run with ledgit's merge driver
  given for that one command (``-c``, as ``ledgit forge update`` runs it), for a conflict
  ledgit leaves to Git or a person. Where Git stops, the sync stops with exit 1 naming the
  files; ``git rebase --continue``/``--abort`` (or ``git merge --continue``/``--abort``)
  finish it, and so does the next ``ledgit sync`` once the files are resolved and added.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pygit2

from ledgit.core.errors import CHECK_FAILED, USAGE, LedgitError
from ledgit.core.history import HistoryError, parse_events
from ledgit.git import branches, treemerge
from ledgit.git.forge import driver_settings, unmerged_paths
from ledgit.git.remotes import last_error
from ledgit.git.repository import no_git_env, run_git
from ledgit.git.workupdate import checkout_paths
from ledgit.integration.driverconfig import ATTRIBUTE_LINES, driver_command
from ledgit.integration.syncmerge import owns, resolve_board_file
from ledgit.integration.taskcheck import prefix_of, task_of, task_paths
from ledgit.storage.board import Board
from ledgit.storage.taskfiles import replace_board_file

NOTE = "sync-move.json"
TASK_LOCK_WAIT = 30.0  # seconds the finish of a killed move waits for a write in flight
_REBASING = (pygit2.enums.RepositoryState.REBASE, pygit2.enums.RepositoryState.REBASE_MERGE,
             pygit2.enums.RepositoryState.REBASE_INTERACTIVE,
             pygit2.enums.RepositoryState.APPLY_MAILBOX_OR_REBASE)

# The way back from a stop, as the stop's line gives it: Git's --abort resets the work tree,
# so the board's writes made while Git held the stop go with it (git stash cannot help while
# files are unmerged); the sync after the fix keeps them (docs/git.md).
ABORT_NOTE = ("git {what} --abort goes back but drops the board's writes made since; ledgit "
              "sync after the fix keeps them")


def _note_path(board: Board) -> str:
    return os.path.join(board.private_str, NOTE)


def _write_note(board: Board, note: dict[str, Any]) -> None:
    path = _note_path(board)
    tmp = f"{path}.tmp-{os.getpid()}"
    # written and renamed, not fsynced: the note must survive the sync's own death (SIGKILL),
    # as Git's own checkout state does; a power cut may lose it like the files Git writes
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(note, fh)
    os.replace(tmp, path)


def move_work_tree(repo: pygit2.Repository, board: Board, branch: str, old: str | None,
                   new: str, message: str) -> None:
    """Bring the work tree and Git's index from commit ``old`` (the branch's tip, HEAD) to
    ``new``, then move ``branch`` from ``old`` to ``new`` (module docstring). Raises
    LedgitError: exit 1 when the user's uncommitted changes are in the way (nothing
    written), exit 5 when the branch moved meanwhile or another git command holds the index
    or the ref (the note kept where files may be written: the next sync finishes)."""
    old_tree = None if old is None else str(treemerge.commit_of(repo, old).tree_id)
    paths = sorted(treemerge.changed_paths(repo, old_tree,
                                           str(treemerge.commit_of(repo, new).tree_id)))
    note = {"branch": branch, "old": old, "new": new, "paths": paths, "message": message}
    _write_note(board, note)
    try:
        checkout_paths(repo, old, new, paths)
    except LedgitError as exc:
        if exc.code == CHECK_FAILED:  # refused before any file was written
            os.unlink(_note_path(board))
        raise  # otherwise files may be written: the note has the next sync finish them
    branches.move_ref(repo, branch, old, new, message)
    os.unlink(_note_path(board))


def finish_interrupted(repo: pygit2.Repository, board: Board, top: str, notes: list[str],
                       stage_board: Callable[[], object]) -> str | None:
    """Finish what a killed sync or a stopped Git left (module docstring), before a new sync
    starts; appends what was done to ``notes``. ``stage_board`` stages the board's changes
    (checked) before Git continues a stopped rebase: ``git rebase --continue`` does not go
    on over unstaged changes, and an agent keeps writing while a person resolves a
    conflict -- those writes ride in the commit being picked. Returns the old tip of a move
    it finished (the index rows of its tasks need refreshing), else None. Raises
    LedgitError: exit 1 while Git still holds unresolved conflicts, or a file of an
    interrupted move was changed since; exit 2 for a stopped operation sync does not
    finish (cherry-pick, revert, am)."""
    finished = _finish_move(repo, board, notes)
    _finish_git(repo, top, notes, stage_board)
    return finished


def _finish_move(repo: pygit2.Repository, board: Board, notes: list[str]) -> str | None:
    try:
        with open(_note_path(board), encoding="utf-8") as fh:
            note = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        os.unlink(_note_path(board))  # torn before its rename: the move never began
        return None
    branch, old, new = note["branch"], note["old"], note["new"]
    paths: list[str] = note["paths"]
    now = branches.ref_target(repo, branch)
    if now == old:
        changed = _changed_since(repo, old, new, paths)
        # a person's file in the way: nothing is written, all is named
        kept = [] if not all(map(owns, changed)) else \
            _keep_writes_since(repo, board, old, new, changed)
        left = [p for p in changed if p not in kept]
        if left:
            raise LedgitError(f"a sync killed while it wrote the work tree left "
                              f"{', '.join(left)} changed since; check them, then remove "
                              f"{_note_path(board)} and run ledgit sync again", CHECK_FAILED)
        rest = [p for p in paths if p not in kept]
        if rest:  # (no paths at all would check out the whole tree)
            force = pygit2.enums.CheckoutStrategy.FORCE
            repo.checkout_tree(  # type: ignore[no-untyped-call]
                treemerge.commit_of(repo, new).tree, paths=rest, strategy=force)
        branches.move_ref(repo, branch, old, new, note.get("message") or "ledgit sync")
        notes.append(f"finished the work-tree move of an interrupted sync "
                     f"({(old or 'unborn')[:12]}..{new[:12]})"
                     + (f", keeping the writes made since in {len(kept) // 2} task(s)"
                        if kept else ""))
    os.unlink(_note_path(board))
    return old if now == old else None


def _trees(repo: pygit2.Repository, old: str | None, new: str) -> tuple[str | None, str]:
    return (None if old is None else str(treemerge.commit_of(repo, old).tree_id),
            str(treemerge.commit_of(repo, new).tree_id))


def _work_file(repo: pygit2.Repository, path: str) -> bytes | None:
    """The work tree's ``path`` (None: absent). Raises OSError when it cannot be read."""
    try:
        with open(os.path.join(repo.workdir, path), "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def _changed_since(repo: pygit2.Repository, old: str | None, new: str,
                   paths: Sequence[str]) -> list[str]:
    """The ``paths`` whose work-tree file is neither as commit ``old`` nor as ``new`` has it,
    compared as ``git add`` would hash it (core.autocrlf, eol and filter attributes applied:
    a checkout wrote CRLF for an LF blob)."""
    trees = [None if t is None else repo[t] for t in _trees(repo, old, new)]
    found = []
    for path in paths:
        try:
            exists = os.path.lexists(os.path.join(repo.workdir, path))
            work = str(repo.create_blob_fromworkdir(path)) if exists else None
        except (OSError, pygit2.GitError):
            found.append(path)
            continue
        if all(_entry_id(t, path) != work for t in trees):
            found.append(path)
    return found


def _entry_id(tree: pygit2.Object | None, path: str) -> str | None:
    """The id (hex) of ``path`` in ``tree``; None when absent."""
    try:
        return None if tree is None else str(tree[path].id)  # type: ignore[index]
    except KeyError:
        return None


def _keep_writes_since(repo: pygit2.Repository, board: Board, old: str | None, new: str,
                       changed: Sequence[str]) -> list[str]:
    """The task files and histories among ``changed`` -- rewritten since the killed sync's
    move began, by a ledgit write that went on -- brought to hold commit ``new``'s version
    too, in the work tree, under each task's lock: a history holding every event of
    ``new``'s was written on top of it and is kept as it is, with its task file; otherwise
    both files are merged with ``new``'s by ledgit's policy (base: ``old``'s), as the sync
    would have merged them. Returns the paths kept (both files of each task); a task whose
    files do not merge cleanly is left out."""
    trees = _trees(repo, old, new)
    tasks = {(prefix, task) for prefix in {prefix_of(p) for p in changed} if prefix is not None
             for task in (task_of(p, prefix) for p in changed) if task is not None}
    kept: list[str] = []
    for prefix, task in sorted(tasks):
        pair = task_paths(prefix, task)
        with board.lock(task, TASK_LOCK_WAIT):
            try:
                ours = [_work_file(repo, p) for p in pair]
            except OSError:
                continue
            base, theirs = ([treemerge.blob_at(repo, t, p) for p in pair] for t in trees)
            if not _holds_events(ours[1], theirs[1], task):
                md = resolve_board_file(pair[0], base[0], ours[0], theirs[0])
                hist = resolve_board_file(pair[1], base[1], ours[1], theirs[1])
                if md is None or hist is None:
                    continue
                replace_board_file(os.path.join(repo.workdir, pair[1]), hist)  # the history first
                replace_board_file(os.path.join(repo.workdir, pair[0]), md)
        kept += pair
    return kept


def _holds_events(data: bytes | None, other: bytes | None, task: str) -> bool:
    """History ``data`` holds every event of history ``other`` (both present, readable)."""
    if data is None or other is None:
        return False
    try:
        have = {e["id"] for e in parse_events(data, task)}
        return all(e["id"] in have for e in parse_events(other, task))
    except HistoryError:
        return False


def _finish_git(repo: pygit2.Repository, top: str, notes: list[str],
                stage_board: Callable[[], object]) -> None:
    """Continue a rebase or merge Git stopped (one that an earlier sync handed to Git, or
    any other) once the person resolved it; refuse while conflicts remain."""
    state = repo.state()
    if state == pygit2.enums.RepositoryState.NONE:
        return
    rebasing = state in _REBASING
    if not rebasing and state != pygit2.enums.RepositoryState.MERGE:
        raise LedgitError(f"a {state.name.lower().replace('_', ' ')} is stopped in this "
                          "worktree: finish it (--continue) or abort it (--abort) with Git, "
                          "then run ledgit sync again", USAGE)
    what = "rebase" if rebasing else "merge"
    if repo.index.conflicts is not None:
        left = sorted({e.path for entries in repo.index.conflicts for e in entries if e})
        raise LedgitError(f"the {what} Git stopped still has conflicts in {', '.join(left)}: "
                          f"resolve them (task files: ledgit resolve), git add them, then run "
                          f"ledgit sync again ({ABORT_NOTE.format(what=what)})", CHECK_FAILED)
    if rebasing:
        stage_board()
    args = ["rebase", "--continue"] if rebasing else ["commit", "--no-edit"]
    _git_with_driver(top, args, what, "the stopped " + what)
    notes.append(f"finished the {what} Git had stopped")


def let_git_integrate(repo: pygit2.Repository, top: str, how: str, upstream: str,
                      label: str, message: str, conflicted: Sequence[str]) -> None:
    """Integrate ``upstream`` (named ``label`` to the person) with Git itself, by ``how``
    (``rebase`` or ``merge``), for the ``conflicted`` paths ledgit does not merge (module
    docstring). Returns when Git finished cleanly; raises LedgitError (exit 1) where it
    stopped or refused (a dirty work tree), naming the files and the ways on."""
    args = ["rebase", upstream] if how == branches.REBASE else [
        "merge", "--no-edit", "-m", message, upstream]
    _git_with_driver(top, args, how, f"the {how} with {label}")


def _git_with_driver(top: str, args: Sequence[str], what: str, subject: str) -> None:
    settings, attributes = driver_settings(driver_command(), ATTRIBUTE_LINES)
    try:
        env = {**no_git_env(), "GIT_EDITOR": "true"}
        proc = run_git([*settings, *args], top, env=env, check=False)
    finally:
        attributes.unlink(missing_ok=True)
    if proc.returncode == 0:
        return
    stuck = unmerged_paths(Path(top))
    if stuck:
        raise LedgitError(f"Git stopped {subject} on a conflict in {', '.join(stuck)} (every "
                          f"task file ledgit could merge is merged): resolve them (task files: "
                          f"ledgit resolve), git add them, then run ledgit sync again "
                          f"({ABORT_NOTE.format(what=what)})", CHECK_FAILED)
    # git rebase --continue says why it will not go on on stdout, over several lines
    said = last_error(os.fsdecode(proc.stderr).strip()
                      or " ".join(os.fsdecode(proc.stdout).split()), "failed")
    raise LedgitError(f"git {args[0]}: {said} ({subject}; nothing else changed: run ledgit "
                      f"sync again when it is fixed)", CHECK_FAILED)
