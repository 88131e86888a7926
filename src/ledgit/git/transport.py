"""Fetching and pushing one branch (DESIGN §13): the transport of ``ledgit sync``, and the
reading of ``git push --porcelain`` that remote leases share.

Two ways to talk to a remote, one outcome (:class:`PushOutcome`, a fetched tip):

* in this process, through libgit2 (pygit2's public ``Remote.fetch``/``Remote.push``), where
  it does what Git does: a fetch from a local path or a ``git://`` daemon, a push to a
  ``git://`` daemon (the daemon runs ``git receive-pack`` with the remote's hooks);
* the ``git`` CLI everywhere else: one ``git fetch`` (always into a shallow clone, which
  libgit2's fetch breaks) and one ``git push
  --force-with-lease=refs/heads/B:OLD`` (never a ``+`` refspec, which would override the
  lease), for HTTPS and SSH (credential helpers, ``~/.ssh/config``, which libgit2 does not
  read: jj and cargo fall back to the CLI for the same reason) and for a push to a local
  path: libgit2's local transport writes into the other repository itself and runs none of
  its hooks (``pre-receive``, ``update``, ``receive.denyCurrentBranch``; checked on libgit2
  1.9.7, tests/test_sync_transport.py).

``ledgit.syncTransport`` (git config) or ``LEDGIT_SYNC_TRANSPORT``: ``auto`` (the rule above),
``git`` (the CLI for both), ``library`` (libgit2 for both, except a push to a local path).

A push is done only when the remote says the ref moved: libgit2's per-ref status
(``push_update_reference``; without it pygit2 reports success for a refused ref), else the
remote's ref read back; the porcelain line of ``git push``. The lease: libgit2 has no
``--force-with-lease`` (libgit2#3947), so the ``push_negotiation`` callback refuses a push
whose remote ref is not the expected old value, and the remote's receive-pack moves the ref
only from the old value it was told (a compare-and-swap under its ref lock).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pygit2

from ledgit.core.errors import REMOTE, USAGE, LedgitError
from ledgit.git.remotes import PushOutcome, last_error, push_outcome, unattended_env
from ledgit.git.repository import run_git

if TYPE_CHECKING:
    from pathlib import Path

LIBRARY = "library"
CLI = "git"
AUTO = "auto"
TRANSPORT_ENV = "LEDGIT_SYNC_TRANSPORT"
TRANSPORT_CONFIG = "ledgit.syncTransport"
ZERO = "0" * 40
FETCH_TRIES = 5  # a fetch that meets another's ref lock is tried again this many times
_SCP_LIKE = re.compile(r"^[^/:]+:")  # user@host:path (git-clone(1) "GIT URLS")

# PushOutcome.reason of a push the git CLI stopped before any ref was sent: the local
# pre-push hook refused it (githooks(5): a non-zero exit stops the push)
NOT_SENT = "refused before sending"


# --------------------------------------------------------------------------- which way


def is_local_url(url: str) -> bool:
    """A remote URL that names a path on this machine: ``/path``, ``./path``, ``file://``,
    or a relative path (git-clone(1) "GIT URLS": no ``scheme://`` and no ``host:`` part)."""
    if url.startswith("file://"):
        return True
    if "://" in url:
        return False
    return url.startswith(("/", "./", "../")) or not _SCP_LIKE.match(url)


def _local_path(url: str, cwd: Path) -> str:
    """The directory a local remote URL names (``file://`` stripped; relative to ``cwd``)."""
    path = url.removeprefix("file://")
    return path if os.path.isabs(path) else os.path.join(str(cwd), path)


def transports(repo: pygit2.Repository, remote: str) -> tuple[str, str]:
    """(fetch, push): :data:`LIBRARY` or :data:`CLI` for ``remote`` of ``repo``, by the
    module's rule. Raises LedgitError (exit 2) for an unknown setting or remote."""
    config = repo.config
    setting = os.environ.get(TRANSPORT_ENV) or _config_str(config, TRANSPORT_CONFIG) or AUTO
    if setting not in (AUTO, LIBRARY, CLI):
        raise LedgitError(f"{TRANSPORT_CONFIG}: {setting!r}: one of auto, library, git", USAGE)
    found = _remote(repo, remote)
    fetch_url = found.url or ""
    push_url = found.push_url or fetch_url
    if setting == CLI or _rewrites_urls(config, remote):
        return CLI, CLI
    push_local = is_local_url(push_url)
    # libgit2 1.9.7's fetch into a shallow clone removes .git/shallow without fetching the
    # history it cut off: Git then finds commits with missing parents (tests/test_sync_edges.py)
    fetch_lib = not repo.is_shallow
    if setting == LIBRARY:
        return LIBRARY if fetch_lib else CLI, CLI if push_local else LIBRARY
    fetch_way = LIBRARY if fetch_lib and (
        is_local_url(fetch_url) or fetch_url.startswith("git://")) else CLI
    push_way = LIBRARY if push_url.startswith("git://") else CLI
    return fetch_way, push_way


def _config_str(config: pygit2.Config, key: str) -> str | None:
    try:
        value = config[key]
    except KeyError:
        return None
    return str(value)


def _rewrites_urls(config: pygit2.Config, remote: str) -> bool:
    """Settings libgit2 does not follow as Git does: URL rewrites (``url.*.insteadOf``),
    a proxy command for ``git://`` (``core.gitProxy``), a remote's own upload-pack or
    receive-pack program: the CLI then does the transport."""
    names = {entry.name.lower() for entry in config}
    return any(name.startswith("url.") and name.endswith(("insteadof", "pushinsteadof"))
               for name in names) or "core.gitproxy" in names or any(
        name in names for name in (f"remote.{remote.lower()}.uploadpack",
                                   f"remote.{remote.lower()}.receivepack"))


def _remote(repo: pygit2.Repository, name: str) -> pygit2.Remote:
    try:
        return repo.remotes[name]
    except (KeyError, ValueError, pygit2.GitError):
        if not list(repo.remotes.names()):
            raise LedgitError("this repository has no remote to share the board through: "
                              "add one (git remote add origin URL), or commit the board "
                              "alone with ledgit sync --no-push", USAGE) from None
        raise LedgitError(f"no remote {name!r} in this repository (git remote -v; give "
                          f"--remote NAME)", USAGE) from None


# --------------------------------------------------------------------------- fetch


def tracking_ref(remote: str, branch: str) -> str:
    """Where the remote's ``branch`` is kept here: ``refs/remotes/REMOTE/BRANCH``."""
    return f"refs/remotes/{remote}/{branch}"


def fetch_branch(repo: pygit2.Repository, cwd: Path, remote: str, branches: Sequence[str],
                 way: str) -> dict[str, str | None]:
    """Fetch ``branches`` of ``remote`` into their tracking refs (:func:`tracking_ref`;
    tags followed as ``git pull`` follows them) by ``way``; returns branch -> the commit the
    remote has now (hex), None where the remote has no such branch (its tracking ref is
    removed). Raises LedgitError exit 69 when the remote cannot be reached."""
    specs = [f"+refs/heads/{b}:{tracking_ref(remote, b)}" for b in branches]
    url = _remote(repo, remote).url or ""
    if is_local_url(url) and not os.path.exists(_local_path(url, cwd)):
        raise LedgitError(f"git fetch {remote}: {url}: no such directory", REMOTE)
    if way == LIBRARY:
        for attempt in range(FETCH_TRIES):
            try:
                _remote(repo, remote).fetch(specs, message=f"ledgit sync: fetch {remote}",
                                            prune=pygit2.enums.FetchPrune.PRUNE)
                break
            except pygit2.GitError as err:
                # another worktree's fetch holds a tracking ref's lock: wait, as Git would
                # (core.filesRefLockTimeout); anything else is the remote's answer
                if "lock" not in str(err) or attempt == FETCH_TRIES - 1:
                    raise LedgitError(f"git fetch {remote}: {err}", REMOTE) from None
                time.sleep(0.1 * (attempt + 1))
        # pruned: a branch the remote no longer has leaves no tracking ref
        return {b: _ref(repo, tracking_ref(remote, b)) for b in branches}
    proc = run_git(["fetch", "--quiet", "--no-write-fetch-head", remote, *specs], cwd,
                   env=unattended_env(), check=False)
    said = os.fsdecode(proc.stderr)
    absent = {b for b in branches if f"couldn't find remote ref refs/heads/{b}" in said}
    if proc.returncode != 0 and absent and len(absent) < len(branches):
        # one missing branch fails the whole fetch: fetch the others again
        return {**fetch_branch(repo, cwd, remote, [b for b in branches if b not in absent],
                               way), **dict.fromkeys(absent)}
    if proc.returncode != 0 and not absent:
        raise LedgitError(f"git fetch {remote}: {last_error(said, 'failed')}", REMOTE)
    found: dict[str, str | None] = {}
    for b in branches:
        if b in absent:
            run_git(["update-ref", "-d", tracking_ref(remote, b)], cwd, check=False)
            found[b] = None
        else:
            found[b] = _ref(repo, tracking_ref(remote, b))
    return found


def _ref(repo: pygit2.Repository, name: str) -> str | None:
    try:
        return str(repo.references[name].resolve().target)
    except (KeyError, pygit2.GitError):
        return None


# --------------------------------------------------------------------------- push


class _Lease(pygit2.RemoteCallbacks):
    """libgit2's callbacks for one push with a lease: refuse in negotiation when the remote
    ref is not ``expect``; keep each ref's status."""

    def __init__(self, ref: str, expect: str | None) -> None:
        super().__init__()
        self.ref, self.expect = ref, expect or ZERO
        self.seen: str | None = None
        self.status: dict[str, str | None] = {}

    def push_negotiation(self, updates: list[pygit2.remotes.PushUpdate]) -> None:
        for update in updates:
            if update.dst_refname == self.ref:
                self.seen = str(update.src)
                if self.seen != self.expect:
                    raise pygit2.GitError(f"stale info: {self.ref} is at {self.seen[:12]}")

    def push_update_reference(self, refname: str, message: str | None) -> None:
        self.status[refname] = message


def push_branch(repo: pygit2.Repository, cwd: Path, remote: str, commit: str, branch: str,
                expect: str | None, way: str) -> PushOutcome:
    """Push ``commit`` to ``refs/heads/BRANCH`` on ``remote`` only while that ref is
    ``expect`` (None: only while it does not exist), by ``way``. Never raises for a refusal
    or an unreachable remote (see :class:`PushOutcome`)."""
    ref = f"refs/heads/{branch}"
    if way == CLI:
        proc = run_git(["push", "--porcelain", f"--force-with-lease={ref}:{expect or ''}",
                        remote, f"{commit}:{ref}"], cwd, env=unattended_env(), check=False)
        said = os.fsdecode(proc.stderr)
        outcome = push_outcome(os.fsdecode(proc.stdout), said, ref)
        if not outcome.reached and proc.returncode == 1:
            # refused before any ref was sent (a pre-push hook): exit 1, not 128
            lines = [line.strip() for line in said.splitlines() if line.strip()]
            return PushOutcome(False, "!", NOT_SENT, "; ".join(lines), True)
        return outcome
    lease = _Lease(ref, expect)
    found = _remote(repo, remote)
    try:
        found.push([f"{commit}:{ref}"], callbacks=lease)
    except pygit2.GitError as err:
        text = str(err)
        if lease.seen is not None and lease.seen != lease.expect:
            return PushOutcome(False, "!", "stale info", text, True)
        return PushOutcome(False, "", "", text, lease.seen is not None)
    if ref in lease.status:
        message = lease.status[ref]
        if message is None:
            return PushOutcome(True, " ", "", "", True)
        return PushOutcome(False, "!", message, message, True)
    # no status line for our ref: believe only what the remote says it holds now
    try:
        heads = {h.name: str(h.oid) for h in found.list_heads()}
    except pygit2.GitError as err:
        return PushOutcome(False, "", "", f"the push's outcome is unknown: {err}", False)
    if heads.get(ref) == commit:
        return PushOutcome(True, " ", "", "", True)
    return PushOutcome(False, "!", "no status", f"{ref} is not at {commit[:12]} after the push",
                       True)
