"""Building the index's rows (DESIGN §10): what a task file becomes in the tables of
:mod:`ledgit.storage.indextables`, one file at a time (a refresh that found a changed file, a write)
or every file at once (a full build).

A row records the bytes it was built from (:func:`ledgit.storage.indextables.digest`), the record's
revision (SHA-256 of its canonical JSON, as :func:`ledgit.core.revision.revision_of`), the fields a
filter needs, the texts in search normal form (:func:`ledgit.storage.indextables.fold`) and the
front matter (marshal). A file that does not parse, or cannot be read, becomes a row holding
its error: a file never crashes a read. Imported only when a row must be built.
"""

from __future__ import annotations

import functools
import marshal
import os
from typing import TYPE_CHECKING, Any

from ledgit.core.canonjson import plain_encoder
from ledgit.core.errors import LedgitError, located
from ledgit.core.record import parse_record
from ledgit.core.revision import sha256_function
from ledgit.storage.indextables import LABEL_SEP, Row, digest, fold
from ledgit.storage.taskfiles import is_task_name, read_all, read_task, stat_one, unlisted

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from ledgit.core.record import Record
    from ledgit.storage.taskfiles import Stat

    # What a writer knows of a task file it has just written (Index.rebuild_written):
    # (record, bytes, (mtime_ns, size, inode) or None, revision or None).
    Written = tuple[Record, bytes, tuple[int, int, int] | None, str | None]


def build_row(rel_dir: str, name: str, st: Stat, checked_ns: int, data: bytes,
              record: Record | None = None,
              known: Mapping[str, tuple[Record, bytes]] | None = None) -> Row:
    """The rows of the task file ``<rel_dir><name>.md`` holding ``data`` (stat ``st``, taken
    at ``checked_ns``): parsed from ``data`` unless ``record`` is given, or ``known[name]``
    holds exactly these bytes; an error row when it does not parse or its id is not
    ``name``."""

    sha256 = sha256_function()
    rel = rel_dir + name + ".md"
    head = (name, rel, st[0], st[1], st[2], checked_ns, digest(data))
    if record is None and known:
        mine = known.get(name)
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


def build_written_row(rel_dir: str, name: str, st: Stat, checked_ns: int, data: bytes,
                      record: Record, revision: str) -> Row:
    """:func:`build_row` of a record whose revision is known (the same rows; the bytes are
    only hashed for the digest)."""
    if record.id != name:
        return build_row(rel_dir, name, st, checked_ns, data, record)  # the error row
    rel = rel_dir + name + ".md"
    head = (name, rel, st[0], st[1], st[2], checked_ns, digest(data))
    return _valid_row(head, record, revision)


def unreadable_row(rel_dir: str, name: str, st: Stat, checked_ns: int, exc: OSError) -> Row:
    """The error row of a task file that cannot be read (``exc``: why)."""
    rel = rel_dir + name + ".md"
    return _error_row((name, rel, st[0], st[1], st[2], checked_ns, None),
                      f"{rel}: cannot read: {exc.strerror or exc}")


def build_all(tasks_dir: str, rel_dir: str, scan_ns: int,
              known: Mapping[str, tuple[Record, bytes]] | None = None
              ) -> tuple[list[Row], dict[str, Stat], list[str]]:
    """(rows, {stem: stat}, names that could not be read) of every task file in
    ``tasks_dir``, in name order: the full build (``known``: see :func:`build_row`)."""
    current: dict[str, Stat] = {}
    rows: list[Row] = []
    unreadable: list[str] = []
    for name, st, data in read_all(tasks_dir):
        current[name] = st
        if isinstance(data, OSError):
            rows.append(unreadable_row(rel_dir, name, st, scan_ns, data))
            unreadable.append(name)
        else:
            rows.append(build_row(rel_dir, name, st, scan_ns, data, known=known))
    return rows, current, unreadable


def build_all_written(tasks_dir: str, rel_dir: str, scan_ns: int,
                      written: Mapping[str, Written]
                      ) -> tuple[list[Row], dict[str, Stat], list[str]]:
    """:func:`build_all` taking each written file's stat and revision from ``written`` (see
    :meth:`ledgit.storage.index.Index.rebuild_written`): such a file is not read back, parsed or
    hashed for its revision; an entry without a stat is read and compared with its bytes."""
    current: dict[str, Stat] = {}
    rows: list[Row] = []
    unreadable: list[str] = []
    try:
        names = sorted(os.listdir(tasks_dir))
    except (FileNotFoundError, NotADirectoryError):
        names = []
    except OSError as exc:
        raise unlisted(tasks_dir, exc) from None
    for entry in names:
        if not is_task_name(entry):
            continue
        name = entry[:-3]
        mine = written.get(name)
        if mine is not None and mine[2] is not None and mine[3] is not None:
            current[name] = mine[2]
            rows.append(build_written_row(rel_dir, name, mine[2], scan_ns, mine[1], mine[0],
                                          mine[3]))
            continue
        st = stat_one(tasks_dir, name)  # before the read: a later change shows
        if st is None:
            continue
        data = read_task(tasks_dir, name)
        if data is None:
            continue
        current[name] = st
        if isinstance(data, OSError):
            rows.append(unreadable_row(rel_dir, name, st, scan_ns, data))
            unreadable.append(name)
        else:
            record = mine[0] if mine is not None and mine[1] == data else None
            rows.append(build_row(rel_dir, name, st, scan_ns, data, record))
    return rows, current, unreadable


def _valid_row(head: tuple[Any, ...], record: Record, revision: str) -> Row:
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
            LABEL_SEP + LABEL_SEP.join(labels) + LABEL_SEP if labels else None)
    items = get("items")
    doc_row = (head[0], fold(get("title")), fold(get("response")),
               fold("\n".join(str(i[k]) for i in items for k in ("text", "why", "evidence")
                               if k in i)) if items else None,
               fold(get("next_action")), fold(get("gate")), fold(get("waiting_on")),
               fold("\n".join(str(outcome[k]) for k in ("reason", "reuse") if k in outcome))
               if outcome else None,
               None if body.isascii() else fold(body), body, marshal.dumps(f, 4))
    deps = get("depends_on")
    return Row(task, doc_row, [(head[0], dep) for dep in deps] if deps else [])


def _error_row(head: tuple[Any, ...], message: str) -> Row:
    return Row((*head, message, *([None] * 5), 0, None, None, None, None, None), None, [])


@functools.lru_cache(maxsize=1)
def _parser() -> Callable[[bytes, str], Record]:
    """record.parse_record, imported only when a file must be parsed."""

    return parse_record


@functools.lru_cache(maxsize=1)
def _canonical() -> Callable[[Any], str]:
    """revision.canonical_json without its float walk (parsed records hold none), built once
    (:func:`ledgit.core.canonjson.plain_encoder`); imported only when a row is built."""

    return plain_encoder()
