"""The per-worktree SQLite index: build, refresh, query (DESIGN §1, §8, §10).

Derived and disposable: it lives in ``<private dir>/index.sqlite3`` (never committed), is
rebuilt whenever it is missing, corrupt, of another schema, of another board root or from
an earlier boot, and is never read for truth on a write path. Reads answer from it after a
stat-level freshness check:

* a scan stats every ``tasks/*.md``; when the marshalled ``{stem: (time, size, inode)}``
  (:func:`file_stat`: the time is the later of mtime and ctime, Git's ``core.trustctime``)
  equals the one the previous scan stored, byte for byte, nothing changed (the common case:
  one stat per file and a memcmp; the stat syscalls are the whole cost);
* a file whose stat changed, that is new, or that was written through
  :meth:`Index.update_one` since the last scan is re-checked: read, hashed (BLAKE2b) and
  re-parsed only when the bytes differ from what the row was built from;
* Git's "racily clean" rule (DESIGN §8): a file whose time is within :data:`RACY_WINDOW_NS`
  of the scan that recorded it could change again without changing its stat (coarse clocks,
  1-2 s file systems), so it is re-checked by content on the following scans until it is
  older than that window.

Malformed or unreadable task files are kept as rows holding their error: queries return
valid tasks and :meth:`Index.errors` lists the others. Search is an exact, case-insensitive
substring match (NFC + Unicode casefold, SQLite ``LIKE`` with escaping; no tokenising).
Connections run with ``synchronous=OFF`` where the boot id can be read (see
:meth:`Index._current`). Import cost matters: only sqlite3/json/marshal at the top; hashlib
when a file is re-checked, record.py (PyYAML) only when a file must be parsed.
"""

from __future__ import annotations

import functools
import marshal
import os
import sqlite3
import time
from typing import TYPE_CHECKING

from ledgit.errors import BUSY, USAGE, LedgitError, located

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from pathlib import Path
    from typing import Any, TypeVar

    from ledgit.board import Board
    from ledgit.record import Record
    from ledgit.watch import Watcher

    T = TypeVar("T")
    # What a writer knows of a task file it has just written (Index.rebuild_written):
    # (record, bytes, (mtime_ns, size, inode) or None, revision or None).
    Written = tuple[Record, bytes, tuple[int, int, int] | None, str | None]

# lazy: ledgit.record (PyYAML behind it) only where a file must be parsed, hashlib only where
# a changed file needs a digest, ledgit.watch on first use: a read that finds nothing changed
# (bench list, <= 1.5x `ledgit --version`) imports none of them.

SCHEMA_VERSION = 10  # PRAGMA user_version; another value means: rebuild
INDEX_NAME = "index.sqlite3"
RACY_WINDOW_NS = 2_000_000_000  # FAT has 2 s mtimes; Linux's coarse clock lags by a tick
BUSY_TIMEOUT = 30.0  # seconds a reader waits for a writer (a 10k rebuild takes ~2 s)
WRITE_PATH_BUSY_TIMEOUT = 2.0  # the write path gives up on the index sooner (best effort)
MAX_SEARCH_CHARS = 10_000  # a search text, casefolded (SQLite's LIKE takes <= 50,000 bytes)
# A search with a limit, sorted by last_modified, first looks at the newest (oldest)
# 1/SEARCH_PROBE_PART of the tasks, then, if their matches promise enough, up to
# 1/SEARCH_WINDOW_PART (Index._search_window): when neither holds the answer, the full scan
# follows, ~5-8% slower (~17% at worst) than alone (measured on 10,000 tasks).
SEARCH_PROBE_PART = 80
SEARCH_WINDOW_PART = 20
SEARCH_WINDOW_MIN_TASKS = 4_000  # below, the ~0.1 ms of set-up alone is ~10% of a scan


# Every front-matter key (record.FIELD_ORDER, repeated so that reads do not import PyYAML;
# tests/test_index.py checks they agree) with the value a row holds when it is not set.
ROW_FIELDS: tuple[tuple[str, Any], ...] = (
    ("id", None), ("title", None), ("status", None), ("priority", None), ("owner", None),
    ("worker", None), ("claim", None), ("contested", []), ("depends_on", []), ("labels", []),
    ("commits", []), ("response", None), ("next_action", None), ("gate", None),
    ("waiting_on", None), ("signal", None), ("outcome", None), ("items", []),
    ("created", None), ("last_modified", None), ("x", None),
)
# Searchable fields -> docs column (casefolded text). DEFAULT_SEARCH: what `search` covers.
SEARCH_COLUMNS = {
    "title": "x.s_title", "body": "coalesce(x.s_body, x.body)", "response": "x.s_response",
    "items": "x.s_items", "next_action": "x.s_next_action", "gate": "x.s_gate",
    "waiting_on": "x.s_waiting_on", "outcome": "x.s_outcome",
}
DEFAULT_SEARCH = ("title", "body", "response", "items")
_FOLDED_BODY = "coalesce(x.s_body, lower(x.body))"  # the body in search normal form
SORTS = {
    "desc": "t.last_modified DESC, t.id ASC",
    "asc": "t.last_modified ASC, t.id ASC",
    "priority": "coalesce(t.priority, 5) ASC, t.created ASC, t.id ASC",
    "created": "t.created DESC, t.id ASC",
}
# ready (DESIGN §4, the same rule as ops/readout): open, unclaimed, no drop/no_change
# outcome, every dependency present and done.
_READY_SQL = (
    "t.status = 'open' AND t.claimed = 0"
    " AND coalesce(t.outcome_kind, '') NOT IN ('drop', 'no_change')"
    " AND NOT EXISTS (SELECT 1 FROM deps p LEFT JOIN tasks u ON u.id = p.dep"
    " AND u.error IS NULL WHERE p.id = t.id AND coalesce(u.status, '') != 'done')"
)

# open, unclaimed, no drop/no_change outcome, every local dependency done, and at least one
# dependency on another board (ALIAS:ID, ledgit.projects): ready once those are done there.
_READY_PENDING_EXTERNAL_SQL = (
    "t.status = 'open' AND t.claimed = 0"
    " AND coalesce(t.outcome_kind, '') NOT IN ('drop', 'no_change')"
    " AND EXISTS (SELECT 1 FROM deps p WHERE p.id = t.id AND instr(p.dep, ':') > 0)"
    " AND NOT EXISTS (SELECT 1 FROM deps p LEFT JOIN tasks u ON u.id = p.dep"
    " AND u.error IS NULL WHERE p.id = t.id AND instr(p.dep, ':') = 0"
    " AND coalesce(u.status, '') != 'done')"
)

_SCHEMA = """
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    mtime_ns INTEGER, size INTEGER, ino INTEGER,  -- file_stat(): later of mtime and ctime
    checked_ns INTEGER,          -- wall clock (ns) when the stat was taken
    digest BLOB,                 -- BLAKE2b-128 of the bytes the row was built from
    error TEXT,                  -- NULL for a valid task file
    title TEXT, status TEXT, priority INTEGER, owner TEXT, worker TEXT,
    claimed INTEGER NOT NULL DEFAULT 0, outcome_kind TEXT,
    last_modified TEXT, created TEXT, revision TEXT,
    labels TEXT                  -- US-separated, with a US at both ends: instr() finds one
);
CREATE INDEX tasks_last_modified ON tasks (last_modified, id);  -- id: see _search_window
CREATE INDEX tasks_errors ON tasks (path) WHERE error IS NOT NULL;
CREATE TABLE docs (
    id TEXT PRIMARY KEY,
    s_title TEXT, s_response TEXT, s_items TEXT, s_next_action TEXT, s_gate TEXT,
    s_waiting_on TEXT, s_outcome TEXT,  -- search normal form (NFC, casefold)
    s_body TEXT,                 -- the same for a non-ASCII body, else NULL: search the body
    body TEXT NOT NULL,          -- the Markdown body, verbatim
    fields BLOB NOT NULL         -- the front matter, marshal format 4 (read without json)
);
CREATE TABLE deps (id TEXT NOT NULL, dep TEXT NOT NULL, PRIMARY KEY (id, dep));
CREATE TABLE dirty (id TEXT PRIMARY KEY);  -- rows written by update_one since the last scan
CREATE TABLE meta (key TEXT PRIMARY KEY, value);
"""
_TABLES = ("tasks", "docs", "deps", "dirty", "meta")
_TOUCH_SQL = "UPDATE tasks SET mtime_ns = ?, size = ?, ino = ?, checked_ns = ? WHERE id = ?"

Stat = tuple[int, int, int]  # (change time ns, size, inode): see file_stat
_US = "\x1f"  # separates labels in tasks.labels (a label is one line of text, never this)
_MARSHAL = 2  # marshal format 2 writes no back-references, so equal scans give equal bytes


class RefreshStats:
    """What a refresh or rebuild did: ``files`` seen, files ``rechecked`` by content, files
    ``parsed``, rows ``removed``, malformed files (``errors``), whether it was a full
    rebuild (``rebuilt``), and the time it took (``seconds``)."""

    __slots__ = ("files", "rechecked", "parsed", "removed", "errors", "rebuilt", "seconds")

    def __init__(self, files: int, rechecked: int, parsed: int, removed: int, errors: int,
                 rebuilt: bool, seconds: float) -> None:
        self.files, self.rechecked, self.parsed, self.removed = files, rechecked, parsed, removed
        self.errors, self.rebuilt, self.seconds = errors, rebuilt, seconds

    def __repr__(self) -> str:
        return "RefreshStats(" + ", ".join(f"{k}={getattr(self, k)!r}"
                                           for k in self.__slots__) + ")"


class _Row:
    """The rows of one task file: ``task`` (tasks table), ``doc`` (docs table; None for a
    malformed file), ``deps`` ((id, dependency) pairs)."""

    __slots__ = ("task", "doc", "deps")

    def __init__(self, task: tuple[Any, ...], doc: tuple[Any, ...] | None,
                 deps: list[tuple[str, str]]) -> None:
        self.task, self.doc, self.deps = task, doc, deps


def _recovering(method: Callable[..., T]) -> Callable[..., T]:
    """Run ``method``; on a corrupt database, rebuild it once and run it again. A busy
    database (after the busy timeout) is LedgitError exit 5, never deleted."""

    @functools.wraps(method)
    def run(self: Index, *args: Any, **kwargs: Any) -> T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if _is_busy(exc):
                raise _busy(self.path) from None
            if _is_full(exc) and self.path != ":memory:":
                self._to_memory()  # a full disk or an I/O error: answer from memory
            else:
                self._recover()
            return method(self, *args, **kwargs)

    return run


class _Transaction:
    """See :meth:`Index._writing` (a class, not contextlib: reads pay for no import)."""

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
        # Set by a long-lived process that watches the tasks directory (ledgit.live):
        # refresh re-checks the names it reports instead of stat-ing every file.
        self.watcher: Watcher | None = None
        self._token: str | None = None  # the watcher token this instance last stored or kept

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
        inode = _inode(path)
        try:
            index = cls(board, path, _connect(path, busy_timeout), known=known)
            index._prepare()
        except sqlite3.DatabaseError as exc:
            if _is_busy(exc):
                raise _busy(path) from None
            if _is_readonly(exc) or _is_full(exc):
                return cls._in_memory(board, known)
            try:
                index = cls._discard_and_open(board, path, busy_timeout, inode, known)
            except sqlite3.DatabaseError as again:
                if _is_readonly(again) or _is_full(again):  # a full disk: reads still answer
                    return cls._in_memory(board, known)
                raise
        index._inode = inode if inode is not None else _inode(path)
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
            index = cls(board, path, _connect(path, busy_timeout))
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
        from ledgit.locks import file_lock

        with file_lock(os.path.join(os.path.dirname(path), "index.lock"), busy_timeout,
                       "the index is busy"):
            now = _inode(path)
            if now is not None and now != broken:
                db: sqlite3.Connection | None = None
                try:
                    db = _connect(path, busy_timeout)
                    index = cls(board, path, db, known=known)
                    index._prepare()
                    index._inode = now
                    return index
                except sqlite3.DatabaseError as exc:
                    if _is_busy(exc):
                        raise _busy(path) from None
                    if db is not None:
                        db.close()
            from contextlib import suppress  # a cold path: reads do not import contextlib

            for suffix in ("", "-wal", "-shm", "-journal"):
                with suppress(FileNotFoundError):
                    os.unlink(f"{path}{suffix}")
            index = cls(board, path, _connect(path, busy_timeout), known=known)
            index._prepare()
            index._inode = _inode(path)
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
            for statement in _SCHEMA.split(";"):
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
            meta = dict(self.db.execute("SELECT key, value FROM meta WHERE key IN "
                                        "('root', 'boot')").fetchall())
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise
            return False
        return meta.get("root") == self.board.root_str and meta.get("boot") == _boot_id()

    def _recover(self) -> None:
        """After a DatabaseError that is not "busy": start again from an empty file."""
        from contextlib import suppress  # a cold path: reads do not import contextlib

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
        from contextlib import suppress

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
        stored token replace the stat scan of every file. When another process stored its
        token since (another long-lived reader, a CLI read), the stat scan runs and the names
        this watcher reported since this instance's own last token are re-checked too."""
        stats, self._token = self._refresh()
        return stats

    @_recovering
    def _refresh(self) -> tuple[RefreshStats, str | None]:
        """:meth:`refresh`; also returns the watcher token the refresh stored or kept."""
        started = time.perf_counter()
        scan_ns = time.time_ns()
        self._built = None
        # The scan blob (~30 bytes a task) is read only when it is needed.
        meta = dict(self.db.execute("SELECT key, value FROM meta WHERE key IN "
                                    "('racy', 'watch', 'scan_ns')").fetchall())
        dirty = [r[0] for r in self.db.execute("SELECT id FROM dirty")]
        racy = _unmarshal(meta.get("racy"), list)
        old_token = meta.get("watch")
        answer = self._watch_query(old_token)
        token = answer[0] if answer is not None else None
        self._fresh = True
        if answer is not None and answer[1] is not None and isinstance(old_token, str):
            return self._refresh_watched(answer[1], racy, dirty, answer[0], old_token, started,
                                         scan_ns), token
        if answer is not None and self._token is not None and self._token != old_token:
            own = self._watch_query(self._token)  # what this watcher saw since its token
            if own is not None and own[1] is not None:
                dirty = [*dirty, *(n[:-3] for n in own[1] if _task_name(n))]
        blob = self._meta("scan")
        current = _stat_scan(self._tasks)
        if not racy and not dirty and blob == marshal.dumps(current, _MARSHAL):
            # The common case: nothing changed since the last scan, one memcmp. (marshal's
            # bytes follow listdir's order; another order only takes the path below.)
            self._keep_token(token, old_token)
            return RefreshStats(len(current), 0, 0, 0, 0, False,
                                time.perf_counter() - started), token
        stored = _unmarshal(blob, dict)
        horizon = scan_ns - RACY_WINDOW_NS
        candidates: list[str] = []
        new_racy: list[str] = []
        get = stored.get
        for name, st in current.items():
            if st[0] >= horizon:
                new_racy.append(name)
            if get(name) != st:
                candidates.append(name)
        seen = set(candidates)
        for name in (*racy, *dirty):
            if name in current and name not in seen:
                candidates.append(name)
                seen.add(name)
        removed = [n for n in {*stored, *dirty} if n not in current]
        touched, rows, unreadable = self._examine(candidates, current, scan_ns)
        new_racy.extend(n for n in unreadable if n not in new_racy)  # re-read until readable
        # Bytes that differ with no racy or dirty entry: a stat moved, or only listdir's order.
        moved = not racy and not dirty or any(get(n) != current[n] for n in candidates)
        if not (rows or removed or dirty or moved or sorted(new_racy) != sorted(racy)):
            self._keep_token(token, old_token)
            return RefreshStats(len(current), len(candidates), 0, 0, 0, False,
                                time.perf_counter() - started), token
        with self._writing():
            self.db.executemany(_TOUCH_SQL, touched)
            self._delete([*removed, *(r.task[0] for r in rows)])
            self._insert(rows)
            self.db.executemany("DELETE FROM dirty WHERE id = ?", [(n,) for n in dirty])
            self._store_scan(current, new_racy, scan_ns)
            self._set_meta("watch", token)
        return RefreshStats(len(current), len(candidates), len(rows), len(removed),
                            sum(1 for r in rows if r.doc is None), False,
                            time.perf_counter() - started), token

    def _refresh_watched(self, reported: list[str], racy: list[str], dirty: list[str],
                         token: str, old_token: str, started: float,
                         scan_ns: int) -> RefreshStats:
        """:meth:`refresh` on a watched board: the rows are the files as they were when
        ``old_token`` was issued, so only the names the watcher reports since (and the racy
        and dirty ones) can differ -- each is re-checked by content even when its stat agrees
        (a write that keeps size and mtime is still a write). The stored stat scan (the
        baseline of readers without a watcher, e.g. a CLI read) gets the new stats of the
        re-checked files, and those within the racy window are kept racy for such readers:
        unreported files kept their stats, so the scan stays true without a full scan."""
        names = {n[:-3] for n in reported if _task_name(n)}
        names.update(racy, dirty)
        if not names:
            self._keep_token(token, old_token)
            return RefreshStats(0, 0, 0, 0, 0, False, time.perf_counter() - started)
        current: dict[str, Stat] = {}
        removed: list[str] = []
        for name in sorted(names):
            st = _stat_one(self._tasks, name)
            if st is None:
                removed.append(name)
            else:
                current[name] = st
        touched, rows, unreadable = self._examine(list(current), current, scan_ns)
        horizon = scan_ns - RACY_WINDOW_NS
        new_racy = [n for n, st in current.items() if st[0] >= horizon]
        new_racy.extend(n for n in unreadable if n not in new_racy)  # re-read until readable
        blob = self._meta("scan")
        with self._writing():
            self.db.executemany(_TOUCH_SQL, touched)
            self._delete([*removed, *(r.task[0] for r in rows)])
            self._insert(rows)
            self.db.executemany("DELETE FROM dirty WHERE id = ?", [(n,) for n in dirty])
            if blob is not None:
                stored = _unmarshal(blob, dict)
                for name in removed:
                    stored.pop(name, None)
                stored.update(current)
                self._store_scan(stored, new_racy, scan_ns)
            else:
                self._set_meta("racy", marshal.dumps(new_racy))
            self._set_meta("watch", token)
        return RefreshStats(len(current), len(current), len(rows), len(removed),
                            sum(1 for r in rows if r.doc is None), False,
                            time.perf_counter() - started)

    def _keep_token(self, token: str | None, old_token: Any) -> None:
        """Store a newer watcher token when a refresh found nothing else to write (the
        files are as the rows say, so the token vouches for them)."""
        if token != old_token:
            with self._writing():
                self._set_meta("watch", token)

    def _watch_query(self, token: Any) -> tuple[str, list[str] | None] | None:
        """The :attr:`watcher`'s answer for ``token`` (:meth:`ledgit.watch.Watcher.changes`),
        or None without a watcher (a plain process: the stat scan)."""
        if self.watcher is None:
            return None
        return self.watcher.changes(token if isinstance(token, str) else None)

    def _writing(self) -> _Transaction:
        """One write transaction, for ``with`` (BEGIN IMMEDIATE: waits up to the busy
        timeout; COMMIT at the end, ROLLBACK when the block raises)."""
        return _Transaction(self.db)

    @_recovering
    def rebuild(self) -> RefreshStats:
        """Drop every row and re-read every task file: one transaction, executemany
        (``ledgit cache rebuild``)."""
        if self._built is not None:  # this instance has just built it from scratch
            stats, self._built = self._built, None
            return stats
        with self._writing():
            for table in _TABLES:
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
        ``stat`` the writer's :func:`file_stat` of the file it created (of ``os.fstat``, or
        of ``os.stat`` once in place if it was renamed since: a rename changes the ctime)
        and ``revision`` the record's (:func:`ledgit.revision.revision_of`).
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

    def _fill_written(self, written: Mapping[str, Written]) -> RefreshStats:
        """:meth:`_fill` taking each written file's stat and revision from ``written`` (see
        :meth:`rebuild_written`); caller holds a write transaction."""
        started = time.perf_counter()
        scan_ns = time.time_ns()
        current: dict[str, Stat] = {}
        rows: list[_Row] = []
        unreadable: list[str] = []
        answer = self._watch_query(None)  # before the listing, as in _fill
        try:
            names = sorted(os.listdir(self._tasks))
        except (FileNotFoundError, NotADirectoryError):
            names = []
        except OSError as exc:
            raise _unlisted(self._tasks, exc) from None
        for entry in names:
            if not _task_name(entry):
                continue
            name = entry[:-3]
            mine = written.get(name)
            if mine is not None and mine[2] is not None and mine[3] is not None:
                current[name] = mine[2]
                rows.append(self._build_written(name, mine[2], scan_ns, mine[1], mine[0],
                                                mine[3]))
                continue
            st = _stat_one(self._tasks, name)  # before the read: a later change shows
            if st is None:
                continue
            data = self._read(name)
            if data is None:
                continue
            current[name] = st
            if isinstance(data, OSError):
                rows.append(self._unreadable(name, st, scan_ns, data))
                unreadable.append(name)
            else:
                known = mine[0] if mine is not None and mine[1] == data else None
                rows.append(self._build(name, st, scan_ns, data, known))
        return self._finish_fill(rows, current, unreadable, answer, started, scan_ns)

    def _build_written(self, name: str, st: Stat, checked_ns: int, data: bytes,
                       record: Record, revision: str) -> _Row:
        """:meth:`_build` of a record whose revision is known (the same rows; the bytes are
        only hashed for the digest)."""
        if record.id != name:
            return self._build(name, st, checked_ns, data, record)  # the error row
        rel = self._rel_dir + name + ".md"
        head = (name, rel, st[0], st[1], st[2], checked_ns, _digest(data))
        return _valid_row(head, record, revision)

    def _fill(self) -> RefreshStats:
        """Read every task file into the (empty) tables; caller holds a write transaction."""
        started = time.perf_counter()
        scan_ns = time.time_ns()
        current: dict[str, Stat] = {}
        rows = []
        unreadable = []
        import hashlib  # noqa: F401 - loaded: every row's revision hashes with OpenSSL's sha256

        # A watcher's token taken before the files are read vouches for them (docs/watch.md).
        answer = self._watch_query(None)
        for name, st, data in _read_all(self._tasks):
            current[name] = st
            if isinstance(data, OSError):
                rows.append(self._unreadable(name, st, scan_ns, data))
                unreadable.append(name)
            else:
                rows.append(self._build(name, st, scan_ns, data))
        return self._finish_fill(rows, current, unreadable, answer, started, scan_ns)

    def _finish_fill(self, rows: list[_Row], current: dict[str, Stat], unreadable: list[str],
                     answer: tuple[str, list[str] | None] | None, started: float,
                     scan_ns: int) -> RefreshStats:
        """Store a full build (:meth:`_fill`, :meth:`_fill_written`): the rows, the stat scan,
        the racy names (re-checked by content once, watched or not), the watcher's token
        (``answer``, asked before the files were listed) and the board's identity."""
        self._set_meta("watch", answer[0] if answer is not None else None)
        # A bulk insert that fits in the page cache does not spill half-built pages.
        (size,) = self.db.execute("PRAGMA cache_size").fetchone()
        self.db.execute("PRAGMA cache_size = -65536")  # KiB
        try:
            self._insert(rows)
        finally:
            self.db.execute(f"PRAGMA cache_size = {int(size)}")
        self._store_scan(current, [n for n, st in current.items()
                                   if st[0] >= scan_ns - RACY_WINDOW_NS or n in unreadable],
                         scan_ns)
        self._set_meta("root", self.board.root_str)
        self._set_meta("boot", _boot_id())
        self._set_meta("built_ns", scan_ns)
        errors = sum(1 for r in rows if r.doc is None)
        return RefreshStats(len(current), len(rows), len(rows), 0, errors, True,
                            time.perf_counter() - started)

    def _examine(self, names: list[str], current: dict[str, Stat], scan_ns: int
                 ) -> tuple[list[tuple[int, int, int, int, str]], list[_Row], list[str]]:
        """Re-check ``names`` by content: (stat updates for files whose bytes are what their
        row was built from, rebuilt rows for the others, names that could not be read).
        Writes nothing."""
        if not names:
            return [], [], []
        digests = self._digests(names)
        touched: list[tuple[int, int, int, int, str]] = []
        rows: list[_Row] = []
        unreadable: list[str] = []
        for name in names:
            data = self._read(name)
            if data is None:
                continue
            st = current[name]
            if isinstance(data, OSError):
                rows.append(self._unreadable(name, st, scan_ns, data))
                unreadable.append(name)
            elif digests.get(name) == _digest(data):
                touched.append((st[0], st[1], st[2], scan_ns, name))
            else:
                rows.append(self._build(name, st, scan_ns, data))
        return touched, rows, unreadable

    def update_one(self, record: Record, path: Path | str) -> None:
        """Refresh one task's row after a write (called by Board.mutate/create). ``record``
        must be what was written to ``path``; the next scan re-checks the file anyway, so
        a wrong call costs a re-parse, never a wrong answer."""
        from ledgit.render import render_record

        base = os.path.basename(path)
        name = base[:-3] if base.endswith(".md") else base
        checked = time.time_ns()
        try:
            s = os.stat(path)
            row = self._build(name, file_stat(s), checked,
                              render_record(record).encode("utf-8"), record)
        except FileNotFoundError:
            row = None
        with self._writing():
            self._delete([name])
            if row is not None:
                self._insert([row])
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
        boards (``ALIAS:ID``), which the caller checks there (ledgit.projects)."""
        self._ensure_fresh()
        where, params = _filters(status, owner, worker, label, ready, include_archived,
                                 outcome, pending_external)
        return self._select(where, params, sort, limit)

    @_recovering
    def search(self, text: str, fields: Sequence[str] | None = None,
               **filters: Any) -> list[dict[str, Any]]:
        """Tasks whose fields contain ``text``: exact substring, case-insensitive (Unicode
        casefold of NFC text), no tokenising or stemming ('dialer' finds 'Dialer';
        'networking' does not find 'network'). ``fields``: some of :data:`SEARCH_COLUMNS`
        (default: title, body, response, items). ``filters``: as :meth:`rows`. Each row also
        holds ``matches``: the fields that contain the text. Raises LedgitError exit 2 for
        empty text or an unknown field. Cost: a scan of every task's text, except that with
        a ``limit`` and sort desc/asc the newest/oldest tasks are looked at first
        (:meth:`_search_window`): the same answer, often without the full scan."""
        needle = _fold(text)
        if not needle:
            raise LedgitError("search needs non-empty text", USAGE)
        if len(needle) > MAX_SEARCH_CHARS:  # SQLite refuses LIKE patterns over 50,000 bytes
            raise LedgitError(f"search text too long: {len(needle):,} characters (after case "
                              f"folding; at most {MAX_SEARCH_CHARS:,})", USAGE)
        names = list(fields) if fields else list(DEFAULT_SEARCH)
        for name in names:
            if name not in SEARCH_COLUMNS:
                raise LedgitError(f"cannot search field {name!r} (one of "
                                  f"{', '.join(SEARCH_COLUMNS)})", USAGE)
        self._ensure_fresh()
        sort = filters.pop("sort", "desc")
        limit = filters.pop("limit", None)
        where, params = _filters(**filters)
        cols = [SEARCH_COLUMNS[n] for n in names]
        # The texts in search normal form, for "matches" (an ASCII body is folded by lower():
        # casefold of ASCII); no Python folding, so no unicodedata for an ASCII needle.
        extra = ", " + ", ".join(_FOLDED_BODY if n == "body" else SEARCH_COLUMNS[n]
                                 for n in names)
        # LIKE, not instr(): SQLite runs it several times faster. The needle and the s_*
        # columns are casefolded, so LIKE's ASCII case folding changes nothing there; an
        # ASCII body is searched as it is, where LIKE's folding is exactly casefold.
        # %, _ and \\ are escaped.
        pattern = ("%" + needle.replace("\\", "\\\\").replace("%", "\\%")
                   .replace("_", "\\_") + "%")
        match = " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in cols)
        params = [pattern] * len(cols) + params
        found = None
        if limit is not None and sort in ("desc", "asc"):
            found = self._search_window(match, where, params, sort, int(limit), extra)
        if found is None:
            # Scan the texts first (CROSS JOIN fixes the order), then look up the matches.
            source = f"docs x CROSS JOIN tasks t ON t.id = x.id AND ({match})"
            found = self._select(where, params, sort, limit, extra, source)
        out = []
        for row in found:
            texts = row.pop("_extra")
            row["matches"] = [n for n, t in zip(names, texts, strict=True)
                              if t and needle in t]
            out.append(row)
        return out

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
        stale = (st is None) != (found is None) or (
            st is not None and found is not None
            and ((found[0], found[1], found[2]) != st
                 or found[0] >= (found[3] or 0) - RACY_WINDOW_NS))
        if stale and st is None:
            with self._writing():
                self._delete([name])
        if st is None:
            return None
        if stale:
            touched, rows, _ = self._examine([name], {name: st}, checked)
            if rows or found is None or (found[0], found[1], found[2]) != st:
                with self._writing():
                    self.db.executemany(_TOUCH_SQL, touched)
                    self._delete([r.task[0] for r in rows])
                    self._insert(rows)
        row = self.db.execute("SELECT t.id, t.path, t.revision, d.fields, d.body, t.error "
                              "FROM tasks t LEFT JOIN docs d ON d.id = t.id WHERE t.id = ?",
                              (name,)).fetchone()
        if row is None:
            return None
        if row[5] is not None:
            return _error_dict(row[0], row[1], row[5])
        return _row_dict(row[0], row[1], row[2], row[3], row[4])

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
        equal the row's, its mtime is more than :data:`RACY_WINDOW_NS` older than the moment
        the row's stat was taken (a later write within the clock's granularity could keep
        the stat: "racily clean"), and it was not written through :meth:`update_one` since
        the last scan (such a row holds what was rendered, not what was read back).

        Such a file parsed and validated when the row was built, and the revision was
        computed from those bytes. Read-only: refreshes nothing and writes nothing; a
        broken or busy database, or an unlistable directory, gives ``{}``. Cost: one SELECT
        and one stat per task file (``Board.verify`` uses it instead of parsing every file).
        """
        try:
            rows = self.db.execute(
                "SELECT t.id, t.mtime_ns, t.size, t.ino, t.checked_ns, t.revision FROM tasks t"
                " WHERE t.error IS NULL AND t.revision IS NOT NULL"
                " AND NOT EXISTS (SELECT 1 FROM dirty d WHERE d.id = t.id)").fetchall()
            current = _stat_scan(self._tasks)
        except (sqlite3.Error, LedgitError):
            return {}
        get = current.get
        return {tid: rev for tid, mtime, size, ino, checked, rev in rows
                if isinstance(checked, int) and isinstance(mtime, int)
                and mtime < checked - RACY_WINDOW_NS and get(tid) == (mtime, size, ino)}

    def stale_tasks(self) -> list[str]:
        """Sorted ids whose row is not the task file as it stands (``ledgit doctor``): a task
        file without a row, a row without a file, or a row built from a file whose (mtime_ns,
        size, inode) differ from the file's now. Read-only: refreshes nothing."""
        rows = {r[0]: tuple(r[1:]) for r in self.db.execute(
            "SELECT id, mtime_ns, size, ino FROM tasks")}
        files = _stat_scan(self._tasks)
        return sorted(n for n in files.keys() | rows.keys() if files.get(n) != rows.get(n))

    @_recovering
    def status(self) -> dict[str, Any]:
        """Where the index is and what it holds (no refresh): path, tasks, errors, rows,
        schema, last_scan and built (RFC 3339 UTC or None), size (bytes, incl. the WAL)."""
        total, bad = self.db.execute(
            "SELECT count(*), count(error) FROM tasks").fetchone()
        size = 0
        if self.path != ":memory:":
            from contextlib import suppress

            for suffix in ("", "-wal"):
                with suppress(OSError):
                    size += os.stat(f"{self.path}{suffix}").st_size
        scan = self._meta("scan_ns")
        built = self._meta("built_ns")
        return {
            "path": str(self.path), "tasks": total - bad, "errors": bad, "rows": total,
            "schema": SCHEMA_VERSION, "last_scan": _iso(scan), "built": _iso(built),
            "size": size,
        }

    # ------------------------------------------------------------------ internals

    def _select(self, where: str, params: list[Any], sort: str, limit: int | None,
                extra: str = "", source: str = "tasks t") -> list[dict[str, Any]]:
        order = SORTS.get(sort)
        if order is None:
            raise LedgitError(f"unknown sort {sort!r} (one of {', '.join(SORTS)})", USAGE)
        sql = (f"SELECT t.id, t.path, t.revision, d.fields, d.body{extra} FROM {source} "
               f"JOIN docs d ON d.id = t.id WHERE {where} ORDER BY {order}")
        if limit is not None:
            sql += " LIMIT ?"
            params = [*params, min(int(limit), 1 << 62)]  # SQLite's integers are 64-bit
        return self._fetch(sql, params, extra)

    def _search_window(self, match: str, where: str, params: list[Any], sort: str,
                       limit: int, extra: str) -> list[dict[str, Any]] | None:
        """The answer of :meth:`search` (sort ``desc``/``asc``, ``limit``; ``params``: the
        patterns of ``match``, then those of ``where``) when a window holds it, else None.

        A window: the tasks whose last_modified is at or past that of the K-th newest (desc)
        or oldest (asc), ties with the K-th all in, so that it is a prefix of the sort order
        and ``limit`` matches in it are the answer. A NULL last_modified sorts last in desc,
        so it is never in one; it sorts first in asc, so asc has none while a valid task
        lacks one (never: a record requires it). A window is read in sort order through the
        index (last_modified, id), which gives the id for the text's lookup; the task's row
        is read only for a text that matches; the scan stops at the ``limit``-th match (a
        partial sort puts ties in id order). That costs ~1.5 us a task (random reads), the
        full scan ~0.4-0.6 us a task, so the windows are small: the newest (oldest)
        1/:data:`SEARCH_PROBE_PART` of the tasks, then the rest of 1/:data:`SEARCH_WINDOW_PART`
        when the first one's matches promise enough."""
        db = self.db
        count = db.execute("SELECT count(*) FROM tasks").fetchone()[0]
        size = count // SEARCH_WINDOW_PART
        if count < SEARCH_WINDOW_MIN_TASKS or not 0 < limit <= size:
            return None
        way, past, before = ("DESC", ">=", "<") if sort == "desc" else ("ASC", "<=", ">")
        first_size = max(count // SEARCH_PROBE_PART, 1)
        kth = (f"(SELECT last_modified FROM tasks WHERE last_modified IS NOT NULL "
               f"ORDER BY last_modified {way} LIMIT 1 OFFSET ?)")  # index only
        guard = (" WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE last_modified IS NULL"
                 " AND error IS NULL)" if way == "ASC" else "")
        bounds = db.execute(f"SELECT {kth}, {kth}{guard}", (first_size - 1, size - 1)).fetchone()
        if bounds is None or bounds[1] is None:  # asc and a valid NULL; < K with a time
            return None

        def window(cond: str, args: list[Any], n: int) -> list[dict[str, Any]]:
            return self._fetch(
                f"SELECT t.id, t.path, t.revision, x.fields, x.body{extra} FROM tasks k "
                f"CROSS JOIN docs x ON x.id = k.id AND ({match}) CROSS JOIN tasks t "
                f"ON t.rowid = k.rowid WHERE {where} AND {cond} "
                f"ORDER BY k.last_modified {way}, k.id ASC LIMIT ?", [*params, *args, n], extra)

        found = window(f"k.last_modified {past} ?", [bounds[0]], limit)
        # On past the first window only when its rate of matches, doubled, fills the limit
        # in the whole window: a text found nowhere, or seldom, costs only the first one.
        if len(found) < limit and 2 * len(found) * size >= limit * first_size:
            found += window(f"k.last_modified {before} ? AND k.last_modified {past} ?",
                            list(bounds), limit - len(found))
        return found if len(found) == limit else None

    def _fetch(self, sql: str, params: list[Any], extra: str) -> list[dict[str, Any]]:
        out = []
        for r in self.db.execute(sql, params):
            row = _row_dict(r[0], r[1], r[2], r[3], r[4])
            if extra:
                row["_extra"] = r[5:]
            out.append(row)
        return out

    def _read(self, name: str) -> bytes | OSError | None:
        """The file's bytes; None when it is gone; the OSError when it cannot be read."""
        try:
            with open(os.path.join(self._tasks, f"{name}.md"), "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:  # a directory named x.md, no permission, ...
            return exc

    def _unreadable(self, name: str, st: Stat, checked_ns: int, exc: OSError) -> _Row:
        rel = self._rel_dir + name + ".md"
        return _error_row((name, rel, st[0], st[1], st[2], checked_ns, None),
                          f"{rel}: cannot read: {exc.strerror or exc}")

    def _build(self, name: str, st: Stat, checked_ns: int, data: bytes,
               record: Record | None = None) -> _Row:
        """Rows for one task file (parsed from ``data`` unless ``record`` is given)."""
        from ledgit.revision import sha256_function

        sha256 = sha256_function()
        rel = self._rel_dir + name + ".md"
        head = (name, rel, st[0], st[1], st[2], checked_ns, _digest(data))
        if record is None and self._known:
            mine = self._known.get(name)
            if mine is not None and mine[1] == data:
                record = mine[0]
        try:
            if record is None:
                record = _parser()(data, rel)
            if record.id != name:
                raise LedgitError(located(f"id {record.id!r} does not match the file name",
                                          rel, None, "id"))
            f = record.fields
            body = record.body
            # revision.canonical_json of the state, in two parts ("body" sorts before
            # "fields"); no float check: parsed records hold none.
            encode = _canonical()
            canonical = '{"body":' + encode(body) + ',"fields":' + encode(f) + "}"
        except LedgitError as exc:
            return _error_row(head, exc.message)
        except Exception as exc:  # noqa: BLE001 - a file must never crash a read
            return _error_row(head, f"{rel}: cannot index: {type(exc).__name__}: {exc}")
        return _valid_row(head, record, sha256(canonical.encode("utf-8")).hexdigest())

    def _insert(self, rows: list[_Row]) -> None:
        db = self.db
        db.executemany("INSERT INTO tasks VALUES (" + ", ".join("?" * 19) + ")",
                       [r.task for r in rows])
        docs = [r.doc for r in rows if r.doc is not None]
        db.executemany("INSERT INTO docs VALUES (" + ", ".join("?" * 11) + ")", docs)
        db.executemany("INSERT OR IGNORE INTO deps VALUES (?, ?)",
                       [dep for r in rows for dep in r.deps])

    def _delete(self, names: Iterable[str]) -> None:
        params = [(n,) for n in names]
        if not params:
            return
        for table in ("tasks", "docs", "deps"):
            self.db.executemany(f"DELETE FROM {table} WHERE id = ?", params)

    def _digests(self, names: list[str]) -> dict[str, bytes]:
        if len(names) > 200:
            return {r[0]: r[1] for r in self.db.execute("SELECT id, digest FROM tasks")}
        marks = ", ".join("?" * len(names))
        return {r[0]: r[1] for r in self.db.execute(
            f"SELECT id, digest FROM tasks WHERE id IN ({marks})", names)}

    def _store_scan(self, current: dict[str, Stat], racy: list[str], scan_ns: int) -> None:
        """Keep this scan: ``scan`` = marshal of {stem: stat} (compared byte for byte by the
        next refresh), ``racy`` = stems to re-check by content next time."""
        self._set_meta("scan", marshal.dumps(current, _MARSHAL))
        self._set_meta("racy", marshal.dumps(racy))
        self._set_meta("scan_ns", scan_ns)

    def _meta(self, key: str) -> Any:
        try:
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise
            return None  # no meta table yet
        return row[0] if row else None

    def _set_meta(self, key: str, value: Any) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


# ---------------------------------------------------------------------- helpers


def index_dir(board: Board, *, create: bool) -> str | None:
    """The directory of the board's index: the private dir when this user may write it
    (and the index file in it, if there is one), else this user's cache for the worktree
    (:func:`ledgit.locate.user_cache_dir`: a read-only board, a private dir or index another
    user owns; issue 13), else None (in memory). ``create``: make the directory chosen."""
    private = board.private_str
    made = True
    if create:
        try:
            os.makedirs(private, exist_ok=True)
        except OSError:
            made = False  # not ours to write: the cache below
    if made and _writable(private):
        return private
    from ledgit.locate import user_cache_dir

    cache = user_cache_dir(private)
    if cache is None:
        return None
    if create:
        try:
            os.makedirs(cache, mode=0o700, exist_ok=True)
        except OSError:
            return None
    return cache if _writable(cache) else None


def private_dir_refusal(board: Board) -> str | None:
    """Why the worktree's private dir cannot hold the index and the locks (one sentence:
    read-only, or whose it is and the fix), None when it can (issue 13)."""
    from ledgit.oserrors import owner_detail

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


def _connect(path: str, busy_timeout: float) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=busy_timeout, isolation_level=None)
    # See Index._current: without a boot id to notice an OS crash, keep SQLite's fsyncs.
    db.execute("PRAGMA synchronous = OFF" if _boot_id() else "PRAGMA synchronous = NORMAL")
    return db


@functools.lru_cache(maxsize=1)
def _boot_id() -> str | None:
    """This boot's id (Linux), or None where it cannot be read cheaply."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _unmarshal(blob: Any, kind: type[T]) -> T:
    """``marshal.loads(blob)`` when it is a ``kind``; an empty ``kind`` otherwise (a missing
    or foreign blob only means: re-check everything)."""
    if isinstance(blob, bytes):
        try:
            value = marshal.loads(blob)
        except (ValueError, EOFError, TypeError):
            value = None
        if isinstance(value, kind):
            return value
    return kind()


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _is_busy(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def _is_readonly(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def _is_full(exc: BaseException) -> bool:
    """SQLITE_FULL or SQLITE_IOERR: the disk, not the database, is the trouble."""
    text = str(exc).lower()
    return "disk is full" in text or "disk i/o error" in text


def _busy(path: str) -> LedgitError:
    return LedgitError(f"the index {path} is busy (another ledgit process is writing it); "
                       f"retry", BUSY)


_TRUST_CTIME = os.name == "posix"  # on Windows st_ctime is the creation time


def file_stat(s: os.stat_result) -> Stat:
    """A task file's stat as the index keeps it: (time, size, inode), where the time is the
    later of mtime and ctime in ns (Git's ``core.trustctime``, on by default): restoring an
    mtime (``touch -r``, ``cp -p`` of a same-size file) still changes the ctime, so a
    rewrite that keeps size and mtime is re-checked by content. Windows: mtime only."""
    return (max(s.st_mtime_ns, s.st_ctime_ns) if _TRUST_CTIME else s.st_mtime_ns,
            s.st_size, s.st_ino)


def _stat_one(tasks_dir: str, stem: str) -> Stat | None:
    """(mtime_ns, size, inode) of ``tasks/<stem>.md``; None when it is gone (or is no
    longer something a scan lists)."""
    try:
        s = os.stat(os.path.join(tasks_dir, stem + ".md"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    return file_stat(s)


@functools.lru_cache(maxsize=1)
def _canonical() -> Callable[[Any], str]:
    """revision.canonical_json without its float walk (parsed records hold none), built once
    (:func:`ledgit.canonjson.plain_encoder`); imported only when a row is built."""
    from ledgit.canonjson import plain_encoder

    return plain_encoder()


def _stat_scan(tasks_dir: Path | str) -> dict[str, Stat]:
    """{stem: (mtime_ns, size, inode)} of ``tasks/*.md`` (dot-files excluded): one stat per
    file and nothing else, the floor of a freshness check (DESIGN §10). A directory named
    ``x.md`` is listed too; reading it fails and it is skipped."""
    out: dict[str, Stat] = {}
    if os.stat in os.supports_dir_fd:
        try:
            fd = os.open(tasks_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except (FileNotFoundError, NotADirectoryError):
            return out
        except OSError as exc:
            raise _unlisted(tasks_dir, exc) from None
        try:
            stat = os.stat
            for name in os.listdir(fd):
                if _task_name(name):
                    try:
                        s = stat(name, dir_fd=fd)
                    except FileNotFoundError:
                        continue  # removed while we looked
                    out[name[:-3]] = file_stat(s)
        finally:
            os.close(fd)
        return out
    try:  # pragma: no cover - platforms without dir_fd
        entries = list(os.scandir(tasks_dir))
    except (FileNotFoundError, NotADirectoryError):  # pragma: no cover
        return out
    for entry in entries:  # pragma: no cover
        name = entry.name
        if _task_name(name):
            s = entry.stat()
            out[name[:-3]] = file_stat(s)
    return out


def _task_name(name: str) -> bool:
    """``name`` (as os.listdir gives it) is a task file's: ``*.md``, not a dot-file, and
    UTF-8 (a name with undecodable bytes, a surrogate escape here, is no task id and could
    not be stored in SQLite: the index ignores it; ``ledgit verify`` names it)."""
    if not name.endswith(".md") or name[0] == "." or len(name) <= 3:
        return False
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_all(tasks_dir: Path | str) -> Iterator[tuple[str, Stat, bytes | OSError]]:
    """(stem, stat, bytes or the OSError that prevented reading) of every ``tasks/*.md``, in
    name order: os-level reads through one directory descriptor, the stat taken by fstat on
    the open file (a cold build reads every file; a separate stat pass and the file-object
    layer are measurable)."""
    if os.open not in os.supports_dir_fd:  # pragma: no cover
        for name, st in sorted(_stat_scan(tasks_dir).items()):
            try:
                with open(os.path.join(tasks_dir, f"{name}.md"), "rb") as fh:
                    yield name, st, fh.read()
            except FileNotFoundError:
                continue
            except OSError as exc:
                yield name, st, exc
        return
    try:
        dfd = os.open(tasks_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise _unlisted(tasks_dir, exc) from None
    try:
        for entry in sorted(os.listdir(dfd)):
            if not _task_name(entry):
                continue
            try:
                fd = os.open(entry, os.O_RDONLY, dir_fd=dfd)
            except FileNotFoundError:
                continue
            except OSError as exc:  # no permission: a row that says so
                try:
                    s = os.stat(entry, dir_fd=dfd)
                except OSError:
                    continue
                yield entry[:-3], file_stat(s), exc
                continue
            data: bytes | OSError
            try:
                s = os.fstat(fd)
                st = file_stat(s)
                try:
                    data = _read_fd(fd, s.st_size)
                except OSError as exc:  # e.g. a directory named x.md
                    data = exc
            except OSError:
                continue
            finally:
                os.close(fd)
            yield entry[:-3], st, data
    finally:
        os.close(dfd)


def _read_fd(fd: int, size: int) -> bytes:
    """The rest of an open file expected to hold ``size`` bytes (one read when it does)."""
    data = os.read(fd, size)
    if len(data) != size:  # changing under us: read to the end
        chunks = [data]
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        data = b"".join(chunks)
    return data


def _unlisted(tasks_dir: Path | str, exc: OSError) -> LedgitError:
    return LedgitError(f"cannot list {tasks_dir}: {exc.strerror or exc}", USAGE)


def _digest(data: bytes) -> bytes:
    """BLAKE2b-128 of a task file's bytes: what a row was built from."""
    # lazy: hashlib loads OpenSSL (~2 ms of a ~20 ms `ledgit list`, bench list); only a
    # changed file needs a digest
    from hashlib import blake2b

    return blake2b(data, digest_size=16).digest()


@functools.lru_cache(maxsize=1)
def _parser() -> Callable[[bytes, str], Record]:
    """record.parse_record, imported only when a file must be parsed (PyYAML: ~20 ms)."""
    from ledgit.record import parse_record

    return parse_record


def _fold(text: Any) -> str | None:
    """Search normal form: NFC, then Unicode casefold ('Straße' and 'STRASSE' agree)."""
    if not text:
        return None
    s = str(text)
    if not s.isascii():
        import unicodedata

        return unicodedata.normalize("NFC", s).casefold()
    return s.lower()


def _filters(status: Sequence[str] | str | None = None, owner: str | None = None,
             worker: str | None = None, label: Sequence[str] | str | None = None,
             ready: bool = False, include_archived: bool = False,
             outcome: str | None = None,
             pending_external: bool = False) -> tuple[str, list[Any]]:
    conds = ["t.error IS NULL"]
    params: list[Any] = []
    statuses = [status] if isinstance(status, str) else list(status or ())
    if statuses:
        conds.append(f"t.status IN ({', '.join('?' * len(statuses))})")
        params.extend(statuses)
    if not include_archived and "archived" not in statuses:
        conds.append("t.status != 'archived'")
    if owner is not None:
        conds.append("t.owner = ?")
        params.append(owner)
    if worker is not None:
        conds.append("t.worker = ?")
        params.append(worker)
    for lab in [label] if isinstance(label, str) else list(label or ()):
        conds.append("instr(t.labels, ?) > 0")
        params.append(f"{_US}{lab}{_US}")
    if outcome is not None:
        conds.append("t.outcome_kind = ?")
        params.append(outcome)
    if ready:
        conds.append(_READY_SQL)
    if pending_external:
        conds.append(_READY_PENDING_EXTERNAL_SQL)
    return " AND ".join(conds), params


def _valid_row(head: tuple[Any, ...], record: Record, revision: str) -> _Row:
    """The rows of a valid task file: ``head`` = (id, path, time, size, inode, checked_ns,
    digest), the record parsed from it and its revision."""
    f = record.fields
    body = record.body
    get = f.get
    outcome = get("outcome") or {}
    labels = get("labels")
    task = (*head, None, get("title"), get("status"), get("priority"), get("owner"),
            get("worker"), 1 if "claim" in f else 0, outcome.get("kind"),
            get("last_modified"), get("created"), revision,
            _US + _US.join(labels) + _US if labels else None)
    items = get("items")
    doc_row = (head[0], _fold(get("title")), _fold(get("response")),
               _fold("\n".join(str(i[k]) for i in items for k in ("text", "why", "evidence")
                               if k in i)) if items else None,
               _fold(get("next_action")), _fold(get("gate")), _fold(get("waiting_on")),
               _fold("\n".join(str(outcome[k]) for k in ("reason", "reuse") if k in outcome))
               if outcome else None,
               None if body.isascii() else _fold(body), body, marshal.dumps(f, 4))
    deps = get("depends_on")
    return _Row(task, doc_row, [(head[0], dep) for dep in deps] if deps else [])


def _error_row(head: tuple[Any, ...], message: str) -> _Row:
    return _Row((*head, message, *([None] * 5), 0, None, None, None, None, None), None, [])


def _row_dict(task_id: str, path: str, revision: str, fields_blob: bytes,
              body: str) -> dict[str, Any]:
    stored = marshal.loads(fields_blob)
    fields = {k: stored[k] for k, _ in ROW_FIELDS if k in stored}  # the writer's key order
    row = {k: fields.get(k, list(d) if isinstance(d, list) else d) for k, d in ROW_FIELDS}
    row.update(id=task_id, path=path, revision=revision, body=body, fields=fields, error=None)
    return row


def _error_dict(task_id: str, path: str, error: str) -> dict[str, Any]:
    row = {k: list(d) if isinstance(d, list) else d for k, d in ROW_FIELDS}
    row.update(id=task_id, path=path, revision=None, body=None, fields=None, error=error)
    return row


def _iso(ns: Any) -> str | None:
    if not isinstance(ns, int):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 1_000_000_000)) + \
        f".{ns // 1000 % 1_000_000:06d}Z"
