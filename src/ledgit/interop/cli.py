"""``ledgit import FORMAT SOURCE`` and ``ledgit export FORMAT ID``: thin click commands.

Import exit codes: 0 everything imported (or unchanged, updated, merged); 1 some entries were
skipped, or a re-import conflicted with the board's changes (each listed on stderr with its
file and line; the rest was imported, and the board's values were kept); 2 unreadable input, or
``--strict`` with anything to skip (nothing written). The summary line goes to stdout
(``--json``: the whole summary as JSON). Mappings: docs/interop.md.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ledgit.core.errors import CHECK_FAILED, OK
from ledgit.interop import historywriter
from ledgit.interop.backlog import load_backlog
from ledgit.interop.beads import load_beads
from ledgit.interop.bulkimport import import_records
from ledgit.interop.stateframe import export_text, load_stateframe
from ledgit.interop.summary import Progress, print_summary
from ledgit.interop.yylo import load_yylo
from ledgit.storage.actor import actor_or_warn
from ledgit.storage.board import find_board
from ledgit.storage.safefiles import write_output

if TYPE_CHECKING:
    from ledgit.interop.incoming import Incoming, Skip
    from ledgit.interop.summary import Summary

Loader = Callable[[str], "tuple[list[Incoming], list[Skip]]"]


def _common(f: Any) -> Any:
    for deco in reversed((
        click.option("--strict", is_flag=True,
                     help="Refuse the whole import (write nothing) if any entry is malformed "
                          "or would be skipped."),
        click.option("--by", "by", metavar="WHO",
                     help="Actor of the import events (default: $LEDGIT_ACTOR, else git "
                          "user.name)."),
        click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON."),
    )):
        f = deco(f)
    return f


def run_import(source: str, path: str, load: Loader, *, strict: bool, by: str | None,
               as_json: bool) -> int:
    """Load ``path`` with ``load``, import into the board of the working directory, print."""

    board = find_board()
    actor = actor_or_warn(by, board.root)
    # The cyclic garbage collector is off for the import: loading builds ~10 containers a
    # record and nothing of it is garbage until the process ends, so each collection (one
    # per 700 allocations, the older generations ever larger) only walks live objects:
    # ~5% of an import's CPU time on the Beads snapshot.
    collecting = gc.isenabled()
    gc.disable()
    # A large source file may bring thousands of new tasks: their histories are written by
    # a helper process, forked now, before the records fill this one (HistoryWriter).
    big = _size(path) >= historywriter.HELPER_MIN_BYTES
    writer = historywriter.HistoryWriter.spawn() if big else None
    try:
        incoming, skips = load(path)
        progress = Progress(f"import {source}", len(incoming))
        summary: Summary = import_records(board, incoming, skips, actor=actor, source=source,
                                          strict=strict, progress=progress, writer=writer)
    finally:
        if writer is not None:
            writer.close()
        if collecting:
            gc.enable()
    if as_json:

        click.echo(json.dumps(summary.as_json(), ensure_ascii=False, indent=2))
    else:
        print_summary(summary, sys.stdout, sys.stderr)
    return CHECK_FAILED if summary.skipped or summary.conflicts else OK


def _size(path: str) -> int:
    """The size of a regular file; 0 for a directory or what cannot be read."""
    try:
        return os.stat(path).st_size if os.path.isfile(path) else 0
    except OSError:
        return 0


@click.group("import")
def import_group() -> None:
    """Import tasks from another tracker's files (deterministic ids; re-import is
    idempotent: unchanged tasks are untouched, changed ones get an import event)."""


@import_group.command("beads")
@click.argument("path", type=click.Path(dir_okay=False))
@_common
def import_beads_cmd(path: str, strict: bool, by: str | None, as_json: bool) -> int:
    """Import a Beads issues.jsonl (one issue per line)."""

    return run_import("beads", path, load_beads, strict=strict, by=by, as_json=as_json)


@import_group.command("stateframe")
@click.argument("path", type=click.Path(dir_okay=False))
@_common
def import_stateframe_cmd(path: str, strict: bool, by: str | None, as_json: bool) -> int:
    """Import a Stateframe task.ledger.json (one task, its commits and state items)."""

    return run_import("stateframe", path, load_stateframe, strict=strict, by=by,
                      as_json=as_json)


@import_group.command("yylo")
@click.argument("path", type=click.Path(file_okay=False))
@_common
def import_yylo_cmd(path: str, strict: bool, by: str | None, as_json: bool) -> int:
    """Import a YYLO Ledger board (PATH/.juno_task, or the directory that holds it)."""

    return run_import("yylo", path, load_yylo, strict=strict, by=by, as_json=as_json)


@import_group.command("backlog")
@click.argument("path", type=click.Path(file_okay=False))
@_common
def import_backlog_cmd(path: str, strict: bool, by: str | None, as_json: bool) -> int:
    """Import a Backlog.md folder (PATH/backlog, or the directory that holds it)."""

    return run_import("backlog", path, load_backlog, strict=strict, by=by, as_json=as_json)


@click.group("export")
def export_group() -> None:
    """Export a task in another tool's format."""


@export_group.command("stateframe")
@click.argument("task")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True),
              default="-", show_default=True, help="Write to FILE ('-' = stdout).")
def export_stateframe_cmd(task: str, output: str) -> int:
    """Export one task as a Stateframe task.ledger.json (validated against its schema)."""

    board = find_board()
    tid = board.resolve_id(task)
    text = export_text(board.read(tid), board.read_history_text(tid))
    if output == "-":
        click.echo(text, nl=False)
    else:
        write_output(output, text.encode("utf-8"), what="export stateframe -o")
        click.echo(f"wrote {output}", err=True)
    return OK
