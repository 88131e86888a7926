"""The per-worktree SQLite index: open, keep fresh, query (DESIGN §1, §8, §10).

Derived and disposable: it lives in ``<private dir>/index.sqlite3`` (never committed), is
rebuilt whenever it is missing, corrupt, of another schema, of another board root or from
an earlier boot, and is never read for truth on a write path. Reads answer from it after a
stat-level freshness check (:mod:`ledgit.storage.indexrefresh`: a stat scan compared with
the stored one, changed, written and racily clean files re-checked by content).

Malformed or unreadable task files are kept as rows holding their error: queries return
valid tasks and :meth:`Index.errors` lists the others. Connections run with
``synchronous=OFF`` where the boot id can be read (see :meth:`Index._current`).

This module holds the :class:`Index` (opening and recovering the file, keeping it fresh,
asking it); where the file lives and its connections are :mod:`ledgit.storage.indexfiles`,
the freshness checks :mod:`ledgit.storage.indexrefresh`, the tables, their rows and the
list filters :mod:`ledgit.storage.indextables`, building rows (a changed file, a full
build) :mod:`ledgit.storage.indexbuild`, search :mod:`ledgit.storage.indexsearch`, and the
stat scan :mod:`ledgit.storage.taskfiles`. Import cost matters: a read that finds nothing
changed imports neither indexbuild (nor record.py and PyYAML behind it) nor indexsearch.
"""

from __future__ import annotations

import functools
import itertools
import os
import sqlite3
import sys
import time
from contextlib import suppress
from typing import TYPE_CHECKING

from ledgit.core.render import render_record
from ledgit.storage.indexbuild import build_all, build_all_written, build_row
from ledgit.storage.indexfiles import (
    BUSY_TIMEOUT,
    INDEX_NAME,
    WRITE_PATH_BUSY_TIMEOUT,
    Transaction,
    adopt_index,
    boot_id,
    busy_error,
    connect,
    file_inode,
    index_dir,
    is_busy,
    is_full,
    is_readonly,
)
from ledgit.storage.indexrefresh import (
    RefreshStats,
    examine,
    finish_fill,
    fresh_revisions,
    meta,
    refresh_scanned,
    refresh_watched,
    row_is_stale,
    unmarshal,
    watch_tokens,
)
from ledgit.storage.indexsearch import search_listing, search_matches, search_terms
from ledgit.storage.indextables import (
    SCHEMA,
    SCHEMA_VERSION,
    TABLES,
    TOUCH_SQL,
    count_rows,
    delete_rows,
    error_dict,
    filters,
    insert_rows,
    iter_rows,
    row_dict,
    select_rows,
)
from ledgit.storage.locks import file_lock
from ledgit.storage.taskfiles import Stat, file_stat, is_task_name, stat_scan

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence
    from pathlib import Path
    from typing import Any, TypeVar

    from ledgit.core.record import Record
    from ledgit.storage.board import Board
    from ledgit.storage.indexbuild import Written
    from ledgit.storage.watch import Watcher

    T = TypeVar("T")


def _recovering(method: Callable[..., T]) -> Callable[..., T]:
    """Run ``method``; on a corrupt database, rebuild it once and run it again. A busy
    database (after the busy timeout) is LedgitError exit 5, never deleted."""

    @functools.wraps(method)
    def run(self: Index, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if is_busy(exc):
                raise busy_error(self.path) from None
            if is_full(exc) and self.path != ":memory:":
                self._to_memory()  # a full disk or an I/O error: answer from memory
            else:
                self._recover()
            return method(self, *args, **kwargs)

    return run


class Index:
    """One worktree's index of one board. Open it with :meth:`Index.open`.

    The first query of an instance refreshes it (a stat scan); later queries of the same
    instance reuse that scan, so an instance is a snapshot per command: call :meth:`refresh`
    to see changes made since. :meth:`get` always re-checks its one file.
    """

    def __init__(self, board: Board, path: str, db: sqlite3.Connection, *,
                 known: Mapping[str, tuple[Record, bytes]] | None = None) -> None:
        self.board = board
        self.path = path  # the file, or ":memory:" when the private dir cannot be written
        self.db = db
        self._fresh = False
        self._tasks = board.tasks_str
        self._rel_dir = board.rel(board.tasks_str) + "/"
        self._inode: int | None = None  # of the file opened: tells a replaced file apart
        self._built: RefreshStats | None = None  # set when opening built it from scratch
        self._known = known or {}  # id -> (record, bytes): indexed without parsing (rebuild_from)
        # Set by a long-lived process that watches the tasks directory (ledgit.storage.live):
        # refresh re-checks the names it reports instead of stat-ing every file.
        self.watcher: Watcher | None = None
        self._token: str | None = None  # the watcher token this instance last stored or kept
        self._version = 0  # PRAGMA data_version when the running refresh began
        self._kept: dict[str, Any] = {}  # answers kept by _since; "" -> the database's version

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, board: Board, *, busy_timeout: float = BUSY_TIMEOUT,
             known: Mapping[str, tuple[Record, bytes]] | None = None) -> Index:
        """The board's index (``<private dir>/index.sqlite3``), built when missing, corrupt
        (sqlite3.DatabaseError) or of another schema (PRAGMA user_version). Creates the
        private dir; falls back to an in-memory index when it cannot be written. ``known``:
        see :meth:`rebuild_from`."""
        where = index_dir(board, create=True)
        if where is None:
            return cls._in_memory(board, known)
        path = os.path.join(where, INDEX_NAME)
        inode = file_inode(path)
        try:
            index = cls(board, path, connect(path, busy_timeout), known=known)
            index._prepare()
        except sqlite3.DatabaseError as exc:
            if is_busy(exc):
                raise busy_error(path) from None
            if is_readonly(exc) or is_full(exc):
                return cls._in_memory(board, known)
            try:
                index = cls._discard_and_open(board, path, busy_timeout, inode, known)
            except sqlite3.DatabaseError as again:
                if is_readonly(again) or is_full(again):  # a full disk: reads still answer
                    return cls._in_memory(board, known)
                raise
        index._inode = inode if inode is not None else file_inode(path)
        adopt_index(path)  # made by root in another user's cache: theirs (issue 36)
        return index

    @classmethod
    def open_existing(cls, board: Board, *,
                      busy_timeout: float = WRITE_PATH_BUSY_TIMEOUT) -> Index | None:
        """The index if it exists with the current schema, else None (creates nothing).
        For the write path, which must not pay for a build (DESIGN §10)."""
        where = index_dir(board, create=False)
        if where is None:
            return None
        path = os.path.join(where, INDEX_NAME)
        if not os.path.isfile(path):
            return None
        try:
            index = cls(board, path, connect(path, busy_timeout))
            if not index._current():
                index.close()
                return None
        except sqlite3.DatabaseError:
            return None
        return index

    @classmethod
    def _in_memory(cls, board: Board,
                   known: Mapping[str, tuple[Record, bytes]] | None = None) -> Index:
        index = cls(board, ":memory:", sqlite3.connect(":memory:", isolation_level=None),
                    known=known)
        index._prepare()
        return index

    @classmethod
    def _discard_and_open(cls, board: Board, path: str, busy_timeout: float,
                          broken: int | None,
                          known: Mapping[str, tuple[Record, bytes]] | None = None) -> Index:
        """Replace the corrupt index file (inode ``broken``) with a fresh build. Serialised
        by a lock file; a file another process has already replaced is used as it is."""

        with file_lock(os.path.join(os.path.dirname(path), "index.lock"), busy_timeout,
                       "the index is busy"):
            now = file_inode(path)
            if now is not None and now != broken:
                db: sqlite3.Connection | None = None
                try:
                    db = connect(path, busy_timeout)
                    index = cls(board, path, db, known=known)
                    index._prepare()
                    index._inode = now
                    return index
                except sqlite3.DatabaseError as exc:
                    if is_busy(exc):
                        raise busy_error(path) from None
                    if db is not None:
                        db.close()
            for suffix in ("", "-wal", "-shm", "-journal"):
                with suppress(FileNotFoundError):
                    os.unlink(f"{path}{suffix}")
            index = cls(board, path, connect(path, busy_timeout), known=known)
            index._prepare()
            index._inode = file_inode(path)
            return index

    def _prepare(self) -> None:
        """Create or rebuild the schema when user_version or the board root differ."""
        db = self.db
        if self._current():
            return
        if self.path != ":memory:":
            db.execute("PRAGMA journal_mode=WAL")
        with self._writing():
            if self._current():
                return  # another process built it while we waited
            db.execute("DROP TABLE IF EXISTS fts")  # an FTS5 table of a development build
            names = [r[0] for r in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%'")]
            for name in names:
                db.execute(f'DROP TABLE "{name}"')
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            self._built = self._fill()
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        self._fresh = True

    def _current(self) -> bool:
        """The file holds this schema, this board, and was written since the last boot.

        Connections run with ``synchronous=OFF`` where the boot can be told (the index is
        disposable; it saves ~4 fsyncs per write): a process crash loses nothing, and an OS
        crash or power loss, which could leave pages half written, means a new boot id and
        so a rebuild."""
        if self.db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            return False
        try:
            identity = dict(self.db.execute("SELECT key, value FROM meta WHERE key IN "
                                            "('root', 'boot')").fetchall())
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise
            return False
        return identity.get("root") == self.board.root_str and identity.get("boot") == boot_id()

    def _recover(self) -> None:
        """After a DatabaseError that is not "busy": start again from an empty file."""
        with suppress(sqlite3.Error):  # closing a broken connection
            self.db.close()
        if self.path == ":memory:":
            fresh = Index._in_memory(self.board)
        else:
            fresh = Index._discard_and_open(self.board, self.path, BUSY_TIMEOUT, self._inode)
            self._inode = fresh._inode
        self.db = fresh.db
        self._fresh = fresh._fresh

    def _to_memory(self) -> None:
        """Go on in memory (the file cannot be written: no space, an I/O error)."""
        with suppress(sqlite3.Error):
            self.db.close()
        fresh = Index._in_memory(self.board)
        self.db, self.path, self._fresh = fresh.db, ":memory:", fresh._fresh

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ freshness

    def refresh(self) -> RefreshStats:
        """Bring the index up to date with the task files (the stat scan described in the
        module docstring): re-check changed, new, dirty and racy files; drop rows of removed
        files. Writes only when something changed. Never raises for a malformed file.

        With a :attr:`watcher` (docs/watch.md) the names it reports as changed since the
        token it stored (one per watcher) replace the stat scan of every file. When its
        token is gone (another refresh wrote rows it may not vouch for:
        :func:`ledgit.storage.indexrefresh.store_tokens`), the stat scan runs and the names
        this watcher reported since this instance's own last token are re-checked too."""
        stats, self._token = self._refresh()
        return stats

    @_recovering
    def _refresh(self) -> tuple[RefreshStats, str | None]:
        """:meth:`refresh`; also returns the watcher token the refresh stored or kept."""
        started = time.perf_counter()
        scan_ns = time.time_ns()
        self._built = None
        if self.watcher is not None:  # (a plain read stores no token: no query)
            # Another connection's commit since here changes data_version (store_tokens).
            self._version = self.db.execute("PRAGMA data_version").fetchone()[0]
        # The scan blob (~30 bytes a task) is read only when it is needed.
        stored = dict(self.db.execute("SELECT key, value FROM meta WHERE key IN "
                                      "('racy', 'watch', 'scan_ns')").fetchall())
        dirty = [r[0] for r in self.db.execute("SELECT id FROM dirty")]
        racy = unmarshal(stored.get("racy"), list)
        tokens = watch_tokens(stored.get("watch"))
        mine = tokens.get(self.watcher.instance) if self.watcher is not None else None
        answer = self._watch_query(mine)
        token = answer[0] if answer is not None else None
        self._fresh = True
        if answer is not None and answer[1] is not None:
            return refresh_watched(self.db, self._tasks, self._rel_dir, self._known, answer[1],
                                   racy, dirty, answer[0], tokens, self._version, started,
                                   scan_ns), token
        if answer is not None and self._token is not None and self._token != mine:
            own = self._watch_query(self._token)  # what this watcher saw since its token
            if own is not None and own[1] is not None:
                dirty = [*dirty, *(n[:-3] for n in own[1] if is_task_name(n))]
        return refresh_scanned(self.db, self._tasks, self._rel_dir, self._known, racy, dirty,
                               token, tokens, self._version, started, scan_ns), token

    def _watch_query(self, token: Any) -> tuple[str, list[str] | None] | None:
        """The :attr:`watcher`'s answer for ``token``
        (:meth:`ledgit.storage.watch.Watcher.changes`),
        or None without a watcher (a plain process: the stat scan)."""
        if self.watcher is None:
            return None
        return self.watcher.changes(token if isinstance(token, str) else None)

    def _writing(self) -> Transaction:
        """One write transaction, for ``with`` (BEGIN IMMEDIATE: waits up to the busy
        timeout; COMMIT at the end, ROLLBACK when the block raises)."""
        return Transaction(self.db)

    @_recovering
    def rebuild(self) -> RefreshStats:
        """Drop every row and re-read every task file: one transaction, executemany
        (``ledgit cache rebuild``)."""
        if self._built is not None:  # this instance has just built it from scratch
            stats, self._built = self._built, None
            return stats
        with self._writing():
            for table in TABLES:
                self.db.execute(f"DELETE FROM {table}")
            stats = self._fill()
        self._fresh = True
        return stats

    @classmethod
    def rebuild_from(cls, board: Board,
                     known: Mapping[str, tuple[Record, bytes]]) -> RefreshStats:
        """:meth:`rebuild` (every task file read again, the index built if missing) that does
        not re-parse files just written: a file whose bytes are exactly ``known[id][1]`` is
        indexed from the record ``known[id][0]``; any other file is parsed as usual."""
        index = cls.open(board, known=known)
        try:
            return index.rebuild()
        finally:
            index.close()

    @classmethod
    def rebuild_written(cls, board: Board, written: Mapping[str, Written]) -> RefreshStats:
        """:meth:`rebuild` (the index built if missing) for a writer that has just written
        the task files and knows them: ``written[id] = (record, bytes, stat, revision)``,
        ``stat`` the writer's :func:`ledgit.storage.taskfiles.file_stat` of the file it created (of
        ``os.fstat``, or of ``os.stat`` once in place if it was renamed since: a rename
        changes the ctime) and ``revision`` the record's (:func:`ledgit.core.revision.revision_of`).
        Such a file is not read back, parsed or hashed for its revision; an entry without a
        stat (None) is read and compared with its bytes (:meth:`rebuild_from`), and every
        other file of the directory is read and parsed as usual. The rows are those
        :meth:`rebuild` would build from the same files (a wrong stat only makes the next
        refresh re-check that file by content)."""

        class _Writer(Index):
            def _fill(self) -> RefreshStats:
                return self._fill_written(written)

        index = _Writer.open(board)
        try:
            return index.rebuild()
        finally:
            index.close()

    def _fill(self) -> RefreshStats:
        """Read every task file into the (empty) tables; caller holds a write transaction."""

        started = time.perf_counter()
        scan_ns = time.time_ns()
        # A watcher's token taken before the files are read vouches for them (docs/watch.md).
        answer = self._watch_query(None)
        rows, current, unreadable = build_all(self._tasks, self._rel_dir, scan_ns, self._known)
        return finish_fill(self.db, self.board.root_str, rows, current, unreadable, answer,
                           started, scan_ns)

    def _fill_written(self, written: Mapping[str, Written]) -> RefreshStats:
        """:meth:`_fill` taking each written file's stat and revision from ``written`` (see
        :meth:`rebuild_written`); caller holds a write transaction."""

        started = time.perf_counter()
        scan_ns = time.time_ns()
        answer = self._watch_query(None)  # before the listing, as in _fill
        rows, current, unreadable = build_all_written(self._tasks, self._rel_dir, scan_ns,
                                                      written)
        return finish_fill(self.db, self.board.root_str, rows, current, unreadable, answer,
                           started, scan_ns)

    def update_one(self, record: Record, path: Path | str) -> None:
        """Refresh one task's row after a write (called by Board.mutate/create). ``record``
        must be what was written to ``path``; the next scan re-checks the file anyway, so
        a wrong call costs a re-parse, never a wrong answer."""

        base = os.path.basename(path)
        name = base[:-3] if base.endswith(".md") else base
        checked = time.time_ns()
        try:
            s = os.stat(path)
            row = build_row(self._rel_dir, name, file_stat(s), checked,
                            render_record(record).encode("utf-8"), record)
        except FileNotFoundError:
            row = None
        with self._writing():
            delete_rows(self.db, [name])
            if row is not None:
                insert_rows(self.db, [row])
            self.db.execute("INSERT OR IGNORE INTO dirty (id) VALUES (?)", (name,))

    def _ensure_fresh(self) -> None:
        if not self._fresh:
            self.refresh()

    # ------------------------------------------------------------------ queries

    @_recovering
    def rows(self, *, status: Sequence[str] | str | None = None, owner: str | None = None,
             worker: str | None = None, label: Sequence[str] | str | None = None,
             ready: bool = False, include_archived: bool = False, outcome: str | None = None,
             sort: str = "desc", limit: int | None = None,
             pending_external: bool = False) -> list[dict[str, Any]]:
        """Valid tasks matching every filter, as row dicts (see :meth:`get`), ordered by
        ``sort``: ``desc``/``asc`` (last_modified), ``priority`` (0 first, then oldest
        created) or ``created`` (newest first). Archived tasks are left out unless
        ``include_archived`` or ``status`` names archived. ``label``: every label given must
        be present. ``ready`` (DESIGN §4): open, unclaimed, every dependency done, no
        drop/no_change outcome. ``pending_external``: ready but for dependencies on other
        boards (``ALIAS:ID``), which the caller checks there (ledgit.operations.projects)."""
        self._ensure_fresh()
        where, params = filters(status, owner, worker, label, ready, include_archived,
                                    outcome, pending_external)
        return select_rows(self.db, where, params, sort, limit)

    @_recovering
    def listing(self, *, sort: str = "desc", after: Sequence[Any] | None = None,
                chunk: int = 100, **filtered: Any) -> tuple[int, Iterator[dict[str, Any]]]:
        """(how many valid tasks match the filters of :meth:`rows` in ``filtered``, their
        rows in the order of ``sort`` from just after the row whose sort key is ``after``:
        :func:`ledgit.storage.indextables.sort_key`). The rows are read lazily, ``chunk`` at
        a time, while this index stays open (DESIGN §14: a page, its total, a cursor)."""
        self._ensure_fresh()
        where, params = filters(**filtered)
        # A held index answers the same count again (_since), as an agent's first look repeats.
        total = self._since(where + repr(params), lambda: count_rows(self.db, where, params))
        return total, iter_rows(self.db, where, params, sort, after, chunk)

    def search(self, text: str, fields: Sequence[str] | None = None, *,
               limit: int | None = None, **filters: Any) -> list[dict[str, Any]]:
        """At most ``limit`` rows of :meth:`search_listing`, from the first."""
        chunk = 1_000 if limit is None else min(limit + 1, 1_000)
        rows = self.search_listing(text, fields, chunk=chunk, **filters)[1]
        return list(rows if limit is None else itertools.islice(rows, min(limit, sys.maxsize)))

    @_recovering
    def search_listing(self, text: str, fields: Sequence[str] | None = None, *,
                       sort: str = "desc", after: Sequence[Any] | None = None,
                       chunk: int = 100, **filters: Any) -> tuple[int, Iterator[dict[str, Any]]]:
        """(how many, the rows as :meth:`listing`) of the tasks whose fields contain
        ``text``: exact substring, case-insensitive (Unicode casefold of NFC text), no
        tokenising or stemming ('dialer' finds 'Dialer'; 'networking' does not find
        'network'). ``fields``: some of :data:`ledgit.storage.indexsearch.SEARCH_COLUMNS`
        (default: title, body, response, items); ``filters`` as :meth:`rows`. Each row also
        holds ``matches``: the fields that contain the text. LedgitError exit 2 for empty
        text or an unknown field. Cost: one scan of every task's text, whose matches a held
        index keeps for the next pages (:meth:`_since`)."""
        needle, names = search_terms(text, fields)
        self._ensure_fresh()
        matches = self._since(repr((needle, names, sort, sorted(filters.items()))),
                              lambda: search_matches(self.db, needle, names, sort=sort,
                                                     **filters))
        return search_listing(self.db, needle, names, matches, sort=sort, after=after,
                              chunk=chunk)

    def _since(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()``, or what it gave for ``key`` while no connection has written to
        the index since (SQLite's data_version: other connections; total_changes: this
        one). At most a few answers are kept."""
        version = (self.db.execute("PRAGMA data_version").fetchone()[0], self.db.total_changes)
        if self._kept.get("") != version or len(self._kept) > 8:
            self._kept = {"": version}
        if key not in self._kept:
            self._kept[key] = compute()
        found: T = self._kept[key]
        return found

    @_recovering
    def get(self, task_id: str) -> dict[str, Any] | None:
        """One task's row, after re-checking its one file (no board scan). None when there is
        no such file. A malformed file gives a row whose ``error`` holds the message.

        A row holds every front-matter key (unset: None or []), plus ``path`` (relative to
        the board root), ``revision``, ``body``, ``fields`` (the full front matter) and
        ``error``."""
        name = task_id
        if "/" in name or "\\" in name or name.startswith(".") or not name:
            return None
        path = os.path.join(self._tasks, f"{name}.md")
        checked = time.time_ns()
        try:
            s = os.stat(path)
            st: Stat | None = file_stat(s)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        found = self.db.execute("SELECT mtime_ns, size, ino, checked_ns FROM tasks WHERE id = ?",
                                (name,)).fetchone()
        stale = row_is_stale(found, st)
        if stale and st is None:
            with self._writing():
                delete_rows(self.db, [name])
        if st is None:
            return None
        if stale:
            touched, rows, _ = examine(self.db, self._tasks, self._rel_dir, self._known, [name],
                                       {name: st}, checked)
            if rows or found is None or (found[0], found[1], found[2]) != st:
                with self._writing():
                    self.db.executemany(TOUCH_SQL, touched)
                    delete_rows(self.db, [r.task[0] for r in rows])
                    insert_rows(self.db, rows)
        row = self.db.execute("SELECT t.id, t.path, t.revision, d.fields, d.body, t.error "
                              "FROM tasks t LEFT JOIN docs d ON d.id = t.id WHERE t.id = ?",
                              (name,)).fetchone()
        if row is None:
            return None
        if row[5] is not None:
            return error_dict(row[0], row[1], row[5])
        return row_dict(row[0], row[1], row[2], row[3], row[4])

    @_recovering
    def ids(self) -> list[str]:
        """Ids of the valid tasks, sorted."""
        self._ensure_fresh()
        return [r[0] for r in self.db.execute(
            "SELECT id FROM tasks WHERE error IS NULL ORDER BY id")]

    @_recovering
    def revisions(self) -> dict[str, str]:
        """{id: revision} of the valid tasks, archived included (one SELECT, no row
        decoded): lets a long-lived reader (the board page) re-read only what changed."""
        self._ensure_fresh()
        return {r[0]: r[1] for r in self.db.execute(
            "SELECT id, revision FROM tasks WHERE error IS NULL")}

    @_recovering
    def errors(self) -> list[tuple[str, str]]:
        """(path relative to the board root, message) of every malformed task file."""
        self._ensure_fresh()
        return [(r[0], r[1]) for r in self.db.execute(
            "SELECT path, error FROM tasks WHERE error IS NOT NULL ORDER BY path")]

    def fresh_revisions(self) -> dict[str, str]:
        """{id: revision} of every valid row whose task file is, by Git's stat rule, still
        the file the row was built from, without reading it: its (mtime_ns, size, inode) now
        equal the row's, its mtime is more than
        :data:`ledgit.storage.indexrefresh.RACY_WINDOW_NS` older than the moment the row's
        stat was taken (a later write within the clock's granularity could keep the stat:
        "racily clean"), and it was not written through :meth:`update_one` since the last
        scan (such a row holds what was rendered, not what was read back).

        Such a file parsed and validated when the row was built, and the revision was
        computed from those bytes. Read-only: refreshes nothing and writes nothing; a
        broken or busy database, or an unlistable directory, gives ``{}``. Cost: one SELECT
        and one stat per task file (``Board.verify`` uses it instead of parsing every file).
        """
        return fresh_revisions(self.db, self._tasks)

    def stale_tasks(self) -> list[str]:
        """Sorted ids whose row is not the task file as it stands (``ledgit doctor``): a task
        file without a row, a row without a file, or a row built from a file whose (mtime_ns,
        size, inode) differ from the file's now. Read-only: refreshes nothing."""
        rows = {r[0]: tuple(r[1:]) for r in self.db.execute(
            "SELECT id, mtime_ns, size, ino FROM tasks")}
        files = stat_scan(self._tasks)
        return sorted(n for n in files.keys() | rows.keys() if files.get(n) != rows.get(n))

    @_recovering
    def status(self) -> dict[str, Any]:
        """Where the index is and what it holds (no refresh): path, tasks, errors, rows,
        schema, last_scan and built (RFC 3339 UTC or None), size (bytes, incl. the WAL)."""
        total, bad = self.db.execute(
            "SELECT count(*), count(error) FROM tasks").fetchone()
        size = 0
        if self.path != ":memory:":
            for suffix in ("", "-wal"):
                with suppress(OSError):
                    size += os.stat(f"{self.path}{suffix}").st_size
        scan = meta(self.db, "scan_ns")
        built = meta(self.db, "built_ns")
        return {
            "path": str(self.path), "tasks": total - bad, "errors": bad, "rows": total,
            "schema": SCHEMA_VERSION, "last_scan": _iso(scan), "built": _iso(built),
            "size": size,
        }


# ---------------------------------------------------------------------- helpers


def _iso(ns: Any) -> str | None:
    if not isinstance(ns, int):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 1_000_000_000)) + \
        f".{ns // 1000 % 1_000_000:06d}Z"
