"""``ledgit resolve``: line-merged task files and histories put back together."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gitflow import (
    BODY,
    commit_all,
    create,
    edit_body,
    event_ids,
    fields,
    git_rc,
    has_markers,
    history_file,
    ledgit,
    new_repo,
    task_file,
)
from gitutil import git

from ledgit.core.errors import LedgitError
from ledgit.integration.resolve import split_markers

pytest_plugins = ["gitutil"]


def test_split_markers_rebuilds_both_sides_and_the_diff3_base() -> None:
    text = (b"same\n<<<<<<< ours\nmine\n||||||| base\norig\n=======\nyours\n>>>>>>> theirs\n"
            b"tail\n")
    assert split_markers(text) == (b"same\nmine\ntail\n", b"same\norig\ntail\n",
                                   b"same\nyours\ntail\n")
    two_way = b"<<<<<<< a\nx\n=======\ny\n>>>>>>> b\n========\n"
    assert split_markers(two_way) == (b"x\n========\n", None, b"y\n========\n")
    assert split_markers(b"no markers\n=======\n") is None
    with pytest.raises(LedgitError):
        split_markers(b"<<<<<<< a\nx\n=======\n")


def _clone_without_install(tmp_path: Path) -> tuple[Path, Path, str]:
    """An installed origin with one task, and a plain clone of it (attributes, no driver)."""
    origin = new_repo(tmp_path / "origin")
    tid = create(origin, "Shared", "--body", BODY, "--by", "lead")
    commit_all(origin, "task")
    git("clone", "-q", str(origin), str(tmp_path / "clone"), cwd=tmp_path)
    return origin, tmp_path / "clone", tid


def _diverge(clone: Path, tid: str) -> tuple[set[str], set[str]]:
    git("checkout", "-q", "-b", "side", cwd=clone)
    ledgit(clone, "update", tid, "--priority", "1", "--label", "side", "--by", "agent-s")
    edit_body(clone, tid, "Last paragraph, kept by the feature.", "Last: side.", by="agent-s")
    commit_all(clone, "side")
    side = set(event_ids(history_file(clone, tid).read_text()))
    git("checkout", "-q", "main", cwd=clone)
    ledgit(clone, "claim", tid, "--by", "agent-m")
    ledgit(clone, "update", tid, "--response", "main's account", "--by", "agent-m")
    commit_all(clone, "main")
    main = set(event_ids(history_file(clone, tid).read_text()))
    return main, side


def test_fresh_clone_doctor_says_install_and_resolve_repairs_the_line_merge(
        tmp_path: Path, git_env: Path) -> None:
    _, clone, tid = _clone_without_install(tmp_path)
    r = ledgit(clone, "doctor", code=1)
    assert "ledgit install" in r.out and "merge.ledgit.driver" in r.out
    main_ids, side_ids = _diverge(clone, tid)
    proc = git_rc(clone, "merge", "--no-edit", "side")
    assert proc.returncode == 1, "without the driver, Git line-merges and conflicts"
    assert has_markers(history_file(clone, tid).read_text())
    r = ledgit(clone, "resolve")
    assert "re-merged from the index stages" in r.out
    assert git("diff", "--name-only", "--diff-filter=U", cwd=clone) == ""
    git("commit", "-q", "--no-edit", cwd=clone)
    ids = event_ids(history_file(clone, tid).read_text())
    assert main_ids | side_ids <= set(ids) and len(ids) == len(set(ids))
    f = fields(clone, tid)
    assert f["priority"] == 1 and "side" in f["labels"] and f["response"] == "main's account"
    assert f["claim"]["by"] == "agent-m" and "Last: side." in task_file(clone, tid).read_text()
    ledgit(clone, "verify")
    r = ledgit(clone, "verify", "--rev", "HEAD", code=1)  # the gate wants the driver here
    assert r.out.startswith(".gitattributes: merge-driver:") and "ledgit install" in r.out
    ledgit(clone, "install")
    ledgit(clone, "verify", "--rev", "HEAD")
    ledgit(clone, "doctor")


def test_resolve_says_in_words_where_a_merged_body_came_from(tmp_path: Path,
                                                             git_env: Path) -> None:
    _, clone, tid = _clone_without_install(tmp_path)
    git("checkout", "-q", "-b", "side", cwd=clone)
    edit_body(clone, tid, "Last paragraph, kept by the feature.", "Last: side.", by="agent-s")
    ledgit(clone, "update", tid, "--priority", "1", "--by", "agent-s")
    commit_all(clone, "side")
    git("checkout", "-q", "main", cwd=clone)
    edit_body(clone, tid, "First paragraph, kept by upstream.", "First: main.", by="agent-m")
    ledgit(clone, "update", tid, "--response", "main's account", "--by", "agent-m")
    commit_all(clone, "main")
    assert git_rc(clone, "merge", "--no-edit", "side").returncode == 1
    r = ledgit(clone, "resolve")
    assert "body: merged from both sides" in r.out and "from merged" not in r.out
    text = task_file(clone, tid).read_text()
    assert "First: main." in text and "Last: side." in text and not has_markers(text)


@pytest.mark.parametrize("style", ["merge", "diff3"])
def test_committed_markers_are_resolved_from_the_markers(tmp_path: Path, git_env: Path,
                                                         style: str) -> None:
    _, clone, tid = _clone_without_install(tmp_path)
    git("config", "merge.conflictStyle", style, cwd=clone)
    main_ids, side_ids = _diverge(clone, tid)
    assert git_rc(clone, "merge", "--no-edit", "side").returncode == 1
    commit_all(clone, "merge with the markers committed (a forge's or a careless merge)")
    r = ledgit(clone, "verify", "--rev", "HEAD", code=1)
    assert "conflict-markers" in r.out
    r = ledgit(clone, "resolve")
    assert "conflict markers" in r.out
    commit_all(clone, "resolved")
    ids = event_ids(history_file(clone, tid).read_text())
    assert main_ids | side_ids <= set(ids) and len(ids) == len(set(ids))
    assert fields(clone, tid)["priority"] == 1
    ledgit(clone, "install", "--no-hooks")
    ledgit(clone, "verify", "--rev", "HEAD")


def test_add_add_copies_of_one_task_merge_through_their_shared_genesis(
        tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "r")
    git("checkout", "-q", "-b", "carrier", cwd=repo)
    tid = create(repo, "Carried", "--body", BODY, "--by", "lead")
    carried = commit_all(repo, "task created on a side branch")
    git("checkout", "-q", "main", cwd=repo)
    git("checkout", "-q", "-b", "x", cwd=repo)
    git("cherry-pick", "-x", carried, cwd=repo)  # -x: a different commit, the same task
    ledgit(repo, "update", tid, "--priority", "2", "--by", "agent-x")
    commit_all(repo, "x")
    git("checkout", "-q", "main", cwd=repo)
    git("cherry-pick", carried, cwd=repo)
    ledgit(repo, "update", tid, "--label", "main", "--by", "agent-m")
    commit_all(repo, "main")
    # Git's line merge, as where the driver cannot run (a forge, a clone without install)
    attributes = repo / ".git" / "info" / "attributes"
    attributes.parent.mkdir(exist_ok=True)
    attributes.write_text("* merge=text\n")
    assert git_rc(repo, "merge", "--no-edit", "x").returncode == 1
    attributes.unlink()
    r = ledgit(repo, "resolve")
    assert "common ancestor" in r.out  # a real genesis, shared: not an import root
    git("commit", "-q", "--no-edit", cwd=repo)
    f = fields(repo, tid)
    assert f["priority"] == 2 and f["labels"] == ["main"]
    ledgit(repo, "verify")


def test_overlapping_edits_stay_for_a_person(tmp_path: Path, git_env: Path) -> None:
    _, clone, tid = _clone_without_install(tmp_path)
    git("checkout", "-q", "-b", "side", cwd=clone)
    edit_body(clone, tid, "Middle paragraph that separates the two.", "Middle: side.")
    commit_all(clone, "side")
    git("checkout", "-q", "main", cwd=clone)
    edit_body(clone, tid, "Middle paragraph that separates the two.", "Middle: main.")
    commit_all(clone, "main")
    assert git_rc(clone, "merge", "--no-edit", "side").returncode == 1
    r = ledgit(clone, "resolve", f".ledgit/tasks/{tid}.md", code=1)
    assert f"ledgit record {tid}" in r.out
    conflicted = git("diff", "--name-only", "--diff-filter=U", cwd=clone).split()
    assert conflicted == [f".ledgit/tasks/{tid}.md"]  # the history is settled and added
    assert has_markers(task_file(clone, tid).read_text())


def test_resolve_with_nothing_to_do(tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "r")
    assert "nothing to resolve" in ledgit(repo, "resolve").out
    ledgit(repo, "resolve", "README.md", code=2)


# ---------------------------------------------------------------- issue 12 item 9


def _settle_markers(path: Path, keep: str) -> None:
    """Do what a person does with a conflicted body: replace each marked region by ``keep``."""
    text = path.read_text()
    settled = re.sub(r"(?ms)^<{7} .*?^>{7} [^\n]*\n", keep, text)
    assert settled != text and not has_markers(settled)
    path.write_text(settled)


def _overlap(repo: Path, tid: str) -> None:
    git("checkout", "-q", "-b", "side", cwd=repo)
    edit_body(repo, tid, "Middle paragraph that separates the two.", "Middle: side.",
              by="agent-s")
    commit_all(repo, "side")
    git("checkout", "-q", "main", cwd=repo)
    edit_body(repo, tid, "Middle paragraph that separates the two.", "Middle: main.",
              by="agent-m")
    commit_all(repo, "main")


def test_a_body_conflict_resolved_as_the_driver_says_ends_in_a_commit(
        tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "r")  # driver and hooks installed
    tid = create(repo, "Shared", "--body", BODY, "--by", "lead")
    commit_all(repo, "task")
    _overlap(repo, tid)
    proc = git_rc(repo, "merge", "--no-edit", "side")
    assert proc.returncode == 1
    said = [line for line in proc.stderr.splitlines() if "ledgit merge-driver" in line]
    assert len(said) == 1 and f"then run: ledgit record {tid} " in said[0]
    assert " ID" not in said[0]
    text = task_file(repo, tid).read_text()
    # the sides, as Git names them (the earlier edit first: record stamps last_modified)
    assert "<<<<<<< side (" in text and ">>>>>>> HEAD (" in text
    _settle_markers(task_file(repo, tid), "Middle: main and side.\n")
    r = ledgit(repo, "record", tid, "--by", "ada")
    assert "staged" in r.out
    git("commit", "-q", "--no-edit", cwd=repo)  # the pre-commit hook accepts it
    assert git("status", "--porcelain", cwd=repo) == ""
    ledgit(repo, "verify")
    ledgit(repo, "verify", "--rev", "HEAD")
    assert "Middle: main and side." in task_file(repo, tid).read_text()


def test_a_body_conflict_resolved_as_resolve_says_ends_in_a_commit(
        tmp_path: Path, git_env: Path) -> None:
    _, clone, tid = _clone_without_install(tmp_path)
    _overlap(clone, tid)
    assert git_rc(clone, "merge", "--no-edit", "side").returncode == 1
    r = ledgit(clone, "resolve", code=1)
    body_lines = [line for line in r.out.splitlines() if "body" in line]
    assert len(body_lines) == 1, r.out  # one message for one outcome
    assert "merged from both sides" not in r.out
    assert f"ledgit record {tid} (it adds" in body_lines[0]
    text = task_file(clone, tid).read_text()
    assert "<<<<<<< side (" in text and ">>>>>>> HEAD (" in text
    ledgit(clone, "install")  # the hooks now check the commit
    _settle_markers(task_file(clone, tid), "Middle: settled.\n")
    ledgit(clone, "record", tid, "--by", "ada")
    git("commit", "-q", "--no-edit", cwd=clone)
    assert git("status", "--porcelain", cwd=clone) == ""
    ledgit(clone, "verify")
    ledgit(clone, "verify", "--rev", "HEAD")


def _keep_both(clone: Path, tid: str) -> None:
    """Settle a line-merge conflict as a web editor's "keep both" does: every line of both
    histories, no markers; the task file as ours had it."""
    hist = history_file(clone, tid).relative_to(clone).as_posix()
    md = task_file(clone, tid).relative_to(clone).as_posix()
    ours = git("show", f":2:{hist}", cwd=clone).splitlines()
    theirs = git("show", f":3:{hist}", cwd=clone).splitlines()
    history_file(clone, tid).write_text(
        "\n".join([*ours, *[line for line in theirs if line not in ours]]) + "\n")
    git("checkout", "--ours", "--", md, cwd=clone)
    git("add", "--", md, hist, cwd=clone)
    git("commit", "-q", "--no-edit", cwd=clone)


@pytest.mark.parametrize("named", [False, True])
def test_two_heads_without_markers_are_found_and_the_task_file_follows(
        tmp_path: Path, git_env: Path, named: bool) -> None:
    _, clone, tid = _clone_without_install(tmp_path)
    main_ids, side_ids = _diverge(clone, tid)
    assert git_rc(clone, "merge", "--no-edit", "side").returncode == 1
    _keep_both(clone, tid)
    assert not has_markers(history_file(clone, tid).read_text())
    ledgit(clone, "verify", code=1)
    r = ledgit(clone, "resolve", *([tid] if named else []))  # no path: it finds the task
    assert "heads joined by merge event" in r.out
    assert "rewritten from the merged history's head" in r.out
    md = task_file(clone, tid).relative_to(clone).as_posix()
    hist = history_file(clone, tid).relative_to(clone).as_posix()
    assert f"git add {hist} {md}" in r.out
    f = fields(clone, tid)
    assert f["priority"] == 1 and "side" in f["labels"] and f["response"] == "main's account"
    ids = event_ids(history_file(clone, tid).read_text())
    assert main_ids | side_ids <= set(ids)
    ledgit(clone, "verify")
    ledgit(clone, "install")
    git("add", "--", md, hist, cwd=clone)
    git("commit", "-q", "-m", "resolved", cwd=clone)
    ledgit(clone, "verify", "--rev", "HEAD")
    assert "nothing to resolve" in ledgit(clone, "resolve").out
