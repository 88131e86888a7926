"""``ledgit search``: an exact, case-insensitive substring search over the worktree's index
(after its stat-level freshness check, DESIGN §10), with the list filters. A module apart from
the other reads so that a search loads neither the registered projects nor the ready logic.
"""

from __future__ import annotations

from ledgit.cli.commands.rows import print_rows
from ledgit.cli.commands.running import command_board
from ledgit.core.errors import OK, LedgitError
from ledgit.operations.rows import filters_of
from ledgit.storage.index import Index


def search_cmd(text: str, fields: tuple[str, ...], status: tuple[str, ...],
               owner: str | None, worker: str | None, label: tuple[str, ...],
               outcome: str | None, include_all: bool, sort: str, limit: int | None,
               as_json: bool) -> int:
    """``ledgit search``: exact, case-insensitive substring search for ``text`` over
    ``fields`` (default: title, body, response, items), with the list filters. Prints rows;
    returns 0; LedgitError exit 2 for an empty ``text``."""
    if not text:
        raise LedgitError("search needs non-empty TEXT")
    board = command_board()
    with Index.open(board) as index:
        filters = filters_of(status, owner, worker, label, include_all, outcome)
        rows = index.search(text, fields=list(fields) or None, sort=sort, limit=limit,
                            **filters)
        errors = index.errors()
    print_rows(rows, as_json, board, errors)
    return OK
