"""What ``ledgit forge update`` asks of Git: remote branches, a throwaway worktree, a merge or
a rebase made there with ledgit's driver given on the command line, a plain (driver-less)
merge tried without touching anything, and a push guarded by a lease (DESIGN §12).

Plumbing only: no policy. Every function runs the ``git`` CLI
(:func:`ledgit.git.repository.run_git`, the inherited ``GIT_DIR``/``GIT_INDEX_FILE``...
stripped). A merge or rebase made here runs
with ``-c`` settings for that one command (git(1) ``-c``): the merge driver, the attributes
that route task files to it, and no hooks (``core.hooksPath=/dev/null``: the caller checks
the result itself), so it works in a clone that never ran ``ledgit install``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from ledgit.core.errors import IO_ERROR, NOT_FOUND, USAGE, LedgitError
from ledgit.git.repository import run_git

# What a forge does with a file both sides changed: Git's own line merge. ``git merge-file``
# is that merge (xdiff, same marker size) run as a driver, so a trial merge can stand for
# the forge even in a clone whose config names ledgit's driver (gitattributes(5)).
LINE_MERGE_DRIVER = "git merge-file --marker-size=%L %A %O %B"
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
# see temporary_worktree (its pattern is not in cone form)
SPARSE = ("-c", "core.sparseCheckout=true", "-c", "core.sparseCheckoutCone=false")
NOTHING = ".ledgit-forge-checks-out-no-file"
FALLBACK_IDENTITY = ("-c", "user.name=ledgit forge", "-c", "user.email=ledgit-forge@invalid")


class PushResult(NamedTuple):
    """A push's verdict: ``accepted``, else the ``reason`` Git or the remote gave (a lease
    that no longer holds: ``stale info``; a ref that moved while the push ran: the remote's
    ``cannot lock ref ...``)."""

    accepted: bool
    reason: str = ""


class MergeAttempt(NamedTuple):
    """What a merge or rebase in a temporary worktree gave: the ``commit`` it made (None when
    it stopped), the ``unmerged`` paths it stopped on (repository-relative, sorted) and Git's
    last words (``message``) when it stopped for another reason."""

    commit: str | None
    unmerged: list[str]
    message: str = ""


def driver_settings(driver: str, attribute_lines: Sequence[str]) -> tuple[list[str], Path]:
    """``-c`` options that make one git command merge task files with ``driver`` (a
    ``merge.<name>.driver`` command line, gitattributes(5)), and the attributes file they
    name (``core.attributesFile``, lowest precedence: a committed ``.gitattributes`` still
    wins), holding ``attribute_lines`` for the top and, with ``**/``, for any directory.
    The caller removes the file."""
    fd, name = tempfile.mkstemp(prefix="ledgit-forge-", suffix=".attributes")
    lines = [*attribute_lines, *(f"**/{line}" for line in attribute_lines)]
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("".join(f"{line}\n" for line in lines))
    opts = ["-c", "merge.ledgit.name=ledgit task merge (forge update)",
            "-c", f"merge.ledgit.driver={driver}", "-c", f"core.attributesFile={name}"]
    return opts, Path(name)


def fetch(cwd: Path, remote: str, branches: Sequence[str] | None = None) -> None:
    """Bring ``remote``'s ``branches`` (None: every branch, deleted ones pruned) into
    ``refs/remotes/REMOTE/*``. Raises LedgitError (2) naming git's last line; a missing
    branch is not an error here (:func:`remote_tip` says None)."""
    if branches is None:
        specs = [f"+refs/heads/*:refs/remotes/{remote}/*"]
        run_git(["fetch", "--quiet", "--no-tags", "--prune", remote, *specs], cwd)
        return
    # one by one would cost a round trip each; a missing one fails the whole fetch, so ask
    # the remote first what exists
    present = set(remote_heads(cwd, remote))
    specs = [f"+refs/heads/{b}:refs/remotes/{remote}/{b}" for b in branches if b in present]
    if specs:
        run_git(["fetch", "--quiet", "--no-tags", remote, *specs], cwd)
    for gone in (b for b in branches if b not in present):
        run_git(["update-ref", "-d", f"refs/remotes/{remote}/{gone}"], cwd, check=False)


def remote_heads(cwd: Path, remote: str) -> dict[str, str]:
    """``{branch: commit}`` of every branch ``remote`` has now (git-ls-remote(1))."""
    out = run_git(["ls-remote", "--heads", remote], cwd).stdout
    heads: dict[str, str] = {}
    for line in os.fsdecode(out).splitlines():
        oid, _, ref = line.partition("\t")
        if ref.startswith("refs/heads/"):
            heads[ref[len("refs/heads/"):]] = oid
    return heads


def remote_tip(cwd: Path, remote: str, branch: str) -> str | None:
    """The commit ``refs/remotes/REMOTE/BRANCH`` names (after :func:`fetch`), else None."""
    ref = f"refs/remotes/{remote}/{branch}^{{commit}}"
    proc = run_git(["rev-parse", "--verify", "--quiet", ref], cwd, check=False)
    return os.fsdecode(proc.stdout).strip() or None


def tracked_branches(cwd: Path, remote: str) -> list[str]:
    """Every branch under ``refs/remotes/REMOTE/`` (``HEAD`` left out), sorted."""
    out = run_git(["for-each-ref", "--format=%(refname)", f"refs/remotes/{remote}/"], cwd).stdout
    prefix = f"refs/remotes/{remote}/"
    names = (r[len(prefix):] for r in os.fsdecode(out).splitlines() if r.startswith(prefix))
    return sorted(n for n in names if n != "HEAD")


def is_ancestor(cwd: Path, ancestor: str, commit: str) -> bool:
    """True when ``ancestor`` is ``commit`` or one of its ancestors (git-merge-base(1))."""
    return run_git(["merge-base", "--is-ancestor", ancestor, commit], cwd,
                   check=False).returncode == 0


def line_merge_conflicts(cwd: Path, ours: str, theirs: str) -> list[str] | None:
    """The paths a forge's line merge of ``theirs`` into ``ours`` would leave conflicted
    (``git merge-tree --write-tree``, git >= 2.38: no worktree, no index, nothing written
    but objects), with task files line-merged as a forge does (:data:`LINE_MERGE_DRIVER`);
    ``[]`` when it merges cleanly, None when git cannot say (an older git)."""
    proc = run_git(["-c", f"merge.ledgit.driver={LINE_MERGE_DRIVER}", "merge-tree",
                    "--write-tree", "--name-only", "--no-messages", "-z", ours, theirs], cwd,
                   check=False)
    if proc.returncode == 0:
        return []
    if proc.returncode != 1:
        return None
    # output: the tree id, then the conflicted paths, NUL-terminated
    fields = [f for f in os.fsdecode(proc.stdout).split("\0") if f]
    return sorted(set(fields[1:]))


@contextlib.contextmanager
def temporary_worktree(cwd: Path, commit: str) -> Iterator[Path]:
    """A detached worktree of ``commit`` in a new temporary directory (git-worktree(1),
    ``add --detach``, no hooks) that checks out no file until a merge needs one (run Git
    there with :data:`SPARSE`), removed with its administrative files when the block ends,
    also on an error."""
    parent = Path(tempfile.mkdtemp(prefix="ledgit-forge-"))
    where = parent / "wt"
    try:
        run_git([*NO_HOOKS, "worktree", "add", "--quiet", "--no-checkout", "--detach",
                 str(where), commit], cwd)
        # Sparse, with a pattern no file matches: the index holds the whole tree, marked
        # skip-worktree, and a merge writes to disk only the files it has to merge, so the
        # cost follows the change, not the board. The patterns file is this worktree's own
        # (git-sparse-checkout(1), "info/sparse-checkout" is per worktree); the setting is
        # given per command, so the repository's config is left alone.
        patterns = Path(os.fsdecode(run_git(["rev-parse", "--git-path",
                                             "info/sparse-checkout"], where).stdout).strip())
        patterns = patterns if patterns.is_absolute() else where / patterns
        patterns.parent.mkdir(parents=True, exist_ok=True)
        patterns.write_text(f"/{NOTHING}\n", encoding="utf-8")
        run_git([*NO_HOOKS, *SPARSE, "reset", "--quiet", "--hard", commit], where)
        yield where
    finally:
        run_git(["worktree", "remove", "--force", str(where)], cwd, check=False)
        shutil.rmtree(parent, ignore_errors=True)
        run_git(["worktree", "prune"], cwd, check=False)


def _identity(worktree: Path) -> list[str]:
    """A committer for a clone that has none (a CI runner): :data:`FALLBACK_IDENTITY`."""
    known = run_git(["var", "GIT_COMMITTER_IDENT"], worktree, check=False).returncode == 0
    return [] if known else list(FALLBACK_IDENTITY)


def unmerged_paths(worktree: Path) -> list[str]:
    """The paths Git holds unmerged in ``worktree``'s index, sorted."""
    out = run_git(["diff", "--name-only", "-z", "--diff-filter=U"], worktree, check=False).stdout
    return sorted({p for p in os.fsdecode(out).split("\0") if p})


def head(worktree: Path) -> str:
    """The commit ``HEAD`` of ``worktree`` names."""
    return os.fsdecode(run_git(["rev-parse", "HEAD"], worktree).stdout).strip()


def merge_in(worktree: Path, theirs: str, message: str, settings: Sequence[str]) -> MergeAttempt:
    """``git merge --no-ff theirs`` in ``worktree`` with ``settings`` (:func:`driver_settings`)
    and no hooks. On a stop the merge is aborted and the worktree left as it was."""
    proc = run_git([*NO_HOOKS, *SPARSE, *settings, *_identity(worktree), "merge", "--no-ff",
                    "--no-edit", "-m", message, theirs], worktree, check=False)
    if proc.returncode == 0:
        return MergeAttempt(head(worktree), [])
    stuck = unmerged_paths(worktree)
    run_git([*NO_HOOKS, *SPARSE, "merge", "--abort"], worktree, check=False)
    return MergeAttempt(None, stuck, _last(proc.stderr or proc.stdout))


def rebase_in(worktree: Path, onto: str, settings: Sequence[str]) -> MergeAttempt:
    """``git rebase onto`` of ``worktree``'s detached HEAD with ``settings`` and no hooks. On
    a stop the rebase is aborted."""
    proc = run_git([*NO_HOOKS, *SPARSE, *settings, *_identity(worktree), "rebase", "--quiet",
                    "--no-autosquash", onto], worktree, check=False)
    if proc.returncode == 0:
        return MergeAttempt(head(worktree), [])
    stuck = unmerged_paths(worktree)
    run_git([*NO_HOOKS, *SPARSE, "rebase", "--abort"], worktree, check=False)
    return MergeAttempt(None, stuck, _last(proc.stderr or proc.stdout))


def push_with_lease(cwd: Path, remote: str, commit: str, branch: str, old: str) -> PushResult:
    """Push ``commit`` to ``refs/heads/BRANCH`` on ``remote`` only while that ref is still
    ``old`` (``--force-with-lease=refs/heads/BRANCH:OLD``, git-push(1); never a ``+``
    refspec): a push that raced ours is never overwritten. Rejections come back as a
    :class:`PushResult`; a push that failed for another reason (no remote, no access)
    raises LedgitError (74 for the transport, 2 otherwise)."""
    ref = f"refs/heads/{branch}"
    proc = run_git(["push", "--porcelain", f"--force-with-lease={ref}:{old}", remote,
                    f"{commit}:{ref}"], cwd, check=False)
    for line in os.fsdecode(proc.stdout).splitlines():
        flag, _, rest = line.partition("\t")
        if rest.split("\t", 1)[0].endswith(f":{ref}"):
            if flag in (" ", "+", "*", "="):
                return PushResult(True)
            if flag == "!":
                return PushResult(False, rest.split("\t", 1)[-1].strip())
    reason = _last(proc.stderr)
    code = IO_ERROR if "unable to access" in reason or "Could not read" in reason else USAGE
    raise LedgitError(f"git push {remote} {branch}: {reason}", code)


def require_remote(cwd: Path, remote: str) -> None:
    """Raise LedgitError (4) when ``remote`` is not configured in ``cwd``'s repository."""
    proc = run_git(["remote", "get-url", remote], cwd, check=False)
    if proc.returncode != 0:
        raise LedgitError(f"no remote {remote!r} in this repository (git remote -v; give "
                          f"--remote NAME)", NOT_FOUND)


def _last(text: bytes) -> str:
    lines = [line.strip() for line in os.fsdecode(text).splitlines() if line.strip()]
    return lines[-1] if lines else "failed"
