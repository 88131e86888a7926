"""``ledgit resolve [PATH...]``: re-merge task files and histories that Git line-merged.

Where the ledgit merge driver did not run -- a clone without ``ledgit install``, a forge's
merge button, a libgit2 merge (DESIGN §7) -- Git falls back to its line merge and leaves
conflict markers, or commits them. This command recovers the two sides and merges them the
way the driver would:

* from the index stages 1 (base), 2 (ours) and 3 (theirs) while the path is unmerged
  (git-merge(1) "HOW CONFLICTS ARE PRESENTED", gitrevisions(7) ``:1:path``);
* otherwise from the conflict markers in the file: the text outside the marker regions plus
  one side's region gives that side; with ``merge.conflictStyle=diff3`` the ``|||||||``
  regions give the base.

A history is merged first (:func:`ledgit.core.merge.merge_histories`: the union of both sides'
events plus one merge event); its DAG then supplies the task file's base when the stages have
none (add/add: two copies of one task that share their genesis event) or only markers are
left. The result is written and ``git add``-ed. What needs a person -- overlapping body edits,
two different tasks under one id -- stays marked, and the command exits 1.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from ledgit.core.errors import CHECK_FAILED, OK, USAGE, LedgitError
from ledgit.core.history import (
    HistoryError,
    ancestors,
    heads,
    parse_events,
    render_history,
    replay,
    strip_lines,
)
from ledgit.core.historymerge import best_common_ancestor, import_root_of, merge_histories
from ledgit.core.importroot import add_add_base
from ledgit.core.merge import describe_provenance, merge_records
from ledgit.core.record import Record, parse_record, record_from_state
from ledgit.core.render import render_record
from ledgit.core.revision import revision_of
from ledgit.core.schema import is_valid_id
from ledgit.git import gitindex, repository
from ledgit.git.mergenames import rebase_names
from ledgit.integration.gate import board_prefix
from ledgit.integration.taskcheck import LEDGIT_DIR, task_of, task_paths
from ledgit.storage.taskfiles import replace_board_file

_START = re.compile(rb"^(<{7,})(?: |$)")


class Sides(NamedTuple):
    """A conflicted file's versions: ``base`` (None = unknown or absent), ``ours``, ``theirs``
    (None = absent on that side), and where they came from (``stages`` or ``markers``)."""

    base: bytes | None
    ours: bytes | None
    theirs: bytes | None
    source: str


def _added(sides: Sides) -> bool:
    """Whether the stages say the file is new on both sides (Git's add/add: no stage 1)."""
    return sides.source == "stages" and not sides.base and sides.ours is not None \
        and sides.theirs is not None


class Outcome(NamedTuple):
    """What resolving one task did: one line per action, and whether a person is needed."""

    task: str
    lines: list[str]
    needs_person: bool


# --------------------------------------------------------------------------- markers


def split_markers(data: bytes) -> tuple[bytes, bytes | None, bytes] | None:
    """(ours, base, theirs) rebuilt from a file with conflict markers, or None when it has
    none. ``base`` is None unless every region has a ``|||||||`` (diff3) section.

    Raises LedgitError (exit 1) for a region that is not closed.
    """
    ours: list[bytes] = []
    base: list[bytes] = []
    theirs: list[bytes] = []
    state = ""
    size = 7
    found = False
    all_have_base = True
    region_has_base = False
    for line in data.splitlines(keepends=True):
        bare = line.rstrip(b"\r\n")
        if not state:
            m = _START.match(bare)
            if m:
                size, state, found, region_has_base = len(m.group(1)), "ours", True, False
                continue
            ours.append(line)
            base.append(line)
            theirs.append(line)
        elif state == "ours":
            if _is_marker(bare, b"|", size):
                state, region_has_base = "base", True
            elif bare == b"=" * size:
                state = "theirs"
            else:
                ours.append(line)
        elif state == "base":
            if bare == b"=" * size:
                state = "theirs"
            else:
                base.append(line)
        elif _is_marker(bare, b">", size):
            state = ""
            all_have_base = all_have_base and region_has_base
        else:
            theirs.append(line)
    if not found:
        return None
    if state:
        raise LedgitError("a conflict region is not closed (no '>>>>>>>' line)", CHECK_FAILED)
    return b"".join(ours), (b"".join(base) if all_have_base else None), b"".join(theirs)


def _is_marker(line: bytes, char: bytes, size: int) -> bool:
    return line.startswith(char * size) and (len(line) == size or line[size:size + 1] == b" ")


# --------------------------------------------------------------------------- sides


def sides_of(cwd: Path, top: Path, path: str) -> Sides | None:
    """The versions of ``path`` to merge: its index stages when unmerged, else the sides in
    its conflict markers; None when neither."""
    base, ours, theirs = gitindex.conflict_stages(cwd, path)
    if ours is not None or theirs is not None:
        return Sides(base, ours, theirs, "stages")
    try:
        data = (top / path).read_bytes()
    except FileNotFoundError:
        return None
    split = split_markers(data)
    if split is None:
        return None
    o, b, t = split
    return Sides(b, o, t, "markers")


def _close_heads(text: str, task: str) -> tuple[str, str] | None:
    """Two overlapping halves of a history with several heads -- what the first head reaches,
    and every event but that head -- whose merge adds the missing merge event; None when the
    history has one head."""

    events = strip_lines(parse_events(text, task))
    hs = heads(events)
    if len(hs) < 2:
        return None
    reach = ancestors(events, hs[0])
    return (render_history(e for e in events if e["id"] in reach),
            render_history(e for e in events if e["id"] != hs[0]))


def merge_names(cwd: Path) -> tuple[str, str] | None:
    """(``HEAD``, the merged branch's name) while a ``git merge`` is stopped (``MERGE_HEAD``,
    named by ``git name-rev``), or a stopped rebase's names
    (:func:`ledgit.git.mergenames.rebase_names`), for conflict-marker labels as the driver
    writes them; None otherwise (each side's last actor and time)."""
    proc = repository.run_git(["name-rev", "--name-only", "--no-undefined", "MERGE_HEAD"], cwd,
                       check=False)
    name = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode == 0 and name:
        return "HEAD", name
    return rebase_names(os.fspath(repository.git_dir(cwd)))


def stage_if_unmerged(cwd: Path, files: Sequence[str | Path]) -> list[str]:
    """``git add`` ``files`` (a task file and its history) when any of them is unmerged in
    the index, as ``git mergetool`` does once a file is resolved; returns the files staged
    ([] when none was unmerged, or outside Git)."""
    if repository.toplevel(cwd) is None:
        return []
    names = [os.fspath(f) for f in files]
    unmerged = repository.run_git(["ls-files", "-u", "-z", "--", *names], cwd, check=False)
    if unmerged.returncode != 0 or not unmerged.stdout:
        return []
    present = [n for n in names if os.path.lexists(os.path.join(cwd, n))]
    repository.run_git(["add", "--", *present], cwd)
    return present


def multi_head_tasks(top: Path, prefix: str) -> list[str]:
    """Tasks whose history has more than one head and no conflict markers (what a web
    editor's "keep both", a ``merge=union`` attribute or a hand edit leaves): every event
    not named as a parent is a head. Reads each history once, without hashing."""
    found = []
    folder = top / f"{prefix}{LEDGIT_DIR}" / "history"
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else []:
        ids: set[str] = set()
        parents: set[str] = set()
        try:
            for line in path.read_bytes().splitlines():
                event = json.loads(line) if line.strip() else None
                if isinstance(event, dict) and isinstance(event.get("id"), str):
                    ids.add(event["id"])
                    parents.update(p for p in event.get("parents") or [] if isinstance(p, str))
        except (OSError, ValueError):
            continue  # unreadable or line-merged: verify names it; markers are found by grep
        if len(ids - parents) > 1:
            found.append(path.stem)
    return found


# --------------------------------------------------------------------------- one task


def resolve_task(cwd: Path, top: Path, prefix: str, task: str,
                 marker_size: int = 7, names: tuple[str, str] | None = None) -> Outcome:
    """Re-merge one task's history and file; write them, ``git add`` what was unmerged in
    the index and is now resolved, and name every other file it wrote to be staged.
    ``names``: conflict-marker labels (:func:`merge_names`)."""

    md_path, hist_path = task_paths(prefix, task)
    lines: list[str] = []
    resolved: list[str] = []
    written: list[str] = []
    person = False
    known_revisions: set[str] = set()

    # 1. the history: the union of both sides' events plus one merge event
    merged_text: str | None = None
    hsides = sides_of(cwd, top, hist_path)
    if hsides is not None and (hsides.ours is None or hsides.theirs is None):
        lines.append(f"{hist_path}: deleted on one side and changed on the other; "
                     f"decide by hand (git add or git rm it)")
        return Outcome(task, lines, True)
    try:
        if hsides is not None:
            assert hsides.ours is not None and hsides.theirs is not None
            res = merge_histories("", hsides.ours.decode("utf-8", errors="replace"),
                                  hsides.theirs.decode("utf-8", errors="replace"), task,
                                  marker_size, names if hsides.source == "stages" else None,
                                  added=_added(hsides))
            if res.conflict:
                lines.append(f"{hist_path}: {res.problem}; not fused (two different tasks "
                             f"under one id?)")
                return Outcome(task, lines, True)
            merged_text = res.text
            what = (f"merge event {res.event['id'][:12]} joins "
                    f"{len(res.event['parents'])} heads" if res.event else "one side held all")
            lines.append(f"{hist_path}: re-merged from {_source(hsides)}: {what}")
        elif (top / hist_path).is_file():
            text = (top / hist_path).read_text(encoding="utf-8", errors="replace")
            halves = _close_heads(text, task)
            if halves is not None:
                res = merge_histories("", halves[0], halves[1], task, marker_size)
                if not res.conflict and res.event is not None:
                    merged_text = res.text
                    known_revisions = {str(e["after"]) for e in parse_events(text, task)}
                    lines.append(f"{hist_path}: {len(res.event['parents'])} heads joined by "
                                 f"merge event {res.event['id'][:12]}")
            if merged_text is None:
                merged_text = text
    except HistoryError as exc:
        lines.append(f"{hist_path}: cannot merge: {exc} (fix the history by hand)")
        return Outcome(task, lines, True)
    if merged_text is not None and merged_text != _read(top, hist_path):
        replace_board_file(top / hist_path, merged_text.encode("utf-8"))
        written.append(hist_path)
    if hsides is not None and hsides.source == "stages":
        resolved.append(hist_path)

    # 2. the task file: field by field, with the base from the stages or the merged DAG
    msides = sides_of(cwd, top, md_path)
    history_head: Record | None = None
    states: dict[str, dict[str, object]] = {}
    events: list[dict[str, object]] = []
    if merged_text is not None:
        try:
            events = parse_events(merged_text, task)
            states = replay(events, task)
        except HistoryError:
            events, states = [], {}
    if states:

        hs = heads(events)
        if len(hs) == 1:
            history_head = record_from_state(states[hs[0]])
    if msides is None:
        if (hsides is not None or known_revisions) and history_head is not None:
            current = (top / md_path).read_bytes() if (top / md_path).is_file() else None
            parsed = _parses_to(current, md_path) if current is not None else None
            if (known_revisions and isinstance(parsed, Record)
                    and parsed.revision not in known_revisions | {history_head.revision}):
                person = True
                lines.append(f"{md_path}: holds a state none of the history's events has "
                             f"(an unrecorded hand edit?); left as it is: put the edit into "
                             f"the merged state by hand, then run: ledgit record {task}")
            elif parsed != history_head:
                lines.append(f"{md_path}: rewritten from the merged history's head")
                replace_board_file(top / md_path, render_record(history_head).encode("utf-8"))
                written.append(md_path)
            if hsides is not None and hsides.source == "stages":
                resolved.append(md_path)
    else:
        if msides.ours is None or msides.theirs is None:
            lines.append(f"{md_path}: deleted on one side and changed on the other; "
                         f"decide by hand (git add or git rm it)")
            return Outcome(task, lines, True)
        try:
            ours = parse_record(msides.ours, f"{md_path} (one side)")
            theirs = parse_record(msides.theirs, f"{md_path} (other side)")
        except LedgitError as exc:
            if history_head is None:
                lines.append(f"{exc} (fix the file by hand)")
                return Outcome(task, lines, True)
            ours = theirs = history_head
            lines.append(f"{md_path}: a side does not parse ({exc}); taken from the merged "
                         f"history")
        base: Record | None = None
        base_from = "none (both sides count as added)"
        if msides.base:
            try:
                base = parse_record(msides.base, f"{md_path} (base)")
                base_from = "index stage 1" if msides.source == "stages" else "diff3 base"
            except LedgitError:
                base = None
        if base is None and _added(msides) and import_root_of(events, states) is not None:
            base = add_add_base(ours, theirs)  # one task imported twice: the history's base
            base_from = "the import root (added on both sides)" if base else base_from
        if base is None or msides.source == "markers":
            by_rev = {_rev(s): eid for eid, s in states.items()}
            a, b = by_rev.get(ours.revision), by_rev.get(theirs.revision)
            if a is not None and b is not None:
                lca = best_common_ancestor(events, a, b)
                if lca is not None:
                    base = record_from_state(states[lca])
                    base_from = "the histories' common ancestor"
        result = merge_records(base, ours, theirs, marker_size,
                               names if msides.source == "stages" else None)
        replace_board_file(top / md_path, render_record(result.record).encode("utf-8"))
        changed = "; ".join(describe_provenance(k, v, result.rules.get(k))
                            for k, v in sorted(result.provenance.items()))
        lines.append(f"{md_path}: re-merged from {_source(msides)} (base: {base_from})"
                     + (f": {changed}" if changed else ""))
        lines += [f"{md_path}: {n}" for n in result.notes]
        if result.conflicts:
            person = True
            then = (f"ledgit record {task} (it adds {md_path} and {hist_path} to the index)"
                    if msides.source == "stages" else
                    f"ledgit record {task} && git add {md_path} {hist_path}")
            lines.append(f"{md_path}: overlapping edits of the {', '.join(result.conflicts)} "
                         f"left with conflict markers; edit the file, then run: {then}")
        elif msides.source == "stages":
            resolved.append(md_path)
        else:
            written.append(md_path)
        if history_head is not None and result.record != history_head and not result.conflicts:
            person = True
            lines.append(f"{md_path}: the merged file differs from its merged history "
                         f"(a side holds unrecorded hand edits); run: ledgit record {task}")
    if resolved:
        repository.run_git(["add", "--", *resolved], top)
    unstaged = [p for p in dict.fromkeys(written) if p not in resolved]
    if unstaged and not person:
        lines.append(f"{task}: stage the result: git add {' '.join(unstaged)}")
    return Outcome(task, lines, person)


def _rev(state: dict[str, object]) -> str:
    return revision_of(state)


def _parses_to(data: bytes, path: str) -> object:
    try:
        return parse_record(data, path)
    except LedgitError:
        return None


def _source(sides: Sides) -> str:
    return "the index stages" if sides.source == "stages" else "its conflict markers"


def _read(top: Path, path: str) -> str | None:
    try:
        return (top / path).read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


# --------------------------------------------------------------------------- the command


def conflicted_tasks(cwd: Path, top: Path, prefix: str) -> list[str]:
    """Tasks with an unmerged file in the index, conflict markers in the work tree, or a
    history with more than one head (:func:`multi_head_tasks`)."""
    board = f"{prefix}{LEDGIT_DIR}/"
    paths = set(gitindex.conflicted_paths(cwd, board))
    grep = repository.run_git(["grep", "-l", "-z", "-E", "-e", "^<{7,}( |$)", "--", f"{board}tasks",
                        f"{board}history"], top, check=False)
    paths.update(os.fsdecode(p) for p in grep.stdout.split(b"\0") if p)
    found = {t for t in (task_of(p, prefix) for p in paths) if t is not None}
    return sorted(found | set(multi_head_tasks(top, prefix)))


def resolve(cwd: Path, paths: Sequence[str] = ()) -> tuple[int, list[str]]:
    """Resolve the tasks ``paths`` name (task files, histories or ids; default: every
    conflicted task). Returns (exit code, report lines): 0 when everything was resolved,
    1 when something needs a person."""
    top = repository.toplevel(cwd)
    if top is None:
        raise LedgitError(f"{cwd}: not inside a Git work tree (ledgit resolve needs one)", USAGE)
    prefix = board_prefix(cwd)
    if paths:
        tasks = sorted({_task_named(cwd, top, prefix, p) for p in paths})
    else:
        tasks = conflicted_tasks(cwd, top, prefix)
    if not tasks:
        return OK, ["nothing to resolve: no conflicted task files, no conflict markers and "
                    "no history with more than one head"]
    report: list[str] = []
    code = OK
    names = merge_names(top)
    for task in tasks:
        outcome = resolve_task(cwd, top, prefix, task, names=names)
        if not outcome.lines:
            outcome.lines.append(f"{task}: nothing to resolve")
        report += outcome.lines
        if outcome.needs_person:
            code = CHECK_FAILED
    return code, report


def _task_named(cwd: Path, top: Path, prefix: str, text: str) -> str:
    full = os.path.realpath(os.path.join(cwd, text))
    rel = os.path.relpath(full, os.path.realpath(top)).replace(os.sep, "/")
    task = task_of(rel, prefix)
    if task is not None:
        return task

    if is_valid_id(text) and any((top / p).exists() for p in task_paths(prefix, text)):
        return text
    raise LedgitError(f"{text}: not a ledgit task file or history", USAGE)
