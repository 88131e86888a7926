"""Issue 28, "Conflict markers cannot be told apart": a task body both sides changed gets
markers that name each side -- the branch or commit Git names (merge, rebase), else the
side's last actor and its last event's time -- never two identical labels. Real Git runs the
installed driver; the pure rules are checked on records."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from gitflow import BODY, commit_all, create, edit_body, git_rc, ledgit, new_repo, task_file
from gitutil import git

from ledgit.core.marklabels import last_actor, marker_labels
from ledgit.git.mergenames import side_names

pytest_plugins = ["gitutil"]

OLD = "Middle paragraph that separates the two."


def _labels(text: str) -> tuple[str, str]:
    start = re.findall(r"(?m)^<{7} (.*)$", text)
    end = re.findall(r"(?m)^>{7} (.*)$", text)
    assert len(start) == len(end) == 1, text
    return start[0], end[0]


def _diverged(tmp_path: Path, install: bool = True) -> tuple[Path, str]:
    """main and feature each claimed (ann, bob) and edited the same body line."""
    repo = new_repo(tmp_path / "repo", install=install)
    tid = create(repo, "Shared", "--body", BODY, "--by", "lead")
    commit_all(repo, "task")
    git("switch", "-q", "-c", "feature", cwd=repo)
    ledgit(repo, "claim", tid, "--by", "bob")
    edit_body(repo, tid, OLD, "Middle: the feature's words.", by="bob")
    commit_all(repo, "feature edit")
    git("switch", "-q", "main", cwd=repo)
    ledgit(repo, "claim", tid, "--by", "ann")
    edit_body(repo, tid, OLD, "Middle: upstream's words.", by="ann")
    commit_all(repo, "main edit")
    return repo, tid


def test_git_merge_labels_are_head_and_the_merged_branch(tmp_path: Path, git_env: Path) -> None:
    repo, tid = _diverged(tmp_path)
    assert git_rc(repo, "merge", "--no-edit", "feature").returncode == 1
    labels = sorted(_labels(task_file(repo, tid).read_text()))  # in the sides' content order
    assert labels[0].startswith("HEAD (") and labels[1].startswith("feature ("), labels


def test_rebase_labels_name_the_rebased_branch_and_its_commit(
        tmp_path: Path, git_env: Path) -> None:
    repo, tid = _diverged(tmp_path)
    picked = git("rev-parse", "--short=7", "feature", cwd=repo)
    onto = git("rev-parse", "--short=7", "main", cwd=repo)
    git("switch", "-q", "feature", cwd=repo)
    assert git_rc(repo, "rebase", "main").returncode != 0
    labels = set(_labels(task_file(repo, tid).read_text()))
    assert len(labels) == 2
    assert any(x.startswith(f"HEAD (onto {onto}) (") for x in labels), labels
    assert any(x.startswith(f"feature {picked} (") for x in labels), labels
    git("rebase", "--abort", cwd=repo)


def test_resolve_in_a_clone_without_the_driver_names_the_rebase_s_sides(
        tmp_path: Path, git_env: Path) -> None:
    repo, tid = _diverged(tmp_path, install=False)
    picked = git("rev-parse", "--short=7", "feature", cwd=repo)
    git("switch", "-q", "feature", cwd=repo)
    assert git_rc(repo, "rebase", "main").returncode != 0  # Git's own line merge
    ledgit(repo, "resolve", code=1)  # the body's overlap is left for a person
    labels = set(_labels(task_file(repo, tid).read_text()))
    assert any(x.startswith("HEAD (onto ") for x in labels), labels
    assert any(x.startswith(f"feature {picked} (") for x in labels), labels
    git("rebase", "--abort", cwd=repo)


def test_cherry_pick_labels_name_each_side_s_last_actor_and_time(
        tmp_path: Path, git_env: Path) -> None:
    """Git names neither side of a cherry-pick: the labels are the record's own."""
    repo, tid = _diverged(tmp_path)
    assert git_rc(repo, "cherry-pick", "feature").returncode != 0
    labels = _labels(task_file(repo, tid).read_text())
    assert labels[0] != labels[1]
    assert {x.split(" at ")[0] for x in labels} == {"ledgit: ann", "ledgit: bob"}, labels
    assert all(re.search(r" at 20\d\d-\d\d-\d\dT[\d:.]+Z$", x) for x in labels), labels
    git("cherry-pick", "--abort", cwd=repo)


def _fields(lm: str, **extra: object) -> dict[str, object]:
    return {"id": "T-1", "last_modified": lm, **extra}


def test_last_actor_is_the_latest_mark_of_the_record() -> None:
    claim = {"by": "ann", "at": "2026-01-01T00:00:01Z", "heartbeat": "2026-01-01T00:00:05Z"}
    items = [{"by": "bob", "at": "2026-01-01T00:00:03Z"}]
    assert last_actor(_fields("x", claim=claim, items=items)) == "ann"
    items.append({"by": "cy", "at": "2026-01-01T00:00:09Z"})
    assert last_actor(_fields("x", claim=claim, items=items)) == "cy"
    assert last_actor(_fields("x")) is None


@pytest.mark.parametrize("a, b", [
    ((_fields("T1"), "one\n"), (_fields("T1"), "two\n")),
    ((_fields("T1"), "same\n"), (_fields("T1"), "same\n")),
    ((_fields("T1", claim={"by": "ann", "at": "T1"}), "x\n"),
     (_fields("T1", claim={"by": "ann", "at": "T1"}), "y\n")),
])
def test_labels_are_never_identical_and_do_not_depend_on_the_order(
        a: tuple[dict[str, object], str], b: tuple[dict[str, object], str]) -> None:
    la, lb = marker_labels(a, b)
    assert la != lb
    if a[1] != b[1]:
        assert marker_labels(b, a) == (lb, la)


def test_names_given_by_git_win_and_equal_names_are_dropped(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no .git: no rebase state
    for key in [k for k in os.environ if k.startswith("GITHEAD_")]:
        monkeypatch.delenv(key)
    assert side_names(("%X", "%Y")) is None  # an older Git left the placeholders
    assert side_names(("main", "topic")) == ("main", "topic")
    assert side_names(("main", "main")) is None
    monkeypatch.setenv("GITHEAD_" + "a" * 40, "topic")
    assert side_names() == ("HEAD", "topic")
    la, lb = marker_labels((_fields("T1"), "a\n"), (_fields("T1"), "b\n"), ("HEAD", "topic"))
    assert (la, lb) == ("HEAD (T1)", "topic (T1)")
