"""Keeping the index fresh (DESIGN §8, §10): the rows of :class:`ledgit.storage.index.Index`
brought back to the task files after a stat-level check.

* a scan stats every ``tasks/*.md``; when the marshalled ``{stem: (time, size, inode)}``
  (:func:`ledgit.storage.taskfiles.file_stat`: the time is the later of mtime and ctime, Git's
  ``core.trustctime``) equals the one the previous scan stored, byte for byte, nothing
  changed (the common case: one stat per file and a memcmp; the stat syscalls are the whole
  cost);
* a file whose stat changed, that is new, or that was written through
  :meth:`ledgit.storage.index.Index.update_one` since the last scan is re-checked: read,
  hashed (BLAKE2b) and re-parsed only when the bytes differ from what the row was built from;
* Git's "racily clean" rule (DESIGN §8): a file whose time is within :data:`RACY_WINDOW_NS`
  of the scan that recorded it could change again without changing its stat (coarse clocks,
  1-2 s file systems), so it is re-checked by content on the following scans until it is
  older than that window;
* on a watched board (docs/watch.md) a long-lived reader's watcher reports the names changed
  since the token it stored in ``meta.watch``; those replace the stat scan of every file.

Functions of an open connection: what the last scan stored (``meta``), re-checking files by
content, the stat-scan and watched refreshes, storing a full build, and the stat rule that
tells a row still true without reading its file. The index keeps the state of one refresh
(the watcher, its token, ``PRAGMA data_version``) and passes it in.
"""

from __future__ import annotations

import marshal
import sqlite3
import time
from typing import TYPE_CHECKING

from ledgit.core.errors import LedgitError
from ledgit.storage.indexbuild import build_row, unreadable_row
from ledgit.storage.indexfiles import Transaction, boot_id, is_busy
from ledgit.storage.indextables import TOUCH_SQL, Row, delete_rows, digest, insert_rows
from ledgit.storage.taskfiles import Stat, is_task_name, read_task, stat_one, stat_scan

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TypeVar

    from ledgit.core.record import Record

    T = TypeVar("T")


RACY_WINDOW_NS = 2_000_000_000  # FAT has 2 s mtimes; Linux's coarse clock lags by a tick
MAX_WATCH_TOKENS = 16  # long-lived readers' tokens kept in meta.watch (the oldest go first)


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


def refresh_scanned(db: sqlite3.Connection, tasks: str, rel_dir: str,
                    known: Mapping[str, tuple[Record, bytes]], racy: list[str],
                    dirty: list[str], token: str | None, tokens: dict[str, str], version: int,
                    started: float, scan_ns: int) -> RefreshStats:
    """The stat-scan refresh of :meth:`ledgit.storage.index.Index.refresh` (no watcher, or
    one that cannot vouch for the rows): re-check changed, new, ``dirty`` and ``racy``
    files; drop rows of removed files. Writes only when something changed. ``token``,
    ``tokens``, ``version``: see :func:`store_tokens`; ``started``, ``scan_ns``: when the
    refresh began (perf_counter, wall clock)."""
    blob = meta(db, "scan")
    current = stat_scan(tasks)
    if not racy and not dirty and blob == marshal.dumps(current, _MARSHAL):
        # The common case: nothing changed since the last scan, one memcmp. (marshal's
        # bytes follow listdir's order; another order only takes the path below.)
        keep_token(db, token, tokens, version)
        return RefreshStats(len(current), 0, 0, 0, 0, False, time.perf_counter() - started)
    stored = unmarshal(blob, dict)
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
    removed = list((stored.keys() | set(dirty)) - current.keys())  # (set operations in C)
    touched, rows, unreadable = examine(db, tasks, rel_dir, known, candidates, current, scan_ns)
    new_racy.extend(n for n in unreadable if n not in new_racy)  # re-read until readable
    # Bytes that differ with no racy or dirty entry: a stat moved, or only listdir's order.
    moved = not racy and not dirty or any(get(n) != current[n] for n in candidates)
    if not (rows or removed or dirty or moved or sorted(new_racy) != sorted(racy)):
        keep_token(db, token, tokens, version)
        return RefreshStats(len(current), len(candidates), 0, 0, 0, False,
                            time.perf_counter() - started)
    with Transaction(db):
        db.executemany(TOUCH_SQL, touched)
        delete_rows(db, [*removed, *(r.task[0] for r in rows)])
        insert_rows(db, rows)
        db.executemany("DELETE FROM dirty WHERE id = ?", [(n,) for n in dirty])
        store_scan(db, current, new_racy, scan_ns)
        store_tokens(db, token, tokens, version)
    return RefreshStats(len(current), len(candidates), len(rows), len(removed),
                        sum(1 for r in rows if r.doc is None), False,
                        time.perf_counter() - started)


def refresh_watched(db: sqlite3.Connection, tasks: str, rel_dir: str,
                    known: Mapping[str, tuple[Record, bytes]], reported: list[str],
                    racy: list[str], dirty: list[str], token: str, tokens: dict[str, str],
                    version: int, started: float, scan_ns: int) -> RefreshStats:
    """:meth:`ledgit.storage.index.Index.refresh` on a watched board: the rows are the files
    as they were when this watcher's stored token was issued, so only the names it reports
    since (and the racy and dirty ones) can differ -- each is re-checked by content even
    when its stat agrees (a write that keeps size and mtime is still a write). The stored
    stat scan (the baseline of readers without a watcher, e.g. a CLI read) gets the new
    stats of the re-checked files, and those within the racy window are kept racy for such
    readers: unreported files kept their stats, so the scan stays true without a full
    scan."""
    names = {n[:-3] for n in reported if is_task_name(n)}
    names.update(racy, dirty)
    if not names:
        keep_token(db, token, tokens, version)
        return RefreshStats(0, 0, 0, 0, 0, False, time.perf_counter() - started)
    current: dict[str, Stat] = {}
    removed: list[str] = []
    for name in sorted(names):
        st = stat_one(tasks, name)
        if st is None:
            removed.append(name)
        else:
            current[name] = st
    touched, rows, unreadable = examine(db, tasks, rel_dir, known, list(current), current,
                                        scan_ns)
    horizon = scan_ns - RACY_WINDOW_NS
    new_racy = [n for n, st in current.items() if st[0] >= horizon]
    new_racy.extend(n for n in unreadable if n not in new_racy)  # re-read until readable
    blob = meta(db, "scan")
    with Transaction(db):
        db.executemany(TOUCH_SQL, touched)
        delete_rows(db, [*removed, *(r.task[0] for r in rows)])
        insert_rows(db, rows)
        db.executemany("DELETE FROM dirty WHERE id = ?", [(n,) for n in dirty])
        if blob is not None:
            stored = unmarshal(blob, dict)
            for name in removed:
                stored.pop(name, None)
            stored.update(current)
            store_scan(db, stored, new_racy, scan_ns)
        else:
            set_meta(db, "racy", marshal.dumps(new_racy))
        store_tokens(db, token, tokens, version)
    return RefreshStats(len(current), len(current), len(rows), len(removed),
                        sum(1 for r in rows if r.doc is None), False,
                        time.perf_counter() - started)


def keep_token(db: sqlite3.Connection, token: str | None, tokens: dict[str, str],
               version: int) -> None:
    """Store this watcher's newer token when a refresh found nothing else to write (the
    files are as the rows say, so the token vouches for them); other watchers' tokens
    stay, as no row changed."""
    if token is not None and tokens.get(token.partition(":")[0]) != token:
        with Transaction(db):
            store_tokens(db, token, tokens, version, wrote=False)


def store_tokens(db: sqlite3.Connection, token: str | None, seen: dict[str, str],
                 version: int, *, wrote: bool = True) -> None:
    """Store ``token`` (this refresh's watcher's, None without one) in ``meta.watch``, a
    marshal of {watcher instance: token}, one per long-lived reader (docs/watch.md);
    caller holds the write transaction. ``seen``: the tokens this refresh read before
    it read any file. Rows written (``wrote``) keep another watcher's token only when
    it is as ``seen``: it was stored before this refresh read the files it wrote, so
    they are as that token vouches or reported to its watcher since; a token stored
    meanwhile may vouch for newer files than this refresh read, so it goes (that reader
    stat-scans once). This refresh's own token is stored only when no other connection
    committed since it began (``PRAGMA data_version`` is still ``version``): else another
    refresh may have written rows older than this token's files."""
    current = watch_tokens(meta(db, "watch"))
    kept = ({k: v for k, v in current.items() if seen.get(k) == v} if wrote
            else dict(current))
    if token is not None:
        instance = token.partition(":")[0]
        kept.pop(instance, None)
        if db.execute("PRAGMA data_version").fetchone()[0] == version:
            kept[instance] = token  # newest last: the oldest go first past the limit
    if kept != current:
        while len(kept) > MAX_WATCH_TOKENS:
            del kept[next(iter(kept))]
        set_meta(db, "watch", marshal.dumps(kept) if kept else None)


def finish_fill(db: sqlite3.Connection, root: str, rows: list[Row], current: dict[str, Stat],
                unreadable: list[str], answer: tuple[str, list[str] | None] | None,
                started: float, scan_ns: int) -> RefreshStats:
    """Store a full build (:meth:`ledgit.storage.index.Index._fill`, ``_fill_written``): the
    rows, the stat scan, the racy names (re-checked by content once, watched or not), the
    watcher's token (``answer``, asked before the files were listed) and the board's
    identity (its ``root``, the boot). Caller holds the write transaction."""
    set_meta(db, "watch", marshal.dumps({answer[0].partition(":")[0]: answer[0]})
             if answer is not None else None)
    # A bulk insert that fits in the page cache does not spill half-built pages.
    (size,) = db.execute("PRAGMA cache_size").fetchone()
    db.execute("PRAGMA cache_size = -65536")  # KiB
    try:
        insert_rows(db, rows)
    finally:
        db.execute(f"PRAGMA cache_size = {int(size)}")
    store_scan(db, current, [n for n, st in current.items()
                             if st[0] >= scan_ns - RACY_WINDOW_NS or n in unreadable],
               scan_ns)
    set_meta(db, "root", root)
    set_meta(db, "boot", boot_id())
    set_meta(db, "built_ns", scan_ns)
    errors = sum(1 for r in rows if r.doc is None)
    return RefreshStats(len(current), len(rows), len(rows), 0, errors, True,
                        time.perf_counter() - started)


def examine(db: sqlite3.Connection, tasks: str, rel_dir: str,
            known: Mapping[str, tuple[Record, bytes]], names: list[str],
            current: dict[str, Stat], scan_ns: int
            ) -> tuple[list[tuple[int, int, int, int, str]], list[Row], list[str]]:
    """Re-check ``names`` by content: (stat updates for files whose bytes are what their
    row was built from, rebuilt rows for the others, names that could not be read).
    Writes nothing."""
    if not names:
        return [], [], []
    digests = _digests(db, names)
    touched: list[tuple[int, int, int, int, str]] = []
    rows: list[Row] = []
    unreadable: list[str] = []
    for name in names:
        data = read_task(tasks, name)
        if data is None:
            continue
        st = current[name]
        if isinstance(data, OSError):
            rows.append(unreadable_row(rel_dir, name, st, scan_ns, data))
            unreadable.append(name)
        elif digests.get(name) == digest(data):
            touched.append((st[0], st[1], st[2], scan_ns, name))
        else:
            rows.append(build_row(rel_dir, name, st, scan_ns, data, known=known))
    return touched, rows, unreadable


def row_is_stale(found: tuple[Any, ...] | None, st: Stat | None) -> bool:
    """Whether the row stat ``found`` ((mtime_ns, size, ino, checked_ns), None: no row) may
    not be the task file whose stat is ``st`` (None: no file): one of them is missing, the
    stats differ, or the file is racily clean (its time within :data:`RACY_WINDOW_NS` of
    the moment the row's stat was taken)."""
    return (st is None) != (found is None) or (
        st is not None and found is not None
        and ((found[0], found[1], found[2]) != st
             or found[0] >= (found[3] or 0) - RACY_WINDOW_NS))


def fresh_revisions(db: sqlite3.Connection, tasks: str) -> dict[str, str]:
    """:meth:`ledgit.storage.index.Index.fresh_revisions`: {id: revision} of every valid row
    whose task file is, by Git's stat rule, still the file the row was built from (read
    only; ``{}`` when the database or the directory cannot be read)."""
    try:
        rows = db.execute(
            "SELECT t.id, t.mtime_ns, t.size, t.ino, t.checked_ns, t.revision FROM tasks t"
            " WHERE t.error IS NULL AND t.revision IS NOT NULL"
            " AND NOT EXISTS (SELECT 1 FROM dirty d WHERE d.id = t.id)").fetchall()
        current = stat_scan(tasks)
    except (sqlite3.Error, LedgitError):
        return {}
    get = current.get
    return {tid: rev for tid, mtime, size, ino, checked, rev in rows
            if isinstance(checked, int) and isinstance(mtime, int)
            and mtime < checked - RACY_WINDOW_NS and get(tid) == (mtime, size, ino)}


def _digests(db: sqlite3.Connection, names: list[str]) -> dict[str, bytes]:
    if len(names) > 200:
        return {r[0]: r[1] for r in db.execute("SELECT id, digest FROM tasks")}
    marks = ", ".join("?" * len(names))
    return {r[0]: r[1] for r in db.execute(
        f"SELECT id, digest FROM tasks WHERE id IN ({marks})", names)}


def store_scan(db: sqlite3.Connection, current: dict[str, Stat], racy: list[str],
               scan_ns: int) -> None:
    """Keep this scan: ``scan`` = marshal of {stem: stat} (compared byte for byte by the
    next refresh), ``racy`` = stems to re-check by content next time."""
    set_meta(db, "scan", marshal.dumps(current, _MARSHAL))
    set_meta(db, "racy", marshal.dumps(racy))
    set_meta(db, "scan_ns", scan_ns)


def meta(db: sqlite3.Connection, key: str) -> Any:
    """The ``meta`` table's value for ``key``, None when there is none (or no table yet)."""
    try:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite3.OperationalError as exc:
        if is_busy(exc):
            raise
        return None  # no meta table yet
    return row[0] if row else None


def set_meta(db: sqlite3.Connection, key: str, value: Any) -> None:
    """Set the ``meta`` table's ``key``; caller holds the write transaction."""
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def watch_tokens(value: Any) -> dict[str, str]:
    """``meta.watch``: {watcher instance: its token} (:func:`store_tokens`); a lone token
    string is an index stored by one watcher at a time (before tokens per watcher)."""
    if isinstance(value, str):
        return {value.partition(":")[0]: value}
    return {k: v for k, v in unmarshal(value, dict).items()
            if isinstance(k, str) and isinstance(v, str)}


def unmarshal(blob: Any, kind: type[T]) -> T:
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
