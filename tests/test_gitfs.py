"""ledgit.gitfs against the git CLI: the same staged paths and blobs (git diff-index run with
posix_spawn, blobs read from the object files), or Unusual (then ledgit.git answers); every
object of a packed repository read back as ``git cat-file`` prints it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from gitutil import commit_file, git

from ledgit import git as lg
from ledgit import gitfs

pytest_plugins = ["gitutil"]

# names of every length modulo 8 (the index pads each entry to a multiple of 8 bytes), a path
# of 259 bytes (its length then reaches the high byte of the entry's flags), odd characters
NAMES = [f"T-{'x' * n}.md" for n in range(12)] + [f"T-{'y' * 240}.md", "tâche é.md",
                                                   "with space.md", "T-z.md"]


def fast(repo: Path, prefix: str = ".ledgit/", index: str | None = None
         ) -> dict[str, bytes | None]:
    """gitfs's answer: {path: staged blob or None}."""
    found = gitfs.discover(str(repo))
    assert found is not None
    staged = gitfs.staged(found, index or gitfs.index_file(found, str(repo)), prefix)
    return {os.fsdecode(c.path): None if c.oid is None else staged.blob(c.oid)
            for c in staged.changes}


def cli(repo: Path, prefix: str = ".ledgit/", monkeypatch: pytest.MonkeyPatch | None = None
        ) -> dict[str, bytes | None]:
    """The git CLI's answer (ledgit.git without gitfs)."""
    saved = lg._use_fs
    lg._use_fs = False
    try:
        return lg.staged_files(repo, prefix)
    finally:
        lg._use_fs = saved


def agree(repo: Path, prefix: str = ".ledgit/") -> dict[str, bytes | None]:
    got = fast(repo, prefix)
    assert got == cli(repo, prefix)
    assert list(got) == sorted(got, key=os.fsencode)
    return got


@pytest.fixture
def board(git_repo: Path) -> Path:
    """A committed board: 40 tasks and histories (long enough for the C runs), a config."""
    base = git_repo / ".ledgit"
    for sub in ("tasks", "history"):
        (base / sub).mkdir(parents=True)
    (base / "config.yaml").write_text("id_prefix: T\n")
    for n in range(40):
        (base / "tasks" / f"T-{n:03d}.md").write_text(f"task {n}\n")
        (base / "history" / f"T-{n:03d}.jsonl").write_text(f"history {n}\n")
    for name in NAMES:
        (base / "tasks" / name).write_text(name)
    (git_repo / "README").write_text("outside\n")
    git("add", ".", cwd=git_repo)
    git("commit", "-q", "-m", "board", cwd=git_repo)
    return git_repo


def test_nothing_staged(board: Path) -> None:
    assert agree(board) == {}
    assert agree(board, "") == {}


def test_modified_added_deleted_renamed(board: Path) -> None:
    tasks = board / ".ledgit/tasks"
    (tasks / "T-005.md").write_text("changed\n")
    (tasks / NAMES[3]).write_text("changed too\n")
    (tasks / NAMES[12]).write_text("long name changed\n")
    (tasks / "T-100.md").write_text("new\n")
    (tasks / "T-0.md").write_text("new, sorts early\n")
    git("rm", "-q", ".ledgit/tasks/T-007.md", ".ledgit/history/T-039.jsonl", cwd=board)
    git("mv", ".ledgit/tasks/T-010.md", ".ledgit/tasks/T-010b.md", cwd=board)
    (board / ".ledgit/config.yaml").write_text("id_prefix: X\n")
    (board / "README").write_text("outside the prefix\n")
    git("add", ".", cwd=board)
    (tasks / "T-006.md").write_text("changed, not staged\n")
    got = agree(board)
    assert got[".ledgit/tasks/T-005.md"] == b"changed\n"
    assert got[".ledgit/tasks/T-007.md"] is None
    assert got[".ledgit/tasks/T-010.md"] is None
    assert got[".ledgit/tasks/T-010b.md"] == b"task 10\n"
    assert ".ledgit/tasks/T-006.md" not in got
    assert len(got) == 10
    assert set(agree(board, "")) == {*got, "README"}
    assert agree(board, ".ledgit/history/") == {".ledgit/history/T-039.jsonl": None}
    assert agree(board, "src/") == {}


def test_modes_symlinks_subdirectories_and_submodules(board: Path, tmp_path: Path) -> None:
    tasks = board / ".ledgit/tasks"
    (tasks / "T-001.md").chmod(0o755)
    os.symlink("T-002.md", tasks / "T-link.md")
    (tasks / "sub").mkdir()
    (tasks / "sub" / "T-deep.md").write_text("deeper\n")
    other = tmp_path / "other"
    git("init", "-q", str(other), cwd=tmp_path)
    commit_file(other, "f", "f")
    git("add", ".", cwd=board)
    git("submodule", "add", "-q", str(other), ".ledgit/mod", cwd=board)
    got = agree(board)
    assert got[".ledgit/tasks/T-001.md"] == b"task 1\n"  # same blob, new mode
    assert got[".ledgit/tasks/T-link.md"] == b"T-002.md"
    assert ".ledgit/mod" not in got
    git("commit", "-q", "-m", "more", cwd=board)
    assert agree(board) == {}
    (tasks / "T-001.md").chmod(0o644)
    (tasks / "sub" / "T-deep.md").write_text("deeper still\n")
    git("add", ".", cwd=board)
    git("rm", "-q", "--cached", ".ledgit/mod", cwd=board)
    assert len(agree(board)) == 2


def test_a_file_where_a_directory_was(board: Path) -> None:
    git("rm", "-q", "-r", ".ledgit/history", cwd=board)
    (board / ".ledgit/history").write_text("now a file\n")
    git("add", ".", cwd=board)
    got = agree(board)
    assert got[".ledgit/history"] == b"now a file\n"
    assert len(got) == 41


def test_unborn_branch_and_missing_board(git_repo: Path, board: Path) -> None:
    git("rm", "-q", "-r", "--cached", ".ledgit", cwd=board)
    assert len(agree(board)) == 40 * 2 + len(NAMES) + 1
    fresh = board.parent / "fresh"
    git("init", "-q", str(fresh), cwd=board.parent)
    assert agree(fresh) == {}
    (fresh / ".ledgit/tasks").mkdir(parents=True)
    for name in NAMES:
        (fresh / ".ledgit/tasks" / name).write_text(name)
    git("add", ".", cwd=fresh)
    assert len(agree(fresh)) == len(NAMES)


@pytest.mark.parametrize("setup", [
    lambda repo: git("add", "-N", ".ledgit/tasks/T-new.md", cwd=repo),
    lambda repo: git("update-index", "--index-version", "4", cwd=repo),
    lambda repo: git("update-index", "--split-index", cwd=repo),
], ids=["intent-to-add", "index-v4", "split-index"])
def test_index_formats(board: Path, setup: Callable[[Path], object]) -> None:
    (board / ".ledgit/tasks/T-new.md").write_text("new\n")
    (board / ".ledgit/tasks/T-003.md").write_text("changed\n")
    git("add", ".ledgit/tasks/T-003.md", cwd=board)
    setup(board)
    assert agree(board)[".ledgit/tasks/T-003.md"] == b"changed\n"


def assert_left_to_git(repo: Path, rel: str, text: str) -> None:
    """Stage ``text`` at ``rel``: the fast path declines (Unusual) and git's answer holds it."""
    (repo / rel).write_text(text)
    git("add", ".", cwd=repo)
    with pytest.raises(gitfs.Unusual):
        fast(repo)
    assert lg.staged_files(repo, ".ledgit/") == {rel: text.encode()}


def test_replace_refs_are_left_to_git(board: Path) -> None:
    git("replace", git("rev-parse", "HEAD:README", cwd=board),
        git("rev-parse", "HEAD:.ledgit/config.yaml", cwd=board), cwd=board)
    assert_left_to_git(board, ".ledgit/tasks/T-003.md", "changed\n")


def test_flagged_entries_and_conflicts(board: Path) -> None:
    """skip-worktree (index v3) and assume-unchanged entries; unmerged paths are left out."""
    tasks = board / ".ledgit/tasks"
    git("update-index", "--skip-worktree", ".ledgit/tasks/T-011.md", cwd=board)
    git("update-index", "--assume-unchanged", ".ledgit/tasks/T-021.md", cwd=board)
    for n in (10, 12, 20, 22, 30):
        (tasks / f"T-{n:03d}.md").write_text("changed\n")
    git("add", ".", cwd=board)
    assert (board / ".git/index").read_bytes()[4:8] == b"\0\0\0\3"
    assert len(agree(board)) == 5
    git("commit", "-q", "-m", "five", cwd=board)
    git("checkout", "-q", "-b", "theirs", cwd=board)
    commit_file(board, ".ledgit/tasks/T-001.md", "theirs\n")
    commit_file(board, ".ledgit/tasks/T-002.md", "theirs, alone\n")
    git("checkout", "-q", "main", cwd=board)
    commit_file(board, ".ledgit/tasks/T-001.md", "ours\n")
    git("merge", "-q", "theirs", cwd=board, check=False)
    assert agree(board) == {".ledgit/tasks/T-002.md": b"theirs, alone\n"}


def test_refs_packed_detached_and_worktrees(board: Path, tmp_path: Path) -> None:
    (board / ".ledgit/tasks/T-001.md").write_text("changed\n")
    git("add", ".", cwd=board)
    git("pack-refs", "--all", cwd=board)
    assert not (board / ".git/refs/heads/main").exists()
    assert len(agree(board)) == 1
    git("checkout", "-q", "--detach", cwd=board)
    assert len(agree(board)) == 1
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", "-b", "other", str(linked), cwd=board)
    commit_file(linked, ".ledgit/tasks/T-002.md", "on other\n")
    (linked / ".ledgit/tasks/T-003.md").write_text("staged in linked\n")
    git("add", ".", cwd=linked)
    assert agree(linked) == {".ledgit/tasks/T-003.md": b"staged in linked\n"}
    assert len(agree(board)) == 1


def test_the_index_git_index_file_names(board: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temp = board / ".git/other-index"
    git("read-tree", "HEAD", cwd=board, env={"GIT_INDEX_FILE": str(temp)})
    (board / ".ledgit/tasks/T-009.md").write_text("only there\n")
    git("add", ".ledgit/tasks/T-009.md", cwd=board, env={"GIT_INDEX_FILE": str(temp)})
    assert fast(board) == {}
    monkeypatch.setenv("GIT_INDEX_FILE", ".git/other-index")
    assert agree(board) == {".ledgit/tasks/T-009.md": b"only there\n"}
    monkeypatch.setenv("GIT_INDEX_FILE", str(board / ".git/missing-index"))
    assert len(agree(board)) == 40 * 2 + len(NAMES) + 1  # no index: everything deleted


def test_every_object_of_a_packed_repository(board: Path) -> None:
    """Many versions of a large tree, packed aggressively: deltas on deltas, both kinds."""
    tasks = board / ".ledgit/tasks"
    for n in range(30):
        (tasks / f"T-{n:03d}.md").write_text(f"task {n}\n" * (n + 1))
        (tasks / f"T-a{n:03d}.md").write_text("added\n")
        git("add", ".", cwd=board)
        git("commit", "-q", "-m", f"v{n}", cwd=board)
    git("gc", "-q", "--aggressive", cwd=board)
    git("repack", "-q", "-a", "-d", "--depth=50", cwd=board)
    (tasks / "T-031.md").write_text("a loose object\n")
    git("add", ".", cwd=board)
    found = gitfs.discover(str(board))
    assert found is not None
    objects = gitfs.Objects(found)
    listing = git("cat-file", "--batch-all-objects", "--batch-check", cwd=board)
    kinds = {"commit": 1, "tree": 2, "blob": 3, "tag": 4}
    batch = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=board,
                           capture_output=True, check=True).stdout
    pos = 0
    count = 0
    for line in listing.splitlines():
        oid, kind, size = line.split()
        header_end = batch.index(b"\n", pos)
        content = batch[header_end + 1:header_end + 1 + int(size)]
        pos = header_end + 2 + int(size)
        assert objects.read(bytes.fromhex(oid)) == (kinds[kind], content), oid
        count += 1
    assert count > 100
    assert any(p.suffix == ".pack" for p in (board / ".git/objects/pack").iterdir())
    assert len(agree(board)) == 1


def test_sha256_repositories_are_left_to_git(tmp_path: Path, git_env: Path) -> None:
    repo = tmp_path / "sha256"
    proc = subprocess.run(["git", "init", "-q", "--object-format=sha256", str(repo)],
                          capture_output=True)
    if proc.returncode != 0:
        pytest.skip("git without SHA-256 support")
    commit_file(repo, ".ledgit/tasks/T-1.md", "one\n")
    assert_left_to_git(repo, ".ledgit/tasks/T-1.md", "two\n")


def test_a_prefix_naming_a_file(board: Path) -> None:
    assert agree(board, ".ledgit/config.yaml") == {}
    (board / ".ledgit/config.yaml").write_text("id_prefix: Q\n")
    git("add", ".", cwd=board)
    assert agree(board, ".ledgit/config.yaml") == {".ledgit/config.yaml": b"id_prefix: Q\n"}


def test_at_head_reads_head(board: Path) -> None:
    (board / ".ledgit/tasks/T-001.md").write_text("staged\n")
    os.symlink("T-002.md", board / ".ledgit/tasks/T-link.md")
    git("add", ".", cwd=board)
    git("commit", "-q", "-m", "link", cwd=board)
    (board / ".ledgit/tasks/T-001.md").write_text("staged again\n")
    git("add", ".", cwd=board)
    found = gitfs.discover(str(board))
    assert found is not None
    staged = gitfs.staged(found, gitfs.index_file(found, str(board)), ".ledgit/")
    assert staged.at_head(b".ledgit/history/T-001.jsonl") == b"history 1\n"
    assert staged.at_head(b".ledgit/tasks/T-001.md") == b"staged\n"
    assert staged.at_head(b".ledgit/tasks/T-link.md") == b"T-002.md"
    assert staged.at_head(b".ledgit/tasks/T-404.md") is None
    assert staged.at_head(b".ledgit/tasks") is None
    assert staged.at_head(b"README/x") is None
    for rel in (".ledgit/tasks/T-001.md", "README", ".ledgit/tasks/T-link.md"):
        assert staged.at_head(os.fsencode(rel)) == lg.blob_at(board, "HEAD", rel)


def test_the_hook_imports_neither_ledgit_git_nor_subprocess(board: Path) -> None:
    """The pre-commit fast path: one git process, started with posix_spawn."""
    probe = ("import sys\nfrom ledgit.hooks import run_hook\ncode = run_hook('pre-commit', [])\n"
             "print(code, 'ledgit.git' in sys.modules, 'subprocess' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=board, capture_output=True,
                          text=True)
    assert proc.stdout.split() == ["0", "False", "False"], proc.stderr


def test_the_hook_reads_the_unstaged_half_of_a_task_from_head(
        tmp_path: Path, git_env: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from gitflow import commit_all, create, new_repo, task_file

    from ledgit.hooks import run_hook

    repo = new_repo(tmp_path / "hooked")
    tid = create(repo, "Half staged", "--by", "a")
    commit_all(repo, "task")
    path = task_file(repo, tid)
    path.write_text(path.read_text().replace("Half staged", "Hand edited"))
    git("add", str(path), cwd=repo)  # the task file alone: its history is read from HEAD
    monkeypatch.chdir(repo)
    assert run_hook("pre-commit", []) == 1
    assert f".ledgit/tasks/{tid}.md: record-head:" in capsys.readouterr().err
