"""Remote leases (issue 24 items 1 and 3, docs/leases.md): a claim takes a lease ref on the
board's remote by compare-and-swap, in real clones of a real bare remote, over a file path and
over ``git daemon`` on 127.0.0.1; ledgit runs as a subprocess, as an agent runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from gitutil import git
from leaseutil import (
    clone,
    git_daemon,
    lease_record,
    lease_refs,
    ledgit_env,
    lg,
    make_remote,
)

pytest_plugins = ["gitutil"]


def history_lines(root: Path, task: str) -> int:
    return len((root / ".ledgit" / "history" / f"{task}.jsonl").read_text().splitlines())


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def test_a_claim_takes_the_lease_and_another_clone_is_refused(tmp_path: Path) -> None:
    remote, seed, (task,) = make_remote(tmp_path)
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    lg(a, "claim", task, "--by", "alice")
    assert set(lease_refs(remote)) == {task}
    record = json.loads(lease_record(remote, task).splitlines()[-1])
    assert (record["state"], record["by"], record["ttl"]) == ("held", "alice", 1800)
    before = (b / ".ledgit" / "tasks" / f"{task}.md").read_bytes()
    refused = lg(b, "claim", task, "--by", "bob", check=6)
    line = one_line(refused.stderr)
    assert "leased by alice since" in line and "on origin" in line
    assert "runs out at" in line and "nothing written" in line
    assert (b / ".ledgit" / "tasks" / f"{task}.md").read_bytes() == before
    assert history_lines(b, task) == 1
    # ready leaves the leased task out, and says why; list marks it
    ready = lg(b, "ready")
    assert task not in ready.stdout
    assert "1 leased or ended on the remote (ledgit lease list" in ready.stderr
    row = json.loads(lg(b, "list", "--json").stdout)["tasks"][0]
    assert row["lease"]["by"] == "alice" and row["lease"]["live"] is True
    assert "{leased by alice until" in lg(b, "list").stdout
    # the holder renews and ends it; then the end marker keeps a clone that has not pulled off
    lg(a, "heartbeat", task, "--by", "alice")
    lg(a, "complete", task, "--by", "alice", "--response", "done")
    record = json.loads(lease_record(remote, task).splitlines()[-1])
    assert (record["state"], record["op"]) == ("ended", "complete")
    line = one_line(lg(b, "claim", task, "--by", "bob", check=6).stderr)
    assert "completed by alice at" in line and "pull to see it" in line
    assert task not in lg(b, "ready").stdout
    # once the end is pulled, a reopen makes it claimable again (the end marker is known)
    git("add", "-A", cwd=a)
    git("commit", "-q", "-m", "done", cwd=a)
    git("push", "-q", cwd=a)
    git("pull", "-q", "--ff-only", cwd=b)
    lg(b, "reopen", task, "--by", "bob")
    lg(b, "claim", task, "--by", "bob")
    assert json.loads(lease_record(remote, task).splitlines()[-1])["by"] == "bob"
    lg(b, "release", task, "--by", "bob")
    assert lease_refs(remote) == {}


def test_worktrees_of_one_clone_share_the_remote_leases(tmp_path: Path) -> None:
    remote, seed, (task,) = make_remote(tmp_path)
    a = clone(remote, tmp_path / "a")
    git("worktree", "add", "-q", "-b", "side", str(tmp_path / "a2"), "--track", "origin/main",
        cwd=a)
    git("worktree", "add", "-q", "--detach", str(tmp_path / "a3"), cwd=a)  # no upstream
    lg(a, "claim", task, "--by", "alice")
    line = one_line(lg(tmp_path / "a2", "claim", task, "--by", "bob", check=6).stderr)
    assert "leased by alice" in line
    line = one_line(lg(tmp_path / "a3", "claim", task, "--by", "carol", check=6).stderr)
    assert "leased by alice" in line and "on origin" in line


def test_leases_none_keeps_claims_local(tmp_path: Path) -> None:
    remote, seed, (task,) = make_remote(tmp_path, config="leases: none\n")
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    lg(a, "claim", task, "--by", "alice")
    lg(b, "claim", task, "--by", "bob")
    assert lease_refs(remote) == {}


def test_a_bad_leases_setting_is_one_line(tmp_path: Path) -> None:
    remote, seed, (task,) = make_remote(tmp_path)
    with (seed / ".ledgit" / "config.yaml").open("a") as fh:
        fh.write("leases: a..b\n")
    line = one_line(lg(seed, "claim", task, "--by", "alice", check=2).stderr)
    assert "config.yaml:4: leases: invalid remote name 'a..b'" in line


def test_leases_over_git_daemon(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    _, seed, (task, other) = make_remote(served, tasks=2)
    with git_daemon(served) as url:
        a = clone(url + "remote.git", tmp_path / "a")
        b = clone(url + "remote.git", tmp_path / "b")
        lg(a, "claim", task, "--by", "alice")
        line = one_line(lg(b, "claim", task, "--by", "bob", check=6).stderr)
        assert "leased by alice" in line
        lg(b, "claim", other, "--by", "bob")
        assert json.loads(lg(a, "ready", "--json").stdout)["count"] == 0
        lg(a, "heartbeat", task, "--by", "alice")
        lg(a, "drop", task, "--by", "alice", "--reason", "not needed")
        listed = json.loads(lg(b, "lease", "list", "--json").stdout)["leases"]
        assert {(x["task"], x["state"], x["by"]) for x in listed} == {
            (task, "ended", "alice"), (other, "held", "bob")}
    assert lease_refs(served / "remote.git")[task]


def test_an_expired_lease_is_taken_over_only_with_take_over(tmp_path: Path) -> None:
    remote, seed, (task,) = make_remote(tmp_path, ttl="1s")
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    lg(a, "claim", task, "--by", "alice")
    time.sleep(1.5)
    line = one_line(lg(b, "claim", task, "--by", "bob", check=6).stderr)
    assert "ran out at" in line and "claim --take-over" in line
    lg(b, "claim", task, "--by", "bob", "--take-over")
    record = json.loads(lease_record(remote, task).splitlines()[-1])
    assert (record["by"], record["took_over_from"]) == ("bob", "alice")
    # the loser is told, at every refusal, who ended its lease and how
    for argv in (["heartbeat", task], ["complete", task, "--response", "x"],
                 ["release", task]):
        line = one_line(lg(a, *argv, "--by", "alice", check=6).stderr)
        assert "alice's lease was taken over by bob" in line, argv
    lg(b, "complete", task, "--by", "bob", "--response", "done")
    line = one_line(lg(a, "heartbeat", task, "--by", "alice", check=6).stderr)
    assert "completed by bob" in line and "claim is over" in line


def test_a_killed_agents_lease_runs_out_with_nothing_running(tmp_path: Path) -> None:
    remote, seed, (task,) = make_remote(tmp_path, ttl="2s")
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    agent = subprocess.Popen(
        ["sh", "-c", f"{sys.executable} -m ledgit claim {task} --by alice || exit 1; "
                     f"while :; do {sys.executable} -m ledgit heartbeat {task} --by alice "
                     f"|| exit 1; sleep 0.3; done"],
        cwd=a, env=ledgit_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while task not in lease_refs(remote):
            assert agent.poll() is None, agent.stderr.read() if agent.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.1)
        time.sleep(2.5)  # a live, renewed lease: longer than the TTL
        assert one_line(lg(b, "claim", task, "--by", "bob", check=6).stderr)
    finally:
        os.killpg(agent.pid, signal.SIGKILL)
        agent.wait(timeout=10)
    time.sleep(2.5)
    expired = json.loads(lg(b, "lease", "list", "--expired", "--json").stdout)["leases"]
    assert [x["task"] for x in expired] == [task]
    assert task in lg(b, "ready").stdout
    lg(b, "claim", task, "--by", "bob", "--take-over")


def test_lease_prune_removes_only_expired_leases(tmp_path: Path) -> None:
    remote, seed, (t1, t2) = make_remote(tmp_path, tasks=2, ttl="8s")
    a = clone(remote, tmp_path / "a")
    lg(a, "claim", t1, "--by", "alice")
    time.sleep(8.3)  # t1's lease runs out; t2's (claimed now) lives 8 s, under load too
    lg(a, "claim", t2, "--by", "alice")
    doctor = lg(a, "doctor", check=None).stdout
    assert f"lease: {t1} on origin: leased by alice" in doctor and "ran out at" in doctor
    assert f"lease: {t2}" not in doctor
    pruned = json.loads(lg(a, "lease", "prune", "--json").stdout)
    assert pruned["pruned"] == [t1] and pruned["kept"] == []
    assert set(lease_refs(remote)) == {t2}


def test_a_remote_refusing_the_namespace_is_one_line(tmp_path: Path) -> None:
    remote, seed, (task,) = make_remote(tmp_path)
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\nwhile read old new ref; do case $ref in refs/ledgit/*)\n"
                    "  echo 'custom refs are not allowed here' >&2; exit 1;; esac; done\n")
    hook.chmod(0o755)
    a = clone(remote, tmp_path / "a")
    before = (a / ".ledgit" / "tasks" / f"{task}.md").read_bytes()
    line = one_line(lg(a, "claim", task, "--by", "alice", check=69).stderr)
    assert "lease remote origin: refuses refs/ledgit/leases/" in line
    assert "custom refs are not allowed here" in line and "claim --offline" in line
    assert (a / ".ledgit" / "tasks" / f"{task}.md").read_bytes() == before
    lg(a, "claim", task, "--by", "alice", "--offline")
    got = json.loads(lg(a, "get", task, "--json").stdout)
    assert got["lease"]["state"] == "unconfirmed"
    assert "UNCONFIRMED" in lg(a, "get", task).stdout
    # an end cannot write its marker there: it is said, and the end is written
    done = lg(a, "complete", task, "--by", "alice", "--response", "ok")
    assert "warning" in one_line(done.stderr)


def test_an_unreachable_remote_is_one_line(tmp_path: Path) -> None:
    remote, seed, (task,) = make_remote(tmp_path)
    a = clone(remote, tmp_path / "a")
    git("remote", "set-url", "origin", str(tmp_path / "gone.git"), cwd=a)
    line = one_line(lg(a, "claim", task, "--by", "alice", check=69).stderr)
    assert line.startswith(f"ledgit: {task}: lease remote origin: unreachable")
    assert "nothing written" in line
    assert history_lines(a, task) == 1
    listed = lg(a, "list")  # reads go on, from the leases as last seen
    assert task in listed.stdout and "not refreshed" in one_line(listed.stderr)
    line = one_line(lg(a, "lease", "list", check=0).stderr)
    assert "not refreshed" in line


def test_the_loser_of_a_local_takeover_is_told_who_and_how(tmp_path: Path) -> None:
    root = tmp_path / "solo"
    git("init", "-q", str(root), cwd=tmp_path)
    lg(root, "init")
    (root / ".ledgit" / "config.yaml").write_text("claim_ttl: 1s\n")
    task = lg(root, "create", "t").stdout.strip()
    lg(root, "claim", task, "--by", "alice")
    time.sleep(1.2)
    lg(root, "claim", task, "--by", "bob", "--take-over")
    line = one_line(lg(root, "heartbeat", task, "--by", "alice", check=6).stderr)
    assert "alice's claim was taken over by bob at" in line
    lg(root, "complete", task, "--by", "bob", "--response", "done")
    line = one_line(lg(root, "heartbeat", task, "--by", "alice", check=6).stderr)
    assert "alice's claim was taken over by bob" in line
    assert "claim it first" not in line


def test_the_default_lease_remote_is_the_upstream_among_several(tmp_path: Path) -> None:
    remote, seed, (t1, t2) = make_remote(tmp_path, tasks=2)
    other = tmp_path / "other.git"
    git("init", "-q", "--bare", str(other), cwd=tmp_path)
    a = clone(remote, tmp_path / "a")
    git("remote", "add", "other", str(other), cwd=a)
    lg(a, "claim", t1, "--by", "alice")  # main tracks origin/main: origin holds it
    assert set(lease_refs(remote)) == {t1} and lease_refs(other) == {}
    git("checkout", "-q", "--detach", cwd=a)  # no upstream, two remotes: a local claim
    lg(a, "claim", t2, "--by", "alice")
    assert set(lease_refs(remote)) == {t1} and lease_refs(other) == {}
