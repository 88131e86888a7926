"""``ledgit sync`` (issue 32, DESIGN §13): an agent's loop in one process, on real clones of a
bare remote (a local path, and ``git daemon`` on 127.0.0.1).

What a user of an agent fleet relies on: both sides' edits of one task survive with no
person, the user's own staged and unstaged work is left exactly as it was, a code conflict
stops in Git's own state that ``ledgit sync`` finishes after the fix, a push the remote
refused is never reported as done, a lost race is fetched and merged again, and one sync
starts no process per file (counted).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from gitutil import git
from leaseutil import clone, git_daemon, ledgit_env, lg, make_remote

from ledgit.core.record import parse_record


def events(repo: Path, task: str) -> list[dict[str, object]]:
    text = (repo / ".ledgit" / "history" / f"{task}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def notes_of(repo: Path, task: str) -> list[str]:
    record = parse_record((repo / ".ledgit" / "tasks" / f"{task}.md").read_bytes(), "t")
    return [str(n["text"]) for n in record.fields.get("notes") or []]


def sync(repo: Path, *args: str, check: int | None = 0) -> dict[str, object]:
    proc = lg(repo, "sync", "--json", *args, check=check)
    return json.loads(proc.stdout) if proc.returncode == 0 else {"stderr": proc.stderr,
                                                                   "code": proc.returncode}


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Path, Path, Path, list[str]]:
    """A bare remote with a board of 3 tasks and a code file, and two clones A and B."""
    remote, seed, ids = make_remote(tmp_path, tasks=3)
    (seed / "code.py").write_text("one\ntwo\nthree\n", encoding="utf-8")
    git("add", "code.py", cwd=seed)
    git("commit", "-q", "-m", "code", cwd=seed)
    git("push", "-q", "origin", "main", cwd=seed)
    a, b = clone(remote, tmp_path / "A"), clone(remote, tmp_path / "B")
    return remote, a, b, ids


def test_two_agents_edit_one_task_and_sync_with_no_person(fleet: tuple[Path, Path, Path,
                                                                       list[str]]) -> None:
    """A and B both add a note and set the response of one task; A syncs, then B (a rebase
    that merges the task file and the history in process), then A (a fast-forward): both
    notes are everywhere, one history head, the remote has every event, nothing left to
    commit, and each clone's index answers the merged task."""
    remote, a, b, ids = fleet
    task = ids[0]
    lg(a, "note", task, "from A", "--by", "agent-a")
    lg(b, "note", task, "from B", "--by", "agent-b")
    lg(b, "update", task, "--response", "B was here", "--by", "agent-b")
    old_tip = git("rev-parse", "main", cwd=remote)
    first = sync(a)
    assert first["committed"]["tasks"] == [task]  # type: ignore[index]
    assert first["pushed"] == {"branch": "main", "old": old_tip, "new": first["head"]}
    second = sync(b)
    assert [i["how"] for i in second["integrations"]] == ["rebased"]  # type: ignore[union-attr]
    assert sorted(second["integrations"][0]["merged"]) == [  # type: ignore[index]
        f".ledgit/history/{task}.jsonl", f".ledgit/tasks/{task}.md"]
    third = sync(a)
    assert [i["how"] for i in third["integrations"]] == ["fast-forward"]  # type: ignore[union-attr]
    assert third["changed_tasks"] == [task]
    for clone_dir in (a, b):
        assert sorted(notes_of(clone_dir, task)) == ["from A", "from B"]
        assert git("status", "--porcelain", "--", ".ledgit", cwd=clone_dir) == ""
        assert lg(clone_dir, "verify", "--all").returncode == 0
        got = json.loads(lg(clone_dir, "get", task, "--json").stdout)
        assert got["response"] == "B was here"
        assert sorted(n["text"] for n in got["notes"]) == ["from A", "from B"]
    assert git("rev-parse", "HEAD", cwd=a) == git("rev-parse", "HEAD", cwd=b) \
        == git("rev-parse", "main", cwd=remote)
    tip_history = git("show", f"main:.ledgit/history/{task}.jsonl", cwd=remote)
    assert "from A" in tip_history and "from B" in tip_history


def test_the_users_own_work_is_left_exactly_as_it_was(fleet: tuple[Path, Path, Path,
                                                                   list[str]]) -> None:
    """Staged and unstaged changes outside the board are neither committed nor touched."""
    _remote, a, b, ids = fleet
    lg(a, "note", ids[1], "upstream moves", "--by", "agent-a")
    sync(a)
    (b / "code.py").write_text("one\ntwo\nthree\nstaged line\n", encoding="utf-8")
    git("add", "code.py", cwd=b)
    (b / "code.py").write_text("one\ntwo\nthree\nstaged line\nunstaged line\n",
                               encoding="utf-8")
    (b / "scratch.txt").write_text("untracked\n", encoding="utf-8")
    staged, unstaged = git("diff", "--cached", cwd=b), git("diff", cwd=b)
    lg(b, "note", ids[2], "mine", "--by", "agent-b")
    out = sync(b)
    assert out["committed"]["tasks"] == [ids[2]]  # type: ignore[index]
    assert git("diff", "--cached", cwd=b) == staged
    assert git("diff", cwd=b) == unstaged
    assert (b / "scratch.txt").read_text(encoding="utf-8") == "untracked\n"
    shown = git("show", "--name-only", "--format=", "HEAD", cwd=b).split()
    assert shown and all(p.startswith(".ledgit/") for p in shown)
    assert git("show", "HEAD:code.py", cwd=b) == "one\ntwo\nthree"


def test_merge_mode_makes_a_merge_commit(fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """``--merge`` (and ``pull.rebase=false``) join the two tips with a merge commit whose
    parents are the local tip and the remote's."""
    remote, a, b, ids = fleet
    lg(a, "note", ids[0], "a", "--by", "agent-a")
    sync(a)
    lg(b, "note", ids[0], "b", "--by", "agent-b")
    git("config", "pull.rebase", "false", cwd=b)
    out = sync(b)
    assert out["integrations"][0]["how"] == "merged"  # type: ignore[index]
    parents = git("rev-list", "--parents", "-1", "HEAD", cwd=b).split()[1:]
    assert len(parents) == 2 and parents[1] == out["pushed"]["old"]  # type: ignore[index]
    assert sorted(notes_of(b, ids[0])) == ["a", "b"]
    assert git("rev-parse", "main", cwd=remote) == git("rev-parse", "HEAD", cwd=b)


def test_a_code_conflict_stops_in_gits_state_and_sync_finishes_after_the_fix(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """Both sides change the same line of code.py and the same task: the sync stops with
    exit 1 naming code.py, the task files already merged (no markers), Git's rebase stopped;
    after the person's fix and ``git add``, ``ledgit sync`` finishes the rebase and pushes."""
    remote, a, b, ids = fleet
    for repo, word in ((a, "alpha"), (b, "beta")):
        (repo / "code.py").write_text(f"one\n{word}\nthree\n", encoding="utf-8")
        git("commit", "-q", "-am", f"code {word}", cwd=repo)
        lg(repo, "note", ids[0], f"note {word}", "--by", word)
    sync(a)
    stopped = sync(b, check=1)
    assert "code.py" in str(stopped["stderr"]) and "ledgit sync again" in str(stopped["stderr"])
    # the way back is named with what it costs (an abort drops writes made meanwhile)
    assert "git rebase --abort goes back but drops" in str(stopped["stderr"])
    assert (b / ".git" / "rebase-merge").is_dir() or (b / ".git" / "rebase-apply").is_dir()
    for path in (b / ".ledgit" / "tasks").iterdir():
        assert "<<<<<<<" not in path.read_text(encoding="utf-8")
    (b / "code.py").write_text("one\nalpha and beta\nthree\n", encoding="utf-8")
    git("add", "code.py", cwd=b)
    done = sync(b)
    assert done["pushed"] is not None
    assert git("rev-parse", "main", cwd=remote) == git("rev-parse", "HEAD", cwd=b)
    assert git("show", "main:code.py", cwd=remote) == "one\nalpha and beta\nthree"
    assert sorted(notes_of(b, ids[0])) == ["note alpha", "note beta"]
    assert lg(b, "verify", "--all").returncode == 0


def test_a_dirty_file_in_the_way_is_named_and_nothing_is_overwritten(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """Upstream changes code.py, which B changed but did not commit: exit 1 naming it, B's
    edit kept byte for byte, the branch not moved past the board's own commit."""
    _remote, a, b, _ids = fleet
    (a / "code.py").write_text("one\nTWO\nthree\n", encoding="utf-8")
    git("commit", "-q", "-am", "upstream code", cwd=a)
    git("push", "-q", "origin", "main", cwd=a)
    (b / "code.py").write_text("one\ntwo\nthree\nmine\n", encoding="utf-8")
    before = git("rev-parse", "HEAD", cwd=b)
    out = sync(b, check=1)
    assert "code.py" in str(out["stderr"])
    assert (b / "code.py").read_text(encoding="utf-8") == "one\ntwo\nthree\nmine\n"
    assert git("rev-parse", "HEAD", cwd=b) == before


def test_an_unrecorded_hand_edit_is_refused_and_nothing_committed(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """What the pre-commit hook refuses, sync refuses: the file, the rule, the way on."""
    _remote, a, _b, ids = fleet
    path = a / ".ledgit" / "tasks" / f"{ids[0]}.md"
    path.write_text(path.read_text(encoding="utf-8").replace("task 0", "renamed by hand"),
                    encoding="utf-8")
    before = git("rev-parse", "HEAD", cwd=a)
    index_before = (a / ".git" / "index").read_bytes()
    out = sync(a, check=1)
    assert "record-head" in str(out["stderr"]) and "ledgit record" in str(out["stderr"])
    assert git("rev-parse", "HEAD", cwd=a) == before
    assert (a / ".git" / "index").read_bytes() == index_before
    lg(a, "record", ids[0], "--by", "person")
    assert sync(a)["committed"]["tasks"] == [ids[0]]  # type: ignore[index]


def test_a_refused_push_is_never_reported_done(fleet: tuple[Path, Path, Path,
                                                               list[str]]) -> None:
    """The remote's pre-receive hook refuses: exit 1 with its words, the commit kept here,
    the remote unmoved -- the local remote's hooks run (Git's push, not libgit2's local
    transport, which would write into the remote without them)."""
    remote, a, _b, ids = fleet
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'frozen for the release' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    tip = git("rev-parse", "main", cwd=remote)
    lg(a, "note", ids[0], "kept", "--by", "agent-a")
    out = sync(a, check=1)
    assert "frozen for the release" in str(out["stderr"])
    assert git("rev-parse", "main", cwd=remote) == tip
    assert git("rev-parse", "HEAD", cwd=a) != tip  # the commit is kept here


def _race_hook(remote: Path, other: str) -> None:
    """An ``update`` hook that, the first time, moves main to ``other`` itself: the push in
    flight then finds the ref moved under its lease (receive-pack's compare-and-swap)."""
    flag = remote / "raced-once"
    hook = remote / "hooks" / "update"
    hook.write_text(f"#!/bin/sh\n[ -e '{flag}' ] && exit 0\ntouch '{flag}'\n"
                    f"git update-ref refs/heads/main {other}\nexit 0\n", encoding="utf-8")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)


def test_a_lost_race_is_fetched_merged_and_pushed_again(
        fleet: tuple[Path, Path, Path, list[str]]) -> None:
    """Another agent's push lands while ours is in flight: our push fails on the lease,
    sync fetches, merges and pushes again (push_races 1); the other push is not
    overwritten."""
    remote, a, b, ids = fleet
    lg(b, "note", ids[1], "the racer", "--by", "agent-b")
    git("add", "-A", ".ledgit", cwd=b)
    git("commit", "-q", "-m", "racer", cwd=b)
    racer = git("rev-parse", "HEAD", cwd=b)
    git("push", "-q", "origin", "HEAD:refs/heads/racer", cwd=b)  # its objects are on the remote
    _race_hook(remote, racer)
    lg(a, "note", ids[0], "ours", "--by", "agent-a")
    out = sync(a)
    assert out["push_races"] == 1
    tip = git("rev-parse", "main", cwd=remote)
    assert git("merge-base", "--is-ancestor", racer, tip, cwd=remote) == ""
    assert "the racer" in git("show", f"main:.ledgit/history/{ids[1]}.jsonl", cwd=remote)
    assert "ours" in git("show", f"main:.ledgit/history/{ids[0]}.jsonl", cwd=remote)


def test_over_git_daemon_sync_runs_in_process_and_the_lease_holds(tmp_path: Path) -> None:
    """Over ``git daemon`` both fetch and push are libgit2's, in this process; the remote's
    hooks run (the daemon's receive-pack); a race is retried; a refusal is reported."""
    remote, _seed, ids = make_remote(tmp_path, tasks=2)
    with git_daemon(tmp_path) as url:
        a = clone(url + "remote.git", tmp_path / "A")
        b = clone(url + "remote.git", tmp_path / "B")
        lg(b, "note", ids[1], "the racer", "--by", "agent-b")
        git("add", "-A", ".ledgit", cwd=b)
        git("commit", "-q", "-m", "racer", cwd=b)
        racer = git("rev-parse", "HEAD", cwd=b)
        git("push", "-q", "origin", "HEAD:refs/heads/racer", cwd=b)
        _race_hook(remote, racer)
        lg(a, "note", ids[0], "ours", "--by", "agent-a")
        out = sync(a)
        assert out["transport"] == {"fetch": "library", "push": "library"}
        assert out["push_races"] == 1
        tip = git("rev-parse", "main", cwd=remote)
        assert out["head"] == tip
        assert git("merge-base", "--is-ancestor", racer, tip, cwd=remote) == ""
        hook = remote / "hooks" / "pre-receive"
        hook.write_text("#!/bin/sh\necho 'no more' >&2\nexit 1\n", encoding="utf-8")
        hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
        lg(a, "note", ids[0], "refused", "--by", "agent-a")
        refused = sync(a, check=1)
        assert "refused the push" in str(refused["stderr"])
        assert git("rev-parse", "main", cwd=remote) == tip


def test_worktree_per_agent_brings_main_in_and_pushes_its_own_branch(tmp_path: Path) -> None:
    """Agents in worktrees on their own branches: ``ledgit sync --branch main`` merges main
    into the agent's branch; a branch with an upstream is pushed there, one without is not
    pushed anywhere."""
    remote, _seed, ids = make_remote(tmp_path, tasks=2)
    main = clone(remote, tmp_path / "main")
    git("worktree", "add", "-q", "-b", "agent-1", str(tmp_path / "w1"), cwd=main)
    git("worktree", "add", "-q", "-b", "agent-2", str(tmp_path / "w2"), cwd=main)
    w1, w2 = tmp_path / "w1", tmp_path / "w2"
    git("push", "-q", "-u", "origin", "agent-1", cwd=w1)
    lg(main, "note", ids[0], "on main", "--by", "lead")
    sync(main)
    lg(w1, "note", ids[0], "agent one", "--by", "agent-1")
    one = sync(w1, "--branch", "main")
    assert one["pushed"]["branch"] == "agent-1"  # type: ignore[index]
    assert sorted(notes_of(w1, ids[0])) == ["agent one", "on main"]
    assert git("rev-parse", "agent-1", cwd=remote) == git("rev-parse", "HEAD", cwd=w1)
    lg(w2, "note", ids[1], "agent two", "--by", "agent-2")
    two = sync(w2, "--branch", "main")
    assert two["pushed"] is None
    assert "on main" in notes_of(w2, ids[0])
    assert git("branch", "--list", "agent-2", cwd=remote) == ""


def test_usage_errors_are_one_line_and_change_nothing(tmp_path: Path) -> None:
    """No remote, a detached HEAD, --rebase with --merge: exit 2, one line, no traceback."""
    _remote, seed, _ids = make_remote(tmp_path, tasks=1)
    git("remote", "remove", "origin", cwd=seed)
    out = sync(seed, check=2)
    assert "no remote to share" in str(out["stderr"]) and "Traceback" not in str(out["stderr"])
    git("checkout", "-q", "--detach", cwd=seed)
    assert "detached" in str(sync(seed, check=2)["stderr"])
    assert "exclude" in str(sync(seed, "--rebase", "--merge", check=2)["stderr"])


def test_one_sync_starts_no_process_per_file(tmp_path: Path) -> None:
    """With ledgit's hooks and driver installed, a sync that merges a task both sides changed
    runs no hook and no merge driver: over ``git daemon`` no git process at all, over a
    local path one (the push), with the git transport two (fetch, push). Counted by a
    ``git`` on PATH that logs each run before it runs the real one."""
    remote, _seed, ids = make_remote(tmp_path, tasks=2)
    shims = tmp_path / "shims"
    shims.mkdir()
    log = tmp_path / "git-runs.log"
    real = git("--exec-path", cwd=tmp_path) + "/git"
    shim = shims / "git"
    shim.write_text(f"#!/bin/sh\necho \"$1\" >> '{log}'\nexec '{real}' \"$@\"\n",
                    encoding="utf-8")
    shim.chmod(0o755)
    counts = {}
    with git_daemon(tmp_path) as url:
        for name, where, transport in (("daemon", url + "remote.git", None),
                                       ("local", str(remote), None),
                                       ("cli", str(remote), "git")):
            a, b = clone(where, tmp_path / f"{name}-A"), clone(where, tmp_path / f"{name}-B")
            for repo in (a, b):
                lg(repo, "install")
            if transport:
                git("config", "ledgit.syncTransport", transport, cwd=b)
            lg(a, "note", ids[0], f"a {name}", "--by", "agent-a")
            sync(a)
            lg(b, "note", ids[0], f"b {name}", "--by", "agent-b")
            log.write_text("", encoding="utf-8")
            env_path = f"{shims}{os.pathsep}{os.environ['PATH']}"
            proc = subprocess.run([sys.executable, "-m", "ledgit", "sync", "--json"], cwd=b,
                                  env=ledgit_env(PATH=env_path), capture_output=True,
                                  text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
            merged = json.loads(proc.stdout)["integrations"][0]["merged"]
            assert len(merged) == 2  # the task file and the history, merged in process
            counts[name] = log.read_text(encoding="utf-8").split()
    assert counts["daemon"] == []
    assert counts["local"] == ["push"]
    assert sorted(counts["cli"]) == ["fetch", "push"]


def test_a_branch_per_agent_is_never_rewritten_once_pushed(tmp_path: Path) -> None:
    """A plain sync of an agent's branch with no upstream pushes it under its name and makes
    it track that (as git push -u); a later ``--branch main`` then merges main in (the
    pushed commits stay ancestors) and pushes there. A ``--branch`` the remote lacks is
    exit 4, nothing fetched in."""
    remote, _seed, ids = make_remote(tmp_path, tasks=2)
    main = clone(remote, tmp_path / "main")
    git("worktree", "add", "-q", "-b", "agent-b", str(tmp_path / "wb"), cwd=main)
    wb = tmp_path / "wb"
    lg(wb, "note", ids[1], "b's first", "--by", "agent-b")
    first = sync(wb)
    assert first["pushed"]["branch"] == "agent-b"  # type: ignore[index]
    assert git("config", "branch.agent-b.merge", cwd=wb) == "refs/heads/agent-b"
    pushed = git("rev-parse", "agent-b", cwd=remote)
    lg(main, "note", ids[0], "main moves", "--by", "lead")
    sync(main)
    lg(wb, "note", ids[1], "b's second", "--by", "agent-b")
    typo = sync(wb, "--branch", "mian", check=4)
    assert "no such branch" in str(typo["stderr"]) and "mian" in str(typo["stderr"])
    second = sync(wb, "--branch", "main")
    assert [i["how"] for i in second["integrations"]] == ["merged"]  # type: ignore[union-attr]
    tip = git("rev-parse", "agent-b", cwd=remote)
    assert tip == git("rev-parse", "HEAD", cwd=wb)
    assert git("merge-base", "--is-ancestor", pushed, tip, cwd=remote) == ""
    assert "main moves" in notes_of(wb, ids[0])


def test_no_remote_and_a_missing_remote_are_named(tmp_path: Path) -> None:
    """A repository with no remote says how to add one (exit 2); a remote whose directory
    is gone is exit 69 naming it, and a board change committed before is said to be kept."""
    remote, seed, ids = make_remote(tmp_path, tasks=1)
    a = clone(remote, tmp_path / "A")
    git("remote", "set-url", "origin", str(tmp_path / "nowhere.git"), cwd=a)
    lg(a, "note", ids[0], "kept", "--by", "agent-a")
    gone = sync(a, check=69)
    assert "nowhere.git: no such directory" in str(gone["stderr"])
    assert "committed here as" in str(gone["stderr"])
    assert "kept" in git("show", f"HEAD:.ledgit/history/{ids[0]}.jsonl", cwd=a)
    git("remote", "remove", "origin", cwd=seed)
    none = sync(seed, check=2)
    assert "no remote to share the board through" in str(none["stderr"])


def test_no_push_in_a_repository_with_no_remote_commits_the_board(tmp_path: Path) -> None:
    """The README's tour has no remote: ``ledgit sync --no-push`` commits the board's changes
    and says nothing was fetched or pushed (exit 0); the user's other work stays unstaged;
    plain ``ledgit sync`` there is exit 2 naming both ways on."""
    repo = tmp_path / "work"
    git("init", "-q", str(repo), cwd=tmp_path)
    (repo / "code.py").write_text("x = 1\n", encoding="utf-8")
    assert lg(repo, "init").returncode == 0
    task = lg(repo, "create", "first task").stdout.strip()
    said = lg(repo, "sync", "--no-push").stdout
    assert "committed 1 task(s)" in said and "no remote" in said
    assert git("ls-files", ".ledgit/tasks", cwd=repo).endswith(f"{task}.md")
    assert git("status", "--porcelain", cwd=repo) == "?? code.py"
    refused = lg(repo, "sync", check=2).stderr
    assert "git remote add origin URL" in refused and "--no-push" in refused
