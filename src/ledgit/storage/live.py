"""A board held open by a long-lived process: ``ledgit mcp``, the board server (DESIGN §1).

A short CLI command opens the index, does one stat scan and exits. A process a user started
on purpose and that answers many requests keeps the index open instead and watches the tasks
and history directories in-process (:class:`ledgit.storage.watch.Watcher`, inotify): a read then
costs
a drain of the inotify queue and one SQLite query, and waiters (a page's live updates) are
woken when a task file or a history changes. Where it cannot watch (not Linux, inotify limits,
``LEDGIT_WATCH=0``) every :meth:`LiveBoard.index` does the index's stat check, and a
background thread stats the two directories themselves, never their entries, every
:data:`POLL_INTERVAL` seconds for :meth:`LiveBoard.wait_changed` (:func:`directory_state`).

What that fallback sees, and what it cannot (docs/watch.md): every ledgit write replaces the
task file by a rename in the tasks directory (the history append before it is in place), and
Git's checkouts and merges create, rename and unlink files there too: each changes the
directory's mtime and ctime. A file changed in place -- a hand edit by an editor that
writes in place, a history appended alone (``ledgit record`` after such an edit) -- leaves
both directories as they were; a waiter sees it with the next change of either directory,
and :meth:`LiveBoard.index` sees it at once (its stat check looks at every task file).

Nothing here outlives its process: the one helper thread is a daemon thread, stopped by
:meth:`LiveBoard.close`. Writes are not this module's business: they go through the
operations and the board's write path (per-task locks) like the CLI's.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from typing import NamedTuple

from ledgit.storage import watch
from ledgit.storage.board import Board
from ledgit.storage.index import Index
from ledgit.storage.indexrefresh import RACY_WINDOW_NS

POLL_INTERVAL = 0.25  # seconds between two looks at the directories when not watching


class DirectoryState(NamedTuple):
    """What :func:`directory_state` saw of one directory: ``stat`` (inode, mtime_ns,
    ctime_ns, size, link count; None when it cannot be stat'ed) and ``entries`` (frozenset of
    (name, inode) from one readdir, no stat; None unless the directory changed within the
    racy window)."""

    stat: tuple[int, ...] | None
    entries: frozenset[tuple[str, int]] | None


def directory_state(path: str, now_ns: int) -> DirectoryState:
    """The state of directory ``path`` at wall clock ``now_ns`` (time.time_ns()).

    A directory's mtime has the file system's clock granularity (a few ms on Linux, 2 s on
    FAT), so a second change in the same tick as an earlier look leaves the stat as it was.
    While the mtime or ctime is within :data:`ledgit.storage.indexrefresh.RACY_WINDOW_NS` of
    ``now_ns`` the names and inode numbers of the entries are read too (readdir gives them
    without a stat): a file replaced by a rename has a new inode. Raises nothing."""
    try:
        st = os.stat(path)
    except OSError:
        return DirectoryState(None, None)
    state = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_nlink)
    if max(st.st_mtime_ns, st.st_ctime_ns) < now_ns - RACY_WINDOW_NS:
        return DirectoryState(state, None)
    try:
        with os.scandir(path) as it:
            entries = frozenset((e.name, e.inode()) for e in it)
    except OSError:
        entries = None
    return DirectoryState(state, entries)


def changed_between(old: DirectoryState, new: DirectoryState) -> bool:
    """True when ``new`` shows a change since ``old``: another stat, or other entries when
    both looks read them."""
    if old.stat != new.stat:
        return True
    return old.entries is not None and new.entries is not None and old.entries != new.entries


class LiveBoard:
    """A board held open by a long-lived process (MCP server, board server): the index stays
    open and the tasks (and history) directories are watched in-process (inotify via
    :mod:`ledgit.storage.watch`; the stat-check freshness when it cannot watch). Thread-safe: each
    thread gets its own open index (SQLite connections are per thread)."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self._cond = threading.Condition()
        self._generation = 0  # +1 per observed change of a task file or history
        self._closed = False
        self._local = threading.local()
        self._indexes: list[Index] = []
        self._watcher: watch.Watcher | None = self._open_watcher()
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="ledgit-live", daemon=True)
        self._thread.start()

    @property
    def watching(self) -> bool:
        """True while the directories are watched (inotify); False: stat checks."""
        return self._watcher is not None

    @property
    def generation(self) -> int:
        """A counter of observed changes (for :meth:`wait_changed`'s ``since``)."""
        with self._cond:
            return self._generation

    def index(self) -> Index:
        """This thread's open index, refreshed: with a watcher only the names reported as
        changed are re-checked, without one the stat scan runs. Raises LedgitError exit 5
        when the index stays busy."""
        index: Index | None = getattr(self._local, "index", None)
        if index is None:
            index = Index.open(self.board)
            index.watcher = self._watcher
            self._local.index = index
            with self._cond:
                self._indexes.append(index)
        elif index.watcher is not self._watcher:  # the watcher was replaced or dropped
            index.watcher = self._watcher
        index.refresh()
        return index

    def wait_changed(self, timeout: float, since: int | None = None) -> bool:
        """Block until a task file or a history changes (True) or ``timeout`` seconds pass
        (False; also False once closed). ``since``: a :attr:`generation` read earlier -- a
        change after it and before this call returns at once. Safe for several waiters."""
        with self._cond:
            start = self._generation if since is None else since
            changed = self._cond.wait_for(
                lambda: self._generation != start or self._closed, timeout)
            return bool(changed) and self._generation != start

    def close(self) -> None:
        """Stop the helper thread, drop the watches, close the indexes (idempotent)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")
        self._thread.join()
        os.close(self._wake_r)
        os.close(self._wake_w)
        if self._watcher is not None:
            self._watcher.close()
        for index in self._indexes:
            # Another thread's connection cannot be closed here (sqlite3's thread check);
            # it closes when that thread's index is collected.
            with contextlib.suppress(Exception):
                index.close()
        self._indexes.clear()

    def __enter__(self) -> LiveBoard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ the helper thread

    def _open_watcher(self) -> watch.Watcher | None:
        if not watch.available():
            return None
        others = [self.board.history_str] if os.path.isdir(self.board.history_str) else []
        try:
            watcher = watch.Watcher(self.board.tasks_str, others, on_events=self._bump)
        except OSError:
            return None
        return watcher

    def _bump(self) -> None:
        with self._cond:
            self._generation += 1
            self._cond.notify_all()

    def _run(self) -> None:
        seen = None if self._watcher is not None else self._directories()
        while True:
            watcher = self._watcher
            poller = select.poll()
            poller.register(self._wake_r, select.POLLIN)
            if watcher is not None:
                poller.register(watcher.fileno(), select.POLLIN)
            try:
                ready = poller.poll(int(POLL_INTERVAL * 1000))
            except OSError:  # pragma: no cover - EINTR is retried by Python (PEP 475)
                ready = []
            if any(fd == self._wake_r for fd, _ in ready):
                return
            if watcher is not None:
                watcher.drain()  # calls _bump when it applied events
                if watcher.gone is None:
                    continue
                # The tasks directory went away or was replaced: watch the new one if
                # there is one, else fall back to stat polls.
                self._watcher = self._open_watcher()
                watcher.close()
                self._bump()
                seen = None if self._watcher is not None else self._directories()
                continue
            now = self._directories()
            if seen is None or any(changed_between(a, b) for a, b in zip(seen, now,
                                                                         strict=True)):
                self._bump()
            seen = now
            if self._watcher is None and watch.available():
                self._watcher = self._open_watcher()

    def _directories(self) -> tuple[DirectoryState, DirectoryState]:
        """:func:`directory_state` of the tasks and the history directory, now."""
        now = time.time_ns()
        return (directory_state(self.board.tasks_str, now),
                directory_state(self.board.history_str, now))
