"""Whose a repository is (issue 26): ledgit never leaves a file of its own user inside a
repository another user owns.

Root may read another user's repository (``safe.directory`` allows it; sudo, a container).
Had that read made the board's index in ``<git dir>/ledgit``, the directory would be root's
and the owner's next write would fail there. A read by anyone but the owner keeps its index
in its own cache instead (:func:`ledgit.storage.indexfiles.index_dir`), so it creates nothing in the
repository. Whatever root makes there -- lock files and their directories, task files,
histories, and (issue 36) ``init``'s board and ``.gitignore`` lines, an import's staging,
``projects.yaml``, install's hooks, attributes and Git config, an index, a page written with
``--html`` -- is given to the owner of the directory it is made in (:func:`adopt_fd`,
:func:`adopt_path`, :func:`make_dirs`, :func:`heir`), as if that user had made it.
:func:`foreign_files` is what ``ledgit doctor`` names when something still is not.
Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import suppress

from ledgit.storage.locate import upward


def foreign_owner(path: str) -> int | None:
    """The uid owning the nearest existing part of ``path`` (the path or a parent) when it is
    not this process's effective user; None when it is ours, or where there are no POSIX
    owners."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # pragma: no cover - Windows
        return None
    for part in upward(os.path.abspath(path)):
        try:
            uid = os.stat(part).st_uid
        except OSError:
            continue
        return None if uid == geteuid() else uid
    return None


def _as_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


def _owner(directory: str) -> os.stat_result | None:
    """The stat of ``directory`` when another user than root owns it, else None."""
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return st if st.st_uid != 0 else None


def heir(directory: str) -> tuple[int, int] | None:
    """(uid, gid) of the user what this process makes in ``directory`` belongs to: the
    directory's owner and group when this process is root and another user owns it; None
    otherwise (the maker keeps it, as the system would have it)."""
    if not _as_root():
        return None
    owner = _owner(directory)
    return None if owner is None else (owner.st_uid, owner.st_gid)


def adopt_fd(fd: int, directory: str) -> None:
    """Root writing in another user's directory (issue 26): give the file open as ``fd``
    (made in ``directory``) to the directory's owner and group, as if that user had written
    it, so that the owner's next write may replace or append to it. Nothing for any other
    user, or in a directory root owns. Best effort."""
    owner = heir(directory)
    if owner is not None:
        with suppress(OSError):
            os.fchown(fd, *owner)


def adopt_path(path: str | os.PathLike[str]) -> None:
    """:func:`adopt_fd` for a file or directory made at ``path`` (a link itself, not what
    it points to): given to the owner of the directory holding it. Best effort."""
    path = os.fspath(path)
    owner = heir(os.path.dirname(os.path.abspath(path)))
    if owner is not None:
        with suppress(OSError):
            os.lchown(path, *owner)


def make_dirs(path: str | os.PathLike[str], mode: int = 0o777) -> None:
    """``os.makedirs(path, mode, exist_ok=True)``; as root, each directory made is given to
    the owner of the nearest one that existed (when that is not root: :func:`adopt_fd`'s
    rule). Raises OSError as makedirs does."""
    path = os.fspath(path)
    if not _as_root() or os.path.isdir(path):
        os.makedirs(path, mode, exist_ok=True)
        return
    made: list[str] = []
    base = os.path.abspath(path)
    while not os.path.isdir(base):
        made.append(base)
        parent = os.path.dirname(base)
        if parent == base:
            break
        base = parent
    os.makedirs(path, mode, exist_ok=True)
    owner = _owner(base)
    if owner is None:
        return
    for part in made:
        with suppress(OSError):
            os.lchown(part, owner.st_uid, owner.st_gid)


def foreign_files(roots: Iterable[str], uid: int) -> list[str]:
    """Every file and directory under ``roots`` (each included; links not followed; a root
    that does not exist is skipped) whose owner is not ``uid``, in walk order. What
    ``ledgit doctor`` reports (issue 36): a file of another user's in a board or an index
    directory fails the owner's next write there."""
    found: list[str] = []
    for root in roots:
        try:
            if os.lstat(root).st_uid != uid:
                found.append(root)
        except OSError:
            continue
        for directory, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                path = os.path.join(directory, name)
                with suppress(OSError):
                    if os.lstat(path).st_uid != uid:
                        found.append(path)
    return found
