"""The merge driver knows a task file and a history by their content (issue 36 item 4): a
driver line without ``%P`` (set up by hand from an older snippet, or by another tool) gets
only Git's temporary names (``.merge_file_XXXXXX``), and a task triple and a history triple
still merge as they do with ``%P``: the same trees, no markers, exit 0. Real Git: merge and
rebase between branches of one repository."""

from __future__ import annotations

from pathlib import Path

from gitflow import LEDGIT, commit_all, create, fields, git_rc, has_markers, ledgit, new_repo
from gitutil import git

from ledgit.core.filemerge import board_file_kind, content_path

pytest_plugins = ["gitutil"]

WITH_P = f"{LEDGIT} merge-driver %O %A %B %L %P"
WITHOUT_P = f"{LEDGIT} merge-driver %O %A %B %L"


def _diverged(root: Path) -> list[str]:
    """main and feature each change other fields of the same two tasks; returns the ids."""
    new_repo(root)
    tasks = [create(root, f"shared {n}", "--by", "lead") for n in range(2)]
    commit_all(root, "two tasks")
    git("branch", "feature", cwd=root)
    ledgit(root, "update", tasks[0], "--title", "renamed on main", "--by", "amy")
    ledgit(root, "update", tasks[1], "--label", "main-label", "--by", "amy")
    commit_all(root, "main's work")
    git("checkout", "-q", "feature", cwd=root)
    ledgit(root, "update", tasks[0], "--priority", "1", "--by", "bob")
    ledgit(root, "update", tasks[1], "--label", "feature-label", "--owner", "olga",
           "--by", "bob")
    commit_all(root, "feature's work")
    return tasks


def _merged_tree(root: Path, branch: str, driver: str, *, rebase: bool = False,
                 verify: bool = True) -> str:
    """The tree after merging feature into a new branch off main (or rebasing a copy of
    feature onto main) with ``driver``; asserts Git went through without a conflict, no
    marker is left and (``verify``) the board verifies."""
    git("config", "merge.ledgit.driver", driver, cwd=root)
    if rebase:
        git("checkout", "-q", "-b", branch, "feature", cwd=root)
        proc = git_rc(root, "rebase", "main")
    else:
        git("checkout", "-q", "-b", branch, "main", cwd=root)
        proc = git_rc(root, "merge", "-q", "--no-edit", "feature")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for path in (root / ".ledgit").rglob("*"):
        if path.is_file():
            assert not has_markers(path.read_text()), path
    if verify:
        ledgit(root, "verify", "--all")
    return git("rev-parse", "HEAD^{tree}", cwd=root)


def test_a_driver_without_p_merges_task_files_and_histories_by_content(tmp_path: Path,
                                                                       git_env: Path) -> None:
    root = tmp_path / "repo"
    t0, t1 = _diverged(root)
    bare = _merged_tree(root, "merged-without-p", WITHOUT_P)
    f = fields(root, t0)
    assert (f["title"], f["priority"]) == ("renamed on main", 1)
    assert set(fields(root, t1)["labels"]) == {"main-label", "feature-label"}
    assert bare == _merged_tree(root, "merged-with-p", WITH_P, verify=False)
    _merged_tree(root, "rebased-without-p", WITHOUT_P, rebase=True)  # the sides swapped


def test_content_names_the_kind_and_the_path(tmp_path: Path, git_env: Path) -> None:
    root = new_repo(tmp_path / "repo")
    task = create(root, "named by its content")
    data = (root / ".ledgit" / "tasks" / f"{task}.md").read_bytes()
    history = (root / ".ledgit" / "history" / f"{task}.jsonl").read_bytes()
    temp = ".merge_file_a1B2c3"
    assert board_file_kind(temp) is None  # the path alone says nothing
    assert board_file_kind(temp, data) == "task"
    assert board_file_kind(temp, history) == "history"
    assert content_path("task", data) == f".ledgit/tasks/{task}.md"
    assert content_path("history", history) == f".ledgit/history/{task}.jsonl"
    # other files are not taken for board files: a Markdown page with some of the keys,
    # JSON lines that are not events, a history's line cut short
    page = b"---\ntitle: a page\nstatus: draft\nid: 7\n---\nbody\n"
    for other in (page, b'{"a": 1}\n', history[:40], b"", b"plain text\n"):
        assert board_file_kind(temp, other) is None, other
    # a path that names the kind is believed, whatever the content
    assert board_file_kind(f".ledgit/tasks/{task}.md", b"") == "task"
