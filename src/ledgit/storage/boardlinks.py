"""A board on disk never leads outside itself through a symbolic link (issue 26).

A cloned repository can commit ``.ledgit/tasks -> ../../victim``; after checkout every read
and write of the board would go to ``victim``. The places a command reads or writes by name
(``.ledgit`` and the entries ledgit makes in it) are checked with ``lstat`` when a
:class:`ledgit.storage.board.Board` is made: a link there is refused unless it resolves inside the
board's own ``.ledgit`` (which ``.ledgit`` itself never can). Task files and histories that
are links are refused where they are opened (``O_NOFOLLOW``, :mod:`ledgit.storage.safefiles`).
Standard library only: every command passes here.
"""

from __future__ import annotations

import os
import stat

from ledgit.core.errors import USAGE, LedgitError
from ledgit.storage.locate import LEDGIT_DIR

BOARD_ENTRIES = ("tasks", "history", "config.yaml", ".gitignore", ".local", "projects.yaml")


def escaping_link(root: str) -> str | None:
    """The path (relative to ``root``, ``/``-separated) of the first of ``.ledgit`` and its
    entries (:data:`BOARD_ENTRIES`) that is a symbolic link resolving outside
    ``root/.ledgit``; None when there is none. Seven ``lstat`` calls."""
    board = os.path.join(root, LEDGIT_DIR)
    if _is_link(board):
        return LEDGIT_DIR
    inside: str | None = None
    for name in BOARD_ENTRIES:
        path = os.path.join(board, name)
        if not _is_link(path):
            continue
        inside = inside or os.path.realpath(board)
        target = os.path.realpath(path)
        if not target.startswith(inside + os.sep):
            return f"{LEDGIT_DIR}/{name}"
    return None


def refuse_escaping_link(root: str) -> None:
    """Raise LedgitError (exit 2) naming the link when :func:`escaping_link` finds one."""
    found = escaping_link(root)
    if found is not None:
        raise LedgitError(link_refusal(root, found), USAGE)


def link_refusal(root: str, rel: str) -> str:
    """The one line that refuses the board at ``root`` for the link ``rel``."""
    where = os.path.join(root, *rel.split("/"))
    try:
        target = os.readlink(where)
    except OSError:
        target = "?"
    return (f"{where}: is a symbolic link to {target}, outside the board; ledgit does not "
            f"read or write through it (replace it with the directory or file itself)")


def _is_link(path: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False
