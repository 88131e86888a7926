"""Task ids are unique under case folding (issue 36 item 5): ``T-abc…`` and ``T-ABC…`` are one
file on macOS and Windows, so create, record, import, the pre-commit hook and the gate (``verify
--all``, ``--rev``, ``--range``) refuse a task whose id equals another's under case folding,
naming both paths. Real Git, a real file system (case-sensitive here, where both files can
exist side by side)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from gitflow import commit_all, git_rc, ledgit, new_repo
from gitutil import git

from ledgit.core.errors import LedgitError
from ledgit.core.schema import case_twins
from ledgit.storage.board import Board
from ledgit.storage.boardinit import init_board
from ledgit.storage.writepath import create_task

pytest_plugins = ["gitutil"]

LOWER, UPPER = "T-abcdefghij", "T-ABCDEFGHIJ"
PATHS = (f".ledgit/tasks/{UPPER}.md", f".ledgit/tasks/{LOWER}.md")


def _twin_files(tmp_path: Path, root: Path) -> None:
    """The files of a valid task ``UPPER`` (made on a board of its own) copied into the
    board at ``root``, which holds ``LOWER``."""
    other = init_board(tmp_path / "elsewhere")
    create_task(other, {"title": "the other one"}, "", "bob", task_id=UPPER)
    for sub, suffix in (("tasks", ".md"), ("history", ".jsonl")):
        shutil.copy(other.root / ".ledgit" / sub / f"{UPPER}{suffix}",
                    root / ".ledgit" / sub / f"{UPPER}{suffix}")


def test_case_twins_pairs_ids_equal_under_case_folding() -> None:
    assert case_twins([LOWER, UPPER, "T-other"]) == [(UPPER, LOWER), (LOWER, UPPER)]
    assert case_twins([LOWER, "T-other"], [UPPER]) == [(UPPER, LOWER)]
    assert case_twins([LOWER, "T-other"]) == []


def test_create_and_record_refuse_a_twin_naming_both_paths(tmp_path: Path,
                                                          git_env: Path) -> None:
    root = new_repo(tmp_path / "repo")
    board = Board(root)
    create_task(board, {"title": "the first one"}, "", "amy", task_id=LOWER)
    with pytest.raises(LedgitError) as refused:
        create_task(board, {"title": "the other one"}, "", "bob", task_id=UPPER)
    assert refused.value.code == 2 and all(p in refused.value.message for p in PATHS)
    assert not (root / PATHS[0]).exists()
    # a task file added by hand: record (and any write) refuses it, nothing recorded
    _twin_files(tmp_path, root)
    (root / ".ledgit" / "history" / f"{UPPER}.jsonl").unlink()
    said = ledgit(root, "record", UPPER, code=2).err
    assert "case folding" in said and all(p in said for p in PATHS)
    assert not (root / ".ledgit" / "history" / f"{UPPER}.jsonl").exists()


def test_import_skips_an_id_equal_to_another_under_case_folding(tmp_path: Path,
                                                                git_env: Path) -> None:
    root = new_repo(tmp_path / "repo")
    issue = {"title": "Fix it", "status": "open", "priority": 2,
             "created_at": "2025-12-17T14:32:02Z", "updated_at": "2025-12-18T01:00:00Z"}
    source = tmp_path / "issues.jsonl"
    source.write_text("".join(json.dumps({**issue, "id": i}) + "\n"
                              for i in ("bd-abc", "bd-ABC", "bd-xyz")))
    out = ledgit(root, "import", "beads", str(source), "--json", code=1).out
    summary = json.loads(out)
    assert summary["imported"] == 2 and "ids" in summary
    skipped = " ".join(json.dumps(s) for s in summary["skipped"])
    assert "case folding" in skipped and "issues.jsonl:2" in skipped
    assert ".ledgit/tasks/bd-ABC.md" in skipped and ".ledgit/tasks/bd-abc.md" in skipped
    assert sorted(p.name for p in (root / ".ledgit" / "tasks").iterdir()) == [
        "bd-abc.md", "bd-xyz.md"]
    # a later import of the twin alone meets the board's task
    source.write_text(json.dumps({**issue, "id": "BD-xyz"}) + "\n")
    again = json.loads(ledgit(root, "import", "beads", str(source), "--json", code=1).out)
    assert again["imported"] == 0 and ".ledgit/tasks/bd-xyz.md" in json.dumps(again["skipped"])


def test_the_hook_and_the_gate_refuse_a_twin_naming_both_paths(tmp_path: Path,
                                                               git_env: Path) -> None:
    root = new_repo(tmp_path / "repo")
    create_task(Board(root), {"title": "the first one"}, "", "amy", task_id=LOWER)
    commit_all(root, "one task")
    _twin_files(tmp_path, root)
    git("add", "-A", cwd=root)
    refused = git_rc(root, "commit", "-q", "-m", "its twin")
    assert refused.returncode != 0
    line = next(x for x in refused.stderr.splitlines() if "id-case" in x)
    assert line.startswith(f"ledgit pre-commit: {PATHS[0]}: id-case: ")
    assert PATHS[1] in line
    git("commit", "-q", "--no-verify", "-m", "its twin, past the hook", cwd=root)
    for args in (["--rev", "HEAD"], ["--range", "HEAD~1..HEAD"], ["--all"]):
        said = ledgit(root, "verify", *args, code=1).text
        assert "id-case" in said and all(p.split("/")[-1] in said for p in PATHS), args
    # the hook asks only of a task entering the index: a later commit is not held up
    ledgit(root, "update", LOWER, "--priority", "1", "--by", "amy")
    git("add", "-A", cwd=root)
    git("commit", "-q", "-m", "the first one changes", cwd=root)
