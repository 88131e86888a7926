"""The hooks under real Git: pre-commit on the index, post-* index refresh, odd paths, and the
pre-commit framework's ``try-repo`` against this repository."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gitflow import (
    LEDGIT,
    PY,
    commit_all,
    create,
    fields,
    git_rc,
    history_file,
    ledgit,
    new_repo,
    task_file,
)
from gitutil import git

from ledgit.hooks.dispatch import run_hook
from ledgit.integration.gate import _found_prefix
from ledgit.integration.precommit import _board_prefix, pre_commit

pytest_plugins = ["gitutil"]

PROJECT = Path(__file__).resolve().parents[1]
# The pre-commit framework pip-installs ledgit into its own virtualenv: keep pip's download
# cache across tests (the tests' HOME is a throwaway directory).
PIP_CACHE = os.environ.get("PIP_CACHE_DIR") or str(Path.home() / ".cache" / "pip")


def _break(repo: Path, tid: str) -> None:
    path = task_file(repo, tid)
    path.write_text(path.read_text().replace("status: open", "status: opne"))


def _fix(repo: Path, tid: str) -> None:
    path = task_file(repo, tid)
    path.write_text(path.read_text().replace("status: opne", "status: open"))


def test_pre_commit_checks_the_index_not_the_work_tree(tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    tid = create(repo, "Guarded", "--by", "a")
    commit_all(repo, "task")
    _break(repo, tid)
    git("add", "-A", cwd=repo)
    _fix(repo, tid)  # the work tree is fine again, the staged blob is not
    proc = git_rc(repo, "commit", "-m", "broken")
    assert proc.returncode == 1
    assert f"ledgit pre-commit: .ledgit/tasks/{tid}.md:4: schema:" in proc.stderr
    assert "commit refused: 1 problem(s) in 1 staged task(s)" in proc.stderr
    git("add", "-A", cwd=repo)
    assert git_rc(repo, "commit", "-m", "nothing changed after all").returncode == 1
    # a partial commit (`git commit PATH`) checks the temporary index GIT_INDEX_FILE names
    _break(repo, tid)
    proc = git_rc(repo, "commit", "-m", "partial", "--", f".ledgit/tasks/{tid}.md")
    assert proc.returncode == 1 and "schema" in proc.stderr
    _fix(repo, tid)
    ledgit(repo, "update", tid, "--priority", "1", "--by", "a")
    proc = git_rc(repo, "commit", "-m", "partial", "--", ".ledgit")
    assert proc.returncode == 0, proc.stderr


def test_pre_commit_looks_only_at_staged_tasks(tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    bad = create(repo, "Broken in HEAD", "--by", "a")
    good = create(repo, "Fine", "--by", "a")
    _break(repo, bad)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", "slipped past", cwd=repo)
    ledgit(repo, "update", good, "--priority", "2", "--by", "a")
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "commit", "-m", "only the fine task is staged")
    assert proc.returncode == 0, proc.stderr
    # a hand edit staged without `ledgit record` is refused with the way out
    path = task_file(repo, good)
    path.write_text(path.read_text().replace("title: Fine", "title: Finer"))
    git("add", "-A", cwd=repo)
    proc = git_rc(repo, "commit", "-m", "hand edit")
    assert proc.returncode == 1 and "record-head" in proc.stderr
    assert f"ledgit record {good}" in proc.stderr
    ledgit(repo, "record", good, "--by", "a")
    git("add", "-A", cwd=repo)
    assert git_rc(repo, "commit", "-m", "hand edit, recorded").returncode == 0


def test_worktree_add_builds_its_own_index_and_leaves_main_alone(tmp_path: Path,
                                                                 git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    create(repo, "Indexed", "--by", "a")
    commit_all(repo, "task")
    ledgit(repo, "list")
    main_index = repo / ".git" / "ledgit" / "index.sqlite3"
    before = (main_index.read_bytes(), main_index.stat().st_mtime_ns)
    git("worktree", "add", "-q", "-b", "wt", str(tmp_path / "wt"), cwd=repo)
    wt_index = repo / ".git" / "worktrees" / "wt" / "ledgit" / "index.sqlite3"
    assert wt_index.is_file(), "post-checkout built the new worktree's index"
    assert (main_index.read_bytes(), main_index.stat().st_mtime_ns) == before
    assert "Indexed" in ledgit(tmp_path / "wt", "list").out


def test_post_hooks_always_exit_0(tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    for name in ("post-checkout", "post-merge", "post-rewrite", "index"):
        assert ledgit(repo, "hook", name, "a", "b", "1").code == 0
    (repo / ".ledgit" / "config.yaml").write_text("id_prefix: [broken\n")
    r = ledgit(repo, "hook", "post-merge")
    assert r.code == 0
    ledgit(tmp_path, "hook", "post-checkout")  # outside any repository
    ledgit(repo, "hook", "no-such-hook", code=2)


def test_index_refresh_is_bounded_in_time(tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    script = ("import time, sys\n"
              "from pathlib import Path\n"
              "from ledgit.storage import index\n"
              "from ledgit.hooks import refresh as hooks\n"
              "index.Index.refresh = lambda self: time.sleep(30)\n"
              "sys.exit(hooks.refresh_index(Path(sys.argv[1]), budget=0.5))\n")
    started = time.monotonic()
    proc = subprocess.run([PY, "-c", script, str(repo)], capture_output=True, text=True,
                          check=False, timeout=20)
    assert proc.returncode == 0
    assert time.monotonic() - started < 10
    assert "the next read finishes it" in proc.stderr


def test_paths_with_spaces_and_quotes(tmp_path: Path, git_env: Path) -> None:
    odd = tmp_path / "we ird \"dir\" 'x'"
    bindir = odd / "bin dir"
    bindir.mkdir(parents=True)
    wrapper = bindir / "led git"
    wrapper.write_text(f"#!/bin/sh\nexec {LEDGIT} \"$@\"\n")
    wrapper.chmod(0o755)
    repo = odd / "re po"
    repo.mkdir()
    git("init", "-q", str(repo), cwd=odd)
    ledgit(repo, "init")
    ledgit(repo, "install", "--command", shlex.quote(str(wrapper)))
    tid = create(repo, "Odd paths", "--by", "a")
    commit_all(repo, "task")
    git("worktree", "add", "-q", "-b", "side", str(odd / "side 'wt'"), cwd=repo)
    side = odd / "side 'wt'"
    ledgit(side, "update", tid, "--priority", "1", "--by", "b")
    commit_all(side, "side")
    ledgit(repo, "update", tid, "--label", "main", "--by", "a")
    commit_all(repo, "main")
    log = tmp_path / "merge log"
    proc = git_rc(repo, "merge", "--no-edit", "side", env={"LEDGIT_MERGE_LOG": str(log)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f".ledgit/tasks/{tid}.md: priority from theirs" in log.read_text()
    assert fields(repo, tid)["priority"] == 1
    _break(repo, tid)
    git("add", "-A", cwd=repo)
    assert git_rc(repo, "commit", "-m", "broken").returncode == 1
    _fix(repo, tid)
    git("add", "-A", cwd=repo)
    ledgit(repo, "verify", "--range", "HEAD~2..HEAD")
    assert "index is stale" in ledgit(repo, "doctor", code=1).out  # a hand edit, no read yet
    ledgit(repo, "list")
    ledgit(repo, "doctor")
    assert history_file(repo, tid).is_file()


@pytest.mark.stress  # 4 min on a busy machine (pre-commit builds its environment): .ci/run
@pytest.mark.skipif(shutil.which("git") is None or not (PROJECT / ".git").exists(),
                    reason="needs this project's Git checkout")
def test_pre_commit_try_repo_refuses_then_accepts(tmp_path: Path, git_env: Path) -> None:
    """The framework path: ``pre-commit try-repo <ledgit> ledgit-check`` pip-installs this
    project (its committed HEAD, cloned) and runs the hook on the staged tasks."""
    source = tmp_path / "ledgit-src"
    git("clone", "-q", "--no-hardlinks", str(PROJECT), str(source), cwd=tmp_path)
    repo = new_repo(tmp_path / "repo", install=False)
    tid = create(repo, "Framework", "--by", "a")
    commit_all(repo, "task")
    env = {**os.environ, "PIP_CACHE_DIR": PIP_CACHE, "PRE_COMMIT_COLOR": "never",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(source),
                               "ledgit-check"], cwd=repo, env=env, capture_output=True,
                              text=True, check=False, timeout=600)

    _break(repo, tid)
    git("add", "-A", cwd=repo)
    proc = try_repo()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f".ledgit/tasks/{tid}.md:4: schema:" in proc.stdout
    _fix(repo, tid)
    ledgit(repo, "update", tid, "--priority", "1", "--by", "a")
    git("add", "-A", cwd=repo)
    proc = try_repo()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ledgit check" in proc.stdout and "Passed" in proc.stdout


def test_shims_say_so_when_ledgit_is_missing(tmp_path: Path) -> None:
    """hooks/* and mergedriver/ledgit-merge-driver, run where ledgit is not installed."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if shutil.which("ledgit", path=env["PATH"]):
        pytest.skip("a ledgit is installed system-wide")
    for name in ("pre-commit", "post-checkout", "post-merge", "post-rewrite"):
        proc = subprocess.run(["sh", str(PROJECT / "hooks" / name)], env=env, cwd=tmp_path,
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 0 and "'ledgit' is not on PATH" in proc.stderr, name
    proc = subprocess.run(["sh", str(PROJECT / "hooks" / "pre-commit")],
                          env={**env, "LEDGIT": f"{PY} -m ledgit"}, cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "not inside a Git work tree" in proc.stderr  # ledgit ran
    for name, text in (("O", "base\n"), ("A", "ours\n"), ("B", "theirs\n")):
        (tmp_path / name).write_text(text)
    shim = PROJECT / "mergedriver" / "ledgit-merge-driver"
    proc = subprocess.run(["sh", str(shim), "O", "A", "B", "7", "f.md"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "line merge" in proc.stderr
    merged = (tmp_path / "A").read_text()
    assert merged.startswith("<<<<<<< ") and "ours\n=======\ntheirs\n" in merged


def test_fast_board_prefix_agrees_with_find_board(tmp_path: Path, git_env: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The pre-commit fast path finds the board without pathlib: the same answer as
    ledgit.integration.gate's (ledgit.storage.board.find_board), or None where that one has none
    either."""
    repo = new_repo(tmp_path / "repo")
    git("init", "-q", str(repo / "nested"), cwd=repo)
    (repo / "sub" / ".ledgit" / "tasks").mkdir(parents=True)
    (repo / "sub" / "deeper").mkdir()
    (repo / "plain").mkdir()
    outside = tmp_path / "elsewhere"
    (outside / ".ledgit").mkdir(parents=True)
    (outside / ".ledgit" / "config.yaml").write_text("id_prefix: T\n")
    cases = [(repo, None), (repo / "plain", None), (repo / "sub", None),
             (repo / "sub" / "deeper", None), (repo / ".ledgit", None),
             (repo / "sub", str(repo / "sub")), (repo, str(repo / "sub" / ".ledgit")),
             (repo, str(outside)), (repo, str(repo / "plain"))]
    for cwd, pinned in cases:
        if pinned is None:
            monkeypatch.delenv("LEDGIT_ROOT", raising=False)
        else:
            monkeypatch.setenv("LEDGIT_ROOT", pinned)
        assert _board_prefix(str(cwd), str(repo)) == _found_prefix(cwd), (cwd, pinned)


def test_the_hook_reads_the_unstaged_half_of_a_task_from_head(
        tmp_path: Path, git_env: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = new_repo(tmp_path / "hooked")
    tid = create(repo, "Half staged", "--by", "a")
    commit_all(repo, "task")
    path = task_file(repo, tid)
    path.write_text(path.read_text().replace("Half staged", "Hand edited"))
    git("add", str(path), cwd=repo)  # the task file alone: its history is read from HEAD
    monkeypatch.chdir(repo)
    assert run_hook("pre-commit", []) == 1
    assert f".ledgit/tasks/{tid}.md: record-head:" in capsys.readouterr().err
    # the path with discovery (unborn branches, boards found from the index) says the same
    assert pre_commit(repo) == 1
    assert f".ledgit/tasks/{tid}.md: record-head:" in capsys.readouterr().err
    git("reset", "-q", cwd=repo)
    history = history_file(repo, tid)
    history.write_text(history.read_text() + "\n")  # the history alone: the file from HEAD
    git("add", str(history), cwd=repo)
    assert run_hook("pre-commit", []) == 0, capsys.readouterr().err
    assert pre_commit(repo) == 0, capsys.readouterr().err


def _git_processes(repo: Path, trace: Path) -> list[str]:
    """The git commands the pre-commit hook of a real `git commit` ran, from GIT_TRACE."""
    trace.unlink(missing_ok=True)
    proc = git_rc(repo, "commit", "-q", "-m", "traced", env={"GIT_TRACE": str(trace)})
    assert proc.returncode == 0, proc.stderr
    ran: list[str] = []
    in_hook = False
    for line in trace.read_text().splitlines():
        if "trace: run_command: " in line:
            in_hook = line.endswith("hooks/pre-commit")
        elif in_hook and "trace: built-in: git " in line:
            ran.append(line.split("trace: built-in: git ", 1)[1].split(" ")[0])
    return ran


def test_pre_commit_asks_git_a_fixed_number_of_times(tmp_path: Path, git_env: Path) -> None:
    """O(staged tasks) work, but not O(staged tasks) processes: one diff-index, one
    cat-file --batch for every blob, whether 1 or 12 tasks are staged."""
    repo = new_repo(tmp_path / "repo")
    ids = [create(repo, f"Task {n}", "--by", "a") for n in range(12)]
    commit_all(repo, "tasks")
    trace = tmp_path / "trace"
    seen = []
    for staged in (ids[:1], ids):
        for tid in staged:
            ledgit(repo, "update", tid, "--priority", str(len(staged) % 5), "--by", "a")
        git("add", "-A", cwd=repo)
        # The two start concurrently (the hook starts both before its checks import), so
        # the trace's order is the scheduler's: compare them as a multiset.
        seen.append(sorted(_git_processes(repo, trace)))
    assert seen[0] == seen[1] == ["cat-file", "diff-index"]


def test_pre_commit_on_a_board_in_a_subdirectory(
        tmp_path: Path, git_env: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The board's repository path comes from git's answer: findings name sub/.ledgit/...,
    from the subdirectory and (through the index) from the top, as the discovery path does."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", str(repo), cwd=tmp_path)
    ledgit(repo, "init", "sub")
    sub = repo / "sub"
    tid = create(sub, "Nested", "--by", "a")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "--no-verify", "-m", "board", cwd=repo)
    _break(sub, tid)
    git("add", "-A", cwd=repo)
    for where in (sub, repo):
        monkeypatch.chdir(where)
        assert run_hook("pre-commit", []) == 1
        assert f"sub/.ledgit/tasks/{tid}.md:4: schema:" in capsys.readouterr().err
        assert pre_commit(where) == 1
        assert f"sub/.ledgit/tasks/{tid}.md:4: schema:" in capsys.readouterr().err
    _fix(sub, tid)
    git("add", "-A", cwd=repo)
    monkeypatch.chdir(sub)
    assert run_hook("pre-commit", []) == 0, capsys.readouterr().err


_IN_HOOK = ("import os, sys\n"
            "sys.path[0] or sys.path.pop(0)\n"
            "from ledgit.hooks.dispatch import run_hook\n"
            "code = run_hook('pre-commit', [])\n"
            "try:\n"
            "    os.waitpid(-1, os.WNOHANG)\n"
            "    left = 'a child left'\n"
            "except ChildProcessError:\n"
            "    left = 'no child'\n"
            "heavy = sorted(m for m in ('pygit2', 'click', 'yaml', 'sqlite3')"
            " if m in sys.modules)\n"
            "print(code, left, heavy)\n")


def test_pre_commit_in_hook_leaves_no_process_and_imports_little(
        tmp_path: Path, git_env: Path) -> None:
    """The in-hook path starts its two git processes before it imports its checks; whether
    it reads tasks, finds none staged or refuses, both are gone when it returns (none
    outlives the hook), and it imports neither pygit2, click or sqlite3, nor PyYAML for
    valid records (bench precommit: the floor of asking Git; pathlib is imported at the top of
    the modules since issue 23, within the hook's figure)."""
    repo = new_repo(tmp_path / "repo")
    tid = create(repo, "Light", "--by", "a")
    commit_all(repo, "task")

    def hook() -> str:
        proc = subprocess.run([PY, "-c", _IN_HOOK], cwd=repo, capture_output=True, text=True,
                              check=False, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    (repo / "README").write_text("no task staged\n")
    git("add", "README", cwd=repo)
    assert hook() == "0 no child []"
    ledgit(repo, "update", tid, "--priority", "1", "--by", "a")
    git("add", "-A", cwd=repo)
    assert hook() == "0 no child []"
    _break(repo, tid)
    git("add", "-A", cwd=repo)
    assert hook() == "1 no child ['yaml']"  # the generic reader words the schema error
