"""The parts of ``ledgit mcp``'s answers that are cut to fit (DESIGN §14): a page of rows
filled up to its ``limit`` or the byte budget, whichever comes first (:func:`rows_page`), and a
piece of a task's body (:func:`body_piece`).

Nothing is cut silently: a page that stops early has a ``next_cursor``, a piece of a body a
``body_next_offset``, a long list of malformed files a last entry that counts the rest.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import to_json

from ledgit.core.errors import USAGE, ArgumentError, LedgitError
from ledgit.mcp.results import DEFAULT_PAGE_BYTES, Rows, envelope_bytes
from ledgit.operations import paging
from ledgit.operations.leaserecord import lease_view
from ledgit.operations.rows import ROW_KEYS, brief_view, holder_of, row_view
from ledgit.storage.board import Board

DEFAULT_LIMIT = 20  # rows of a page when no limit is given (within DEFAULT_PAGE_BYTES)
ROW_FIELDS = (*ROW_KEYS, "freshness")  # a full row (the CLI's --json row)
FIELDS = (*ROW_FIELDS, "lease", "holder", "until")  # what `fields` may name
CURSOR_ROOM = 240  # bytes kept for the next_cursor of a page
ERRORS_PART = 4  # the malformed files' list takes at most 1/ERRORS_PART of the budget


def field_keys(fields: Sequence[str] | None) -> tuple[str, ...] | None:
    """The keys of a row for ``fields`` (``id`` always, in :data:`FIELDS`' order), or None
    for the brief row. LedgitError exit 2 naming an unknown field."""
    if not fields:
        return None
    unknown = [f for f in fields if f not in FIELDS]
    if unknown:
        raise LedgitError(f"fields: unknown {', '.join(map(repr, unknown[:5]))} (one of "
                          f"{', '.join(FIELDS)})", USAGE)
    return ("id", *(f for f in FIELDS if f in fields and f != "id"))


def view_of(row: dict[str, Any], keys: tuple[str, ...] | None, now: float, ttl: int,
            leases: Mapping[str, Any] | None, extra: Sequence[str]) -> dict[str, Any]:
    """The row of the answer for index ``row``: brief (``keys`` None) or ``keys``, plus
    ``extra`` keys of the index row (search's ``matches``)."""
    lease = leases.get(row["id"]) if leases else None
    shown = None if lease is None else lease_view(lease, now)
    if keys is None:
        view = brief_view(row, ttl, shown)
    else:
        full = row_view(row, now, ttl) if any(k in ROW_FIELDS for k in keys) else {}
        full["lease"] = shown
        full["holder"], full["until"] = holder_of(row, ttl, shown)
        view = {k: row.get(k) if k == "id" else full.get(k) for k in keys}
    for k in extra:
        view[k] = row.get(k)
    return view


def errors_within(errors: list[tuple[str, str]], room: int) -> list[dict[str, str]]:
    """The malformed task files as ``{path, message}``, as many as ``room`` bytes hold;
    the rest counted in one last entry (path ``""``) that names ``ledgit verify``."""
    out: list[dict[str, str]] = []
    used = 0
    for n, (path, message) in enumerate(errors):
        entry = {"path": path, "message": message}
        used += len(to_json(entry)) + 1
        if used > room:
            out.append({"path": "", "message": f"and {len(errors) - n:,} more malformed task "
                                                  f"files (ledgit verify lists them)"})
            break
        out.append(entry)
    return out


def rows_page(listing: paging.Listing, query: Mapping[str, Any], *, board: Board,
              budget: int, limit: int | None, fields: Sequence[str] | None,
              errors: list[tuple[str, str]], leases: Mapping[str, Any] | None = None,
              extra: Sequence[str] = ()) -> Rows:
    """A page of ``listing``: up to ``limit`` rows (None: :data:`DEFAULT_LIMIT` within
    :data:`DEFAULT_PAGE_BYTES`) while the answer's JSON stays within ``budget`` bytes;
    ``next_cursor`` continues ``query`` after its last row (None at the end)."""
    keys = field_keys(fields)
    if limit is None:
        limit, budget = DEFAULT_LIMIT, min(budget, DEFAULT_PAGE_BYTES)
    ttl = int(board.config.claim_ttl)
    now = time.time()
    shown_errors = errors_within(errors, budget // ERRORS_PART)
    used = len(to_json(Rows(tasks=[], count=limit, total=listing.total, next_cursor=None,
                            errors=shown_errors))) + CURSOR_ROOM + envelope_bytes(board)
    views: dict[str, dict[str, Any]] = {}

    def fits(row: dict[str, Any]) -> bool:
        nonlocal used
        view = views[row["id"]] = view_of(row, keys, now, ttl, leases, extra)
        size = len(to_json(view)) + 1
        if used + size > budget:
            return False
        used += size
        return True

    page, position = paging.take(listing, limit, fits)
    tasks = [views[r["id"]] for r in page]
    return Rows(tasks=tasks, count=len(tasks), total=listing.total,
                next_cursor=None if position is None else paging.encode_cursor(query, position),
                errors=shown_errors)


def body_piece(body: str, offset: int, room: int) -> tuple[str, int | None]:
    """(the piece of ``body`` from character ``offset`` whose JSON string takes at most
    ``room`` bytes, the offset to read on from or None at the end). A piece that stops
    early ends at a line break when one is in its second half, else between two characters
    (never inside a UTF-8 sequence: offsets count characters). ArgumentError
    (``body_offset``) for an offset past the end."""
    if offset > len(body):
        raise ArgumentError("body_offset", f"{offset:,} is past the body's end",
                            f"an offset from 0 to {len(body):,} (body_length)")
    size = max(room, 64)
    end = min(len(body), offset + size)  # a character takes at least one byte
    while end > offset and len(to_json(body[offset:end])) - 2 > size:
        over = len(to_json(body[offset:end])) - 2
        end = offset + max(1, (end - offset) * size // over - 1)
    if end >= len(body):
        return body[offset:], None
    cut = body.rfind("\n", offset, end)
    if cut >= offset + (end - offset) // 2:
        end = cut + 1
    end = max(end, offset + 1)  # always advances
    return body[offset:end], end
