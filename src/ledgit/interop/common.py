"""The bulk import loop shared by every importer: plan, refuse or write, summarise.

An importer turns its source into :class:`Incoming` records (plus :class:`Skip` lines for what
it could not read) and hands them to :func:`import_records`, which

1. plans: each record is new, changed (re-imported by :func:`_update`) or unchanged, or
   skipped with a reason (duplicate id, an existing task that did not come from this source,
   a task whose file and history disagree); with ``strict`` any skip refuses the whole
   import before a byte is written (LedgitError exit 2 listing them with their lines);
2. writes new tasks in bulk (:func:`_write_new`): each file created whole (``O_EXCL``, one
   write, no per-file fsync) in a staging directory ``.ledgit/.import-<pid>-<rand>/``, the
   histories (genesis event, or the source's own events carried over as a chain) in one
   staged directory -- by a :class:`HistoryWriter` process for a large import -- and the
   task files in another; then, once both are complete, moved into the board -- on a first
   import by renaming the two staged directories over the empty ``history/`` and ``tasks/``
   (histories first), otherwise file by file (every history, then every task file): the
   write-ahead order of DESIGN §6 per batch. Changed tasks go through the task lock and are
   re-imported as a 3-way merge (:func:`_update`: base = the record as last imported, ours =
   the board, theirs = the source; nothing the board changed is overwritten), fsync'ed as any
   write;
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

import hashlib
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from ledgit.canonjson import plain_encoder
from ledgit.errors import USAGE, LedgitError, located
from ledgit.locate import TASKS_DIR
from ledgit.taskfiles import (
    HISTORY_DIR,
    HISTORY_SUFFIX,
    TASK_SUFFIX,
    file_stat,
    replace_task_file,
    write_all,
)

if TYPE_CHECKING:
    from pathlib import Path

    from ledgit.board import Board
    from ledgit.history import Event
    from ledgit.indexbuild import Written
    from ledgit.record import Record

Stat = tuple[int, int, int]  # (mtime_ns, size, inode), as the index keeps it
IMPORT_OP = "import"
MAX_LISTED = 20  # skip reasons printed one per line; the rest are counted


class Skip(NamedTuple):
    """A source entry that was not imported: where it is (``file:line``) and why."""

    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


class Step(NamedTuple):
    """One event of a source's own history, carried over: the record after it, when, who,
    the source's operation name (kept in ``meta``) and a note."""

    record: Record
    at: str
    actor: str
    op: str
    note: str | None = None
    meta: dict[str, Any] | None = None


class Incoming(NamedTuple):
    """A record to import. ``steps``: the source's history, oldest first, whose last record
    may differ from ``record`` (an unrecorded edit: one more event is added); empty → one
    genesis event. ``source_id`` names it in notes and meta."""

    record: Record
    where: str
    source_id: str
    steps: tuple[Step, ...] = ()


class Conflict(NamedTuple):
    """A re-imported record that changed both at the source and on the board in the same
    place: the board's value was kept for each of ``fields`` (paths as
    :func:`ledgit.ops.clashes` names them, ``body`` for overlapping body edits)."""

    task: str
    where: str
    fields: tuple[str, ...]

    def __str__(self) -> str:
        return (f"{self.where}: {self.task}: changed on the board and at the source: "
                f"{', '.join(self.fields)} (kept the board's)")


class Summary:
    """What an import did. ``line()`` is the summary line of the CLI. (A plain class, not a
    dataclass: an import does not pay for importing dataclasses.)"""

    def __init__(self, source: str, imported: int = 0, updated: int = 0, unchanged: int = 0,
                 skipped: list[Skip] | None = None, ids: list[str] | None = None,
                 seconds: float = 0.0, merged: int = 0,
                 conflicts: list[Conflict] | None = None) -> None:
        self.source, self.imported, self.updated, self.unchanged = (source, imported, updated,
                                                                    unchanged)
        self.skipped: list[Skip] = [] if skipped is None else skipped
        self.ids: list[str] = [] if ids is None else ids
        self.seconds = seconds
        self.merged = merged  # changed on both sides, merged without a conflict
        self.conflicts: list[Conflict] = [] if conflicts is None else conflicts

    def __repr__(self) -> str:
        return (f"Summary({self.source!r}, imported={self.imported}, updated={self.updated}, "
                f"merged={self.merged}, conflicts={len(self.conflicts)}, "
                f"unchanged={self.unchanged}, skipped={len(self.skipped)})")

    def line(self) -> str:
        reasons = Counter(_reason_kind(s.reason) for s in self.skipped)
        why = "; ".join(f"{n} {k}" for k, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
        return (f"import {self.source}: imported {self.imported}, updated {self.updated}, "
                f"merged {self.merged}, conflicts {len(self.conflicts)}, "
                f"unchanged {self.unchanged}, skipped {len(self.skipped)}"
                + (f" ({why})" if why else ""))

    def as_json(self) -> dict[str, Any]:
        return {"source": self.source, "imported": self.imported, "updated": self.updated,
                "merged": self.merged,
                "conflicts": [{"id": c.task, "where": c.where, "fields": list(c.fields)}
                              for c in self.conflicts],
                "unchanged": self.unchanged,
                "skipped": [{"where": s.where, "reason": s.reason} for s in self.skipped],
                "ids": self.ids, "seconds": round(self.seconds, 3)}


def _reason_kind(reason: str) -> str:
    """The first words of a reason, for the grouped count on the summary line."""
    head = reason.split(":", 1)[0] if ": " in reason else reason
    return head.split("(")[0].strip()


class Progress:
    """A one-line progress bar on ``stream`` (stderr), only when it is a terminal; at most
    ten redraws a second. ``NO_COLOR`` needs nothing: the bar is plain text."""

    def __init__(self, label: str, total: int, stream: IO[str] | None = None,
                 enabled: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = (self.stream.isatty() if enabled is None else enabled) and total > 0
        self.label, self.total, self.done = label, total, 0.0
        self._last = 0.0

    def advance(self, n: float = 1) -> None:
        """Count ``n`` more tasks done (a fraction for one step of a task's writes)."""
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= 0.1 or self.done >= self.total:
            self._last = now
            width = 30
            filled = int(width * self.done // self.total)
            self.stream.write(f"\r{self.label} [{'#' * filled}{'-' * (width - filled)}] "
                              f"{int(self.done)}/{self.total}")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * (len(self.label) + 50) + "\r")
            self.stream.flush()


class _Plan(NamedTuple):
    new: list[Incoming]
    changed: list[tuple[Incoming, Record]]
    unchanged: list[Incoming]
    skipped: list[Skip]


def plan_import(board: Board, incoming: Iterable[Incoming], skips: Iterable[Skip],
                source: str, actor: str | None = None) -> _Plan:
    """Classify every incoming record against the board (reads only). ``actor`` (of this
    import) lets it recognise what an interrupted import by the same actor left: a history
    holding exactly the events this import would write, a task file cut short."""
    from ledgit.record import render_record

    new: list[Incoming] = []
    changed: list[tuple[Incoming, Record]] = []
    unchanged: list[Incoming] = []
    skipped = list(skips)
    first: dict[str, str] = {}
    existing = set(board.list_ids())
    histories = _stems(board.history_str, ".jsonl")
    for item in incoming:
        tid = item.record.id
        if tid in first:
            skipped.append(Skip(item.where, f"duplicate id {tid} (first at {first[tid]})"))
            continue
        first[tid] = item.where
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
            with open(board.task_file(tid), "rb") as fh:
                data = fh.read()
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
    return _Plan(new, changed, unchanged, skipped)


def _ours(board: Board, item: Incoming, actor: str | None, source: str) -> bool:
    """True when the task's history holds exactly what importing ``item`` as ``actor``
    writes (so a missing or cut-short task file is an interrupted import's to finish)."""
    if actor is None:
        return False
    try:
        with open(board.history_file(item.record.id), "rb") as fh:
            return fh.read() == history_bytes(item, actor, source)
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
    that is missing, empty or torn, or (when the task file is missing or unreadable,
    ``file_ok`` False) one that holds only the genesis event such an import wrote."""
    text = board.read_history_text(tid)
    if text is None or not text.strip():
        return True
    lines = text.strip().split("\n")
    try:
        event = json.loads(lines[0])
    except (ValueError, RecursionError):
        return len(lines) == 1  # a torn genesis line: nothing was written after it
    if file_ok or len(lines) != 1:
        return False
    return (isinstance(event, dict) and not event.get("parents") and event.get("op") == "create"
            and isinstance(event.get("meta"), dict) and event["meta"].get("source") == source)


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
    _remove_stale_staging(board)
    return summary


def _apply_changes(board: Board, plan: _Plan, written: dict[str, Written],
                   summary: Summary, actor: str, source: str, progress: Progress | None,
                   rebuild_index: bool) -> None:
    """The update events of changed tasks, then the index (while the bulk flush runs)."""
    for item, _current in plan.changed:
        try:
            outcome = _update(board, item, actor, source)
        except LedgitError as exc:
            summary.skipped.append(Skip(item.where, f"not updated: {exc}"))
        else:
            if outcome.kind == UNCHANGED:
                summary.unchanged += 1
            else:
                written[item.record.id] = (outcome.record, outcome.data, None, None)
                summary.ids.append(item.record.id)
                if outcome.kind == UPDATED:
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
        from ledgit.index import Index

        # Files just created are indexed from what was written (not read back or parsed);
        # changed ones are read and, when their bytes are still ours, not parsed.
        Index.rebuild_written(board, written)


def genesis_events(item: Incoming, actor: str, source: str) -> list[Event]:
    """The history of a newly imported task: the source's steps as a hash-linked chain (the
    first one the genesis), then one ``import`` event if the record differs from the last
    step; or a single genesis ``create`` event at the record's ``last_modified``."""
    from ledgit.history import new_event

    meta_base = {"source": source, "source_id": item.source_id}
    if not item.steps:
        return [_genesis(item.record, item.record.fields["last_modified"], actor,
                         f"imported from {source} {item.source_id}", meta_base)]
    events: list[Event] = []
    state: dict[str, Any] = {}
    for n, step in enumerate(item.steps):
        after = step.record.state()
        if n and after == state:
            continue
        op = "create" if n == 0 else IMPORT_OP
        meta = dict(meta_base)
        if step.op != op:
            meta["source_op"] = step.op
        if step.meta:
            meta.update(step.meta)
        if n == 0:
            event = _genesis(step.record, step.at, step.actor, step.note, meta)
        else:
            event = new_event(parents=[events[-1]["id"]], at=step.at, actor=step.actor, op=op,
                              before_state=state, after_state=after, note=step.note, meta=meta)
        events.append(event)
        state = after
    final = item.record.state()
    if final != state:
        events.append(new_event(parents=[events[-1]["id"]],
                                at=item.record.fields["last_modified"], actor=actor,
                                op=IMPORT_OP, before_state=state, after_state=final,
                                note=f"current state of {source} {item.source_id}",
                                meta=meta_base))
    return events


def _canonical(value: Any) -> bytes:
    """Canonical JSON of ``value`` as bytes (record.canonical_json without its float walk:
    a Record's state never holds a float -- make_record refuses them -- and neither do the
    notes and meta built here); the C encoder is built once (ledgit.canonjson)."""
    return _encode(value).encode("utf-8")


_encode = plain_encoder()


def _genesis(record: Record, at: str, actor: str, note: str | None,
             meta: Mapping[str, Any] | None) -> Event:
    """A genesis ``create`` event for ``record``, its patch written directly: adding the
    body, then the fields, to ``{}`` (history.new_event's jsonpatch would add them in the
    other order; both replay to the same state, and these are the bytes imports write)."""
    return json.loads(_genesis_line(record, at, actor, note, meta))  # type: ignore[no-any-return]


def _genesis_line(record: Record, at: str, actor: str, note: str | None,
                  meta: Mapping[str, Any] | None) -> bytes:
    """The history line (canonical JSON + ``\n``) of :func:`_genesis`'s event, built with the
    body and the fields encoded once: the state's hash, the patch and the event id all reuse
    those two texts (canonical JSON sorts keys: the event's are actor, after, at, before, id,
    meta, note, op, parents, patch; a patch operation's are op, path, value)."""
    return _genesis_encoded(_encoded(record), at, actor, note, meta)


def _encoded(record: Record) -> tuple[bytes, bytes, str]:
    """(canonical JSON of the body, of the fields, the record's revision: the sha256 of the
    state's canonical JSON ``{"body":...,"fields":...}``, as record.revision_of computes
    it), each text encoded once."""
    body = _canonical(record.body)
    fields = _canonical(record.fields)
    return body, fields, hashlib.sha256(b'{"body":' + body + b',"fields":' + fields
                                        + b"}").hexdigest()


def _genesis_encoded(encoded: tuple[bytes, bytes, str], at: str, actor: str,
                     note: str | None, meta: Mapping[str, Any] | None) -> bytes:
    """:func:`_genesis_line` from the record's :func:`_encoded` texts."""
    body, fields, after = encoded
    head = (b'{"actor":' + _canonical(actor) + b',"after":"' + after.encode("ascii")
            + b'","at":' + _canonical(at) + b',"before":null')
    tail = ((b',"meta":' + _canonical(dict(meta)) if meta else b"")
            + (b',"note":' + _canonical(note) if note else b"")
            + b',"op":"create","parents":[],"patch":[{"op":"add","path":"/body","value":'
            + body + b'},{"op":"add","path":"/fields","value":' + fields + b"}]}")
    event_id = hashlib.sha256(head + tail).hexdigest().encode("ascii")
    return head + b',"id":"' + event_id + b'"' + tail + b"\n"


def history_bytes(item: Incoming, actor: str, source: str) -> bytes:
    """The history file a newly imported ``item`` gets: :func:`genesis_events`, one
    canonical JSON line each (the single-genesis case without building the event twice)."""
    return _history(item, actor, source)[0]


def _history(item: Incoming, actor: str, source: str) -> tuple[bytes, str]:
    """(:func:`history_bytes`, the revision of ``item.record``): the single-genesis case
    encodes the record once for both."""
    encoded = _encoded(item.record)
    if not item.steps:
        return _genesis_encoded(encoded, item.record.fields["last_modified"], actor,
                                f"imported from {source} {item.source_id}",
                                {"source": source, "source_id": item.source_id}), encoded[2]
    return (b"".join(_canonical(e) + b"\n" for e in genesis_events(item, actor, source)),
            encoded[2])


class _Flush:
    """The one durability point of a bulk import: ``os.sync()`` in a background thread (it
    waits on the disk, not the CPU, so the index is built meanwhile); :meth:`wait` returns
    once everything written before it started is on disk."""

    def __init__(self, start: bool) -> None:
        self._thread = None
        if start:
            import threading

            self._thread = threading.Thread(target=_sync, name="ledgit-import-flush",
                                            daemon=True)
            self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()


STAGING_PREFIX = ".import-"  # .ledgit/.import-<pid>-<random>/{history,tasks}


def _write_new(board: Board, items: Sequence[Incoming], actor: str, source: str,
               progress: Progress | None, writer: HistoryWriter | None = None
               ) -> tuple[dict[str, Written], _Flush]:
    """Write the new tasks: the histories and the task files, each created whole
    (``O_CREAT | O_EXCL``, one write; :func:`_create_all`) in a staging directory
    ``.ledgit/.import-<pid>-<rand>/`` that no reader looks at -- the histories by ``writer``
    (a :class:`HistoryWriter`) while this process creates the task files, when it is given
    and there are at least :data:`FORK_MIN` tasks; then, both complete, moved into the
    board: on a board whose ``history/`` and
    ``tasks/`` are empty (a first import) by renaming each staged directory over the empty
    one (two renames, histories first), else file by file (every history, then every task
    file; ``os.replace``). So no half-written file is ever in the board, whatever moment a
    crash picks. Then the flush starts (see :class:`_Flush`).
    Returns (id -> (record, the task file's bytes, its stat, the record's revision): what
    ``Index.rebuild_written`` takes, the flush to wait for)."""
    from ledgit.record import render_record

    written: dict[str, Written] = {}
    if not items:
        return written, _Flush(False)
    staging, staged_history, staged_tasks = _make_staging(board)
    try:
        histories: list[tuple[str, bytes]] = []
        revisions: list[str] = []
        for item in items:
            data, revision = _history(item, actor, source)
            histories.append((f"{item.record.id}{HISTORY_SUFFIX}", data))
            revisions.append(revision)
        tasks = [(f"{item.record.id}{TASK_SUFFIX}", render_record(item.record).encode("utf-8"))
                 for item in items]
        if writer is not None and len(items) >= FORK_MIN:
            writer.send(staging, staged_history, histories)
        else:
            writer = None
            staged_history = _create_all(staging, staged_history, histories, progress, None)
        stats: list[Stat] = []
        staged_tasks = _create_all(staging, staged_tasks, tasks, progress, stats)
        if writer is not None:
            staged_history = writer.join()
            if progress is not None:
                progress.advance(len(items) / 2)
        for item, (_, data), st, revision in zip(items, tasks, stats, revisions, strict=True):
            written[item.record.id] = (item.record, data, st, revision)
        ids = [item.record.id for item in items]
        if not (_swap_in(staged_history, board.history_str)
                and _swap_in(staged_tasks, board.tasks_str)):
            _move_each(board, ids, staged_history, staged_tasks)
            for tid in ids:  # renamed one by one: their ctime changed
                entry = written[tid]
                written[tid] = (entry[0], entry[1], file_stat(os.stat(board.task_file(tid))),
                                entry[3])
    finally:
        if writer is not None and writer.busy:
            writer.close()  # failing: stop it before its directory goes
        _remove_tree(staging)
    return written, _Flush(True)


#: Imports of at least this many new tasks write the histories in a HistoryWriter, which
#: is spawned for a source file of at least HELPER_MIN_BYTES (before it is loaded).
FORK_MIN, HELPER_MIN_BYTES = 1000, 512 * 1024


def _can_fork() -> bool:
    """True where :class:`HistoryWriter` may fork: Linux (where it was measured; macOS
    advises against fork without exec), and no other thread running (a fork copies only
    the calling thread; locks another one holds would stay held)."""
    if not hasattr(os, "fork") or not sys.platform.startswith("linux"):
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


class HistoryWriter:
    """A helper process that creates the histories of a bulk import (:func:`_create_all`)
    while this one creates the task files: file creation is mostly kernel time, which two
    processes spend on two CPUs (a thread would be serialised by the GIL for its share).

    It is forked by :meth:`spawn` before the source is loaded, while the process is small:
    a fork write-protects every page of the parent, and each page the parent writes after
    it costs a fault (~10,000 of them, ~20 ms, when forked with the records loaded). It
    waits on a pipe for one request (:meth:`send`: the directories, the names, the bytes
    as one buffer), creates the files, and answers through another pipe (marshal) with the
    directory that holds them or the error (:meth:`join`). It never returns into the
    caller's code (``os._exit``); it exits when the request pipe closes (:meth:`close`).
    Whatever it leaves is in the staging directory, removed by the caller."""

    def __init__(self, pid: int, request: int, reply: int) -> None:
        self.pid, self.request, self.reply = pid, request, reply
        self.busy = False  # a request was sent and its answer not read
        self.closed = False

    @classmethod
    def spawn(cls) -> HistoryWriter | None:
        """Fork a writer; None where :func:`_can_fork` says no."""
        if not _can_fork():
            return None
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        _grow_pipe(req_w)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child (its coverage is not collected)
            code = 1
            try:
                os.close(req_w)
                os.close(rep_r)
                code = _serve(req_r, rep_w)
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(rep_w)
        return cls(pid, req_w, rep_r)

    def send(self, staging: str, directory: str,
             files: Sequence[tuple[str, bytes]]) -> None:
        """Ask the writer to create ``files`` ((name, bytes) pairs) in ``directory``."""
        import marshal
        from itertools import accumulate

        ends = list(accumulate(len(data) for _, data in files))
        header = marshal.dumps((staging, directory, [name for name, _ in files], ends))
        self.busy = True
        try:
            write_all(self.request, len(header).to_bytes(8, "little") + header)
            for n in range(0, len(files), 512):  # gathered writes: no copy into one buffer
                chunk = [data for _, data in files[n:n + 512]]
                done = os.writev(self.request, chunk)
                if done != sum(len(data) for data in chunk):
                    write_all(self.request, b"".join(chunk)[done:])
        except BrokenPipeError:  # it stopped reading: its answer says why
            self.join()
            raise LedgitError("import: the history writer stopped", 1) from None

    def join(self) -> str:
        """Wait for the answer: the directory that holds the files. Raises the writer's
        OSError again, or LedgitError (exit 1) for anything else."""
        import marshal

        chunks = []
        while chunk := os.read(self.reply, 1 << 16):
            chunks.append(chunk)
        self.busy = False
        try:
            kind, what = marshal.loads(b"".join(chunks))
        except (EOFError, ValueError, TypeError):
            raise LedgitError("import: the history writer failed", 1) from None
        if kind == 1:
            raise OSError(*what)
        if kind != 0:
            raise LedgitError(f"import: writing the histories failed: {what}", 1)
        return str(what)

    def close(self) -> None:
        """End the writer: it exits when its request pipe closes (killed when it is still
        working on a request: the caller is failing). Reaps it."""
        if self.closed:
            return
        self.closed = True
        os.close(self.request)
        if self.busy:
            import signal
            from contextlib import suppress

            with suppress(OSError):  # gone already
                os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.reply)


def _serve(request: int, reply: int) -> int:  # pragma: no cover - runs in the child
    """The writer's side of :class:`HistoryWriter`: one request, one answer. Returns the
    exit code."""
    import marshal

    head = _read_exact(request, 8)
    if head is None:
        return 0  # closed without a request
    try:
        body = _read_exact(request, int.from_bytes(head, "little"))
        staging, directory, names, ends = marshal.loads(body or b"")
        view = memoryview(bytearray(ends[-1] if ends else 0))
        done = 0
        while done < len(view):  # straight into one buffer
            got = os.readv(request, [view[done:]])
            if not got:
                raise EOFError("the request was cut short")
            done += got
        starts = [0, *ends[:-1]]
        files = [(name, view[a:b]) for name, a, b in zip(names, starts, ends, strict=True)]
        answer: tuple[int, Any] = (0, _create_all(staging, directory, files, None, None))
    except OSError as exc:
        answer = (1, [exc.errno, exc.strerror, exc.filename])
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        answer = (2, f"{type(exc).__name__}: {exc}")
    write_all(reply, marshal.dumps(answer))
    return 0 if answer[0] == 0 else 1


def _read_exact(fd: int, n: int) -> bytes | None:
    """``n`` bytes from ``fd``; None at end of file before the first byte. Raises EOFError
    when the file ends in the middle."""
    chunks: list[bytes] = []
    left = n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            if left == n:
                return None
            raise EOFError("the request was cut short")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _grow_pipe(fd: int) -> None:
    """Make a pipe's buffer 1 MiB where Linux allows (fewer round trips; best effort)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is not None:
        from contextlib import suppress

        with suppress(OSError):
            fcntl.fcntl(fd, setpipe, 1 << 20)


#: Files are created in chunks of CHUNK; a chunk that took more than SLOW_CREATE seconds of
#: CPU time a file (the kernel's, mostly; ~20 us is usual) moves the work to a new staged
#: directory, at most MOVES times per directory (see _create_all).
CHUNK, SLOW_CREATE, MOVES = 64, 40e-6, 4


def _create_all(staging: str, directory: str,
                files: Sequence[tuple[str, bytes | memoryview]],
                progress: Progress | None, stats: list[Stat] | None) -> str:
    """Create ``files`` ((name, bytes) pairs) in ``directory`` (:func:`_create`), appending
    each one's stat to ``stats`` when given; each counts as half a task on ``progress``.
    Returns the directory that holds them all.

    When a chunk of :data:`CHUNK` files costs more than :data:`SLOW_CREATE` of CPU time a
    file, the files created so far are renamed into a new directory (:func:`_staged_dir`,
    which the file system places elsewhere) and the rest are created there; the old one
    stays, empty, until the staging directory is removed. Why: ext4 without a journal skips
    every inode freed in the last minutes when it allocates one, scanning them all from the
    start of the block group on each file it creates (docs/interop.md, "Speed"): in a group
    emptied by a recent mass deletion a creation costs 250-700 us instead of 20, from the
    first file or only once the group's other free inodes are used up. A rename allocates
    no inode."""
    moves = 0
    want = stats is not None
    prefix = f"{directory}{os.sep}"
    started = time.process_time()
    for i, (name, data) in enumerate(files, 1):
        st = _create(prefix + name, data, want)
        if stats is not None and st is not None:
            stats.append(st)
        if progress is not None:
            progress.advance(0.5)
        if not i % CHUNK:
            now = time.process_time()
            if now - started > CHUNK * SLOW_CREATE and moves < MOVES:
                moves += 1
                directory = _move_files(staging, directory, [n for n, _ in files[:i]])
                prefix = f"{directory}{os.sep}"
                if stats is not None:  # a rename changes the ctime
                    stats[:] = [file_stat(os.stat(prefix + n)) for n, _ in files[:i]]
                now = time.process_time()
            started = now
    return directory


def _move_files(staging: str, directory: str, names: Sequence[str]) -> str:
    """A new staged directory beside ``directory`` (same base name) holding ``names``,
    renamed from ``directory``."""
    new = _staged_dir(staging, os.path.basename(directory).rsplit("-", 1)[0])
    src, dst = f"{directory}{os.sep}", f"{new}{os.sep}"
    for name in names:
        os.rename(src + name, dst + name)
    return new


def _create(path: str, data: bytes | memoryview, want_stat: bool = False) -> Stat | None:
    """Create ``path`` (it must not exist: never through a link) holding ``data``. With
    ``want_stat``: its stat as the index keeps it (``index.file_stat``) once written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o666)
    try:
        done = os.write(fd, data)
        if done != len(data):  # os.write may write less than asked
            write_all(fd, bytes(data[done:]))
        return file_stat(os.fstat(fd)) if want_stat else None
    finally:
        os.close(fd)


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def _make_staging(board: Board) -> tuple[str, str, str]:
    """A new, empty ``.ledgit/.import-<pid>-<rand>/`` holding empty ``history-<rand>/`` and
    ``tasks-<rand>/`` (inside ``.ledgit`` so that they are on the same file system and get
    the same group and mode as the directories they replace; random names because the
    file system places a directory under a :func:`_spread_hint` parent by a hash of its
    name, and two imports in a row should not pick the same place). Returns the three."""
    os.makedirs(board.dir_str, exist_ok=True)
    staging = os.path.join(board.dir_str,
                           f"{STAGING_PREFIX}{os.getpid()}-{os.urandom(4).hex()}")
    os.mkdir(staging)
    _spread_hint(staging)
    return staging, _staged_dir(staging, HISTORY_DIR), _staged_dir(staging, TASKS_DIR)


def _staged_dir(staging: str, base: str) -> str:
    """A new, empty ``<staging>/<base>-<rand>/``."""
    path = os.path.join(staging, f"{base}-{os.urandom(4).hex()}")
    os.mkdir(path)
    return path


#: Linux ``FS_IOC_GETFLAGS`` / ``FS_IOC_SETFLAGS`` and ``FS_TOPDIR_FL`` (``chattr +T``).
_GETFLAGS, _SETFLAGS, _TOPDIR_FL = 0x80086601, 0x40086602, 0x00020000


def _spread_hint(directory: str) -> None:
    """Mark ``directory`` as the top of a hierarchy (``chattr +T``; ext2/3/4, best effort,
    Linux only) so that the file system places its subdirectories -- the staged
    ``history/`` and ``tasks/``, and so the inodes of every file created in them -- in a
    block group with room to spare (the Orlov allocator's spreading), not next to
    ``.ledgit``. Why: ext4 without a journal avoids reusing an inode freed in the last
    minute(s) and scans past each of them on every file it creates in that group; after a
    mass deletion near the repository (``rm -rf`` of a build tree, of a previous checkout,
    or a neighbour's test run) creating the 11,444 files of a 5,722-task import cost
    250 us a file instead of 20 (measured: docs/interop.md, "Speed"). The flag stays on the
    staging directory only, which is removed at the end; the moved directories do not
    inherit it."""
    if not sys.platform.startswith("linux"):
        return
    import fcntl
    import struct

    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        buf = bytearray(4)
        fcntl.ioctl(fd, _GETFLAGS, buf, True)
        flags = struct.unpack("i", buf)[0]
        if not flags & _TOPDIR_FL:
            fcntl.ioctl(fd, _SETFLAGS, struct.pack("i", flags | _TOPDIR_FL))
    except OSError:
        pass  # not ext2/3/4 (tmpfs, btrfs, xfs, NFS ...): no such hint, nothing lost
    finally:
        os.close(fd)


def _swap_in(staged: str, target: str) -> bool:
    """Rename the directory ``staged`` over ``target`` when ``target`` is missing or an empty
    directory of ours (rename(2) replaces an empty directory atomically); ``staged`` takes
    ``target``'s permission bits and group. False when it cannot: ``target`` holds a file
    (``ENOTEMPTY``), is not a plain directory, belongs to another user, or the platform
    does not replace directories."""
    import stat

    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    except OSError:
        return False
    try:
        if st is not None:
            getuid: Callable[[], int] | None = getattr(os, "getuid", None)
            if not stat.S_ISDIR(st.st_mode) or (getuid is not None and st.st_uid != getuid()):
                return False
            mine = os.lstat(staged)
            if mine.st_gid != st.st_gid:
                os.chown(staged, -1, st.st_gid)
            if stat.S_IMODE(mine.st_mode) != stat.S_IMODE(st.st_mode):
                os.chmod(staged, stat.S_IMODE(st.st_mode))
        os.replace(staged, target)
    except OSError:
        return False
    return True


def _move_each(board: Board, ids: Sequence[str], staged_history: str,
               staged_tasks: str) -> None:
    """Move the staged files into the board one by one: every history, then every task file
    (the write-ahead order of DESIGN §6 per batch). A history already moved by
    :func:`_swap_in` is no longer staged and is left alone. Refuses (LedgitError, exit 2)
    to replace a symbolic link."""
    from ledgit.taskfiles import file_mode, refuse_link

    for src_dir, dst_dir, suffix in ((staged_history, board.history_str, HISTORY_SUFFIX),
                                     (staged_tasks, board.tasks_str, TASK_SUFFIX)):
        if not os.path.isdir(src_dir):
            continue  # swapped in whole
        os.makedirs(dst_dir, exist_ok=True)
        for tid in ids:
            dst = os.path.join(dst_dir, f"{tid}{suffix}")
            refuse_link(board, dst)
            src = os.path.join(src_dir, f"{tid}{suffix}")
            mode = file_mode(dst)  # an updated task keeps its file's mode (issue 13)
            if mode is not None:
                os.chmod(src, mode)
            os.replace(src, dst)


def _remove_tree(path: str) -> None:
    """Remove a staging directory and whatever is left in it (nothing after a success)."""
    import shutil

    shutil.rmtree(path, ignore_errors=True)


STALE_AFTER = 600.0  # seconds: a staging directory this old whose process is gone is removed


def _remove_stale_staging(board: Board) -> None:
    """Remove the staging directories of imports that died: what a crash in the middle of
    :func:`_write_new` leaves. One is stale when its process is gone (POSIX: asked with
    signal 0) and it was last changed more than :data:`STALE_AFTER` ago -- a process of
    another PID namespace (a container sharing the repository) looks gone from here, and
    its import takes seconds, not minutes."""
    if os.name != "posix":
        return
    try:
        names = os.listdir(board.dir_str)
    except OSError:
        return
    now = time.time()
    for name in names:
        if not name.startswith(STAGING_PREFIX):
            continue
        pid = name[len(STAGING_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        path = os.path.join(board.dir_str, name)
        try:
            if now - os.lstat(path).st_mtime < STALE_AFTER:
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            _remove_tree(path)
        except OSError:
            continue  # alive (another user's), or cannot tell


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

    :func:`ledgit.merge.merge_records` merges field by field; wherever it would settle a
    difference by its rules (:func:`ledgit.ops.clashes`), and for overlapping body edits,
    the board's value stays: nothing local is overwritten. When the board's values do not
    fit the merged record's lifecycle, the board's record stays whole."""
    from ledgit.merge import merge_records
    from ledgit.ops import clashes
    from ledgit.record import lifecycle_problems, make_record

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


def _update(board: Board, item: Incoming, actor: str, source: str) -> Reimport:
    """Re-import one existing task as a 3-way merge (docs/interop.md, "Re-import"), under
    its lock, in write-ahead order: base = the record as last imported (the state of
    :func:`last_import`), ours = the board, theirs = the source. Source unchanged since the
    last import: nothing written, whatever the board changed. Board unchanged since: one
    ``import`` event. Both changed: an ``import`` event on the last import (the source's
    side) and a ``merge`` event joining it to the board's head, whose state is
    :func:`merge_import`'s. Raises LedgitError (exit 1) for a history that does not verify,
    has more than one head, or is behind the task file (a hand edit not yet recorded)."""
    from ledgit.history import (
        MERGE_OP,
        HistoryError,
        event_line,
        heads,
        new_event,
        parse_checked,
        replay,
    )
    from ledgit.record import record_from_state, render_record
    from ledgit.taskfiles import refuse_link
    from ledgit.writepath import damaged_history

    tid = item.record.id
    theirs = item.record
    with board.lock(tid):
        current = board.read(tid)
        try:
            with open(board.history_file(tid), "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            raw = b""
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


def _sync() -> None:
    """Flush every written file to disk in one call (the bulk replacement for per-file
    fsync); a no-op where the platform has none."""
    sync: Callable[[], None] | None = getattr(os, "sync", None)
    if sync is not None:
        sync()


def _stems(path: Any, suffix: str) -> set[str]:
    try:
        names = os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return set()
    n = len(suffix)
    return {name[:-n] for name in names if name.endswith(suffix) and not name.startswith(".")}


def read_front_matter(path: Path, *, closing_at_end: bool = False
                      ) -> tuple[dict[str, Any], str]:
    """(YAML front matter without implicit typing, every scalar a string; the text after it)
    of a Markdown file that opens with ``---``. ``closing_at_end``: the closing ``---`` may
    also be the file's last line without a newline. Raises LedgitError (USAGE) otherwise."""
    import yaml

    text = path.read_text(encoding="utf-8").replace("\r\n", "\n")
    search = text[3:] + "\n" if closing_at_end else text[3:]
    if not text.startswith("---\n") or "\n---\n" not in search:
        raise LedgitError(located("no YAML front matter", str(path), 1), USAGE)
    end = search.index("\n---\n") + 3
    try:
        front = yaml.load(text[4:end + 1], Loader=yaml.BaseLoader)  # noqa: S506 - strings only
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else None  # the front matter opens line 2
        raise LedgitError(located(f"invalid YAML: {str(exc).splitlines()[0]}", str(path),
                                  line), USAGE) from None
    if not isinstance(front, dict):
        raise LedgitError(located("front matter is not a mapping", str(path), 2), USAGE)
    return front, text[end + 5:]


def file_skip(rel: str, path: Path, exc: Exception) -> Skip:
    """The Skip of a source file an importer refused, at ``rel:LINE`` when the line is known
    (issue 13): the line the error names, else the line of the front-matter field it names
    (``field: message``), else the line of an undecodable byte."""
    if isinstance(exc, UnicodeDecodeError):
        line = exc.object[:exc.start].count(b"\n") + 1 if isinstance(exc.object, bytes) else 1
        return Skip(f"{rel}:{line}", f"not valid UTF-8 (byte {exc.start + 1})")
    if not isinstance(exc, LedgitError):
        return Skip(rel, f"unreadable: {exc}")
    message = exc.message.removeprefix(f"{rel}: ").removeprefix(f"{path}: ")
    for head in (f"{rel}:", f"{path}:"):
        if exc.message.startswith(head):
            number, _, rest = exc.message[len(head):].partition(": ")
            if number.isdigit():
                return Skip(f"{rel}:{number}", rest)
    field = message.partition(": ")[0]
    if field and field != message and " " not in field:
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        key = field.encode("utf-8", errors="replace") + b":"
        lines = data.replace(b"\r\n", b"\n").split(b"\n")
        for n, raw in enumerate(lines, start=1):
            if n > 1 and raw == b"---":
                break  # the end of the front matter: the field is missing
            if raw.startswith(key):
                return Skip(f"{rel}:{n}", message)
        if lines and lines[0] == b"---":
            return Skip(f"{rel}:1", message)  # a missing field: the front matter's start
    return Skip(rel, message)


def read_jsonl(path: str, parse: Callable[[Any, str], Record],
               source_id: Callable[[Any], str]) -> tuple[list[Incoming], list[Skip]]:
    """Read a JSON-lines file: one Incoming per good line, one Skip (with its line number)
    per blank-free line that is not JSON or that ``parse`` refuses."""
    incoming: list[Incoming] = []
    skips: list[Skip] = []
    name = os.path.basename(path)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed by the with below; open errors first
    except OSError as exc:
        raise LedgitError(f"{path}: cannot read: {exc.strerror}", USAGE) from None
    with fh:
        for n, raw in enumerate(fh, start=1):
            where = f"{name}:{n}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                skips.append(Skip(where, f"not valid UTF-8 (byte {exc.start + 1})"))
                continue
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError) as exc:  # RecursionError: too deep
                skips.append(Skip(where, f"not JSON: {exc}"))
                continue
            try:
                record = parse(obj, where)
            except LedgitError as exc:
                skips.append(Skip(where, _strip_where(exc.message, where)))
                continue
            incoming.append(Incoming(record, where, source_id(obj)))
    return incoming, skips


def _strip_where(message: str, where: str) -> str:
    return message[len(where) + 2:] if message.startswith(where + ": ") else message


def print_summary(summary: Summary, out: IO[str], err: IO[str]) -> None:
    """The summary line on ``out``; conflicts and skipped entries on ``err``, at most
    MAX_LISTED of each."""
    for conflict in summary.conflicts[:MAX_LISTED]:
        err.write(f"ledgit: conflict: {conflict}\n")
    if len(summary.conflicts) > MAX_LISTED:
        err.write(f"ledgit: ... and {len(summary.conflicts) - MAX_LISTED} more conflicts "
                  f"(see: --json)\n")
    for skip in summary.skipped[:MAX_LISTED]:
        err.write(f"ledgit: skipped {skip}\n")
    if len(summary.skipped) > MAX_LISTED:
        err.write(f"ledgit: ... and {len(summary.skipped) - MAX_LISTED} more skipped "
                  f"(see: --json)\n")
    out.write(summary.line() + "\n")


def source_meta(record: Record, source: str) -> Mapping[str, Any]:
    """The record's ``x.<source>`` map (empty when absent)."""
    value = record.fields.get("x", {}).get(source, {})
    return value if isinstance(value, Mapping) else {}
