"""``ledgit search``: an exact, case-insensitive substring search over the worktree's index
(after its stat-level freshness check, DESIGN §10), with the list filters. A module apart from
the other reads so that a search loads neither the registered projects nor the ready logic.
"""

from __future__ import annotations

from ledgit.cli.commands.rows import print_rows
from ledgit.cli.commands.running import command_board
from ledgit.core.errors import OK, LedgitError
from ledgit.operations import paging
from ledgit.operations.rows import filters_of
from ledgit.storage.index import Index


def search_cmd(text: str, fields: tuple[str, ...], status: tuple[str, ...],
               owner: str | None, worker: str | None, label: tuple[str, ...],
               outcome: str | None, include_all: bool, sort: str, limit: int | None,
               cursor: str | None, as_json: bool) -> int:
    """``ledgit search``: exact, case-insensitive substring search for ``text`` over
    ``fields`` (default: title, body, response, items), with the list filters; at most
    ``limit`` rows from just after ``cursor`` (a ``next_cursor`` of the same search: DESIGN
    §14). Prints rows; returns 0; LedgitError exit 2 for an empty ``text`` or a cursor of
    another query."""
    if not text:
        raise LedgitError("search needs non-empty TEXT")
    query = {"what": "search", "text": text, "fields": sorted(fields),
             "status": sorted(status), "owner": owner, "worker": worker,
             "label": sorted(label), "outcome": outcome, "all": include_all, "sort": sort}
    after = paging.decode_cursor(cursor, query, "--cursor", paging.cursor_fits(sort))
    board = command_board()
    with Index.open(board) as index:
        filters = filters_of(status, owner, worker, label, include_all, outcome)
        listing = paging.found_rows(index, text, list(fields) or None, sort=sort, after=after,
                                    chunk=paging.chunk_of(limit), **filters)
        page, position = paging.take(listing, limit)
        errors = index.errors()
    print_rows(page, as_json, board, errors, total=listing.total,
               next_cursor=None if position is None else paging.encode_cursor(query, position))
    return OK
