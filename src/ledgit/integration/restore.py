"""``ledgit restore-events REV [TASK...]``: bring back into the work tree every event a commit held
that the checked-out histories lack (DESIGN §12; docs/git.md, "Every path that moves a ref").

The way back where a history lost events on a path no hook could refuse (hooks bypassed, a clone
without ``ledgit install``, a forge), or where the ref guard refused a move the person still
wants: the commit that had the events is still in the reflog (``ORIG_HEAD``, ``feature@{1}``,
the old tip the refusal names). Per task: the union of both histories with one merge event
joining their heads (:func:`ledgit.core.historymerge.merge_histories`, as the merge driver
does), and the task file rewritten from the merged head. A task whose files are gone comes back
as ``REV`` had it. A task file holding an unrecorded hand edit is left alone (record it first).
Nothing is staged: the lines say what to ``git add``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ledgit.core.errors import CHECK_FAILED, NOT_FOUND, OK, LedgitError
from ledgit.core.history import HistoryError, heads, parse_events, replay
from ledgit.core.historygrowth import lost_in_text
from ledgit.core.historymerge import merge_histories
from ledgit.core.record import parse_record, record_from_state
from ledgit.core.render import render_record
from ledgit.git import objects, repository
from ledgit.integration.gate import board_prefixes
from ledgit.integration.taskcheck import task_of, task_paths
from ledgit.storage.ownership import adopt_path, make_dirs

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path


def restore_events(cwd: Path, rev: str, tasks: Sequence[str] = ()) -> tuple[int, list[str]]:
    """Restore the events of commit ``rev`` that the work tree's histories lack, for
    ``tasks`` (default: every task with a history at ``rev``). Returns (exit code, lines):
    0 when every task holds every event of ``rev`` afterwards, 1 when a task was left alone
    (one line says why), 4 when ``rev`` is no commit. Raises LedgitError (2) outside a work
    tree."""
    top = repository.toplevel(cwd)
    if top is None:
        raise LedgitError(f"{cwd}: not inside a Git work tree (restore-events needs one)", 2)
    try:
        commit = objects.resolve_commit(cwd, rev)
    except LedgitError as exc:
        raise LedgitError(f"restore-events: {rev}: not a commit ({exc.message})",
                          NOT_FOUND) from exc
    lines: list[str] = []
    code = OK
    staged: list[str] = []
    wanted = set(tasks)
    for prefix in board_prefixes(cwd, [commit]):
        paths = [p for p in objects.board_paths_at(cwd, commit) if task_of(p, prefix)]
        ids = sorted({t for t in (task_of(p, prefix) for p in paths) if t is not None
                      and (not wanted or t in wanted)})
        files = [f for t in ids for f in task_paths(prefix, t)]
        theirs = objects.blobs_at(cwd, commit, files)
        for task in ids:
            md, hist = task_paths(prefix, task)
            result = _restore_one(top, task, md, hist, theirs[md], theirs[hist], commit)
            if result is None:
                continue
            line, wrote = result
            lines.append(line)
            if wrote:
                staged += wrote
            else:
                code = CHECK_FAILED
        wanted -= set(ids)
    for task in sorted(wanted):
        lines.append(f"{task}: no history at {commit[:12]}; nothing to restore")
        code = CHECK_FAILED
    if staged:
        lines.append(f"stage the result: git add {' '.join(staged)}")
    elif code == OK:
        lines.append(f"nothing to restore: every event of {commit[:12]} is here")
    return code, lines


def _restore_one(top: Path, task: str, md: str, hist: str, their_md: bytes | None,
                 their_hist: bytes | None, commit: str) -> tuple[str, list[str]] | None:
    """(line, files written) for one task; None when nothing of ``commit`` is missing;
    files written empty when the task was left alone."""
    try:
        ours_hist: bytes | None = (top / hist).read_bytes()
    except FileNotFoundError:
        ours_hist = None
    lost = lost_in_text(their_hist, ours_hist)
    if not lost:
        return None
    if ours_hist is None or not (top / md).is_file():
        if their_md is None or their_hist is None:
            return f"{task}: {hist}: gone here and incomplete at {commit[:12]}; left alone", []
        _write(top / md, their_md)
        _write(top / hist, their_hist)
        return (f"{task}: brought back as {commit[:12]} had it ({len(lost)} event(s))",
                [md, hist])
    try:
        ours_text = ours_hist.decode("utf-8")
        events = parse_events(ours_text, task)
        states = replay(events, task)
        current = parse_record((top / md).read_bytes(), md)
        hs = heads(events)
        if len(hs) == 1 and record_from_state(states[hs[0]]) != current:
            return (f"{task}: {md} holds an unrecorded hand edit; left alone (record it "
                    f"first: ledgit record {task}, then run restore-events again)"), []
        res = merge_histories("", ours_text, (their_hist or b"").decode("utf-8"), task)
        if res.conflict:
            return f"{task}: {hist}: cannot merge with {commit[:12]}: {res.problem}", []
        merged = parse_events(res.text, task)
        head = heads(merged)
        record = record_from_state(replay(merged, task)[head[0]])
    except (HistoryError, LedgitError, UnicodeDecodeError, KeyError, IndexError) as exc:
        return f"{task}: cannot restore: {exc} (ledgit verify {task} names the damage)", []
    _write(top / hist, res.text.encode("utf-8"))
    _write(top / md, render_record(record).encode("utf-8"))
    joined = f"; merge event {res.event['id'][:12]} joins the heads" if res.event else ""
    return f"{task}: restored {len(lost)} event(s) of {commit[:12]}{joined}", [md, hist]


def _write(path: Path, data: bytes) -> None:
    """Write ``path`` whole through a temp file and a rename (no half-written task file)."""
    make_dirs(path.parent)
    tmp = path.with_name(f".{path.name}.tmp-restore-{os.getpid()}")
    tmp.write_bytes(data)
    adopt_path(tmp)  # root in another user's board: theirs (issue 36)
    os.replace(tmp, path)
