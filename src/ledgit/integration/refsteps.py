"""The steps of a stopped or running operation, for the ref guard (docs/git.md, "Every path
that moves a ref"): which operation's commit is being made (:func:`stopped_step`), and what
that step brings that the commit must keep (:func:`step_losses`) -- what the picked commit
added to its parent's history (a rebase step, a cherry-pick), or the history lines the patch
adds (``git am``). Git's own ``--abort`` undoes each of these, so the guard refuses there.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ledgit.git.refs import (
    am_patch,
    blobs,
    board_diff,
    first_parents,
    patch_additions,
    read_state_oid,
    sequencer_action,
)
from ledgit.integration.taskcheck import Finding, check_growth, prefix_of, task_of, task_paths

if TYPE_CHECKING:
    from collections.abc import Iterable

Step = tuple[str, "str | None"]  # (operation, the commit it picks: None for am and revert)


def tasks_in(paths: Iterable[str]) -> list[tuple[str, str]]:
    """(board prefix, task id) of every task file or history among ``paths``, sorted."""
    return sorted({(p, t) for path in paths for p in [prefix_of(path)] if p is not None
                   for t in [task_of(path, p)] if t is not None})


def rebasing(git_dir: str) -> bool:
    """Whether a rebase runs or is stopped in the worktree of ``git_dir`` (``rebase-merge/``,
    or ``rebase-apply/`` without ``git am``'s ``applying``)."""
    return os.path.isdir(os.path.join(git_dir, "rebase-merge")) or (
        os.path.isdir(os.path.join(git_dir, "rebase-apply"))
        and not os.path.exists(os.path.join(git_dir, "rebase-apply", "applying")))


def stopped_step(git_dir: str) -> Step | None:
    """(what, picked commit) of the operation whose commit is being made in ``git_dir``:
    ("am", None) while ``git am`` applies, ("cherry-pick", CHERRY_PICK_HEAD) -- written for
    every pick, clean or stopped --, ("revert", REVERT_HEAD or None while ``git revert`` of
    several commits runs), ("rebase", REBASE_HEAD) for a stopped rebase step being
    continued; None otherwise (a rebase's own pick included: :func:`rebasing` says so).
    Each of these has an ``--abort`` that puts HEAD, index and work tree back."""
    in_rebase = rebasing(git_dir)
    if os.path.exists(os.path.join(git_dir, "rebase-apply", "applying")):
        return "am", None
    if in_rebase:
        oid = read_state_oid(git_dir, "REBASE_HEAD")
        return ("rebase", oid) if oid is not None else None
    for name, what in (("CHERRY_PICK_HEAD", "cherry-pick"), ("REVERT_HEAD", "revert")):
        oid = read_state_oid(git_dir, name)
        if oid is not None:
            return what, oid
    action = sequencer_action(git_dir)
    return (action, None) if action is not None else None


def step_losses(cwd: str, git_dir: str, step: Step, old: str, new: str,
                way_back: str) -> list[Finding]:
    """The events a step commit ``new`` (on top of ``old``) loses of what the step brings:
    what the picked commit added to its first parent's history (rebase; cherry-pick: in the
    tasks ``new`` changes), or the history lines the patch adds (``am``). A revert brings
    nothing: undoing is a new event (``ledgit revert``). ``way_back``: the sentence of each
    finding, ``{rev}`` standing for the commit that holds the events."""
    what, picked = step
    found: list[Finding] = []
    if what in ("rebase", "cherry-pick") and picked is not None and picked != old:
        base = first_parents(cwd, [picked]).get(picked)
        if base is None:
            return found
        paths = board_diff(cwd, base, picked)
        if what == "cherry-pick":
            paths = sorted(set(paths) & set(board_diff(cwd, old, new)))
        hists = [task_paths(p, t)[1] for p, t in tasks_in(paths)]
        got = blobs(cwd, [f"{rev}:{h}" for rev in (picked, base, new) for h in hists])
        label = f"{'REBASE_HEAD' if what == 'rebase' else 'CHERRY_PICK_HEAD'} {picked[:12]}"
        for hist in hists:
            found += _lost_lines(hist, got[f"{picked}:{hist}"], got[f"{new}:{hist}"],
                                 got[f"{base}:{hist}"] or b"", label, new,
                                 way_back.replace(old[:12], picked[:12]))
    elif what == "am":
        patch = am_patch(git_dir)
        added = patch_additions(patch) if patch else {}
        hists = sorted(p for p in added if tasks_in([p]))
        got = blobs(cwd, [f"{new}:{h}" for h in hists])
        for hist in hists:
            found += _lost_lines(hist, added[hist], got[f"{new}:{hist}"], None,
                                 "the patch git am applies", new,
                                 way_back.replace(old[:12], "ORIG_HEAD"))
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
