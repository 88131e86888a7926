"""Commits made in memory for ``ledgit sync`` (DESIGN §13), with pygit2's public API: a commit
of some staged paths only, the three-way merge of two commits' trees (libgit2's, as Git's
``ort`` merges a code file) with the paths a caller owns merged by the caller's function,
and a commit replayed onto another one, as ``git rebase`` picks it. Nothing here touches
the work tree, the index file or a ref: the caller moves them once the result is checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

import pygit2

from ledgit.core.errors import USAGE, LedgitError

# path, base, ours, theirs (None: absent on that side) -> the merged bytes, None: conflicted
Resolver = Callable[[str, bytes | None, bytes | None, bytes | None], bytes | None]
# a merge attribute libgit2 applies as Git does (gitattributes(5) "Built-in merge drivers")
_BUILT_IN = (None, True, False, "text", "binary", "union")


class TreeMerge(NamedTuple):
    """A merge of two trees: the merged ``tree`` (hex), None when a path is left
    ``conflicted``; ``resolved``: the paths the caller's function merged."""

    tree: str | None
    conflicted: list[str]
    resolved: list[str]


def commit_of(repo: pygit2.Repository, oid: str) -> pygit2.Commit:
    """The commit ``oid`` names. Raises LedgitError (exit 2) when it is not a commit."""
    try:
        return repo[oid].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        raise LedgitError(f"{oid}: not a commit", USAGE) from None


def tree_of(repo: pygit2.Repository, oid: str | None) -> pygit2.Tree:
    """The tree ``oid`` (hex) names, the empty tree for None. Raises LedgitError (exit 2)
    when it is not a tree."""
    obj = repo.get(oid if oid is not None else repo.TreeBuilder().write())
    if not isinstance(obj, pygit2.Tree):
        raise LedgitError(f"{oid}: not a tree", USAGE)
    return obj


def blob_data(repo: pygit2.Repository, oid: pygit2.Oid | str) -> bytes:
    """The content of blob ``oid``. Raises LedgitError (exit 2) when it is not a blob."""
    obj = repo.get(oid)
    if not isinstance(obj, pygit2.Blob):
        raise LedgitError(f"{oid}: not a blob", USAGE)
    return obj.data


def changed_paths(repo: pygit2.Repository, old: str | None, new: str | None) -> set[str]:
    """Every path whose blob or mode differs between trees ``old`` and ``new`` (hex; None:
    the empty tree), renames as a removal and an addition."""
    diff = tree_of(repo, old).diff_to_tree(tree_of(repo, new))
    found: set[str] = set()
    for delta in diff.deltas:
        found.add(delta.old_file.path)
        found.add(delta.new_file.path)
    return found


def blob_at(repo: pygit2.Repository, tree: str | None, path: str) -> bytes | None:
    """The content of ``path`` in tree ``tree`` (hex; None: the empty tree), None when no
    blob is there."""
    if tree is None:
        return None
    try:
        obj = tree_of(repo, tree)[path]
    except KeyError:
        return None
    return obj.data if isinstance(obj, pygit2.Blob) else None


Entry = tuple[pygit2.Oid, int]  # a blob's id and file mode, as a tree entry holds them


def tree_with(repo: pygit2.Repository, base: str | None,
              changes: dict[str, Entry | None]) -> str:
    """The tree ``base`` (hex; None: the empty tree) with each path of ``changes`` set to its
    entry (None: removed), written and returned (hex). Only the trees on the changed paths
    are rebuilt (a TreeBuilder each), as ``git commit`` writes only the trees a change
    touches: at 10,000 tasks a whole index written as trees cost ~0.5 s."""
    top: dict[str, Entry | None] = {}
    below: dict[str, dict[str, Entry | None]] = {}
    for path, entry in changes.items():
        head, sep, rest = path.partition("/")
        if sep:
            below.setdefault(head, {})[rest] = entry
        else:
            top[head] = entry
    tree = tree_of(repo, base) if base is not None else None
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    for name, entry in top.items():
        if entry is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, entry[0], entry[1])
    for name, more in below.items():
        sub = None
        if tree is not None and name in tree and isinstance(tree[name], pygit2.Tree):
            sub = str(tree[name].id)
        new = tree_with(repo, sub, more)
        if len(tree_of(repo, new)) == 0:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, new, pygit2.enums.FileMode.TREE)
    return str(builder.write())


def commit_staged(repo: pygit2.Repository, index: pygit2.Index, parent: str | None,
                  paths: Iterable[str], message: str,
                  who: tuple[pygit2.Signature, pygit2.Signature]) -> str:
    """A commit on ``parent`` (None: a root commit) whose tree is the parent's with each of
    ``paths`` as ``index`` holds it (absent there: removed); the rest of ``index`` (what
    else is staged) is left out; ``who``: (author, committer). Returns its id (hex); no ref
    moves."""
    base = None if parent is None else str(commit_of(repo, parent).tree_id)
    changes: dict[str, Entry | None] = {
        p: (index[p].id, index[p].mode) if p in index else None for p in paths}
    oid = tree_with(repo, base, changes)
    return str(repo.create_commit(None, who[0], who[1], message, oid,
                                  [] if parent is None else [parent]))


def merge_trees(repo: pygit2.Repository, base: str | None, ours: str, theirs: str,
                owns: Callable[[str], bool], resolve: Resolver) -> TreeMerge:
    """Three-way merge of trees ``ours`` and ``theirs`` from ``base`` (hex; None: no common
    ancestor, refused as ``git merge`` refuses unrelated histories, LedgitError exit 2).

    Every path both sides changed for which ``owns(path)`` holds is merged by ``resolve``
    (base, ours, theirs bytes; None where absent), even where a line merge would be clean;
    the other paths as libgit2 merges them. A path both sides changed whose ``merge``
    attribute names a driver libgit2 does not run (a custom one) counts as conflicted, so
    the caller can leave it to Git."""
    if base is None:
        raise LedgitError("refusing to merge unrelated histories (no common ancestor)", USAGE)
    merged = repo.merge_trees(base, ours, theirs)
    ours_changed = changed_paths(repo, base, ours)
    theirs_changed = changed_paths(repo, base, theirs)
    both = ours_changed & theirs_changed
    resolved: list[str] = []
    conflicted: set[str] = set()
    for path in sorted(both):
        if owns(path):
            sides = [blob_at(repo, t, path) for t in (base, ours, theirs)]
            if sides[1] == sides[2]:
                continue  # both made the same change: libgit2 took it
            out = resolve(path, *sides)
            if out is None:
                conflicted.add(path)
                continue
            _put(repo, merged, path, out, ours, theirs)
            resolved.append(path)
        elif repo.get_attr(path, "merge") not in _BUILT_IN:
            conflicted.add(path)
    if merged.conflicts is not None:
        for entries in merged.conflicts:
            path = next(e.path for e in entries if e is not None)
            if path not in resolved:
                conflicted.add(path)
    if conflicted:
        return TreeMerge(None, sorted(conflicted), resolved)
    # the result differs from ours only where either side changed something (a rename
    # included: both its paths are changed): those entries, on ours' tree
    changes: dict[str, Entry | None] = {
        p: (merged[p].id, merged[p].mode) if p in merged else None
        for p in ours_changed | theirs_changed}
    return TreeMerge(tree_with(repo, ours, changes), [], resolved)


def _put(repo: pygit2.Repository, index: pygit2.Index, path: str, data: bytes,
         *trees: str) -> None:
    """Stage ``data`` at ``path`` (stage 0, its conflict stages gone), with the file mode
    of the first of ``trees`` that has the path (a regular file otherwise)."""
    if index.conflicts is not None and path in index.conflicts:
        del index.conflicts[path]
    mode = pygit2.enums.FileMode.BLOB
    for tree in trees:
        try:
            mode = tree_of(repo, tree)[path].filemode
            break
        except KeyError:
            continue
    index.add(pygit2.IndexEntry(path, repo.create_blob(data), mode))


def replay(repo: pygit2.Repository, commit: str, onto: str, owns: Callable[[str], bool],
           resolve: Resolver, who: tuple[pygit2.Signature, pygit2.Signature]
           ) -> tuple[str | None, TreeMerge]:
    """``commit`` picked onto ``onto`` as ``git rebase`` picks it (git-cherry-pick(1): the
    change from its first parent merged into ``onto``), keeping its author and message,
    committed by ``who``'s committer: (the new commit, None when the change is already in
    ``onto`` and the pick would be empty, or when the merge left a conflict; the merge)."""
    picked = commit_of(repo, commit)
    if len(picked.parents) != 1:
        raise LedgitError(f"{commit[:12]} is a merge commit: not replayed here", USAGE)
    base_tree = str(picked.parents[0].tree_id)
    onto_tree = str(commit_of(repo, onto).tree_id)
    result = merge_trees(repo, base_tree, onto_tree, str(picked.tree_id), owns, resolve)
    if result.tree is None or result.tree == onto_tree:
        return None, result
    encoding = picked.message_encoding
    new = repo.create_commit(None, picked.author, who[1], picked.message, result.tree, [onto],
                             *([encoding] if encoding else []))
    return str(new), result


def merge_commit(repo: pygit2.Repository, ours: str, theirs: str, tree: str, message: str,
                 who: tuple[pygit2.Signature, pygit2.Signature]) -> str:
    """The merge commit of ``ours`` and ``theirs`` (first parent ours, as ``git merge``)
    holding ``tree``, by ``who`` (author, committer); its id."""
    return str(repo.create_commit(None, who[0], who[1], message, tree, [ours, theirs]))


def local_commits(repo: pygit2.Repository, tip: str, upstream: str) -> list[str]:
    """The commits of ``tip`` that ``upstream`` lacks, parents first (what ``git rebase
    upstream`` would pick, merges included: the caller decides about those)."""
    walker = repo.walk(tip, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    walker.hide(upstream)
    return [str(c.id) for c in walker]


def is_merge(repo: pygit2.Repository, oid: str) -> bool:
    """``oid`` is a commit with more than one parent."""
    return len(commit_of(repo, oid).parent_ids) > 1
