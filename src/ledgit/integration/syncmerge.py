"""Integrating the upstream in memory for ``ledgit sync`` (DESIGN §7, §13): the branch's tip
and the remote's brought together -- nothing to do, a fast-forward, a merge commit, or the
local commits replayed onto the remote's tip (a rebase) -- with every task file and history
that both sides changed merged by ledgit's policy in this process
(:func:`ledgit.core.filemerge.merge_board_file`: the same bytes the merge driver writes,
whichever side is ours), other files as libgit2 merges them, and the result checked as the
hooks would check it (:func:`check_result`: no event of either side lost, every merged task
valid). Nothing here moves a ref or touches the work tree: :mod:`ledgit.integration.sync`
does, once the result passed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import pygit2

from ledgit.core.errors import LedgitError
from ledgit.core.filemerge import board_file_kind, merge_board_file
from ledgit.git import treemerge
from ledgit.git.branches import MERGE, REBASE
from ledgit.integration.taskcheck import (
    Finding,
    check_growth,
    check_task,
    prefix_of,
    task_of,
    task_paths,
)

UP_TO_DATE = "up-to-date"  # the upstream is in the branch already
FAST_FORWARD = "fast-forward"  # the branch is in the upstream: it moves to it
MERGED = "merged"  # a merge commit joins the two
REBASED = "rebased"  # the local commits replayed onto the upstream
MARKER_SIZE = 7  # Git's default conflict-marker-size (gitattributes(5))


class Integration(NamedTuple):
    """What integrating ``upstream`` into ``local`` gave: ``how`` (one of the constants
    above), the new ``tip`` (None when Git must finish it: a conflict ledgit does not
    merge), the board files ledgit ``merged`` (repository paths), the paths left
    ``conflicted``, and the commits replayed (``picked``, rebase only)."""

    how: str
    tip: str | None
    merged: list[str]
    conflicted: list[str]
    picked: int = 0


def resolve_board_file(path: str, base: bytes | None, ours: bytes | None,
                       theirs: bytes | None) -> bytes | None:
    """ledgit's merge of one task file or history both sides changed (a
    :data:`ledgit.git.treemerge.Resolver`): the merged bytes, None when it is left for a
    person or for Git (overlapping edits of a body, a side that removed the file, a side
    that does not parse)."""
    kind = board_file_kind(path)
    if kind is None or ours is None or theirs is None:
        return None
    try:
        out, conflict, _notes = merge_board_file(kind, base or b"", ours, theirs, MARKER_SIZE,
                                                 path)
    except (LedgitError, ValueError, UnicodeDecodeError):
        return None
    return None if conflict else out


def owns(path: str) -> bool:
    """The paths ledgit merges itself: task files and histories of any board."""
    return board_file_kind(path) is not None


def integrate(repo: pygit2.Repository, local: str | None, upstream: str | None, how: str,
              message: str, who: tuple[pygit2.Signature, pygit2.Signature]) -> Integration:
    """Bring commit ``upstream`` into commit ``local`` (None: an unborn branch or a remote
    without the branch) by ``how`` (:data:`ledgit.git.branches.REBASE` or ``MERGE``); a merge
    commit gets ``message``; ``who``: (author, committer) of new commits. Raises
    LedgitError (exit 2) for unrelated histories, or a history too shallow to join them."""
    try:
        if upstream is None or upstream == local or (
                local is not None and repo.descendant_of(local, upstream)):
            return Integration(UP_TO_DATE, local, [], [])
        if local is None or repo.descendant_of(upstream, local):
            return Integration(FAST_FORWARD, upstream, [], [])
        base = repo.merge_base(local, upstream)
    except pygit2.GitError as err:
        # a commit whose parents this repository lacks: a shallow clone cut above the base
        sides = " and ".join((c or "")[:12] for c in (local, upstream))
        raise LedgitError(f"cannot find where {sides} meet: {err} (a shallow clone? git "
                          f"fetch --unshallow)") from None
    if base is None:
        raise LedgitError(f"refusing to merge unrelated histories ({local[:12]} and "
                          f"{upstream[:12]} share no commit)")
    if how == MERGE:
        tree = _tree(repo, str(base))
        result = treemerge.merge_trees(repo, tree, _tree(repo, local), _tree(repo, upstream),
                                       owns, resolve_board_file)
        if result.tree is None:
            return Integration(MERGED, None, result.resolved, result.conflicted)
        tip = treemerge.merge_commit(repo, local, upstream, result.tree, message, who)
        return Integration(MERGED, tip, result.resolved, [])
    assert how == REBASE
    picks = treemerge.local_commits(repo, local, upstream)
    if any(treemerge.is_merge(repo, c) for c in picks):
        # git rebase drops merge commits and picks what they brought: Git does that one
        return Integration(REBASED, None, [], ["(a merge commit among the local commits)"])
    onto, merged, picked = upstream, [], 0
    for commit in picks:
        new, result = treemerge.replay(repo, commit, onto, owns, resolve_board_file, who)
        merged += [p for p in result.resolved if p not in merged]
        if result.conflicted:
            return Integration(REBASED, None, merged, result.conflicted, picked)
        if new is not None:
            onto, picked = new, picked + 1
    return Integration(REBASED, onto, merged, [], picked)


def _tree(repo: pygit2.Repository, commit: str) -> str:
    return str(treemerge.commit_of(repo, commit).tree_id)


# --------------------------------------------------------------------------- checks


def check_result(repo: pygit2.Repository, result: str, parents: Iterable[str | None],
                 merged: Iterable[str]) -> list[Finding]:
    """What the hooks would refuse in commit ``result`` (DESIGN §8): every event of each of
    ``parents`` (the two tips brought together; None: absent) kept in every task either
    side changed (:func:`ledgit.integration.taskcheck.check_growth`), and every task ledgit
    ``merged`` valid (schema, chain, lifecycle: :func:`check_task`)."""
    found: list[Finding] = []
    tree = _tree(repo, result)
    for parent in (p for p in parents if p is not None and p != result):
        ptree = _tree(repo, parent)
        for prefix, task in _tasks(treemerge.changed_paths(repo, ptree, tree)):
            md, hist = task_paths(prefix, task)
            before = tuple(treemerge.blob_at(repo, ptree, p) for p in (md, hist))
            after = tuple(treemerge.blob_at(repo, tree, p) for p in (md, hist))
            more, _notes = check_growth(task, md, hist, (before[0], before[1]),
                                        (after[0], after[1]), against=parent[:12],
                                        commit=result)
            found += more
    for prefix, task in _tasks(merged):
        md, hist = task_paths(prefix, task)
        found += check_task(task, md, treemerge.blob_at(repo, tree, md), hist,
                            treemerge.blob_at(repo, tree, hist), result)
    return found


def _tasks(paths: Iterable[str]) -> list[tuple[str, str]]:
    """(board prefix, task id) of every task file or history among ``paths``, sorted."""
    found = set()
    for path in paths:
        prefix = prefix_of(path)
        task = None if prefix is None else task_of(path, prefix)
        if prefix is not None and task is not None:
            found.add((prefix, task))
    return sorted(found)
