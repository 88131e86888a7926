"""The ref guard: "a history only grows" on every path that makes a commit or moves a ref
(DESIGN §8 and §12; docs/git.md, "Every path that moves a ref").

Git makes commits without running ``pre-commit`` (``rebase --continue``, ``am --continue``,
``cherry-pick --continue``, ``revert --continue``, the sequencer's picks) and moves branches by
other commands (``commit --amend``, ``reset``, ``rebase``'s last step, ``branch -f``,
``update-ref``). Every one of them updates refs in a transaction, and Git runs the
``reference-transaction`` hook with the state ``prepared`` before it commits that transaction:
a non-zero exit there aborts it and the ref does not move (githooks(5)). So this hook refuses:

* a **step**: a commit on top of HEAD while a rebase, ``am``, cherry-pick or revert is stopped
  (``REBASE_HEAD``, ``rebase-apply/``, ``CHERRY_PICK_HEAD``, ``REVERT_HEAD``) must hold every
  event the step brings (what the picked commit added to its parent's history, or the
  history lines the patch adds) and every event of its parent;
* a **move** of a branch (``refs/heads/*``) to a commit that is not a child of its old tip:
  every event of the old tip must be in the new tip (an archived task's files may go), or,
  for the branch HEAD is on, still in the index (``reset --soft`` keeps them to be committed).

A plain commit (the new tip's first parent is the old tip, nothing stopped) is the pre-commit
hook's and costs one ``git rev-list``. ``LEDGIT_ALLOW_REWRITE=1`` lets a deliberate rewrite
through (a note says what it drops). The way back is named on the refusal; events already lost
on a path no hook guards come back with ``ledgit restore-events REV``
(:mod:`ledgit.integration.restore`).

The same comparison of two tips is ``ledgit verify --ref-update OLD NEW`` and the
``pre-receive`` hook's check of a forced push (:func:`check_ref_update`).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ledgit.core.errors import CHECK_FAILED, OK
from ledgit.core.historygrowth import lost_in_text
from ledgit.git.refs import (
    am_patch,
    blobs,
    board_diff,
    first_parents,
    is_zero,
    patch_additions,
    read_state_oid,
    symbolic_head,
)
from ledgit.integration.taskcheck import Finding, check_growth, prefix_of, task_of, task_paths
from ledgit.storage.locate import git_dir_for

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

ALLOW_ENV = "LEDGIT_ALLOW_REWRITE"  # set (not "" or "0"): a deliberate rewrite goes through
Update = tuple[str, str, str]  # (old oid, new oid, ref name) as Git gives them


def _say(line: str) -> None:
    print(line, file=sys.stderr)


def allowed() -> bool:
    """Whether the person asked for a deliberate rewrite (``LEDGIT_ALLOW_REWRITE=1``)."""
    return os.environ.get(ALLOW_ENV, "") not in ("", "0")


def parse_updates(text: str) -> list[Update]:
    """The ``<old> SP <new> SP <ref>`` lines of the hook's stdin (githooks(5))."""
    found: list[Update] = []
    for line in text.splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3:
            found.append((parts[0], parts[1], parts[2].strip()))
    return found


# --------------------------------------------------------------------------- two tips


def _tasks_in(paths: Iterable[str]) -> list[tuple[str, str]]:
    """(board prefix, task id) of every task file or history among ``paths``, sorted."""
    return sorted({(p, t) for path in paths for p in [prefix_of(path)] if p is not None
                   for t in [task_of(path, p)] if t is not None})


def lost_between(cwd: str, old: str, new: str, *, label: str,
                 way_back: str) -> tuple[list[Finding], list[str], list[str]]:
    """Every event of commit ``old``'s histories that commit ``new`` lacks (a task whose
    files are both gone is allowed when it was archived at ``old``): (findings, notes, the
    history paths that lose events). ``label`` names ``old`` to a person. Two git
    processes: one ``diff-tree`` over the board paths, one ``cat-file --batch``."""
    pairs = _tasks_in(board_diff(cwd, old, new))
    if not pairs:
        return [], [], []
    files = [f for p, t in pairs for f in task_paths(p, t)]
    got = blobs(cwd, [f"{rev}:{f}" for rev in (old, new) for f in files])
    found: list[Finding] = []
    notes: list[str] = []
    losing: list[str] = []
    for prefix, task in pairs:
        md, hist = task_paths(prefix, task)
        more, said = check_growth(
            task, md, hist, (got[f"{old}:{md}"], got[f"{old}:{hist}"]),
            (got[f"{new}:{md}"], got[f"{new}:{hist}"]), against=label, rev=old[:12],
            commit=new, way_back=way_back)
        if more:
            losing.append(hist)
        found += more
        notes += said
    return found, notes, losing


def check_ref_update(cwd: str, old: str, new: str, ref: str = "the ref") -> tuple[
        list[Finding], list[str]]:
    """``verify --ref-update OLD NEW`` and the pre-receive check of a forced push: the
    events reachable from ``old`` (its tip's histories, which hold every ancestor's when each
    commit grew) that ``new`` loses. A creation, a deletion or a fast-forward whose tip keeps
    them passes. Returns (findings, notes)."""
    if is_zero(old) or is_zero(new) or old == new:
        return [], []
    found, notes, _ = lost_between(
        cwd, old, new, label=f"{ref} {old[:12]}",
        way_back=f"the way back: push (or reset to) a tip that keeps them, e.g. after "
                 f"`ledgit restore-events {old[:12]}` and a commit; a deliberate rewrite: "
                 f"{ALLOW_ENV}=1, or `git push -o ledgit.allow-rewrite`")
    return found, notes


# --------------------------------------------------------------------------- one step


def _step(git_dir: str) -> tuple[str, str | None] | None:
    """(what, picked commit) of the operation stopped in ``git_dir`` whose next commit the
    guard checks: ("rebase", REBASE_HEAD), ("cherry-pick", CHERRY_PICK_HEAD), ("revert",
    REVERT_HEAD) or ("am", None); None when none is."""
    rebasing = os.path.isdir(os.path.join(git_dir, "rebase-merge")) or \
        os.path.isdir(os.path.join(git_dir, "rebase-apply"))
    if os.path.exists(os.path.join(git_dir, "rebase-apply", "applying")):
        return "am", None
    for name, what in (("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert"),
                       ("REBASE_HEAD", "rebase")):
        oid = read_state_oid(git_dir, name)
        if oid is not None and (what != "rebase" or rebasing):
            return what, oid
    return None


def step_losses(cwd: str, git_dir: str, old: str, new: str) -> list[Finding]:
    """The events a step commit ``new`` (on top of ``old``) loses: those of ``old`` (its
    parent) and those the step brings -- what the picked commit added to its first parent's
    history (rebase, cherry-pick: the tasks ``new`` changes), or the history lines the patch
    adds (``am``). A revert brings nothing: undoing is a new event (``ledgit revert``)."""
    step = _step(git_dir)
    if step is None:
        return []
    what, picked = step
    way = {"rebase": "git rebase --continue", "cherry-pick": "git cherry-pick --continue",
           "revert": "git revert --continue", "am": "git am --continue"}[what]
    redo = (f"the way back: bring them into the index (git checkout -m -- FILES when Git "
            f"stopped on a conflict there, or ledgit restore-events {{rev}}), git add, then "
            f"{way} again; or give up the {what}: git {what} --abort")
    found, _, _ = lost_between(cwd, old, new, label=f"HEAD {old[:12]}",
                               way_back=redo.format(rev=old[:12]))
    if what in ("rebase", "cherry-pick") and picked is not None and picked != old:
        base = first_parents(cwd, [picked]).get(picked)
        if base is None:
            return found
        paths = board_diff(cwd, base, picked)
        if what == "cherry-pick":
            paths = sorted(set(paths) & set(board_diff(cwd, old, new)))
        hists = [task_paths(p, t)[1] for p, t in _tasks_in(paths)]
        got = blobs(cwd, [f"{rev}:{h}" for rev in (picked, base, new) for h in hists])
        label = f"{'REBASE_HEAD' if what == 'rebase' else 'CHERRY_PICK_HEAD'} {picked[:12]}"
        for hist in hists:
            found += _lost_lines(hist, got[f"{picked}:{hist}"], got[f"{new}:{hist}"],
                                 got[f"{base}:{hist}"] or b"", label, new,
                                 redo.format(rev=picked[:12]))
    elif what == "am":
        patch = am_patch(git_dir)
        added = patch_additions(patch) if patch else {}
        hists = sorted(p for p in added if _tasks_in([p]))
        got = blobs(cwd, [f"{new}:{h}" for h in hists])
        for hist in hists:
            found += _lost_lines(hist, added[hist], got[f"{new}:{hist}"], None,
                                 "the patch git am applies", new,
                                 redo.format(rev="ORIG_HEAD"))
    return found


def _lost_lines(hist: str, theirs: bytes | None, mine: bytes | None, base: bytes | None,
                label: str, commit: str, way_back: str) -> list[Finding]:
    """One growth finding per event of ``theirs`` (beyond ``base``) missing from ``mine``."""
    prefix = prefix_of(hist) or ""
    task = task_of(hist, prefix) or hist
    md = task_paths(prefix, task)[0]
    found, _ = check_growth(task, md, hist, (b"", theirs), (b"", mine), against=label,
                            commit=commit, base_history=base if base is not None else b"",
                            way_back=way_back)
    return found


# --------------------------------------------------------------------------- the hook


def check_transaction(cwd: str, updates: Sequence[Update]) -> int:
    """``ledgit hook reference-transaction prepared``: 0 to let the transaction commit, 1
    (one line per lost event, then how to go on) to abort it. ``cwd``: where Git runs the
    hook (the work tree top; the git directory of a bare repository)."""
    wanted = [(o, n, r) for o, n, r in updates
              if (r == "HEAD" or r.startswith("refs/heads/")) and not is_zero(o)
              and not is_zero(n) and o != n]
    if not wanted:
        return OK
    git_dir = git_dir_for(cwd)
    bare = git_dir is None
    if git_dir is None:
        if not os.path.isfile(os.path.join(cwd, "HEAD")):
            return OK
        git_dir = cwd
    pairs = list(dict.fromkeys((o, n) for o, n, _ in wanted))
    parents = first_parents(cwd, [n for _, n in pairs])
    found: list[Finding] = []
    notes: list[str] = []
    head_branch: str | None | bool = False  # not asked yet
    for old, new in pairs:
        refs = [r for o, n, r in wanted if (o, n) == (old, new)]
        if parents.get(new) == old:
            if "HEAD" in refs:
                found += step_losses(cwd, git_dir, old, new)
            continue
        branches = [r for r in refs if r.startswith("refs/heads/")]
        if not branches:
            continue
        name = branches[0]
        more, said, losing = lost_between(
            cwd, old, new, label=f"{name.removeprefix('refs/heads/')} {old[:12]}",
            way_back=_move_way_back(old))
        if more and not bare:  # a bare repository has no index to look in
            if head_branch is False:
                head_branch = symbolic_head(cwd)
            if head_branch in branches and _index_keeps(cwd, old, losing):
                more = []  # reset --soft: the index still holds them, to be committed
        found += more
        notes += said
    if found and allowed():
        for f in found:
            _say(f"ledgit reference-transaction: note: allowed by {ALLOW_ENV}: {f}")
        return OK
    for note in notes:
        _say(f"ledgit reference-transaction: note: {note}")
    for f in found:
        _say(f"ledgit reference-transaction: {f}")
    if found:
        _say(f"ledgit reference-transaction: ref update refused: {len(found)} event(s) would "
             f"leave the history (DESIGN §8, a history only grows); to rewrite on purpose: "
             f"{ALLOW_ENV}=1 git ...")
        return CHECK_FAILED
    return OK


def _move_way_back(old: str) -> str:
    return (f"the way back: a rebase: git rebase --abort; a reset: git reset --hard HEAD "
            f"(HEAD did not move); to keep the new tip and bring the events back: "
            f"ledgit restore-events {old[:12]}, then commit")


def _index_keeps(cwd: str, old: str, histories: Sequence[str]) -> bool:
    """Whether the index holds every event ``old`` has in ``histories``."""
    got = blobs(cwd, [n for h in histories for n in (f"{old}:{h}", f":{h}")])
    return all(not lost_in_text(got[f"{old}:{h}"], got[f":{h}"]) for h in histories)
