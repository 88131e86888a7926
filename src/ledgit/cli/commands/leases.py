"""``ledgit lease list`` and ``ledgit lease prune``: the claim leases on the board's remote
(docs/leases.md, :mod:`ledgit.operations.leases`)."""

from __future__ import annotations

import time

from ledgit.cli.commands.output import out, out_json
from ledgit.cli.commands.rows import more_line
from ledgit.cli.commands.running import command_board
from ledgit.core.errors import OK, USAGE, LedgitError
from ledgit.core.readout import format_duration
from ledgit.operations import leases, paging
from ledgit.operations.leaserecord import lease_view
from ledgit.storage.board import Board


def _site(board: Board) -> leases.Site:
    site = leases.site_of(board)
    if site is None:
        raise LedgitError("this board has no lease remote (leases: none, no remote, or "
                          "several and no upstream; set leases: REMOTE in "
                          ".ledgit/config.yaml)", USAGE)
    return site


def lease_list_cmd(expired: bool, mine: bool, limit: int | None, cursor: str | None,
                   as_json: bool) -> int:
    """``ledgit lease list``: every lease on the remote, fetched now (one round trip): task,
    state (held / ended), holder, expiry, by task id; ``expired``: only those that ran out;
    ``mine``: only those this clone took (:func:`ledgit.operations.leases.mine`), a live one
    no claim here guards marked with the command that ends it; at most ``limit`` from just
    after the task ``cursor`` names. JSON: ``{remote, leases: [{task, state, by, at,
    expires, live, op, took_over_from, unguarded?, end?}], total, next_cursor}``
    (``unguarded`` and ``end``, the command, with ``mine``). Returns 0 (an unreachable
    remote: one warning, the leases as last seen); exit 2 without a lease remote or for a
    cursor of another query."""
    query = {"what": "lease list", "expired": expired, "mine": mine}
    after = paging.decode_cursor(cursor, query, "--cursor", paging.one_string)
    board = command_board()
    site = _site(board)
    found = leases.remote_leases(site, window=0, warn=leases.warn_stderr)
    now = time.time()
    every = sorted(found.values(), key=lambda x: x.task)
    if expired:
        every = leases.expired(every, now)
    loose: set[str] = set()
    if mine:
        every = leases.mine(board, every)
        loose = {x.task for x in leases.unguarded(board, {x.task: x for x in every}, now)}
    later = [x for x in every if after is None or x.task > after[0]]
    shown = later if limit is None else later[:limit]
    next_cursor = paging.encode_cursor(query, [shown[-1].task]) \
        if shown and len(shown) < len(later) else None
    if as_json:
        rows = []
        for x in shown:
            row = {"task": x.task, **lease_view(x, now)}
            if mine:
                row["unguarded"] = x.task in loose
                row["end"] = leases.end_command(x) if x.task in loose else None
            rows.append(row)
        out_json({"remote": site.remote, "leases": rows, "total": len(every),
                  "next_cursor": next_cursor})
        return OK
    lines = []
    for x in shown:
        left = x.expires_at() - now
        when = (f"runs out in {format_duration(left)}" if left >= 0
                else f"ran out {format_duration(-left)} ago")
        tail = (f"; no claim guards it here: {leases.end_command(x)} ends it"
                if x.task in loose else "")
        lines.append(f"{x.task}  {x.state:<5}  {x.how()}  ({when}){tail}\n")
    out("".join(lines), nl=False)
    more_line(len(shown), len(every), next_cursor)
    return OK


def lease_prune_cmd(as_json: bool) -> int:
    """``ledgit lease prune``: delete the leases that ran out (end markers included) from
    the remote, each by CAS on its expired value; prints the pruned task ids. JSON:
    ``{remote, pruned: [ID], kept: [ID]}`` (kept: renewed or taken meanwhile). Returns 0;
    exit 69 when the remote cannot be reached."""
    site = _site(command_board())
    pruned, kept = leases.prune(site)
    if as_json:
        out_json({"remote": site.remote, "pruned": pruned, "kept": kept})
        return OK
    out("".join(f"{t}: pruned\n" for t in pruned)
        + "".join(f"{t}: kept (it changed meanwhile)\n" for t in kept), nl=False)
    return OK
