"""A board on disk: discovery, ids, locks, atomic writes and the write path (DESIGN §2, §6).

Layout (DESIGN §2)::

    <root>/.ledgit/config.yaml          settings (ledgit.config)
    <root>/.ledgit/tasks/<ID>.md        canonical records (ledgit.record)
    <root>/.ledgit/history/<ID>.jsonl   hash-linked events (ledgit.history)
    <git dir>/ledgit/                   per worktree: index.sqlite3, locks/
    <root>/.ledgit/.local/              the same, outside a Git repository (git-ignored)

Every write goes through :meth:`Board.mutate` (or :meth:`Board.create`) and is ordered like a
write-ahead log: per-task lock, read the file (the truth, never the index), check ``--expect``,
append the event(s) and fsync, replace the task file atomically, fsync the directory, then
refresh the index row (best effort). A crash between the append and the rename leaves the
history one event ahead of the file; the next write to that task, or :meth:`Board.repair`,
rolls it forward. No acknowledged write is lost.

Import cost matters (DESIGN §10): this module imports only the standard library at the top;
record/history (PyYAML, jsonpatch) are imported by the methods that parse or write.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from functools import cached_property
from typing import TYPE_CHECKING

from ledgit.errors import (
    BUSY,
    CHECK_FAILED,
    NOT_FOUND,
    STALE,
    USAGE,
    LedgitError,
    located,
)
from ledgit.locate import CONFIG_NAME as CONFIG_NAME  # re-exported: board's own names
from ledgit.locate import LEDGIT_DIR as LEDGIT_DIR
from ledgit.locate import LOCAL_DIR as LOCAL_DIR
from ledgit.locate import ROOT_ENV as ROOT_ENV
from ledgit.locate import TASKS_DIR as TASKS_DIR
from ledgit.locate import find_root, git_dir_for, private_dir
from ledgit.locks import FileLock as FileLock  # re-exported: board's own names
from ledgit.locks import file_lock as file_lock
from ledgit.oserrors import os_refusal as os_refusal
from ledgit.oserrors import owner_detail as owner_detail
from ledgit.oserrors import user_name as user_name

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from ledgit.config import BoardConfig
    from ledgit.history import Event, Problem
    from ledgit.ops import Change
    from ledgit.record import Record

# lazy: the functions import ledgit.record, .history, .ops, .config, .index, .parallel and
# pathlib when they need them: a read (bench list, get, search: <= 1.5x `ledgit --version`)
# imports none of them (~13 ms of imports on this loaded machine; tests/test_cli.py checks).

HISTORY_DIR = "history"
TASK_SUFFIX = ".md"
HISTORY_SUFFIX = ".jsonl"
TMP_MARK = ".md.tmp-"  # temp files: .<id>.md.tmp-<pid>-<random>, in the tasks dir
ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"  # RFC 4648 base32, lower case
ID_RANDOM_CHARS = 10  # 50 random bits (DESIGN §2)
DEFAULT_LOCK_TIMEOUT = 30.0  # seconds; 8 writers x 50 writes on one task wait < 3 s here
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # = record.ID_RE
ACTOR_ENV = "LEDGIT_ACTOR"
# CONFIG_NAME (from ledgit.locate) = config.CONFIG_NAME: finding a board (the pre-commit
# hook, the merge driver) does not import ledgit.config (its dataclass costs ~5 ms of
# imports); tests check that they agree.


def __getattr__(name: str) -> Any:
    # ``Change`` (what a mutation callback returns) is defined once, in ledgit.ops; it is
    # re-exported here lazily so that finding a board does not import the transitions.
    if name == "Change":
        from ledgit.ops import Change

        return Change
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Board:
    """A ledgit board rooted at ``root`` (the directory that contains ``.ledgit/``).

    Cheap to construct: the config and the private dir are computed on first use. The
    directories are :class:`pathlib.Path` values (``root``, ``dir``, ``tasks_dir``,
    ``history_dir``, ``private_dir``, ``git_dir``), made on first use; the commands' hot paths
    use the same places as strings (``root_str``, ``tasks_str``, ``history_str``,
    ``private_str``, :meth:`task_file`, :meth:`history_file`), so that a read or a write does
    not import pathlib (~2.5 ms, DESIGN §10).
    """

    # Why this board refuses writes (exit 2), e.g. a snapshot of another board at a Git ref
    # (ledgit.projects); None: writable.
    read_only: str | None = None

    def __init__(self, root: Path | str, config: BoardConfig | None = None) -> None:
        self.root_str = os.path.abspath(root)
        self.dir_str = os.path.join(self.root_str, LEDGIT_DIR)
        self.tasks_str = os.path.join(self.dir_str, TASKS_DIR)
        self.history_str = os.path.join(self.dir_str, HISTORY_DIR)
        self._locks: dict[str, TaskLock] = {}  # the last lock made per task (temp notes)
        if config is not None:
            self.__dict__["config"] = config

    def __repr__(self) -> str:
        return f"Board({self.root_str!r})"

    @cached_property
    def root(self) -> Path:
        """The directory holding ``.ledgit/``."""
        from pathlib import Path

        return Path(self.root_str)

    @cached_property
    def dir(self) -> Path:
        """``<root>/.ledgit``."""
        return self.root / LEDGIT_DIR

    @cached_property
    def tasks_dir(self) -> Path:
        """``<root>/.ledgit/tasks``."""
        return self.dir / TASKS_DIR

    @cached_property
    def history_dir(self) -> Path:
        """``<root>/.ledgit/history``."""
        return self.dir / HISTORY_DIR

    @cached_property
    def config(self) -> BoardConfig:
        """The board's settings (``.ledgit/config.yaml``; defaults when missing)."""
        from ledgit.config import load_config

        return load_config(os.path.join(self.dir_str, CONFIG_NAME))

    @cached_property
    def git_dir(self) -> Path | None:
        """The per-worktree Git directory holding ``root``; None outside Git."""
        from pathlib import Path

        found = self.git_dir_str
        return None if found is None else Path(found)

    @cached_property
    def git_dir_str(self) -> str | None:
        """:attr:`git_dir` as a string."""
        return git_dir_for(self.root_str)

    @cached_property
    def private_dir(self) -> Path:
        """``$(git rev-parse --git-path ledgit)``: per worktree, never committed (DESIGN §2).

        Outside a Git repository: ``.ledgit/.local/``. Not created here.
        """
        from pathlib import Path

        return Path(self.private_str)

    @cached_property
    def private_str(self) -> str:
        """:attr:`private_dir` as a string."""
        return private_dir(self.root_str, self.git_dir_str)

    # ------------------------------------------------------------------ paths and ids

    def task_path(self, task_id: str) -> Path:
        """``.ledgit/tasks/<id>.md``. Raises LedgitError (exit 2) for an invalid id."""
        return self.tasks_dir / (_checked_id(task_id) + TASK_SUFFIX)

    def history_path(self, task_id: str) -> Path:
        """``.ledgit/history/<id>.jsonl``. Raises LedgitError (exit 2) for an invalid id."""
        return self.history_dir / (_checked_id(task_id) + HISTORY_SUFFIX)

    def task_file(self, task_id: str) -> str:
        """:meth:`task_path` as a string."""
        return os.path.join(self.tasks_str, _checked_id(task_id) + TASK_SUFFIX)

    def history_file(self, task_id: str) -> str:
        """:meth:`history_path` as a string."""
        return os.path.join(self.history_str, _checked_id(task_id) + HISTORY_SUFFIX)

    def rel(self, path: Path | str) -> str:
        """``path`` relative to the board root, POSIX style (for messages and the index);
        a path outside the root as it is."""
        text = os.fspath(path)
        root = self.root_str.rstrip(os.sep) + os.sep
        if text.startswith(root) and ".." not in text[len(root):].split(os.sep):
            rest = os.path.normpath(text[len(root):])
            return "." if rest == "." else rest.replace(os.sep, "/")
        return "." if text == self.root_str else text

    def list_ids(self) -> list[str]:
        """Ids of every task file (stems of ``tasks/*.md``, dot-files excluded), sorted."""
        return sorted(_stems(self.tasks_str, TASK_SUFFIX))

    def exists(self, task_id: str) -> bool:
        """True when the task file exists (case-exact, also on case-insensitive systems)."""
        if not _is_valid_id(task_id) or not os.path.isfile(self.task_file(task_id)):
            return False
        if sys.platform in ("darwin", "win32"):
            return task_id + TASK_SUFFIX in os.listdir(self.tasks_str)
        return True

    def resolve_id(self, text: str) -> str:
        """The task id ``text`` names: the exact id, or a unique prefix of an id or of its
        random part (``k3v9`` finds ``T-k3v9q2mz7a``; prefixes ignore case), like short Git
        hashes (DESIGN §2).

        Raises LedgitError exit 4: no match, or ambiguous (the message lists the candidates).
        """
        text = text.strip()
        if not text:
            raise LedgitError("no task id given", USAGE)
        if self.exists(text):
            return text
        want = text.lower()
        found = []
        for tid in self.list_ids():
            low = tid.lower()
            if low.startswith(want) or low.partition("-")[2].startswith(want):
                found.append(tid)
        if len(found) == 1:
            return found[0]
        if not found:
            raise LedgitError(f"no task matches {text!r}", NOT_FOUND)
        shown = ", ".join(found[:10]) + (f", ... ({len(found)} in all)" if len(found) > 10
                                         else "")
        raise LedgitError(f"{text!r} is ambiguous: {shown}", NOT_FOUND)

    # ------------------------------------------------------------------ reading

    def read(self, task_id: str) -> Record:
        """Parse the task file (the truth, never the index).

        Raises LedgitError: missing → exit 4; malformed, or its ``id`` differs from the file
        name → exit 2 with ``path:line: field: message``.
        """
        path = self.task_file(task_id)
        rel = self.rel(path)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise LedgitError(f"no task {task_id} ({rel})", NOT_FOUND) from None
        except OSError as exc:
            raise LedgitError(located(f"cannot read: {exc.strerror}", rel), USAGE) from None
        return self._parse(task_id, data, rel)

    def _parse(self, task_id: str, data: bytes, rel: str) -> Record:
        """:meth:`read` of bytes already read from the file at ``rel``."""
        from ledgit.record import parse_record

        record = parse_record(data, rel)
        if record.id != task_id:
            raise LedgitError(located(f"id {record.id!r} does not match the file name", rel,
                                      _line_of_key(data, "id"), "id"), USAGE)
        return record

    def read_history_text(self, task_id: str) -> str | None:
        """The history file's text, or None when it does not exist."""
        try:
            with open(self.history_file(task_id), "rb") as fh:
                return fh.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return None

    # ------------------------------------------------------------------ locking

    def lock(self, task_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> TaskLock:
        """The task's advisory lock (``<private dir>/locks/<id>.lock``, flock), to hold with
        ``with``.

        Waits up to ``timeout`` seconds; then raises LedgitError exit 5 (busy). Compatible
        with ``filelock.FileLock`` on the same path (both use flock on a file kept in place).
        """
        if self.read_only is not None:  # every write takes this lock first
            raise LedgitError(self.read_only, USAGE)
        path = os.path.join(self.private_str, "locks", f"{_checked_id(task_id)}.lock")
        lock = TaskLock(path, timeout, f"{task_id} is busy", self.tasks_str)
        self._locks[task_id] = lock
        return lock

    # ------------------------------------------------------------------ writing

    def create(self, fields: Mapping[str, Any], body: str, actor: str, *,
               note: str | None = None, task_id: str | None = None,
               at: str | None = None) -> Record:
        """Create a task: a genesis ``create`` event, then the file (DESIGN §6 order).

        ``fields``: typed front matter without ``id`` (``status`` defaults to ``open``);
        ``created``/``last_modified`` default to ``at`` (RFC 3339) or now. The new id is
        ``<prefix>-<10 random base32 chars>`` unless ``task_id`` is given. Raises LedgitError
        exit 2 for invalid fields, a lifecycle violation, or an id that already exists.
        """
        from ledgit.history import new_event
        from ledgit.lifecycle import lifecycle_problems
        from ledgit.record import make_record
        from ledgit.timestamps import normalize_timestamp

        actor = _checked_actor(actor)
        try:
            stamp = normalize_timestamp(at) if at else _now()
        except ValueError as exc:
            raise LedgitError(f"--at: {exc}", USAGE) from None
        tid = _checked_id(task_id) if task_id is not None else self._new_id()
        data = dict(fields)
        data["id"] = tid
        data.setdefault("status", "open")
        data["created"] = data.get("created") or stamp
        data["last_modified"] = data.get("last_modified") or stamp
        path, hpath = self.task_file(tid), self.history_file(tid)
        record = make_record(data, body, self.rel(path))
        _refuse_lifecycle(lifecycle_problems(record.fields), [], self.rel(path))
        with self.lock(tid):
            refuse_link(self, path)
            refuse_link(self, hpath)
            if os.path.lexists(path):
                raise LedgitError(f"task {tid} already exists ({self.rel(path)})", USAGE)
            if os.path.lexists(hpath):
                raise LedgitError(f"{self.rel(hpath)} already exists without "
                                  f"a task file (run: ledgit doctor --repair)", USAGE)
            event = new_event(parents=[], at=record.fields["last_modified"], actor=actor,
                              op="create", before_state={}, after_state=record.state(),
                              note=note)
            self._commit(tid, [event], record)
        return record

    def mutate(self, task_id: str, change: Callable[[Record], Change], actor: str, *,
               expect: str | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
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
        from ledgit.history import new_event
        from ledgit.lifecycle import lifecycle_problems
        from ledgit.record import make_record

        actor = _checked_actor(actor)
        if not self.exists(task_id):
            raise LedgitError(f"no task {task_id}", NOT_FOUND)
        rel = self.rel(self.task_file(task_id))
        with self.lock(task_id, lock_timeout):
            now = _now()
            current, pending, parents = self._settle(task_id, actor, now)
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
            fields["last_modified"] = _later(current.fields["last_modified"], now)
            new = make_record(fields, proposed.body, rel)
            if check_lifecycle:
                _refuse_lifecycle(lifecycle_problems(new.fields),
                                  lifecycle_problems(current.fields), rel)
            # What a person wrote that the canonical writer drops is never lost silently
            # (issue 12): a YAML comment refuses the write; quoting or layout is said.
            loss = self.layout_loss(task_id, current)
            if loss is not None and loss[1].startswith("a YAML comment"):
                raise LedgitError(located(
                    f"{loss[1]} would be dropped by this {op}: ledgit writes the canonical "
                    f"form (move the text into the body, or accept the canonical form first: "
                    f"ledgit record {task_id} --normalize); nothing written", rel, loss[0]),
                    USAGE)
            event = new_event(parents=parents, at=new.fields["last_modified"], actor=actor,
                              op=op, before_state=current.state(), after_state=new.state(),
                              note=note, meta=meta)
            self._commit(task_id, [*pending, event], new)
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

    def record_edit(self, task_id: str, actor: str, *, normalize: bool = False
                    ) -> dict[str, Any] | None:
        """``ledgit record ID``: append an ``edit`` event when the file differs from its
        history head (a hand edit, DESIGN §6), or a genesis ``create`` event when the task has
        no history yet. Returns the appended event, or None when there was nothing to record
        (an interrupted write is rolled forward instead). The schema still applies (exit 2).

        A file whose front matter holds what the canonical writer will not keep -- a YAML
        comment, custom quoting or layout (:func:`ledgit.layoutloss.layout_loss`) -- is refused,
        exit 2, ``path:line: what``, nothing written, so it is never lost silently by a later
        write; ``normalize`` accepts the canonical form: the edit is recorded and the file
        rewritten canonically at once (same revision), the change visible in ``git diff``.
        """
        actor = _checked_actor(actor)
        if not self.exists(task_id):
            raise LedgitError(f"no task {task_id}", NOT_FOUND)
        with self.lock(task_id):
            current, pending, _ = self._settle(task_id, actor, _now())
            loss = self.layout_loss(task_id, current)
            if loss is not None and not normalize:
                raise LedgitError(located(
                    f"{loss[1]} would not be kept: ledgit writes the canonical form (move the "
                    f"text into the body, or accept the canonical form: ledgit record "
                    f"{task_id} --normalize); nothing recorded",
                    self.rel(self.task_file(task_id)), loss[0]), USAGE)
            if pending:
                self._commit(task_id, pending, None)
            if loss is not None:
                self._write_task(task_id, current)
            if pending or loss is not None:
                self._refresh_index([current])
            return dict(pending[-1]) if pending else None

    def layout_loss(self, task_id: str, record: Record) -> tuple[int, str] | None:
        """What rewriting the task file canonically would not keep, as ``(line, what)``
        (:func:`ledgit.layoutloss.layout_loss`; ``record`` is what the file parses to), or None
        (also when the file cannot be read)."""
        from ledgit.layoutloss import layout_loss

        try:
            with open(self.task_file(task_id), "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        return layout_loss(data, record)

    # ------------------------------------------------------------------ checking and repair

    def verify(self, ids: list[str] | None = None, *, trust_index: bool = True
               ) -> list[Problem]:
        """Problems of the given tasks (all when None): history continuity (history.verify),
        schema errors of task files, lifecycle invariants (DESIGN §4), orphan histories.

        The task-file side of a check needs only the file's revision. When many tasks are
        checked and ``trust_index`` holds, a task whose worktree-index row is fresh by Git's
        stat rule (:meth:`ledgit.index.Index.fresh_revisions`) takes its revision from that
        row, computed from the very bytes the file still holds when they were parsed and
        validated, instead of being parsed again; its lifecycle rules run on the history's
        head state, which then equals the file's. Any problem found that way is checked
        again by parsing the file, so what is reported never depends on the index.
        ``trust_index=False`` parses every file (docs/history.md, "Verifying a board").
        From 2 x ``_PARALLEL_SLICE`` tasks on, slices of them are checked in forked workers
        (:func:`ledgit.parallel.map_slices`), after the index has been read and closed; the
        problems come back in the same order as from one process.

        Never raises for one bad task: each problem is a :class:`ledgit.history.Problem`.
        """
        from ledgit.history import Problem
        from ledgit.parallel import map_slices, workers_for

        check_orphans = ids is None
        names = self.list_ids() if ids is None else list(ids)
        # Everything the index provides is read here, before any fork: no SQLite connection
        # is open while the workers run (ledgit.parallel).
        trusted = self._fresh_revisions() if trust_index and len(names) >= _TRUST_INDEX_FROM \
            else {}
        histories = _DirReader(self.history_dir) if trusted else None

        def work(part: Sequence[str]) -> list[tuple[str, int, str, str]]:
            return [(p.task, p.line, p.rule, p.message)
                    for p in self._verify_slice(part, trusted, histories)]

        try:
            found = map_slices(names, work, workers_for(len(names), _PARALLEL_SLICE))
        finally:
            if histories is not None:
                histories.close()
        problems = [Problem(*p) for p in found]
        if check_orphans:
            for name in sorted(_listdir(self.tasks_str)):
                if name.startswith(".") and TMP_MARK in name and not _writer_alive(name):
                    problems.append(Problem(name[1:name.index(TMP_MARK)], 0, "temp-file",
                                            f"leftover temp file of an interrupted write "
                                            f"({self.rel(os.path.join(self.tasks_str, name))}"
                                            f"; fix: ledgit doctor --repair)"))
            tasks = set(names)
            for tid in sorted(_stems(self.history_dir, HISTORY_SUFFIX) - tasks):
                problems.append(Problem(tid, 0, "orphan", "a history without a task file "
                                        f"({LEDGIT_DIR}/{HISTORY_DIR}/{tid}{HISTORY_SUFFIX})"))
        return problems

    def _verify_slice(self, names: Sequence[str], trusted: Mapping[str, str],
                      histories: _DirReader | None) -> list[Problem]:
        """:meth:`verify` of the tasks ``names`` (no orphans), in order: a task with a
        ``trusted`` revision (from a fresh index row) through its history alone when that
        finds nothing, every other one by :meth:`_verify_one`."""
        from ledgit.history import Problem, verify_with_head
        from ledgit.lifecycle import lifecycle_problems

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
            problems.extend(self._verify_one(tid))
        return problems

    def _verify_one(self, tid: str) -> list[Problem]:
        """:meth:`verify` of one task, parsing its file (the reference check)."""
        from ledgit.history import Problem, verify
        from ledgit.lifecycle import lifecycle_problems
        from ledgit.markers import RULE, marker_problem

        problems: list[Problem] = []
        path, hpath = self.task_path(tid), self.history_path(tid)
        rel, hrel = self.rel(path), self.rel(hpath)
        try:
            hdata: bytes | None = hpath.read_bytes()
        except FileNotFoundError:
            hdata = None
        except OSError as exc:
            return [Problem(tid, 0, "schema", located(f"cannot read: {exc.strerror}", hrel))]
        read_error: str | None = None
        try:
            data: bytes | None = path.read_bytes()
        except FileNotFoundError:
            data = None
        except OSError as exc:
            data, read_error = None, located(f"cannot read: {exc.strerror}", rel)
        # A line merge left in either file (Git's fallback without the driver, or the
        # driver's own body conflict, committed anyway): said first, at the marker's line,
        # as the gate does (ledgit.gate.check_task); the other rules would only misplace it.
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
            record = self._parse(tid, data, rel)
        except LedgitError as exc:
            error = exc.message
            problems.append(Problem(tid, 0, "schema", error))
        try:
            # A parsed record is a valid one: history.verify need not validate the head
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

    def _fresh_revisions(self) -> dict[str, str]:
        """Index.fresh_revisions of the existing index ({} without one; never builds it)."""
        from ledgit.index import Index

        try:
            index = Index.open_existing(self)
        except (OSError, LedgitError):
            return {}
        if index is None:
            return {}
        try:
            return index.fresh_revisions()
        finally:
            index.close()

    def repair(self, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> list[str]:
        """Roll interrupted writes forward (DESIGN §6, ``ledgit doctor --repair``).

        Per task, under its lock: leftover temp files are removed; a torn last history line
        (a crash mid-append) is cut off; a history whose head is one write ahead of the file
        (appended, not renamed) has the file rewritten from the head state; a history holding
        only its genesis event and no task file (a create that crashed) gets its file.
        Returns one line per action taken. A task that stays busy is reported, not waited on.
        """
        from ledgit.history import HistoryError, head_state, parse_events
        from ledgit.record import record_from_state

        done: list[str] = []
        leftovers, tasks, suspects = self._repair_suspects()
        for tid in sorted(suspects):
            if not _is_valid_id(tid):
                continue
            try:
                refuse_link(self, self.task_path(tid))
                refuse_link(self, self.history_path(tid))
            except LedgitError as exc:
                done.append(f"{tid}: skipped: {exc.message}")
                continue
            try:
                with self.lock(tid, lock_timeout):
                    for name in leftovers.get(tid, []):
                        try:
                            (self.tasks_dir / name).unlink()
                            done.append(f"{tid}: removed leftover temp file "
                                        f"{self.rel(self.tasks_dir / name)}")
                        except FileNotFoundError:
                            pass
                    _, healed = self._read_history_healed(tid)
                    if healed:
                        done.append(f"{tid}: {healed}")
                    if tid in tasks:
                        try:
                            before = self.read(tid).revision
                            current, _, _ = self._settle(tid, "ledgit", _now(),
                                                         record_hand_edit=False)
                        except LedgitError:
                            continue  # reported by verify
                        if current.revision != before:
                            done.append(f"{tid}: rolled an interrupted write forward "
                                        f"(rewrote the task file from its history head)")
                    elif not self.task_path(tid).exists():
                        text = self.read_history_text(tid) or ""
                        if not text.strip():
                            # A create killed before its genesis event was whole: the
                            # history is empty (or was cut to nothing above), and nothing
                            # was acknowledged (a create answers after the task file).
                            self.history_path(tid).unlink()
                            _fsync_dir(self.history_dir)
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
                        self._write_task(tid, record)
                        self._refresh_index([record])
                        done.append(f"{tid}: recreated the task file of an interrupted create "
                                    f"from its history")
            except LedgitError as exc:
                if exc.code != BUSY:
                    raise
                done.append(f"{tid}: busy, skipped (another process holds its lock)")
        return done

    def pending_repairs(self) -> list[str]:
        """Tasks whose last write was interrupted (DESIGN §6), without touching anything: a
        dry run of :meth:`repair`'s detection (``ledgit doctor``). Of repair's suspects, those
        with a leftover temp file or a history without its file, and those whose history is
        torn (no final newline) or one event ahead of the task file."""
        from ledgit.history import HistoryError, heads, parse_events, replay
        from ledgit.record import parse_record
        from ledgit.revision import revision_of

        leftovers, tasks, suspects = self._repair_suspects()
        found: set[str] = set()
        for tid in suspects:
            if tid in leftovers or tid not in tasks:
                found.add(tid)
                continue
            hpath = self.history_dir / (tid + HISTORY_SUFFIX)
            tpath = self.tasks_dir / (tid + TASK_SUFFIX)
            try:
                text = hpath.read_text(encoding="utf-8", errors="replace")
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
                record = parse_record(tpath.read_bytes(), str(tpath))
                if (record.revision != revision_of(states[hs[0]])
                        and record.revision == revision_of(states[head["parents"][0]])):
                    found.add(tid)
            except (OSError, HistoryError, LedgitError, ValueError):
                continue
        return sorted(found)

    def _repair_suspects(self) -> tuple[dict[str, list[str]], set[str], set[str]]:
        """(leftover temp files by task, task ids with a file, suspects) for :meth:`repair`
        and :meth:`pending_repairs`. Suspects: a leftover temp file, a history without its
        file, or a history written no earlier than its file (ids not yet validated)."""
        leftovers: dict[str, list[str]] = {}
        for name in _listdir(self.tasks_dir):
            if name.startswith(".") and TMP_MARK in name:
                leftovers.setdefault(name[1:name.index(TMP_MARK)], []).append(name)
        tasks = set(_stems(self.tasks_dir, TASK_SUFFIX))
        histories = _stems(self.history_dir, HISTORY_SUFFIX)
        suspects = set(leftovers)
        for tid in tasks & histories:
            try:
                hst = os.stat(self.history_dir / (tid + HISTORY_SUFFIX))
                tst = os.stat(self.tasks_dir / (tid + TASK_SUFFIX))
            except OSError:
                continue
            if hst.st_mtime_ns >= tst.st_mtime_ns:
                suspects.add(tid)
        suspects |= histories - tasks
        return leftovers, tasks, suspects

    # ------------------------------------------------------------------ internals

    def _new_id(self) -> str:
        import secrets

        prefix = self.config.id_prefix
        while True:
            bits = secrets.randbits(5 * ID_RANDOM_CHARS)
            rand = "".join(ID_ALPHABET[(bits >> (5 * i)) & 31] for i in range(ID_RANDOM_CHARS))
            tid = f"{prefix}-{rand}"
            if not os.path.lexists(self.task_file(tid)) \
                    and not os.path.lexists(self.history_file(tid)):
                return tid

    def _settle(self, task_id: str, actor: str, now: str, *,
                record_hand_edit: bool = True) -> tuple[Record, list[Event], list[str]]:
        """Bring file and history into agreement before a write (caller holds the lock).

        Returns (current record, events to append first, parents for the next event):
        no history → a genesis event; history head one write ahead of the file (crash
        between append and rename) → the file is rewritten from the head; the file differs
        from the head otherwise (a hand edit) → an ``edit`` event. Raises LedgitError exit 1
        for a history that does not parse or replay, or that has more than one head.
        """
        from ledgit.history import HistoryError, Problem, heads, new_event, parse_checked, replay
        from ledgit.record import record_from_state

        refuse_link(self, self.task_file(task_id))
        current = self.read(task_id)
        data, _ = self._read_history_healed(task_id)
        if data is None or not data.strip():
            genesis = new_event(parents=[], at=now, actor=actor, op="create", before_state={},
                                after_state=current.state(),
                                note="history started from the existing task file")
            return current, [genesis], [genesis["id"]]
        try:
            # The line rules of verify (parse, hash, ...): no event on a damaged history.
            events = parse_checked(data, task_id)
            hs = heads(events)
        except HistoryError as exc:
            raise damaged_history(self, task_id, exc.problem, data) from None
        except (KeyError, TypeError) as exc:
            raise _damaged(self, task_id, f"malformed event ({exc})") from None
        if len(hs) != 1:
            raise damaged_history(self, task_id, Problem(
                task_id, 0, "heads", f"the history has {len(hs)} heads (a line merge?)"), data)
        head = next(e for e in events if e["id"] == hs[0])
        revision = current.revision
        if head["after"] == revision:
            return current, [], hs
        try:
            state = replay(events, task_id)[hs[0]]
            head_record = record_from_state(state, self.rel(self.task_file(task_id)))
        except HistoryError as exc:
            raise damaged_history(self, task_id, exc.problem, data) from None
        except LedgitError as exc:
            raise _damaged(self, task_id, f"head state is invalid: {exc}") from None
        if head.get("before") == revision and head["parents"] and self._history_newer(task_id):
            self._write_task(task_id, head_record)
            self._refresh_index([head_record])
            return head_record, [], hs
        if not record_hand_edit:
            return current, [], hs
        edit = new_event(parents=hs, at=now, actor=actor, op="edit", before_state=state,
                         after_state=current.state(), note="recorded a hand edit of the task file")
        return current, [edit], [edit["id"]]

    def _history_newer(self, task_id: str) -> bool:
        """The history was written no earlier than the task file: the mark of a write that
        appended its event but did not replace the file (a hand revert of the file is newer)."""
        try:
            return (os.stat(self.history_file(task_id)).st_mtime_ns
                    >= os.stat(self.task_file(task_id)).st_mtime_ns)
        except OSError:
            return False

    def _read_history_healed(self, task_id: str) -> tuple[bytes | None, str | None]:
        """The history's bytes (None when missing) after fixing a last line without its
        newline: a whole event gets the newline, a torn one (a crash mid-append, never
        acknowledged) is cut off. Caller holds the lock. Returns (data, what was done)."""
        path = self.history_file(task_id)
        refuse_link(self, path)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return None, None
        if not data or data.endswith(b"\n"):
            return data, None
        cut = data.rfind(b"\n") + 1
        import json  # only for a last line without its newline (a crash mid-append)

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

    def _commit(self, task_id: str, events: list[Event], record: Record | None) -> None:
        """Append ``events`` (fsync), then replace the task file with ``record`` (if any) and
        refresh its index row: the write-ahead order of DESIGN §6.

        All or nothing (issue 13): when the append or the file's replacement fails (no
        space, quota, an I/O error, a read-only file system), the history is cut back to its
        length before the append (a history this write created is removed) and the error is
        one line (:func:`os_refusal`: exit 2, or 74 for space and I/O); only when even that
        fails is the write left for ``ledgit doctor --repair``, and the line says so."""
        from ledgit.history import event_line

        path = self.history_file(task_id)
        created = not os.path.lexists(path)
        if created:
            try:
                os.makedirs(self.history_str, exist_ok=True)
            except OSError as exc:
                raise os_refusal(exc, self.rel(self.history_str)) from None
        data = "".join(event_line(e) for e in events).encode("utf-8")
        refuse_link(self, path)
        try:
            # O_NOFOLLOW: a link planted after the check above is refused too (ELOOP).
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW, 0o666)
        except OSError as exc:
            refuse_link(self, path)
            raise os_refusal(exc, self.rel(path)) from None
        size = 0
        try:
            size = 0 if created else os.fstat(fd).st_size
            write_all(fd, data)
            os.fsync(fd)
        except OSError as exc:
            raise self._undo_append(path, fd, size, created, exc, path) from None
        finally:
            os.close(fd)
        if created:
            _fsync_dir(self.history_str)
        if record is not None:
            try:
                self._write_task(task_id, record)
            except OSError as exc:
                raise self._undo_append(path, None, size, created, exc,
                                        self.task_file(task_id)) from None
            self._refresh_index([record])

    def _undo_append(self, path: str, fd: int | None, size: int, created: bool,
                     exc: OSError, failed: str) -> LedgitError:
        """Cut the history ``path`` back to ``size`` bytes (remove it when this write
        created it) after ``exc`` at ``failed``; the error to raise, saying so when the
        undo itself failed."""
        try:
            if created:
                os.unlink(path)
                _fsync_dir(self.history_str)
            elif fd is not None:
                os.ftruncate(fd, size)
                os.fsync(fd)
            else:
                fd = os.open(path, os.O_WRONLY | _NOFOLLOW)
                try:
                    os.ftruncate(fd, size)
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError:
            refusal = os_refusal(exc, self.rel(failed))
            refusal.message += (f"; the event appended to {self.rel(path)} could not be "
                                f"undone (run: ledgit doctor --repair)")
            return refusal
        refusal = os_refusal(exc, self.rel(failed))
        refusal.message += "; nothing was written"
        return refusal

    def _write_task(self, task_id: str, record: Record) -> None:
        """Replace the task file atomically: temp file in the same dir (the file's mode
        kept), fsync, rename, fsync the dir. Raises OSError as the system does."""
        from ledgit.render import render_record

        os.makedirs(self.tasks_str, exist_ok=True)
        path = self.task_file(task_id)
        refuse_link(self, path)  # os.replace would swap the link for a file, silently
        lock = self._locks.get(task_id)
        replace_task_file(path, render_record(record).encode("utf-8"), fsync=True,
                          lock=lock if lock is not None and lock._fd is not None else None)
        _fsync_dir(self.tasks_str)

    def _refresh_index(self, records: list[Record]) -> None:
        """Refresh index rows after a write. Best effort: the index is derived (DESIGN §1),
        so its failure never fails a write; only an index that already exists is touched."""
        try:
            from ledgit.index import Index

            index = Index.open_existing(self)
            if index is None:
                return
            try:
                for record in records:
                    index.update_one(record, self.task_file(record.id))
            finally:
                index.close()
        except Exception as exc:  # noqa: BLE001 - see the docstring
            if os.environ.get("LEDGIT_DEBUG") == "1":
                print(f"ledgit: index update skipped: {exc!r}", file=sys.stderr)


# ---------------------------------------------------------------------- discovery and init


def find_board(cwd: Path | None = None) -> Board:
    """The board for ``cwd`` (default: the working directory): ``LEDGIT_ROOT`` pins it;
    otherwise the nearest directory upward holding ``.ledgit/`` with ``tasks/`` or
    ``config.yaml`` (DESIGN §2). Creates nothing.

    Raises LedgitError exit 4 when there is none.
    """
    try:
        root, pinned = find_root(None if cwd is None else str(cwd))
    except FileNotFoundError:  # os.getcwd() of a removed directory
        raise LedgitError("the working directory no longer exists (cd to a board)",
                          NOT_FOUND) from None
    if root is not None:
        return Board(root)
    if pinned:
        raise LedgitError(f"{ROOT_ENV}={pinned}: no ledgit board there (run: ledgit init)",
                          NOT_FOUND)
    start = os.path.abspath(cwd if cwd is not None else os.getcwd())
    raise LedgitError(f"no ledgit board in {start} or any parent (run: ledgit init)",
                      NOT_FOUND)


def init_board(path: Path, id_prefix: str = "T") -> Board:
    """Create ``.ledgit/{config.yaml,tasks/,history/}`` under ``path``; idempotent (an
    existing config is kept), and ``.ledgit/.gitignore`` (temp files, ``.local/``). Outside
    Git, ``.ledgit/.local/`` is also added to ``.gitignore``.
    Raises LedgitError exit 2 for an invalid prefix.
    """
    from ledgit.config import BoardConfig, render_config, valid_prefix

    if not valid_prefix(id_prefix):
        raise LedgitError(f"invalid id prefix {id_prefix!r} (a letter, then up to 15 letters "
                          f"or digits)", USAGE)
    board = Board(path)
    config_path = board.dir / CONFIG_NAME
    try:
        board.tasks_dir.mkdir(parents=True, exist_ok=True)
        board.history_dir.mkdir(parents=True, exist_ok=True)
        if not config_path.exists():
            _write_new(config_path, render_config(BoardConfig(id_prefix=id_prefix)))
        write_board_ignore(board)
    except OSError as exc:
        raise LedgitError(f"cannot create a board in {board.root}: {exc.strerror or exc}",
                          USAGE) from None
    if board.git_dir is None:
        ignore = board.root / ".gitignore"
        entry = f"{LEDGIT_DIR}/{LOCAL_DIR}/"
        try:
            text = ignore.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        if entry not in text.splitlines():
            sep = "" if not text or text.endswith("\n") else "\n"
            with open(ignore, "a", encoding="utf-8") as fh:
                fh.write(f"{sep}{entry}\n")
    return Board(board.root)


def actor_name(explicit: str | None, root: Path | str) -> str:
    """Who is writing (DESIGN §9): ``explicit`` (``--by``), else ``LEDGIT_ACTOR``, else Git's
    ``user.name`` for ``root``, else ``"unknown"``. Raises LedgitError exit 2 for a name that
    is not one line."""
    for candidate in (explicit, os.environ.get(ACTOR_ENV)):
        if candidate is not None and candidate.strip():
            return _checked_actor(candidate.strip())
    name: str | None = None
    try:
        from pathlib import Path

        from ledgit import git

        name = git.user_name(Path(root))
    except Exception:  # noqa: BLE001 - outside Git, no git binary, a refused repository
        name = None
    return _checked_actor(name.strip()) if name and name.strip() else "unknown"


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


class TaskLock(FileLock):
    """A task's :class:`FileLock` that also remembers the temp file its holder is writing
    (its name, one line in the lock file while the file exists): a writer killed between
    creating and renaming it leaves the name behind, and the next holder of the lock, whose
    writer is then gone for sure, removes that file (issue 13; O(1) per write, no listing of
    the tasks dir)."""

    def __init__(self, path: str, timeout: float, busy: str, tasks_dir: str) -> None:
        super().__init__(path, timeout, busy)
        self.tasks_dir = tasks_dir

    def __enter__(self) -> None:
        super().__enter__()
        fd = self._fd
        if fd is None:
            return
        try:
            noted = os.pread(fd, 512, 0)
        except OSError:
            return
        if not noted:
            return
        name = os.fsdecode(noted.split(b"\n", 1)[0])
        if name.startswith(".") and TMP_MARK in name and os.sep not in name:
            try:
                os.unlink(os.path.join(self.tasks_dir, name))
                sys.stderr.write(f"ledgit: note: removed {name}, the temp file of a write "
                                 f"that was killed\n")
            except OSError:
                pass
        self.forget()

    def note(self, name: str) -> None:
        """Remember ``name`` (a temp file in the tasks dir) until :meth:`forget`."""
        if self._fd is not None:
            try:
                os.pwrite(self._fd, os.fsencode(name) + b"\n", 0)
            except OSError:
                return  # a lock file of another user (read-only): doctor --repair removes it

    def forget(self) -> None:
        """The noted temp file is gone (renamed or removed)."""
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
            except OSError:
                return


# ---------------------------------------------------------------------- helpers


_TRUST_INDEX_FROM = 64  # Board.verify of fewer tasks parses them (cheaper than the index)
# Board.verify forks a worker per this many tasks (up to the CPUs; ledgit.parallel): below
# ~2 x 250 tasks a fork (~2 ms) costs more than half the work saves.
_PARALLEL_SLICE = 250


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
                fd = os.open(name, os.O_RDONLY, dir_fd=self.fd)
            else:
                fd = os.open(os.path.join(self.path, name), os.O_RDONLY)
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


def _writer_alive(temp_name: str) -> bool:
    """The process named in a temp file's name (``.<id>.md.tmp-<pid>-<random>``) still runs
    on this machine: its write may be under way."""
    pid_text = temp_name.rpartition(TMP_MARK)[2].partition("-")[0]
    if not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # another user's process (EPERM): alive
    return True


BOARD_IGNORE = ("tasks/.*.md.tmp-*", f"{LOCAL_DIR}/")  # .ledgit/.gitignore (issue 13)


def write_board_ignore(board: Board) -> bool:
    """Make ``.ledgit/.gitignore`` ignore what a board holds that is never committed: the
    temp files of interrupted writes and ``.local/``. True when it was changed."""
    path = os.path.join(board.dir_str, ".gitignore")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        text = ""
    missing = [line for line in BOARD_IGNORE if line not in text.splitlines()]
    if not missing:
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(sep + "".join(f"{line}\n" for line in missing))
    return True


def _listdir(path: Path | str) -> list[str]:
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _stems(path: Path | str, suffix: str) -> set[str]:
    n = len(suffix)
    return {name[:-n] for name in _listdir(path)
            if name.endswith(suffix) and not name.startswith(".") and len(name) > n}


def _has_markers(body: str) -> bool:
    """ledgit.markers.has_markers, after three substring scans that rule out most bodies: a
    marker line starts with seven ``<``, ``>`` or ``|``."""
    if "<<<<<<<" not in body and ">>>>>>>" not in body and "|||||||" not in body:
        return False
    from ledgit.markers import has_markers

    return has_markers(body)


def _is_valid_id(text: str) -> bool:
    # record.is_valid_id, repeated so that resolving an id does not import PyYAML
    # (tests/test_board.py checks that the two agree).
    return bool(_ID_RE.fullmatch(text)) and ".." not in text


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FCHMOD: Callable[[int, int], None] | None = getattr(os, "fchmod", None)  # not on Windows


def refuse_link(board: Board, path: Path | str) -> None:
    """Writes never go through a symbolic link (issue 7): a task file or history that is
    one -- wherever it points -- is refused with exit 2 before anything is written, and the
    link is left as it is."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISLNK(mode):
        raise LedgitError(located("is a symbolic link; ledgit does not write through links "
                                  "(replace it with the file itself)", board.rel(path)), USAGE)


def _checked_id(task_id: str) -> str:
    if not isinstance(task_id, str) or not _is_valid_id(task_id):
        raise LedgitError(f"invalid task id {task_id!r}", USAGE)
    return task_id


def _checked_actor(actor: str) -> str:
    if not isinstance(actor, str) or not actor.strip() or any(
            c in actor for c in "\n\r\x00\u2028\u2029\x85"):
        raise LedgitError(f"invalid actor name {actor!r} (one non-empty line)", USAGE)
    return actor.strip()


def _now() -> str:
    from ledgit.readout import now_timestamp

    return now_timestamp()


def _later(previous: str, now: str) -> str:
    """``now``, or ``previous`` + 1 µs when the clock has not moved past it (both canonical
    RFC 3339 UTC µs strings, so they compare as text)."""
    if now > previous:
        return now
    from datetime import timedelta

    from ledgit.timestamps import format_timestamp, parse_timestamp

    return format_timestamp(parse_timestamp(previous) + timedelta(microseconds=1))


def _refuse_lifecycle(after: list[tuple[str, str]], before: list[tuple[str, str]],
                      rel: str) -> None:
    new = [p for p in after if p not in before]
    if new:
        name, message = new[0]
        raise LedgitError(located(message, rel, None, name), USAGE)


def damaged_history(board: Board, task_id: str, problem: Problem,
                    data: bytes | None = None) -> LedgitError:
    """The refusal of a write on a history that breaks ``problem``'s rule (exit 1): one line
    naming the file, the line, the rule (docs/history.md) and the command that repairs it --
    ``ledgit resolve`` for a line merge left in the file, else restoring the committed copy
    from Git (no ledgit command can rebuild an event whose bytes were changed)."""
    from ledgit.markers import marker_lines

    rel = board.rel(board.history_path(task_id))
    where = f"line {problem.line}" if problem.line else "history"
    if problem.rule == "heads" or (data is not None and marker_lines(data)):
        fix = f"ledgit resolve {rel}"
    else:
        fix = f"git restore --source=HEAD -- {rel}, its last committed copy"
    return LedgitError(f"{rel}: {where}: {problem.rule}: {problem.message}; the history is "
                       f"damaged, nothing written (repair: {fix}; then: ledgit verify "
                       f"{task_id})", CHECK_FAILED)


def _damaged(board: Board, task_id: str, detail: str) -> LedgitError:
    return LedgitError(f"{board.rel(board.history_path(task_id))}: the history is damaged: "
                       f"{detail} (see: ledgit verify {task_id})", CHECK_FAILED)


def _line_of_key(data: bytes, key: str) -> int | None:
    for n, line in enumerate(data.split(b"\n"), start=1):
        if line.startswith(key.encode() + b":"):
            return n
    return None


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (os.write may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def replace_task_file(path: Path | str, data: bytes, *, fsync: bool,
                      lock: TaskLock | None = None) -> None:
    """Replace the task file ``path`` (``<id>.md``) with ``data`` atomically: a temp file
    ``.<id>.md.tmp-<pid>-<random>`` in the same dir (see :data:`TMP_MARK`) with the mode of
    the file it replaces (issue 13: a private task stays private), fsync'ed when ``fsync``,
    then renamed over it. ``lock``, the task's lock when held, remembers the temp file while
    it exists. The caller checks links and fsyncs the dir. Raises OSError (the temp file is
    removed)."""
    # os.urandom, not secrets: the temp name only has to be unique (secrets imports
    # random, hmac and base64 on every write).
    directory, name = os.path.split(os.fspath(path))
    base = f".{name[:-len(TASK_SUFFIX)]}{TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}"
    tmp = os.path.join(directory, base)
    mode = file_mode(path)
    if lock is not None:
        lock.note(base)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        if mode is not None and _FCHMOD is not None:
            _FCHMOD(fd, mode)
        write_all(fd, data)
        if fsync:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        from contextlib import suppress  # a cold path: writes do not import contextlib

        with suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        if lock is not None:
            lock.forget()


def file_mode(path: Path | str) -> int | None:
    """The permission bits of the file at ``path`` (not following a link), or None when
    there is none: what a rewrite of it keeps."""
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return None


def _write_new(path: Path, text: str) -> None:
    with open(path, "x", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def _fsync_dir(path: Path | str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows cannot open a directory
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse
        pass
    finally:
        os.close(fd)
