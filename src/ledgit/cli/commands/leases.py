"""``ledgit lease list`` and ``ledgit lease prune``: the claim leases on the board's remote
(docs/leases.md, :mod:`ledgit.operations.leases`)."""

from __future__ import annotations

import time

from ledgit.cli.commands.output import out, out_json
from ledgit.cli.commands.running import command_board
from ledgit.core.errors import OK, USAGE, LedgitError
from ledgit.core.readout import format_duration
from ledgit.operations import leases
from ledgit.operations.leaserecord import lease_view
from ledgit.storage.board import Board


def _site(board: Board) -> leases.Site:
    site = leases.site_of(board)
    if site is None:
        raise LedgitError("this board has no lease remote (leases: none, no remote, or "
                          "several and no upstream; set leases: REMOTE in "
                          ".ledgit/config.yaml)", USAGE)
    return site


def lease_list_cmd(expired: bool, mine: bool, as_json: bool) -> int:
    """``ledgit lease list``: every lease on the remote, fetched now (one round trip): task,
    state (held / ended), holder, expiry; ``expired``: only those that ran out; ``mine``:
    only those this clone took (:func:`ledgit.operations.leases.mine`), a live one no
    claim here guards marked with the command that ends it. JSON: ``{remote, leases: [{task,
    state, by, at, expires, live, op, took_over_from, unguarded?, end?}]}`` (``unguarded``
    and ``end``, the command, with ``mine``). Returns 0 (an unreachable remote: one warning,
    the leases as last seen); exit 2 without a lease remote."""
    board = command_board()
    site = _site(board)
    found = leases.remote_leases(site, window=0, warn=leases.warn_stderr)
    now = time.time()
    shown = sorted(found.values(), key=lambda x: x.task)
    if expired:
        shown = leases.expired(shown, now)
    loose: set[str] = set()
    if mine:
        shown = leases.mine(board, shown)
        loose = {x.task for x in leases.unguarded(board, {x.task: x for x in shown}, now)}
    if as_json:
        rows = []
        for x in shown:
            row = {"task": x.task, **lease_view(x, now)}
            if mine:
                row["unguarded"] = x.task in loose
                row["end"] = leases.end_command(x) if x.task in loose else None
            rows.append(row)
        out_json({"remote": site.remote, "leases": rows})
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
