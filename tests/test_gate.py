"""The CI gate: ``ledgit verify --rev`` / ``--range`` read from Git objects."""

from __future__ import annotations

import json
from pathlib import Path

from gitflow import commit_all, create, history_file, ledgit, new_repo, task_file
from gitutil import git

from ledgit.core.markers import marker_lines
from ledgit.integration.gate import github_line
from ledgit.integration.taskcheck import Finding

pytest_plugins = ["gitutil"]


def _repo(tmp_path: Path) -> tuple[Path, str, str]:
    repo = new_repo(tmp_path / "repo")
    base = git("rev-parse", "HEAD", cwd=repo)
    tid = create(repo, "Gate me", "--by", "lead")
    commit_all(repo, "task")
    return repo, base, tid


def test_rev_and_range_pass_on_a_clean_history(tmp_path: Path, git_env: Path) -> None:
    repo, base, tid = _repo(tmp_path)
    ledgit(repo, "update", tid, "--priority", "2", "--by", "a")
    commit_all(repo, "prio")
    r = ledgit(repo, "verify", "--rev", "HEAD")
    assert "1 commit(s)" in r.err and r.err.rstrip().endswith("ok")
    r = ledgit(repo, "verify", "--range", f"{base}..HEAD", "--format", "json")
    report = json.loads(r.out)
    assert report["ok"] is True and len(report["commits"]) == 2
    assert ledgit(repo, "verify", "--range", f"{base}..HEAD", "--format", "github").out == ""


def test_a_broken_commit_in_the_range_fails_with_its_location(tmp_path: Path,
                                                            git_env: Path) -> None:
    repo, base, tid = _repo(tmp_path)
    path = task_file(repo, tid)
    path.write_text(path.read_text().replace("status: open", "status: opne"))
    git("commit", "-q", "--no-verify", "-am", "typo, past the hook", cwd=repo)
    bad = git("rev-parse", "HEAD", cwd=repo)
    path.write_text(path.read_text().replace("status: opne", "status: open"))
    commit_all(repo, "fixed")
    r = ledgit(repo, "verify", "--range", f"{base}..HEAD", code=1)
    line = next(ln for ln in r.out.splitlines() if "schema" in ln)
    assert line.startswith(f"{bad[:12]} .ledgit/tasks/{tid}.md:4: schema:")
    assert "opne" in line
    r = ledgit(repo, "verify", "--range", f"{base}..HEAD", "--format", "github", code=1)
    assert f"::error file=.ledgit/tasks/{tid}.md,line=4,title=ledgit schema::{bad[:12]}: " \
        in r.out
    ledgit(repo, "verify", "--rev", "HEAD")  # the tip itself is fine
    report = json.loads(ledgit(repo, "verify", "--rev", bad, "--format", "json", code=1).out)
    assert report["problems"][0]["rule"] == "schema"


def test_two_heads_or_markers_anywhere_fail_even_when_unchanged(tmp_path: Path,
                                                                 git_env: Path) -> None:
    repo, _, tid = _repo(tmp_path)
    hist = history_file(repo, tid)
    first = hist.read_text()
    ledgit(repo, "update", tid, "--priority", "1", "--by", "a")
    one = hist.read_text()[len(first):]
    hist.write_text(first)
    task_file(repo, tid).write_text(task_file(repo, tid).read_text())
    ledgit(repo, "update", tid, "--priority", "3", "--by", "b")
    hist.write_text(hist.read_text() + one)  # a union merge: two heads
    git("commit", "-q", "--no-verify", "-am", "union-merged history", cwd=repo)
    start = git("rev-parse", "HEAD", cwd=repo)
    other = create(repo, "Unrelated", "--by", "lead")
    commit_all(repo, "unrelated")
    r = ledgit(repo, "verify", "--range", f"{start}..HEAD", code=1)
    assert f".ledgit/history/{tid}.jsonl: heads: expected one head, found 2" in r.out
    assert other not in r.out


def test_markers_are_found_by_line(tmp_path: Path) -> None:
    assert marker_lines(b"a\n<<<<<<< ours\nb\n=======\nc\n>>>>>>> theirs\n") == [2, 6]
    assert marker_lines(b"Title\n=======\n<<<<<<<<x\n") == []


def test_github_annotations_escape_their_properties() -> None:
    f = Finding("dir/a,b:c.md", 3, "schema", "bad 100%\nvalue", "0123456789abcdef")
    assert github_line(f) == ("::error file=dir/a%2Cb%3Ac.md,line=3,title=ledgit schema::"
                              "0123456789ab: bad 100%25%0Avalue")
    assert github_line(f._replace(line=0)).startswith("::error file=dir/a%2Cb%3Ac.md,title=")


def test_attributes_without_driver_config_fail_the_gate(tmp_path: Path, git_env: Path) -> None:
    repo, _, _ = _repo(tmp_path)
    git("config", "--unset", "merge.ledgit.driver", cwd=repo)
    r = ledgit(repo, "verify", "--rev", "HEAD", code=1)
    assert ".gitattributes: merge-driver:" in r.out and "ledgit install" in r.out
    ledgit(repo, "install", "--no-hooks")
    ledgit(repo, "verify", "--rev", "HEAD")


def test_usage_errors(tmp_path: Path, git_env: Path) -> None:
    repo, _, tid = _repo(tmp_path)
    ledgit(repo, "verify", "--range", "HEAD", code=2)
    ledgit(repo, "verify", "--rev", "no-such-rev", code=2)
    ledgit(repo, "verify", tid, "--rev", "HEAD", code=2)
