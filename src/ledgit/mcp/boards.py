"""The boards the ``ledgit mcp`` server acts on (:class:`Boards`): the start directory's, a
directory a call's ``root`` names, or a project registered under an alias
(:mod:`ledgit.operations.projects`).

Reads answer from a :class:`ledgit.storage.live.LiveBoard` per board: the index stays open and
the tasks directory is watched in-process (at most :data:`MAX_LIVE_BOARDS` held open). A read
runs on the event loop only while its board is quiet (:meth:`Boards.quiet`); a read slower
than :data:`SLOW_READ` sends the next one to a worker thread.
"""

import contextlib
import functools
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ledgit.core.errors import NOT_FOUND, USAGE, LedgitError
from ledgit.mcp.roots import RootPolicy
from ledgit.operations import projects
from ledgit.storage.board import Board
from ledgit.storage.index import Index
from ledgit.storage.live import LiveBoard
from ledgit.storage.locate import (
    CONFIG_NAME,
    LEDGIT_DIR,
    ROOT_ENV,
    find_root,
    is_board_dir,
    upward,
)

# How an answer's board was found (``root_source``, DESIGN §14): a call's ``root`` naming a
# directory; LEDGIT_ROOT; upward from the server's start directory (where it started, or
# ``ledgit mcp --root``); a call's ``root`` naming a registered project.
ROOT_SOURCES = ("argument", "environment", "start_directory", "project_alias")
MAX_LIVE_BOARDS = 8  # boards held open at once; more are read without a held index
# A read that took longer (seconds) sends the next read of its board to a worker thread, so
# that the event loop is not held that long again: its refresh found work the watcher did
# not report (this server's index token had been dropped by another refresh: a stat scan of
# every file, 20-30 ms at 10,000 tasks, more on a loaded machine), or a big search.
SLOW_READ = 0.020


class Boards:
    """The boards this server acts on: the start directory's, and any ``root`` a call names
    (at most :data:`MAX_LIVE_BOARDS` held open)."""

    def __init__(self, start: Path, allow_roots: Iterable[str] = ()) -> None:
        self.start = start
        home, _pinned = find_root(str(start))
        self.policy = RootPolicy(str(start), home, allow_roots,
                                 None if home is None else functools.partial(_registered, home))
        self._lock = threading.Lock()
        self._live: dict[str, LiveBoard] = {}
        self._boards: dict[str, tuple[tuple[int, ...], Board]] = {}
        self._seen: dict[str, int] = {}  # root -> LiveBoard.generation at the last read
        self._slow: set[str] = set()  # roots whose last read took over SLOW_READ

    def board(self, root: str | None) -> Board:
        """The board ``root`` names (:meth:`locate`)."""
        return self.locate(root)[0]

    def locate(self, root: str | None) -> tuple[Board, str]:
        """(the board ``root`` names, how it was found: one of :data:`ROOT_SOURCES`). None:
        the start directory's board, ``LEDGIT_ROOT`` honoured as in the CLI. Raises
        LedgitError exit 4 when there is none (the message says how to name one), 2 for a
        bad path."""
        if root is None:
            found, pinned = find_root(str(self.start))
            if found is None:
                raise LedgitError(no_board(self.start, pinned), NOT_FOUND)
            return self._cached(found), "environment" if pinned else "start_directory"
        if not isinstance(root, str) or not root.strip() or "\0" in root \
                or len(root) > 4096:
            raise LedgitError("root: give a directory path", USAGE)
        other = self._project(root)
        if other is not None:
            return other, "project_alias"
        path = os.path.abspath(os.path.join(self.start, os.path.expanduser(root)))
        if not os.path.isdir(path):
            raise LedgitError(f"root: {path}: not a directory", NOT_FOUND)
        for directory in upward(path):
            if is_board_dir(os.path.join(directory, LEDGIT_DIR)):
                self.policy.check(directory, root)  # issue 26: not any board on the machine
                return self._cached(directory), "argument"
        raise LedgitError(f"root: no ledgit board in {path} or any parent", NOT_FOUND)

    def by_stats(self, root: str | None) -> bool:
        """True when finding ``root``'s board takes only stats: None or a path, not a name
        that could be a registered project (opening one may read Git: a snapshot at a ref).
        """
        return root is None or not isinstance(root, str) or not _alias_like(root)

    def _project(self, alias: str) -> Board | None:
        """The board registered as ``alias`` by the server's own board (ledgit.operations.projects),
        or None when ``alias`` is no registered alias (then it is taken as a path)."""
        if not _alias_like(alias):
            return None

        found, _pinned = find_root(str(self.start))
        if found is None:
            return None
        here = self._cached(found)
        registered = projects.registrations(here).get(alias)
        return None if registered is None else projects.open_registration(here, registered)

    def _cached(self, root: str) -> Board:
        """One Board per root, made again when its config.yaml changes (a Board reads its
        config once)."""
        try:
            st = os.stat(os.path.join(root, LEDGIT_DIR, CONFIG_NAME))
            stamp: tuple[int, ...] = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = ()
        with self._lock:
            cached = self._boards.get(root)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            board = Board(root)
            self._boards[root] = (stamp, board)
            return board

    def quiet(self, board: Board) -> bool:
        """True when a read of ``board`` is one SQLite query: it is held open, watched, its
        watcher has reported no change since the previous call of this (so the index's
        refresh re-checks no file), and its last read was quick (:meth:`took`)."""
        held = self.live(board)
        if held is None or not held.watching:
            return False
        generation = held.generation
        with self._lock:
            quiet = self._seen.get(board.root_str) == generation
            self._seen[board.root_str] = generation
            return quiet and board.root_str not in self._slow

    def took(self, board: Board, seconds: float) -> None:
        """Record how long a read of ``board`` took (wall time of the work, no thread hop):
        over :data:`SLOW_READ`, the next read is not :meth:`quiet`."""
        with self._lock:
            if seconds > SLOW_READ:
                self._slow.add(board.root_str)
            else:
                self._slow.discard(board.root_str)

    def live(self, board: Board) -> LiveBoard | None:
        """The held-open board, opened on first use; None once the limit is reached."""
        key = board.root_str
        with self._lock:
            held = self._live.get(key)
            if held is None and len(self._live) < MAX_LIVE_BOARDS:
                held = self._live[key] = LiveBoard(board)
            return held

    @contextlib.contextmanager
    def index(self, board: Board) -> Iterator[Any]:
        """An up-to-date index of ``board``: the held one, else one opened for this call."""
        held = self.live(board)
        if held is not None:
            yield held.index()
            return
        with Index.open(board) as index:
            yield index

    def close(self) -> None:
        with self._lock:
            for held in self._live.values():
                held.close()
            self._live.clear()


def no_board(start: Path, pinned: str | None) -> str:
    """The error of a call that names no board where the server has none: where it looked
    and the three ways to name one (DESIGN §14)."""
    ways = ("name one with the call's root argument (a board directory or a registered "
            "project alias), LEDGIT_ROOT in the server's environment, or ledgit mcp --root DIR")
    if pinned:
        return f"{ROOT_ENV}={pinned}: no ledgit board there; {ways}"
    return (f"no ledgit board in {start} (where this server started) or any parent; {ways} "
            f"(or make one there: ledgit init)")


def _registered(home: str) -> list[str]:
    """The roots of the projects the board at ``home`` registers (ledgit.operations.projects)."""
    return [str(reg.location) for reg in projects.registrations(Board(home)).values()]


def _alias_like(text: str) -> bool:
    """``text`` has the form of a project alias (``ledgit.operations.projects.ALIAS_RE``)."""

    return projects.ALIAS_RE.fullmatch(text) is not None
