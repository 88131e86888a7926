"""The ref guard: "a history only grows" on every path that makes a commit or moves a ref
(DESIGN §8 and §12; docs/git.md, "Every path that moves a ref").

Git makes commits without running ``pre-commit`` (``git revert``, ``cherry-pick``, ``am``,
``rebase --continue``, the sequencer's picks, ``commit --no-verify``) and moves branches by
other commands (``commit --amend``, ``reset``, a rebase's end, ``branch -f``, ``update-ref``,
``checkout -B``, ``filter-branch``). Every one of them updates refs in a transaction, and Git
runs the ``reference-transaction`` hook with the state ``prepared`` before it commits it: a
non-zero exit there aborts it and the ref does not move (githooks(5)). But some commands have
already rewritten the index and the work tree by then, and an abort leaves them half-done
(HEAD on the old commit, the files of the new one). So the guard refuses only where refusing
leaves Git whole, and elsewhere lets the ref move and says, in one line, which events left and
how to bring them back (``ledgit restore-events OLD``, :mod:`ledgit.integration.restore`):

* a **commit** on top of HEAD (the new value's first parent is the old one) must keep every
  event of its parent, hold records that agree with their histories, and -- while a rebase,
  ``am``, cherry-pick or revert is stopped or running (``REBASE_HEAD``, ``rebase-apply/``,
  ``CHERRY_PICK_HEAD``, ``REVERT_HEAD``, ``sequencer/``) -- every event the step brings (what
  the picked commit added to its parent's history, the history lines the patch adds). A step
  is refused: Git's own ``--abort`` puts everything back. A commit outside a step (a clean
  ``git revert``, ``revert -m 1``, ``commit --no-verify``) has no ``--abort`` and stands, with
  the line. A fast-forward or reset to a child (the git process saved ``ORIG_HEAD``) made no
  commit here: the commit was checked where it was made;
* a **move** of a branch to a commit that is not a child of its old tip: every event of the
  old tip must be in the new tip. Refused where Git has not touched the index (``branch -f``,
  ``update-ref``, ``filter-branch``, ``commit --amend``, ``reset --soft``, a fetch or push into
  a branch) and at a rebase's end (``git rebase --abort``); let through with the line where
  Git rewrote the index first (``reset --hard``/``--mixed``/``--merge``/``--keep``,
  ``checkout -B``, ``switch -C``, a fast-forward merge, ``am``/``cherry-pick``/``revert
  --abort``). A ``reset --soft`` whose index still holds the events (to be committed again)
  passes. Where Git hands the hook zeros for the old value, the ref's value now is its real
  old value (:func:`resolve_moves`).

The hook's shell block (:mod:`ledgit.integration.hookblock`) starts ledgit only where there is
something to check. ``LEDGIT_ALLOW_REWRITE=1`` lets a deliberate rewrite through (notes say
what it drops). The same comparison of two tips is ``ledgit verify --ref-update OLD NEW`` and
the ``pre-receive`` hook's check of a forced push (:func:`check_ref_update`), which refuse.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, NamedTuple

from ledgit.core.errors import CHECK_FAILED, OK
from ledgit.core.historygrowth import describe_event, lost_in_text
from ledgit.git.refs import (
    blobs,
    board_diff,
    index_differs_from,
    index_locked,
    is_zero,
    parents_of,
    paths_between,
    ref_values,
    symbolic_head,
)
from ledgit.integration.afterrewrite import lines_after_rewrite
from ledgit.integration.hookmarks import PID_ENV, saved_orig_head
from ledgit.integration.refsteps import rebasing, step_losses, stopped_step, tasks_in
from ledgit.integration.taskcheck import Finding, check_growth, check_task, task_paths
from ledgit.storage.locate import git_dir_for

if TYPE_CHECKING:
    from collections.abc import Sequence

ALLOW_ENV = "LEDGIT_ALLOW_REWRITE"  # set (not "" or "0"): a deliberate rewrite goes through
Update = tuple[str, str, str]  # (old oid, new oid, ref name) as Git gives them
PREFIX = "ledgit reference-transaction: "
MAX_NAMED = 5  # events named in the one line of a move that stands; the rest are counted


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


class Move(NamedTuple):
    """One guarded change of a transaction: ``HEAD`` and branches (``refs``) going from
    commit ``old`` to commit ``new``; ``named``: Git named the old value (False: it gave
    zeros, as ``checkout -B``, ``switch -C``, ``branch -f`` and ``update-ref`` without OLD
    do, and ``old`` is the ref's value before the transaction)."""

    old: str
    new: str
    refs: tuple[str, ...]
    named: bool

    @property
    def branches(self) -> list[str]:
        return [r for r in self.refs if r.startswith("refs/heads/")]


def resolve_moves(cwd: str, updates: Sequence[Update]) -> list[Move]:
    """The guarded moves among ``updates``: ``HEAD`` and ``refs/heads/*``, neither created nor
    deleted nor left where they were, grouped by (old, new). A zero old value is replaced by
    the ref's value now (one ``git cat-file --batch-check``): in the ``prepared`` state the
    transaction has not moved it yet; a ref with no value is a creation."""
    guarded = [(o, n, r) for o, n, r in updates
               if (r == "HEAD" or r.startswith("refs/heads/")) and not is_zero(n)]
    now = ref_values(cwd, [r for o, _, r in guarded if is_zero(o)])
    grouped: dict[tuple[str, str, bool], list[str]] = {}
    for old, new, ref in guarded:
        named = not is_zero(old)
        real = old if named else now.get(ref)
        if real is not None and real != new:
            grouped.setdefault((real, new, named), []).append(ref)
    return [Move(o, n, tuple(refs), named) for (o, n, named), refs in grouped.items()]


# --------------------------------------------------------------------------- two tips


class Lost(NamedTuple):
    """What commit ``new`` lacks of commit ``old`` (:func:`lost_between`): the findings,
    notes (an archived task removed), the histories that lose events, and the lost events
    named to a person (``T-x: op by actor at time (id)``), task by task."""

    findings: list[Finding]
    notes: list[str]
    losing: list[str]
    events: list[str]
    tasks: list[tuple[str, str]]


def lost_between(cwd: str, old: str, new: str, *, label: str, way_back: str,
                 check_new: bool = False) -> Lost:
    """Every event of commit ``old``'s histories that commit ``new`` lacks (a task whose
    files are both gone is allowed when it was archived at ``old``). ``label`` names ``old``
    to a person. ``check_new``: also every rule of one task (:func:`check_task`: a record
    that disagrees with its history, markers, schema...) on each task ``new`` changes. Two
    git processes: one ``diff-tree`` over the board paths, one ``cat-file --batch``."""
    pairs = tasks_in(board_diff(cwd, old, new))
    lost = Lost([], [], [], [], [])
    if not pairs:
        return lost
    files = [f for p, t in pairs for f in task_paths(p, t)]
    got = blobs(cwd, [f"{rev}:{f}" for rev in (old, new) for f in files])
    for prefix, task in pairs:
        md, hist = task_paths(prefix, task)
        more, said = check_growth(
            task, md, hist, (got[f"{old}:{md}"], got[f"{old}:{hist}"]),
            (got[f"{new}:{md}"], got[f"{new}:{hist}"]), against=label, rev=old[:12],
            commit=new, way_back=way_back)
        if more:
            lost.losing.append(hist)
            lost.tasks.append((prefix, task))
            lost.events.extend(f"{task}: {describe_event(e)}"
                               for e in lost_in_text(got[f"{old}:{hist}"], got[f"{new}:{hist}"]))
        lost.findings.extend(more)
        lost.notes.extend(said)
        if check_new:
            lost.findings.extend(check_task(task, md, got[f"{new}:{md}"], hist,
                                            got[f"{new}:{hist}"], commit=new))
    return lost


def check_ref_update(cwd: str, old: str, new: str, ref: str = "the ref") -> tuple[
        list[Finding], list[str]]:
    """``verify --ref-update OLD NEW`` and the pre-receive check of a forced push: the
    events reachable from ``old`` (its tip's histories, which hold every ancestor's when each
    commit grew) that ``new`` loses. A creation, a deletion or a fast-forward whose tip keeps
    them passes. Returns (findings, notes)."""
    if is_zero(old) or is_zero(new) or old == new:
        return [], []
    lost = lost_between(
        cwd, old, new, label=f"{ref} {old[:12]}",
        way_back=f"the way back: push (or reset to) a tip that keeps them, e.g. after "
                 f"`ledgit restore-events {old[:12]}` and a commit; a deliberate rewrite: "
                 f"{ALLOW_ENV}=1, or `git push -o ledgit.allow-rewrite`")
    return lost.findings, lost.notes


# --------------------------------------------------------------------------- the verdict


class Verdict(NamedTuple):
    """What the guard found for one move: its findings and notes, whether refusing it
    leaves Git whole (``refusable``), and the one line to print where it stands."""

    lost: Lost
    refusable: bool
    line: str


def _check_commit(cwd: str, git_dir: str, move: Move) -> Verdict | None:
    """A commit made on HEAD (``move.new`` a child of ``move.old``), None when it is a
    rebase's own pick (the rebase's end is checked)."""
    old, new = move.old, move.new
    step = stopped_step(git_dir)
    if step is None and (rebasing(git_dir) or saved_orig_head(git_dir) == old):
        return None  # a rebase's own pick; a fast-forward (merge, pull) or reset to a child
    what = step[0] if step is not None else "commit"
    way = {"rebase": "git rebase --continue", "cherry-pick": "git cherry-pick --continue",
           "revert": "git revert --continue", "am": "git am --continue"}.get(what, "")
    redo = (f"the way back: bring them into the index (git checkout -m -- FILES when Git "
            f"stopped on a conflict there, or ledgit restore-events {old[:12]}), git add, "
            f"then {way} again; or give up the {what}: git {what} --abort")
    lost = lost_between(cwd, old, new, label=f"HEAD {old[:12]}", way_back=redo,
                        check_new=True)
    if step is not None:
        lost.findings.extend(step_losses(cwd, git_dir, step, old, new, redo))
        return Verdict(lost, True, "")
    where = _where(move)
    line = (f"{where} moved to commit {new[:12]}, which no pre-commit hook here checked (a "
            f"clean git revert or revert -m, commit --no-verify), and Git has "
            f"already written it to the index and work tree, so it stands; {_named(lost)}; "
            f"the way back: ledgit restore-events {old[:12]}, then commit; to undo a task "
            f"change add an event: ledgit revert TASK EVENT, not git revert")
    return Verdict(lost, False, line)


def _check_move(cwd: str, git_dir: str | None, move: Move, parents: dict[str, list[str]],
                head: tuple[str | None, str | None]) -> Verdict:
    """A branch moved to a commit that is not a child of its old tip. ``head``: (the commit
    HEAD names now, the branch it points at)."""
    old, new = move.old, move.new
    name = move.branches[0].removeprefix("refs/heads/")
    in_rebase = git_dir is not None and rebasing(git_dir)
    way_back = ("the way back: nothing moved, the index and work tree are as they were"
                + ("; the rebase is stopped at its end: git rebase --abort, or ledgit "
                   f"restore-events {old[:12]}, git add, git commit, git rebase --continue"
                   if in_rebase else
                   f"; to keep the new tip and the events: ledgit restore-events {old[:12]} "
                   f"on it, then commit"))
    lost = lost_between(cwd, old, new, label=f"{name} {old[:12]}", way_back=way_back)
    if not lost.findings or git_dir is None or in_rebase:
        return Verdict(lost, True, "")  # a bare repository has no index to rewrite
    if index_locked(git_dir):
        return Verdict(lost, True, "")  # git commit -a / PATHS: the index is written after
    # ORIG_HEAD saved by this git process: a reset, merge, pull, a sequencer's --abort; None:
    # not known (a hook block from before issue 36, or the hook run by hand)
    saved = saved_orig_head(git_dir) == old if os.environ.get(PID_ENV, "").isdigit() else None
    if _index_moved(cwd, head[0], new):
        amend = move.named and not saved and parents.get(new) == parents.get(old)
        line = (f"{name} moved from {old[:12]} to {new[:12]} after Git had rewritten the "
                f"index and work tree (a refusal would leave them half-done), so it stands; "
                f"{_named(lost)}; they are still in {old[:12]}: ledgit restore-events "
                f"{old[:12]}, then commit, brings them back")
        return Verdict(lost, amend, line)  # commit --amend: made from the index as staged
    if saved is not False and head[1] in move.branches and _index_keeps(cwd, old, lost.losing):
        return Verdict(Lost([], lost.notes, [], [], []), True, "")  # reset --soft: staged
    return Verdict(lost, True, "")


def _index_moved(cwd: str, head: str | None, new: str) -> bool:
    """Whether the index already holds commit ``new`` on every path where it and HEAD's
    commit ``head`` differ (and they differ): Git rewrote the index before the ref (reset,
    checkout -B, a fast-forward). Two git processes."""
    if head is None:
        return False
    changed = paths_between(cwd, head, new)
    return bool(changed) and not changed & index_differs_from(cwd, new)


def _index_keeps(cwd: str, old: str, histories: Sequence[str]) -> bool:
    """Whether the index holds every event ``old`` has in ``histories``."""
    got = blobs(cwd, [n for h in histories for n in (f"{old}:{h}", f":{h}")])
    return all(not lost_in_text(got[f"{old}:{h}"], got[f":{h}"]) for h in histories)


def _where(move: Move) -> str:
    branches = move.branches
    return branches[0].removeprefix("refs/heads/") if branches else "a detached HEAD"


def _named(lost: Lost) -> str:
    """The events that left (the first :data:`MAX_NAMED`, then a count), and the other
    problems a commit has, in one clause."""
    parts = []
    if lost.events:
        shown = "; ".join(lost.events[:MAX_NAMED])
        more = len(lost.events) - MAX_NAMED
        parts.append(f"{len(lost.events)} event(s) left it: {shown}"
                     + (f"; and {more} more" if more > 0 else ""))
    others = [f for f in lost.findings if f.rule not in ("growth", "removed")]
    if others:
        parts.append(f"{len(others)} other problem(s): "
                     + "; ".join(f"{f.path}: {f.rule}: {f.message}" for f in others[:3]))
    return "; ".join(parts) or "nothing left it"


def check_transaction(cwd: str, updates: Sequence[Update]) -> int:
    """``ledgit hook reference-transaction prepared``: 0 to let the transaction commit (one
    line for each move that stands although events left), 1 (one line per lost event, then
    how to go on) to abort it -- only where Git has not rewritten the index and work tree,
    or where its own ``--abort`` puts them back. ``cwd``: where Git runs the hook (the work
    tree top; the git directory of a bare repository)."""
    moves = resolve_moves(cwd, updates)
    if not moves:
        return OK
    git_dir = git_dir_for(cwd)
    bare = git_dir is None
    if git_dir is None and not os.path.isfile(os.path.join(cwd, "HEAD")):
        return OK
    parents = parents_of(cwd, [c for m in moves for c in (m.new, m.old)])
    head: tuple[str | None, str | None] | None = None
    verdicts: list[tuple[Move, Verdict]] = []
    for move in moves:
        new_parents = parents.get(move.new) or []
        if new_parents[:1] == [move.old]:
            if len(new_parents) > 1 or "HEAD" not in move.refs or git_dir is None:
                continue  # a merge commit (its own hook checked it), or no commit made here
            verdict = _check_commit(cwd, git_dir, move)
        elif move.branches:
            if head is None:
                head = (None, None) if bare else (
                    ref_values(cwd, ["HEAD"]).get("HEAD"), symbolic_head(cwd))
            verdict = _check_move(cwd, None if bare else git_dir, move, parents, head)
        else:
            continue  # HEAD alone (a checkout, a rebase's start): no branch moves
        if verdict is not None and (verdict.lost.findings or verdict.lost.notes):
            verdicts.append((move, verdict))
    return _report(cwd, verdicts)


def _report(cwd: str, verdicts: Sequence[tuple[Move, Verdict]]) -> int:
    """Print what the guard found and give the hook's exit code. A transaction is refused
    only when every move that loses something can be refused: one that Git made after
    rewriting the index stands, and so does the rest of its transaction."""
    lossy = [(m, v) for m, v in verdicts if v.lost.findings]
    for _, v in verdicts:
        for note in v.lost.notes:
            _say(f"{PREFIX}note: {note}")
    if not lossy:
        return OK
    if allowed():
        for move, v in lossy:
            for f in v.lost.findings:
                _say(f"{PREFIX}note: allowed by {ALLOW_ENV}: {f}")
            _after(cwd, move, v)
        return OK
    if all(v.refusable for _, v in lossy):
        found = [f for _, v in lossy for f in v.lost.findings]
        for f in found:
            _say(f"{PREFIX}{f}")
        _say(f"{PREFIX}ref update refused: {len(found)} problem(s) (DESIGN §8, a history "
             f"only grows); to rewrite on purpose: {ALLOW_ENV}=1 git ...")
        return CHECK_FAILED
    for move, v in lossy:
        _say(PREFIX + (v.line or f"{_where(move)} moved from {move.old[:12]} to "
                       f"{move.new[:12]} with the rest of its transaction; {_named(v.lost)}; "
                       f"ledgit restore-events {move.old[:12]}, then commit, brings them back"))
        _after(cwd, move, v)
    return OK


def _after(cwd: str, move: Move, verdict: Verdict) -> None:
    """The lines :func:`lines_after_rewrite` adds for a move that stands."""
    for line in lines_after_rewrite(cwd, move.old, move.new, verdict.lost.tasks):
        _say(f"{PREFIX}note: {line}")
