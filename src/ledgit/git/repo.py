"""Every question ledgit asks of Git, one small function each (DESIGN §2, §8).

Two ways of asking, both Git's own:

* the ``git`` CLI, ~1-2 ms a process: discovery, config, worktrees, ranges, HEAD, and the
  index (``git diff-index --cached``, ``git ls-files -u``; blobs from one
  ``git cat-file --batch`` process for all of them). The pre-commit hook uses only this.
* pygit2 (public API) for trees and blobs at other revisions: one process, no subprocess per
  blob, but ~40 ms to import, so it is imported by the readers only (``verify --rev/--range``,
  ``resolve``). Where pygit2 refuses the repository (reftable, partial clone, SHA-256), the CLI
  answers instead after a note on stderr.

The repository is always the one containing ``cwd``. The ``GIT_DIR``, ``GIT_WORK_TREE``,
``GIT_INDEX_FILE``... that Git exports to hooks are stripped from every child (:func:`no_git_env`);
only the index readers honour ``GIT_INDEX_FILE``, on purpose (pre-commit, DESIGN §8).
Paths inside the repository are repo-relative POSIX ``str``; paths on disk are absolute ``Path``.
The CLI paths need git >= 2.36.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pygit2

from ledgit.core.errors import USAGE, LedgitError

if TYPE_CHECKING:
    from pathlib import Path

    import pygit2

# What Git clears before it works in another repository (environment.c local_repo_env).
_REPO_ENV = frozenset({
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_DIR",
    "GIT_GRAFT_FILE", "GIT_IMPLICIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NO_REPLACE_OBJECTS", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX", "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE", "GIT_WORK_TREE",
})
QUARANTINE_ENV = "GIT_QUARANTINE_PATH"  # set for pre-receive hooks: pushed objects live there
_QUARANTINE_KEEP = frozenset(("GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"))
# First components of `git rev-parse --git-path` names that Git maps somewhere special
# (path.c common_list and adjust_git_path); every other name lives in the per-worktree git dir.
_GIT_PATH_SPECIAL = (
    "branches", "common", "config", "gc.", "hooks", "index", "info", "logs", "lost-found",
    "objects", "packed-refs", "refs", "reftable", "remotes", "rr-cache", "shallow",
    "sharedindex.", "svn", "worktrees",
)
_GITLINK = 0o160000
_use_pygit2 = True  # tests switch this off to run the CLI fallback on ordinary repositories
_noted: set[Path] = set()


class GitPaths(NamedTuple):
    """Where a repository lives, seen from one directory; all absolute and resolved."""

    git_dir: Path  # `git rev-parse --absolute-git-dir`: per worktree
    common_dir: Path  # `--git-common-dir`: shared by every worktree
    toplevel: Path | None  # `--show-toplevel`; None in a bare repo or inside the git dir


# --- running git -------------------------------------------------------------------------------

def no_git_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default ``os.environ``) without the variables that point Git at a repository.

    Git exports ``GIT_DIR``, ``GIT_INDEX_FILE``... to hooks (githooks(5)); left in place they
    would make a child git ignore its ``cwd``. Identity, ``-c`` config and transport settings stay.
    """
    source = os.environ if env is None else env
    if source.get(QUARANTINE_ENV):
        # a pre-receive hook: the pushed objects are only visible through these
        # (git-receive-pack(1), "QUARANTINE ENVIRONMENT")
        return {k: v for k, v in source.items() if k not in _REPO_ENV or k in _QUARANTINE_KEEP}
    return {k: v for k, v in source.items() if k not in _REPO_ENV}


def run_git(args: Sequence[str], cwd: str | Path, *, env: Mapping[str, str] | None = None,
            check: bool = True, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` in ``cwd`` with stdout/stderr captured as bytes.

    ``env`` defaults to :func:`no_git_env`. With ``check``, a non-zero exit raises
    LedgitError (code 2) quoting git's last stderr line; a missing ``git`` always does.
    """
    argv = ["git", *args]
    try:
        proc = subprocess.run(argv, cwd=cwd, env=no_git_env() if env is None else dict(env),
                              input=input, capture_output=True, check=False)
    except OSError as err:
        if not os.path.isdir(cwd):
            raise LedgitError(f"{cwd}: not a directory", USAGE) from err
        raise LedgitError(f"cannot run git: {err}", USAGE) from err
    if check and proc.returncode != 0:
        raise LedgitError(f"git {' '.join(args)}: {_last_line(proc.stderr)}", USAGE)
    return proc


def _last_line(stderr: bytes) -> str:
    lines = os.fsdecode(stderr).strip().splitlines()
    for n, line in enumerate(lines):
        # Git's refusal of a repository another user owns (safe.directory, git-config(1))
        # ends in an indented hint; the message is its "fatal:" line (issue 13).
        if "dubious ownership" in line:
            hint = next((h.strip() for h in lines[n + 1:] if "safe.directory" in h), None)
            return line.strip() + (f"; fix: {hint}" if hint else "")
    return lines[-1] if lines else "failed"


def _c_locale() -> dict[str, str]:
    # for the few places that read git's messages
    return {**no_git_env(), "LC_ALL": "C", "LANGUAGE": ""}


def _as_path(text: str) -> Path:
    """``text`` as a :class:`pathlib.Path`: what the discovery functions answer."""

    return Path(text)


# --- discovery ---------------------------------------------------------------------------------

def discover(cwd: Path) -> GitPaths | None:
    """The repository containing ``cwd``, or None outside any (``git rev-parse``: Git's own
    upward search, ``core.worktree``, ``core.bare``, ceiling directories and all).

    Raises LedgitError when Git refuses the repository (e.g. "detected dubious ownership").
    """
    args = ["rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir",
            "--is-inside-work-tree", "--show-cdup"]
    proc = run_git(args, cwd, env=_c_locale(), check=False)
    if proc.returncode != 0:
        if b"not a git repository" in proc.stderr:
            return None
        raise LedgitError(f"git: {_last_line(proc.stderr)}", USAGE)
    lines = [*os.fsdecode(proc.stdout).splitlines(), ""]
    gitdir, common, inside, cdup = lines[:4]
    top = _as_path(os.path.realpath(os.path.join(cwd, cdup))) if inside == "true" else None
    return GitPaths(_as_path(os.path.realpath(gitdir)), _as_path(os.path.realpath(common)), top)


def toplevel(cwd: Path) -> Path | None:
    """The work tree's top directory (``git rev-parse --show-toplevel``); None outside one."""
    paths = discover(cwd)
    return paths.toplevel if paths else None


def git_dir(cwd: Path) -> Path:
    """``git rev-parse --absolute-git-dir``: the per-worktree git directory."""
    return _require(cwd).git_dir


def common_dir(cwd: Path) -> Path:
    """``git rev-parse --git-common-dir``, absolute: the directory shared by all worktrees."""
    return _require(cwd).common_dir


def git_path(cwd: Path, name: str) -> Path:
    """``git rev-parse --git-path NAME``, absolute.

    Names Git gives no meaning to (e.g. ``ledgit``) are per worktree: in a linked worktree
    ``<common>/worktrees/<id>/NAME``. Git's own names (``hooks``, ``refs/...``) go to git.
    """
    paths = _require(cwd)
    parts = name.split("/")
    if not name or os.path.isabs(name) or ".." in parts or parts[0].startswith(_GIT_PATH_SPECIAL):
        out = run_git(["rev-parse", "--path-format=absolute", "--git-path", name], cwd).stdout
        return _as_path(os.fsdecode(out.rstrip(b"\n")))
    return paths.git_dir.joinpath(*parts)


def _require(cwd: Path) -> GitPaths:
    paths = discover(cwd)
    if paths is None:
        raise LedgitError(f"not a git repository: {cwd}", USAGE)
    return paths


def _root(cwd: Path) -> Path:
    # where CLI readers run, so that git's repo-relative paths need no --full-name
    paths = _require(cwd)
    return paths.toplevel or paths.git_dir


# --- config ------------------------------------------------------------------------------------

def config_get(cwd: Path, key: str) -> str | None:
    """The effective value of ``key`` (``git config --get``: system, global, repo, worktree,
    ``git -c``; the last one wins), or None when unset. Works outside a repository too."""
    return _config_get(cwd, key)


def _config_get(cwd: Path, key: str, *opts: str) -> str | None:
    proc = run_git(["config", "-z", *opts, "--get", key], cwd, check=False)
    if proc.returncode == 0:
        return os.fsdecode(proc.stdout.removesuffix(b"\0"))
    if proc.returncode == 1 and not proc.stderr:
        return None
    raise LedgitError(f"git config {key}: {_last_line(proc.stderr)}", USAGE)


def config_set(cwd: Path, key: str, value: str) -> None:
    """Set ``key`` in the repository's shared config (``<common_dir>/config``), which every
    worktree reads, whatever ``extensions.worktreeConfig`` says."""
    shared = str(common_dir(cwd) / "config")
    run_git(["config", "--file", shared, "--", key, value], cwd)


def config_unset(cwd: Path, key: str) -> bool:
    """Remove every value of ``key`` from the shared config, then its section if that is left
    empty. Returns whether anything was removed."""
    shared = str(common_dir(cwd) / "config")
    proc = run_git(["config", "--file", shared, "--unset-all", "--", key], cwd, check=False)
    if proc.returncode == 5:  # git-config(1): "you try to unset an option which does not exist"
        return False
    if proc.returncode != 0:
        raise LedgitError(f"git config --unset-all {key}: {_last_line(proc.stderr)}", USAGE)
    section = key.rpartition(".")[0]
    first, dot, sub = section.partition(".")
    wanted = f"{first.lower()}{dot}{sub}."  # section names ignore case, subsections do not
    names = run_git(["config", "--file", shared, "-z", "--name-only", "--list"], cwd).stdout
    if not any(os.fsdecode(n).startswith(wanted) for n in names.split(b"\0")):
        run_git(["config", "--file", shared, "--remove-section", "--", section], cwd, check=False)
    return True


def user_name(cwd: Path) -> str | None:
    """``user.name`` from the effective config (global included), the actor of last resort
    (DESIGN §9); None when unset. ``GIT_AUTHOR_NAME`` is deliberately not consulted."""
    return config_get(cwd, "user.name")


def hooks_dir(cwd: Path) -> Path:
    """The directory Git runs hooks from: ``core.hooksPath`` (``~`` expanded; a relative value
    is relative to where hooks run, the work tree top or a bare repo's git dir, githooks(5)),
    else ``<common_dir>/hooks``."""
    paths = _require(cwd)
    value = _config_get(cwd, "core.hooksPath", "--type=path")
    if not value:
        return paths.common_dir / "hooks"
    return _as_path(os.path.normpath(os.path.join(paths.toplevel or paths.git_dir, value)))


# --- worktrees and state -----------------------------------------------------------------------

def list_worktrees(cwd: Path) -> list[Path]:
    """The work trees of the repository, main first (``git worktree list --porcelain``),
    leaving out a bare main repository and prunable entries (their directory is gone)."""
    out = run_git(["worktree", "list", "--porcelain", "-z"], cwd).stdout
    found: list[Path] = []
    path: str | None = None
    skip = False
    for field in [*out.split(b"\0"), b""]:
        if field.startswith(b"worktree "):
            path, skip = os.fsdecode(field[9:]), False
        elif field == b"bare" or field.startswith(b"prunable"):
            skip = True
        elif not field:
            if path is not None and not skip:
                found.append(_work_tree_of(_as_path(path), cwd))
            path = None
    return found


def _work_tree_of(listed: Path, cwd: Path) -> Path:
    """A ``git worktree list`` entry as a work tree: a submodule's main entry is its git dir
    (``.git/modules/NAME``, whose ``core.worktree`` names the checkout; issue 13)."""
    if not (listed / "HEAD").is_file() or (listed / ".git").exists():
        return listed
    proc = run_git(["--git-dir", str(listed), "rev-parse", "--show-toplevel"], cwd, check=False)
    top = os.fsdecode(proc.stdout.rstrip(b"\n"))
    return _as_path(top) if proc.returncode == 0 and top else listed


def head_oid(cwd: Path) -> str | None:
    """The commit HEAD points at (hex), or None on an unborn branch."""
    proc = run_git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd, check=False)
    if proc.returncode == 0:
        return proc.stdout.decode().strip()
    if proc.returncode == 1:
        return None
    raise LedgitError(f"git rev-parse HEAD: {_last_line(proc.stderr)}", USAGE)


def in_progress_operation(cwd: Path) -> str | None:
    """"merge", "rebase", "am", "cherry-pick" or "revert" when this worktree is in the middle
    of one (the state files git-status(1) reads), else None."""
    gd = git_dir(cwd)
    if (gd / "rebase-merge").is_dir():
        return "rebase"
    if (gd / "rebase-apply").is_dir():
        return "am" if (gd / "rebase-apply" / "applying").exists() else "rebase"
    for name, operation in (("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"),
                            ("REVERT_HEAD", "revert")):
        if (gd / name).is_file():
            return operation
    return None


def is_rebase_or_merge_in_progress(cwd: Path) -> bool:
    """Whether a merge or a rebase is stopped in this worktree."""
    return in_progress_operation(cwd) in ("merge", "rebase")


# --- the index ---------------------------------------------------------------------------------

def index_path(cwd: Path, paths: GitPaths | None = None) -> Path:
    """The index file git would use: ``$GIT_INDEX_FILE`` (a relative value is taken from the
    work tree top, where git resolves it and where hooks run) or ``<git_dir>/index``.
    ``paths``: the repository already discovered from ``cwd`` (saves a ``git rev-parse``)."""
    paths = paths or _require(cwd)
    named = os.environ.get("GIT_INDEX_FILE")
    if named:
        return _as_path(os.path.join(paths.toplevel or cwd, named))
    return paths.git_dir / "index"


def staged_files(cwd: Path, prefix: str) -> dict[str, bytes | None]:
    """The paths under ``prefix`` whose index entry differs from HEAD, in path order:
    added or modified -> the staged blob, deleted -> None (``git diff --cached``).

    Reads the index :func:`index_path` names; blobs are read only for the changed entries.
    On an unborn branch every entry is added. Conflicted paths are left out; see
    :func:`conflicted_paths`. Submodules are ignored.
    """
    return {path: staged for path, (_, staged) in staged_pairs(cwd, prefix).items()}


def staged_pairs(cwd: Path, prefix: str) -> dict[str, tuple[bytes | None, bytes | None]]:
    """:func:`staged_files` with HEAD's side: path -> (the blob at HEAD, the staged blob),
    None where there is none (added; deleted). One ``git diff-index --cached --raw``, whose
    raw lines name both blobs, and one ``git cat-file --batch`` for all of them."""
    paths = _require(cwd)
    changes = staged_changes(cwd, prefix, paths=paths)
    blobs = cat_blobs(cwd, list(dict.fromkeys(oid for change in changes.values()
                                              for oid in change if oid is not None)),
                      paths=paths)
    return {path: (None if head is None else blobs[head], None if oid is None else blobs[oid])
            for path, (head, oid) in changes.items()}


def staged_changes(cwd: Path, prefix: str, *,
                   paths: GitPaths | None = None) -> dict[str, StagedChange]:
    """:func:`staged_pairs` without the contents: path -> the blob ids at HEAD and in the
    index (:class:`StagedChange`); one ``git diff-index --cached`` (two more processes on an
    unborn branch, where HEAD's side is always None). ``paths``: the repository already
    discovered from ``cwd``."""
    paths = paths or _require(cwd)
    root = paths.toplevel or paths.git_dir
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd, paths))}
    args = ["--literal-pathspecs", "diff-index", "--cached", "--raw", "-z", "--no-renames",
            "--no-abbrev", "HEAD", *_pathspec(prefix)]
    proc = run_git(args, root, env=env, check=False)
    if proc.returncode != 0 and head_oid(root) is None:
        # unborn: compare with the empty tree (of this repository's hash function)
        empty = run_git(["hash-object", "-t", "tree", "--stdin"], root, input=b"").stdout
        args[args.index("HEAD")] = empty.decode().strip()
        proc = run_git(args, root, env=env, check=False)
    if proc.returncode != 0:
        raise LedgitError(f"git diff-index: {_last_line(proc.stderr)}", USAGE)
    return _diff_index_changes(proc.stdout)


class StagedChange(NamedTuple):
    """One path whose index entry differs from HEAD: the blob ids on either side."""

    head: str | None  # the blob at HEAD; None when HEAD has none there (added, or a submodule)
    staged: str | None  # the blob in the index; None when the index has none (deleted)


def _diff_index_changes(out: bytes) -> dict[str, StagedChange]:
    fields = out.split(b"\0")[:-1]
    changes: dict[str, StagedChange] = {}
    # -z raw records: ":<mode> <mode> <oid> <oid> <status>" NUL <path> NUL (git-diff-index(1))
    for meta, raw_path in zip(fields[0::2], fields[1::2], strict=True):
        old_mode, new_mode, old_oid, new_oid, status = meta.decode()[1:].split(" ")
        if status == "U":
            continue  # unmerged: conflicted_paths
        change = StagedChange(old_oid if _is_blob_mode(int(old_mode, 8)) else None,
                              new_oid if _is_blob_mode(int(new_mode, 8)) else None)
        if change != (None, None):  # a submodule on both sides is no file
            changes[os.fsdecode(raw_path)] = change
    return changes


class StagedReader:
    """The pre-commit hook's two questions, asked as a hook of this repository asks them:
    ``git diff-index --cached --raw -z HEAD -- PATHSPEC`` and one ``git cat-file --batch``,
    run in ``cwd`` (the work tree top, where Git runs hooks) with the environment Git gave
    the hook (``GIT_INDEX_FILE``, ``GIT_DIR``...: the same repository, so nothing is stripped)
    and no discovery. ``PATHSPEC`` is relative to ``cwd``.

    Both processes start when the reader is made, so that they run while the hook imports
    its checks; :meth:`close` (or leaving a ``with`` block) ends whichever still runs, so
    neither outlives the hook. Raises OSError when ``git`` cannot be started.
    """

    def __init__(self, cwd: str, pathspec: str) -> None:
        args = ["git", "--literal-pathspecs", "diff-index", "--cached", "--raw", "-z",
                "--no-renames", "--no-abbrev", "HEAD", "--", pathspec]
        pipe = subprocess.PIPE
        self._diff = subprocess.Popen(args, cwd=cwd, stdin=subprocess.DEVNULL, stdout=pipe,
                                      stderr=pipe)
        try:
            self._cat = subprocess.Popen(["git", "cat-file", "--batch"], cwd=cwd, stdin=pipe,
                                         stdout=pipe, stderr=pipe)
        except OSError:
            self._end(self._diff)
            raise

    def changes(self) -> dict[str, StagedChange] | None:
        """Repository path -> the blob ids at HEAD and in the index (:class:`StagedChange`),
        both named by the raw diff (git-diff-index(1) "RAW OUTPUT FORMAT"), so HEAD's side
        needs no tree walk; unmerged paths left out. None where git cannot answer so (an
        unborn branch, a pathspec outside the work tree): then :func:`staged_changes`
        answers."""
        out, _ = self._diff.communicate()
        return _diff_index_changes(out) if self._diff.returncode == 0 else None

    def blobs(self, names: Sequence[str]) -> dict[str, bytes | None]:
        """name -> content for ``names`` (blob ids, or ``:path`` for a path's entry in the
        index Git gave the hook), None where no blob has that name; asked once, of the one
        ``git cat-file --batch``. Raises LedgitError (2) when git fails."""
        if any("\n" in name for name in names):
            raise LedgitError("git cat-file: an object name holds a newline", USAGE)
        out, err = self._cat.communicate("".join(f"{name}\n" for name in names).encode())
        if self._cat.returncode != 0:
            raise LedgitError(f"git cat-file --batch: {_last_line(err)}", USAGE)
        return _batch_contents(out, names)

    def close(self) -> None:
        """End both processes (a process still running is killed: it only reads)."""
        self._end(self._cat)
        self._end(self._diff)

    @staticmethod
    def _end(proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.kill()
        with proc:  # closes the pipes, waits
            pass

    def __enter__(self) -> StagedReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def conflicted_paths(cwd: Path, prefix: str) -> list[str]:
    """The unmerged paths under ``prefix`` (index stages 1-3), sorted (``git ls-files -u``)."""
    return sorted({path for path, _, _ in _ls_files_unmerged(cwd, prefix)})


def conflict_stages(cwd: Path, path: str) -> tuple[bytes | None, bytes | None, bytes | None]:
    """The blobs of ``path`` at index stages 1 (base), 2 (ours) and 3 (theirs); a side that is
    absent (added on both sides, deleted on one) is None, and so are all three when ``path``
    is not in conflict (gitrevisions(7) ``:1:path``)."""
    paths = _require(cwd)
    oids: list[str | None] = [None, None, None]
    for entry_path, stage, oid in _ls_files_unmerged(cwd, path):
        if entry_path == path:
            oids[stage - 1] = oid
    blobs = _read_blobs(_open_repo(paths), paths, [oid for oid in oids if oid is not None])
    base, ours, theirs = (None if oid is None else blobs[oid] for oid in oids)
    return base, ours, theirs


def _under(path: str, prefix: str) -> bool:
    top = prefix.strip("/")
    return not top or path == top or path.startswith(top + "/")


def _pathspec(prefix: str) -> list[str]:
    # used with --literal-pathspecs and cwd at the top, so the prefix means itself
    top = prefix.strip("/")
    return ["--", top] if top else []


def _is_blob_mode(mode: int) -> bool:
    # a file or a symlink; not absent (0) and not a submodule
    return mode not in (0, _GITLINK)


def _git_order(item: tuple[str, object]) -> bytes:
    return os.fsencode(item[0])


def _ls_files_unmerged(cwd: Path, prefix: str) -> list[tuple[str, int, str]]:
    paths = _require(cwd)
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd, paths))}
    args = ["--literal-pathspecs", "ls-files", "-u", "-z", *_pathspec(prefix)]
    out = run_git(args, paths.toplevel or paths.git_dir, env=env).stdout
    entries = []
    for record in filter(None, out.split(b"\0")):
        meta, _, raw_path = record.partition(b"\t")
        _, oid, stage = meta.decode().split(" ")
        entries.append((os.fsdecode(raw_path), int(stage), oid))
    return entries


# --- objects -----------------------------------------------------------------------------------

def tree_files(cwd: Path, rev: str, prefix: str) -> dict[str, bytes]:
    """Every blob under ``prefix`` at revision ``rev`` (any tree-ish), in path order; empty
    when ``prefix`` does not exist there. A bad ``rev`` raises LedgitError (code 2)."""
    paths = _require(cwd)
    repo = _open_repo(paths)
    if repo is not None:
        return _tree_files_pygit2(repo, rev, prefix)
    tree = _resolve_cli(cwd, rev, "tree")
    entries = _ls_tree(cwd, tree, prefix)
    blobs = _read_blobs(None, paths, list(entries.values()))
    return {path: blobs[oid] for path, oid in entries.items()}


def blob_at(cwd: Path, rev: str, path: str) -> bytes | None:
    """The content of ``path`` at revision ``rev``, or None when no blob is there
    (gitrevisions(7) ``REV:PATH``). A bad ``rev`` raises LedgitError (code 2)."""
    paths = _require(cwd)
    repo = _open_repo(paths)
    if repo is not None:

        try:
            obj = _tree_pygit2(repo, rev)[path.strip("/")]
        except KeyError:
            return None
        return obj.data if isinstance(obj, pygit2.Blob) else None
    found = _ls_tree(cwd, _resolve_cli(cwd, rev, "tree"), path, recursive=False)
    oid = found.get(path.strip("/"))
    return None if oid is None else _read_blobs(None, paths, [oid])[oid]


def changed_paths(cwd: Path, rev: str, prefix: str) -> list[str]:
    """The paths under ``prefix`` that commit ``rev`` changes against its first parent (every
    path of a root commit), sorted; a rename counts as a deletion and an addition."""
    paths = _require(cwd)
    repo = _open_repo(paths)
    if repo is not None:
        commit = _commit_pygit2(repo, rev)
        if commit.parents:
            diff = commit.parents[0].tree.diff_to_tree(commit.tree)
        else:
            diff = commit.tree.diff_to_tree(swap=True)
        found = {os.fsdecode(d.new_file.raw_path or d.old_file.raw_path) for d in diff.deltas}
        return sorted((p for p in found if _under(p, prefix)), key=os.fsencode)
    oid = _resolve_cli(cwd, rev, "commit")
    args = ["--literal-pathspecs", "diff-tree", "-r", "-z", "--name-only", "--no-renames",
            "--no-commit-id", "--root", "--diff-merges=first-parent", oid, *_pathspec(prefix)]
    out = run_git(args, _root(cwd)).stdout
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p}, key=os.fsencode)


def rev_list(cwd: Path, spec: str) -> list[str]:
    """The commits of ``A..B`` (reachable from B, not from A; an empty side is HEAD), parents
    before children, oldest first (``git rev-list --reverse --topo-order``); a single
    revision gives just that commit. A bad revision raises LedgitError (code 2) naming it."""
    if "..." in spec:
        raise LedgitError(f"{spec}: symmetric ranges are not supported; use A..B", USAGE)
    if ".." not in spec:
        return [_resolve_cli(cwd, spec, "commit")]
    start, _, end = spec.partition("..")
    exclude = _resolve_cli(cwd, start or "HEAD", "commit")
    include = _resolve_cli(cwd, end or "HEAD", "commit")
    out = run_git(["rev-list", "--reverse", "--topo-order", include, f"^{exclude}"],
                  _root(cwd)).stdout
    return out.decode().split()


def _resolve_cli(cwd: Path, rev: str, kind: str) -> str:
    if not rev.startswith("-"):  # never let a revision be read as an option
        proc = run_git(["rev-parse", "-q", "--verify", f"{rev}^{{{kind}}}"], cwd, check=False)
        if proc.returncode == 0:
            return proc.stdout.decode().strip()
    raise LedgitError(f"{rev}: not a valid {kind} name", USAGE)


def _commit_pygit2(repo: pygit2.Repository, rev: str) -> pygit2.Commit:

    try:
        return repo.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        raise LedgitError(f"{rev}: not a valid commit name", USAGE) from None


def _tree_pygit2(repo: pygit2.Repository, rev: str) -> pygit2.Tree:

    try:
        return repo.revparse_single(rev).peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError):
        raise LedgitError(f"{rev}: not a valid tree name", USAGE) from None


def _tree_files_pygit2(repo: pygit2.Repository, rev: str, prefix: str) -> dict[str, bytes]:

    top = prefix.strip("/")
    tree = _tree_pygit2(repo, rev)
    try:
        node = tree[top] if top else tree
    except KeyError:
        return {}
    if isinstance(node, pygit2.Blob):
        return {top: node.data}
    found: dict[str, bytes] = {}
    stack = [(node, f"{top}/" if top else "")]
    while stack:
        current, base = stack.pop()
        for entry in current:
            name = base + os.fsdecode(entry.raw_name or b"")
            if isinstance(entry, pygit2.Tree):
                stack.append((entry, name + "/"))
            elif isinstance(entry, pygit2.Blob):
                found[name] = entry.data
    return dict(sorted(found.items(), key=_git_order))


def _ls_tree(cwd: Path, tree: str, prefix: str, *, recursive: bool = True) -> dict[str, str]:
    args = ["--literal-pathspecs", "ls-tree", "-z", *(["-r"] if recursive else []), tree,
            *_pathspec(prefix)]
    entries: dict[str, str] = {}
    for record in filter(None, run_git(args, _root(cwd)).stdout.split(b"\0")):
        meta, _, raw_path = record.partition(b"\t")
        _, kind, oid = meta.decode().split(" ")
        if kind == "blob":
            entries[os.fsdecode(raw_path)] = oid
    return entries


def _read_blobs(repo: pygit2.Repository | None, paths: GitPaths,
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
    paths = paths or _require(cwd)
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
    return _batch_contents(out, names)


def _batch_contents(out: bytes, names: Sequence[str]) -> dict[str, bytes | None]:
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


def _open_repo(paths: GitPaths) -> pygit2.Repository | None:
    """pygit2's view of the repository, or None when the git CLI must answer instead."""
    if not _use_pygit2:
        return None

    try:
        repo = pygit2.Repository(str(paths.toplevel or paths.git_dir))
    except pygit2.GitError as err:  # reftable, partial clone, sha256...
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


# --- revisions of other repositories (ledgit.operations.projects) ----------------------------------------

def resolve_commit(cwd: Path, rev: str) -> str:
    """The full commit id ``rev`` names in the repository at ``cwd``; LedgitError exit 2
    when it names none."""
    return _resolve_cli(cwd, rev, "commit")


# --- growth: what the hooks and the gate compare (DESIGN §8, "A history only grows") ----------
# git CLI only (argv lists): one process per question, whatever the repository's layout.

BOARD_GLOBS = (":(glob).ledgit/**", ":(glob)**/.ledgit/**")  # every board's files


def staged_board_paths(cwd: Path) -> list[str]:
    """Paths under any ``.ledgit/`` whose index entry differs from HEAD (the empty tree on an
    unborn branch), unmerged ones included: ``git diff-index --cached --name-only``."""
    return index_diff_paths(cwd, head_oid(cwd) or _empty_tree(cwd))


def index_diff_paths(cwd: Path, rev: str) -> list[str]:
    """Paths under any ``.ledgit/`` whose entry in the index (:func:`index_path`) differs from
    commit ``rev``, sorted (git-diff-index(1) ``--cached``; a rename is a deletion plus an
    addition). A bad ``rev`` raises LedgitError (code 2)."""
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd))}
    out = run_git(["diff-index", "--cached", "--name-only", "-z", "--no-renames", rev, "--",
                   *BOARD_GLOBS], _root(cwd), env=env).stdout
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p}, key=os.fsencode)


def tree_diff_paths(cwd: Path, old: str, new: str) -> list[str]:
    """Paths under any ``.ledgit/`` that differ between commits ``old`` and ``new``, sorted
    (``git diff-tree -r --name-only --no-renames OLD NEW``). Works in a bare repository."""
    out = run_git(["diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new, "--",
                   *BOARD_GLOBS], _root(cwd)).stdout
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p}, key=os.fsencode)


def board_paths_at(cwd: Path, rev: str) -> list[str]:
    """Every path under any ``.ledgit/`` in the tree of ``rev`` (``git ls-tree -r``, which
    takes no glob pathspec, so the listing is filtered here)."""
    out = run_git(["ls-tree", "-r", "-z", "--name-only", "--full-tree", rev], _root(cwd)).stdout
    return [path for path in map(os.fsdecode, out.split(b"\0"))
            if path.startswith(".ledgit/") or "/.ledgit/" in path]


def blobs_at(cwd: Path, rev: str | None, paths: Sequence[str]) -> dict[str, bytes | None]:
    """path -> the blob at ``rev:path`` (``rev`` None: the index's stage-0 entry, ``:path``),
    None where there is none; one ``git cat-file --batch`` for all (gitrevisions(7))."""
    if not paths:
        return {}
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd))} if rev is None else None
    names = [f"{rev or ''}:{p}" for p in paths]
    out = run_git(["cat-file", "--batch"], _root(cwd), env=env,
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
    out = run_git(["rev-list", "--no-walk=unsorted", "--parents", "--stdin"], _root(cwd),
                  input="\n".join(commits).encode() + b"\n").stdout.decode()
    return {ids[0]: ids[1:] for ids in (line.split() for line in out.splitlines()) if ids}


def operation_heads(cwd: Path) -> dict[str, list[str]]:
    """The commits an operation stopped in this worktree brings into the next commit:
    ``{"merge": [MERGE_HEAD lines...]}``, ``{"cherry-pick": [CHERRY_PICK_HEAD]}``,
    ``{"revert": [REVERT_HEAD]}``, ``{"rebase": [REBASE_HEAD]}`` (git-merge(1),
    git-cherry-pick(1), git-rebase(1)); empty when none is."""
    gd = git_dir(cwd)
    found: dict[str, list[str]] = {}
    rebasing = (gd / "rebase-merge").is_dir() or (gd / "rebase-apply").is_dir()
    for name, operation in (("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"),
                            ("REVERT_HEAD", "revert"), ("REBASE_HEAD", "rebase")):
        try:
            text = (gd / name).read_text(encoding="ascii", errors="replace")
        except OSError:
            continue
        oids = [line.strip() for line in text.splitlines() if line.strip()]
        if oids and (operation != "rebase" or rebasing):
            found[operation] = oids
    return found


def operation_pending(git_dir: str) -> bool:
    """Whether a merge, cherry-pick, revert or rebase is stopped in the worktree whose git dir
    is ``git_dir`` (the state files git-status(1) reads), from the file system alone: the next
    commit then takes from more than HEAD. REBASE_HEAD alone is no sign: Git leaves it behind
    when a rebase ends."""
    return any(os.path.exists(os.path.join(git_dir, name)) for name in (
        "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply"))


def merging_heads() -> list[str]:
    """The commits ``git merge`` is merging while it runs ``pre-merge-commit``, before it has
    written MERGE_HEAD, sorted: git-merge exports ``GITHEAD_<oid>=<name>`` for each (the labels
    it gives merge strategies and drivers, builtin/merge.c); empty outside such a merge."""
    return sorted(k[8:] for k in os.environ
                  if k.startswith("GITHEAD_") and len(k) in (48, 72)
                  and all(c in "0123456789abcdef" for c in k[8:]))


def _empty_tree(cwd: Path) -> str:
    return run_git(["hash-object", "-t", "tree", "--stdin"], _root(cwd),
                   input=b"").stdout.decode().strip()


class TreeReader:
    """Blobs and tree diffs of one repository opened once, for the gate's walk over many
    commits: pygit2's public API, or the git CLI where pygit2 refuses the repository."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.repo = _open_repo(_require(cwd))
        self._trees: dict[str, pygit2.Tree] = {}
        self._blobs: dict[tuple[str, str], bytes | None] = {}  # the gate asks some twice

    def _tree(self, rev: str) -> pygit2.Tree:
        tree = self._trees.get(rev)
        if tree is None:
            assert self.repo is not None
            tree = self._trees[rev] = _tree_pygit2(self.repo, rev)
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
            data = obj.data if isinstance(obj, pygit2.Blob) else None
        self._blobs[key] = data
        return data

    def diff_paths(self, old: str, new: str) -> list[str]:
        """:func:`tree_diff_paths`: the board paths that differ between two commits."""
        if self.repo is None:
            return tree_diff_paths(self.cwd, old, new)
        diff = self._tree(old).diff_to_tree(self._tree(new))
        found = {os.fsdecode(d.new_file.raw_path or d.old_file.raw_path) for d in diff.deltas}
        return sorted((p for p in found if p.startswith(".ledgit/") or "/.ledgit/" in p),
                      key=os.fsencode)
