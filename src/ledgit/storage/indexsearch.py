"""Substring search over the index (``ledgit search``, DESIGN §10): exact, case-insensitive
(NFC + Unicode casefold, SQLite ``LIKE`` with escaping; no tokenising or stemming).

Cost: a scan of every task's text, except that with a ``limit`` and sort desc/asc the
newest (oldest) tasks are looked at first (:func:`_search_window`): the same answer, often
without the full scan. What :meth:`ledgit.storage.index.Index.search` runs; imported by a search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledgit.core.errors import USAGE, LedgitError
from ledgit.storage.indextables import SORTS, fetch_rows, filters, fold, select_rows

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Sequence

MAX_SEARCH_CHARS = 10_000  # a search text, casefolded (SQLite's LIKE takes <= 50,000 bytes)
# A search with a limit, sorted by last_modified, first looks at the newest (oldest)
# 1/SEARCH_PROBE_PART of the tasks, then, if their matches promise enough, up to
# 1/SEARCH_WINDOW_PART (_search_window): when neither holds the answer, the full scan
# follows, ~5-8% slower (~17% at worst) than alone (measured on 10,000 tasks).
SEARCH_PROBE_PART = 80
SEARCH_WINDOW_PART = 20
SEARCH_WINDOW_MIN_TASKS = 4_000  # below, the ~0.1 ms of set-up alone is ~10% of a scan
# Searchable fields -> docs column (casefolded text). DEFAULT_SEARCH: what `search` covers.
SEARCH_COLUMNS = {
    "title": "x.s_title", "body": "coalesce(x.s_body, x.body)", "response": "x.s_response",
    "items": "x.s_items", "next_action": "x.s_next_action", "gate": "x.s_gate",
    "waiting_on": "x.s_waiting_on", "outcome": "x.s_outcome",
}
DEFAULT_SEARCH = ("title", "body", "response", "items")
_FOLDED_BODY = "coalesce(x.s_body, lower(x.body))"  # the body in search normal form


def search_terms(text: str, fields: Sequence[str] | None) -> tuple[str, list[str]]:
    """(the needle in search normal form, the fields to search: some of
    :data:`SEARCH_COLUMNS`, default :data:`DEFAULT_SEARCH`). Raises LedgitError exit 2 for
    empty or too long text (:data:`MAX_SEARCH_CHARS`) or an unknown field."""
    needle = fold(text)
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
    return needle, names


def search_rows(db: sqlite3.Connection, needle: str, names: list[str],
                **filtered: Any) -> list[dict[str, Any]]:
    """The rows (as :meth:`ledgit.storage.index.Index.rows`) whose fields ``names`` contain
    ``needle`` (from :func:`search_terms`), each with ``matches``: the fields that hold it.
    ``filtered``: the filters, ``sort`` and ``limit`` of :meth:`ledgit.storage.index.Index.rows`."""
    sort = filtered.pop("sort", "desc")
    limit = filtered.pop("limit", None)
    where, params = filters(**filtered)
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
        found = _search_window(db, match, where, params, sort, int(limit), extra)
    if found is None:
        # Scan the texts first (CROSS JOIN fixes the order), then look up the matches.
        source = f"docs x CROSS JOIN tasks t ON t.id = x.id AND ({match})"
        order = SORTS.get(sort)
        if limit is None or order is None:  # (select_rows refuses an unknown sort)
            found = select_rows(db, where, params, sort, limit, extra, source)
        else:
            # Sort the matches' rowids alone, then read the ``limit`` rows: a common
            # text's thousands of matches are not carried through the sort with their
            # bodies and fields (10,000 tasks, load 8, interleaved: "issue", 3,480
            # matches, 32 -> 27 ms; a text found nowhere 15 -> 13 ms; the scan itself,
            # LIKE over every text, is the rest).
            top = (f"t.rowid IN (SELECT t.rowid FROM {source} WHERE {where} "
                   f"ORDER BY {order} LIMIT ?)")
            found = select_rows(db, top, [*params, min(int(limit), 1 << 62)], sort, None,
                                extra, "tasks t CROSS JOIN docs x ON x.id = t.id")
    out = []
    for row in found:
        texts = row.pop("_extra")
        row["matches"] = [n for n, t in zip(names, texts, strict=True)
                          if t and needle in t]
        out.append(row)
    return out


def _search_window(db: sqlite3.Connection, match: str, where: str, params: list[Any],
                   sort: str, limit: int, extra: str) -> list[dict[str, Any]] | None:
    """The answer of :func:`search_rows` (sort ``desc``/``asc``, ``limit``; ``params``: the
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
        return fetch_rows(
            db,
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
