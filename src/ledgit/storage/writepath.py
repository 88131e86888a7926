"""The write path of a board (DESIGN §6): every write of a task, ordered like a write-ahead log.

Under the task's lock (:mod:`ledgit.storage.tasklock`) and Git's ``index.lock`` of the work tree
(:mod:`ledgit.storage.worktreeguard`: never while Git rewrites the work tree): read the file
(the truth, never the index), check ``--expect``, append the event(s) and fsync, replace the
task file atomically (:func:`ledgit.storage.taskfiles.replace_task_file`), fsync the directory,
then refresh the index row (best effort). A crash between the append and the rename leaves the
history one event ahead of the file; the next write to that task, or
:meth:`ledgit.storage.board.Board.repair`, rolls it forward. No acknowledged write is lost. The
functions here are what :class:`Board`'s ``create``, ``mutate`` and ``record_edit`` run; a read
never imports this module.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from ledgit.core.errors import CHECK_FAILED, NOT_FOUND, STALE, USAGE, LedgitError, located
from ledgit.core.history import HistoryError, Problem, event_line, heads, new_event, replay
from ledgit.core.historycheck import parse_checked
from ledgit.core.layoutloss import layout_loss, loses_information
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.markers import line_merge_refusal
from ledgit.core.readout import now_timestamp
from ledgit.core.record import make_record, record_from_state, size_problem
from ledgit.core.render import render_record
from ledgit.core.schema import case_twin_message, case_twins
from ledgit.core.timestamps import format_timestamp, normalize_timestamp, parse_timestamp
from ledgit.git import objects, repository
from ledgit.storage.actor import checked_actor
from ledgit.storage.board import DEFAULT_LOCK_TIMEOUT, refuse_link
from ledgit.storage.index import Index
from ledgit.storage.oserrors import os_refusal
from ledgit.storage.ownership import adopt_fd, make_dirs
from ledgit.storage.safefiles import BOARD_FILE_LIMIT, NONBLOCK, read_board_file
from ledgit.storage.taskfiles import NOFOLLOW, checked_id, fsync_dir, replace_task_file, write_all
from ledgit.storage.worktreeguard import worktree_quiet

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from ledgit.core.change import Change
    from ledgit.core.history import Event
    from ledgit.core.record import Record
    from ledgit.storage.board import Board

ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"  # RFC 4648 base32, lower case
ID_RANDOM_CHARS = 10  # 50 random bits (DESIGN §2)


def create_task(board: Board, fields: Mapping[str, Any], body: str, actor: str, *,
                note: str | None = None, task_id: str | None = None,
                at: str | None = None) -> Record:
    """Create a task: a genesis ``create`` event, then the file (DESIGN §6 order).

    ``fields``: typed front matter without ``id`` (``status`` defaults to ``open``);
    ``created``/``last_modified`` default to ``at`` (RFC 3339) or now. The new id is
    ``<prefix>-<10 random base32 chars>`` unless ``task_id`` is given. Raises LedgitError
    exit 2 for invalid fields, a lifecycle violation, or an id that already exists.
    """
    actor = checked_actor(actor)
    try:
        stamp = normalize_timestamp(at) if at else now_timestamp()
    except ValueError as exc:
        raise LedgitError(f"--at: {exc}", USAGE) from None
    tid = checked_id(task_id) if task_id is not None else None
    if tid is None:
        tid = _new_id(board)
    data = dict(fields)
    data["id"] = tid
    data.setdefault("status", "open")
    data["created"] = data.get("created") or stamp
    data["last_modified"] = data.get("last_modified") or stamp
    path, hpath = board.task_file(tid), board.history_file(tid)
    record = make_record(data, body, board.rel(path))
    _refuse_lifecycle(lifecycle_problems(record.fields), [], board.rel(path))
    lock = board.lock(tid)
    with lock, worktree_quiet(board.root_str, lock.timeout):
        refuse_link(board, path)
        refuse_link(board, hpath)
        refuse_case_twin(board, tid)
        if os.path.lexists(path):
            raise LedgitError(f"task {tid} already exists ({board.rel(path)})", USAGE)
        if os.path.lexists(hpath):
            raise LedgitError(f"{board.rel(hpath)} already exists without "
                              f"a task file (run: ledgit doctor --repair)", USAGE)
        event = new_event(parents=[], at=record.fields["last_modified"], actor=actor,
                          op="create", before_state={}, after_state=record.state(),
                          note=note)
        _commit(board, tid, [event], record)
    return record


def mutate_task(board: Board, task_id: str, change: Callable[[Record], Change], actor: str,
                *, expect: str | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
                check_lifecycle: bool = True) -> Record:
    """Apply ``change`` to one task through the write-ahead path (DESIGN §6).

    Under the task's lock: read the file; roll an interrupted write forward; check
    ``expect`` (a full revision or a prefix of >= 12 hex digits, else exit 2; stale →
    exit 3 naming the current revision); call ``change(current)``; set ``last_modified``
    to now (strictly later than before); validate (exit 2; new lifecycle violations are
    refused unless ``check_lifecycle=False``). A result equal to the current record writes
    nothing. Otherwise a hand edit of the file is first recorded as an ``edit`` event by
    ``actor`` (one ``ledgit: note:`` line on stderr says so), then the requested event is
    appended, the file replaced and the index row refreshed. Returns the record now on
    disk.

    Raises LedgitError: no such task (4), lock timeout (5), damaged history or more than
    one head (1: run ``ledgit verify`` / ``ledgit resolve``).
    """
    actor = checked_actor(actor)
    if not board.exists(task_id):
        raise LedgitError(f"no task {task_id}", NOT_FOUND)
    rel = board.rel(board.task_file(task_id))
    with board.lock(task_id, lock_timeout), worktree_quiet(board.root_str, lock_timeout):
        now = now_timestamp()
        current, pending, parents = settle(board, task_id, actor, now)
        if expect is not None:
            check_expect(task_id, current.revision, expect)
        result = change(current)
        if not isinstance(result, tuple) or len(result) < 2:
            raise TypeError("a mutation callback must return a Change")
        proposed = result[0]
        op, note = str(result[1]), result[2] if len(result) > 2 else None
        meta = result[3] if len(result) > 3 else None
        if not op:
            raise LedgitError("a change needs an op", USAGE)
        fields = dict(proposed.fields)
        if fields.get("id") != task_id:
            raise LedgitError(located("a change cannot alter the task id", rel, None, "id"),
                              USAGE)
        fields["last_modified"] = current.fields["last_modified"]
        unchanged = make_record(fields, proposed.body, rel)
        if unchanged == current:
            return current
        # Stamped after the change ran: never earlier than a time it wrote (a note's, a
        # claim's), so last_modified is the latest time in the record.
        fields["last_modified"] = _later(current.fields["last_modified"], now_timestamp())
        new = make_record(fields, proposed.body, rel)
        if check_lifecycle:
            _refuse_lifecycle(lifecycle_problems(new.fields),
                              lifecycle_problems(current.fields), rel)
        # What a person wrote that the canonical writer drops is never lost silently
        # (issue 12): a YAML comment refuses the write; quoting or layout is said.
        loss = task_layout_loss(board, task_id, current)
        if loss is not None and loss[1].startswith("a YAML comment"):
            raise LedgitError(located(
                f"{loss[1]} would be dropped by this {op}: ledgit writes the canonical "
                f"form (move the text into the body, or accept the canonical form first: "
                f"ledgit record {task_id} --normalize); nothing written", rel, loss[0]),
                USAGE)
        event = new_event(parents=parents, at=new.fields["last_modified"], actor=actor,
                          op=op, before_state=current.state(), after_state=new.state(),
                          note=note, meta=meta)
        _commit(board, task_id, [*pending, event], new)
        if loss is not None:
            sys.stderr.write(f"ledgit: note: {task_id}: rewrote {rel} in the canonical "
                             f"form (line {loss[0]}: {loss[1]})\n")
        for first in pending:
            # Not silent (docs/history.md): the file held an unrecorded hand edit, or a
            # version of it checked out alone, and this write kept it as an event.
            what = ("a hand edit of" if first["op"] == "edit"
                    else "the existing, history-less")
            sys.stderr.write(f"ledgit: note: {task_id}: recorded {what} {rel} as "
                             f"{first['op']} event {first['id'][:12]} by {actor} before "
                             f"this {op}\n")
        return new


def record_edit(board: Board, task_id: str, actor: str, *, normalize: bool = False
                ) -> dict[str, Any] | None:
    """``ledgit record ID``: append an ``edit`` event when the file differs from its
    history head (a hand edit, DESIGN §6), or a genesis ``create`` event when the task has
    no history yet. Returns the appended event, or None when there was nothing to record
    (an interrupted write is rolled forward instead). The schema still applies (exit 2).

    A file whose front matter holds a YAML comment, which the canonical writer would drop
    (:func:`ledgit.core.layoutloss.loses_information`), is refused, exit 2,
    ``path:line: what``, nothing written, so it is never lost silently by a later write;
    ``normalize`` accepts the canonical form. Harmless layout (key order, quoting, flow or
    block style, empty fields, spacing: issue 26) is rewritten canonically without asking;
    the caller says so (:func:`task_layout_loss` before the call). Either way the edit is
    recorded and the file rewritten at once (same revision), visible in ``git diff``.
    """
    actor = checked_actor(actor)
    if not board.exists(task_id):
        raise LedgitError(f"no task {task_id}", NOT_FOUND)
    lock = board.lock(task_id)
    with lock, worktree_quiet(board.root_str, lock.timeout):
        current, pending, _ = settle(board, task_id, actor, now_timestamp(), stamp_edit=True)
        # A recorded edit stamped last_modified (settle): the file gets the stamp too, and
        # its layout is judged against the record as it stands on disk.
        stamped = bool(pending) and pending[-1]["op"] == "edit"
        loss = task_layout_loss(board, task_id, board.read(task_id) if stamped else current)
        problems = lifecycle_problems(current.fields) if stamped else []
        if problems:  # a hand edit that breaks a lifecycle rule is refused, as a write is
            field, message = problems[0]
            raise LedgitError(located(f"{message}; nothing recorded",
                                      board.rel(board.task_file(task_id)), None, field), USAGE)
        if loses_information(loss) and loss is not None and not normalize:
            raise LedgitError(located(
                f"{loss[1]} would not be kept: ledgit writes the canonical form (move the "
                f"text into the body, or accept the canonical form: ledgit record "
                f"{task_id} --normalize); nothing recorded",
                board.rel(board.task_file(task_id)), loss[0]), USAGE)
        if pending:
            _commit(board, task_id, pending, current if stamped else None)
        if loss is not None and not stamped:
            write_task(board, task_id, current)
        if (pending or loss is not None) and not stamped:
            refresh_index(board, [current])
        return dict(pending[-1]) if pending else None


def task_layout_loss(board: Board, task_id: str, record: Record) -> tuple[int, str] | None:
    """What rewriting the task file canonically would not keep, as ``(line, what)``
    (:func:`ledgit.core.layoutloss.layout_loss`; ``record`` is what the file parses to), or
    None (also when the file cannot be read)."""
    try:
        data = read_board_file(board.task_file(task_id), BOARD_FILE_LIMIT)
    except OSError:
        return None
    return layout_loss(data, record)


def settle(board: Board, task_id: str, actor: str, now: str, *,
           record_hand_edit: bool = True, stamp_edit: bool = False
           ) -> tuple[Record, list[Event], list[str]]:
    """Bring file and history into agreement before a write (caller holds the lock).

    Returns (current record, events to append first, parents for the next event):
    no history → a genesis event; history head one write ahead of the file (crash
    between append and rename) → the file is rewritten from the head; the file differs
    from the head otherwise (a hand edit) → an ``edit`` event. With ``stamp_edit`` (``ledgit
    record``: the edit is the write) the returned record and the edit event carry
    ``last_modified`` stamped to now, as every mutation does (docs/format.md); the caller
    writes that record. Raises LedgitError exit 1
    for a history that does not parse or replay, or that has more than one head.
    """
    refuse_link(board, board.task_file(task_id))
    current = board.read(task_id)
    data, _ = read_history_healed(board, task_id)
    if data is None or not data.strip():
        refuse_lost_history(board, task_id)
        refuse_case_twin(board, task_id)  # a task file added by hand enters the board here
        genesis = new_event(parents=[], at=now, actor=actor, op="create", before_state={},
                            after_state=current.state(),
                            note="history started from the existing task file")
        return current, [genesis], [genesis["id"]]
    try:
        # The line rules of verify (parse, hash, ...): no event on a damaged history.
        events = parse_checked(data, task_id)
        hs = heads(events)
    except HistoryError as exc:
        raise damaged_history(board, task_id, exc.problem, data) from None
    except (KeyError, TypeError) as exc:
        raise _damaged(board, task_id, f"malformed event ({exc})") from None
    if len(hs) != 1:
        raise damaged_history(board, task_id, Problem(
            task_id, 0, "heads", f"the history has {len(hs)} heads (a line merge?)"), data)
    head = next(e for e in events if e["id"] == hs[0])
    revision = current.revision
    if head["after"] == revision:
        return current, [], hs
    try:
        state = replay(events, task_id)[hs[0]]
        head_record = record_from_state(state, board.rel(board.task_file(task_id)))
    except HistoryError as exc:
        raise damaged_history(board, task_id, exc.problem, data) from None
    except LedgitError as exc:
        raise _damaged(board, task_id, f"head state is invalid: {exc}") from None
    if head.get("before") == revision and head["parents"] and _history_newer(board, task_id):
        write_task(board, task_id, head_record)
        refresh_index(board, [head_record])
        return head_record, [], hs
    if not record_hand_edit:
        return current, [], hs
    at = now
    if stamp_edit:
        at = _later(current.fields["last_modified"], now)
        current = make_record(dict(current.fields, last_modified=at), current.body,
                              board.rel(board.task_file(task_id)))
    edit = new_event(parents=hs, at=at, actor=actor, op="edit", before_state=state,
                     after_state=current.state(), note="recorded a hand edit of the task file")
    return current, [edit], [edit["id"]]


def _history_newer(board: Board, task_id: str) -> bool:
    """The history was written no earlier than the task file: the mark of a write that
    appended its event but did not replace the file (a hand revert of the file is newer)."""
    try:
        return (os.stat(board.history_file(task_id)).st_mtime_ns
                >= os.stat(board.task_file(task_id)).st_mtime_ns)
    except OSError:
        return False


def read_history_healed(board: Board, task_id: str) -> tuple[bytes | None, str | None]:
    """The history's bytes (None when missing) after fixing a last line without its
    newline: a whole event gets the newline, a torn one (a crash mid-append, never
    acknowledged) is cut off. Caller holds the lock. Returns (data, what was done)."""
    path = board.history_file(task_id)
    refuse_link(board, path)
    try:
        data = read_board_file(path, BOARD_FILE_LIMIT)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise LedgitError(located(f"cannot read: {exc.strerror}", board.rel(path)),
                          USAGE) from None
    if not data or data.endswith(b"\n"):
        return data, None
    cut = data.rfind(b"\n") + 1
    try:
        whole = isinstance(json.loads(data[cut:]), dict)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        whole = False
    with open(path, "r+b") as fh:
        if whole:
            fh.seek(0, os.SEEK_END)
            fh.write(b"\n")
        else:
            fh.truncate(cut)
        fh.flush()
        os.fsync(fh.fileno())
    if whole:
        return data + b"\n", "added the missing newline after the last history line"
    return data[:cut], f"cut off a torn last history line ({len(data) - cut} bytes)"


def _commit(board: Board, task_id: str, events: list[Event], record: Record | None) -> None:
    """Append ``events`` (fsync), then replace the task file with ``record`` (if any) and
    refresh its index row: the write-ahead order of DESIGN §6.

    All or nothing (issue 13): when the append or the file's replacement fails (no
    space, quota, an I/O error, a read-only file system), the history is cut back to its
    length before the append (a history this write created is removed) and the error is
    one line (:func:`ledgit.storage.oserrors.os_refusal`: exit 2, or 74 for space and I/O); only
    when even that fails is the write left for ``ledgit doctor --repair``, and the line says so.
    A task file over ``record.MAX_RECORD_BYTES`` (which no read would accept) is refused
    first, exit 2, with nothing written."""
    text = None
    if record is not None:
        text = render_record(record).encode("utf-8")
        problem = size_problem(len(text), "the task file after this write")
        if problem is not None:
            raise LedgitError(located(f"{problem}; nothing written",
                                      board.rel(board.task_file(task_id))), USAGE)
    path = board.history_file(task_id)
    created = not os.path.lexists(path)
    if created:
        try:
            make_dirs(board.history_str)
        except OSError as exc:
            raise os_refusal(exc, board.rel(board.history_str)) from None
    data = "".join(event_line(e) for e in events).encode("utf-8")
    refuse_link(board, path)
    try:
        # ONOFOLLOW: a link planted after the check above is refused too (ELOOP).
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW | NONBLOCK,
                     0o666)
    except OSError as exc:
        refuse_link(board, path)
        raise os_refusal(exc, board.rel(path)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or device planted there: no append
        os.close(fd)
        raise LedgitError(located("is not a regular file; nothing written", board.rel(path)),
                          USAGE)
    if created:
        adopt_fd(fd, board.history_str)  # root in another user's board: theirs (issue 26)
    size = 0
    try:
        size = 0 if created else os.fstat(fd).st_size
        write_all(fd, data)
        os.fsync(fd)
    except OSError as exc:
        raise _undo_append(board, path, fd, size, created, exc, path) from None
    finally:
        os.close(fd)
    if created:
        fsync_dir(board.history_str)
    if record is not None:
        try:
            write_task(board, task_id, record, text)
        except OSError as exc:
            raise _undo_append(board, path, None, size, created, exc,
                                    board.task_file(task_id)) from None
        refresh_index(board, [record])


def _undo_append(board: Board, path: str, fd: int | None, size: int, created: bool,
                 exc: OSError, failed: str) -> LedgitError:
    """Cut the history ``path`` back to ``size`` bytes (remove it when this write
    created it) after ``exc`` at ``failed``; the error to raise, saying so when the
    undo itself failed."""
    try:
        if created:
            os.unlink(path)
            fsync_dir(board.history_str)
        elif fd is not None:
            os.ftruncate(fd, size)
            os.fsync(fd)
        else:
            fd = os.open(path, os.O_WRONLY | NOFOLLOW)
            try:
                os.ftruncate(fd, size)
                os.fsync(fd)
            finally:
                os.close(fd)
    except OSError:
        refusal = os_refusal(exc, board.rel(failed))
        refusal.message += (f"; the event appended to {board.rel(path)} could not be "
                            f"undone (run: ledgit doctor --repair)")
        return refusal
    refusal = os_refusal(exc, board.rel(failed))
    refusal.message += "; nothing was written"
    return refusal


def write_task(board: Board, task_id: str, record: Record, text: bytes | None = None
               ) -> None:
    """Replace the task file atomically with ``record`` (``text``: its rendering, when the
    caller has it): temp file in the same dir (the file's mode kept), fsync, rename, fsync
    the dir. Raises OSError as the system does."""
    make_dirs(board.tasks_str)
    path = board.task_file(task_id)
    refuse_link(board, path)  # os.replace would swap the link for a file, silently
    lock = board.last_locks.get(task_id)
    data = render_record(record).encode("utf-8") if text is None else text
    replace_task_file(path, data, fsync=True,
                      lock=lock if lock is not None and lock.held else None)
    fsync_dir(board.tasks_str)


def refresh_index(board: Board, records: list[Record]) -> None:
    """Refresh index rows after a write. Best effort: the index is derived (DESIGN §1),
    so its failure never fails a write; only an index that already exists is touched."""
    try:
        index = Index.open_existing(board)
        if index is None:
            return
        try:
            for record in records:
                index.update_one(record, board.task_file(record.id))
        finally:
            index.close()
    except Exception as exc:  # noqa: BLE001 - see the docstring
        if os.environ.get("LEDGIT_DEBUG") == "1":
            print(f"ledgit: index update skipped: {exc!r}", file=sys.stderr)


def refuse_case_twin(board: Board, task_id: str) -> None:
    """Refuse (exit 2) a task entering the board whose id equals another task's under case
    folding (:func:`ledgit.core.schema.case_twins`; issue 36), naming both task files. One
    listing of the tasks directory."""
    for _, other in case_twins(board.list_ids(), [task_id])[:1]:
        raise LedgitError(f"task {task_id}: " + case_twin_message(
            board.rel(board.task_file(task_id)), board.rel(board.task_file(other))), USAGE)


def _new_id(board: Board) -> str:
    prefix = board.config.id_prefix
    while True:
        # os.urandom, as secrets.randbits draws it (SystemRandom), without importing secrets
        # (with hmac and random: ~1.5 ms of every write's start-up, bench/run.py)
        bits = int.from_bytes(os.urandom((5 * ID_RANDOM_CHARS + 7) // 8), "big")
        rand = "".join(ID_ALPHABET[(bits >> (5 * i)) & 31] for i in range(ID_RANDOM_CHARS))
        tid = f"{prefix}-{rand}"
        if not os.path.lexists(board.task_file(tid)) \
                and not os.path.lexists(board.history_file(tid)):
            return tid


def check_expect(task_id: str, revision: str, expect: str) -> None:
    """``--expect REV`` (DESIGN §6): a full revision or a prefix of >= 12 hex digits.

    Raises LedgitError exit 2 for a malformed REV, exit 3 when the task is elsewhere.
    """
    want = expect.strip().lower()
    if not (12 <= len(want) <= 64 and all(c in "0123456789abcdef" for c in want)):
        raise LedgitError(f"--expect {expect!r}: give a full revision or a prefix of at "
                          f"least 12 hex digits", USAGE)
    if not revision.startswith(want):
        raise LedgitError(f"{task_id}: stale revision: expected {expect}, the task is now at "
                          f"{revision}", STALE)


def _later(previous: str, now: str) -> str:
    """``now``, or ``previous`` + 1 µs when the clock has not moved past it (both canonical
    RFC 3339 UTC µs strings, so they compare as text)."""
    if now > previous:
        return now
    return format_timestamp(parse_timestamp(previous) + timedelta(microseconds=1))


def _refuse_lifecycle(after: list[tuple[str, str]], before: list[tuple[str, str]],
                      rel: str) -> None:
    new = [p for p in after if p not in before]
    if new:
        name, message = new[0]
        raise LedgitError(located(message, rel, None, name), USAGE)


def refuse_lost_history(board: Board, task_id: str) -> None:
    """Refuse (exit 1, nothing written) to start a history for a task file whose history is
    missing or empty in the work tree while Git's index or HEAD holds it: the file was
    deleted or emptied, and a new genesis event would drop every committed event (the
    pre-commit hook then refuses the commit, naming each). The message names the file and
    the ``git checkout`` that brings it back. A task file Git has no history of (made by
    hand, or checked out alone from another branch) is adopted as before: no refusal.

    Only this rare path asks Git (two ``git cat-file`` at most); outside a repository, or
    when Git cannot answer, nothing is refused."""

    hpath = board.history_path(task_id)
    rel = board.rel(hpath)
    held: tuple[str, str] | None = None  # (where Git has it, the command restoring it)
    try:
        top = repository.toplevel(Path(board.root_str))
        if top is None:
            return
        path = os.path.relpath(os.path.realpath(hpath), top).replace(os.sep, "/")
        for rev, source, fix in ((None, "the index", f"git checkout -- {rel}"),
                                 ("HEAD", "HEAD", f"git checkout HEAD -- {rel}")):
            blob = objects.blobs_at(top, rev, [path]).get(path)
            if blob is not None and blob.strip():
                held = (source, fix)
                break
    except (LedgitError, OSError, ValueError):
        return  # no git binary, a refused repository, another drive: adopt as before
    if held is None:
        return
    source, fix = held
    what = "missing" if not os.path.lexists(hpath) else "empty"
    raise LedgitError(f"{rel}: {what} in the work tree, but {source} has it: a write would "
                      f"start a new history and lose its events; nothing written (restore "
                      f"it: {fix}; then retry)", CHECK_FAILED)


def damaged_history(board: Board, task_id: str, problem: Problem,
                    data: bytes | None = None) -> LedgitError:
    """The refusal of a write on a history that breaks ``problem``'s rule (exit 1): one line
    naming the file, the line, the rule (docs/history.md) and the command that repairs it --
    ``ledgit resolve`` for a line merge left in the file, else restoring the committed copy
    from Git (no ledgit command can rebuild an event whose bytes were changed)."""

    rel = board.rel(board.history_path(task_id))
    marked = line_merge_refusal(rel, data.decode("utf-8", "replace")) if data else None
    if marked is not None:
        return LedgitError(f"{marked}; nothing written", CHECK_FAILED)
    where = f"line {problem.line}" if problem.line else "history"
    if problem.rule == "heads":
        fix = f"ledgit resolve {rel}"
    else:
        fix = f"git restore --source=HEAD -- {rel}, its last committed copy"
    return LedgitError(f"{rel}: {where}: {problem.rule}: {problem.message}; the history is "
                       f"damaged, nothing written (repair: {fix}; then: ledgit verify "
                       f"{task_id})", CHECK_FAILED)


def _damaged(board: Board, task_id: str, detail: str) -> LedgitError:
    return LedgitError(f"{board.rel(board.history_path(task_id))}: the history is damaged: "
                       f"{detail} (see: ledgit verify {task_id})", CHECK_FAILED)
