"""Issue 28, "Messages": what a newcomer typed, answered in their words -- a priority that is
not a whole number 0-4, a range gate run outside any repository, and ``ledgit install``
ending with the ``git add`` that shares the setup with other clones. Real repositories."""

from __future__ import annotations

from pathlib import Path

from gitflow import ledgit, new_repo
from gitutil import git

pytest_plugins = ["gitutil"]


def test_a_priority_that_is_not_a_whole_number_0_to_4_says_so(
        tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    for args in (("create", "T", "--priority", "high"),
                 ("create", "T", "--priority", "1.5")):
        r = ledgit(repo, *args, code=2)
        assert "is not a whole number; --priority takes 0 (most urgent) to 4" in r.err
        assert "integer range" not in r.err and len(r.err.splitlines()) == 1
    r = ledgit(repo, "create", "T", "--priority", "9", code=2)
    assert "9 is out of range; --priority takes 0 (most urgent) to 4" in r.err
    r = ledgit(repo, "list", "--limit", "lots", code=2)
    assert "'lots' is not a whole number; --limit takes a whole number, 1 or more" in r.err
    assert ledgit(repo, "create", "T", "--priority", "4").code == 0


def test_verify_range_outside_a_repository_says_there_is_none(
        tmp_path: Path, git_env: Path) -> None:
    outside = tmp_path / "plain"
    outside.mkdir()
    for args in (("verify", "--range", "HEAD~1..HEAD"), ("verify", "--rev", "HEAD")):
        r = ledgit(outside, *args, code=2)
        assert "not a Git repository" in r.err and "not a valid commit" not in r.err
        assert len(r.err.splitlines()) == 1


def test_install_ends_with_the_git_add_that_shares_the_setup(
        tmp_path: Path, git_env: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git("init", "-q", str(repo), cwd=tmp_path)
    ledgit(repo, "init")
    last = ledgit(repo, "install").out.splitlines()[-1]
    assert "git add .gitattributes .ledgit && git commit" in last
    assert "each clone runs ledgit install" in last
    git("add", ".gitattributes", ".ledgit", cwd=repo)  # what the line says does the job
    git("commit", "-q", "-m", "share", cwd=repo)
    assert git("status", "--porcelain", cwd=repo) == ""
    last = ledgit(repo, "install").out.splitlines()[-1]
    assert last.startswith("shared: .gitattributes, .ledgit committed")
    # a clone gets the attributes and the board; its own install only configures .git/
    clone = tmp_path / "clone"
    git("clone", "-q", str(repo), str(clone), cwd=tmp_path)
    assert (clone / ".gitattributes").read_text() == (repo / ".gitattributes").read_text()
    assert ledgit(clone, "install").out.splitlines()[-1].startswith("shared: ")
