"""``ledgit sync``: an agent's whole loop between writes in one process (DESIGN §13).

1. Commit the board's uncommitted changes: only the files under the board (libgit2's ``git
   add -A .ledgit/``: a stat of the board's files, never a scan of the whole tree), checked
   as the pre-commit hook checks them (:func:`ledgit.integration.precommit.check_staged`);
   the user's other staged or unstaged work stays exactly as it was.
2. Fetch the upstream (:mod:`ledgit.git.transport`).
3. Integrate it in memory -- a fast-forward, a rebase of the local commits or a merge, as
   ``--rebase``/``--merge`` or ``pull.rebase`` say (rebase when nothing does) -- with every
   task file and history both sides changed merged by ledgit's policy in this process and
   the result checked as the hooks would (:mod:`ledgit.integration.syncmerge`).
4. Write the files that changed into the work tree and Git's index, then move the branch by
   compare-and-swap (:mod:`ledgit.integration.syncstate` keeps a note of that step, so a
   killed sync is finished by the next one).
5. Push with a lease on the remote branch's old tip; a lost race fetches and integrates again
   (at most ``tries`` times, then exit 5).
6. Bring this worktree's index up to date for the tasks that changed.

Where ledgit cannot merge in this process -- a code file both sides changed that conflicts,
a task body both sides edited on the same lines, a custom merge driver -- Git itself
integrates (``git rebase``/``git merge`` with ledgit's driver for that one command) and stops
where it stops: Git's own state, which ``git rebase --continue``/``--abort`` (or the merge
equivalents) finishes, and which ``ledgit sync`` finishes when run again after the fix.

The hooks ledgit installed do not run for the in-process steps (libgit2 runs no hook), and
their shell blocks start no Python process for the tracking refs a ``git fetch``/``git push``
moves; the user's own hooks follow Git's rules (docs/git.md, "ledgit sync").
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from ledgit.core.errors import BUSY, CHECK_FAILED, NOT_FOUND, REMOTE, USAGE, LedgitError
from ledgit.core.record import parse_record
from ledgit.git import branches, transport, treemerge
from ledgit.git.branches import MERGE, REBASE, Upstream
from ledgit.git.workupdate import refuse_locked_index, restage, stage_directories
from ledgit.integration import syncstate
from ledgit.integration.links import LINK_RULE, link_message
from ledgit.integration.precommit import check_staged
from ledgit.integration.syncmerge import (
    FAST_FORWARD,
    UP_TO_DATE,
    check_result,
    integrate,
)
from ledgit.integration.taskcheck import LEDGIT_DIR, Finding, task_of, task_paths
from ledgit.storage.board import Board
from ledgit.storage.index import Index
from ledgit.storage.locate import git_location
from ledgit.storage.locks import FileLock

TRIES = 10  # lost push races before a sync gives up (exit 5)
LOCK_WAIT = 60.0  # seconds a sync waits for another sync of the same worktree
TASK_LOCK_WAIT = 30.0  # seconds it waits for a write in flight on a task it commits
SYMLINK = 0o120000


@dataclass
class SyncOptions:
    """What ``ledgit sync`` was asked: the ``remote`` (None: the upstream's, else origin),
    the ``branch`` to bring in (None: the upstream), ``how`` (REBASE, MERGE or None: follow
    ``pull.rebase``), the commit ``message``, whether to ``push``, and the push ``tries``."""

    remote: str | None = None
    branch: str | None = None
    how: str | None = None
    message: str | None = None
    push: bool = True
    tries: int = TRIES


@dataclass
class SyncReport:
    """What a sync did (``ledgit sync --json``, docs/cli.md): the board's absolute root,
    the branch, the remote, the commit of the board's changes (or None) with its tasks,
    each integration (from, how, tip, merged task files, picked commits), the push (or
    None: nothing to push, or not asked), lost races, the final tip, the tasks whose files
    the sync changed in the work tree, the transports used, and ``ahead``: the commits the
    remote's ``upstream`` branch (``REMOTE/BRANCH``) lacks after the sync, unpushed (0 after
    a push; None when the remote has no such branch)."""

    board: str
    branch: str = ""
    remote: str = ""
    committed: dict[str, Any] | None = None
    integrations: list[dict[str, Any]] = field(default_factory=list)
    pushed: dict[str, Any] | None = None
    push_races: int = 0
    head: str | None = None
    changed_tasks: list[str] = field(default_factory=list)
    transport: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    upstream: str = ""
    ahead: int | None = 0

    def as_json(self) -> dict[str, Any]:
        """The JSON shape (docs/cli.md, "sync")."""
        return {"board": self.board, "branch": self.branch, "remote": self.remote,
                "committed": self.committed, "integrations": self.integrations,
                "pushed": self.pushed, "push_races": self.push_races, "head": self.head,
                "changed_tasks": self.changed_tasks, "transport": self.transport,
                "notes": self.notes, "upstream": self.upstream, "ahead": self.ahead}


@dataclass
class _Plan:
    remote: str
    branch: str  # refs/heads/NAME here
    sources: list[tuple[str, str]]  # (remote branch, how), in order
    push_to: str | None  # the remote branch pushed to
    ways: tuple[str, str]


def sync(board: Board, options: SyncOptions) -> SyncReport:
    """Run the loop for ``board`` (module docstring). Returns what was done; raises
    LedgitError: exit 1 (a check refused the board's changes or the result, a conflict Git
    stopped on, the remote refused the push), 2 (detached HEAD, no remote, no identity,
    signed commits), 5 (another sync holds the worktree, another git command its index or
    branch; ``tries`` races lost), 69 (the remote cannot be reached)."""
    found = git_location(board.root_str)
    if found is None:
        raise LedgitError(f"{board.root}: the board is not in a Git work tree: nothing to "
                          "sync", USAGE)
    top = found[0]
    repo = branches.open_repository(top, board.private_str)
    report = SyncReport(str(board.root))
    lock = os.path.join(board.private_str, "locks", "sync.lock")
    os.makedirs(os.path.dirname(lock), exist_ok=True)
    with FileLock(lock, LOCK_WAIT, "another ledgit sync is running in this worktree"):
        refuse_locked_index(repo)
        start = syncstate.finish_interrupted(
            repo, board, top, report.notes,
            lambda: _commit_board(repo, board, top, "HEAD", None, commit=False))
        if branches.signs_commits(repo):
            raise LedgitError("commit.gpgSign is set and libgit2 signs no commit: sync this "
                              "repository with Git itself (git commit, git pull --rebase, git "
                              "push)", USAGE)
        if not options.push and not options.branch and not list(repo.remotes.names()):
            # --no-push where there is no remote (a first repository): the board's commit is
            # all a sync can do; without --no-push it is exit 2 naming git remote add
            return _commit_only(repo, board, top, options, report)
        plan = _plan(repo, options, report.notes)
        report.branch = plan.branch.removeprefix("refs/heads/")
        report.remote = plan.remote
        report.transport = {"fetch": plan.ways[0], "push": plan.ways[1]}
        report.committed = _commit_board(repo, board, top, plan.branch, options.message)
        before = start or branches.ref_target(repo, plan.branch)
        try:
            _loop(repo, board, top, plan, options, report)
        except LedgitError as exc:
            if report.committed is None:
                raise
            kept = report.committed["commit"][:12]
            raise LedgitError(f"{exc.message}\nledgit sync: the board's changes are committed "
                              f"here as {kept}; nothing of them is lost", exc.code) from None
        report.head = branches.ref_target(repo, plan.branch)
        report.upstream, report.ahead = _ahead(repo, plan, report)
        report.changed_tasks = _refresh(repo, board, top, before, report.head)
    return report


def _commit_only(repo: pygit2.Repository, board: Board, top: str, options: SyncOptions,
                 report: SyncReport) -> SyncReport:
    """``--no-push`` in a repository with no remote: commit the board's changes (step 1)
    and nothing else; ``report.remote`` stays empty."""
    branch = branches.current_branch(repo)
    report.branch = branch.removeprefix("refs/heads/")
    report.committed = _commit_board(repo, board, top, branch, options.message)
    report.head = branches.ref_target(repo, branch)
    return report


def _plan(repo: pygit2.Repository, options: SyncOptions, notes: list[str]) -> _Plan:
    """Which remote, which branches to bring in and how, where to push (docs/git.md,
    "ledgit sync": one shared branch, or a branch per agent; ``push.default`` as git push
    reads it); why a branch is not pushed goes to ``notes``."""
    branch = branches.current_branch(repo)
    name = branch.removeprefix("refs/heads/")
    up: Upstream | None = branches.upstream(repo, branch)
    remote = options.remote or (up.remote if up else "origin")
    own = up.branch if up is not None and up.remote == remote else name
    how = options.how or branches.pull_mode(repo, branch) or REBASE
    sources = [(own, how)]
    push_to: str | None = own
    other = (options.branch or "").removeprefix("refs/heads/")
    if other and other != own:
        published = up is not None and up.remote == remote
        # commits already on the agent's own remote branch are never rewritten: merge
        sources.append((other, MERGE if published else how))
        push_to = own if published else None
    mode = branches.push_default(repo)
    if push_to == own and own != name and mode in ("current", "matching"):
        # push.default current/matching: the branch goes under its own name. Under simple
        # (the default) and upstream, a branch tracking another name is pushed to its
        # upstream: worktrees of one clone cannot share main, so an agent in a worktree on
        # agent-1 tracking origin/main is how the shared-branch flow runs there (git push
        # would need HEAD:main; the fleet's mixed layout). A branch meant for review is made
        # with --no-track, or pushed under its own name first (docs/git.md).
        push_to = name
    if not options.push or mode == "nothing":
        push_to = None
    return _Plan(remote, branch, sources, push_to, transport.transports(repo, remote))


def _commit_board(repo: pygit2.Repository, board: Board, top: str, branch: str,
                  message: str | None, *, commit: bool = True) -> dict[str, Any] | None:
    """Commit what changed under the board (step 1); the commit's JSON, None when nothing
    changed. Raises LedgitError (exit 1) when the hook's checks refuse it: nothing is
    committed and Git's index file is left as it was. Without ``commit``, the checked
    changes are only staged (for the commit a stopped ``git rebase`` picks); returns None."""
    prefix = _prefix(board, top)
    parent = branches.ref_target(repo, branch)
    directory = f"{prefix}{LEDGIT_DIR}/"
    index, paths = stage_directories(repo, parent, [directory])
    if not paths:
        return None
    tasks = sorted({t for t in (task_of(p, prefix) for p in paths) if t is not None})
    with contextlib.ExitStack() as held:
        for task in tasks:
            held.enter_context(board.lock(task, TASK_LOCK_WAIT))
        # a write in flight when the board was staged has finished: stage its files again
        paths = restage(repo, index, parent, paths, [f for t in tasks
                                                     for f in task_paths(prefix, t)])
        staged = {p: _blob(repo, index, p) for p in paths}
        head_tree = None if parent is None else str(treemerge.commit_of(repo, parent).tree_id)
        problems: list[Finding] = [Finding(p, 0, LINK_RULE, link_message(p)) for p in paths
                                   if p in index and index[p].mode == SYMLINK]
        checked: list[str] = []
        problems += check_staged(prefix, staged,
                                 lambda p: treemerge.blob_at(repo, head_tree, p), checked,
                                 None, top)
        if problems:
            index.read(True)
            lines = "\n".join(f"ledgit sync: {p}" for p in problems)
            raise LedgitError(f"{lines}\nledgit sync: nothing committed: {len(problems)} "
                              f"problem(s) in the board's changes (a hand edit of a task file "
                              f"is recorded with: ledgit record ID)", CHECK_FAILED)
        if not commit:
            index.write()
            return None
        who = branches.signature(repo, "author"), branches.signature(repo)
        text = message or _message(tasks, len(paths))
        made = treemerge.commit_staged(repo, index, parent, paths, text, who)
        # the index first: a sync killed between the two leaves the board staged (as after
        # git add), not a branch ahead of an index that would commit the events away
        index.write()
        # the reflog line as git commit writes it ("commit: SUBJECT")
        branches.move_ref(repo, branch, parent, made, f"commit: {text.splitlines()[0]}")
    return {"commit": made, "tasks": tasks, "paths": len(paths)}


def _blob(repo: pygit2.Repository, index: pygit2.Index, path: str) -> bytes | None:
    if path not in index:
        return None
    return treemerge.blob_data(repo, index[path].id)


def _message(tasks: list[str], n: int) -> str:
    named = ", ".join(tasks[:5]) + (f" and {len(tasks) - 5} more" if len(tasks) > 5 else "")
    if tasks:
        return f"ledgit sync: {len(tasks)} task(s): {named}"
    return f"ledgit sync: {n} board file(s)"


def _prefix(board: Board, top: str) -> str:
    rel = os.path.relpath(board.root_str, top)
    return "" if rel == os.curdir else rel.replace(os.sep, "/") + "/"


def _loop(repo: pygit2.Repository, board: Board, top: str, plan: _Plan,
          options: SyncOptions, report: SyncReport) -> None:
    """Fetch, integrate, push (steps 2-5), again after each lost race."""
    fetch_way, push_way = plan.ways
    names = list(dict.fromkeys([*(b for b, _ in plan.sources), *filter(None, [plan.push_to])]))
    for attempt in range(1, max(1, options.tries) + 1):
        tips = transport.fetch_branch(repo, Path(top), plan.remote, names, fetch_way)
        own = plan.sources[0][0]
        for source, how in plan.sources:
            if source != own and tips[source] is None:
                raise LedgitError(f"--branch {source}: {plan.remote} has no such branch "
                                  f"(git ls-remote --heads {plan.remote})", NOT_FOUND)
            if source != own and tips.get(own) is not None:
                how = MERGE  # the agent's branch is on the remote: never rewrite it
            done = _integrate_one(repo, board, top, plan, source, tips[source], how)
            if done is not None:
                report.integrations.append(done)
        if plan.push_to is None:
            return
        head = branches.ref_target(repo, plan.branch)
        expect = tips.get(plan.push_to)
        if head is None or head == expect:
            return  # nothing the remote lacks
        outcome = transport.push_branch(repo, Path(top), plan.remote, head, plan.push_to,
                                        expect, push_way)
        if outcome.ok:
            report.pushed = {"branch": plan.push_to, "old": expect, "new": head}
            if branches.upstream(repo, plan.branch) is None:
                # as git push -u: the branch now tracks what it was pushed to, so that its
                # next syncs (--branch main too) know its commits are published
                branches.set_upstream(repo, plan.branch, plan.remote, plan.push_to)
                report.notes.append(f"{report.branch} now tracks {plan.remote}/{plan.push_to}")
            return
        if not outcome.reached:
            raise LedgitError(f"git push {plan.remote}: {outcome.detail}", REMOTE)
        if not outcome.raced and not _moved(repo, top, plan, expect):
            # the remote refused, and not because the ref moved (receive-pack says only
            # "failed to update ref" when its compare-and-swap fails: the ref tells)
            who = (f"{plan.remote} refused the push to {plan.push_to}"
                   if outcome.reason != transport.NOT_SENT else
                   f"the push to {plan.remote}/{plan.push_to} was stopped here before "
                   f"sending (this repository's pre-push hook)")
            raise LedgitError(f"{who}: {outcome.detail or outcome.reason} (your commits are "
                              f"kept here)", CHECK_FAILED)
        report.push_races = attempt
    raise LedgitError(f"gave up after {report.push_races} lost push races: {plan.remote}/"
                      f"{plan.push_to} kept moving (your commits are kept here; run ledgit "
                      f"sync again)", BUSY)


def _ahead(repo: pygit2.Repository, plan: _Plan,
           report: SyncReport) -> tuple[str, int | None]:
    """(``REMOTE/BRANCH``, how many commits of the branch's tip that remote branch lacks) for
    the branch pushed to (else the branch's own on the remote), by its tracking ref as the
    last fetch left it; None when the remote has no such branch."""
    target = plan.push_to or plan.sources[0][0]
    name = f"{plan.remote}/{target}"
    if report.pushed is not None or report.head is None:
        return name, 0
    tip = branches.ref_target(repo, transport.tracking_ref(plan.remote, target))
    if tip is None:
        return name, None
    return name, repo.ahead_behind(report.head, tip)[0]


def _moved(repo: pygit2.Repository, top: str, plan: _Plan, expect: str | None) -> bool:
    """Whether the pushed-to branch is no longer at ``expect`` on the remote (one fetch)."""
    assert plan.push_to is not None
    tips = transport.fetch_branch(repo, Path(top), plan.remote, [plan.push_to], plan.ways[0])
    return tips[plan.push_to] != expect


def _integrate_one(repo: pygit2.Repository, board: Board, top: str, plan: _Plan,
                   source: str, tip: str | None, how: str) -> dict[str, Any] | None:
    """Bring ``plan.remote``/``source`` (at ``tip``) into the branch (step 3-4); its JSON,
    None when there was nothing to bring in."""
    local = branches.ref_target(repo, plan.branch)
    label = f"{plan.remote}/{source}"
    message = f"Merge branch '{source}' of {plan.remote}"
    who = branches.signature(repo, "author"), branches.signature(repo)
    result = integrate(repo, local, tip, how, message, who)
    if result.how == UP_TO_DATE:
        return None
    if result.tip is None:
        syncstate.let_git_integrate(repo, top, how, tip or "", label, message,
                                    result.conflicted)
        return {"from": label, "how": f"{how} (by Git)", "tip":
                branches.ref_target(repo, plan.branch), "merged": result.merged, "picked": 0}
    if result.how != FAST_FORWARD:
        problems = check_result(repo, result.tip, (local, tip), result.merged)
        if problems:
            lines = "\n".join(f"ledgit sync: {p}" for p in problems)
            raise LedgitError(f"{lines}\nledgit sync: the {result.how} with {label} was "
                              f"refused by the checks above; nothing changed here",
                              CHECK_FAILED)
    syncstate.move_work_tree(repo, board, plan.branch, local, result.tip,
                             f"ledgit sync: {result.how} {label}")
    return {"from": label, "how": result.how, "tip": result.tip,
            "merged": result.merged, "picked": result.picked}


def _refresh(repo: pygit2.Repository, board: Board, top: str, before: str | None,
             after: str | None) -> list[str]:
    """Bring this worktree's index up to date for the tasks whose files changed between
    commits ``before`` and ``after`` (step 6); their ids."""
    if before == after:
        return []
    old = None if before is None else str(treemerge.commit_of(repo, before).tree_id)
    new = None if after is None else str(treemerge.commit_of(repo, after).tree_id)
    prefix = _prefix(board, top)
    tasks = sorted({t for t in (task_of(p, prefix)
                                for p in treemerge.changed_paths(repo, old, new))
                    if t is not None})
    index = Index.open_existing(board)
    if index is None:
        return tasks  # none built yet: the next read builds it
    try:
        for task in tasks:
            path = board.task_file(task)
            try:
                with open(path, "rb") as fh:
                    record = parse_record(fh.read(), board.rel(board.task_path(task)))
            except (OSError, LedgitError):
                continue  # removed, or not valid: the next read's stat scan re-checks it
            index.update_one(record, path)
    finally:
        index.close()
    return tasks
