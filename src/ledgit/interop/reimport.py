"""Re-importing a task that is already on the board, as a 3-way merge (docs/interop.md,
"Re-import"): base = the record as last imported, ours = the board, theirs = the source;
nothing the board changed is overwritten."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ledgit.core.errors import USAGE, LedgitError, located
from ledgit.core.history import MERGE_OP, HistoryError, event_line, heads, new_event, replay
from ledgit.core.historycheck import parse_checked
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.merge import merge_records
from ledgit.core.record import make_record, record_from_state
from ledgit.core.render import render_record
from ledgit.interop.genesis import IMPORT_OP
from ledgit.operations.revert import clashes
from ledgit.storage.board import refuse_link
from ledgit.storage.safefiles import BOARD_FILE_LIMIT, read_board_file
from ledgit.storage.taskfiles import replace_task_file, write_all
from ledgit.storage.writepath import damaged_history

if TYPE_CHECKING:
    from ledgit.core.history import Event
    from ledgit.core.record import Record
    from ledgit.interop.incoming import Incoming
    from ledgit.storage.board import Board


UNCHANGED, UPDATED, MERGED = "unchanged", "updated", "merged"


class Reimport(NamedTuple):
    """What re-importing one existing task did: ``kind`` (UNCHANGED: nothing written;
    UPDATED: one ``import`` event; MERGED: an ``import`` event branching from the last one
    and a ``merge`` event), the task file's record and bytes now, and the paths where the
    board's value was kept over the source's (``conflicts``, MERGED only)."""

    kind: str
    record: Record
    data: bytes
    conflicts: tuple[str, ...] = ()


def last_import(events: Sequence[Event], source: str) -> Event | None:
    """The task's latest event that wrote what ``source`` held (a ``create`` or ``import``
    event whose meta names the source): its state is the record as last imported, the base
    of the next re-import. None when the history has none."""
    found: Event | None = None
    for event in events:
        meta = event.get("meta")
        if event["op"] in ("create", IMPORT_OP) and isinstance(meta, dict) \
                and meta.get("source") == source:
            found = event
    return found


def merge_import(base: Record | None, ours: Record, theirs: Record
                 ) -> tuple[Record, tuple[str, ...]]:
    """Import as a merge (docs/interop.md): the record the board takes when ``ours`` (the
    board) and ``theirs`` (the source) both changed since ``base`` (the record as last
    imported; None when unknown), and the paths where the board's value was kept.

    :func:`ledgit.core.merge.merge_records` merges field by field; wherever it would settle a
    difference by its rules (:func:`ledgit.operations.revert.clashes`), and for overlapping
    body edits,
    the board's value stays: nothing local is overwritten. When the board's values do not
    fit the merged record's lifecycle, the board's record stays whole."""
    merged = merge_records(base, ours, theirs)
    paths = clashes(base, ours, theirs)
    fields = json.loads(json.dumps(merged.record.fields))  # a deep copy, JSON values only
    for path in paths:
        _keep_ours(fields, ours.fields, path.split("."))
    body = merged.record.body
    if "body" in merged.conflicts:
        body = ours.body
        paths.append("body")
    fields = {k: v for k, v in fields.items() if v not in (None, "", [], {})}
    try:
        if lifecycle_problems(fields):
            raise LedgitError("lifecycle")
        result = make_record(fields, body)
    except LedgitError:
        changed = sorted(k for k in set(theirs.fields) | set(ours.fields)
                         if k != "last_modified" and (base is None or theirs.fields.get(k)
                                                      != base.fields.get(k)))
        return ours, tuple(sorted(set(paths) | set(changed)))
    return result, tuple(paths)


def _keep_ours(fields: dict[str, Any], ours: Mapping[str, Any], path: list[str]) -> None:
    """Set ``path`` (``title``, ``x.beads.key``, ``items.ID.key``) of ``fields`` to its
    value in ``ours`` (removed when ours has none)."""
    head, rest = path[0], path[1:]
    if head == "items" and rest:
        mine = next((i for i in ours.get("items", []) if i["id"] == rest[0]), None)
        for item in fields.get("items", []):
            if item["id"] == rest[0] and mine is not None:
                _keep_ours(item, mine, rest[1:]) if len(rest) > 1 else item.update(mine)
        return
    if not rest:
        if head in ours:
            fields[head] = json.loads(json.dumps(ours[head]))
        else:
            fields.pop(head, None)
        return
    inner = fields.setdefault(head, {})
    theirs_ok = isinstance(inner, dict) and isinstance(ours.get(head), dict)
    if theirs_ok:
        _keep_ours(inner, ours[head], rest)
    else:
        _keep_ours(fields, ours, [head])


def reimport_task(board: Board, item: Incoming, actor: str, source: str) -> Reimport:
    """Re-import one existing task as a 3-way merge (docs/interop.md, "Re-import"), under
    its lock, in write-ahead order: base = the record as last imported (the state of
    :func:`last_import`), ours = the board, theirs = the source. Source unchanged since the
    last import: nothing written, whatever the board changed. Board unchanged since: one
    ``import`` event. Both changed: an ``import`` event on the last import (the source's
    side) and a ``merge`` event joining it to the board's head, whose state is
    :func:`merge_import`'s. Raises LedgitError (exit 1) for a history that does not verify,
    has more than one head, or is behind the task file (a hand edit not yet recorded)."""
    tid = item.record.id
    theirs = item.record
    with board.lock(tid):
        current = board.read(tid)
        try:
            raw = read_board_file(board.history_file(tid), BOARD_FILE_LIMIT)
        except FileNotFoundError:
            raw = b""
        except OSError as exc:
            raise LedgitError(located(f"cannot read: {exc.strerror}",
                                      board.rel(board.history_file(tid))), USAGE) from None
        try:
            events = parse_checked(raw, tid)
        except HistoryError as exc:
            raise damaged_history(board, tid, exc.problem, raw) from None
        hs = heads(events)
        head = next((e for e in events if e["id"] in hs), None)
        if len(hs) != 1 or head is None or head["after"] != current.revision:
            raise LedgitError(f"{tid}: the task file differs from its history head or the "
                              f"history has {len(hs)} heads (run: ledgit record {tid} or "
                              f"ledgit resolve)", 1)
        if current == theirs:
            return Reimport(UNCHANGED, current, render_record(current).encode("utf-8"))
        last = last_import(events, source)
        base: Record | None = None
        if last is not None:
            try:
                base = record_from_state(replay(events, tid)[last["id"]])
            except (HistoryError, LedgitError) as exc:
                raise LedgitError(f"{tid}: its last import cannot be replayed ({exc}; see: "
                                  f"ledgit verify {tid})", 1) from None
            if base == theirs:  # the source did not change: the board's edits stay
                return Reimport(UNCHANGED, current, render_record(current).encode("utf-8"))
        meta = {"source": source, "source_id": item.source_id}
        note = f"re-imported from {source} {item.source_id}"
        kept: tuple[str, ...]
        if base is not None and last is not None and base == current:
            # Nothing changed on the board since the last import: the source's record.
            result, kept, kind = theirs, (), UPDATED
            new = [new_event(parents=hs, at=max(theirs.fields["last_modified"], head["at"]),
                             actor=actor, op=IMPORT_OP, before_state=current.state(),
                             after_state=theirs.state(), note=note, meta=meta)]
        else:
            # Both changed (or no import to start from: the genesis event stands in, and
            # every difference counts as changed on both): the source's record as an import
            # event on a branch from the last import, so its state is the next re-import's
            # base, then a merge event joining it to the board.
            result, kept = merge_import(base, current, theirs)
            fork = last if last is not None else events[0]
            fork_state = base.state() if base is not None else replay(events, tid)[fork["id"]]
            side = new_event(parents=[fork["id"]],
                             at=max(theirs.fields["last_modified"], fork["at"]),
                             actor=actor, op=IMPORT_OP, before_state=fork_state,
                             after_state=theirs.state(), note=note, meta=meta)
            parents = sorted((set(hs) - {fork["id"]}) | {side["id"]})
            first = theirs if parents[0] == side["id"] else current
            merge_meta: dict[str, Any] = dict(meta)
            if kept:
                merge_meta["conflicts"] = list(kept)
            join = new_event(parents=parents, at=max(head["at"], side["at"]), actor=actor,
                             op=MERGE_OP, before_state=first.state(),
                             after_state=result.state(),
                             note=f"merged the re-import of {source} {item.source_id} with "
                                  f"the board's changes"
                                  + (f"; kept the board's {', '.join(kept)}" if kept else ""),
                             meta=merge_meta)
            new, kind = [side, join], MERGED
        data = render_record(result).encode("utf-8")
        path = board.history_path(tid)
        refuse_link(board, path)
        refuse_link(board, board.task_path(tid))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            write_all(fd, "".join(event_line(e) for e in new).encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        if result != current:
            _replace(board, tid, data, fsync=True)
        return Reimport(kind, result, data, kept)


def _replace(board: Board, tid: str, data: bytes, fsync: bool = False) -> None:
    """Atomic replace of a task file (temp file in the same dir + rename)."""
    replace_task_file(board.task_path(tid), data, fsync=fsync)
