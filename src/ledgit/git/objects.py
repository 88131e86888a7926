"""Git's objects at a revision (DESIGN §8): trees, blobs, commits and their parents, read
through pygit2 in one process (``git`` CLI where pygit2 refuses the repository), and the
board paths that changed between two trees or against the index -- what the gate and the
hooks compare."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ledgit.core.errors import USAGE, LedgitError
from ledgit.git.repository import (
    QUARANTINE_ENV,
    GitPaths,
    git_order,
    head_oid,
    index_path,
    no_git_env,
    pathspec,
    require_repo,
    run_git,
    under,
    work_root,
)

if TYPE_CHECKING:
    from pathlib import Path

    import pygit2


def _pygit2() -> Any:
    """The pygit2 module, imported on first use."""
    import pygit2  # lazy: 30 ms (-X importtime; 220 ms at load 4) that reads, writes and hooks skip

    return pygit2


_use_pygit2 = True  # tests switch this off to run the CLI fallback on ordinary repositories
_noted: set[Path] = set()


# --- objects -----------------------------------------------------------------------------------

def tree_files(cwd: Path, rev: str, prefix: str) -> dict[str, bytes]:
    """Every blob under ``prefix`` at revision ``rev`` (any tree-ish), in path order; empty
    when ``prefix`` does not exist there. A bad ``rev`` raises LedgitError (code 2)."""
    paths = require_repo(cwd)
    repo = open_repo(paths)
    if repo is not None:
        return _tree_files_pygit2(repo, rev, prefix)
    tree = resolve_cli(cwd, rev, "tree")
    entries = _ls_tree(cwd, tree, prefix)
    blobs = read_blobs(None, paths, list(entries.values()))
    return {path: blobs[oid] for path, oid in entries.items()}


def blob_at(cwd: Path, rev: str, path: str) -> bytes | None:
    """The content of ``path`` at revision ``rev``, or None when no blob is there
    (gitrevisions(7) ``REV:PATH``). A bad ``rev`` raises LedgitError (code 2)."""
    paths = require_repo(cwd)
    repo = open_repo(paths)
    if repo is not None:

        try:
            obj = _peel(repo, rev, "tree")[path.strip("/")]
        except KeyError:
            return None
        return obj.data if isinstance(obj, _pygit2().Blob) else None
    found = _ls_tree(cwd, resolve_cli(cwd, rev, "tree"), path, recursive=False)
    oid = found.get(path.strip("/"))
    return None if oid is None else read_blobs(None, paths, [oid])[oid]


def changed_paths(cwd: Path, rev: str, prefix: str) -> list[str]:
    """The paths under ``prefix`` that commit ``rev`` changes against its first parent (every
    path of a root commit), sorted; a rename counts as a deletion and an addition."""
    paths = require_repo(cwd)
    repo = open_repo(paths)
    if repo is not None:
        commit = _peel(repo, rev, "commit")
        if commit.parents:
            diff = commit.parents[0].tree.diff_to_tree(commit.tree)
        else:
            diff = commit.tree.diff_to_tree(swap=True)
        found = {os.fsdecode(d.new_file.raw_path or d.old_file.raw_path) for d in diff.deltas}
        return sorted((p for p in found if under(p, prefix)), key=os.fsencode)
    oid = resolve_cli(cwd, rev, "commit")
    args = ["--literal-pathspecs", "diff-tree", "-r", "-z", "--name-only", "--no-renames",
            "--no-commit-id", "--root", "--diff-merges=first-parent", "--end-of-options", oid,
            *pathspec(prefix)]
    out = run_git(args, work_root(cwd)).stdout
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p}, key=os.fsencode)


def rev_list(cwd: Path, spec: str) -> list[str]:
    """The commits of ``A..B`` (reachable from B, not from A; an empty side is HEAD), parents
    before children, oldest first (``git rev-list --reverse --topo-order``); a single
    revision gives just that commit. A bad revision raises LedgitError (code 2) naming it."""
    if "..." in spec:
        raise LedgitError(f"{spec}: symmetric ranges are not supported; use A..B", USAGE)
    if ".." not in spec:
        return [resolve_cli(cwd, spec, "commit")]
    start, _, end = spec.partition("..")
    exclude = resolve_cli(cwd, start or "HEAD", "commit")
    include = resolve_cli(cwd, end or "HEAD", "commit")
    out = run_git(["rev-list", "--reverse", "--topo-order", "--end-of-options", include,
                   f"^{exclude}"],
                  work_root(cwd)).stdout
    return out.decode().split()


def resolve_cli(cwd: Path, rev: str, kind: str) -> str:
    if not rev.startswith("-"):  # never let a revision be read as an option
        proc = run_git(["rev-parse", "-q", "--verify", f"{rev}^{{{kind}}}"], cwd, check=False)
        if proc.returncode == 0:
            return proc.stdout.decode().strip()
    raise LedgitError(f"{rev}: not a valid {kind} name", USAGE)


def _peel(repo: pygit2.Repository, rev: str, kind: str) -> Any:
    """The ``kind`` ("commit" or "tree") that ``rev`` names in ``repo`` (pygit2's Commit or
    Tree). Raises LedgitError exit 2 when ``rev`` names none."""
    try:
        return repo.revparse_single(rev).peel(getattr(_pygit2(), kind.capitalize()))
    except (KeyError, ValueError, _pygit2().GitError):
        raise LedgitError(f"{rev}: not a valid {kind} name", USAGE) from None


def _tree_files_pygit2(repo: pygit2.Repository, rev: str, prefix: str) -> dict[str, bytes]:
    top = prefix.strip("/")
    tree = _peel(repo, rev, "tree")
    try:
        node = tree[top] if top else tree
    except KeyError:
        return {}
    if isinstance(node, _pygit2().Blob):
        return {top: node.data}
    found: dict[str, bytes] = {}
    stack: list[tuple[Any, str]] = [(node, f"{top}/" if top else "")]
    while stack:
        current, base = stack.pop()
        for entry in current:
            name = base + os.fsdecode(entry.raw_name or b"")
            if isinstance(entry, _pygit2().Tree):
                stack.append((entry, name + "/"))
            elif isinstance(entry, _pygit2().Blob):
                found[name] = entry.data
    return dict(sorted(found.items(), key=git_order))


def _ls_tree(cwd: Path, tree: str, prefix: str, *, recursive: bool = True) -> dict[str, str]:
    args = ["--literal-pathspecs", "ls-tree", "-z", *(["-r"] if recursive else []),
            "--end-of-options", tree, *pathspec(prefix)]
    entries: dict[str, str] = {}
    for record in filter(None, run_git(args, work_root(cwd)).stdout.split(b"\0")):
        meta, _, raw_path = record.partition(b"\t")
        _, kind, oid = meta.decode().split(" ")
        if kind == "blob":
            entries[os.fsdecode(raw_path)] = oid
    return entries


def read_blobs(repo: pygit2.Repository | None, paths: GitPaths,
                oids: Sequence[str]) -> dict[str, bytes]:
    """oid -> content, in one process either way (pygit2, else ``git cat-file --batch``)."""
    if repo is not None:
        return {oid: repo[oid].read_raw() for oid in oids}
    found = cat_blobs(paths.toplevel or paths.git_dir, oids, paths=paths)
    missing = [oid for oid, data in found.items() if data is None]
    if missing:
        raise LedgitError(f"git cat-file: {missing[0]}: missing", USAGE)
    return {oid: data for oid, data in found.items() if data is not None}


def cat_blobs(cwd: Path, names: Sequence[str], *,
                 paths: GitPaths | None = None) -> dict[str, bytes | None]:
    """name -> the blob's content, or None when no blob has that name (missing, or a tree);
    ``names`` are object ids or any name ``git cat-file`` takes (``HEAD:path``,
    gitrevisions(7)). One ``git cat-file --batch`` process for all of them, none for none.
    ``paths``: the repository already discovered from ``cwd``."""
    if not names:
        return {}
    paths = paths or require_repo(cwd)
    return _cat_batch(paths.toplevel or paths.git_dir, names, no_git_env())


def _cat_batch(cwd: str | Path, names: Sequence[str],
               env: Mapping[str, str] | None) -> dict[str, bytes | None]:
    """``git cat-file --batch`` for ``names`` in ``cwd`` (``env`` None: this process's)."""
    if not names:
        return {}
    if any("\n" in name for name in names):
        raise LedgitError("git cat-file: an object name holds a newline", USAGE)
    out = run_git(["cat-file", "--batch"], cwd, env=os.environ if env is None else env,
                  input="\n".join(names).encode() + b"\n").stdout
    return batch_contents(out, names)


def batch_contents(out: bytes, names: Sequence[str]) -> dict[str, bytes | None]:
    """Parse ``git cat-file --batch`` output for ``names`` (git-cat-file(1) "BATCH OUTPUT")."""
    found: dict[str, bytes | None] = {}
    pos = 0
    for name in names:  # "<oid> <type> <size>\n<content>\n", or "<name> missing\n"
        end = out.index(b"\n", pos)
        header = out[pos:end].rsplit(b" ", 2)
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            found[name] = out[end + 1:end + 1 + size] if header[1] == b"blob" else None
            pos = end + 2 + size
        elif out[pos:end].endswith((b" missing", b" ambiguous")):
            found[name] = None
            pos = end + 1
        else:
            raise LedgitError(f"git cat-file: {name}: {os.fsdecode(out[pos:end])}", USAGE)
    return found


def open_repo(paths: GitPaths) -> pygit2.Repository | None:
    """pygit2's view of the repository, or None when the git CLI must answer instead."""
    if not _use_pygit2:
        return None

    try:
        repo: pygit2.Repository = _pygit2().Repository(str(paths.toplevel or paths.git_dir))
    except _pygit2().GitError as err:  # reftable, partial clone, sha256...
        _note(paths.git_dir, f"pygit2 cannot open the repository ({err})")
        return None
    quarantine = os.environ.get(QUARANTINE_ENV)
    if quarantine:  # a pre-receive hook: the objects being pushed are not in the repository yet
        repo.odb.add_disk_alternate(quarantine)
    return repo


def _note(where: Path, why: str) -> None:
    if where not in _noted:
        _noted.add(where)
        print(f"ledgit: note: {where}: {why}; asking the git CLI instead", file=sys.stderr)


# --- revisions of other repositories (ledgit.operations.projects)
# ----------------------------------------

def resolve_commit(cwd: Path, rev: str) -> str:
    """The full commit id ``rev`` names in the repository at ``cwd``; LedgitError exit 2
    when it names none."""
    return resolve_cli(cwd, rev, "commit")


# --- growth: what the hooks and the gate compare (DESIGN §8, "A history only grows") ----------
# git CLI only (argv lists): one process per question, whatever the repository's layout.

# every board's files, from the work tree top wherever Git runs (filter-branch runs hooks in
# .git-rewrite/t)
BOARD_GLOBS = (":(top,glob).ledgit/**", ":(top,glob)**/.ledgit/**")


def staged_board_paths(cwd: Path) -> list[str]:
    """Paths under any ``.ledgit/`` whose index entry differs from HEAD (the empty tree on an
    unborn branch), unmerged ones included: ``git diff-index --cached --name-only``."""
    return index_diff_paths(cwd, head_oid(cwd) or _empty_tree(cwd))


def index_diff_paths(cwd: Path, rev: str) -> list[str]:
    """Paths under any ``.ledgit/`` whose entry in the index (:func:`index_path`) differs from
    commit ``rev``, sorted (git-diff-index(1) ``--cached``; a rename is a deletion plus an
    addition). A bad ``rev`` raises LedgitError (code 2)."""
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd))}
    out = run_git(["diff-index", "--cached", "--name-only", "-z", "--no-renames",
                   "--end-of-options", rev, "--",
                   *BOARD_GLOBS], work_root(cwd), env=env).stdout
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p}, key=os.fsencode)


def worktree_diff_paths(cwd: Path, rev: str) -> list[str]:
    """Paths under any ``.ledgit/`` whose file in the work tree differs from commit ``rev``
    (or is gone), sorted (git-diff-index(1) without ``--cached``; untracked files are not
    listed)."""
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd))}
    out = run_git(["diff-index", "--name-only", "-z", "--no-renames", "--end-of-options", rev,
                   "--", *BOARD_GLOBS], work_root(cwd), env=env).stdout
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p}, key=os.fsencode)


def tree_diff_paths(cwd: Path, old: str, new: str) -> list[str]:
    """Paths under any ``.ledgit/`` that differ between commits ``old`` and ``new``, sorted
    (``git diff-tree -r --name-only --no-renames OLD NEW``). Works in a bare repository."""
    out = run_git(["diff-tree", "-r", "-z", "--name-only", "--no-renames", "--end-of-options",
                   old, new, "--",
                   *BOARD_GLOBS], work_root(cwd)).stdout
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p}, key=os.fsencode)


def board_paths_at(cwd: Path, rev: str) -> list[str]:
    """Every path under any ``.ledgit/`` in the tree of ``rev`` (``git ls-tree -r``, which
    takes no glob pathspec, so the listing is filtered here)."""
    out = run_git(["ls-tree", "-r", "-z", "--name-only", "--full-tree", "--end-of-options", rev],
                  work_root(cwd)).stdout
    return [path for path in map(os.fsdecode, out.split(b"\0"))
            if path.startswith(".ledgit/") or "/.ledgit/" in path]


def blobs_at(cwd: Path, rev: str | None, paths: Sequence[str]) -> dict[str, bytes | None]:
    """path -> the blob at ``rev:path`` (``rev`` None: the index's stage-0 entry, ``:path``),
    None where there is none; one ``git cat-file --batch`` for all (gitrevisions(7))."""
    if not paths:
        return {}
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd))} if rev is None else None
    names = [f"{rev or ''}:{p}" for p in paths]
    out = run_git(["cat-file", "--batch"], work_root(cwd), env=env,
                  input="\n".join(names).encode() + b"\n").stdout
    found: dict[str, bytes | None] = {}
    pos = 0
    for path in paths:  # "<oid> <type> <size>\n<content>\n" or "<name> missing\n"
        end = out.index(b"\n", pos)
        header = out[pos:end].rsplit(b" ", 2)
        if len(header) == 3 and header[1] == b"blob" and header[2].isdigit():
            size = int(header[2])
            found[path] = out[end + 1:end + 1 + size]
            pos = end + 2 + size
        elif len(header) == 3 and header[2].isdigit():  # a tree or a submodule: no file
            found[path] = None
            pos = end + 2 + int(header[2])
        else:
            found[path] = None
            pos = end + 1
    return found


def commit_parents(cwd: Path, commits: Sequence[str]) -> dict[str, list[str]]:
    """commit -> its parents in order (empty for a root commit), one ``git rev-list``."""
    if not commits:
        return {}
    out = run_git(["rev-list", "--no-walk=unsorted", "--parents", "--stdin"], work_root(cwd),
                  input="\n".join(commits).encode() + b"\n").stdout.decode()
    return {ids[0]: ids[1:] for ids in (line.split() for line in out.splitlines()) if ids}


def _empty_tree(cwd: Path) -> str:
    return run_git(["hash-object", "-t", "tree", "--stdin"], work_root(cwd),
                   input=b"").stdout.decode().strip()


class TreeReader:
    """Blobs and tree diffs of one repository opened once, for the gate's walk over many
    commits: pygit2's public API, or the git CLI where pygit2 refuses the repository."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.repo = open_repo(require_repo(cwd))
        self._trees: dict[str, pygit2.Tree] = {}
        self._blobs: dict[tuple[str, str], bytes | None] = {}  # the gate asks some twice

    def _tree(self, rev: str) -> pygit2.Tree:
        tree = self._trees.get(rev)
        if tree is None:
            assert self.repo is not None
            tree = self._trees[rev] = _peel(self.repo, rev, "tree")
        return tree

    def blob(self, rev: str, path: str) -> bytes | None:
        """The content of ``path`` at ``rev``, None when no blob is there."""
        key = (rev, path)
        if key in self._blobs:
            return self._blobs[key]
        if self.repo is None:
            data = blob_at(self.cwd, rev, path)
        else:

            try:
                obj = self._tree(rev)[path]
            except KeyError:
                obj = None
            data = obj.data if isinstance(obj, _pygit2().Blob) else None
        self._blobs[key] = data
        return data

    def names(self, rev: str, directory: str) -> list[str]:
        """The repository paths of the blobs directly in ``directory`` (a repository path
        ending in ``/``) at ``rev``; [] when there is no such directory. One tree listing,
        not a blob read."""
        if self.repo is None:
            return sorted(p for p in _ls_tree(self.cwd, rev, directory)
                          if "/" not in p[len(directory):])
        try:
            tree = self._tree(rev)[directory.rstrip("/")]
        except KeyError:
            return []
        pygit2 = _pygit2()
        if not isinstance(tree, pygit2.Tree):
            return []
        return sorted(directory + os.fsdecode(entry.raw_name) for entry in tree
                      if isinstance(entry, pygit2.Blob))

    def diff_paths(self, old: str, new: str) -> list[str]:
        """:func:`tree_diff_paths`: the board paths that differ between two commits."""
        if self.repo is None:
            return tree_diff_paths(self.cwd, old, new)
        diff = self._tree(old).diff_to_tree(self._tree(new))
        found = {os.fsdecode(d.new_file.raw_path or d.old_file.raw_path) for d in diff.deltas}
        return sorted((p for p in found if p.startswith(".ledgit/") or "/.ledgit/" in p),
                      key=os.fsencode)
