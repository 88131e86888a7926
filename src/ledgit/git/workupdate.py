"""The work tree and Git's index of one worktree, moved by ``ledgit sync`` in this process
(DESIGN §13), with pygit2's public API: what changed under some directories (libgit2's
``git add`` of those directories: a stat of the files there, a hash only where the stat
says so -- never a scan of the whole tree), and the files that differ between two commits
written into the work tree and the index, refusing before anything is written where the
user's own uncommitted work would be overwritten (``git merge``'s rule).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

import pygit2

from ledgit.core.errors import BUSY, CHECK_FAILED, LedgitError
from ledgit.git.remotes import last_error
from ledgit.git.repository import run_git
from ledgit.git.treemerge import commit_of


def stage_directories(repo: pygit2.Repository, parent: str | None,
                      directories: Sequence[str]) -> tuple[pygit2.Index, list[str]]:
    """Git's index of ``repo`` with every file under ``directories`` (repository-relative,
    ending in ``/``) staged as the work tree has it -- new, changed and removed files,
    ignored files left out (git-add(1) ``-A DIR``) -- in memory only, and the paths under
    them that now differ from commit ``parent`` (None: an unborn branch), sorted. The index
    file is not written: :meth:`pygit2.Index.write` does that, :meth:`pygit2.Index.read`
    with ``force`` forgets it."""
    index = repo.index
    index.read(False)
    index.add_all([_literal(d) for d in directories])
    if parent is None:
        paths = {entry.path for entry in index}
    else:
        diff = index.diff_to_tree(commit_of(repo, parent).tree)
        paths = {p for d in diff.deltas for p in (d.old_file.path, d.new_file.path)}
    return index, sorted(p for p in paths if any(p.startswith(d) for d in directories))


def _literal(directory: str) -> str:
    """A pathspec for everything under ``directory`` (ending in ``/``) taken literally: a
    directory name holding a glob character (``b[1]/``) is a pattern to libgit2, which then
    matches it as a whole path, not as a prefix -- escaped, with ``*`` after it."""
    if not any(c in directory for c in "*?[\\"):
        return directory
    return re.sub(r"([*?\[\\])", r"\\\1", directory) + "*"


def restage(repo: pygit2.Repository, index: pygit2.Index, parent: str | None,
            paths: Sequence[str], again: Sequence[str]) -> list[str]:
    """Stage each of ``again`` in ``index`` once more as the work tree has it now (absent:
    removed), and return ``paths`` and ``again`` that now differ from commit ``parent``,
    sorted: :func:`stage_directories` for a few files, after a writer finished them."""
    top = repo.workdir
    for path in again:
        if os.path.lexists(os.path.join(top, path)):
            index.add(path)
        elif path in index:
            index.remove(path)
    tree = None if parent is None else commit_of(repo, parent).tree
    changed = []
    for path in sorted({*paths, *again}):
        staged = index[path].id if path in index else None
        try:
            before = tree[path].id if tree is not None else None
        except KeyError:
            before = None
        if staged != before:
            changed.append(path)
    return changed


def refuse_locked_index(repo: pygit2.Repository) -> None:
    """Raise LedgitError (exit 5) while another git command holds this worktree's index
    (``index.lock``, gitrepository-layout(5)): libgit2 would write the work tree's files
    first and fail only on the index, leaving them as unstaged changes."""
    lock = os.path.join(repo.path, "index.lock")
    if os.path.exists(lock):
        raise LedgitError(f"{lock} exists: another git command is updating this worktree's "
                          f"index; nothing written: run ledgit sync again when it is done (no "
                          f"git running? remove that file)", BUSY)


def checkout_paths(repo: pygit2.Repository, old: str | None, new: str,
                   paths: Sequence[str]) -> None:
    """Write ``paths`` as commit ``new`` has them (absent there: removed) into the work tree
    and the index, where they are as commit ``old`` (HEAD, not moved yet) has them. A path
    the user changed since ``old`` -- in the work tree or staged -- stops it before any file
    is written: LedgitError (exit 1) naming the paths (libgit2's safe checkout); exit 5 when
    another git command holds the index (before anything is written; or, when it took the
    lock meanwhile, after some files were: the caller's note finishes the move). In a sparse
    checkout, or where a path's ``filter`` attribute names a driver, Git does it (``git
    update-index --refresh``, then ``git read-tree -m -u OLD NEW``): libgit2 knows no
    skip-worktree bit (it took a file left out of the work tree for the user's deletion)
    and runs no filter command (it wrote the stored form: a git-lfs pointer)."""
    if not paths:
        return
    refuse_locked_index(repo)
    if old is not None and (_sparse(repo) or _filtered(repo, new, paths)):
        # read-tree trusts the index's stat data: refreshed first, as git merge does
        run_git(["update-index", "-q", "--refresh"], repo.workdir, check=False)
        proc = run_git(["read-tree", "-m", "-u", old, new], repo.workdir, check=False)
        repo.index.read(True)
        if proc.returncode != 0:
            said = last_error(os.fsdecode(proc.stderr), "refused")
            raise LedgitError(f"your uncommitted changes would be overwritten ({said}); "
                              f"commit or stash them, then run ledgit sync again", CHECK_FAILED)
        return
    conflicts: list[str] = []

    class _Notes(pygit2.CheckoutCallbacks):
        def checkout_notify(self, why: pygit2.enums.CheckoutNotify, path: str,
                            baseline: pygit2.DiffFile | None, target: pygit2.DiffFile | None,
                            workdir: pygit2.DiffFile | None) -> None:
            if why & pygit2.enums.CheckoutNotify.CONFLICT:
                conflicts.append(path)

    strategy = pygit2.enums.CheckoutStrategy.SAFE
    try:
        repo.checkout_tree(commit_of(repo, new).tree,  # type: ignore[no-untyped-call]
                           paths=list(paths), strategy=strategy, callbacks=_Notes())
    except pygit2.GitError as err:
        if not conflicts:
            raise LedgitError(f"the work tree was not updated: {err}; run ledgit sync again "
                              f"when no other git command runs", BUSY) from None
        named = ", ".join(sorted(set(conflicts)))
        raise LedgitError(f"your uncommitted changes would be overwritten: {named}; commit "
                          f"or stash them, then run ledgit sync again", CHECK_FAILED) from None


def _sparse(repo: pygit2.Repository) -> bool:
    """``core.sparseCheckout`` is on (git-sparse-checkout(1); config.worktree read too)."""
    try:
        return bool(repo.config.get_bool("core.sparseCheckout"))
    except (KeyError, pygit2.GitError):
        return False


def _filtered(repo: pygit2.Repository, new: str, paths: Sequence[str]) -> bool:
    """One of ``paths`` has a ``filter`` attribute -- in the work tree's attributes or
    commit ``new``'s -- naming a driver with a ``smudge`` or ``process`` command
    (gitattributes(5) "filter")."""
    # the drivers configured first (a few config entries): with none, which is the common
    # case, no path's attributes are looked up (two lookups a path, every sync)
    drivers = {entry.name.lower()[len("filter."):].rsplit(".", 1)[0] for entry in repo.config
               if entry.name.lower().startswith("filter.")
               and entry.name.lower().endswith((".smudge", ".process"))}
    if not drivers:
        return False
    flags = pygit2.enums.AttrCheck.FILE_THEN_INDEX | pygit2.enums.AttrCheck.INCLUDE_COMMIT
    return any(isinstance(value, str) and value.lower() in drivers
               for path in paths
               for value in (repo.get_attr(path, "filter"),
                             repo.get_attr(path, "filter", flags, new)))
