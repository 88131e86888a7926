"""The bulk import loop shared by every importer: plan, refuse or write, summarise.

An importer turns its source into :class:`Incoming` records (plus :class:`Skip` lines for what
it could not read) and hands them to :func:`import_records`, which

1. plans: each record is new, changed (an update event) or unchanged, or skipped with a
   reason (duplicate id, an existing task that did not come from this source, a task whose
   file and history disagree); with ``strict`` any skip refuses the whole import before a
   byte is written (LedgitError exit 2 listing them with their lines);
2. writes new tasks in bulk: every history (genesis event, or the source's own events carried
   over as a chain) first, one ``os.sync()``, then every task file (temp file + rename), one
   more ``os.sync()``: the write-ahead order of DESIGN §6 per batch instead of per task, so a
   5,000-task import costs two flushes, not 10,000 fsyncs. Changed tasks go through the task
   lock and get one ``import`` event each;
3. rebuilds the index once (``Index.rebuild_from``, without re-parsing what it wrote).

Deterministic: a task file's bytes depend only on its source record; a genesis event's time is
the record's ``last_modified``. Re-importing the same source writes nothing.
A crash in the middle leaves histories without task files (``ledgit doctor --repair`` writes
them) or nothing at all; importing again completes the job.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from ledgit.board import replace_task_file, write_all
from ledgit.errors import USAGE, LedgitError, located

if TYPE_CHECKING:
    from pathlib import Path

    from ledgit.board import Board
    from ledgit.history import Event
    from ledgit.record import Record

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


@dataclass
class Summary:
    """What an import did. ``line()`` is the summary line of the CLI."""

    source: str
    imported: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: list[Skip] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        reasons = Counter(_reason_kind(s.reason) for s in self.skipped)
        why = "; ".join(f"{n} {k}" for k, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
        return (f"import {self.source}: imported {self.imported}, updated {self.updated}, "
                f"unchanged {self.unchanged}, skipped {len(self.skipped)}"
                + (f" ({why})" if why else ""))

    def as_json(self) -> dict[str, Any]:
        return {"source": self.source, "imported": self.imported, "updated": self.updated,
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
        now = time.monotonic()
        if self.enabled and (now - self._last >= 0.1 or self.done >= self.total):
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
                source: str) -> _Plan:
    """Classify every incoming record against the board (reads only)."""
    from ledgit.record import render_record

    new: list[Incoming] = []
    changed: list[tuple[Incoming, Record]] = []
    unchanged: list[Incoming] = []
    skipped = list(skips)
    first: dict[str, str] = {}
    existing = set(board.list_ids())
    histories = _stems(board.history_dir, ".jsonl")
    for item in incoming:
        tid = item.record.id
        if tid in first:
            skipped.append(Skip(item.where, f"duplicate id {tid} (first at {first[tid]})"))
            continue
        first[tid] = item.where
        if tid not in existing:
            if tid in histories and not _interrupted_import(board, tid, source, False):
                skipped.append(Skip(item.where, f"history without task file: {tid} "
                                                f"(run: ledgit doctor --repair)"))
            else:
                new.append(item)
            continue
        if _size(board.history_path(tid)) <= 0:
            # The history never made it to disk (a crash mid-import): write both again.
            current = _read_or_none(board, tid)
            if current is None or source in current.fields.get("x", {}):
                new.append(item)
            else:
                skipped.append(Skip(item.where, f"id taken: {tid} exists and was not "
                                                f"imported from {source}"))
            continue
        try:
            data = board.task_path(tid).read_bytes()
        except OSError:
            data = b""
        if data == render_record(item.record).encode("utf-8"):
            unchanged.append(item)  # the bytes we would write: no parse needed
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
                   rebuild_index: bool = True) -> Summary:
    """Import records into ``board`` (see the module doc). Returns the summary.

    Raises LedgitError exit 2 under ``strict`` when anything would be skipped (nothing is
    written), exit 1 when a changed task's history cannot take an event.
    """
    started = time.perf_counter()
    plan = plan_import(board, incoming, skips, source)
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
    written = _write_new(board, plan.new, actor, source, progress)
    summary.imported = len(plan.new)
    for item, _current in plan.changed:
        try:
            written[item.record.id] = (item.record, _update(board, item, actor, source))
            summary.updated += 1
        except LedgitError as exc:
            summary.skipped.append(Skip(item.where, f"not updated: {exc}"))
        if progress is not None:
            progress.advance()
    if progress is not None:
        progress.close()
    if rebuild_index and (plan.new or plan.changed):
        from ledgit.index import Index

        # Files whose bytes are still those just written are indexed without re-parsing.
        Index.rebuild_from(board, written)
    summary.ids = [i.record.id for i in plan.new] + [i.record.id for i, _ in plan.changed]
    summary.seconds = time.perf_counter() - started
    return summary


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
    # record.canonical_json without its float walk: a Record's state never holds a float
    # (make_record refuses them) and neither do the notes and meta built here.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def _genesis(record: Record, at: str, actor: str, note: str | None,
             meta: Mapping[str, Any] | None) -> Event:
    """A genesis ``create`` event for ``record`` (what history.new_event builds, with the
    patch written directly: adding the two members of the state to ``{}``)."""
    event: Event = {
        "parents": [],
        "at": at,
        "actor": actor,
        "op": "create",
        "patch": [{"op": "add", "path": "/body", "value": record.body},
                  {"op": "add", "path": "/fields", "value": record.fields}],
        "before": None,
        "after": hashlib.sha256(_canonical(record.state())).hexdigest(),
    }
    if note:
        event["note"] = note
    if meta:
        event["meta"] = dict(meta)
    event["id"] = hashlib.sha256(_canonical(event)).hexdigest()
    return event


def _write_new(board: Board, items: Sequence[Incoming], actor: str, source: str,
               progress: Progress | None) -> dict[str, tuple[Record, bytes]]:
    """Every history first, then every task file (temp file + rename), then one flush.
    Returns id -> (record, the task file's bytes)."""
    from ledgit.record import render_record

    written: dict[str, tuple[Record, bytes]] = {}
    if not items:
        return written
    board.history_dir.mkdir(parents=True, exist_ok=True)
    board.tasks_dir.mkdir(parents=True, exist_ok=True)
    for item in items:
        data = "".join(_canonical(e).decode("utf-8") + "\n"
                       for e in genesis_events(item, actor, source))
        path = board.history_path(item.record.id)
        # O_TRUNC: the planner only lets through a history that is missing, empty, or the
        # lone genesis of an interrupted import of this same source.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            write_all(fd, data.encode("utf-8"))
        finally:
            os.close(fd)
        if progress is not None:
            progress.advance(0.5)  # the history; the task file is the other half
    for item in items:
        task_bytes = render_record(item.record).encode("utf-8")
        _replace(board, item.record.id, task_bytes)
        written[item.record.id] = (item.record, task_bytes)
        if progress is not None:
            progress.advance(0.5)
    _sync()
    return written


def _update(board: Board, item: Incoming, actor: str, source: str) -> bytes:
    """One ``import`` event on an existing task, under its lock, in write-ahead order.
    Returns the task file's new bytes."""
    from ledgit.history import HistoryError, event_line, heads, new_event, parse_events
    from ledgit.record import render_record

    tid = item.record.id
    with board.lock(tid):
        current = board.read(tid)
        text = board.read_history_text(tid)
        try:
            events = parse_events(text or "", tid)
        except HistoryError as exc:
            raise LedgitError(f"history damaged: {exc} (see: ledgit verify {tid})", 1) from None
        hs = heads(events)
        head = next((e for e in events if e["id"] in hs), None)
        if len(hs) != 1 or head is None or head["after"] != current.revision:
            raise LedgitError(f"{tid}: the task file differs from its history head or the "
                              f"history has {len(hs)} heads (run: ledgit record {tid} or "
                              f"ledgit resolve)", 1)
        data = render_record(item.record).encode("utf-8")
        if current == item.record:
            return data
        at = max(item.record.fields["last_modified"], head["at"])
        event = new_event(parents=hs, at=at, actor=actor, op=IMPORT_OP,
                          before_state=current.state(), after_state=item.record.state(),
                          note=f"re-imported from {source} {item.source_id}",
                          meta={"source": source, "source_id": item.source_id})
        path = board.history_path(tid)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        try:
            write_all(fd, event_line(event).encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        _replace(board, tid, data, fsync=True)
        return data


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
        raise LedgitError(located(f"invalid YAML: {str(exc).splitlines()[0]}", str(path)),
                          USAGE) from None
    if not isinstance(front, dict):
        raise LedgitError(located("front matter is not a mapping", str(path), 2), USAGE)
    return front, text[end + 5:]


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
            except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply
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
    """The summary line on ``out``; skipped entries on ``err``, at most MAX_LISTED."""
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
