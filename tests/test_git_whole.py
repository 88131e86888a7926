"""A refusal never leaves Git half-done (issue 36 items 1, 8 and 9), under real Git 2.39 with
``ledgit install``: every path the ref guard sees, each losing an event of a claimed task (or
committing a record that disagrees with its history), is run in a copy of one template, and
afterwards HEAD, the index and the work tree agree -- apart from the user's own earlier
changes (an untracked file, and what the user staged before a ``commit --amend``).

Each path is one of:

* **refused** where Git has not touched the index and the work tree (``branch -f``,
  ``update-ref``, ``filter-branch``, a fetch or push into a branch, ``worktree add -B``,
  ``commit --amend``): the ref does not move and ``git status`` is as before; or where Git's
  own ``--abort`` puts them back (a rebase's end, ``rebase --continue``, a cherry-pick,
  ``git am``, a ``git revert`` of several commits): after the ``--abort``, as before;
* **stands** where Git rewrote the index and the work tree before the hook ran (``reset
  --hard``/``--mixed``/``--merge``/``--keep``, ``checkout -B``, ``switch -C``, a fast-forward,
  ``am``/``cherry-pick --abort``) or made a commit without ``pre-commit`` and has no
  ``--abort`` for it (``git revert``, ``revert -m 1``, ``commit --no-verify``): exit 0 and one
  line naming the events that left and ``ledgit restore-events OLD``;
* **ok**: nothing is lost, nothing is said.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
from gitflow import LEDGIT, commit_all, create, event_ids, git_rc, ledgit, new_repo
from gitutil import git

pytest_plugins = ["gitutil"]

NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
NO_DRIVER = ("-c", "merge.ledgit.driver=false")
EDITOR = ("-c", "core.editor=true")
MINE = "notes.txt"  # the user's own earlier change: an untracked file every path keeps


class Case(NamedTuple):
    ref: str  # the ref the path moves (or would)
    prep: str  # shell commands run first (hooks on; $T is the task id)
    command: str  # the path, a shell command
    expect: str  # "refused", "stands" or "ok"
    abort: str = ""  # Git's own way back after a refusal


CASES = {
    # Git rewrites the index (and work tree) before the ref: the move stands, with the line
    "reset --hard": Case("main", "", "git reset -q --hard HEAD~1", "stands"),
    "reset --mixed": Case("main", "", "git reset -q HEAD~1", "stands"),
    "reset --merge": Case("main", "", "git reset -q --merge HEAD~1", "stands"),
    "reset --keep": Case("main", "", "git reset -q --keep HEAD~1", "stands"),
    "checkout -B": Case("main", "", "git checkout -q -B main HEAD~1", "stands"),
    "switch -C": Case("main", "", "git switch -q -C main HEAD~1", "stands"),
    "checkout -B another": Case("other", "", "git checkout -q -B other HEAD~1", "stands"),
    "merge --ff-only": Case("main", "", "git merge -q --ff-only lossy2", "stands"),
    "am --abort": Case("main", "git format-patch -q -o ../p main..feature && "
                       "git format-patch -q --start-number 2 -o ../p main..clash && "
                       "{ git am -q -3 ../p/*.patch || :; }", "git am --abort", "stands"),
    "cherry-pick --abort": Case("main", "git cherry-pick feature clash || :",
                                "git cherry-pick --abort", "stands"),
    # commits made without pre-commit, with no --abort: they stand, with the line
    "revert": Case("main", "", "git revert --no-edit HEAD", "stands"),
    "revert -m 1": Case("merged", "git checkout -q merged",
                        "git revert --no-edit -m 1 HEAD", "stands"),
    "commit --no-verify": Case("main", "git checkout HEAD~1 -- .ledgit",
                               "git commit -q --no-verify -m lossy", "stands"),
    # ref-only moves and commits Git makes from the index as staged: refused, nothing moved
    "branch -f": Case("other", "", "git branch -f other HEAD~1", "refused"),
    "update-ref": Case("main", "", "git update-ref refs/heads/main HEAD~1", "refused"),
    "update-ref OLD": Case("main", "", "git update-ref refs/heads/main HEAD~1 HEAD",
                           "refused"),
    "filter-branch": Case("main", "", "FILTER_BRANCH_SQUELCH_WARNING=1 git filter-branch -f "
                          "--index-filter 'git rm -q --cached --ignore-unmatch -r "
                          ".ledgit/history' HEAD", "refused"),
    "fetch into a branch": Case("other", "", "git fetch -q . +claim:refs/heads/other",
                                "refused"),
    "push into a branch": Case("other", "", "git push -q . +claim:refs/heads/other",
                               "refused"),
    "worktree add -B": Case("other", "", "git worktree add -q -B other ../wt claim",
                            "refused"),
    "commit --amend": Case("main", "git checkout HEAD~1 -- .ledgit && echo x > a.txt && "
                           "git add a.txt", "git commit -q --amend --no-verify --no-edit",
                           "refused"),
    "commit -a --amend": Case("main", "git checkout HEAD~1 -- .ledgit && git reset -q && "
                              "echo x > a.txt && git add a.txt",
                              "git commit -q -a --amend --no-verify --no-edit", "refused"),
    # Git's own --abort puts everything back: refused
    "rebase's end": Case("feature", "git checkout -q feature", "git rebase -q -s ours main",
                         "refused", "git rebase --abort"),
    "rebase --continue": Case(
        "feature", "git checkout -q feature && { git -c merge.ledgit.driver=false rebase -q "
        "main || :; } && git checkout -m -- .ledgit && git show HEAD:.ledgit/tasks/$T.md > "
        ".ledgit/tasks/$T.md && git add .ledgit", "git -c core.editor=true rebase --continue",
        "refused", "git rebase --abort"),
    "cherry-pick": Case("main", "", "git cherry-pick lossy", "refused",
                        "git cherry-pick --abort"),
    "am": Case("main", "git format-patch -q -1 lossy -o ../p", "git am -q ../p/*.patch",
               "refused", "git am --abort"),
    "revert of several": Case("main", "", "git revert --no-edit HEAD HEAD~1", "refused",
                              "git revert --abort"),
    "merge --continue": Case(
        "main", "{ git -c merge.ledgit.driver=false merge -q feature || :; } && "
        "git checkout -m -- .ledgit && git show HEAD:.ledgit/tasks/$T.md > "
        ".ledgit/tasks/$T.md && git add .ledgit", "git -c core.editor=true merge --continue",
        "refused", "git merge --abort"),
    # nothing lost
    "reset --soft": Case("main", "", "git reset -q --soft HEAD~1", "ok"),
    "commit": Case("main", "echo y > y.txt && git add y.txt", "git commit -q -m code", "ok"),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """main: a claimed task and one more event (``label``); ``claim`` (a tag) one commit
    back; ``feature``: a heartbeat and code from ``claim``; ``clash``: code.txt that clashes
    with feature's; ``lossy``: main plus a commit dropping the label event (hooks off),
    ``lossy2`` one commit more; ``merged``: main with feature merged in (the driver);
    ``other``: at main. The post-* hooks are left out (they only warm the index)."""
    root = tmp_path_factory.mktemp("whole")
    with pytest.MonkeyPatch.context() as mp:
        _isolate(mp, root / "home")
        repo = new_repo(root / "repo")
        tid = create(repo, "Keep my claim", "--by", "lead")
        commit_all(repo, "task")
        ledgit(repo, "claim", tid, "--by", "agent-b")
        commit_all(repo, "claim")
        git("tag", "claim", cwd=repo)
        git("checkout", "-q", "-b", "feature", cwd=repo)
        ledgit(repo, "heartbeat", tid, "--by", "agent-b")
        (repo / "code.txt").write_text("feature code\n")
        commit_all(repo, "feature: heartbeat")
        git("checkout", "-q", "-b", "clash", "claim", cwd=repo)
        (repo / "code.txt").write_text("clashing code\n")
        commit_all(repo, "clash")
        git("checkout", "-q", "main", cwd=repo)
        ledgit(repo, "update", tid, "--label", "ui", "--by", "main-dev")
        commit_all(repo, "main: label")
        git("branch", "other", cwd=repo)
        git("checkout", "-q", "-b", "lossy", cwd=repo)
        git("checkout", "claim", "--", ".ledgit", cwd=repo)
        (repo / "lossy.txt").write_text("x\n")
        git("add", "-A", cwd=repo)
        git(*NO_HOOKS, "commit", "-q", "-m", "drops the label event", cwd=repo)
        git("checkout", "-q", "-b", "lossy2", cwd=repo)
        (repo / "lossy2.txt").write_text("y\n")
        commit_all(repo, "one more commit")
        git("checkout", "-q", "-b", "merged", "main", cwd=repo)
        git("merge", "-q", "--no-edit", "feature", cwd=repo)
        git("checkout", "-q", "main", cwd=repo)
        for name in ("post-checkout", "post-merge", "post-rewrite"):
            (repo / ".git" / "hooks" / name).unlink()
    return repo, tid


def _isolate(mp: pytest.MonkeyPatch, home: Path) -> None:
    """The ``git_env`` fixture's environment, for a fixture wider than one test."""
    for name in list(os.environ):
        if name.startswith(("GIT_", "LEDGIT_")):
            mp.delenv(name)
    home.mkdir(parents=True)
    (home / ".gitconfig").write_text("[user]\n\tname = Ada Tester\n\temail = "
                                     "ada@example.invalid\n[init]\n\tdefaultBranch = main\n")
    for name, value in (("HOME", str(home)), ("GIT_CONFIG_GLOBAL", str(home / ".gitconfig")),
                        ("GIT_CONFIG_NOSYSTEM", "1"), ("LEDGIT_WATCH", "0")):
        mp.setenv(name, value)


def _sh(repo: Path, command: str, tid: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sh", "-c", command], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, "T": tid}, check=False)


def _state(repo: Path) -> tuple[str, str, str, str]:
    """(HEAD, the branch it is on, the index's tree, git status) of ``repo``."""
    return (git("rev-parse", "HEAD", cwd=repo), git_rc(repo, "symbolic-ref", "-q", "HEAD").stdout,
            git_rc(repo, "write-tree").stdout, git("status", "--porcelain", cwd=repo))


@pytest.mark.parametrize("name", list(CASES))
def test_every_guarded_path_leaves_head_index_and_work_tree_agreeing(
        name: str, template: tuple[Path, str], tmp_path: Path, git_env: Path) -> None:
    case = CASES[name]
    source, tid = template
    repo = tmp_path / "repo"
    shutil.copytree(source, repo, symlinks=True)
    git("update-index", "-q", "--refresh", cwd=repo, check=False)  # the copy's file stats
    (repo / MINE).write_text("mine\n")
    prep = _sh(repo, case.prep, tid)
    assert prep.returncode == 0, prep.stderr
    old = git("rev-parse", case.ref, cwd=repo)
    before = _state(repo)
    proc = _sh(repo, case.command, tid)
    said = [ln for ln in proc.stderr.splitlines()
            if ln.startswith(("ledgit reference-transaction: ", "ledgit pre-commit: "))]
    if case.expect == "refused":
        assert proc.returncode != 0, proc.stderr
        assert git("rev-parse", case.ref, cwd=repo) == old
        if name != "filter-branch":  # it hides the hook's lines: "Could not rewrite ..."
            assert any(": growth: " in ln or ": record-head: " in ln for ln in said), \
                proc.stderr
        if case.abort:
            aborted = _sh(repo, case.abort, tid)
            assert aborted.returncode == 0, aborted.stderr
            assert git("rev-parse", case.ref, cwd=repo) == old
            assert git("status", "--porcelain", cwd=repo) == f"?? {MINE}"
        else:
            assert _state(repo) == before  # nothing moved, nothing rewritten
        assert git("worktree", "list", "--porcelain", cwd=repo).count("worktree ") == 1
        return
    assert proc.returncode == 0, proc.stderr
    if case.expect == "ok":
        assert said == [], proc.stderr
    else:
        (line,) = said
        assert "left it" in line, line
        assert "update by main-dev" in line or "heartbeat by agent-b" in line, line
        assert f"ledgit restore-events {old[:12]}" in line, line
        assert git("rev-parse", case.ref, cwd=repo) != old
    # HEAD, index and work tree agree, apart from the user's own file; reset --soft keeps
    # the old commit staged and reset --mixed its files in the work tree: what they are for
    staged = old if name == "reset --soft" else "HEAD"
    assert git_rc(repo, "diff-index", "--cached", "--quiet", staged).returncode == 0
    checked_out = old if name in ("reset --mixed", "reset --soft") else "HEAD"
    assert git_rc(repo, "diff", "--quiet", checked_out).returncode == 0
    assert git("ls-files", "--others", "--exclude-standard", cwd=repo) == MINE
    assert (repo / MINE).read_text() == "mine\n"


def test_a_rewrite_that_stands_is_undone_by_the_restore_it_names(
        template: tuple[Path, str], tmp_path: Path, git_env: Path) -> None:
    """The line's ``ledgit restore-events OLD`` brings every event back, and the doctor
    names a half-done reset (HEAD on the old commit, the index and work tree the new one's)
    with the command that ends it."""
    source, tid = template
    repo = tmp_path / "repo"
    shutil.copytree(source, repo, symlinks=True)
    git("update-index", "-q", "--refresh", cwd=repo, check=False)
    old = git("rev-parse", "main", cwd=repo)
    proc = git_rc(repo, "reset", "-q", "--hard", "HEAD~1")
    assert f"ledgit restore-events {old[:12]}" in proc.stderr
    ledgit(repo, "restore-events", old[:12])
    commit_all(repo, "restored")
    had = set(event_ids(git("show", f"{old}:.ledgit/history/{tid}.jsonl", cwd=repo)))
    assert had <= set(event_ids(git("show", f"HEAD:.ledgit/history/{tid}.jsonl", cwd=repo)))
    # what Git 2.39 left before: the files of HEAD~1, HEAD where it was
    git(*NO_HOOKS, "read-tree", "-u", "--reset", "claim", cwd=repo)
    r = ledgit(repo, "doctor", code=1)
    (gap,) = [ln for ln in r.out.splitlines() if f"{tid}: the index and the work tree lack" in ln]
    assert f"git checkout HEAD -- .ledgit/tasks/{tid}.md .ledgit/history/{tid}.jsonl" in gap
    git("checkout", "HEAD", "--", f".ledgit/tasks/{tid}.md", f".ledgit/history/{tid}.jsonl",
        cwd=repo)
    assert f"{tid}: the index" not in ledgit(repo, "doctor", code=None).out


def test_hooks_start_no_ledgit_where_nothing_is_to_check(template: tuple[Path, str],
                                                         tmp_path: Path,
                                                         git_env: Path) -> None:
    """Issue 32's budgets: no Python process for a commit that touches no ledgit file, nor
    for the reference-transaction hook of a commit ``pre-commit`` checked, nor for a branch
    created (``checkout -b``), nor for a clean ``git revert`` or cherry-pick of code."""
    source, tid = template
    repo = tmp_path / "repo"
    shutil.copytree(source, repo, symlinks=True)
    calls = tmp_path / "calls"
    wrapper = tmp_path / "counting-ledgit"
    wrapper.write_text(f"#!/bin/sh\necho \"$*\" >> {shlex.quote(str(calls))}\n"
                       f"exec {LEDGIT} \"$@\"\n", encoding="utf-8")
    wrapper.chmod(0o755)
    ledgit(repo, "install", "--command", str(wrapper))
    for name in ("post-checkout", "post-merge", "post-rewrite"):
        (repo / ".git" / "hooks" / name).unlink()

    def ran(*commands: str) -> list[str]:
        calls.unlink(missing_ok=True)
        for command in commands:
            proc = _sh(repo, command, tid)
            assert proc.returncode == 0, (command, proc.stderr)
        text = calls.read_text(encoding="utf-8") if calls.exists() else ""
        return [" ".join(ln.split()[:2]) for ln in text.splitlines()]

    assert ran("git checkout -q -b topic") == []
    assert ran("echo code > c.txt && git add c.txt && git commit -q -m code") == \
        ["hook pre-commit"]
    assert ran(f"{LEDGIT} update $T --label again --by dev && git add -A && "
               "git commit -q -m task") == ["hook pre-commit"]
    assert ran("git revert --no-edit HEAD~1", "git cherry-pick clash") == []
    # a fast-forward by one commit (git pull's, the sync loop's): made and checked elsewhere
    ran("git checkout -q -b ahead", f"{LEDGIT} update $T --label ahead --by dev",
        "git add -A && git commit -q -m ahead", "git checkout -q topic")
    assert ran("git merge -q --ff-only ahead") == []
    # a commit made without pre-commit that touches a task is checked
    assert ran(f"{LEDGIT} update $T --label more --by dev && git add -A && "
               "git commit -q --no-verify -m task") == ["hook reference-transaction"]


def test_the_guard_reads_the_real_old_value_where_git_gives_zeros(
        template: tuple[Path, str], tmp_path: Path, git_env: Path) -> None:
    """Item 8 in ledgit itself, as an older hook block (or a person) hands it the updates:
    zeros for the old value of an existing branch mean its value now; for a branch that does
    not exist, a creation."""
    source, _ = template
    repo = tmp_path / "repo"
    shutil.copytree(source, repo, symlinks=True)
    claim, zero = git("rev-parse", "claim", cwd=repo), "0" * 40

    def hook(line: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*shlex.split(LEDGIT), "hook", "reference-transaction",
                               "prepared"], cwd=repo, input=line + "\n", text=True,
                              capture_output=True, check=False)

    refused = hook(f"{zero} {claim} refs/heads/other")
    assert refused.returncode == 1
    assert "loses an event of other" in refused.stderr and "update by main-dev" in \
        refused.stderr
    assert hook(f"{zero} {claim} refs/heads/brand-new").returncode == 0
    assert hook(f"{zero} {git('rev-parse', 'other', cwd=repo)} refs/heads/other").stderr == ""
