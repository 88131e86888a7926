"""Every question ledgit asks of Git, one small function each (DESIGN §2, §8).

Three ways of asking, cheapest first (measured on a small repository, warm cache):

* the file system, ~50-90 us: discovery (``.git`` directories, ``gitdir:`` files,
  ``commondir``), per-worktree paths, in-progress operations. A layout the walk does not model
  (``core.worktree``, ``core.bare``, ceiling directories, a foreign owner) is handed to
  ``git rev-parse`` instead, so the answer is always Git's. The walk, and the object reading
  :func:`staged_files` does first, live in :mod:`ledgit.gitfs`, which the pre-commit hook
  uses without this module (no pathlib, no subprocess).
* the ``git`` CLI, ~1.2 ms a process: config, worktrees, ranges, HEAD.
* pygit2 for the index and objects: one process, no subprocess per blob, but ~40 ms to import,
  so it is imported by the readers only. Where pygit2 refuses the repository or its index
  (reftable, partial clone, SHA-256, split or sparse index), the CLI answers instead
  (``git cat-file --batch``: still one process for all the blobs) after a note on stderr.

The repository is always the one containing ``cwd``. The ``GIT_DIR``, ``GIT_WORK_TREE``,
``GIT_INDEX_FILE``... that Git exports to hooks are stripped from every child (:func:`no_git_env`);
only the index readers honour ``GIT_INDEX_FILE``, on purpose (pre-commit, DESIGN §8).
Paths inside the repository are repo-relative POSIX ``str``; paths on disk are absolute ``Path``.
The CLI paths need git >= 2.36.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ledgit import gitfs
from ledgit.errors import USAGE, LedgitError

if TYPE_CHECKING:
    import subprocess

    import pygit2

_REPO_ENV = gitfs.REPO_ENV  # what Git clears before it works in another repository
# First components of `git rev-parse --git-path` names that Git maps somewhere special
# (path.c common_list and adjust_git_path); every other name lives in the per-worktree git dir.
_GIT_PATH_SPECIAL = (
    "branches", "common", "config", "gc.", "hooks", "index", "info", "logs", "lost-found",
    "objects", "packed-refs", "refs", "reftable", "remotes", "rr-cache", "shallow",
    "sharedindex.", "svn", "worktrees",
)
_GITLINK = 0o160000
_use_pygit2 = True  # tests switch this off to run the CLI fallback on ordinary repositories
_use_fs = True  # likewise for ledgit.gitfs (staged_files)
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
    return {k: v for k, v in source.items() if k not in _REPO_ENV}


def run_git(args: Sequence[str], cwd: Path, *, env: Mapping[str, str] | None = None,
            check: bool = True, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``git ARGS`` in ``cwd`` with stdout/stderr captured as bytes.

    ``env`` defaults to :func:`no_git_env`. With ``check``, a non-zero exit raises
    LedgitError (code 2) quoting git's last stderr line; a missing ``git`` always does.
    """
    import subprocess  # here, not at the top: discovery alone never needs it (~7 ms)

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


# --- discovery ---------------------------------------------------------------------------------

_Unusual = gitfs.Unusual  # the file-system walk met a layout it does not model: ask git


def discover(cwd: Path) -> GitPaths | None:
    """The repository containing ``cwd``, or None outside any: Git's upward search for a
    ``.git`` (directory or ``gitdir:`` file) or a git directory, stopping at mount points.

    Raises LedgitError when Git refuses the repository (e.g. "detected dubious ownership").
    """
    try:
        return _discover_fs(Path(cwd))
    except _Unusual:
        return _discover_cli(Path(cwd))


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
        return Path(os.fsdecode(out.rstrip(b"\n")))
    return paths.git_dir.joinpath(*parts)


def _require(cwd: Path) -> GitPaths:
    paths = discover(cwd)
    if paths is None:
        raise LedgitError(f"not a git repository: {cwd}", USAGE)
    return paths


def _discover_fs(cwd: Path) -> GitPaths | None:
    found = gitfs.discover(str(cwd))
    if found is None:
        return None
    top = None if found.toplevel is None else Path(found.toplevel)
    return GitPaths(Path(found.git_dir), Path(found.common_dir), top)


def _discover_cli(cwd: Path) -> GitPaths | None:
    args = ["rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir",
            "--is-inside-work-tree"]
    proc = run_git(args, cwd, env=_c_locale(), check=False)
    if proc.returncode != 0:
        if b"not a git repository" in proc.stderr:
            return None
        raise LedgitError(f"git: {_last_line(proc.stderr)}", USAGE)
    gitdir, common, inside = os.fsdecode(proc.stdout).splitlines()[:3]
    top = None
    if inside == "true":
        out = run_git(["rev-parse", "--show-toplevel"], cwd).stdout
        top = Path(os.fsdecode(out.rstrip(b"\n")))
    return GitPaths(Path(os.path.realpath(gitdir)), Path(os.path.realpath(common)), top)


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
    (DESIGN §9); None when unset. ``GIT_AUTHOR_NAME`` is deliberately not consulted.

    Read from the config files themselves when the answer is certain (a write must not pay
    for a ``git`` process, DESIGN §10), else ``git config --get``."""
    try:
        name = _user_name_from_files(Path(cwd))
    except _Unusual:
        name = None
    return name if name is not None else config_get(cwd, "user.name")


def _user_name_from_files(cwd: Path) -> str | None:
    """``user.name`` from the first file that sets it, in Git's precedence: the repository's
    ``config``, ``~/.gitconfig``, ``$XDG_CONFIG_HOME/git/config`` (the system file, read
    last, is left to git: None). Raises _Unusual for what this does not model: ``GIT_CONFIG*``
    variables (``git -c``, other files), a ``config.worktree``, includes, quoting, escapes,
    continuation lines, a repository git would refuse or find differently."""
    if any(k.startswith("GIT_CONFIG") for k in os.environ):
        raise _Unusual
    home = os.environ.get("HOME")
    if not home:
        raise _Unusual
    files: list[str] = []
    paths = _discover_fs(cwd)
    if paths is not None:
        if os.path.lexists(paths.git_dir / "config.worktree"):
            raise _Unusual
        files.append(str(paths.common_dir / "config"))
    files.append(os.path.join(home, ".gitconfig"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files.append(os.path.join(xdg, "git", "config"))
    for path in files:
        value = _plain_user_name(path)
        if value is not None:
            return value
    return None


def _plain_user_name(path: str) -> str | None:
    """The last ``[user] name = VALUE`` of one config file (None when absent); _Unusual for
    any line whose meaning git's parser might take differently."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        raise _Unusual from None
    found: bytes | None = None
    section = b""
    for raw in data.splitlines():
        line = raw.strip()
        if not line or line.startswith((b"#", b";")):
            continue
        if raw.rstrip().endswith(b"\\"):
            raise _Unusual  # a continuation line
        if line.startswith(b"["):
            head = line[1:-1]
            if not line.endswith(b"]") or head != head.strip() or b"]" in head:
                raise _Unusual  # a key after the header, a comment, odd spacing
            section = head.lower()
            if section.startswith(b"include"):
                raise _Unusual  # include / includeIf
            continue
        if section != b"user":
            continue
        key, eq, value = line.partition(b"=")
        if key.strip().lower() != b"name":
            continue
        value = value.strip()
        if not eq or any(c in value for c in (b'"', b"\\", b"#", b";")):
            raise _Unusual  # a valueless key, quoting, escapes, a trailing comment
        found = value
    return None if found is None else os.fsdecode(found)


def hooks_dir(cwd: Path) -> Path:
    """The directory Git runs hooks from: ``core.hooksPath`` (``~`` expanded; a relative value
    is relative to where hooks run, the work tree top or a bare repo's git dir, githooks(5)),
    else ``<common_dir>/hooks``."""
    paths = _require(cwd)
    value = _config_get(cwd, "core.hooksPath", "--type=path")
    if not value:
        return paths.common_dir / "hooks"
    return Path(os.path.normpath(os.path.join(paths.toplevel or paths.git_dir, value)))


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
                found.append(_work_tree_of(Path(path), cwd))
            path = None
    return found


def _work_tree_of(listed: Path, cwd: Path) -> Path:
    """A ``git worktree list`` entry as a work tree: a submodule's main entry is its git dir
    (``.git/modules/NAME``, whose ``core.worktree`` names the checkout; issue 13)."""
    if not (listed / "HEAD").is_file() or (listed / ".git").exists():
        return listed
    proc = run_git(["--git-dir", str(listed), "rev-parse", "--show-toplevel"], cwd, check=False)
    top = os.fsdecode(proc.stdout.rstrip(b"\n"))
    return Path(top) if proc.returncode == 0 and top else listed


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

def index_path(cwd: Path) -> Path:
    """The index file git would use: ``$GIT_INDEX_FILE`` (a relative value is taken from the
    work tree top, where git resolves it and where hooks run) or ``<git_dir>/index``."""
    paths = _require(cwd)
    repo = gitfs.Repo(str(paths.git_dir), str(paths.common_dir),
                      None if paths.toplevel is None else str(paths.toplevel))
    return Path(gitfs.index_file(repo, str(cwd)))


class _IndexChanges(NamedTuple):
    staged: dict[str, str | None]  # path -> blob oid in the index, None if deleted
    conflicted: list[str]


def staged_files(cwd: Path, prefix: str) -> dict[str, bytes | None]:
    """The paths under ``prefix`` whose index entry differs from HEAD, in path order:
    added or modified -> the staged blob, deleted -> None (``git diff --cached``).

    Reads the index :func:`index_path` names; blobs are read only for the changed entries.
    On an unborn branch every entry is added. Conflicted paths are left out; see
    :func:`conflicted_paths`. Submodules are ignored.
    """
    # Measured: a fresh process pays ~40 ms to import pygit2 and libgit2 checksums the whole
    # index on open, while `git diff-index --cached` + one `git cat-file --batch` cost ~8 ms
    # (200 files) and ~23 ms (120k entries). ledgit.gitfs runs the same diff-index and reads
    # the blobs from the object files (no second process); the CLI path below answers
    # whatever gitfs does not model.
    paths = _require(cwd)
    if _use_fs:
        try:
            repo = gitfs.Repo(str(paths.git_dir), str(paths.common_dir),
                              None if paths.toplevel is None else str(paths.toplevel))
            found = gitfs.staged(repo, gitfs.index_file(repo, str(cwd)), prefix)
            return {os.fsdecode(c.path): None if c.oid is None else found.blob(c.oid)
                    for c in found.changes}
        except gitfs.Unusual:
            pass
    changes = _index_changes_cli(cwd, prefix)
    oids = [oid for oid in changes.staged.values() if oid is not None]
    blobs = _read_blobs(None, paths, oids)
    return {path: None if oid is None else blobs[oid] for path, oid in changes.staged.items()}


def conflicted_paths(cwd: Path, prefix: str) -> list[str]:
    """The unmerged paths under ``prefix`` (index stages 1-3), sorted."""
    paths = _require(cwd)
    repo = _open_repo(paths)
    if repo is not None:
        index = _open_index(paths, cwd)
        if index is not None:
            return sorted({p for p, _ in _conflict_entries(index) if _under(p, prefix)})
    out = _ls_files_unmerged(cwd, prefix)
    return sorted({path for path, _, _ in out})


def conflict_stages(cwd: Path, path: str) -> tuple[bytes | None, bytes | None, bytes | None]:
    """The blobs of ``path`` at index stages 1 (base), 2 (ours) and 3 (theirs); a side that is
    absent (added on both sides, deleted on one) is None, and so are all three when ``path``
    is not in conflict (gitrevisions(7) ``:1:path``)."""
    paths = _require(cwd)
    repo = _open_repo(paths)
    oids: list[str | None] = [None, None, None]
    index = _open_index(paths, cwd) if repo is not None else None
    if index is not None:
        for entry_path, stages in _conflict_entries(index):
            if entry_path == path:
                oids = stages
    else:
        for entry_path, stage, oid in _ls_files_unmerged(cwd, path):
            if entry_path == path:
                oids[stage - 1] = oid
    blobs = _read_blobs(repo, paths, [oid for oid in oids if oid is not None])
    base, ours, theirs = (None if oid is None else blobs[oid] for oid in oids)
    return base, ours, theirs


def _under(path: str, prefix: str) -> bool:
    top = prefix.strip("/")
    return not top or path == top or path.startswith(top + "/")


def _pathspec(prefix: str) -> list[str]:
    # used with --literal-pathspecs and cwd at the top, so the prefix means itself
    top = prefix.strip("/")
    return ["--", top] if top else []


def _open_index(paths: GitPaths, cwd: Path) -> pygit2.Index | None:
    import pygit2

    index = pygit2.Index.__new__(pygit2.Index)
    # pygit2's Index.__del__ frees `_index`, which a failing __init__ never sets: without this
    # a refused index prints "Exception ignored in: Index.__del__" (freeing NULL is a no-op)
    setattr(index, "_index", pygit2.ffi.NULL)  # noqa: B010
    try:
        index.__init__(str(index_path(cwd)))  # type: ignore[misc]
        return index
    except pygit2.GitError as err:  # split index, sparse index, a newer format...
        _note(paths.git_dir, f"pygit2 cannot read the index ({err})")
        return None


def _conflict_entries(index: pygit2.Index) -> Iterable[tuple[str, list[str | None]]]:
    for sides in index.conflicts or ():
        path = next(e.path for e in sides if e is not None)
        yield str(path), [None if e is None else str(e.id) for e in sides]


def _is_blob_mode(mode: int) -> bool:
    # a file or a symlink; not absent (0) and not a submodule
    return mode not in (0, _GITLINK)


def _git_order(item: tuple[str, object]) -> bytes:
    return os.fsencode(item[0])


def _index_changes_cli(cwd: Path, prefix: str) -> _IndexChanges:
    root = _root(cwd)
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd))}
    args = ["--literal-pathspecs", "diff-index", "--cached", "--raw", "-z", "--no-renames",
            "--no-abbrev", "HEAD", *_pathspec(prefix)]
    proc = run_git(args, root, env=env, check=False)
    if proc.returncode != 0 and head_oid(cwd) is None:
        # unborn: compare with the empty tree (of this repository's hash function)
        empty = run_git(["hash-object", "-t", "tree", "--stdin"], root, input=b"").stdout
        args[args.index("HEAD")] = empty.decode().strip()
        proc = run_git(args, root, env=env, check=False)
    if proc.returncode != 0:
        raise LedgitError(f"git diff-index: {_last_line(proc.stderr)}", USAGE)
    fields = proc.stdout.split(b"\0")[:-1]
    staged: dict[str, str | None] = {}
    conflicted: list[str] = []
    # -z raw records: ":<mode> <mode> <oid> <oid> <status>" NUL <path> NUL (git-diff-index(1))
    for meta, raw_path in zip(fields[0::2], fields[1::2], strict=True):
        old_mode, new_mode, _, new_oid, status = meta.decode()[1:].split(" ")
        path = os.fsdecode(raw_path)
        if status == "U":
            conflicted.append(path)
        elif _is_blob_mode(int(new_mode, 8)):
            staged[path] = new_oid
        elif _is_blob_mode(int(old_mode, 8)):
            staged[path] = None
    return _IndexChanges(staged, sorted(set(conflicted)))


def _ls_files_unmerged(cwd: Path, prefix: str) -> list[tuple[str, int, str]]:
    env = {**no_git_env(), "GIT_INDEX_FILE": str(index_path(cwd))}
    args = ["--literal-pathspecs", "ls-files", "-u", "-z", *_pathspec(prefix)]
    out = run_git(args, _root(cwd), env=env).stdout
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
        import pygit2

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
    import pygit2

    try:
        return repo.revparse_single(rev).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        raise LedgitError(f"{rev}: not a valid commit name", USAGE) from None


def _tree_pygit2(repo: pygit2.Repository, rev: str) -> pygit2.Tree:
    import pygit2

    try:
        return repo.revparse_single(rev).peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError):
        raise LedgitError(f"{rev}: not a valid tree name", USAGE) from None


def _tree_files_pygit2(repo: pygit2.Repository, rev: str, prefix: str) -> dict[str, bytes]:
    import pygit2

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
    """oid -> content, in one process either way."""
    if not oids:
        return {}
    if repo is not None:
        return {oid: repo[oid].read_raw() for oid in oids}
    root = paths.toplevel or paths.git_dir
    out = run_git(["cat-file", "--batch"], root, input="\n".join(oids).encode() + b"\n").stdout
    blobs: dict[str, bytes] = {}
    pos = 0
    for oid in oids:  # "<oid> <type> <size>\n<content>\n" per request (git-cat-file(1))
        end = out.index(b"\n", pos)
        header = out[pos:end].split(b" ")
        if len(header) != 3:
            raise LedgitError(f"git cat-file: {oid}: {out[pos:end].decode()}", USAGE)
        size = int(header[2])
        blobs[oid] = out[end + 1:end + 1 + size]
        pos = end + 2 + size
    return blobs


def _open_repo(paths: GitPaths) -> pygit2.Repository | None:
    """pygit2's view of the repository, or None when the git CLI must answer instead."""
    if not _use_pygit2:
        return None
    import pygit2

    try:
        return pygit2.Repository(str(paths.toplevel or paths.git_dir))
    except pygit2.GitError as err:  # reftable, partial clone, sha256...
        _note(paths.git_dir, f"pygit2 cannot open the repository ({err})")
        return None


def _note(where: Path, why: str) -> None:
    if where not in _noted:
        _noted.add(where)
        print(f"ledgit: note: {where}: {why}; asking the git CLI instead", file=sys.stderr)
