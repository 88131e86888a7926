"""Hook entry points: ``ledgit hook NAME [ARGS...]`` (githooks(5), DESIGN §8).

* ``pre-commit`` and ``pre-merge-commit``: validate what is staged
(:mod:`ledgit.integration.precommit`)
  -- task files and histories read from the index (the one ``GIT_INDEX_FILE`` names: ``git
  commit -a`` and partial commits use a temporary index), cost O(staged tasks), never
  O(board). One line per problem on stderr; exit 1 stops the commit.
* ``post-checkout`` (including ``git worktree add``, git-worktree(1)), ``post-merge``,
  ``post-rewrite`` (``rebase``, ``commit --amend``): refresh this worktree's private index.
  These hooks cannot change the outcome of the command, so they are bounded in time
  (:data:`ledgit.hooks.refresh.INDEX_BUDGET` seconds; SQLite's journal keeps an
  interrupted refresh consistent) and always exit 0 (:mod:`ledgit.hooks.refresh`). ``index``
  is the same refresh under the name the pre-commit framework's ``ledgit-index`` hook uses.
* ``reference-transaction`` (state ``prepared``, the ref updates on stdin): the ref guard
  (:mod:`ledgit.integration.refguard`): a commit made on HEAD without ``pre-commit`` (a step
  of a rebase, ``am``, cherry-pick or revert included) and a branch moved to a commit that is
  not a child of its old tip must keep every event; exit 1 aborts the transaction, so the ref
  does not move -- only where that leaves Git whole; elsewhere one line names the events and
  ``ledgit restore-events OLD``. Other states exit 0 at once.

No hook fires for ``reset --hard``, ``stash`` or ``cherry-pick``: every read checks the index's
freshness by itself, so these hooks only warm it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ledgit.core.errors import OK, USAGE, LedgitError
from ledgit.git import gitindex, repository
from ledgit.storage.locate import git_dir_for

if TYPE_CHECKING:
    from pathlib import Path

PRE_COMMIT = "pre-commit"
PRE_MERGE_COMMIT = "pre-merge-commit"  # git merge's own commit: the pre-commit checks
REFERENCE_TRANSACTION = "reference-transaction"  # every ref move: the ref guard (refguard)
INDEX_HOOKS = ("post-checkout", "post-merge", "post-rewrite", "index")
NAMES = (PRE_COMMIT, PRE_MERGE_COMMIT, REFERENCE_TRANSACTION, *INDEX_HOOKS)



def _staged_reader(cwd: str) -> gitindex.StagedReader | None:
    """The two git processes of the pre-commit check, started at once, where Git runs the
    hook at the top of a work tree with nothing stopped that brings in other parents (a
    merge, pick, revert or rebase); None elsewhere (:func:`ledgit.integration.precommit.pre_commit`
    then asks with discovery)."""
    if not os.path.exists(os.path.join(cwd, ".git")):
        return None  # not the top of a work tree: pre_commit finds every board
    worktree_git_dir = git_dir_for(cwd)
    if worktree_git_dir is None or repository.operation_pending(worktree_git_dir) \
            or repository.merging_heads():
        return None  # the other parents are read by pre_commit
    try:
        return gitindex.StagedReader(cwd, ".")
    except OSError:
        return None  # no git to run: pre_commit says so


def _pre_commit(cwd: str, name: str) -> int:
    """Run the ``pre-commit`` (or ``pre-merge-commit``) check in ``cwd``; the exit code."""
    reader = _staged_reader(cwd) if name == PRE_COMMIT else None
    try:
        # lazy: 3.6 ms (-X importtime), done while git runs
        from ledgit.integration import precommit

        if reader is not None:
            answer = precommit.check_in_hook(cwd, reader)
            if answer is not None:
                return answer
    finally:
        if reader is not None:
            reader.close()

    return precommit.pre_commit(repository.as_path(cwd))


def warm_up_needed(name: str, args: list[str], cwd: str) -> bool:
    """Whether post-* hook ``name`` has an index to warm (githooks(5)): not a post-checkout
    that moved nothing (``git checkout -b``: the same commit twice), nor one a rebase runs
    as it starts (its state dir is there): the rebase's post-rewrite warms the index once
    when it ends, and every read checks freshness by itself (DESIGN §8). Saves a refresh in
    every ``git pull --rebase`` (issue 24)."""
    if name != "post-checkout":
        return True
    if len(args) >= 2 and args[0] == args[1] and args[0].strip("0"):
        return False
    git_dir = git_dir_for(cwd)
    return git_dir is None or not any(
        os.path.isdir(os.path.join(git_dir, d)) for d in ("rebase-merge", "rebase-apply"))


def run_hook(name: str, args: list[str], cwd: Path | None = None) -> int:
    """Dispatch ``ledgit hook NAME ARGS``: post-checkout's refs and flag decide whether it
    warms the index (:func:`warm_up_needed`); reference-transaction reads its updates from
    stdin (githooks(5)); the others' arguments are not needed."""
    if name == REFERENCE_TRANSACTION:
        if args[:1] != ["prepared"]:
            return OK  # "committed" and "aborted" cannot change anything (githooks(5))
        from ledgit.integration import refguard  # lazy: 9 ms (-X importtime), a ref move only

        return refguard.check_transaction(os.getcwd() if cwd is None else str(cwd),
                                          refguard.parse_updates(sys.stdin.read()))
    if name in (PRE_COMMIT, PRE_MERGE_COMMIT):
        return _pre_commit(os.getcwd() if cwd is None else str(cwd), name)
    if name in INDEX_HOOKS and not warm_up_needed(name, args,
                                                 os.getcwd() if cwd is None else str(cwd)):
        return OK
    if name in INDEX_HOOKS:
        # lazy: the board, its index and the gate, 4.0 ms (-X importtime) pre-commit skips
        from ledgit.hooks.refresh import refresh_index

        return refresh_index(repository.as_path(os.getcwd()) if cwd is None else cwd)
    raise LedgitError(f"unknown hook {name!r} (one of {', '.join(NAMES)})", USAGE)
