"""The Git side of remote leases (DESIGN §4, docs/leases.md): plumbing only.

A lease is a ref ``refs/ledgit/leases/<ID>`` on a remote, pointing at a commit of the empty
tree whose message holds the lease record (:mod:`ledgit.operations.leases` reads and writes
it). Git's push is the compare-and-swap: ``git push --force-with-lease=REF:OLD`` moves REF
only while it still holds OLD (``REF:`` with nothing after the colon: only while REF does not
exist), and receive-pack checks the old value again under the ref's lock (git-push(1),
"--force-with-lease"; checked on Git 2.39). No ``+`` refspec is ever pushed: it would
override the lease.

What a clone last saw of the remote's leases is mirrored locally under
``refs/ledgit/remote-leases/<REMOTE>/<ID>`` (shared by every worktree of the clone): one
``git fetch`` refreshes them all, and reading them is local (:func:`read_mirror`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

from ledgit.git.remotes import PushOutcome, last_error, push_outcome, unattended_env
from ledgit.git.repository import no_git_env, run_git

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

LEASES_NS = "refs/ledgit/leases/"
MIRROR_NS = "refs/ledgit/remote-leases/"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # Git knows it without storing it
ZERO_OID = "0" * 40
# A lease commit's identity: the record inside names the holder; the commit's author never does.
_IDENTITY = {"GIT_AUTHOR_NAME": "ledgit", "GIT_AUTHOR_EMAIL": "ledgit@invalid",
             "GIT_COMMITTER_NAME": "ledgit", "GIT_COMMITTER_EMAIL": "ledgit@invalid"}
# Concurrent ledgit processes of one clone update the same mirror refs: wait for a ref lock
# rather than fail at once (git-config(1), core.filesRefLockTimeout, core.packedRefsTimeout).
_LOCK_WAIT = ("-c", "core.filesRefLockTimeout=5000", "-c", "core.packedRefsTimeout=5000")


class MirrorEntry(NamedTuple):
    """One mirrored lease ref: the task id, the commit it points at, the commit message."""

    task: str
    oid: str
    message: str


def lease_ref(task: str) -> str:
    """The remote ref of ``task``'s lease: ``refs/ledgit/leases/<ID>``."""
    return LEASES_NS + task


def mirror_ref(remote: str, task: str) -> str:
    """The local mirror of ``task``'s lease on ``remote``."""
    return f"{MIRROR_NS}{remote}/{task}"


def remote_names(cwd: Path | str) -> list[str]:
    """The repository's remotes (``git remote``)."""
    return os.fsdecode(run_git(["remote"], cwd, check=False).stdout).split()


def upstream_remote(cwd: Path | str) -> str | None:
    """The remote of the current branch's upstream (``branch.<name>.remote``), None when HEAD
    is detached, unborn without one, or the branch has no upstream. One ``git for-each-ref``
    of the local branches, the current one marked by ``%(HEAD)``."""
    out = run_git(["for-each-ref", "--format=%(HEAD)%00%(upstream:remotename)", "refs/heads/"],
                  cwd, check=False).stdout
    for line in os.fsdecode(out).splitlines():
        mark, _, remote = line.partition("\0")
        if mark == "*":
            return remote or None
    # An unborn branch is not listed by for-each-ref: ask its config directly.
    head = run_git(["symbolic-ref", "-q", "--short", "HEAD"], cwd, check=False)
    if head.returncode != 0:
        return None
    name = os.fsdecode(head.stdout).strip()
    proc = run_git(["config", "--get", f"branch.{name}.remote"], cwd, check=False)
    return os.fsdecode(proc.stdout).strip() or None


def make_lease_commit(cwd: Path | str, message: str) -> str:
    """A commit of the empty tree with ``message`` (the lease record), written to the local
    object database; its id. One ``git commit-tree``."""
    env = {**no_git_env(), **_IDENTITY}
    proc = run_git(["commit-tree", EMPTY_TREE], cwd, env=env, input=message.encode("utf-8"))
    return os.fsdecode(proc.stdout).strip()


def push_lease(cwd: Path | str, remote: str, task: str, new: str | None,
               expect: str | None) -> PushOutcome:
    """Compare-and-swap ``task``'s lease ref on ``remote``: set it to the commit ``new``
    (None: delete it) only while it holds ``expect`` (None: only while it does not exist).
    One ``git push --porcelain --no-verify --force-with-lease=REF:EXPECT``; never raises for
    a refusal or an unreachable remote (see :class:`PushOutcome`)."""
    ref = lease_ref(task)
    spec = f"{new}:{ref}" if new is not None else f":{ref}"
    proc = run_git(["push", "--porcelain", "--no-verify",
                    f"--force-with-lease={ref}:{expect or ''}", remote, spec], cwd,
                   env=unattended_env(), check=False)
    return push_outcome(os.fsdecode(proc.stdout), os.fsdecode(proc.stderr), ref)


def push_deletes(cwd: Path | str, remote: str, expected: Mapping[str, str]
                 ) -> dict[str, PushOutcome]:
    """Delete several lease refs in one push, each only while it holds its expected commit
    (task -> oid). Not atomic: each ref succeeds or fails on its own. Returns task ->
    outcome (every task, even when the push as a whole failed)."""
    if not expected:
        return {}
    args = ["push", "--porcelain", "--no-verify"]
    args += [f"--force-with-lease={lease_ref(t)}:{oid}" for t, oid in expected.items()]
    args += [remote, *(f":{lease_ref(t)}" for t in expected)]
    proc = run_git(args, cwd, env=unattended_env(), check=False)
    out, err = os.fsdecode(proc.stdout), os.fsdecode(proc.stderr)
    return {t: push_outcome(out, err, lease_ref(t)) for t in expected}


def fetch_leases(cwd: Path | str, remote: str) -> str | None:
    """Refresh the local mirror of every lease on ``remote`` (one ``git fetch --prune`` of
    ``refs/ledgit/leases/*``; the mirror is a cache, so its own refspec forces). Returns None
    on success, else git's last error line (unreachable remote, refused namespace...)."""
    spec = f"+{LEASES_NS}*:{MIRROR_NS}{remote}/*"
    proc = run_git([*_LOCK_WAIT, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
                    "--prune", "--no-recurse-submodules", remote, spec], cwd, env=unattended_env(),
                   check=False)
    if proc.returncode == 0:
        return None
    return last_error(os.fsdecode(proc.stderr), "git fetch failed")


def read_mirror(cwd: Path | str, remote: str) -> dict[str, MirrorEntry]:
    """task -> :class:`MirrorEntry` for every lease mirrored from ``remote`` (one local
    ``git for-each-ref``; no network)."""
    prefix = f"{MIRROR_NS}{remote}/"
    out = run_git(["for-each-ref", "--format=%(refname)%00%(objectname)%00%(contents)%00%00",
                   prefix], cwd, check=False).stdout
    found: dict[str, MirrorEntry] = {}
    for chunk in os.fsdecode(out).split("\0\0\n"):
        parts = chunk.split("\0", 2)
        if len(parts) == 3 and parts[0].startswith(prefix):
            task = parts[0][len(prefix):]
            found[task] = MirrorEntry(task, parts[1], parts[2])
    return found


def set_mirror(cwd: Path | str, remote: str, task: str, oid: str | None) -> None:
    """Point the mirror of ``task``'s lease at ``oid`` (None: delete it) after a push of ours
    succeeded, so the next command of this clone knows what it holds without asking."""
    ref = mirror_ref(remote, task)
    args = [*_LOCK_WAIT, "update-ref", ref, oid] if oid else [*_LOCK_WAIT, "update-ref",
                                                               "-d", ref]
    run_git(args, cwd, check=False)


__all__ = [
    "EMPTY_TREE", "LEASES_NS", "MIRROR_NS", "MirrorEntry", "PushOutcome", "fetch_leases",
    "lease_ref", "make_lease_commit", "mirror_ref", "remote_names",
    "push_deletes",
    "push_lease", "read_mirror", "set_mirror", "upstream_remote",
]
