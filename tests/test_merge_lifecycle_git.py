"""Merges keep the lifecycle, under real Git (issue 12 item 6): a claim's end beats a
heartbeat of it, and the loser of a claim ended by someone's completion hears who did it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gitflow import BODY, commit_all, create, fields, git_rc, ledgit, new_repo, task_file
from gitutil import git

pytest_plugins = ["gitutil"]


def _claimed(tmp_path: Path) -> tuple[Path, Path, str]:
    """main (worktree ``a``) with a task claimed by amy, and branch ``side`` (worktree ``b``)."""
    a = new_repo(tmp_path / "a")
    tid = create(a, "Shared", "--body", BODY, "--by", "lead")
    commit_all(a, "task")
    git("worktree", "add", "-q", "-b", "side", str(tmp_path / "b"), cwd=a)
    return a, tmp_path / "b", tid


@pytest.mark.parametrize(("end", "status"), [
    (("release",), "open"), (("wait", "--on", "review"), "waiting"),
    (("monitor", "--signal", "ci"), "monitoring")])
def test_a_claims_end_beats_a_later_heartbeat_in_a_merge(
        tmp_path: Path, git_env: Path, end: tuple[str, ...], status: str) -> None:
    a, b, tid = _claimed(tmp_path)
    ledgit(a, "claim", tid, "--by", "amy")
    commit_all(a, "amy claims")
    git("merge", "-q", "main", cwd=b)
    ledgit(b, *end[:1], tid, *end[1:], "--by", "amy")
    commit_all(b, f"amy: {end[0]}")
    ledgit(a, "heartbeat", tid, "--by", "amy")  # later than the end on the side branch
    commit_all(a, "amy: heartbeat")
    assert git_rc(a, "merge", "--no-edit", "side").returncode == 0
    f = fields(a, tid)
    assert f["status"] == status and "claim" not in f
    readout = json.loads(ledgit(a, "get", tid, "--json").out)
    assert not [u for u in readout["unknown"] if "contradictory" in u["reason"]]
    ledgit(a, "verify")
    ledgit(a, "verify", "--rev", "HEAD")


def test_the_loser_of_a_claim_ended_by_a_completion_hears_who_completed_it(
        tmp_path: Path, git_env: Path) -> None:
    a, b, tid = _claimed(tmp_path)
    ledgit(a, "claim", tid, "--by", "amy")
    ledgit(a, "heartbeat", tid, "--by", "amy")
    commit_all(a, "amy works")
    ledgit(b, "claim", tid, "--by", "bob")
    ledgit(b, "complete", tid, "--response", "bob shipped it", "--by", "bob")
    commit_all(b, "bob completes")
    assert git_rc(a, "merge", "--no-edit", "side").returncode == 0
    assert fields(a, tid)["status"] == "done" and "claim" not in fields(a, tid)
    r = ledgit(a, "heartbeat", tid, "--by", "amy", code=6)
    assert "completed by bob at " in r.err and "amy's claim" in r.err
    r = ledgit(a, "complete", tid, "--response", "me too", "--by", "amy", code=2)
    assert "completed by bob at " in r.err
    r = ledgit(a, "update", tid, "--next-action", "follow up", "--by", "amy")
    assert "completed by bob at " in r.err  # a note: the write itself goes through
    r = ledgit(a, "update", tid, "--next-action", "follow up again", "--by", "amy")
    assert "completed by bob" not in r.err  # said once
    r = ledgit(a, "heartbeat", tid, "--by", "carl", code=6)
    assert "completed by" not in r.err  # carl never held a claim
    ledgit(a, "verify")


def test_a_completion_merged_with_a_later_drop_is_done_without_the_drop_outcome(
        tmp_path: Path, git_env: Path) -> None:
    """Done beats dropped; the drop outcome (the later side's) would contradict it, so it
    follows its status out (task file and history agree); verify and the hook flag such a
    record written by hand, naming the file and the field."""
    a, b, tid = _claimed(tmp_path)
    ledgit(a, "complete", tid, "--response", "amy shipped it", "--by", "amy")
    commit_all(a, "amy completes")
    ledgit(b, "drop", tid, "--reason", "not needed", "--by", "bob")  # later
    commit_all(b, "bob drops")
    assert git_rc(a, "merge", "--no-edit", "side").returncode == 0
    f = fields(a, tid)
    assert f["status"] == "done" and "outcome" not in f and f["response"] == "amy shipped it"
    ledgit(a, "verify")
    ledgit(a, "verify", "--rev", "HEAD")
    path = task_file(a, tid)
    path.write_text(path.read_text().replace(
        "status: done\n", "status: done\noutcome:\n  kind: drop\n  reason: not needed\n"))
    ledgit(a, "record", tid, "--by", "amy", code=2)
    r = ledgit(a, "verify", code=1)
    assert ("outcome: outcome kind drop contradicts status done (kind drop means dropped)"
            in r.text and tid in r.text), r.text
    git("add", "-A", cwd=a)
    hook = git_rc(a, "commit", "-q", "-m", "hand edit")
    assert hook.returncode != 0 and "contradicts status done" in hook.stderr, hook.stderr
