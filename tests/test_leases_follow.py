"""Leases follow the claims they guard (issue 36 item 2, docs/leases.md "Whose leases"): after
a rewrite, a reset or a checkout drops a claim here, the claimant's ``release``, ``heartbeat``
and lifecycle ends still act on its lease on the remote; ``doctor`` and ``lease list --mine``
name the leases of this clone no claim guards, with the command that ends them; and
:func:`ledgit.operations.leases.held_leases_note` words it for the ref guard. Real clones of a
bare remote (a path, and ``git daemon`` on 127.0.0.1); ledgit runs as a subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from gitutil import git
from leaseutil import clone, git_daemon, lease_record, lease_refs, ledgit_env, lg, make_remote

from ledgit.operations.leases import held_leases_note
from ledgit.storage.board import Board

pytest_plugins = ["gitutil"]


def rewrite(where: Path, *args: str) -> None:
    """``LEDGIT_ALLOW_REWRITE=1 git ARGS`` in ``where``: the documented deliberate rewrite."""
    subprocess.run(["git", *args], cwd=where, check=True, capture_output=True,
                   env={**ledgit_env(), "LEDGIT_ALLOW_REWRITE": "1"})


def claimed_then_reset(base: Path, url: str | None = None, *, tasks: int = 1,
                       hooks: bool = False) -> tuple[Path, Path, list[str]]:
    """A clone ``a`` where alice claimed every task, committed, then reset the commit away
    (the claims are gone here, the leases are not). Returns (remote, a, task ids)."""
    remote, _, ids = make_remote(base, tasks=tasks)
    a = clone(url + "remote.git" if url else remote, base / "a")
    if hooks:
        lg(a, "install")
    for task in ids:
        lg(a, "claim", task, "--by", "alice")
    git("commit", "-qam", "claims", cwd=a)
    rewrite(a, "reset", "-q", "--hard", "HEAD~1")
    for task in ids:
        assert "claim:" not in (a / ".ledgit" / "tasks" / f"{task}.md").read_text()
    assert set(lease_refs(remote)) == set(ids)
    return remote, a, ids


def test_release_after_a_rewrite_ends_the_lease_the_claim_guarded(tmp_path: Path) -> None:
    remote, a, (task,) = claimed_then_reset(tmp_path, hooks=True)
    before = (a / ".ledgit" / "tasks" / f"{task}.md").read_bytes()
    # someone who holds no lease is refused as before, and nothing changes
    refused = lg(a, "release", task, "--by", "bob", check=6)
    assert "no claim to release" in refused.stderr
    assert set(lease_refs(remote)) == {task}
    done = lg(a, "release", task, "--by", "alice")
    assert f"{task}: release: no claim here; the lease released" in done.stdout
    assert "alice's lease on origin released" in done.stderr
    assert lease_refs(remote) == {}
    assert (a / ".ledgit" / "tasks" / f"{task}.md").read_bytes() == before  # nothing here
    # another clone is offered the task again
    b = clone(remote, tmp_path / "b")
    assert task in lg(b, "ready").stdout
    lg(b, "claim", task, "--by", "bob")


def test_heartbeat_without_the_claim_renews_only_a_lease_it_holds(tmp_path: Path) -> None:
    remote, a, (task, other) = claimed_then_reset(tmp_path, tasks=2)
    old = json.loads(lease_record(remote, task).splitlines()[-1])
    got = json.loads(lg(a, "heartbeat", task, "--by", "alice", "--json").stdout)
    assert (got["written"], got["meta"]) == (False, {"lease": "renewed"})
    new = json.loads(lease_record(remote, task).splitlines()[-1])
    assert (new["by"], new["at"], new["state"]) == ("alice", old["at"], "held")
    assert new["renewed"] > old["renewed"] and new["expires"] > old["expires"]
    # bob holds no lease: refused as before; and a heartbeat never takes a lease anew here
    assert "no claim to renew" in lg(a, "heartbeat", task, "--by", "bob", check=6).stderr
    lg(a, "release", other, "--by", "alice")
    assert "no claim to renew" in lg(a, "heartbeat", other, "--by", "alice",
                                     check=6).stderr
    assert set(lease_refs(remote)) == {task}


def test_a_lifecycle_end_after_a_reset_ends_the_lease(tmp_path: Path) -> None:
    remote, a, (task, other) = claimed_then_reset(tmp_path, tasks=2)
    lg(a, "complete", task, "--by", "alice", "--response", "done anyway")
    lg(a, "drop", other, "--by", "alice", "--reason", "not needed")
    for t, op in ((task, "complete"), (other, "drop")):
        record = json.loads(lease_record(remote, t).splitlines()[-1])
        assert (record["state"], record["op"], record["by"]) == ("ended", op, "alice")


def test_doctor_and_lease_list_mine_name_the_leases_no_claim_guards(tmp_path: Path) -> None:
    remote, a, (task, other) = claimed_then_reset(tmp_path, tasks=2)
    lg(a, "claim", other, "--by", "alice")  # claimed again: guarded here
    b = clone(remote, tmp_path / "b")
    third = lg(b, "create", "b's own").stdout.strip()
    git("add", "-A", cwd=b)
    git("commit", "-qm", "b's task", cwd=b)
    lg(b, "claim", third, "--by", "alice")  # alice too, but in another clone
    end = f"ledgit release {task} --by alice"
    doctor = lg(a, "doctor", check=None).stdout
    assert f"lease: {task} on origin: leased by alice since" in doctor
    assert f"no claim guards it here (a rewrite, reset or checkout dropped it): {end} " \
           f"ends it" in doctor
    assert f"lease: {other}" not in doctor and third not in doctor
    mine = json.loads(lg(a, "lease", "list", "--mine", "--json").stdout)["leases"]
    assert {(x["task"], x["unguarded"], x["end"]) for x in mine} == {
        (task, True, end), (other, False, None)}
    text = lg(a, "lease", "list", "--mine").stdout
    assert f"no claim guards it here: {end} ends it" in text and third not in text
    everyone = {x["task"] for x in json.loads(lg(a, "lease", "list", "--json").stdout)[
        "leases"]}
    assert everyone == {task, other, third}
    # the line's own command ends it, and then nothing is left to say
    lg(a, *end.split()[1:])
    assert "no claim guards it" not in lg(a, "doctor", check=None).stdout


def test_held_leases_note_words_what_a_rewrite_left_for_the_ref_guard(tmp_path: Path
                                                                      ) -> None:
    remote, a, (task, other) = claimed_then_reset(tmp_path, tasks=2)
    board = Board(a)
    assert held_leases_note(board, []) == []
    expires = json.loads(lease_record(remote, task).splitlines()[-1])["expires"]
    assert held_leases_note(board, [task]) == [
        f"{task}: alice's lease on origin is still held (until {expires}); no claim guards "
        f"it here: ledgit release {task} --by alice ends it (ledgit claim {task} --by alice "
        f"takes the claim again)"]
    # the claims at the new tip can be given: a task claimed there says nothing
    assert held_leases_note(board, [task, "T-unknown"], {task: "alice"}) == []
    both = held_leases_note(board, [task, other], {task: "bob"})
    assert [line.split(":")[0] for line in both] == sorted([task, other])
    lg(a, "claim", other, "--by", "alice")  # claimed again in the work tree
    assert [line.split(":")[0] for line in held_leases_note(board, [task, other])] == [task]


def test_release_of_a_task_whose_file_is_not_here_over_git_daemon(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    with git_daemon(served) as url:
        remote, a, (task,) = claimed_then_reset(served, url)
        git("checkout", "-q", "--orphan", "elsewhere", cwd=a)  # a branch without the task
        git("rm", "-rqf", ".", cwd=a)
        lg(a, "init")
        assert lg(a, "release", task, "--by", "bob", check=4)
        got = json.loads(lg(a, "release", task, "--by", "alice", "--json").stdout)
        assert (got["id"], got["written"], got["meta"]) == (task, False,
                                                             {"lease": "released"})
        assert lease_refs(remote) == {}


def test_a_rewrite_that_drops_a_claim_says_the_lease_is_still_held(tmp_path: Path) -> None:
    """The ref guard's note after a deliberate rewrite (``LEDGIT_ALLOW_REWRITE=1 git reset
    --hard``) that drops alice's claim names the lease she still holds on the remote and the
    release that ends it; with the lease ended, the same rewrite says nothing of leases."""
    remote, _, (task,) = make_remote(tmp_path, tasks=1)
    a = clone(remote, tmp_path / "a")
    lg(a, "install")
    lg(a, "claim", task, "--by", "alice")
    git("commit", "-qam", "claim", cwd=a)
    said = subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=a,
                          capture_output=True, text=True,
                          env={**ledgit_env(), "LEDGIT_ALLOW_REWRITE": "1"})
    assert said.returncode == 0, said.stderr
    assert f"{task}: alice's lease on origin is still held" in said.stderr
    assert f"ledgit release {task} --by alice ends it" in said.stderr
    lg(a, "release", task, "--by", "alice")
    assert lease_refs(remote) == {}
    git("reset", "-q", "--hard", "ORIG_HEAD", cwd=a)  # the claim's commit again (a child)
    again = subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=a,
                           capture_output=True, text=True,
                           env={**ledgit_env(), "LEDGIT_ALLOW_REWRITE": "1"})
    assert again.returncode == 0 and "lease" not in again.stderr, again.stderr


def test_one_name_in_two_clones_does_not_hold_a_task_twice(tmp_path: Path) -> None:
    """Two clones on one machine whose agents left the name at Git's user.name claim under one
    name: the second clone's claim is refused while the first clone's lease is live (exit 6,
    the clone named, the fix: a name per agent), where it used to renew the lease as its own
    and both clones worked on the task. A worktree of the first clone is that clone; a claim
    --take-over in the second takes the lease on purpose (an agent that moved clones)."""
    remote, _, (task,) = make_remote(tmp_path)
    a, b = clone(remote, tmp_path / "a"), clone(remote, tmp_path / "b")
    lg(a, "claim", task, "--by", "dev")
    first = lease_record(remote, task)
    refused = lg(b, "claim", task, "--by", "dev", check=6).stderr
    assert "another clone" in refused and "--by" in refused and "LEDGIT_ACTOR" in refused
    assert lease_record(remote, task) == first  # nothing written
    assert "claim:" not in (b / ".ledgit" / "tasks" / f"{task}.md").read_text()
    wt = tmp_path / "wt"
    git("worktree", "add", "-q", "-b", "w", str(wt), cwd=a)
    lg(wt, "heartbeat", task, "--by", "dev")  # the same clone: its own lease
    lg(b, "claim", task, "--by", "dev", "--take-over")
    assert json.loads(lease_record(remote, task).splitlines()[-1])["clone"] == (
        (b / ".git" / "ledgit-clone").read_text().strip())
