"""A history only grows (issue 12, DESIGN §8), under real Git: the pre-commit and
pre-merge-commit hooks, the gate (``verify --rev/--range``, bare repositories included), every
board of the repository, the pre-receive hook against a bare remote, the shipped workflow."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import yaml
from gitflow import (
    LEDGIT,
    commit_all,
    create,
    event_ids,
    git_rc,
    history_file,
    ledgit,
    new_repo,
    task_file,
)
from gitutil import git

pytest_plugins = ["gitutil"]

PROJECT = Path(__file__).resolve().parents[1]


def _claimed(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A repository whose task was created (commit ``old``), then claimed by agent-b (HEAD).
    Returns (repo, task id, base commit before the task, old)."""
    repo = new_repo(tmp_path / "repo")
    base = git("rev-parse", "HEAD", cwd=repo)
    tid = create(repo, "Keep my claim", "--by", "lead")
    old = commit_all(repo, "task")
    ledgit(repo, "claim", tid, "--by", "agent-b")
    commit_all(repo, "claim")
    return repo, tid, base, old


def _diverged(tmp_path: Path) -> tuple[Path, str, str]:
    """:func:`_claimed`, then branch ``feature`` renews the claim (agent-b) while ``main``
    adds a label (main-dev); main checked out. Returns (repo, task id, base commit)."""
    repo, tid, base, _ = _claimed(tmp_path)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    ledgit(repo, "heartbeat", tid, "--by", "agent-b")
    commit_all(repo, "feature: heartbeat")
    git("checkout", "-q", "main", cwd=repo)
    ledgit(repo, "update", tid, "--label", "ui", "--by", "main-dev")
    commit_all(repo, "main: label")
    return repo, tid, base


def _growth_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if ": growth: " in line]


def test_checkout_of_an_older_board_then_commit_is_refused_by_hook_and_gate(
        tmp_path: Path, git_env: Path) -> None:
    repo, tid, base, old = _claimed(tmp_path)
    git("checkout", old, "--", ".ledgit/", cwd=repo)
    proc = git_rc(repo, "commit", "-m", "older board")
    assert proc.returncode == 1
    (line,) = _growth_lines(proc.stderr)
    hist = f".ledgit/history/{tid}.jsonl"
    assert line.startswith(f"ledgit pre-commit: {hist}: growth: staged {tid} loses an event "
                           f"of HEAD: claim by agent-b at ")
    assert f"git checkout HEAD -- .ledgit/tasks/{tid}.md {hist}" in line
    assert f"ledgit revert {tid} EVENT" in line
    git("commit", "-q", "--no-verify", "-m", "older board, past the hook", cwd=repo)
    lossy = git("rev-parse", "HEAD", cwd=repo)
    r = ledgit(repo, "verify", "--range", f"{base}..HEAD", code=1)
    (line,) = _growth_lines(r.out)
    parent = git("rev-parse", "HEAD~1", cwd=repo)
    assert line.startswith(f"{lossy[:12]} {hist}: growth: {tid} loses an event of parent "
                           f"{parent[:12]}: claim by agent-b at ")
    report = json.loads(ledgit(repo, "verify", "--rev", "HEAD", "--format", "json",
                               code=1).out)
    assert [p["rule"] for p in report["problems"]] == ["growth"]
    gh = ledgit(repo, "verify", "--rev", "HEAD", "--format", "github", code=1).out
    assert gh.startswith(f"::error file={hist},title=ledgit growth::{lossy[:12]}: ")
    # the way back the hook names: the committed state again, then a new commit passes
    git("checkout", parent, "--", ".ledgit/", cwd=repo)
    git("commit", "-q", "-m", "back", cwd=repo)
    ledgit(repo, "verify", "--rev", "HEAD")


def test_merge_s_ours_is_refused_and_a_driver_merge_passes(tmp_path: Path,
                                                            git_env: Path) -> None:
    repo, tid, base, _ = _claimed(tmp_path)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    ledgit(repo, "update", tid, "--priority", "1", "--by", "feature-dev")
    commit_all(repo, "feature: priority")
    git("checkout", "-q", "main", cwd=repo)
    ledgit(repo, "update", tid, "--label", "ui", "--by", "main-dev")
    commit_all(repo, "main: label")
    proc = git_rc(repo, "merge", "-s", "ours", "--no-edit", "feature")
    assert proc.returncode != 0, proc.stdout
    (line,) = _growth_lines(proc.stderr)
    assert f"staged {tid} loses an event of MERGE_HEAD " in line
    assert "update by feature-dev at " in line and "git merge --abort" in line
    git("merge", "--abort", cwd=repo, check=False)
    git("reset", "-q", "--hard", "HEAD", cwd=repo)
    git("merge", "-q", "-s", "ours", "--no-verify", "--no-edit", "feature", cwd=repo)
    r = ledgit(repo, "verify", "--range", f"{base}..HEAD", code=1)
    (line,) = _growth_lines(r.out)
    second = git("rev-parse", "HEAD^2", cwd=repo)
    assert f"{tid} loses an event of parent {second[:12]}: update by feature-dev" in line
    git("reset", "-q", "--hard", "HEAD~1", cwd=repo)
    git("merge", "-q", "--no-edit", "feature", cwd=repo)  # the ledgit driver: nothing lost
    ledgit(repo, "verify", "--range", f"{base}..HEAD")


def test_checkout_ours_in_a_conflicted_merge_is_refused_until_merged_again(
        tmp_path: Path, git_env: Path) -> None:
    repo, tid, _ = _diverged(tmp_path)
    # a driver that gives up: Git leaves both files conflicted
    proc = git_rc(repo, "-c", "merge.ledgit.driver=false", "merge", "--no-edit", "feature")
    assert proc.returncode == 1
    git("checkout", "--ours", ".ledgit/", cwd=repo)
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "commit", "--no-edit")
    assert proc.returncode == 1
    (line,) = _growth_lines(proc.stderr)
    assert "loses an event of MERGE_HEAD " in line and "heartbeat by agent-b at " in line
    md, hist = f".ledgit/tasks/{tid}.md", f".ledgit/history/{tid}.jsonl"
    assert f"git checkout -m -- {md} {hist}" in line
    git("checkout", "-m", "--", md, hist, cwd=repo)  # the way back: merged by the driver
    git("add", md, hist, cwd=repo)
    git("commit", "-q", "--no-edit", cwd=repo)
    ledgit(repo, "verify", "--rev", "HEAD")


def test_git_revert_in_a_clone_without_install_fails_the_documented_gate(
        tmp_path: Path, git_env: Path) -> None:
    origin, tid, _, _ = _claimed(tmp_path)
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone), cwd=tmp_path)  # no ledgit install here
    ledgit(clone, "update", tid, "--priority", "1", "--by", "agent-b")
    commit_all(clone, "priority")
    git("revert", "--no-edit", "HEAD", cwd=clone)  # Git's line merge deletes the event line
    r = ledgit(clone, "verify", "--range", "HEAD~2..HEAD", code=1)
    (line,) = _growth_lines(r.out)
    assert f"{tid} loses an event of parent " in line and "update by agent-b" in line
    assert f"ledgit revert {tid} EVENT" in line


def test_removing_a_task_passes_only_when_archived_and_is_reported(tmp_path: Path,
                                                                  git_env: Path) -> None:
    repo, tid, base, _ = _claimed(tmp_path)
    md, hist = f".ledgit/tasks/{tid}.md", f".ledgit/history/{tid}.jsonl"
    git("rm", "-q", md, hist, cwd=repo)
    proc = git_rc(repo, "commit", "-m", "gone")
    assert proc.returncode == 1
    assert (f"ledgit pre-commit: {md}: removed: {tid} removed but not archived in HEAD "
            f"(status in_progress; 2 event(s) would vanish)") in proc.stderr
    git("reset", "-q", "--hard", "HEAD", cwd=repo)
    ledgit(repo, "release", tid, "--by", "agent-b")
    ledgit(repo, "archive", tid, "--by", "lead")
    commit_all(repo, "archived")
    git("rm", "-q", md, hist, cwd=repo)
    proc = git_rc(repo, "commit", "-m", "gone for good")
    assert proc.returncode == 0, proc.stderr
    assert f"ledgit pre-commit: note: {tid}: task removed (archived in HEAD)" in proc.stderr
    r = ledgit(repo, "verify", "--range", f"{base}..HEAD")
    assert f"note: {tid}: task removed (archived in parent " in r.err
    assert json.loads(ledgit(repo, "verify", "--rev", "HEAD", "--format", "json").out)[
        "notes"] == [f"{tid}: task removed (archived in parent "
                     f"{git('rev-parse', 'HEAD~1', cwd=repo)[:12]})"]


def test_a_second_board_in_a_subdirectory_is_guarded_and_has_its_own_index(
        tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    ledgit(repo, "init", "sub")
    sub = repo / "sub"
    top_task = create(repo, "At the top", "--by", "a")
    sub_task = create(sub, "Down below", "--by", "a")
    base = commit_all(repo, "two boards")
    ledgit(repo, "list")
    ledgit(sub, "list")
    private = repo / ".git" / "ledgit"
    assert (private / "index.sqlite3").is_file()
    assert (private / "boards" / "sub" / "index.sqlite3").is_file()
    # a hand edit in the sub board, committed from the top
    path = task_file(sub, sub_task)
    path.write_text(path.read_text().replace("Down below", "Down below, by hand"))
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "commit", "-m", "hand edit")
    assert proc.returncode == 1
    assert f"ledgit pre-commit: sub/.ledgit/tasks/{sub_task}.md: record-head:" in proc.stderr
    git("commit", "-q", "--no-verify", "-m", "hand edit, past the hook", cwd=repo)
    r = ledgit(repo, "verify", "--range", f"{base}..HEAD", code=1)
    assert f" sub/.ledgit/tasks/{sub_task}.md: record-head: " in r.out
    git("reset", "-q", "--hard", base, cwd=repo)
    # lost events in the sub board, while the top board is where the hook runs from
    old = git("rev-parse", "HEAD", cwd=repo)
    ledgit(sub, "claim", sub_task, "--by", "agent-b")
    ledgit(repo, "update", top_task, "--priority", "1", "--by", "a")
    commit_all(repo, "claim below, priority on top")
    git("checkout", old, "--", "sub/.ledgit/", cwd=repo)
    proc = git_rc(repo, "commit", "-m", "older sub board")
    assert proc.returncode == 1
    (line,) = _growth_lines(proc.stderr)
    assert f"sub/.ledgit/history/{sub_task}.jsonl: growth: staged {sub_task}" in line
    git("commit", "-q", "--no-verify", "-m", "older sub board, past the hook", cwd=repo)
    for where in (repo, sub):
        r = ledgit(where, "verify", "--range", f"{base}..HEAD", code=1)
        assert len(_growth_lines(r.out)) == 1, r.out


def test_the_gate_works_in_a_bare_repository(tmp_path: Path, git_env: Path) -> None:
    repo, tid, base, _ = _claimed(tmp_path)
    bare = tmp_path / "bare.git"
    git("clone", "-q", "--bare", str(repo), str(bare), cwd=tmp_path)
    r = ledgit(bare, "verify", "--range", f"{base}..main")
    assert "2 commit(s)" in r.err
    ledgit(bare, "verify", "--rev", "main", "--format", "json")
    git("rm", "-q", f".ledgit/tasks/{tid}.md", f".ledgit/history/{tid}.jsonl", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", "task removed", cwd=repo)
    git("push", "-q", str(bare), "main", cwd=repo)
    r = ledgit(bare, "verify", "--range", f"{base}..main", code=1)
    assert f"removed: {tid} removed but not archived" in r.out
    r = ledgit(bare, "verify", "--range", "nope..main", code=2)
    assert "nope" in r.err and "Traceback" not in r.err


def _server(tmp_path: Path) -> tuple[Path, Path]:
    """A bare server repository with hooks/pre-receive installed, and a clone of it."""
    server = tmp_path / "server.git"
    git("init", "-q", "--bare", str(server), cwd=tmp_path)
    shutil.copy(PROJECT / "hooks" / "pre-receive", server / "hooks" / "pre-receive")
    (server / "hooks" / "pre-receive").chmod(0o755)
    work = tmp_path / "work"
    git("clone", "-q", str(server), str(work), cwd=tmp_path)
    return server, work


def test_pre_receive_refuses_a_lossy_push_and_accepts_a_lossless_one(tmp_path: Path,
                                                                     git_env: Path) -> None:
    server, work = _server(tmp_path)
    env = {"LEDGIT": LEDGIT}
    ledgit(work, "init")
    ledgit(work, "install", "--command", LEDGIT)
    commit_all(work, "board")
    tid = create(work, "Pushed", "--by", "lead")
    old = commit_all(work, "task")
    push = git_rc(work, "push", "origin", "main", env=env)  # a new branch, root included
    assert push.returncode == 0, push.stderr
    ledgit(work, "claim", tid, "--by", "agent-b")
    commit_all(work, "claim")
    assert git_rc(work, "push", "origin", "main", env=env).returncode == 0
    git("checkout", old, "--", ".ledgit/", cwd=work)
    git("commit", "-q", "--no-verify", "-m", "lossy", cwd=work)
    for ref in ("main", "HEAD:refs/heads/lossy-new-branch"):
        push = git_rc(work, "push", "origin", ref, env=env)
        assert push.returncode == 1, push.stderr
        assert "pre-receive hook declined" in push.stderr
        assert f"growth: {tid} loses an event of parent " in push.stderr
        assert "claim by agent-b" in push.stderr
    assert git("rev-parse", "main", cwd=server) == git("rev-parse", "HEAD~1", cwd=work)
    assert git("branch", "--list", "lossy-new-branch", cwd=server) == ""
    git("reset", "-q", "--hard", "HEAD~1", cwd=work)
    ledgit(work, "update", tid, "--priority", "1", "--by", "agent-b")
    commit_all(work, "lossless")
    assert git_rc(work, "push", "origin", "main", "HEAD:refs/heads/side",
                  env=env).returncode == 0
    assert git("rev-parse", "main", cwd=server) == git("rev-parse", "HEAD", cwd=work)
    deleted = git_rc(work, "push", "origin", ":side", env=env)
    assert deleted.returncode == 0, deleted.stderr
    missing = git_rc(work, "push", "origin", "HEAD:refs/heads/again",
                     env={"LEDGIT": "/nonexistent/ledgit"})
    assert missing.returncode == 1 and "push refused" in missing.stderr


def test_the_workflow_runs_the_gate_on_pull_requests_and_merge_groups(tmp_path: Path,
                                                                      git_env: Path) -> None:
    flow = yaml.safe_load((PROJECT / ".github" / "workflows" / "ledgit.yml").read_text())
    triggers = flow[True] if True in flow else flow["on"]  # YAML 1.1 reads `on` as true
    assert set(triggers) == {"pull_request", "merge_group", "push"}
    assert flow["jobs"]["gate"]["if"] == "github.event_name != 'push'"  # push: issue 25's job
    steps = flow["jobs"]["gate"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    assert steps[0]["with"]["fetch-depth"] == 0
    gate = next(s for s in steps if "verify" in s.get("run", ""))
    assert gate["run"] == 'ledgit verify --range "$BASE..HEAD" --format github'
    base_expr = gate["env"]["BASE"]
    assert "github.event.merge_group.base_sha" in base_expr
    assert "github.event.pull_request.base.sha" in base_expr
    assert any("ledgit install --no-hooks" in s.get("run", "") for s in steps)
    # the step's command itself, on a real repository, with ledgit on PATH
    repo, tid, base, old = _claimed(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ledgit").write_text(f'#!/bin/sh\nexec {LEDGIT} "$@"\n')
    (bin_dir / "ledgit").chmod(0o755)
    env = {**os.environ, "BASE": base, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}

    def run_step() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", "-c", gate["run"]], cwd=repo, env=env, text=True,
                              capture_output=True, check=False)

    ok = run_step()
    assert ok.returncode == 0 and ok.stdout == "", ok.stdout + ok.stderr
    git("checkout", old, "--", ".ledgit/", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", "lossy", cwd=repo)
    bad = run_step()
    assert bad.returncode == 1
    assert bad.stdout.startswith(f"::error file=.ledgit/history/{tid}.jsonl,title=ledgit "
                                 f"growth::")


def test_a_cherry_pick_must_take_all_it_picks_of_a_history(tmp_path: Path,
                                                          git_env: Path) -> None:
    repo, tid, _, _ = _claimed(tmp_path)
    git("checkout", "-q", "-b", "feature", cwd=repo)
    ledgit(repo, "heartbeat", tid, "--by", "agent-b")
    ledgit(repo, "update", tid, "--priority", "1", "--by", "agent-b")
    picked = commit_all(repo, "feature: two events")
    git("checkout", "-q", "main", cwd=repo)
    ledgit(repo, "update", tid, "--label", "ui", "--by", "main-dev")
    commit_all(repo, "main: label")
    proc = git_rc(repo, "-c", "merge.ledgit.driver=false", "cherry-pick", picked)
    assert proc.returncode == 1
    # take the history of the picked commit minus its last event: one event vanishes
    hist = history_file(repo, tid)
    ours = git("show", f"HEAD:.ledgit/history/{tid}.jsonl", cwd=repo)
    theirs = git("show", f"{picked}:.ledgit/history/{tid}.jsonl", cwd=repo).splitlines()
    hist.write_text(ours + "\n" + theirs[-2] + "\n")
    git("checkout", "--ours", f".ledgit/tasks/{tid}.md", cwd=repo)
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "commit", "--no-edit")
    assert proc.returncode == 1
    lost = [ln for ln in _growth_lines(proc.stderr) if "CHERRY_PICK_HEAD" in ln]
    assert len(lost) == 1 and "update by agent-b" in lost[0]
    # not taking the task at all is a choice: the picked commit keeps its events
    git("checkout", "HEAD", "--", ".ledgit/", cwd=repo)
    proc = git_rc(repo, "commit", "--allow-empty", "--no-edit")
    assert proc.returncode == 0, proc.stderr
    assert event_ids(hist.read_text()) == event_ids(ours + "\n")


def test_a_rebase_step_must_keep_what_the_replayed_commit_added(tmp_path: Path,
                                                               git_env: Path) -> None:
    repo, tid, base = _diverged(tmp_path)
    git("checkout", "-q", "feature", cwd=repo)
    proc = git_rc(repo, "-c", "merge.ledgit.driver=false", "rebase", "main")
    assert proc.returncode == 1
    git("checkout", "--ours", ".ledgit/", cwd=repo)  # during a rebase "ours" is upstream
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "commit", "-m", "replayed")
    assert proc.returncode == 1
    (line,) = _growth_lines(proc.stderr)
    assert "loses an event of REBASE_HEAD " in line and "heartbeat by agent-b at " in line
    md, hist = f".ledgit/tasks/{tid}.md", f".ledgit/history/{tid}.jsonl"
    git("checkout", "-m", "--", md, hist, cwd=repo)
    git("add", md, hist, cwd=repo)
    git("-c", "core.editor=true", "rebase", "--continue", cwd=repo)
    ledgit(repo, "verify", "--range", f"{base}..HEAD")
    assert "heartbeat" in history_file(repo, tid).read_text()
