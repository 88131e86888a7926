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
FULL_CHECK = 5.0  # seconds between two index freshness checks (in-place edits)


class DirectoryWatch:
    """``index()`` (the open index, refreshed), ``wait_changed(timeout)``, ``close()``."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self._index: Index | None = None
        self._seen = self._stamp()
        self._checked = time.monotonic()

    def _stamp(self) -> tuple[int, ...]:
        out: list[int] = []
        for path in (self.board.tasks_str, self.board.history_str):
            try:
                st = os.stat(path)
                out.extend((st.st_mtime_ns, st.st_ino))
            except OSError:
                out.extend((0, 0))
        return tuple(out)

    def index(self) -> Index:
        """The open index, brought up to date (opened on first use, in the calling thread)."""
        if self._index is None:
            self._index = Index.open(self.board)
        self._index.refresh()
        return self._index

    def wait_changed(self, timeout: float) -> bool:
        """Block until a task file or history changes (True) or ``timeout`` s pass (False)."""
        deadline = time.monotonic() + timeout
        while True:
            stamp = self._stamp()
            if stamp != self._seen:
                self._seen = stamp
                return True
            now = time.monotonic()
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
