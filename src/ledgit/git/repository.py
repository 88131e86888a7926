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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ledgit.core.errors import USAGE, LedgitError

if TYPE_CHECKING:
    import subprocess
    from pathlib import Path

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
GITLINK = 0o160000
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
    # Every get, list and search that asks Git nothing skips it (bench/run.py: each CLI
    # command >= 3x faster than the fastest peer at 1,000 tasks).
    import subprocess  # lazy: 3.8 ms (-X importtime), 3 ms of a get (bench/run.py)

    argv = ["git", *args]
    try:
        proc = subprocess.run(argv, cwd=cwd, env=no_git_env() if env is None else dict(env),
                              input=input, capture_output=True, check=False)
    except OSError as err:
        if not os.path.isdir(cwd):
            raise LedgitError(f"{cwd}: not a directory", USAGE) from err
        raise LedgitError(f"cannot run git: {err}", USAGE) from err
    if check and proc.returncode != 0:
        raise LedgitError(f"git {' '.join(args)}: {last_line(proc.stderr)}", USAGE)
    return proc


def last_line(stderr: bytes) -> str:
    lines = os.fsdecode(stderr).strip().splitlines()
    for n, line in enumerate(lines):
        # Git's refusal of a repository another user owns (safe.directory, git-config(1))
        # ends in an indented hint; the message is its "fatal:" line (issue 13).
        if "dubious ownership" in line:
            hint = next((h.strip() for h in lines[n + 1:] if "safe.directory" in h), None)
            return line.strip() + (f"; fix: {hint}" if hint else "")
    return lines[-1] if lines else "failed"


def c_locale() -> dict[str, str]:
    # for the few places that read git's messages
    return {**no_git_env(), "LC_ALL": "C", "LANGUAGE": ""}


def as_path(text: str) -> Path:
    """``text`` as a :class:`pathlib.Path`: what the discovery functions answer."""
    # The pre-commit hook asks Git no question whose answer is a path (bench/run.py: the hook
    # within 10% of before issue 23): pathlib, with urllib.parse and ipaddress, waits for one.
    from pathlib import Path  # lazy: 3.9 ms (-X importtime), 5 ms of the hook (bench/run.py)

    return Path(text)


# --- discovery ---------------------------------------------------------------------------------

def discover(cwd: Path) -> GitPaths | None:
    """The repository containing ``cwd``, or None outside any (``git rev-parse``: Git's own
    upward search, ``core.worktree``, ``core.bare``, ceiling directories and all).

    Raises LedgitError when Git refuses the repository (e.g. "detected dubious ownership").
    """
    args = ["rev-parse", "--path-format=absolute", "--absolute-git-dir", "--git-common-dir",
            "--is-inside-work-tree", "--show-cdup"]
    proc = run_git(args, cwd, env=c_locale(), check=False)
    if proc.returncode != 0:
        if b"not a git repository" in proc.stderr:
            return None
        raise LedgitError(f"git: {last_line(proc.stderr)}", USAGE)
    lines = [*os.fsdecode(proc.stdout).splitlines(), ""]
    gitdir, common, inside, cdup = lines[:4]
    top = as_path(os.path.realpath(os.path.join(cwd, cdup))) if inside == "true" else None
    return GitPaths(as_path(os.path.realpath(gitdir)), as_path(os.path.realpath(common)), top)


def toplevel(cwd: Path) -> Path | None:
    """The work tree's top directory (``git rev-parse --show-toplevel``); None outside one."""
    paths = discover(cwd)
    return paths.toplevel if paths else None


def git_dir(cwd: Path) -> Path:
    """``git rev-parse --absolute-git-dir``: the per-worktree git directory."""
    return require_repo(cwd).git_dir


def common_dir(cwd: Path) -> Path:
    """``git rev-parse --git-common-dir``, absolute: the directory shared by all worktrees."""
    return require_repo(cwd).common_dir


def git_path(cwd: Path, name: str) -> Path:
    """``git rev-parse --git-path NAME``, absolute.

    Names Git gives no meaning to (e.g. ``ledgit``) are per worktree: in a linked worktree
    ``<common>/worktrees/<id>/NAME``. Git's own names (``hooks``, ``refs/...``) go to git.
    """
    paths = require_repo(cwd)
    parts = name.split("/")
    if not name or os.path.isabs(name) or ".." in parts or parts[0].startswith(_GIT_PATH_SPECIAL):
        out = run_git(["rev-parse", "--path-format=absolute", "--git-path", name], cwd).stdout
        return as_path(os.fsdecode(out.rstrip(b"\n")))
    return paths.git_dir.joinpath(*parts)


def require_repo(cwd: Path) -> GitPaths:
    paths = discover(cwd)
    if paths is None:
        raise LedgitError(f"not a git repository: {cwd}", USAGE)
    return paths


def work_root(cwd: Path) -> Path:
    # where CLI readers run, so that git's repo-relative paths need no --full-name
    paths = require_repo(cwd)
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
    raise LedgitError(f"git config {key}: {last_line(proc.stderr)}", USAGE)


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
        raise LedgitError(f"git config --unset-all {key}: {last_line(proc.stderr)}", USAGE)
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
    paths = require_repo(cwd)
    value = _config_get(cwd, "core.hooksPath", "--type=path")
    if not value:
        return paths.common_dir / "hooks"
    return as_path(os.path.normpath(os.path.join(paths.toplevel or paths.git_dir, value)))


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
                found.append(_work_tree_of(as_path(path), cwd))
            path = None
    return found


def _work_tree_of(listed: Path, cwd: Path) -> Path:
    """A ``git worktree list`` entry as a work tree: a submodule's main entry is its git dir
    (``.git/modules/NAME``, whose ``core.worktree`` names the checkout; issue 13)."""
    if not (listed / "HEAD").is_file() or (listed / ".git").exists():
        return listed
    proc = run_git(["--git-dir", str(listed), "rev-parse", "--show-toplevel"], cwd, check=False)
    top = os.fsdecode(proc.stdout.rstrip(b"\n"))
    return as_path(top) if proc.returncode == 0 and top else listed


def head_oid(cwd: Path) -> str | None:
    """The commit HEAD points at (hex), or None on an unborn branch."""
    proc = run_git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], cwd, check=False)
    if proc.returncode == 0:
        return proc.stdout.decode().strip()
    if proc.returncode == 1:
        return None
    raise LedgitError(f"git rev-parse HEAD: {last_line(proc.stderr)}", USAGE)


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
    paths = paths or require_repo(cwd)
    named = os.environ.get("GIT_INDEX_FILE")
    if named:
        return as_path(os.path.join(paths.toplevel or cwd, named))
    return paths.git_dir / "index"


def under(path: str, prefix: str) -> bool:
    top = prefix.strip("/")
    return not top or path == top or path.startswith(top + "/")


def pathspec(prefix: str) -> list[str]:
    # used with --literal-pathspecs and cwd at the top, so the prefix means itself
    top = prefix.strip("/")
    return ["--", top] if top else []


def is_blob_mode(mode: int) -> bool:
    # a file or a symlink; not absent (0) and not a submodule
    return mode not in (0, GITLINK)


def git_order(item: tuple[str, object]) -> bytes:
    return os.fsencode(item[0])


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
    when a rebase ends. SQUASH_MSG: ``git merge --squash`` is waiting for its commit."""
    return any(os.path.exists(os.path.join(git_dir, name)) for name in (
        "MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply",
        "SQUASH_MSG"))


def merging_heads() -> list[str]:
    """The commits ``git merge`` is merging while it runs ``pre-merge-commit``, before it has
    written MERGE_HEAD, sorted: git-merge exports ``GITHEAD_<oid>=<name>`` for each (the labels
    it gives merge strategies and drivers, builtin/merge.c); empty outside such a merge."""
    return sorted(k[8:] for k in os.environ
                  if k.startswith("GITHEAD_") and len(k) in (48, 72)
                  and all(c in "0123456789abcdef" for c in k[8:]))
