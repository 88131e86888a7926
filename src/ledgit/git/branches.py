"""A work tree's repository opened in this process (pygit2's public API) for ``ledgit sync``
(DESIGN §13): which branch HEAD is on, what its upstream and ``pull.rebase`` say, who
commits, and a ref moved by compare-and-swap. No ``git`` process: the sync's own steps ask
libgit2, which reads the same files Git does (git-config(1), gitrepository-layout(5)).
"""

from __future__ import annotations

import os
from typing import NamedTuple

import pygit2
from pygit2.enums import ConfigLevel

from ledgit.core.errors import BUSY, USAGE, LedgitError

REBASE = "rebase"
MERGE = "merge"
TREE_CACHE_LIMIT = 64 * 1024 * 1024  # bytes: a tree up to this size stays parsed in memory


class Upstream(NamedTuple):
    """Where a branch integrates from and pushes to: the ``remote`` and the ``branch`` name
    there (``branch.<name>.remote`` / ``branch.<name>.merge``, git-config(1))."""

    remote: str
    branch: str


def open_repository(top: str, scratch: str) -> pygit2.Repository:
    """The repository of the work tree at ``top`` (a linked worktree too), reading the
    config files Git would read (:func:`follow_config_env`; ``scratch``: a directory of
    ledgit's own for that). Raises LedgitError (exit 2) when libgit2 cannot open it
    (reftable refs, a partial clone, SHA-256 objects, a sparse index), naming the plain-Git
    loop."""
    follow_config_env(scratch)
    # A board's tasks/ and history/ trees are large (~600 KB at 10,000 tasks) and a sync
    # reads them many times: libgit2 caches no tree over 4 KB by default (git_libgit2_opts
    # GIT_OPT_SET_CACHE_OBJECT_LIMIT), so each lookup inflated them again (bench/sync_bench.py)
    pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, TREE_CACHE_LIMIT)
    try:
        repo = pygit2.Repository(top)
        repo.index.read(False)  # a sparse index ('sdir') is one libgit2 cannot read
    except pygit2.GitError as err:
        hint = " (a sparse index: git sparse-checkout init --no-sparse-index)" if "sdir" in \
            str(err) else ""
        raise LedgitError(
            f"{top}: libgit2 cannot open this repository ({err}){hint}; sync it with Git "
            "itself: git add .ledgit && git commit && git pull --rebase && git push",
            USAGE) from None
    return repo


def follow_config_env(scratch: str) -> None:
    """Make libgit2 read the global and system config files Git reads: libgit2 knows
    neither ``GIT_CONFIG_GLOBAL`` nor ``GIT_CONFIG_SYSTEM`` nor ``GIT_CONFIG_NOSYSTEM``
    (git-config(1) "ENVIRONMENT"), only the directories it searches for a file of a fixed
    name (``.gitconfig``, ``gitconfig``). Where one is set, that level's search path is
    pointed at a directory under ``scratch`` holding a link of that name to the named file
    (an empty directory for ``/dev/null`` or ``GIT_CONFIG_NOSYSTEM``); the XDG file is read
    by Git only when ``GIT_CONFIG_GLOBAL`` is unset, so it goes the same way."""
    named = os.environ.get("GIT_CONFIG_GLOBAL")
    if named is not None:
        where = _linked(scratch, "global", ".gitconfig", named)
        pygit2.settings.search_path[ConfigLevel.GLOBAL] = where
        pygit2.settings.search_path[ConfigLevel.XDG] = where
    nosystem = os.environ.get("GIT_CONFIG_NOSYSTEM", "").lower() in ("1", "true", "yes", "on")
    system = os.environ.get("GIT_CONFIG_SYSTEM")
    if nosystem or system is not None:
        where = _linked(scratch, "system", "gitconfig", None if nosystem else system)
        pygit2.settings.search_path[ConfigLevel.SYSTEM] = where


def _linked(scratch: str, level: str, name: str, target: str | None) -> str:
    """``scratch/config-<level>``, holding ``name`` as a link to ``target`` (absolute), or
    nothing for None, an empty value or ``/dev/null``."""
    where = os.path.join(scratch, f"config-{level}")
    os.makedirs(where, exist_ok=True)
    link = os.path.join(where, name)
    if not target or os.path.abspath(target) == os.devnull:
        if os.path.lexists(link):
            os.unlink(link)
        return where
    target = os.path.abspath(target)
    if os.path.islink(link) and os.readlink(link) == target:
        return where
    tmp = f"{link}.{os.getpid()}"
    os.symlink(target, tmp)
    os.replace(tmp, link)
    return where


def current_branch(repo: pygit2.Repository) -> str:
    """The branch HEAD is on (``refs/heads/NAME``), born or not. Raises LedgitError (exit 2)
    when HEAD is detached: there is no branch to commit to or push."""
    try:
        target = repo.references["HEAD"].target
    except (KeyError, pygit2.GitError):
        raise LedgitError("HEAD is missing: not a usable repository", USAGE) from None
    if not isinstance(target, str) or not target.startswith("refs/heads/"):
        raise LedgitError("HEAD is detached: check out a branch first (git switch BRANCH)",
                          USAGE)
    return target


def ref_target(repo: pygit2.Repository, name: str) -> str | None:
    """The commit (hex) ref ``name`` points at, followed through symbolic refs; None when
    it does not exist (an unborn branch)."""
    try:
        return str(repo.references[name].resolve().target)
    except (KeyError, pygit2.GitError):
        return None


def _config(repo: pygit2.Repository, key: str) -> str | None:
    try:
        return str(repo.config[key])
    except KeyError:
        return None


def upstream(repo: pygit2.Repository, branch: str) -> Upstream | None:
    """The upstream of ``branch`` (``refs/heads/NAME``) from ``branch.NAME.remote`` and
    ``branch.NAME.merge``; None when it has none (or tracks a local branch: remote ``.``)."""
    name = branch.removeprefix("refs/heads/")
    remote, merge = _config(repo, f"branch.{name}.remote"), _config(repo, f"branch.{name}.merge")
    if not remote or not merge or remote == "." or not merge.startswith("refs/heads/"):
        return None
    return Upstream(remote, merge.removeprefix("refs/heads/"))


def set_upstream(repo: pygit2.Repository, branch: str, remote: str, name: str) -> None:
    """Make ``branch`` (``refs/heads/X``) track ``remote``'s ``name`` (``branch.X.remote``,
    ``branch.X.merge`` in the repository's config, as ``git push -u`` does)."""
    short = branch.removeprefix("refs/heads/")
    repo.config[f"branch.{short}.remote"] = remote
    repo.config[f"branch.{short}.merge"] = f"refs/heads/{name}"


def pull_mode(repo: pygit2.Repository, branch: str) -> str | None:
    """How ``git pull`` would integrate ``branch``: :data:`REBASE` or :data:`MERGE` from
    ``branch.NAME.rebase``, else ``pull.rebase`` (git-config(1): true, merges and
    interactive rebase; false merges); None when neither is set."""
    name = branch.removeprefix("refs/heads/")
    for key in (f"branch.{name}.rebase", "pull.rebase"):
        value = _config(repo, key)
        if value is not None:
            word = value.strip().lower()
            if word in ("false", "no", "off", "0", ""):
                return MERGE
            return REBASE
    return None


def push_default(repo: pygit2.Repository) -> str:
    """``push.default`` (git-config(1)), lower case; ``simple`` when unset."""
    return (_config(repo, "push.default") or "simple").strip().lower()


def signature(repo: pygit2.Repository, role: str = "committer") -> pygit2.Signature:
    """Who Git would name as ``role`` (``author`` or ``committer``) of a commit made now
    (git-commit-tree(1) "COMMIT INFORMATION": ``GIT_<ROLE>_NAME``/``_EMAIL``, else
    ``<role>.name``/``.email``, else ``user.name``/``user.email``, else ``$EMAIL``).
    Raises LedgitError (exit 2) when no name or e-mail is set, as ``git commit`` refuses."""
    upper = role.upper()
    name = os.environ.get(f"GIT_{upper}_NAME") or _config(repo, f"{role}.name") \
        or _config(repo, "user.name")
    email = os.environ.get(f"GIT_{upper}_EMAIL") or _config(repo, f"{role}.email") \
        or _config(repo, "user.email") or os.environ.get("EMAIL")
    if not name or email is None:
        raise LedgitError("who commits? set user.name and user.email (git config user.name "
                          "NAME; git config user.email EMAIL)", USAGE)
    return pygit2.Signature(name, email)


def signs_commits(repo: pygit2.Repository) -> bool:
    """``commit.gpgSign`` is on: Git would sign every commit, which libgit2 does not."""
    return (_config(repo, "commit.gpgsign") or "").strip().lower() in ("true", "yes", "on", "1")


def move_ref(repo: pygit2.Repository, name: str, old: str | None, new: str,
             message: str) -> None:
    """Point ``name`` at ``new`` only while it still points at ``old`` (None: only while it
    does not exist): the ref is locked (Git's ``.lock`` file), read again, then written, with
    ``message`` in its reflog. Raises LedgitError (exit 5) when it moved meanwhile, or
    another git command holds its lock."""
    with repo.transaction() as txn:
        try:
            txn.lock_ref(name)
        except pygit2.GitError as err:
            raise LedgitError(f"{name} is locked by another git command ({err}); run ledgit "
                              f"sync again when it is done", BUSY) from None
        now = ref_target(repo, name)
        if now != old:
            raise LedgitError(f"{name} moved while ledgit sync ran (now "
                              f"{(now or 'unborn')[:12]}): run ledgit sync again", BUSY)
        txn.set_target(name, new, message=message)
