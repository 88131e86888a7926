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

:func:`behind_head` is the opposite question, for ``ledgit doctor``: the tasks whose index or
work tree lacks events HEAD holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ledgit.core.errors import CHECK_FAILED, NOT_FOUND, OK, LedgitError
from ledgit.core.history import HistoryError, heads, parse_events, replay
from ledgit.core.historygrowth import lost_in_text
from ledgit.core.historymerge import merge_histories
from ledgit.core.record import parse_record, record_from_state
from ledgit.core.render import render_record
from ledgit.git import gitindex, objects, repository
from ledgit.integration.gate import board_prefixes
from ledgit.integration.taskcheck import prefix_of, task_of, task_paths
from ledgit.storage.ownership import make_dirs
from ledgit.storage.taskfiles import replace_board_file

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


class Behind(NamedTuple):
    """A task whose history in the index or the work tree lacks events HEAD's holds
    (:func:`behind_head`): its id, its two files, where (``"the index"``, ``"the work
    tree"``, or both) and how many events."""

    task: str
    files: tuple[str, str]
    where: str
    events: int


def behind_head(cwd: Path) -> list[Behind]:
    """The tasks of every board whose staged or checked-out history lacks events of HEAD's:
    HEAD, index and work tree disagree on them, as after a ``reset`` or ``checkout`` Git
    left half-done, or an older board taken into the work tree (``git checkout REV --
    .ledgit``). A task removed while HEAD has it archived is not one, nor an unmerged history
    (doctor names those for ``ledgit resolve``). Four git processes (two ``diff-index``, two
    ``cat-file``; an ``ls-files -u`` when a history is missing from the index); none on an
    unborn branch."""
    head = repository.head_oid(cwd)
    top = repository.toplevel(cwd)
    if head is None or top is None:
        return []
    staged = set(objects.index_diff_paths(cwd, head))
    changed = set(objects.worktree_diff_paths(cwd, head))
    hists = sorted(p for p in staged | changed if p.endswith(".jsonl") and _task_at(p))
    at_head = objects.blobs_at(cwd, head, hists + [_pair(h)[0] for h in hists])
    in_index = objects.blobs_at(cwd, None, hists)
    if any(in_index[h] is None for h in hists if h in staged):  # deleted, or unmerged
        unmerged = set(gitindex.conflicted_paths(cwd, ""))  # `ledgit resolve`'s, not ours
        hists = [h for h in hists if h not in unmerged]
    found: list[Behind] = []
    for hist in hists:
        md = _pair(hist)[0]
        if at_head[hist] is None or _archived(at_head[md], md):
            continue
        here = ([("the index", in_index[hist])] if hist in staged else []) + (
            [("the work tree", _read(top / hist))] if hist in changed else [])
        lost = {name: len(lost_in_text(at_head[hist], text)) for name, text in here}
        where = [name for name, n in lost.items() if n]
        if where:
            found.append(Behind(_task_at(hist) or hist, (md, hist), " and ".join(where),
                                max(lost.values())))
    return found


def _task_at(path: str) -> str | None:
    prefix = prefix_of(path)
    return None if prefix is None else task_of(path, prefix)


def _pair(hist: str) -> tuple[str, str]:
    prefix = prefix_of(hist) or ""
    return task_paths(prefix, task_of(hist, prefix) or "")


def _archived(record: bytes | None, path: str) -> bool:
    try:
        return record is not None and parse_record(record, path).fields.get("status") == \
            "archived"
    except LedgitError:
        return False


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _write(path: Path, data: bytes) -> None:
    """Write ``path`` whole (:func:`ledgit.storage.taskfiles.replace_board_file`), making its
    directory first where it is missing."""
    make_dirs(path.parent)
    replace_board_file(path, data)
