"""Checking a board (DESIGN §4, §6; ``ledgit verify``, docs/history.md "Verifying a board"):
each task's history continuity, its file's schema, the lifecycle invariants, orphan
histories and leftover temp files. What :meth:`ledgit.storage.board.Board.verify` runs."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ledgit.core.errors import USAGE, LedgitError, located
from ledgit.core.history import Problem
from ledgit.core.historycheck import verify, verify_with_head
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.markers import RULE, has_markers, marker_problem
from ledgit.core.schema import ID_CASE_RULE, case_twin_message, case_twins
from ledgit.storage.index import Index
from ledgit.storage.locate import LEDGIT_DIR
from ledgit.storage.parallel import map_slices, workers_for
from ledgit.storage.safefiles import BOARD_FILE_LIMIT, open_board_file, read_board_file
from ledgit.storage.taskfiles import HISTORY_DIR, HISTORY_SUFFIX, list_names, stems, writer_alive
from ledgit.storage.tasklock import TMP_MARK

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from ledgit.core.record import Record
    from ledgit.storage.board import Board

TRUST_INDEX_FROM = 64  # verify_board of fewer tasks parses them (cheaper than the index)
# verify_board forks a worker per this many tasks (up to the CPUs; ledgit.storage.parallel): below
# ~2 x 250 tasks a fork (~2 ms) costs more than half the work saves.
PARALLEL_SLICE = 250


def verify_board(board: Board, ids: list[str] | None = None, *, trust_index: bool = True
                 ) -> list[Problem]:
    """Problems of the given tasks (all when None): history continuity (historycheck.verify),
    schema errors of task files, lifecycle invariants (DESIGN §4), orphan histories.

    The task-file side of a check needs only the file's revision. When many tasks are
    checked and ``trust_index`` holds, a task whose worktree-index row is fresh by Git's
    stat rule (:meth:`ledgit.storage.index.Index.fresh_revisions`) takes its revision from that
    row, computed from the very bytes the file still holds when they were parsed and
    validated, instead of being parsed again; its lifecycle rules run on the history's
    head state, which then equals the file's. Any problem found that way is checked
    again by parsing the file, so what is reported never depends on the index.
    ``trust_index=False`` parses every file (docs/history.md, "Verifying a board").
    From 2 x ``PARALLEL_SLICE`` tasks on, slices of them are checked in forked workers
    (:func:`ledgit.storage.parallel.map_slices`), after the index has been read and closed; the
    problems come back in the same order as from one process.

    Never raises for one bad task: each problem is a :class:`ledgit.core.history.Problem`.
    """
    check_orphans = ids is None
    names = board.list_ids() if ids is None else list(ids)
    # Everything the index provides is read here, before any fork: no SQLite connection
    # is open while the workers run (ledgit.storage.parallel).
    trusted = fresh_revisions(board) if trust_index and len(names) >= TRUST_INDEX_FROM \
        else {}
    histories = _DirReader(board.history_dir) if trusted else None

    def work(part: Sequence[str]) -> list[tuple[str, int, str, str]]:
        return [(p.task, p.line, p.rule, p.message)
                for p in _verify_slice(board, part, trusted, histories)]

    try:
        found = map_slices(names, work, workers_for(len(names), PARALLEL_SLICE))
    finally:
        if histories is not None:
            histories.close()
    problems = [Problem(*p) for p in found]
    if check_orphans:
        for name in sorted(list_names(board.tasks_str)):
            if name.startswith(".") and TMP_MARK in name and not writer_alive(name):
                problems.append(Problem(name[1:name.index(TMP_MARK)], 0, "temp-file",
                                        f"leftover temp file of an interrupted write "
                                        f"({board.rel(os.path.join(board.tasks_str, name))}"
                                        f"; fix: ledgit doctor --repair)"))
        tasks = set(names)
        for tid, other in case_twins(tasks):  # one file on macOS and Windows (issue 36)
            problems.append(Problem(tid, 0, ID_CASE_RULE, case_twin_message(
                board.rel(board.task_file(tid)), board.rel(board.task_file(other)))))
        for tid in sorted(stems(board.history_dir, HISTORY_SUFFIX) - tasks):
            problems.append(Problem(tid, 0, "orphan", "a history without a task file "
                                    f"({LEDGIT_DIR}/{HISTORY_DIR}/{tid}{HISTORY_SUFFIX})"))
    return problems


def _verify_slice(board: Board, names: Sequence[str], trusted: Mapping[str, str],
                  histories: _DirReader | None) -> list[Problem]:
    """:func:`verify_board` of the tasks ``names`` (no orphans), in order: a task with a
    ``trusted`` revision (from a fresh index row) through its history alone when that
    finds nothing, every other one by :func:`_verify_one`."""
    problems: list[Problem] = []
    for tid in names:
        rev = trusted.get(tid)
        if rev is not None and histories is not None:
            # A valid row's id is a valid task id (the record's own, = the stem).
            text = histories.text(tid + HISTORY_SUFFIX)
            if text is not None:
                try:
                    found, head = verify_with_head(tid, text, None, revision=rev)
                except Exception:  # noqa: BLE001 - the full check below reports it
                    found, head = [], None
                body = head.get("body") if head is not None else None
                if not found and head is not None and not (
                        isinstance(body, str) and _has_markers(body)):
                    fields = head.get("fields")
                    for name, message in lifecycle_problems(
                            fields if isinstance(fields, dict) else {}):
                        problems.append(Problem(tid, 0, "lifecycle",
                                                f"{name}: {message}"))
                    continue
        problems.extend(_verify_one(board, tid))
    return problems


def _verify_one(board: Board, tid: str) -> list[Problem]:
    """:func:`verify_board` of one task, parsing its file (the reference check)."""
    problems: list[Problem] = []
    path, hpath = board.task_path(tid), board.history_path(tid)
    rel, hrel = board.rel(path), board.rel(hpath)
    try:
        hdata: bytes | None = read_board_file(str(hpath), BOARD_FILE_LIMIT)
    except FileNotFoundError:
        hdata = None
    except OSError as exc:
        return [Problem(tid, 0, "schema", located(f"cannot read: {exc.strerror}", hrel))]
    read_error: str | None = None
    try:
        data: bytes | None = read_board_file(str(path), BOARD_FILE_LIMIT)
    except FileNotFoundError:
        data = None
    except OSError as exc:
        data, read_error = None, located(f"cannot read: {exc.strerror}", rel)
    # A line merge left in either file (Git's fallback without the driver, or the
    # driver's own body conflict, committed anyway): said first, at the marker's line,
    # as the gate does (ledgit.integration.taskcheck.check_task); the other rules would only
    # misplace it.
    for where, content in ((rel, data), (hrel, hdata)):
        marked = marker_problem(where, content)
        if marked:
            problems.append(Problem(tid, marked[0], RULE, marked[1]))
    if problems:
        return problems
    record: Record | None = None
    error: str | None = None
    if data is None and read_error is None:
        rule = "orphan" if hdata is not None else "missing"
        what = ("a history without a task file" if hdata is not None
                else "no such task")
        return [Problem(tid, 0, rule, what)]
    try:
        if read_error is not None:
            raise LedgitError(read_error, USAGE)
        assert data is not None
        record = board.parse(tid, data, rel)
    except LedgitError as exc:
        error = exc.message
        problems.append(Problem(tid, 0, "schema", error))
    try:
        # A parsed record is a valid one: historycheck.verify need not validate the head
        # state again when it has the record's revision.
        # Bytes, not decoded text: a line that is not UTF-8 is rule parse (docs/history.md).
        found = verify(tid, hdata, record, error,
                       revision=record.revision if record is not None else None)
    except Exception as exc:  # noqa: BLE001 - one bad task never stops the check
        found = [Problem(tid, 0, "internal", f"{type(exc).__name__}: {exc}")]
    if error is not None:
        found = [p for p in found if p.rule != "record-head"]
    problems.extend(found)
    if record is not None:
        for name, message in lifecycle_problems(record.fields):
            problems.append(Problem(tid, 0, "lifecycle", f"{name}: {message}"))
    return problems


def fresh_revisions(board: Board) -> dict[str, str]:
    """Index.fresh_revisions of the existing index ({} without one; never builds it)."""
    try:
        index = Index.open_existing(board)
    except (OSError, LedgitError):
        return {}
    if index is None:
        return {}
    try:
        return index.fresh_revisions()
    finally:
        index.close()


class _DirReader:
    """Reads files of one directory through one descriptor (os.open/os.read, no pathlib):
    a board-wide check reads thousands."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)
        self.fd: int | None = None
        if os.open in os.supports_dir_fd:
            try:
                self.fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            except OSError:
                self.fd = None  # read through paths instead

    def text(self, name: str) -> str | None:
        """The file's text (undecodable bytes replaced, like Board.read_history_text), or
        None when it cannot be read this way (the caller then takes the ordinary path)."""
        try:
            if self.fd is not None:
                fd, _ = open_board_file(name, dir_fd=self.fd)
            else:
                fd, _ = open_board_file(os.path.join(self.path, name))
        except OSError:
            return None
        try:
            # A short read of a regular file is its end: one read per file (a read that
            # fills the buffer is followed by more). A short read of anything else only
            # gives a problem, which Board.verify checks again the ordinary way.
            chunks = [os.read(fd, 1 << 16)]
            while len(chunks[-1]) == 1 << 16:
                chunks.append(os.read(fd, 1 << 16))
        except OSError:
            return None
        finally:
            os.close(fd)
        return b"".join(chunks).decode("utf-8", errors="replace")

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _has_markers(body: str) -> bool:
    """ledgit.core.markers.has_markers, after three substring scans that rule out most bodies: a
    marker line starts with seven ``<``, ``>`` or ``|``."""
    if "<<<<<<<" not in body and ">>>>>>>" not in body and "|||||||" not in body:
        return False
    return has_markers(body)
