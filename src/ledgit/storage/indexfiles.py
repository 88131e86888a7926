"""Where a worktree's index lives and its SQLite file (DESIGN §10; issue 13): the directory
chosen for it (the private dir, else this user's cache, else none: in memory), why the
private dir cannot hold it, connecting (``synchronous=OFF`` where the boot id can be read),
write transactions, and the SQLite errors told apart (busy, read-only, a full disk).

What the file holds and how it is kept fresh is :mod:`ledgit.storage.index`.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from typing import TYPE_CHECKING

from ledgit.core.errors import BUSY, LedgitError
from ledgit.storage.locate import user_cache_dir
from ledgit.storage.oserrors import owner_detail
from ledgit.storage.ownership import adopt_path, foreign_owner, heir, make_dirs

if TYPE_CHECKING:
    from ledgit.storage.board import Board


INDEX_NAME = "index.sqlite3"
BUSY_TIMEOUT = 30.0  # seconds a reader waits for a writer (a 10k rebuild takes ~2 s)
WRITE_PATH_BUSY_TIMEOUT = 2.0  # the write path gives up on the index sooner (best effort)


def index_dir(board: Board, *, create: bool) -> str | None:
    """The directory of the board's index: the private dir when this user may write it
    (and the index file in it, if there is one), else this user's cache for the worktree
    (:func:`ledgit.storage.locate.user_cache_dir`: a read-only board, a private dir or index
    another user owns, issue 13; a repository another user owns, issue 26:
    :func:`ledgit.storage.ownership.foreign_owner`), else None (in memory). ``create``: make
    the directory chosen."""
    private = board.private_str
    # Another user's repository (root reading it): nothing of ours is made in it (issue 26)
    made = foreign_owner(private) is None
    if create and made:
        try:
            make_dirs(private)
        except OSError:
            made = False  # not ours to write: the cache below
    if made and _writable(private):
        return private
    cache = user_cache_dir(private)
    if cache is None:
        return None
    if create:
        try:  # root with another user's HOME (sudo keeps it): theirs (issue 36)
            make_dirs(cache, 0o700)
        except OSError:
            return None
    return cache if _writable(cache) else None


def adopt_index(path: str) -> None:
    """The index file ``path`` and SQLite's files beside it (``-wal``, ``-shm``,
    ``-journal``), made by root in another user's directory, given to that user
    (:func:`ledgit.storage.ownership.adopt_path`; issue 36). Nothing for anyone else."""
    if heir(os.path.dirname(path)) is None:
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.lexists(path + suffix):
            adopt_path(path + suffix)


def private_dir_refusal(board: Board) -> str | None:
    """Why the worktree's private dir cannot hold the index and the locks (one sentence:
    read-only, or whose it is and the fix), None when it can (issue 13)."""

    private = board.private_str
    probe = private
    while not os.path.isdir(probe):
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent
    if _writable(private) if probe == private else os.access(probe, os.W_OK | os.X_OK):
        return None
    try:
        readonly = bool(os.statvfs(probe).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        readonly = False
    if readonly:
        return f"{private} is on a read-only file system"
    detail = owner_detail(os.path.join(private, INDEX_NAME) if probe == private else private)
    return f"{private} cannot be written" + (f": {detail}" if detail else "")


def _writable(directory: str) -> bool:
    """This user may create and write an index in ``directory`` (it exists)."""
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    path = os.path.join(directory, INDEX_NAME)
    return not os.path.lexists(path) or os.access(path, os.W_OK)


def connect(path: str, busy_timeout: float) -> sqlite3.Connection:
    """A connection to the index file ``path`` (autocommit: see :class:`Transaction`)."""
    db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
    # See ledgit.storage.index.Index._current: without a boot id to notice an OS crash, keep
    # SQLite's fsyncs.
    db.execute("PRAGMA synchronous = OFF" if boot_id() else "PRAGMA synchronous = NORMAL")
    return db


@functools.lru_cache(maxsize=1)
def boot_id() -> str | None:
    """This boot's id (Linux), or None where it cannot be read cheaply."""
    try:
        # (bytes, then decoded: a text file with encoding="ascii" imports its codec module)
        with open("/proc/sys/kernel/random/boot_id", "rb") as fh:
            return fh.read().decode("ascii").strip() or None
    except OSError:
        return None


def file_inode(path: str) -> int | None:
    """The inode of ``path`` (tells a replaced file apart), None when it cannot be stat-ed."""
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def is_busy(exc: BaseException) -> bool:
    """Another connection holds the lock (after the busy timeout)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def is_readonly(exc: BaseException) -> bool:
    """The file or its directory cannot be written."""
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def is_full(exc: BaseException) -> bool:
    """SQLITE_FULL or SQLITE_IOERR: the disk, not the database, is the trouble."""
    text = str(exc).lower()
    return "disk is full" in text or "disk i/o error" in text


def busy_error(path: str) -> LedgitError:
    """The error of a busy index (exit 5): it is never deleted for being busy."""
    return LedgitError(f"the index {path} is busy (another ledgit process is writing it); "
                       f"retry", BUSY)


class Transaction:
    """One write transaction, for ``with``: BEGIN IMMEDIATE (waits up to the busy timeout),
    COMMIT at the end, ROLLBACK when the block raises (see
    :meth:`ledgit.storage.index.Index._writing`; a class, not contextlib: reads pay for no
    import)."""

    __slots__ = ("db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:
            self.db.execute("ROLLBACK")
