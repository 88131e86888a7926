"""The first step of a bulk import: each incoming record classified against the board (reads
only) as new, changed or unchanged, or skipped with a reason -- including what an interrupted
import of the same source left, which is then completed."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from ledgit.core.errors import LedgitError
from ledgit.core.importroot import ROOT_ACTOR
from ledgit.core.render import render_record
from ledgit.core.schema import case_twin_message
from ledgit.interop.genesis import IMPORT_OP, history_bytes
from ledgit.interop.incoming import Skip
from ledgit.storage.safefiles import BOARD_FILE_LIMIT, read_board_file

if TYPE_CHECKING:
    from ledgit.core.record import Record
    from ledgit.interop.incoming import Incoming
    from ledgit.storage.board import Board


class Plan(NamedTuple):
    """Where each incoming record goes: written as new, re-imported (with the board's
    record now), left as it is, or skipped (with why)."""

    new: list[Incoming]
    changed: list[tuple[Incoming, Record]]
    unchanged: list[Incoming]
    skipped: list[Skip]


def plan_import(board: Board, incoming: Iterable[Incoming], skips: Iterable[Skip],
                source: str, actor: str | None = None) -> Plan:
    """Classify every incoming record against the board (reads only). ``actor`` (of this
    import) lets it recognise what an interrupted import by the same actor left: a history
    holding exactly the events this import would write, a task file cut short."""
    new: list[Incoming] = []
    changed: list[tuple[Incoming, Record]] = []
    unchanged: list[Incoming] = []
    skipped = list(skips)
    first: dict[str, str] = {}
    existing = set(board.list_ids())
    folded = {tid.casefold(): tid for tid in existing}
    histories = _stems(board.history_str, ".jsonl")
    for item in incoming:
        tid = item.record.id
        if tid in first:
            skipped.append(Skip(item.where, f"duplicate id {tid} (first at {first[tid]})"))
            continue
        twin = folded.get(tid.casefold(), tid)
        if twin != tid:  # issue 36: one file on macOS and Windows
            where = f", from {first[twin]}" if twin in first else ""
            skipped.append(Skip(item.where, f"id taken under case folding: {tid}: "
                                + case_twin_message(board.rel(board.task_file(tid)),
                                                    board.rel(board.task_file(twin)) + where)))
            continue
        first[tid] = item.where
        folded[tid.casefold()] = tid
        if tid not in existing:
            if tid in histories and not (_interrupted_import(board, tid, source, False)
                                         or _ours(board, item, actor, source)):
                skipped.append(Skip(item.where, f"history without task file: {tid} "
                                                f"(run: ledgit doctor --repair)"))
            else:
                new.append(item)
            continue
        if _size(board.history_file(tid)) <= 0:
            # The history never made it to disk (a crash mid-import): write both again.
            current = _read_or_none(board, tid)
            if current is None or source in current.fields.get("x", {}):
                new.append(item)
            else:
                skipped.append(Skip(item.where, f"id taken: {tid} exists and was not "
                                                f"imported from {source}"))
            continue
        try:
            data = read_board_file(board.task_file(tid), BOARD_FILE_LIMIT)
        except OSError:
            data = b""
        rendered = render_record(item.record).encode("utf-8")
        if data == rendered:
            unchanged.append(item)  # the bytes we would write: no parse needed
            continue
        if rendered.startswith(data) and (_interrupted_import(board, tid, source, False)
                                          or _ours(board, item, actor, source)):
            new.append(item)  # cut short (power lost before the flush): write it again
            continue
        try:
            current = board.read(tid)
        except LedgitError as exc:
            if _interrupted_import(board, tid, source, False):
                new.append(item)
            else:
                skipped.append(Skip(item.where, f"existing task unreadable: {exc}"))
            continue
        if source not in current.fields.get("x", {}):
            skipped.append(Skip(item.where, f"id taken: {tid} exists and was not imported "
                                            f"from {source}"))
        elif current == item.record:
            unchanged.append(item)
        else:
            changed.append((item, current))
    return Plan(new, changed, unchanged, skipped)


def _ours(board: Board, item: Incoming, actor: str | None, source: str) -> bool:
    """True when the task's history holds exactly what importing ``item`` as ``actor``
    writes (so a missing or cut-short task file is an interrupted import's to finish)."""
    if actor is None:
        return False
    try:
        data = read_board_file(board.history_file(item.record.id), BOARD_FILE_LIMIT)
        return data == history_bytes(item, actor, source)
    except OSError:
        return False


def _size(path: Any) -> int:
    """The file's size, or -1 when it does not exist."""
    try:
        return os.stat(path).st_size
    except OSError:
        return -1


def _read_or_none(board: Board, tid: str) -> Record | None:
    try:
        return board.read(tid)
    except LedgitError:
        return None


def _interrupted_import(board: Board, tid: str, source: str, file_ok: bool) -> bool:
    """True for what a crash in the middle of a bulk import of ``source`` leaves: a history
    that is missing, empty or torn (its last line cut short), or (when the task file is
    missing or unreadable, ``file_ok`` False) one that holds only what such an import wrote:
    the import root and one ``import`` event of ``source`` (docs/interop.md)."""
    text = board.read_history_text(tid)
    if text is None or not text.strip():
        return True
    lines = text.strip().split("\n")
    events = []
    for n, line in enumerate(lines):
        try:
            events.append(json.loads(line))
        except (ValueError, RecursionError):
            return n == len(lines) - 1 and n < 2  # torn: nothing was written after it
    if file_ok or len(events) != 2 or not all(isinstance(e, dict) for e in events):
        return False
    root, first = events
    meta = first.get("meta")
    return (root.get("op") == "create" and root.get("actor") == ROOT_ACTOR
            and not root.get("parents") and first.get("op") == IMPORT_OP
            and first.get("parents") == [root.get("id")] and isinstance(meta, dict)
            and meta.get("source") == source)


def _stems(path: Any, suffix: str) -> set[str]:
    try:
        names = os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    n = len(suffix)
    return {name[:-n] for name in names if name.endswith(suffix) and not name.startswith(".")}
