"""The bulk import loop shared by every importer: plan, refuse or write, summarise.

An importer turns its source into :class:`Incoming` records (plus :class:`Skip` lines for what
it could not read) and hands them to :func:`import_records`, which

1. plans (:mod:`ledgit.interop.plan`): each record is new, changed (re-imported by
   :mod:`ledgit.interop.reimport`) or unchanged, or skipped with a reason (duplicate id, an existing
   task that did not come from this source, a task whose file and history disagree); with ``strict``
   any skip refuses the whole import before a byte is written (LedgitError exit 2 listing them with
   their lines);
2. writes new tasks in bulk (:func:`_write_new`, :mod:`ledgit.interop.staging`,
   :mod:`ledgit.interop.genesis`): each file created whole (``O_EXCL``, one write, no per-file
   fsync) in a staging directory ``.ledgit/.import-<pid>-<rand>/``, the histories (genesis event, or
   the source's own events carried over as a chain) in one staged directory -- by a
   :class:`HistoryWriter` process for a large import -- and the task files in another; then, once
   both are complete, moved into the board -- on a first import by renaming the two staged
   directories over the empty ``history/`` and ``tasks/`` (histories first), otherwise file by file
   (every history, then every task file): the write-ahead order of DESIGN §6 per batch. Changed
   tasks go through the task lock and are re-imported as a 3-way merge
   (:func:`~ledgit.interop.reimport.reimport_task`: base = the record as last imported, ours = the
   board, theirs = the source; nothing the board changed is overwritten), fsync'ed as any write;
3. rebuilds the index once from what it wrote (``Index.rebuild_written``: stats and
   revisions from the writer, nothing read back or parsed) while one ``os.sync()`` runs in
   a background thread -- the import's single durability point, waited for before the
   summary is returned.

Deterministic: a task file's bytes depend only on its source record; a genesis event's time is
the record's ``last_modified``. Re-importing the same source writes nothing.

Crashes (docs/interop.md, "Crash safety"): no file of the board is ever half-written by an
import -- files appear in it only by rename, complete. A process killed in the middle leaves
either nothing (plus its staging directory, removed by the next import), or every history
without its task file, or some of the tasks; importing the same source again completes
exactly those. An OS crash or power loss before the durability point may also leave files of
this import empty or missing (never another task's); importing again completes them too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ledgit.core.errors import USAGE, LedgitError
from ledgit.core.render import render_record
from ledgit.interop import historywriter, reimport, staging
from ledgit.interop.genesis import history_and_revision
from ledgit.interop.incoming import Skip
from ledgit.interop.plan import plan_import
from ledgit.interop.summary import Conflict, Summary
from ledgit.storage.index import Index
from ledgit.storage.taskfiles import HISTORY_SUFFIX, TASK_SUFFIX, checked_id, file_stat

if TYPE_CHECKING:
    from ledgit.interop.historywriter import HistoryWriter
    from ledgit.interop.incoming import Incoming
    from ledgit.interop.plan import Plan
    from ledgit.interop.summary import Progress
    from ledgit.storage.board import Board
    from ledgit.storage.indexbuild import Written


def import_records(board: Board, incoming: Iterable[Incoming], skips: Iterable[Skip], *,
                   actor: str, source: str, strict: bool = False,
                   progress: Progress | None = None,
                   rebuild_index: bool = True,
                   writer: HistoryWriter | None = None) -> Summary:
    """Import records into ``board`` (see the module doc). Returns the summary. ``writer``:
    a :class:`HistoryWriter` that may create the histories of a large import (the caller
    closes it).

    Raises LedgitError exit 2 under ``strict`` when anything would be skipped (nothing is
    written), exit 1 when a changed task's history cannot take an event.
    """
    started = time.perf_counter()
    plan = plan_import(board, incoming, skips, source, actor)
    summary = Summary(source)
    if strict and plan.skipped:
        listed = "; ".join(str(s) for s in plan.skipped[:5])
        more = f" (and {len(plan.skipped) - 5} more)" if len(plan.skipped) > 5 else ""
        raise LedgitError(f"import {source} --strict: nothing imported; "
                          f"{len(plan.skipped)} problem(s): {listed}{more}", USAGE)
    summary.skipped = plan.skipped
    summary.unchanged = len(plan.unchanged)
    if progress is not None:
        progress.total = len(plan.new) + len(plan.changed)
        progress.enabled = progress.enabled and progress.total > 0
    written, flush = _write_new(board, plan.new, actor, source, progress, writer)
    summary.imported = len(plan.new)
    try:
        _apply_changes(board, plan, written, summary, actor, source, progress, rebuild_index)
    finally:
        flush.wait()  # the durability point: nothing is reported before it
    summary.ids[:0] = [i.record.id for i in plan.new]
    summary.seconds = time.perf_counter() - started
    staging.remove_stale_staging(board)
    return summary


def _apply_changes(board: Board, plan: Plan, written: dict[str, Written],
                   summary: Summary, actor: str, source: str, progress: Progress | None,
                   rebuild_index: bool) -> None:
    """The update events of changed tasks, then the index (while the bulk flush runs)."""
    for item, _current in plan.changed:
        try:
            outcome = reimport.reimport_task(board, item, actor, source)
        except LedgitError as exc:
            summary.skipped.append(Skip(item.where, f"not updated: {exc}"))
        else:
            if outcome.kind == reimport.UNCHANGED:
                summary.unchanged += 1
            else:
                written[item.record.id] = (outcome.record, outcome.data, None, None)
                summary.ids.append(item.record.id)
                if outcome.kind == reimport.UPDATED:
                    summary.updated += 1
                elif outcome.conflicts:
                    summary.conflicts.append(Conflict(item.record.id, item.where,
                                                      outcome.conflicts))
                else:
                    summary.merged += 1
        if progress is not None:
            progress.advance()
    if progress is not None:
        progress.close()
    if rebuild_index and (plan.new or written):
        # Files just created are indexed from what was written (not read back or parsed);
        # changed ones are read and, when their bytes are still ours, not parsed.
        Index.rebuild_written(board, written)


def _write_new(board: Board, items: Sequence[Incoming], actor: str, source: str,
               progress: Progress | None, writer: HistoryWriter | None = None
               ) -> tuple[dict[str, Written], staging.Flush]:
    """Write the new tasks: the histories and the task files, each created whole (``O_CREAT |
    O_EXCL``, one write; :func:`~ledgit.interop.staging.create_all`) in a staging directory
    ``.ledgit/.import-<pid>-<rand>/`` that no reader looks at -- the histories by ``writer`` (a
    :class:`HistoryWriter`) while this process creates the task files, when it is given and there
    are at least :data:`~ledgit.interop.historywriter.FORK_MIN` tasks; then, both complete, moved
    into the board: on a board whose ``history/`` and ``tasks/`` are empty (a first import) by
    renaming each staged directory over the empty one (two renames, histories first), else file by
    file (every history, then every task file; ``os.replace``). So no half-written file is ever in
    the board, whatever moment a crash picks. Then the flush starts (see
    :class:`~ledgit.interop.staging.Flush`).
    Returns (id -> (record, the task file's bytes, its stat, the record's revision): what
    ``Index.rebuild_written`` takes, the flush to wait for)."""
    written: dict[str, Written] = {}
    if not items:
        return written, staging.Flush(False)
    stage, staged_history, staged_tasks = staging.make_staging(board)
    try:
        histories: list[tuple[str, bytes]] = []
        revisions: list[str] = []
        for item in items:
            checked_id(item.record.id)  # a file name only from a valid id (issue 26)
            data, revision = history_and_revision(item, actor, source)
            histories.append((f"{item.record.id}{HISTORY_SUFFIX}", data))
            revisions.append(revision)
        tasks = [(f"{item.record.id}{TASK_SUFFIX}", render_record(item.record).encode("utf-8"))
                 for item in items]
        if writer is not None and len(items) >= historywriter.FORK_MIN:
            writer.send(stage, staged_history, histories)
        else:
            writer = None
            staged_history = staging.create_all(stage, staged_history, histories, progress, None)
        stats: list[staging.Stat] = []
        staged_tasks = staging.create_all(stage, staged_tasks, tasks, progress, stats)
        if writer is not None:
            staged_history = writer.join()
            if progress is not None:
                progress.advance(len(items) / 2)
        for item, (_, data), st, revision in zip(items, tasks, stats, revisions, strict=True):
            written[item.record.id] = (item.record, data, st, revision)
        ids = [item.record.id for item in items]
        if not (staging.swap_in(staged_history, board.history_str)
                and staging.swap_in(staged_tasks, board.tasks_str)):
            staging.move_each(board, ids, staged_history, staged_tasks)
            for tid in ids:  # renamed one by one: their ctime changed
                entry = written[tid]
                written[tid] = (entry[0], entry[1], file_stat(os.stat(board.task_file(tid))),
                                entry[3])
    finally:
        if writer is not None and writer.busy:
            writer.close()  # failing: stop it before its directory goes
        staging.remove_tree(stage)
    return written, staging.Flush(True)
