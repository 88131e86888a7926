"""What the ``pre-commit`` and ``pre-merge-commit`` hooks check (DESIGN §8; docs/git.md):
the staged tasks of every board, one line per problem on stderr, exit 1 to stop the commit.

A task is checked when its file or its history is staged; the other file is read from the
index, which matches HEAD for every path that is not staged. Cost O(staged tasks), never
O(board). Two entry points, one check (:func:`check_staged`):

* :func:`check_in_hook`: as Git runs the hook, at the top of the work tree, from the answers
  of a :class:`ledgit.git.repository.StagedReader` (two git processes, no discovery);
* :func:`pre_commit`: from anywhere, with discovery, also while a merge, cherry-pick, revert
  or rebase is stopped (:func:`check_operation`: growth against what it brings in).

Imported by :mod:`ledgit.hooks.dispatch` while the reader's git processes run.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ledgit.core.errors import CHECK_FAILED, OK, USAGE, LedgitError
from ledgit.git import gitindex, objects, repository
from ledgit.git.refs import merge_base, squashed_tip
from ledgit.integration.configcheck import check_config, config_path
from ledgit.integration.hookmarks import note_checked
from ledgit.integration.links import LINK_RULE, link_message, links_in_raw, staged_links
from ledgit.integration.taskcheck import (
    TASK_SUFFIX,
    Finding,
    check_case,
    check_growth,
    check_task,
    prefix_of,
    task_of,
    task_paths,
)
from ledgit.storage.locate import LEDGIT_DIR, TASKS_DIR, find_root, git_dir_for

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def check_in_hook(cwd: str, reader: gitindex.StagedReader) -> int | None:
    """:func:`pre_commit` as Git runs it, at the top of the work tree ``cwd``: the staged
    paths of every board and their blob ids at HEAD and in the index from ``reader``'s
    ``git diff-index``, then every blob the check needs from its one ``git cat-file
    --batch``: the staged ones, HEAD's side of them, and for a task staged by half the other
    file's index entry (``:path``: not staged, so the same as at HEAD). Returns the exit
    code, or None where the reader cannot answer (an unborn branch): then :func:`pre_commit`
    does. The caller has checked that no merge, pick, revert or rebase is stopped. When the
    staged board changes pass and no task is staged by half, the hook notes them for this
    commit's ``reference-transaction`` hook (:func:`ledgit.integration.hookmarks.note_checked`),
    which then starts no ledgit."""
    changes = reader.changes()
    if changes is None:
        return None
    boards: dict[str, dict[str, gitindex.StagedChange]] = {}
    for path, change in changes.items():
        prefix = prefix_of(path)
        if prefix is not None:
            boards.setdefault(prefix, {})[path] = change
    tasks: list[str] = []
    notes: list[str] = []
    links = [Finding(p, 0, LINK_RULE, link_message(p)) for p in links_in_raw(reader.raw)]
    if not boards:
        return report(links, tasks, notes)
    halves = [p for prefix, found in boards.items() for p in _halves(prefix, found)]
    names = [*(oid for found in boards.values() for change in found.values()
               for oid in change if oid is not None), *(f":{p}" for p in halves)]
    blobs = reader.blobs(list(dict.fromkeys(names)))
    at_head = {p: blobs[f":{p}"] for p in halves}
    problems: list[Finding] = links
    for prefix in sorted(boards):
        staged: dict[str, bytes | None] = {}
        for path, (head, oid) in boards[prefix].items():
            staged[path] = None if oid is None else blobs[oid]
            at_head[path] = None if head is None else blobs[head]
        problems += check_staged(prefix, staged, at_head.get, tasks, notes, cwd,
                                 reader.listed)
    code = report(problems, tasks, notes)
    git_dir = git_dir_for(cwd) if code == OK and not halves else None
    if git_dir is not None:  # for this commit's reference-transaction hook: checked
        note_checked(git_dir, reader.raw)
    return code


def _halves(prefix: str, staged: Mapping[str, object]) -> list[str]:
    """The files of the staged tasks of board ``prefix`` that are not staged themselves."""
    ids = sorted({t for t in (task_of(p, prefix) for p in staged) if t is not None})
    return [p for t in ids for p in task_paths(prefix, t) if p not in staged]


def pre_commit(cwd: Path) -> int:
    """Check the staged tasks of every board with a staged file (docs/git.md, "Every board
    is guarded"); 0 when they pass, 1 (with one line each) when not. A staged history must
    keep every event of HEAD's, and during a merge, cherry-pick or rebase step what the
    commit takes from the other side (:func:`check_operation`, DESIGN §8). Git is asked
    through :mod:`ledgit.git.repository`: per board one ``git diff-index`` and one ``git cat-file``.
    Raises LedgitError (2) outside a work tree."""
    top = repository.toplevel(cwd)
    if top is None:
        raise LedgitError(f"{cwd}: not inside a Git work tree", USAGE)
    tasks: list[str] = []
    notes: list[str] = []
    problems = [Finding(p, 0, LINK_RULE, link_message(p))
                for p in staged_links(cwd, repository.head_oid(cwd) or objects._empty_tree(cwd))]
    paths = objects.staged_board_paths(cwd)
    for prefix in sorted({p for p in map(prefix_of, paths) if p is not None}):
        pairs = gitindex.staged_pairs(cwd, f"{prefix}{LEDGIT_DIR}/")
        at_head = {**objects.blobs_at(cwd, None, _halves(prefix, pairs)),
                   **{path: head for path, (head, _) in pairs.items()}}
        staged = {path: blob for path, (_, blob) in pairs.items()}
        problems += check_staged(prefix, staged, at_head.get, tasks, notes, str(top),
                                 lambda directory: gitindex.listed_paths(cwd, directory))
    problems += check_operation(cwd, paths, tasks, notes)
    return report(problems, tasks, notes)


def _board_prefix(cwd: str, top: str) -> str | None:
    """The board directory relative to ``top`` (``""`` or ``"sub/"``) of the board
    :func:`ledgit.storage.board.find_board` finds from ``cwd`` (``LEDGIT_ROOT``, else the nearest
    directory upward holding ``.ledgit/`` with ``tasks/`` or ``config.yaml``), without
    pathlib; None when there is none inside the work tree ``top``."""
    root, _pinned = find_root(cwd)
    if root is None:
        return None
    rel = os.path.relpath(os.path.realpath(root), os.path.realpath(top))
    if rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return "" if rel == os.curdir else rel.replace(os.sep, "/") + "/"


def check_staged(prefix: str, staged: Mapping[str, bytes | None],
                 other: Callable[[str], bytes | None], tasks: list[str],
                 notes: list[str] | None = None, top: str | None = None,
                 listed: Callable[[str], list[str]] | None = None) -> list[Finding]:
    """The problems of the staged tasks of one board (``prefix``: ``""`` or ``"sub/"``).

    ``staged``: repository path -> staged blob (None: deleted), the paths under the board
    that the index changes; ``other(path)``: a task's file at HEAD (which the index matches
    for what is not staged). The ids checked are appended to ``tasks``, notes (an archived
    task removed) to ``notes``. A staged config must load too, a staged temp file of an
    interrupted write is refused (issue 13), and a staged history must keep every event of
    HEAD's (:func:`ledgit.integration.taskcheck.check_growth`). ``top``: the work tree, to tell
    a pair staged by half (the other file changed but not staged) from a hand edit.
    ``listed(directory)``: the paths the index holds in a directory; asked only when a task
    file is added, whose id must not equal another's in the index under case folding
    (:func:`ledgit.integration.taskcheck.check_case`)."""
    problems: list[Finding] = []
    temp_dir = f"{prefix}{LEDGIT_DIR}/{TASKS_DIR}/"
    for path in sorted(staged):
        name = path[len(temp_dir):] if path.startswith(temp_dir) else ""
        if staged[path] is not None and name.startswith(".") and ".md.tmp-" in name:
            problems.append(Finding(path, 0, "temp-file", "the temp file of an interrupted "
                                    f"ledgit write is staged (unstage it: git rm --cached "
                                    f"{path}; ledgit doctor --repair removes it)", None))
    these = sorted({t for t in (task_of(p, prefix) for p in staged) if t is not None})
    tasks += these
    for task in these:
        md, hist = task_paths(prefix, task)
        data = {p: staged[p] if p in staged else other(p) for p in (md, hist)}
        if hist in staged:
            found, said = check_growth(
                task, md, hist, (other(md), other(hist)), (data[md], data[hist]),
                against="HEAD", way_back=f"the way back: git checkout HEAD -- {md} {hist}, "
                                         f"then redo the change with ledgit")
            problems += found
            if notes is not None:
                notes += said
            if data[md] is None and data[hist] is None:
                continue
        found = check_task(task, md, data[md], hist, data[hist])
        half = [p for p in (md, hist) if p not in staged]
        if top is not None and len(half) == 1 and any(f.rule == "record-head" for f in found):
            unstaged = half[0]
            try:
                with open(os.path.join(top, unstaged), "rb") as fh:
                    in_tree: bytes | None = fh.read()
            except OSError:
                in_tree = None
            if in_tree is not None and in_tree != data[unstaged]:
                staged_one = md if unstaged == hist else hist
                found = [f._replace(message=f"only {staged_one} of the pair is staged; "
                                            f"stage {unstaged} too (git add {unstaged})")
                         if f.rule == "record-head" else f for f in found]
        problems += found
    config = config_path(prefix)
    if staged.get(config) is not None:
        problems += check_config(config, staged[config] or b"")
    added = [p for p in staged if p.startswith(temp_dir) and p.endswith(TASK_SUFFIX)
             and staged[p] is not None and other(p) is None and task_of(p, prefix)]
    if added and listed is not None:
        problems += check_case(prefix, listed(temp_dir), added)
    return problems


def check_operation(cwd: Path, staged_paths: list[str], tasks: list[str],
                    notes: list[str]) -> list[Finding]:
    """Growth against what a stopped operation brings in (DESIGN §8; docs/git.md):

    * merge: every MERGE_HEAD is a parent of the new commit, so each of its histories must be
      kept whole -- the tasks where the index differs from it (``checkout --ours``,
      ``merge -s ours`` included);
    * rebase step (REBASE_HEAD): the new commit replaces the stopped one, which leaves the
      branch, so every event that commit added must be in the index;
    * cherry-pick: the histories the commit stages must hold every event the picked commit
      added to them (a task left as HEAD has it is a choice not to pick it; the picked commit
      still holds its events);
    * revert: HEAD is the only parent and holds the reverted events, which must stay (the
      HEAD check): undoing is a new event, ``ledgit revert TASK EVENT``;
    * squash (``git merge --squash``, SQUASH_MSG; issue 25): the commit has HEAD as its only
      parent, and the squashed branch may be deleted after it, so every event the squashed
      commits added since the merge base must be in the index.
    """
    heads = repository.operation_heads(cwd)
    if "merge" not in heads and repository.merging_heads():
        heads["merge"] = repository.merging_heads()
    found: list[Finding] = []
    jobs: list[tuple[str, str, list[str], str | None]] = []  # (label, rev, paths, base rev)
    for oid in heads.get("merge", []):
        jobs.append((f"MERGE_HEAD {oid[:12]}", oid, objects.index_diff_paths(cwd, oid), None))
    for operation, name in (("rebase", "REBASE_HEAD"), ("cherry-pick", "CHERRY_PICK_HEAD")):
        for oid in heads.get(operation, [])[:1]:
            picked_parents = objects.commit_parents(cwd, [oid]).get(oid, [])
            if not picked_parents or oid == repository.head_oid(cwd):
                continue  # a root commit adds to nothing; an `edit` stop is HEAD itself
            changed = objects.tree_diff_paths(cwd, picked_parents[0], oid)
            if operation == "cherry-pick":
                changed = sorted(set(changed) & set(staged_paths))
            jobs.append((f"{name} {oid[:12]}", oid, changed, picked_parents[0]))
    tip = squashed_tip(repository.git_dir(cwd)) if "merge" not in heads else None
    fork = merge_base(cwd, "HEAD", tip) if tip else None
    if tip and fork:
        jobs.append((f"the squashed {tip[:12]}", tip, objects.tree_diff_paths(cwd, fork, tip),
                     fork))
    for label, rev, paths, base in jobs:
        pairs = sorted({(p, t) for p, t in ((p, task_of(path, p)) for path in paths
                                            for p in [prefix_of(path)] if p is not None)
                        if t is not None})
        files = [f for p, t in pairs for f in task_paths(p, t)]
        ours = objects.blobs_at(cwd, None, files)
        theirs = objects.blobs_at(cwd, rev, files)
        before = objects.blobs_at(cwd, base, [f for f in files if f.endswith(".jsonl")]) \
            if base is not None else {}
        for prefix, task in pairs:
            md, hist = task_paths(prefix, task)
            if task not in tasks:
                tasks.append(task)
            more, said = check_growth(
                task, md, hist, (theirs[md], theirs[hist]), (ours[md], ours[hist]),
                against=label, rev=rev[:12],
                base_history=None if base is None else (before.get(hist) or b""),
                way_back=f"the way back: git checkout -m -- {md} {hist} (when Git stopped "
                         f"on a conflict in them: merges both sides again), then git add them"
                         + ("; or git merge --abort, then merge without -s ours"
                            if base is None else ""))
            found += more
            notes += said
    return found


def report(problems: list[Finding], tasks: list[str], notes: list[str] | None = None) -> int:
    """Write the notes and one line per problem to stderr; the hook's exit code (0, or 1
    when there is a problem, with a last line saying how to go on)."""
    for note in notes or ():
        _say(f"ledgit pre-commit: note: {note}")
    for p in problems:
        _say(f"ledgit pre-commit: {p}")
    if problems:
        _say(f"ledgit pre-commit: commit refused: {len(problems)} problem(s) in "
             f"{len(tasks)} staged task(s); fix them and `git add` again (a hand edit of a "
             f"task file is recorded with: ledgit record ID)")
        return CHECK_FAILED
    return OK
