"""The repository's remotes (``git remote``), asked of Git once per change of its config files.

Every read of a board with leases asks where they live (:func:`ledgit.operations.leases.site_of`),
and ``git remote`` is a process (~3 ms quiet, 15 ms and more on a busy machine): more than
the rest of a list on an MCP server. Git writes a config file by lock and rename (a new
inode), so the files' stats -- the repository's ``config`` (the common one of a linked
worktree), ``config.worktree``, the global and the system files -- tell that Git's answer
may have changed. The answer is kept in memory (a long-lived server) and in ``cache_file``
(the next CLI process), keyed by those stats; a file ``[include]``-d by one of them is not
watched (a remote defined there is seen once a config file changes), and a command-line or
environment config (``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_COUNT``) is never cached.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import suppress

from ledgit.git.leases import remote_names

_KNOWN: dict[str, tuple[list[int], list[str]]] = {}  # git dir -> (stamp, names)


def config_files(git_dir: str) -> list[str]:
    """The config files whose contents can name a remote of the repository whose
    per-worktree Git directory is ``git_dir`` (git-config(1), FILES)."""
    common = git_dir
    with suppress(OSError), open(os.path.join(git_dir, "commondir"), "rb") as fh:
        common = os.path.normpath(os.path.join(git_dir, os.fsdecode(fh.read().strip())))
    home = os.environ.get("HOME", "")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = [os.path.join(common, "config"), os.path.join(git_dir, "config.worktree")]
    globals_ = os.environ.get("GIT_CONFIG_GLOBAL")
    files += [globals_] if globals_ else [os.path.join(home, ".gitconfig"),
                                          os.path.join(xdg, "git", "config")]
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        files.append(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    return files


def config_stamp(git_dir: str) -> list[int] | None:
    """(mtime_ns, size, inode) of each of :func:`config_files` (zeros for a missing one),
    or None when a configuration comes from the environment (no stamp tells it apart)."""
    if os.environ.get("GIT_CONFIG_PARAMETERS") or os.environ.get("GIT_CONFIG_COUNT"):
        return None
    stamp: list[int] = []
    for path in config_files(git_dir):
        try:
            st = os.stat(path)
            stamp += [st.st_mtime_ns, st.st_size, st.st_ino]
        except OSError:
            stamp += [0, 0, 0]
    return stamp


def known_remotes(cwd: str, git_dir: str, cache_file: str | None,
                  adopt: Callable[[str], None] | None = None) -> list[str]:
    """:func:`ledgit.git.leases.remote_names` of the repository at ``cwd`` (per-worktree
    Git directory ``git_dir``), asked of Git only when its config files changed since the
    answer kept in memory or in ``cache_file`` (JSON ``{"stamp", "names"}``; written
    best-effort: a directory that cannot be written only means asking Git next time;
    ``adopt(path)`` is called on the file written: root hands it to the owner)."""
    stamp = config_stamp(git_dir)
    if stamp is None:
        return remote_names(cwd)
    known = _KNOWN.get(git_dir)
    if known is not None and known[0] == stamp:
        return list(known[1])
    if cache_file is not None:
        with suppress(OSError, ValueError), open(cache_file, encoding="utf-8") as fh:
            kept = json.load(fh)
            if kept.get("stamp") == stamp and isinstance(kept.get("names"), list):
                _KNOWN[git_dir] = (stamp, [str(n) for n in kept["names"]])
                return list(_KNOWN[git_dir][1])
    names = remote_names(cwd)
    _KNOWN[git_dir] = (stamp, names)
    if cache_file is not None:
        temp = f"{cache_file}.{os.getpid()}.tmp"
        with suppress(OSError):
            with open(temp, "w", encoding="utf-8") as fh:
                json.dump({"stamp": stamp, "names": names}, fh)
            if adopt is not None:
                adopt(temp)
            os.replace(temp, cache_file)
        with suppress(OSError):
            os.unlink(temp)
    return list(names)
