"""``ledgit get``: one task's readout, from the worktree's index after its check of that one
file (stat and content), else from the file itself (:func:`one_task`, which ``handoff`` shares);
with each ``ALIAS:ID`` dependency's status read in the other board, and whether a claim's
remote lease confirms it. A module apart from the other reads (:mod:`ledgit.cli.commands.reads`)
so that a get loads neither the registered projects nor the list machinery it does not use.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from ledgit.cli.commands.output import out, out_json
from ledgit.cli.commands.rows import warn_markers
from ledgit.cli.commands.running import command_board
from ledgit.core.errors import BUSY, OK, LedgitError
from ledgit.core.readout import build_readout, now_timestamp, render_readout
from ledgit.operations.leases import confirmation, site_of
from ledgit.storage.index import Index

if TYPE_CHECKING:
    from ledgit.storage.board import Board


def get_cmd(task: str, no_body: bool, as_json: bool) -> int:
    """``ledgit get``: print TASK's readout (DESIGN §4; text, or JSON: docs/cli.md), with
    each ``ALIAS:ID`` dependency's status where it was read. Returns 0; LedgitError exit 4
    for an unknown or ambiguous id, 2 for a malformed task file."""
    board = command_board()
    fields, body, path, revision = one_task(board, task)
    warn_markers(fields.get("id"), body, path)
    readout = build_readout(fields, body, path=path, revision=revision, now=now_timestamp(),
                            ttl=int(board.config.claim_ttl))
    external = [d for d in fields.get("depends_on") or [] if ":" in d]
    if external:
        _add_external(readout, board, str(fields.get("id")), external)
    claim = fields.get("claim")
    site = site_of(board) if claim else None
    if site is not None and claim:  # docs/leases.md: a claim the remote lease confirms?
        readout["lease"] = confirmation(site, str(fields["id"]), str(claim.get("by")),
                                        time.time())
    if as_json:
        out_json(readout)
    else:
        text = render_readout(readout, body=not no_body)
        if external:
            text = _render_external(readout) + text
        if "lease" in readout:
            head, sep, rest = text.partition("\nnext_action:")
            lease = readout["lease"]
            line = ("lease:         " + ("" if lease["state"] == "confirmed"
                                         else "UNCONFIRMED: ") + lease["reason"])
            text = f"{head}\n{line}{sep}{rest}" if sep else text + line + "\n"
        out(text, nl=False)
    return OK


def _add_external(readout: dict[str, Any], board: Board, task_id: str,
                  deps: list[str]) -> None:
    """``external_dependencies`` (each ALIAS:ID's status where it was read, or UNKNOWN with
    the reason) and ``dependency_cycle`` (None, or the cycle across boards) in a readout."""

    # A task with such dependencies is rare: every other get skips the projects module and
    # its registrations (bench/run.py: each command >= 3x faster than the fastest peer).
    from ledgit.operations import projects  # lazy: 1.7 ms (-X importtime) of every get

    cache: dict[str, Any] = {}
    readout["external_dependencies"] = [
        {**projects.external_status(board, d, cache).as_json(), "read_at": now_timestamp()}
        for d in deps]
    readout["dependency_cycle"] = projects.find_cycle(board, task_id)


def _render_external(readout: dict[str, Any]) -> str:
    lines = []
    for d in readout["external_dependencies"]:
        where = f" ({d['source']})" if d["source"] else ""
        why = f": {d['reason']}" if d["reason"] else ""
        lines.append(f"external dep:  {d['dependency']} {d['status']}{why}{where}\n")
    if readout.get("dependency_cycle"):
        lines.append(f"dependency cycle: {' -> '.join(readout['dependency_cycle'])}\n")
    return "".join(lines)


def one_task(board: Board, task: str) -> tuple[dict[str, Any], str, str, str]:
    """(fields, body, path relative to the board root, revision) of one task: from the index
    when this worktree has one (it re-checks the one file by stat and content, no board scan,
    no YAML for an unchanged file), else by parsing the file. A malformed file: exit 2 (1
    for conflict markers in its front matter)."""
    tid = board.resolve_id(task)
    row = None
    try:
        index = Index.open_existing(board)
        if index is not None:
            try:
                row = index.get(tid)
            finally:
                index.close()
    except LedgitError as exc:
        if exc.code != BUSY:
            raise
    except Exception:  # noqa: BLE001 - the index is derived: fall back to the file
        if os.environ.get("LEDGIT_DEBUG", "") not in ("", "0"):
            raise
        row = None
    if row is not None and row.get("error"):
        # The file again, for its error's own exit code (1 for a line merge's conflict
        # markers, 2 for the rest): or the record, when the file was fixed since.
        record = board.read(tid)
        return dict(record.fields), record.body, board.rel(board.task_path(tid)), \
            record.revision
    if row is not None and row.get("fields") is not None:
        return dict(row["fields"]), str(row["body"]), str(row["path"]), str(row["revision"])
    record = board.read(tid)
    return dict(record.fields), record.body, board.rel(board.task_path(tid)), record.revision
