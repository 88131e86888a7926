"""The id of one clone (docs/leases.md, "Whose leases"): a random name its lease records
carry, so that a clone knows which leases on the shared remote it took (``ledgit lease list
--mine``, ``ledgit doctor``) whichever actor took them.

Kept in the file ``ledgit-clone`` of the repository's common Git directory (shared by every
worktree of the clone; gitrepository-layout(5): a linked worktree's git dir names it in its
``commondir`` file), made on first use: 16 lower-case hex digits. Standard library only.
"""

from __future__ import annotations

import os
from contextlib import suppress

from ledgit.storage.ownership import adopt_fd

CLONE_FILE = "ledgit-clone"
_ID_CHARS = frozenset("0123456789abcdef")


def common_git_dir(git_dir: str) -> str:
    """The common Git directory of the per-worktree ``git_dir``: the one its ``commondir``
    file names (relative to ``git_dir``), else ``git_dir`` itself."""
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as fh:
            named = fh.read().strip()
    except (OSError, ValueError):
        return git_dir
    return os.path.normpath(os.path.join(git_dir, named)) if named else git_dir


def clone_id(git_dir: str | None, *, create: bool = True) -> str:
    """This clone's id (16 hex digits) for the per-worktree ``git_dir``; "" outside Git, or
    when the file is absent and ``create`` is False, or cannot be made (a read-only
    repository: leases are then written without it). Made whole or not at all: written to a
    temporary file, then linked to its name, so two first uses at once agree on one id."""
    if git_dir is None:
        return ""
    common = common_git_dir(git_dir)
    path = os.path.join(common, CLONE_FILE)
    found = _read(path)
    if found or not create:
        return found
    tmp = f"{path}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            adopt_fd(fd, common)
            os.write(fd, (os.urandom(8).hex() + "\n").encode("ascii"))
        finally:
            os.close(fd)
        with suppress(FileExistsError):
            os.link(tmp, path)
    except OSError:
        return ""
    finally:
        with suppress(OSError):
            os.unlink(tmp)
    return _read(path)


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read(64).strip()
    except (OSError, ValueError):
        return ""
    return text if len(text) == 16 and set(text) <= _ID_CHARS else ""
