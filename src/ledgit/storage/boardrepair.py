"""Repairing a board (DESIGN §6, ``ledgit doctor [--repair]``): interrupted writes rolled
forward, torn history lines cut, leftover temp files removed. What
:meth:`ledgit.storage.board.Board.repair` and :meth:`~ledgit.storage.board.Board.pending_repairs`
run."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ledgit.core.errors import BUSY, LedgitError
from ledgit.core.history import HistoryError, head_state, heads, parse_events, replay
from ledgit.core.readout import now_timestamp
from ledgit.core.record import parse_record, record_from_state
from ledgit.core.revision import revision_of
from ledgit.storage.board import DEFAULT_LOCK_TIMEOUT, refuse_link
from ledgit.storage.safefiles import BOARD_FILE_LIMIT, read_board_file
from ledgit.storage.taskfiles import (
    HISTORY_SUFFIX,
    TASK_SUFFIX,
    fsync_dir,
    is_valid_id,
    list_names,
    stems,
)
from ledgit.storage.tasklock import TMP_MARK
from ledgit.storage.writepath import read_history_healed, refresh_index, settle, write_task

if TYPE_CHECKING:
    from ledgit.storage.board import Board


def repair_board(board: Board, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> list[str]:
    """Roll interrupted writes forward (DESIGN §6, ``ledgit doctor --repair``).

    Per task, under its lock: leftover temp files are removed; a torn last history line
    (a crash mid-append) is cut off; a history whose head is one write ahead of the file
    (appended, not renamed) has the file rewritten from the head state; a history holding
    only its genesis event and no task file (a create that crashed) gets its file.
    Returns one line per action taken. A task that stays busy is reported, not waited on.
    """
    done: list[str] = []
    leftovers, tasks, suspects = _repair_suspects(board)
    for tid in sorted(suspects):
        if not is_valid_id(tid):
            continue
        try:
            refuse_link(board, board.task_path(tid))
            refuse_link(board, board.history_path(tid))
        except LedgitError as exc:
            done.append(f"{tid}: skipped: {exc.message}")
            continue
        try:
            with board.lock(tid, lock_timeout):
                for name in leftovers.get(tid, []):
                    try:
                        (board.tasks_dir / name).unlink()
                        done.append(f"{tid}: removed leftover temp file "
                                    f"{board.rel(board.tasks_dir / name)}")
                    except FileNotFoundError:
                        pass
                _, healed = read_history_healed(board, tid)
                if healed:
                    done.append(f"{tid}: {healed}")
                if tid in tasks:
                    try:
                        before = board.read(tid).revision
                        current, _, _ = settle(board, tid, "ledgit", now_timestamp(),
                                                     record_hand_edit=False)
                    except LedgitError:
                        continue  # reported by verify
                    if current.revision != before:
                        done.append(f"{tid}: rolled an interrupted write forward "
                                    f"(rewrote the task file from its history head)")
                elif not board.task_path(tid).exists():
                    text = board.read_history_text(tid) or ""
                    if not text.strip():
                        # A create killed before its genesis event was whole: the
                        # history is empty (or was cut to nothing above), and nothing
                        # was acknowledged (a create answers after the task file).
                        board.history_path(tid).unlink()
                        fsync_dir(board.history_dir)
                        done.append(f"{tid}: removed the empty history of an "
                                    f"interrupted create")
                        continue
                    try:
                        events = parse_events(text, tid)
                        if len(events) != 1:
                            continue
                        _, state = head_state(events, tid)
                        record = record_from_state(state)
                    except (HistoryError, LedgitError):
                        continue
                    if record.id != tid:
                        continue
                    write_task(board, tid, record)
                    refresh_index(board, [record])
                    done.append(f"{tid}: recreated the task file of an interrupted create "
                                f"from its history")
        except LedgitError as exc:
            if exc.code != BUSY:
                raise
            done.append(f"{tid}: busy, skipped (another process holds its lock)")
    return done


def pending_repairs(board: Board) -> list[str]:
    """Tasks whose last write was interrupted (DESIGN §6), without touching anything: a
    dry run of :func:`repair_board`'s detection (``ledgit doctor``). Of repair's suspects, those
    with a leftover temp file or a history without its file, and those whose history is
    torn (no final newline) or one event ahead of the task file."""
    leftovers, tasks, suspects = _repair_suspects(board)
    found: set[str] = set()
    for tid in suspects:
        if tid in leftovers or tid not in tasks:
            found.add(tid)
            continue
        hpath = board.history_dir / (tid + HISTORY_SUFFIX)
        tpath = board.tasks_dir / (tid + TASK_SUFFIX)
        try:
            text = read_board_file(str(hpath), BOARD_FILE_LIMIT).decode("utf-8",
                                                                       errors="replace")
            if text and not text.endswith("\n"):
                found.add(tid)  # a torn append
                continue
            events = parse_events(text, tid)
            hs = heads(events)
            if len(hs) != 1 or len(events) < 2:
                continue
            states = replay(events, tid)
            head = events[-1] if events[-1]["id"] == hs[0] else None
            if head is None:
                continue
            record = parse_record(read_board_file(str(tpath), BOARD_FILE_LIMIT), str(tpath))
            if (record.revision != revision_of(states[hs[0]])
                    and record.revision == revision_of(states[head["parents"][0]])):
                found.add(tid)
        except (OSError, HistoryError, LedgitError, ValueError):
            continue
    return sorted(found)


def _repair_suspects(board: Board) -> tuple[dict[str, list[str]], set[str], set[str]]:
    """(leftover temp files by task, task ids with a file, suspects) for :func:`repair_board`
    and :func:`pending_repairs`. Suspects: a leftover temp file, a history without its
    file, or a history written no earlier than its file (ids not yet validated)."""
    leftovers: dict[str, list[str]] = {}
    for name in list_names(board.tasks_dir):
        if name.startswith(".") and TMP_MARK in name:
            leftovers.setdefault(name[1:name.index(TMP_MARK)], []).append(name)
    tasks = set(stems(board.tasks_dir, TASK_SUFFIX))
    histories = stems(board.history_dir, HISTORY_SUFFIX)
    suspects = set(leftovers)
    for tid in tasks & histories:
        try:
            hst = os.stat(board.history_dir / (tid + HISTORY_SUFFIX))
            tst = os.stat(board.tasks_dir / (tid + TASK_SUFFIX))
        except OSError:
            continue
        if hst.st_mtime_ns >= tst.st_mtime_ns:
            suspects.add(tid)
    suspects |= histories - tasks
    return leftovers, tasks, suspects
