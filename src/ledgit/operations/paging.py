"""Pages of the list-shaped answers, for every face (DESIGN §14): how many matched
(``total``), a page of rows, and an opaque cursor (``next_cursor``) that continues after it.

The order of a listing is stable (its sort keys, then the id) and a cursor is a position in it
-- the last row's sort key -- not an offset: paging to the end yields every task that matched
exactly once while others write (a task written meanwhile moves to where its new key puts it;
none of the rest is repeated or skipped). A cursor names the query it came from (a hash of its
filters, sort and text): one from another query, or a damaged one, is an
:class:`ledgit.core.errors.ArgumentError` (exit 2).

A cursor is base64url (no padding) of ``{"q": QUERY-HASH, "k": KEY}``; nothing outside this
module reads it.
"""

from __future__ import annotations

import binascii
import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from hashlib import blake2b
from typing import TYPE_CHECKING, Any, NamedTuple

from ledgit.core.errors import ArgumentError
from ledgit.operations.leases import unleased
from ledgit.storage.indextables import comes_after, key_fits, sort_key

if TYPE_CHECKING:
    from ledgit.operations.leaserecord import Lease
    from ledgit.storage.index import Index

MAX_CURSOR = 4_096  # characters: a cursor ledgit gives is ~100
FINISHED = ("done", "dropped", "archived")  # the second group of the CLI's list
CURSOR_EXPECTED = "the next_cursor of an earlier answer to the same query"

Row = dict[str, Any]


class Listing(NamedTuple):
    """What a page is cut from: ``total`` (how many matched), ``rows`` (an iterator over
    the rows after the cursor's position, in order, read lazily) and ``key`` (a row's
    position: what a cursor holds)."""

    total: int
    rows: Iterator[Row]
    key: Callable[[Row], list[Any]]


# --------------------------------------------------------------------------- cursors


def _query_hash(query: Mapping[str, Any]) -> str:
    text = json.dumps(query, sort_keys=True, separators=(",", ":"), default=str)
    return blake2b(text.encode("utf-8"), digest_size=8).hexdigest()


_TO_URL = str.maketrans("+/", "-_")
_FROM_URL = str.maketrans("-_", "+/")


def _b64url(data: bytes) -> str:
    # binascii, not base64: a list need not import base64 for one call (RFC 4648 §5, no
    # padding)
    return binascii.b2a_base64(data, newline=False).decode("ascii").rstrip("=") \
        .translate(_TO_URL)


def encode_cursor(query: Mapping[str, Any], key: Sequence[Any]) -> str:
    """The cursor that continues ``query`` (its filters, sort, text: JSON values) after the
    row whose position is ``key``."""
    data = json.dumps({"q": _query_hash(query), "k": list(key)}, separators=(",", ":"))
    return _b64url(data.encode("utf-8"))


def decode_cursor(cursor: str | None, query: Mapping[str, Any], argument: str,
                  fits: Callable[[Any], bool]) -> list[Any] | None:
    """The position ``cursor`` holds (None for no cursor: from the start). Raises
    ArgumentError naming ``argument`` for a damaged cursor, one of another query, or a
    position that does not fit the query's order (``fits``)."""
    if cursor is None:
        return None
    try:
        if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR or not cursor:
            raise ValueError
        raw = binascii.a2b_base64((cursor + "=" * (-len(cursor) % 4)).translate(_FROM_URL))
        if _b64url(raw) != cursor:  # a2b_base64 skips what is not base64: be exact
            raise ValueError
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("q"), str):
            raise ValueError
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise ArgumentError(argument, "not a cursor ledgit gave (damaged or cut)",
                            CURSOR_EXPECTED) from None
    if data["q"] != _query_hash(query):
        raise ArgumentError(argument, "a cursor of another query (its filters, sort or text "
                                      "differ); start again without it", CURSOR_EXPECTED)
    if not fits(data.get("k")):
        raise ArgumentError(argument, "not a cursor ledgit gave (damaged or cut)",
                            CURSOR_EXPECTED)
    return list(data["k"])


# --------------------------------------------------------------------------- pages


def take(listing: Listing, limit: int | None,
         fits: Callable[[Row], bool] | None = None) -> tuple[list[Row], list[Any] | None]:
    """(the page, the position to continue after, or None at the end): rows of ``listing``
    up to ``limit`` (None: no limit) while ``fits(row)`` accepts the next one (a budget; the
    first row is always taken, so that a page always advances). A row is read past the
    page to know whether more remain."""
    page: list[Row] = []
    for row in listing.rows:
        if page and ((limit is not None and len(page) >= limit)
                     or (fits is not None and not fits(row))):
            return page, listing.key(page[-1])
        if fits is not None and not page:
            fits(row)  # counted, taken whatever it costs
        page.append(row)
    return page, None


def in_memory(rows: Iterable[Row], sort: str, after: Sequence[Any] | None) -> Listing:
    """A listing of ``rows`` (already in the order of ``sort``: filtered in Python, e.g.
    by remote leases) from just after the position ``after``."""
    found = list(rows)
    later = iter(found) if after is None else (
        r for r in found if comes_after(sort, sort_key(sort, r), after))
    return Listing(len(found), later, lambda r: sort_key(sort, r))


def one_string(key: Any) -> bool:
    """The shape check of a position that is one id (an event's, a task's)."""
    return isinstance(key, list) and len(key) == 1 and isinstance(key[0], str)


def cursor_fits(sort: str) -> Callable[[Any], bool]:
    """The shape check of a position in the order ``sort`` (for :func:`decode_cursor`)."""
    return lambda key: key_fits(sort, key)


def chunk_of(limit: int | None) -> int:
    """Rows read at a time for a page of at most ``limit`` (one more tells whether more
    remain; the next chunks grow)."""
    return 1_000 if limit is None else min(limit + 1, 1_000)


def found_rows(index: Index, text: str, fields: Sequence[str] | None, *, sort: str,
               after: Sequence[Any] | None, chunk: int, **filters: Any) -> Listing:
    """The listing of the tasks of ``index`` whose ``fields`` contain ``text``
    (:meth:`ledgit.storage.index.Index.search_listing`), in the order ``sort``."""
    total, rows = index.search_listing(text, fields, sort=sort, after=after, chunk=chunk,
                                       **filters)
    return Listing(total, rows, lambda r: sort_key(sort, r))


def task_rows(index: Index, *, sort: str, after: Sequence[Any] | None, chunk: int,
              ready: bool = False, leases: Mapping[str, Lease] | None = None,
              **filters: Any) -> Listing:
    """The listing of ``index``'s tasks matching ``filters`` (those of
    :meth:`ledgit.storage.index.Index.rows`) in the order ``sort``; ``ready``: only ready
    tasks, without those a remote lease keeps off ``ready`` (``leases``: then filtered in
    memory)."""
    if ready and leases:
        return in_memory(unleased(index.rows(ready=True, sort=sort, **filters), leases), sort,
                         after)
    total, rows = index.listing(ready=ready, sort=sort, after=after, chunk=chunk, **filters)
    return Listing(total, rows, lambda r: sort_key(sort, r))


def grouped_key(sort: str) -> Callable[[Row], list[Any]]:
    """A row's position in the CLI's list: its group (0: the work in play, 1: finished)
    before its key in ``sort``."""
    return lambda r: [1 if r.get("status") in FINISHED else 0, *sort_key(sort, r)]


def grouped_fits(sort: str) -> Callable[[Any], bool]:
    """The shape check of a :func:`grouped_key` position (for :func:`decode_cursor`)."""
    return lambda key: isinstance(key, list) and len(key) > 1 and key[0] in (0, 1) \
        and type(key[0]) is int and key_fits(sort, key[1:])


def grouped_rows(index: Index, statuses: Sequence[str], *, sort: str,
                 after: Sequence[Any] | None, chunk: int, ready: bool = False,
                 leases: Mapping[str, Lease] | None = None, **filters: Any) -> Listing:
    """The CLI's list (docs/cli.md): the tasks of ``statuses`` in play first, then the
    finished ones (:data:`FINISHED`), each group in the order ``sort``, from just after the
    position ``after`` (:func:`grouped_key`)."""
    groups = [[s for s in statuses if s not in FINISHED], [s for s in statuses if s in FINISHED]]
    start = 0 if after is None else int(after[0])

    def part(g: int) -> Listing:
        return task_rows(index, sort=sort, after=after[1:] if after is not None and g == start
                         else None, chunk=chunk, ready=ready, leases=leases,
                         **dict(filters, status=groups[g]))

    parts = {g: part(g) for g in (0, 1) if groups[g]}  # a group before the cursor: counted
    return Listing(sum(p.total for p in parts.values()),
                   itertools.chain.from_iterable(p.rows for g, p in parts.items() if g >= start),
                   grouped_key(sort))
