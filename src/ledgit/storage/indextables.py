"""The tables of the index (DESIGN §10): their schema, the row dicts read back from them,
and the filters and orders of the list queries.

``tasks`` holds one row per task file (its stat, digest, error and the fields a filter
needs), ``docs`` the texts and the front matter (marshal format 4), ``deps`` the
dependency pairs, ``dirty`` the ids written through the write path since the last scan,
``meta`` the stored scan and the board's identity. Only sqlite3's SQL and marshal: reads
import this module (building rows is :mod:`ledgit.storage.indexbuild`).
"""

from __future__ import annotations

import marshal
import unicodedata
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

from ledgit.core.errors import USAGE, LedgitError

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable, Iterator, Sequence

SCHEMA_VERSION = 10  # PRAGMA user_version; another value means: rebuild

ROW_FIELDS: tuple[tuple[str, Any], ...] = (
    ("id", None), ("title", None), ("status", None), ("priority", None), ("owner", None),
    ("worker", None), ("claim", None), ("contested", []), ("depends_on", []), ("labels", []),
    ("commits", []), ("response", None), ("next_action", None), ("gate", None),
    ("waiting_on", None), ("signal", None), ("outcome", None), ("items", []), ("notes", []),
    ("created", None), ("last_modified", None), ("x", None),
)


# Each sort as its keys: (SQL expression, descending, the row's key), the id last, so that
# the order is total and stable (DESIGN §14). SORTS is its ORDER BY; a cursor holds one row's
# values of these keys (sort_key) and seek() continues after it.
SORT_KEYS: dict[str, tuple[tuple[str, bool, str], ...]] = {
    "desc": (("t.last_modified", True, "last_modified"), ("t.id", False, "id")),
    "asc": (("t.last_modified", False, "last_modified"), ("t.id", False, "id")),
    "priority": (("coalesce(t.priority, 5)", False, "priority"),
                 ("t.created", False, "created"), ("t.id", False, "id")),
    "created": (("t.created", True, "created"), ("t.id", False, "id")),
}
SORTS = {name: ", ".join(f"{expr} {'DESC' if desc else 'ASC'}" for expr, desc, _ in keys)
         for name, keys in SORT_KEYS.items()}
NO_PRIORITY = 5  # where a task without a priority sorts (after 4)


READY_SQL = (
    "t.status = 'open' AND t.claimed = 0"
    " AND coalesce(t.outcome_kind, '') NOT IN ('drop', 'no_change')"
    " AND NOT EXISTS (SELECT 1 FROM deps p LEFT JOIN tasks u ON u.id = p.dep"
    " AND u.error IS NULL WHERE p.id = t.id AND coalesce(u.status, '') != 'done')"
)


READY_PENDING_EXTERNAL_SQL = (
    "t.status = 'open' AND t.claimed = 0"
    " AND coalesce(t.outcome_kind, '') NOT IN ('drop', 'no_change')"
    " AND EXISTS (SELECT 1 FROM deps p WHERE p.id = t.id AND instr(p.dep, ':') > 0)"
    " AND NOT EXISTS (SELECT 1 FROM deps p LEFT JOIN tasks u ON u.id = p.dep"
    " AND u.error IS NULL WHERE p.id = t.id AND instr(p.dep, ':') = 0"
    " AND coalesce(u.status, '') != 'done')"
)


SCHEMA = """
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


TABLES = ("tasks", "docs", "deps", "dirty", "meta")


TOUCH_SQL = "UPDATE tasks SET mtime_ns = ?, size = ?, ino = ?, checked_ns = ? WHERE id = ?"


LABEL_SEP = "\x1f"  # separates labels in tasks.labels (a label is one line, never this)


class Row:
    """The rows of one task file: ``task`` (tasks table), ``doc`` (docs table; None for a
    malformed file), ``deps`` ((id, dependency) pairs)."""

    __slots__ = ("task", "doc", "deps")

    def __init__(self, task: tuple[Any, ...], doc: tuple[Any, ...] | None,
                 deps: list[tuple[str, str]]) -> None:
        self.task, self.doc, self.deps = task, doc, deps


def filters(status: Sequence[str] | str | None = None, owner: str | None = None,
             worker: str | None = None, label: Sequence[str] | str | None = None,
             ready: bool = False, include_archived: bool = False,
             outcome: str | None = None,
             pending_external: bool = False) -> tuple[str, list[Any]]:
    """(WHERE clause over ``tasks t``, its parameters) for the filters of
    :meth:`ledgit.storage.index.Index.rows` (ready: DESIGN §4)."""
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
        params.append(f"{LABEL_SEP}{lab}{LABEL_SEP}")
    if outcome is not None:
        conds.append("t.outcome_kind = ?")
        params.append(outcome)
    if ready:
        conds.append(READY_SQL)
    if pending_external:
        conds.append(READY_PENDING_EXTERNAL_SQL)
    return " AND ".join(conds), params


def row_dict(task_id: str, path: str, revision: str, fields_blob: bytes,
             body: str) -> dict[str, Any]:
    """A valid task's row as a query returns it (see :meth:`ledgit.storage.index.Index.get`)."""
    stored = marshal.loads(fields_blob)
    fields = {k: stored[k] for k, _ in ROW_FIELDS if k in stored}  # the writer's key order
    row = {k: fields.get(k, list(d) if isinstance(d, list) else d) for k, d in ROW_FIELDS}
    row.update(id=task_id, path=path, revision=revision, body=body, fields=fields, error=None)
    return row


def error_dict(task_id: str, path: str, error: str) -> dict[str, Any]:
    """A malformed task file's row: every field unset, ``error`` its message."""
    row = {k: list(d) if isinstance(d, list) else d for k, d in ROW_FIELDS}
    row.update(id=task_id, path=path, revision=None, body=None, fields=None, error=error)
    return row


def digest(data: bytes) -> bytes:
    """BLAKE2b-128 of a task file's bytes: what a row was built from (``tasks.digest``)."""

    return blake2b(data, digest_size=16).digest()


def fold(text: Any) -> str | None:
    """Search normal form: NFC, then Unicode casefold ('Straße' and 'STRASSE' agree)."""
    if not text:
        return None
    s = str(text)
    if not s.isascii():

        return unicodedata.normalize("NFC", s).casefold()
    return s.lower()


def sort_key(sort: str, row: dict[str, Any]) -> list[Any]:
    """The values of ``sort``'s keys (:data:`SORT_KEYS`) for one row dict: what a cursor
    holds to continue after that row (:func:`seek`)."""
    key = []
    for _expr, _desc, name in SORT_KEYS[sort]:
        value = row.get(name)
        key.append(NO_PRIORITY if name == "priority" and value is None else value)
    return key


def key_fits(sort: str, key: Any) -> bool:
    """``key`` has the shape of a :func:`sort_key` of ``sort``: a list of its keys' values,
    the priority an integer, the rest strings."""
    keys = SORT_KEYS.get(sort)
    return keys is not None and isinstance(key, (list, tuple)) and len(key) == len(keys) \
        and all(type(v) is (int if name == "priority" else str)
                for v, (_expr, _desc, name) in zip(key, keys, strict=True))


def comes_after(sort: str, key: Sequence[Any], after: Sequence[Any]) -> bool:
    """Whether the row whose :func:`sort_key` is ``key`` comes after the one whose key is
    ``after`` in the order of ``sort`` (what :func:`seek` asks SQLite, for rows in memory)."""
    for (_expr, desc, _name), mine, theirs in zip(SORT_KEYS[sort], key, after, strict=True):
        if mine != theirs:
            return bool(mine < theirs) if desc else bool(mine > theirs)
    return False


def seek(sort: str, after: Sequence[Any]) -> tuple[str, list[Any]]:
    """(a condition over ``tasks t``, its parameters) true for the rows that come after the
    row whose :func:`sort_key` is ``after`` in the order of ``sort``. A leading bound on the
    first key lets SQLite start a range of its index there. LedgitError exit 2 for a key of
    another shape (a cursor of another sort)."""
    if not key_fits(sort, after):
        raise LedgitError(f"a position of another order than {sort!r}", USAGE)
    keys = SORT_KEYS[sort]
    terms, params = [], []
    for i, (expr, desc, _name) in enumerate(keys):
        same = [f"{keys[j][0]} = ?" for j in range(i)]
        terms.append(" AND ".join([*same, f"{expr} {'<' if desc else '>'} ?"]))
        params += list(after[:i + 1])
    first = f"{keys[0][0]} {'<=' if keys[0][1] else '>='} ?"
    return f"{first} AND (({') OR ('.join(terms)}))", [after[0], *params]


def count_rows(db: sqlite3.Connection, where: str, params: list[Any]) -> int:
    """How many valid tasks of ``tasks t`` match ``where`` (no row read beyond the table)."""
    return int(db.execute(f"SELECT count(*) FROM tasks t WHERE {where}", params).fetchone()[0])


def iter_rows(db: sqlite3.Connection, where: str, params: list[Any], sort: str,
              after: Sequence[Any] | None, chunk: int) -> Iterator[dict[str, Any]]:
    """Row dicts (:func:`row_dict`) of the valid tasks matching ``where``, in the order of
    ``sort``, from just after ``after`` (a :func:`sort_key`; None: from the first), read
    lazily ``chunk`` rows at a time, each chunk continuing after the last row read (a
    position, not an offset: a row written meanwhile moves, it does not shift the rest)."""
    position = list(after) if after is not None else None
    size = max(int(chunk), 1)
    while True:
        cond, args = where, params
        if position is not None:
            more, more_params = seek(sort, position)
            cond, args = f"{where} AND {more}", [*params, *more_params]
        found = select_rows(db, cond, args, sort, size)
        yield from found
        if len(found) < size:
            return
        position = sort_key(sort, found[-1])
        size = min(size * 4, 1_000)


def select_rows(db: sqlite3.Connection, where: str, params: list[Any], sort: str,
                limit: int | None, extra: str = "", source: str = "tasks t"
                ) -> list[dict[str, Any]]:
    """Row dicts (:func:`row_dict`) of the valid tasks of ``source`` matching ``where``
    (``params`` its values), in the order ``sort`` names (:data:`SORTS`), at most ``limit``;
    ``extra``: more columns, kept in each row as ``_extra``. LedgitError exit 2 for an
    unknown sort."""
    order = SORTS.get(sort)
    if order is None:
        raise LedgitError(f"unknown sort {sort!r} (one of {', '.join(SORTS)})", USAGE)
    sql = (f"SELECT t.id, t.path, t.revision, d.fields, d.body{extra} FROM {source} "
           f"JOIN docs d ON d.id = t.id WHERE {where} ORDER BY {order}")
    if limit is not None:
        sql += " LIMIT ?"
        params = [*params, min(int(limit), 1 << 62)]  # SQLite's integers are 64-bit
    return fetch_rows(db, sql, params, extra)


def fetch_rows(db: sqlite3.Connection, sql: str, params: list[Any], extra: str
               ) -> list[dict[str, Any]]:
    """Row dicts of ``sql`` (id, path, revision, fields, body, then ``extra``'s columns)."""
    out = []
    for r in db.execute(sql, params):
        row = row_dict(r[0], r[1], r[2], r[3], r[4])
        if extra:
            row["_extra"] = r[5:]
        out.append(row)
    return out


def insert_rows(db: sqlite3.Connection, rows: list[Row]) -> None:
    """Insert ``rows`` (caller holds a write transaction; their ids have no rows)."""
    db.executemany("INSERT INTO tasks VALUES (" + ", ".join("?" * 19) + ")",
                   [r.task for r in rows])
    docs = [r.doc for r in rows if r.doc is not None]
    db.executemany("INSERT INTO docs VALUES (" + ", ".join("?" * 11) + ")", docs)
    db.executemany("INSERT OR IGNORE INTO deps VALUES (?, ?)",
                   [dep for r in rows for dep in r.deps])


def delete_rows(db: sqlite3.Connection, names: Iterable[str]) -> None:
    """Delete every row of the ids ``names`` (caller holds a write transaction)."""
    params = [(n,) for n in names]
    if not params:
        return
    for table in ("tasks", "docs", "deps"):
        db.executemany(f"DELETE FROM {table} WHERE id = ?", params)
