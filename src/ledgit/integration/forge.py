"""``ledgit forge update``: a pull request branch brought up to date with its base by ledgit's
merge driver, so that a forge -- which never runs a custom driver (DESIGN §7, §12) -- can
merge it by fast-forward or by its own line merge without a person.

For one branch (:func:`update_branch`): fetch the branch and the base; when the base is
already in the branch there is nothing to do (idempotent: nothing pushed). Otherwise merge
the base into the branch (or rebase the branch onto it) in a temporary worktree with the
driver given for that one command (:mod:`ledgit.git.forge`); when anything is left conflicted
-- a code file, or a task body both sides edited on the same lines -- change nothing and name
those files. Then the gate's growth rule (:mod:`ledgit.integration.gate`): every event of the
branch's old tip and of the base is in the result, and every task the result changes passes the
checks. Then push with a lease on the branch's old tip: a push that raced ours (the agent
pushed again) is never overwritten; fetch again and redo, at most ``attempts`` times.

Cost: a fetch, a worktree checkout, Git's merge and, per task the merge changes, the driver
and the checks -- never a walk over the whole board (DESIGN §10; bench/forge_bench.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from ledgit.core.errors import BUSY, CHECK_FAILED, IO_ERROR, NOT_FOUND, OK, USAGE, LedgitError
from ledgit.git import forge as gitforge
from ledgit.git import objects, repository
from ledgit.integration.gate import growth_between
from ledgit.integration.install import ATTRIBUTE_LINES, driver_command
from ledgit.integration.taskcheck import LEDGIT_DIR, Finding, check_task, task_of, task_paths
from ledgit.storage.ownership import adopt_path, make_dirs

ATTEMPTS = 3  # a branch that moves under the bot this many times in a row is left for later
WORKFLOW_DATA = "forge-update.yml"  # package data: ledgit/data/forge-update.yml
WORKFLOW_PATH = Path(".github") / "workflows" / "ledgit-forge.yml"

# Outcomes, one line each (docs/git.md, "Pull requests on a forge").
UP_TO_DATE = "up-to-date"  # the base is in the branch: nothing pushed
MERGED = "merged"  # the branch's tip is in the base already: nothing to do
UPDATED = "updated"  # merged or rebased, checked, pushed
CLEAN = "clean"  # --conflicting: a forge's line merge has no conflict; left alone
CONFLICT = "conflict"  # something besides what the driver merges conflicts: left untouched
REFUSED = "refused"  # the result failed the gate: left untouched
RACED = "raced"  # the branch moved under every attempt: left untouched
REJECTED = "rejected"  # the forge refused the push (a protected branch, a server hook)
MISSING = "missing"  # no such branch on the remote
FAILED = "failed"  # Git could not do a step for this branch (a push refused by the forge...)
_CODES = {UP_TO_DATE: OK, MERGED: OK, UPDATED: OK, CLEAN: OK, CONFLICT: CHECK_FAILED,
          REFUSED: CHECK_FAILED, REJECTED: CHECK_FAILED, RACED: BUSY, MISSING: NOT_FOUND,
          FAILED: USAGE}


class NoBase(LedgitError):
    """The base branch is not on the remote: nothing can be brought up to date (exit 4)."""


class Outcome(NamedTuple):
    """What happened to one branch: its ``outcome`` (one of the constants above), the tip
    before (``old``) and after (``new``, the same when nothing was pushed), the ``files`` a
    conflict or a refusal names, how many ``attempts`` the push took and one ``line`` for a
    person."""

    branch: str
    outcome: str
    old: str | None
    new: str | None
    files: list[str]
    attempts: int
    line: str
    failure: int = 0  # FAILED: the exit code of the error (2, or 74 for the transport)

    @property
    def code(self) -> int:
        """The exit code of this outcome (DESIGN §9): 0, 1 (conflict, refused), 4, 5, and
        for a failure the error's (2, 74)."""
        return self.failure or _CODES[self.outcome]

    def as_json(self) -> dict[str, Any]:
        """The JSON shape of one branch (docs/cli.md, ``ledgit forge update``)."""
        return {"branch": self.branch, "outcome": self.outcome, "old": self.old,
                "new": self.new, "pushed": self.outcome == UPDATED, "files": self.files,
                "attempts": self.attempts, "message": self.line}


def _short(commit: str | None) -> str:
    return (commit or "")[:12]


# --------------------------------------------------------------------------- the check


def board_dir_of(path: str) -> str | None:
    """The board directory (``""``, ``"sub/"``) of a task file or history path, else None."""
    at = path.rfind(f"{LEDGIT_DIR}/")
    if at == -1 or (at > 0 and path[at - 1] != "/"):
        return None
    return path[:at]


def check_result(cwd: Path, result: str, parents: Sequence[str]) -> list[Finding]:
    """The gate on a made commit ``result`` against each of ``parents`` (the branch's old tip
    and the base): the growth rule (:func:`ledgit.integration.gate.growth_between`: every
    event of each parent is in the result; a task removed only when archived) and every check
    of :func:`ledgit.integration.taskcheck.check_task` on each task the result changes. Reads only
    what differs (tree diffs), never the whole board."""
    reader = objects.TreeReader(cwd)
    found: list[Finding] = []
    checked: set[tuple[str, str]] = set()
    for parent in parents:
        changed = reader.diff_paths(parent, result)
        for prefix in sorted({b for b in map(board_dir_of, changed) if b is not None}):
            _, more, _ = growth_between(reader, parent, result, prefix, changed,
                                        label=f"{_short(parent)}")
            found += [f for f in more if f not in found]
            for tid in sorted({t for t in (task_of(p, prefix) for p in changed) if t}):
                if (prefix, tid) in checked:
                    continue
                checked.add((prefix, tid))
                md, hist = task_paths(prefix, tid)
                found += check_task(tid, md, reader.blob(result, md), hist,
                                    reader.blob(result, hist), result)
    return found


# --------------------------------------------------------------------------- one branch


def is_task_path(path: str) -> bool:
    """True for a task file or a history (what ledgit's driver merges)."""
    prefix = board_dir_of(path)
    return prefix is not None and task_of(path, prefix) is not None


@contextlib.contextmanager
def _driver_settings() -> Iterator[list[str]]:
    opts, attributes = gitforge.driver_settings(driver_command(), ATTRIBUTE_LINES)
    try:
        yield opts
    finally:
        attributes.unlink(missing_ok=True)


def update_branch(cwd: Path, branch: str, base: str, *, remote: str = "origin",
                  rebase: bool = False, conflicting: bool = False,
                  attempts: int = ATTEMPTS, fetched: bool = False) -> Outcome:
    """Bring ``remote``'s ``branch`` up to date with its ``base`` (both branch names on the
    remote) by ledgit's driver, and push it with a lease; see the module's docstring.

    ``rebase``: rebase the branch onto the base instead of merging. ``conflicting``: only a
    branch whose forge line merge with the base would conflict
    (:func:`ledgit.git.forge.line_merge_conflicts`); the others are left alone (``clean``).
    ``fetched``: the first attempt uses the remote-tracking refs as they are (``--all`` has
    just fetched them). Returns the :class:`Outcome`; raises LedgitError (2) when Git
    cannot run a step (no remote, no access: 74)."""
    if branch == base:
        raise LedgitError(f"{branch}: the branch is the base itself", USAGE)
    attempt = 0
    with _driver_settings() as settings:
        while True:
            attempt += 1
            if not fetched:
                gitforge.fetch(cwd, remote, [branch, base])
            fetched = False
            old = gitforge.remote_tip(cwd, remote, branch)
            target = gitforge.remote_tip(cwd, remote, base)
            if target is None:
                raise NoBase(f"no branch {base!r} on {remote} (the base)", NOT_FOUND)
            if old is None:
                return Outcome(branch, MISSING, None, None, [], attempt,
                               f"{branch}: no such branch on {remote}")
            done = _already(cwd, branch, base, remote, old, target, conflicting, attempt)
            if done is not None:
                return done
            made = _make(cwd, branch, base, remote, old, target, rebase, settings, attempt)
            if isinstance(made, Outcome):
                return made
            pushed = gitforge.push_with_lease(cwd, remote, made, branch, old)
            if pushed.accepted:
                how = "rebased onto" if rebase else "merged"
                return Outcome(branch, UPDATED, old, made, [], attempt,
                               f"{branch}: {how} {remote}/{base} by ledgit's driver, pushed "
                               f"{_short(old)}..{_short(made)}")
            # A race moved the branch; a refusal (a protected branch, a server hook) did not.
            gitforge.fetch(cwd, remote, [branch, base])
            fetched = True
            if gitforge.remote_tip(cwd, remote, branch) == old:
                return Outcome(branch, REJECTED, old, old, [], attempt,
                               f"{branch}: {remote} refused the push ({pushed.reason}); "
                               f"left untouched")
            if attempt >= attempts:
                return Outcome(branch, RACED, old, old, [], attempt,
                               f"{branch}: moved on {remote} during each of {attempt} "
                               f"attempts ({pushed.reason}); left untouched, run again")


def _already(cwd: Path, branch: str, base: str, remote: str, old: str, target: str,
             conflicting: bool, attempt: int) -> Outcome | None:
    """The outcome when there is nothing to do, else None."""
    if gitforge.is_ancestor(cwd, target, old):
        return Outcome(branch, UP_TO_DATE, old, old, [], attempt,
                       f"{branch}: up to date with {remote}/{base} (nothing pushed)")
    if gitforge.is_ancestor(cwd, old, target):
        return Outcome(branch, MERGED, old, old, [], attempt,
                       f"{branch}: already in {remote}/{base} (nothing pushed)")
    if conflicting:
        stuck = gitforge.line_merge_conflicts(cwd, old, target)
        if stuck == []:
            return Outcome(branch, CLEAN, old, old, [], attempt,
                           f"{branch}: a line merge of {remote}/{base} has no conflict "
                           f"(left to the forge)")
    return None


def _make(cwd: Path, branch: str, base: str, remote: str, old: str, target: str,
          rebase: bool, settings: Sequence[str], attempt: int) -> str | Outcome:
    """The checked commit to push, or the outcome that leaves the branch untouched."""
    with gitforge.temporary_worktree(cwd, old) as wt:
        if rebase:
            tried = gitforge.rebase_in(wt, target, settings)
        else:
            tried = gitforge.merge_in(wt, target, f"Merge {remote}/{base} into {branch} "
                                                  f"(ledgit forge update)", settings)
    if tried.commit is None:
        others = [p for p in tried.unmerged if not is_task_path(p)]
        if others:
            why = "conflicts outside task files"
        elif tried.unmerged:
            others = tried.unmerged
            why = "task files need a person (both sides edited the same lines)"
        else:
            why = f"git stopped: {tried.message}"
        named = f": {', '.join(others)}" if others else ""
        return Outcome(branch, CONFLICT, old, old, others, attempt,
                       f"{branch}: {why}; left untouched{named}")
    made = tried.commit
    findings = check_result(cwd, made, [old, target])
    if rebase:
        for commit in objects.rev_list(cwd, f"{target}..{made}"):
            parents = objects.commit_parents(cwd, [commit]).get(commit, [])
            findings += [f for f in check_result(cwd, commit, parents) if f not in findings]
    if findings:
        files = sorted({f.path for f in findings})
        return Outcome(branch, REFUSED, old, old, files, attempt,
                       f"{branch}: the gate refused the update ({len(findings)} problem(s); "
                       f"first: {findings[0]}); left untouched")
    return made


# --------------------------------------------------------------------------- many branches


def update_branches(cwd: Path, branches: Sequence[str], base: str, *,
                    remote: str = "origin", rebase: bool = False, conflicting: bool = False,
                    attempts: int = ATTEMPTS, fetched: bool = False) -> list[Outcome]:
    """:func:`update_branch` for each of ``branches`` in turn. A branch Git fails on (a
    push the forge refuses, a lost connection) gets a ``failed`` outcome with Git's line and
    the others go on; no such base still stops the run (LedgitError exit 4)."""
    outcomes = []
    for branch in branches:
        try:
            outcomes.append(update_branch(cwd, branch, base, remote=remote, rebase=rebase,
                                          conflicting=conflicting, attempts=attempts,
                                          fetched=fetched))
        except LedgitError as exc:
            if isinstance(exc, NoBase):
                raise
            outcomes.append(Outcome(branch, FAILED, None, None, [], 0,
                                    f"{branch}: {exc.message}; left untouched", exc.code))
    return outcomes


def update_all(cwd: Path, base: str, *, remote: str = "origin", rebase: bool = False,
               conflicting: bool = False, attempts: int = ATTEMPTS) -> list[Outcome]:
    """:func:`update_branches` for every branch of ``remote`` but the base, after one fetch,
    in name order. A branch already in the base, or already holding it, costs two
    ``merge-base`` calls and is left out of the result."""
    gitforge.fetch(cwd, remote)
    target = gitforge.remote_tip(cwd, remote, base)
    if target is None:
        raise NoBase(f"no branch {base!r} on {remote} (the base)", NOT_FOUND)
    behind = []
    for branch in gitforge.tracked_branches(cwd, remote):
        tip = gitforge.remote_tip(cwd, remote, branch)
        if branch == base or tip is None or gitforge.is_ancestor(cwd, target, tip) \
                or gitforge.is_ancestor(cwd, tip, target):
            continue
        behind.append(branch)
    return update_branches(cwd, behind, base, remote=remote, rebase=rebase,
                           conflicting=conflicting, attempts=attempts, fetched=True)


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """The command's exit code: 1 when a branch conflicted or was refused, else 5 when one
    kept moving, else 74 or 2 when Git failed on one, else 4 when one was missing, else 0."""
    codes = {o.code for o in outcomes}
    for code in (CHECK_FAILED, BUSY, IO_ERROR, USAGE, NOT_FOUND):
        if code in codes:
            return code
    return OK


def check_repository(cwd: Path, remote: str) -> Path:
    """The work tree top of ``cwd`` after checking that ``remote`` exists. Raises
    LedgitError (2) outside a work tree, (4) for an unknown remote."""
    top = repository.toplevel(cwd)
    if top is None:
        raise LedgitError(f"{cwd}: not inside a Git work tree (ledgit forge update needs a "
                          f"clone)", USAGE)
    gitforge.require_remote(top, remote)
    return top


# --------------------------------------------------------------------------- the workflow


WORKFLOW_BASE = "    branches: [main]  # the base"


def workflow_text(base: str = "main") -> str:
    """The GitHub workflow shipped with the package (``ledgit/data/forge-update.yml``), run
    on pushes to ``base``. Raises LedgitError (2) for a base name YAML would misread."""
    if not base or any(c in base for c in " \t\n\r#:,[]{}'\"&*!|>%@`"):
        raise LedgitError(f"--base {base!r}: not a plain branch name", USAGE)
    text = resources.files("ledgit").joinpath("data").joinpath(WORKFLOW_DATA).read_text(
        encoding="utf-8")
    return text.replace(WORKFLOW_BASE, f"    branches: [{base}]  # the base", 1)


def install_workflow(cwd: Path, *, base: str = "main", force: bool = False) -> tuple[str, Path]:
    """Write :func:`workflow_text` to ``.github/workflows/ledgit-forge.yml`` at the top of
    ``cwd``'s work tree: ``("written" | "unchanged", path)``. A different file already there
    is kept (LedgitError exit 1) unless ``force``."""
    top = repository.toplevel(cwd)
    if top is None:
        raise LedgitError(f"{cwd}: not inside a Git work tree", USAGE)
    path = top / WORKFLOW_PATH
    text = workflow_text(base)
    if path.is_file():
        if path.read_text(encoding="utf-8") == text:
            return "unchanged", path
        if not force:
            raise LedgitError(f"{WORKFLOW_PATH}: exists and differs from ledgit's; keep it, "
                              f"or overwrite it: ledgit forge install-workflow --force",
                              CHECK_FAILED)
    make_dirs(path.parent)
    path.write_text(text, encoding="utf-8")
    adopt_path(path)  # root in another user's repository: theirs (issue 36)
    return "written", path
