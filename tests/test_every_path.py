"""Every path that makes a commit or moves a ref keeps the history growing (issue 25, DESIGN
§12), under real Git 2.39 with ``ledgit install``: each bullet of the issue's "What was seen"
is a test here -- ``rebase --continue``, ``am --continue``, ``cherry-pick --continue``,
``commit --amend`` past the pre-commit hook, ``reset``, a squash merge, a shallow clone's gate,
writes while Git rewrites the work tree, and a forced push to a bare server -- with the way
back each refusal names (``git rebase --abort``, ``ledgit restore-events REV``)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from gitflow import (
    LEDGIT,
    PY,
    commit_all,
    create,
    event_ids,
    git_rc,
    history_file,
    ledgit,
    new_repo,
)
from gitutil import git

from ledgit.core.errors import LedgitError
from ledgit.storage.board import Board
from ledgit.storage.writepath import mutate_task

pytest_plugins = ["gitutil"]

PROJECT = Path(__file__).resolve().parents[1]
NO_DRIVER = ("-c", "merge.ledgit.driver=false")  # a driver that gives up: Git stops


def _events(repo: Path, rev: str, tid: str) -> set[str]:
    return set(event_ids(git("show", f"{rev}:.ledgit/history/{tid}.jsonl", cwd=repo)))


def _diverged(tmp_path: Path) -> tuple[Path, str, str]:
    """main and feature both add an event to one task after a shared claim; feature also
    adds a code file (so its replayed commit is not empty). main checked out. Returns
    (repo, task id, base commit)."""
    repo = new_repo(tmp_path / "repo")
    base = git("rev-parse", "HEAD", cwd=repo)
    tid = create(repo, "Keep my claim", "--by", "lead")
    commit_all(repo, "task")
    ledgit(repo, "claim", tid, "--by", "agent-b")
    commit_all(repo, "claim")
    git("checkout", "-q", "-b", "feature", cwd=repo)
    ledgit(repo, "heartbeat", tid, "--by", "agent-b")
    (repo / "code.txt").write_text("feature code\n")
    commit_all(repo, "feature: heartbeat")
    git("checkout", "-q", "main", cwd=repo)
    ledgit(repo, "update", tid, "--label", "ui", "--by", "main-dev")
    commit_all(repo, "main: label")
    return repo, tid, base


def _refused(proc: subprocess.CompletedProcess[str], what: str,
             hook: str = "reference-transaction") -> str:
    """The first growth line hook ``hook`` printed on a refused Git command."""
    assert proc.returncode != 0, proc.stdout + proc.stderr
    lines = [ln for ln in proc.stderr.splitlines()
             if ln.startswith(f"ledgit {hook}: ") and ": growth: " in ln]
    assert lines, proc.stderr
    assert what in lines[0], lines[0]
    return lines[0]


def test_rebase_continue_that_takes_upstreams_board_is_refused_then_restored(
        tmp_path: Path, git_env: Path) -> None:
    repo, tid, base = _diverged(tmp_path)
    feature = git("rev-parse", "feature", cwd=repo)
    git("checkout", "-q", "feature", cwd=repo)
    assert git_rc(repo, *NO_DRIVER, "rebase", "main").returncode == 1
    git("checkout", "main", "--", ".ledgit", cwd=repo)  # the "take main's board"
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "-c", "core.editor=true", "rebase", "--continue")
    line = _refused(proc, f"loses an event of REBASE_HEAD {feature[:12]}: heartbeat by agent-b")
    assert "git rebase --abort" in line and f"ledgit restore-events {feature[:12]}" in line
    assert git("rev-parse", "feature", cwd=repo) == feature  # nothing moved
    # the way back that keeps the rebase: restore from the replayed commit, continue
    r = ledgit(repo, "restore-events", "REBASE_HEAD")
    assert f"{tid}: restored 1 event(s) of {feature[:12]}" in r.out
    git("add", "-A", cwd=repo)
    git("-c", "core.editor=true", "rebase", "--continue", cwd=repo)
    assert _events(repo, feature, tid) <= _events(repo, "feature", tid)
    assert _events(repo, "main", tid) <= _events(repo, "feature", tid)
    ledgit(repo, "verify", "--range", f"{base}..feature")


def test_rebase_abort_is_the_other_way_back(tmp_path: Path, git_env: Path) -> None:
    repo, tid, _ = _diverged(tmp_path)
    feature = git("rev-parse", "feature", cwd=repo)
    git("checkout", "-q", "feature", cwd=repo)
    git_rc(repo, *NO_DRIVER, "rebase", "main")
    git("checkout", "main", "--", ".ledgit", cwd=repo)
    git("add", "-A", cwd=repo)
    _refused(git_rc(repo, "-c", "core.editor=true", "rebase", "--continue"), "REBASE_HEAD")
    git("rebase", "--abort", cwd=repo)
    assert git("rev-parse", "HEAD", cwd=repo) == feature
    assert git("symbolic-ref", "HEAD", cwd=repo) == "refs/heads/feature"


def test_am_continue_that_drops_the_patchs_events_is_refused(tmp_path: Path,
                                                            git_env: Path) -> None:
    repo, tid, _ = _diverged(tmp_path)
    patch = git("format-patch", "-1", "feature", "--stdout", cwd=repo) + "\n"
    (tmp_path / "p.patch").write_text(patch)
    assert git_rc(repo, *NO_DRIVER, "am", "-3", str(tmp_path / "p.patch")).returncode != 0
    git("checkout", "HEAD", "--", ".ledgit", cwd=repo)
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "am", "--continue")
    line = _refused(proc, "loses an event of the patch git am applies: heartbeat by agent-b")
    assert "git am --abort" in line
    git("am", "--abort", cwd=repo)
    # taken whole, the same patch passes
    assert git_rc(repo, "am", "-3", str(tmp_path / "p.patch")).returncode == 0
    assert _events(repo, "feature", tid) - _events(repo, "main~0", tid) <= \
        _events(repo, "HEAD", tid)


def test_cherry_pick_continue_that_drops_an_event_is_refused(tmp_path: Path,
                                                            git_env: Path) -> None:
    repo, tid, _ = _diverged(tmp_path)
    picked = git("rev-parse", "feature", cwd=repo)
    assert git_rc(repo, *NO_DRIVER, "cherry-pick", picked).returncode != 0
    # keep the picked task but not its new event: a history that lost one
    ours = git("show", f"HEAD:.ledgit/history/{tid}.jsonl", cwd=repo)
    history_file(repo, tid).write_text(ours + "\n")
    git("checkout", "--theirs", f".ledgit/tasks/{tid}.md", cwd=repo)
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "-c", "core.editor=true", "cherry-pick", "--continue")
    assert proc.returncode != 0
    assert f"loses an event of CHERRY_PICK_HEAD {picked[:12]}" in proc.stderr
    git("cherry-pick", "--abort", cwd=repo)


def test_revert_continue_that_drops_events_is_refused(tmp_path: Path, git_env: Path) -> None:
    repo, tid, _ = _diverged(tmp_path)
    label = git("rev-parse", "main", cwd=repo)
    ledgit(repo, "update", tid, "--priority", "2", "--by", "main-dev")
    commit_all(repo, "main: priority")
    assert git_rc(repo, *NO_DRIVER, "revert", "--no-edit", label).returncode != 0
    git("checkout", f"{label}~1", "--", ".ledgit", cwd=repo)  # undo by dropping events
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "-c", "core.editor=true", "revert", "--continue")
    _refused(proc, "loses an event of HEAD: update by main-dev", hook="pre-commit")
    git("revert", "--abort", cwd=repo)


def test_amend_past_the_pre_commit_hook_is_refused_and_a_reset_stands_with_the_way_back(
        tmp_path: Path, git_env: Path) -> None:
    repo, tid, _ = _diverged(tmp_path)
    head = git("rev-parse", "HEAD", cwd=repo)
    git("checkout", "HEAD~1", "--", ".ledgit", cwd=repo)
    (repo / "amend.txt").write_text("amended\n")
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "commit", "--amend", "--no-verify", "--no-edit")
    _refused(proc, f"loses an event of main {head[:12]}: update by main-dev")
    git("reset", "-q", "--hard", cwd=repo)
    assert git("rev-parse", "HEAD", cwd=repo) == head
    # reset --hard HEAD~ drops the last commit's event: Git has rewritten the index and the
    # work tree before the hook runs, so the move stands, with one line and the way back
    proc = git_rc(repo, "reset", "--hard", "HEAD~1")
    assert proc.returncode == 0, proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("ledgit ")]
    assert "update by main-dev" in line and f"ledgit restore-events {head[:12]}" in line
    assert git("rev-parse", "HEAD", cwd=repo) == git("rev-parse", f"{head}~1", cwd=repo)
    assert git("status", "--porcelain", "--untracked-files=no", cwd=repo) == ""
    r = ledgit(repo, "restore-events", head[:12])
    assert "restored 1 event(s)" in r.out
    commit_all(repo, "restored")
    assert _events(repo, head, tid) <= _events(repo, "HEAD", tid)
    head = git("rev-parse", "HEAD", cwd=repo)
    # reset --soft keeps them in the index, to be committed again: allowed
    assert git_rc(repo, "reset", "--soft", "HEAD~1").returncode == 0
    git("commit", "-q", "-m", "again", cwd=repo)
    assert _events(repo, head, tid) <= _events(repo, "HEAD", tid)
    # a deliberate rewrite says so and goes through
    proc = git_rc(repo, "reset", "-q", "--hard", "HEAD~1", env={"LEDGIT_ALLOW_REWRITE": "1"})
    assert proc.returncode == 0 and "allowed by LEDGIT_ALLOW_REWRITE" in proc.stderr
    # and what it dropped comes back from the reflog
    r = ledgit(repo, "restore-events", "HEAD@{1}")
    assert "restored 1 event(s)" in r.out
    commit_all(repo, "restored")
    assert _events(repo, head, tid) <= _events(repo, "HEAD", tid)


def test_squash_merge_that_keeps_heads_task_files_is_refused(tmp_path: Path,
                                                             git_env: Path) -> None:
    repo, tid, base = _diverged(tmp_path)
    feature = git("rev-parse", "feature", cwd=repo)
    assert git_rc(repo, *NO_DRIVER, "merge", "--squash", "feature").returncode != 0
    git("checkout", "HEAD", "--", ".ledgit", cwd=repo)  # HEAD's task files kept
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "commit", "-m", "squash")
    assert proc.returncode == 1
    assert f"loses an event of the squashed {feature[:12]}: heartbeat by agent-b" in proc.stderr
    # merged again, the squash passes and keeps every event once the branch is gone
    r = ledgit(repo, "restore-events", "feature")
    assert "restored 1 event(s)" in r.out
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "squash", cwd=repo)
    git("branch", "-D", "feature", cwd=repo)
    assert _events(repo, feature, tid) <= _events(repo, "HEAD", tid)
    ledgit(repo, "verify", "--range", f"{base}..HEAD")


def test_the_gate_in_a_shallow_clone_says_what_it_could_not_check(tmp_path: Path,
                                                                   git_env: Path) -> None:
    repo, tid, _ = _diverged(tmp_path)
    git("checkout", "HEAD~1", "--", ".ledgit", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", "drops an event", cwd=repo)
    clone = tmp_path / "shallow"
    git("clone", "-q", "--depth", "1", f"file://{repo}", str(clone), cwd=tmp_path)
    ledgit(clone, "install", "--no-hooks", "--command", LEDGIT)
    r = ledgit(clone, "verify", "--rev", "HEAD", code=1)
    (line,) = [ln for ln in r.out.splitlines() if ": shallow: " in ln]
    head = git("rev-parse", "HEAD", cwd=clone)
    assert line.startswith(f"{head[:12]} (shallow clone): shallow: its parents were not "
                           f"fetched")
    assert "ok" not in r.err.splitlines()[-1]
    r = ledgit(clone, "verify", "--rev", "HEAD", "--allow-shallow")
    assert "note: " in r.err and "--allow-shallow" in r.err
    git("fetch", "-q", "--deepen=1", cwd=clone)  # what the gate needs
    r = ledgit(clone, "verify", "--rev", "HEAD", code=1)
    assert ": growth: " in r.out and ": shallow: " not in r.out


def test_a_write_waits_while_git_rewrites_the_work_tree(tmp_path: Path, git_env: Path) -> None:
    repo, tid, _ = _diverged(tmp_path)
    other = create(repo, "Another task", "--by", "lead")
    commit_all(repo, "another")
    # a merge whose (slow) driver runs while Git holds index.lock and rewrites the tree
    (repo / ".gitattributes").write_text(
        (repo / ".gitattributes").read_text() + "code.txt merge=slow\n")
    commit_all(repo, "attributes")
    git("config", "merge.slow.driver", "sleep 3; cp %B %A", cwd=repo)
    git("checkout", "-q", "feature", cwd=repo)
    (repo / "code.txt").write_text("feature code, again\n")
    commit_all(repo, "feature: code")
    git("checkout", "-q", "main", cwd=repo)
    (repo / "code.txt").write_text("main code\n")
    commit_all(repo, "main: code")
    merge = subprocess.Popen(["git", "merge", "--no-edit", "feature"], cwd=repo,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = repo / ".git" / "index.lock"
        deadline = time.monotonic() + 20
        while not lock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lock.exists(), "git merge never took index.lock"
        # a short timeout: refused, exit 5, nothing written
        before = history_file(repo, other).read_bytes()
        with pytest.raises(LedgitError) as refused:
            mutate_task(Board(repo), other, lambda r: (r, "update"), "w", lock_timeout=0.2)
        assert refused.value.code == 5
        assert "Git is updating the work tree" in refused.value.message
        assert history_file(repo, other).read_bytes() == before
        # the default: it waits for Git, then writes on the merged tree
        waited = subprocess.run([PY, "-m", "ledgit", "update", other, "--label", "y", "--by",
                                 "w"], cwd=repo, text=True, capture_output=True, check=False)
        assert waited.returncode == 0, waited.stderr
        assert not lock.exists()
    finally:
        out, err = merge.communicate(timeout=60)
    assert merge.returncode == 0, err
    assert '"y"' in history_file(repo, other).read_text() or "y" in \
        (repo / ".ledgit" / "tasks" / f"{other}.md").read_text()
    ledgit(repo, "verify", other)


def test_a_forced_push_that_drops_events_is_refused_unless_asked(tmp_path: Path,
                                                                 git_env: Path) -> None:
    server = tmp_path / "server.git"
    git("init", "-q", "--bare", str(server), cwd=tmp_path)
    shutil.copy(PROJECT / "hooks" / "pre-receive", server / "hooks" / "pre-receive")
    (server / "hooks" / "pre-receive").chmod(0o755)
    git("config", "receive.advertisePushOptions", "true", cwd=server)
    repo, tid, _ = _diverged(tmp_path)
    env = {"LEDGIT": LEDGIT}
    git("remote", "add", "origin", str(server), cwd=repo)
    assert git_rc(repo, "push", "origin", "main", env=env).returncode == 0
    shared = git("rev-parse", "main", cwd=repo)
    # rewrite the shared branch: drop its last commit (and its event), add another commit
    git("reset", "-q", "--hard", "HEAD~1", cwd=repo, env={"LEDGIT_ALLOW_REWRITE": "1"})
    (repo / "other.txt").write_text("x\n")
    commit_all(repo, "rewritten")
    push = git_rc(repo, "push", "--force", "origin", "main", env=env)
    assert push.returncode != 0
    assert "forced update" in push.stderr
    assert f"loses an event of OLD {shared[:12]}: update by main-dev" in push.stderr
    assert git("rev-parse", "main", cwd=server) == shared
    # the gate for CI says the same
    r = ledgit(repo, "verify", "--ref-update", shared, "HEAD", code=1)
    assert "update by main-dev" in r.out
    ledgit(repo, "verify", "--ref-update", shared, "HEAD", "--allow-rewrite")
    # a deliberate rewrite, said so on the push
    push = git_rc(repo, "push", "--force", "-o", "ledgit.allow-rewrite", "origin", "main",
                  env=env)
    assert push.returncode == 0, push.stderr
    assert git("rev-parse", "main", cwd=server) == git("rev-parse", "HEAD", cwd=repo)


def test_install_doctor_and_uninstall_know_the_ref_guard(tmp_path: Path,
                                                         git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    hook = repo / ".git" / "hooks" / "reference-transaction"
    assert hook.is_file() and os.access(hook, os.X_OK)
    assert "hook reference-transaction" in hook.read_text()
    hook.unlink()
    r = ledgit(repo, "doctor", code=None)
    assert "reference-transaction" in r.text
    ledgit(repo, "install", "--command", LEDGIT)
    assert hook.is_file()
    ledgit(repo, "uninstall")
    assert not hook.exists()
    # a framework user gets the ref guard from ledgit itself
    (repo / ".pre-commit-config.yaml").write_text("repos: []\n")
    r = ledgit(repo, "install", "--command", LEDGIT)
    assert hook.is_file() and "pre-commit framework" in r.out


def test_a_rebase_starts_ledgit_for_its_end_only(tmp_path: Path, git_env: Path) -> None:
    """The hook blocks start no Python process where ledgit would do nothing or where a later
    check covers it (issue 24, a light sync loop): the checkout a rebase starts with
    (post-checkout), and each pick the rebase makes by itself (reference-transaction: the
    rebase's end is checked, its branch keeping every event of the old tip), and the warm-up
    after a rebase of a few task files (post-rewrite: the next read re-reads them, issue 32).
    ledgit runs once, for the guard at the end; a step after a stop still goes to ledgit
    (the --continue tests above)."""
    repo, tid, _ = _diverged(tmp_path)
    calls = tmp_path / "calls"
    wrapper = tmp_path / "counting-ledgit"
    wrapper.write_text(f"#!/bin/sh\necho \"$*\" >> {shlex.quote(str(calls))}\n"
                       f"exec {LEDGIT} \"$@\"\n", encoding="utf-8")
    wrapper.chmod(0o755)
    ledgit(repo, "install", "--command", str(wrapper))
    git("checkout", "-q", "feature", cwd=repo)
    calls.unlink(missing_ok=True)
    proc = git_rc(repo, "rebase", "-q", "main")
    assert proc.returncode == 0, proc.stderr
    ran = [" ".join(ln.split()[:2]) for ln in calls.read_text(encoding="utf-8").splitlines()
           if ln.startswith("hook ")]
    assert ran == ["hook reference-transaction"], ran
    # the pick merged both sides' events (the driver), and the end was checked
    assert _events(repo, "main", tid) <= _events(repo, "HEAD", tid)
    assert _events(repo, "ORIG_HEAD", tid) <= _events(repo, "HEAD", tid)
    # a lossy rebase is still refused, at its end: -s ours replays none of feature's changes
    old_tip = git("rev-parse", "ORIG_HEAD", cwd=repo)
    git("reset", "-q", "--hard", old_tip, cwd=repo, env={"LEDGIT_ALLOW_REWRITE": "1"})
    proc = git_rc(repo, "rebase", "-q", "-s", "ours", "main")
    assert proc.returncode != 0 and ": growth: " in proc.stderr, proc.stderr
    assert git("rev-parse", "feature", cwd=repo) == old_tip  # the branch did not move


def test_the_workflow_checks_a_forced_push_tip_to_tip(tmp_path: Path, git_env: Path) -> None:
    import yaml

    flow = yaml.safe_load((PROJECT / ".github" / "workflows" / "ledgit.yml").read_text())
    job = flow["jobs"]["forced-update"]
    assert "github.event.forced" in job["if"]
    assert job["steps"][0]["with"]["fetch-depth"] == 0
    step = next(s for s in job["steps"] if "--ref-update" in s.get("run", ""))
    repo, tid, _ = _diverged(tmp_path)
    ledgit(repo, "install", "--no-hooks", "--command", LEDGIT)
    old = git("rev-parse", "main", cwd=repo)
    git("reset", "-q", "--hard", "HEAD~1", cwd=repo, env={"LEDGIT_ALLOW_REWRITE": "1"})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ledgit").write_text(f'#!/bin/sh\nexec {LEDGIT} "$@"\n')
    (bin_dir / "ledgit").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def run_step(after: str) -> subprocess.CompletedProcess[str]:
        command = step["run"].replace("${{ github.event.before }}", old).replace(
            "${{ github.event.after }}", after)
        return subprocess.run(["sh", "-c", command], cwd=repo, env=env, text=True,
                              capture_output=True, check=False)

    bad = run_step(git("rev-parse", "HEAD", cwd=repo))
    assert bad.returncode == 1
    assert bad.stdout.startswith(f"::error file=.ledgit/history/{tid}.jsonl,title=ledgit "
                                 f"growth::")
    assert run_step(old).returncode == 0


def test_a_write_during_a_checkout_lands_whole_on_the_branch_checked_out(
        tmp_path: Path, git_env: Path) -> None:
    """The issue's race: ``git checkout`` rewrites the work tree while a write runs -- here
    held mid-way by a smudge filter on a file Git writes after the task's history and before
    its task file (Git writes in index order; it runs filters while it holds index.lock), so
    the history is the new branch's and the task file the old one's. The write waits, then
    lands on the branch checked out, file and history together; the other branch's history is
    not touched, and no hand edit is recorded."""
    repo, tid, _ = _diverged(tmp_path)
    (repo / ".gitattributes").write_text(
        (repo / ".gitattributes").read_text() + ".ledgit/slow.txt filter=slow\n")
    (repo / ".ledgit" / "slow.txt").write_text("main\n")
    commit_all(repo, "main: a slow file")
    main_hist = git("show", f"HEAD:.ledgit/history/{tid}.jsonl", cwd=repo)
    git("checkout", "-q", "feature", cwd=repo)
    git("merge", "-q", "--no-edit", "main", cwd=repo)  # the driver: both sides' events
    (repo / ".ledgit" / "slow.txt").write_text("feature\n")
    commit_all(repo, "feature: the slow file changed")
    git("checkout", "-q", "main", cwd=repo)
    git("config", "filter.slow.smudge", "sleep 3; cat", cwd=repo)
    git("config", "filter.slow.clean", "cat", cwd=repo)
    checkout = subprocess.Popen(["git", "checkout", "-q", "feature"], cwd=repo,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = repo / ".git" / "index.lock"
        deadline = time.monotonic() + 20
        while not lock.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lock.exists(), "git checkout never took index.lock"
        write = subprocess.run([PY, "-m", "ledgit", "update", tid, "--label", "raced", "--by",
                                "racer"], cwd=repo, text=True, capture_output=True,
                               check=False)
    finally:
        _, err = checkout.communicate(timeout=120)
    assert checkout.returncode == 0, err
    assert write.returncode == 0, write.stderr
    assert "hand edit" not in write.stderr
    assert git("symbolic-ref", "HEAD", cwd=repo) == "refs/heads/feature"
    assert "raced" in history_file(repo, tid).read_text()
    ledgit(repo, "verify", tid)  # file and history agree: one branch's pair, whole
    assert git("show", f"main:.ledgit/history/{tid}.jsonl", cwd=repo) == main_hist
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "the raced write", cwd=repo)  # the hooks pass it
