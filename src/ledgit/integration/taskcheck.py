"""The checks of one task given as Git stores it (DESIGN §6, §8): its task file's and its
history's bytes, from a commit, the index or a work tree, with no board on disk and nothing
asked of Git. Each problem is a :class:`Finding` naming the file, the line and the rule.

* :func:`check_task`: every rule on one task (markers, schema, lifecycle, history continuity);
  :func:`check_heads_and_markers` the cheap rules that must pass everywhere; :func:`check_files`
  either over a snapshot of many tasks;
* :func:`check_growth`: "a history only grows", a task's files in a parent against a child;
* where a board's files sit in a repository: :func:`prefix_of`, :func:`task_paths`,
  :func:`task_of`.

Used by the CI gate (:mod:`ledgit.integration.gate`) and by the hooks Git runs on every commit
and ref move (:mod:`ledgit.integration.precommit`, :mod:`ledgit.integration.refguard`), which
therefore load neither the board's storage modules nor the gate's Git readers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from ledgit.core.errors import LedgitError
from ledgit.core.history import HistoryError, heads, parse_events
from ledgit.core.historycheck import verify
from ledgit.core.historygrowth import describe_event, lost_in_text
from ledgit.core.lifecycle import lifecycle_problems
from ledgit.core.markers import RULE as MARKER_RULE
from ledgit.core.markers import marker_problem
from ledgit.core.record import Record, parse_record
from ledgit.core.schema import ID_CASE_RULE, case_twin_message, case_twins

LEDGIT_DIR = ".ledgit"
TASKS = "tasks"
HISTORY = "history"
TASK_SUFFIX = ".md"
HISTORY_SUFFIX = ".jsonl"
_LOCATED = re.compile(r"^(?P<path>.*?):(?P<line>\d+): (?P<rest>.*)$", re.DOTALL)


class Finding(NamedTuple):
    """One problem: the repository-relative ``path`` of the file, a 1-based ``line`` (0 = the
    whole file), the broken ``rule``, a one-line ``message`` and the ``commit`` it was seen
    at (None for the index or the working tree)."""

    path: str
    line: int
    rule: str
    message: str
    commit: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        head = f"{self.commit[:12]} " if self.commit else ""
        return f"{head}{where}: {self.rule}: {self.message}"


# --------------------------------------------------------------------------- paths


def prefix_of(path: str) -> str | None:
    """The board directory (``""``, ``"sub/"``) of a board file's repository path, else None."""
    for name in ("config.yaml", f"{TASKS}/", f"{HISTORY}/"):
        marker = f"{LEDGIT_DIR}/{name}"
        at = path.find(marker)
        while at != -1:
            if at == 0 or path[at - 1] == "/":
                return path[:at]
            at = path.find(marker, at + 1)
    return None


def task_paths(prefix: str, task_id: str) -> tuple[str, str]:
    """Repository-relative paths of a task's file and history."""
    base = f"{prefix}{LEDGIT_DIR}/"
    return f"{base}{TASKS}/{task_id}{TASK_SUFFIX}", f"{base}{HISTORY}/{task_id}{HISTORY_SUFFIX}"


def task_of(path: str, prefix: str) -> str | None:
    """The task id a repository path belongs to (its task file or history), else None."""
    base = f"{prefix}{LEDGIT_DIR}/"
    if not path.startswith(base):
        return None
    rest = path[len(base):]
    for sub, suffix in ((TASKS, TASK_SUFFIX), (HISTORY, HISTORY_SUFFIX)):
        if rest.startswith(sub + "/") and rest.endswith(suffix):
            name = rest[len(sub) + 1:-len(suffix)]
            if name and "/" not in name and not name.startswith("."):
                return name
    return None


# --------------------------------------------------------------------------- one task


def split_located(message: str, path: str) -> tuple[int, str]:
    """(line, rest) of a ``path:line: field: message`` LedgitError text about ``path``
    (:func:`ledgit.core.errors.located`); line 0 when it names no line."""
    m = _LOCATED.match(message)
    if m and m.group("path") == path:
        return int(m.group("line")), m.group("rest")
    if message.startswith(path + ": "):
        return 0, message[len(path) + 2:]
    return 0, message


def check_task(task_id: str, record_path: str, record_data: bytes | None, history_path: str,
               history_data: bytes | None, commit: str | None = None) -> list[Finding]:
    """Every problem of one task given its two files' bytes (None = absent).

    Rules: ``conflict-markers``; ``schema`` (the record does not parse, or its id is not the
    file name); ``lifecycle`` (DESIGN §4); ``orphan`` (a history without a task file);
    and the continuity rules of :func:`ledgit.core.historycheck.verify` (``missing``, ``parse``,
    ``hash``, ``heads``, ``record-head``, ...).
    """

    found: list[Finding] = []

    def add(path: str, line: int, rule: str, message: str) -> None:
        found.append(Finding(path, line, rule, message, commit))

    if record_data is None and history_data is None:
        return found
    damaged = False
    for path, data in ((record_path, record_data), (history_path, history_data)):
        marked = marker_problem(path, data)
        if marked:
            damaged = True
            add(path, marked[0], MARKER_RULE, marked[1])
    if damaged:
        return found
    if record_data is None:
        add(history_path, 0, "orphan", f"a history without a task file ({record_path})")
        return found
    record: Record | None = None
    error: str | None = None
    try:
        record = parse_record(record_data, record_path)
    except LedgitError as exc:
        error = exc.message
        line, message = split_located(exc.message, record_path)
        add(record_path, line, "schema", message)
    if record is not None and record.id != task_id:
        error = f"id {record.id!r} does not match the file name"
        add(record_path, _line_of_key(record_data, "id"), "schema", error)
        record = None
    text = None if history_data is None else history_data.decode("utf-8", errors="replace")
    for p in verify(task_id, text, record, error):
        if p.rule == "record-head":
            if error is None:
                add(record_path, 0, p.rule, p.message)
        elif p.rule == "missing":
            add(history_path, 0, p.rule, f"{p.message} ({history_path})")
        else:
            add(history_path, p.line, p.rule, p.message)
    if record is not None:
        for name, message in lifecycle_problems(record.fields):
            add(record_path, _line_of_key(record_data, name), "lifecycle", f"{name}: {message}")
    return found


def check_heads_and_markers(task_id: str, record_path: str, record_data: bytes | None,
                            history_path: str, history_data: bytes | None,
                            commit: str | None = None) -> list[Finding]:
    """The cheap checks that must pass for every task everywhere: no conflict markers in
    either file and a history with exactly one head (DESIGN §6)."""

    found: list[Finding] = []
    for path, data in ((record_path, record_data), (history_path, history_data)):
        marked = marker_problem(path, data)
        if marked:
            found.append(Finding(path, marked[0], MARKER_RULE, marked[1], commit))
    if history_data and not found:
        try:
            events = parse_events(history_data.decode("utf-8", errors="replace"), task_id)
        except HistoryError as exc:
            found.append(Finding(history_path, exc.problem.line, exc.problem.rule,
                                 exc.problem.message, commit))
            return found
        hs = heads(events)
        if len(hs) > 1:
            found.append(Finding(history_path, 0, "heads",
                                 f"expected one head, found {len(hs)}: "
                                 + ", ".join(h[:12] for h in hs) + " (merge it: ledgit resolve)",
                                 commit))
    return found


def _line_of_key(data: bytes | None, key: str) -> int:
    if data is None:
        return 0
    needle = key.encode() + b":"
    for n, line in enumerate(data.split(b"\n"), start=1):
        if line.startswith(needle):
            return n
        if n > 1 and line == b"---":
            break
    return 0


def check_files(files: Mapping[str, bytes], prefix: str, ids: Iterable[str] | None = None,
                commit: str | None = None, *, full: bool = True) -> tuple[int, list[Finding]]:
    """Check the tasks of a snapshot ``{repository path: bytes}`` (a tree or the index).

    ``ids``: the tasks to check (default: every task with a file in ``files``, and then
    also no two task files whose ids are equal under case folding, :func:`check_case`).
    ``full``: every rule (:func:`check_task`), else only heads and markers. Returns (tasks
    checked, findings).
    """
    wanted = set(ids) if ids is not None else {
        t for t in (task_of(p, prefix) for p in files) if t is not None}
    check = check_task if full else check_heads_and_markers
    found: list[Finding] = []
    for tid in sorted(wanted):
        md, hist = task_paths(prefix, tid)
        found += check(tid, md, files.get(md), hist, files.get(hist), commit)
    if ids is None:
        found += check_case(prefix, [p for p in files if p.endswith(TASK_SUFFIX)],
                            commit=commit)
    return len(wanted), found


def check_case(prefix: str, task_files: Iterable[str], new: Iterable[str] | None = None,
               commit: str | None = None) -> list[Finding]:
    """One ``id-case`` finding per task file of ``new`` (repository paths; default: all of
    ``task_files``) whose id equals another task file's id among ``task_files`` (the board
    ``prefix``'s task files in the snapshot) under case folding -- one file on macOS and
    Windows (:func:`ledgit.core.schema.case_twins`; issue 36) -- naming both paths."""
    ids = [t for t in (task_of(p, prefix) for p in task_files) if t is not None]
    entering = None if new is None else [t for t in (task_of(p, prefix) for p in new)
                                          if t is not None]
    found = []
    for tid, other in case_twins(ids, entering):
        md, twin = task_paths(prefix, tid)[0], task_paths(prefix, other)[0]
        found.append(Finding(md, 0, ID_CASE_RULE, case_twin_message(md, twin), commit))
    return found


# --------------------------------------------------------------------------- growth

GROWTH_RULE = "growth"  # an event of a parent commit's history is missing (DESIGN §8)
REMOVED_RULE = "removed"  # a task's files removed while it was not archived
MAX_LOST_LINES = 20  # lost events named one per line for one task; the rest are counted


def check_growth(task_id: str, record_path: str, history_path: str,
                 parent: tuple[bytes | None, bytes | None],
                 child: tuple[bytes | None, bytes | None], *, against: str,
                 rev: str | None = None, commit: str | None = None,
                 base_history: bytes | None = None,
                 way_back: str | None = None) -> tuple[list[Finding], list[str]]:
    """"A history only grows" (DESIGN §8) for one task: (findings, notes).

    ``parent``/``child``: the task's (record, history) bytes in the parent commit and in the
    new commit or the index (None = absent). ``against`` names the parent to a person
    ("HEAD", "MERGE_HEAD 1a2b3c4d5e6f", a commit id); ``rev`` is how Git names it in the way
    back (default ``against``). ``base_history``: check only the events the parent adds to it
    (what a cherry-pick or a rebase step takes). One ``growth`` finding per lost event (op,
    actor, time, id; at most :data:`MAX_LOST_LINES`, then a count) with the way back
    (``way_back``, default: redo the commit without dropping it). A task
    whose two files are both gone is allowed when its record was archived in the parent (a
    note says so), else one ``removed`` finding.
    """

    rev = rev or against
    findings: list[Finding] = []
    if child == (None, None) and base_history is None:
        if parent == (None, None):
            return [], []
        status = _status_of(parent[0], record_path)
        if status == "archived":
            return [], [f"{task_id}: task removed (archived in {against})"]
        n = len(lost_in_text(parent[1], None))
        return [Finding(record_path, 0, REMOVED_RULE,
                        f"{task_id} removed but not archived in {against} (status "
                        f"{status or 'unknown'}; {n} event(s) would vanish): archive it first "
                        f"(ledgit archive {task_id}), or bring it back: git checkout {rev} -- "
                        f"{record_path} {history_path}", commit)], []
    lost = lost_in_text(parent[1], child[1], base_history)
    way_back = way_back or (
        "the way back: redo the commit that dropped it without dropping it (a merge: again "
        "without -s ours, ledgit's merge driver keeps both sides; an undo: ledgit revert "
        "instead of git revert)")
    way_back += f"; to undo a change add an event: ledgit revert {task_id} EVENT"
    subject = f"staged {task_id}" if commit is None else task_id
    for event in lost[:MAX_LOST_LINES]:
        findings.append(Finding(history_path, 0, GROWTH_RULE,
                                f"{subject} loses an event of {against}: "
                                f"{describe_event(event)}; {way_back}", commit))
    if len(lost) > MAX_LOST_LINES:
        findings.append(Finding(history_path, 0, GROWTH_RULE,
                                f"{subject} loses {len(lost) - MAX_LOST_LINES} more event(s) "
                                f"of {against}; {way_back}", commit))
    return findings, []


def _status_of(record_data: bytes | None, path: str) -> str | None:
    """The ``status`` of a record's bytes, None when it does not parse."""
    if record_data is None:
        return None

    try:
        status = parse_record(record_data, path).fields.get("status")
    except LedgitError:
        return None
    return str(status) if status is not None else None
