"""A stand-in for :class:`ledgit.live.LiveBoard` (the MCP issue's in-process watcher) with
the same interface, used by ``board --serve`` while that module is not in this tree.

It watches two directories, not every task file: a ledgit write replaces the task file by a
rename (DESIGN §6) and Git's checkout, merge and reset replace files too, and each of these
changes the mtime of ``.ledgit/tasks`` (or ``.ledgit/history``), so one ``stat`` of each
directory every :data:`TICK` seconds notices them. An edit made in place (an editor that
writes into the same inode) changes no directory: every :data:`FULL_CHECK` seconds the index's
own freshness check (:meth:`ledgit.index.Index.refresh`: a stat scan, or the inotify
watcher's answer where it runs) catches those.
"""

from __future__ import annotations

import os
import time

from ledgit.board import Board
from ledgit.index import Index

TICK = 0.1  # seconds between two looks at the directories
SETTLE = 0.03  # seconds to wait after a change for the rest of the same write
HISTORY_GRACE = 0.5  # seconds a change of the history directory alone waits for its task
FULL_CHECK = 5.0  # seconds between two index freshness checks (in-place edits)


class DirectoryWatch:
    """``index()`` (the open index, refreshed), ``wait_changed(timeout)``, ``close()``."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self._index: Index | None = None
        self._tasks = self._stamp(board.tasks_str)
        self._history = self._stamp(board.history_str)
        self._history_moved: float | None = None
        self._checked = time.monotonic()

    @staticmethod
    def _stamp(path: str) -> tuple[int, int]:
        try:
            st = os.stat(path)
        except OSError:
            return (0, 0)
        return (st.st_mtime_ns, st.st_ino)

    def index(self) -> Index:
        """The open index, brought up to date (opened on first use, in the calling thread)."""
        if self._index is None:
            self._index = Index.open(self.board)
        self._index.refresh()
        return self._index

    def wait_changed(self, timeout: float) -> bool:
        """Block until a task file or history changes (True) or ``timeout`` s pass (False).

        A new history file comes before its task file (the write path appends the history
        first, DESIGN §6): a change of the history directory alone counts only once it has
        stood for :data:`HISTORY_GRACE` s, so that one ``create`` is one change."""
        deadline = time.monotonic() + timeout
        while True:
            now = time.monotonic()
            tasks = self._stamp(self.board.tasks_str)
            history = self._stamp(self.board.history_str)
            if tasks != self._tasks:
                time.sleep(SETTLE)  # the rest of the same write (or checkout)
                self._tasks = self._stamp(self.board.tasks_str)
                self._history = self._stamp(self.board.history_str)
                self._history_moved = None
                return True
            if history != self._history:
                if self._history_moved is None:
                    self._history_moved = now
                elif now - self._history_moved >= HISTORY_GRACE:
                    self._history, self._history_moved = history, None
                    return True
            if now - self._checked >= FULL_CHECK:
                self._checked = now
                if self._index is not None:
                    stats = self._index.refresh()
                    if stats.parsed or stats.removed or stats.errors:
                        return True
            if now >= deadline:
                return False
            time.sleep(min(TICK, max(deadline - now, 0.0)))

    def close(self) -> None:
        """Close the index."""
        if self._index is not None:
            self._index.close()
            self._index = None
