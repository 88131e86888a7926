"""Task files Git left unmerged while a merge, rebase, cherry-pick or revert is stopped: the
hint every ledgit command prints after Git's own conflict (issue 28), so that a clone without
the merge driver hears of ``ledgit resolve`` at its next command, whatever that command is.

Cheap when nothing is stopped (a few stats in the git directory); ``git ls-files -u`` runs
only while Git is stopped.
"""

from __future__ import annotations

import os

from ledgit.git import repository
from ledgit.storage.board import Board

#: What Git leaves in the git directory while an operation is stopped (git-status(1) reads
#: the same): the heads of a merge, cherry-pick, revert, and a rebase's state directories.
STOPPED = ("MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply")


def unmerged_task_files(board: Board) -> list[str]:
    """Board-relative paths of the task files and histories unmerged in the index while Git
    is stopped (:data:`STOPPED`); [] otherwise, or outside Git."""
    gitdir = board.git_dir_str
    if gitdir is None or not any(os.path.exists(os.path.join(gitdir, name))
                                 for name in STOPPED):
        return []
    proc = repository.run_git(["ls-files", "-u", "-z", "--full-name", "--", board.dir_str],
                       board.root_str, check=False)
    if proc.returncode != 0:
        return []
    top = repository.toplevel(board.root)
    names = {os.fsdecode(entry.split(b"\t", 1)[1]) for entry in proc.stdout.split(b"\0")
             if b"\t" in entry}
    if top is None:
        return sorted(names)
    return sorted(os.path.relpath(os.path.join(top, n), board.root_str).replace(os.sep, "/")
                  for n in names)


def unmerged_hint(board: Board) -> str | None:
    """One line naming the unmerged task files and ``ledgit resolve`` (and ``ledgit
    install`` when this clone has no merge driver), None when there are none."""
    paths = unmerged_task_files(board)
    if not paths:
        return None
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    install = "" if repository.config_get(board.root, "merge.ledgit.driver") else (
        "; then ledgit install, once, so that Git hands task files to ledgit's merge driver")
    return (f"warning: Git stopped with {len(paths)} task file(s) unmerged ({shown}): run "
            f"ledgit resolve (it merges them field by field and stages them){install}")
