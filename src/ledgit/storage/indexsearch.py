"""Substring search over the index (``ledgit search``, DESIGN §10): exact, case-insensitive
(NFC + Unicode casefold, SQLite ``LIKE`` with escaping; no tokenising or stemming).

Cost: one scan of every task's text, which gives every match's row id and its place in the
order (an answer says how many match: DESIGN §14, ``total``); only the rows of the page are
read. What :meth:`ledgit.storage.index.Index.search_listing` runs; imported by a search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledgit.core.errors import USAGE, LedgitError
from ledgit.storage.indextables import (
    SORT_KEYS,
    SORTS,
    comes_after,
    filters,
    fold,
    key_fits,
    select_rows,
)

if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterator, Sequence

MAX_SEARCH_CHARS = 10_000  # a search text, casefolded (SQLite's LIKE takes <= 50,000 bytes)
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


def search_matches(db: sqlite3.Connection, needle: str, names: list[str], *,
                   sort: str = "desc", **filtered: Any) -> list[tuple[Any, ...]]:
    """``(rowid, *sort key)`` of every task whose fields ``names`` contain ``needle`` (from
    :func:`search_terms`) and that passes the filters of
    :meth:`ledgit.storage.index.Index.rows` (``filtered``), in the order of ``sort``
    (:data:`ledgit.storage.indextables.SORT_KEYS`): one scan of the texts. LedgitError exit
    2 for an unknown sort."""
    keys = SORT_KEYS.get(sort)
    if keys is None:
        raise LedgitError(f"unknown sort {sort!r} (one of {', '.join(SORTS)})", USAGE)
    where, params = filters(**filtered)
    cols = [SEARCH_COLUMNS[n] for n in names]
    # LIKE, not instr(): SQLite runs it several times faster. The needle and the s_*
    # columns are casefolded, so LIKE's ASCII case folding changes nothing there; an
    # ASCII body is searched as it is, where LIKE's folding is exactly casefold.
    # %, _ and \\ are escaped.
    pattern = ("%" + needle.replace("\\", "\\\\").replace("%", "\\%")
               .replace("_", "\\_") + "%")
    match = " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in cols)
    # Scan the texts first (CROSS JOIN fixes the order), then look up the matches' keys:
    # a text's thousands of matches are not carried through the sort with their bodies.
    return db.execute(
        f"SELECT t.rowid, {', '.join(expr for expr, _desc, _name in keys)} FROM docs x "
        f"CROSS JOIN tasks t ON t.id = x.id AND ({match}) WHERE {where} "
        f"ORDER BY {SORTS[sort]}", [*[pattern] * len(cols), *params]).fetchall()


def search_listing(db: sqlite3.Connection, needle: str, names: list[str],
                   matches: list[tuple[Any, ...]], *, sort: str = "desc",
                   after: Sequence[Any] | None = None, chunk: int = 100
                   ) -> tuple[int, Iterator[dict[str, Any]]]:
    """(how many tasks match, their rows in the order of ``sort`` from just after the row
    whose sort key is ``after``: :func:`ledgit.storage.indextables.sort_key`) of the
    ``matches`` of :func:`search_matches` (same needle, names and sort); each row also holds
    ``matches``, the fields that contain the needle. The rows are read lazily, ``chunk`` at
    a time, by row id. LedgitError exit 2 for a position of another order."""
    start = 0
    if after is not None:
        if not key_fits(sort, after):
            raise LedgitError(f"a position of another order than {sort!r}", USAGE)
        low, high = 0, len(matches)  # the first match that comes after it (a sorted list)
        while low < high:
            mid = (low + high) // 2
            if comes_after(sort, matches[mid][1:], after):
                high = mid
            else:
                low = mid + 1
        start = low
    return len(matches), _rows_by_id(db, [m[0] for m in matches[start:]], needle, names,
                                     sort, chunk)


def _rows_by_id(db: sqlite3.Connection, rowids: list[int], needle: str, names: list[str],
                sort: str, chunk: int) -> Iterator[dict[str, Any]]:
    """The rows of ``rowids`` (in that order, the order of ``sort``), ``chunk`` at a time,
    each with ``matches``."""
    # The texts in search normal form, for "matches" (an ASCII body is folded by lower():
    # casefold of ASCII); no Python folding, so no unicodedata for an ASCII needle.
    extra = ", " + ", ".join(_FOLDED_BODY if n == "body" else SEARCH_COLUMNS[n]
                             for n in names)
    size, start = max(int(chunk), 1), 0
    while start < len(rowids):
        part = rowids[start:start + size]
        start, size = start + size, min(size * 4, 1_000)
        found = select_rows(db, f"t.rowid IN ({', '.join('?' * len(part))})", part, sort,
                            None, extra, "tasks t CROSS JOIN docs x ON x.id = t.id")
        for row in found:
            texts = row.pop("_extra")
            row["matches"] = [n for n, t in zip(names, texts, strict=True)
                              if t and needle in t]
            yield row
