"""Issue 4 acceptance under real Git: concurrent accept and revise of one item on two branches
merge to deprecated, with both events kept (DESIGN §5, §7: trust deprecated > locked)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gitflow import commit_all, create, fields, git_rc, history_file, ledgit, new_repo
from gitutil import git

pytest_plugins = ["gitutil"]


@pytest.mark.parametrize("operation", ["merge", "rebase"])
def test_concurrent_accept_and_revise_merge_to_deprecated(tmp_path: Path, git_env: Path,
                                                          operation: str) -> None:
    a = new_repo(tmp_path / "a")
    tid = create(a, "Pick a cache", "--owner", "olga", "--by", "olga")
    item = ledgit(a, "item", "add", tid, "--kind", "decision", "--text", "use LRU",
                  "--by", "worker").out.strip()
    commit_all(a, "task with a candidate decision")
    b = tmp_path / "b"
    git("worktree", "add", "-q", "-b", "feature", str(b), cwd=a)

    ledgit(a, "accept", tid, item, "--by", "olga")                       # main: locked
    commit_all(a, "owner accepts")
    ledgit(b, "revise", tid, "--supersedes", item, "--text", "use LFU", "--by", "olga")
    commit_all(b, "owner revises")                                       # feature: deprecated

    if operation == "merge":
        proc = git_rc(b, "merge", "--no-edit", "main")
    else:
        proc = git_rc(b, "rebase", "main")
    assert proc.returncode == 0, proc.stdout + proc.stderr

    items = {i["id"]: i for i in fields(b, tid)["items"]}
    assert items[item]["trust"] == "deprecated"
    newer = [i for i in items.values() if i["id"] != item]
    assert len(newer) == 1 and newer[0]["text"] == "use LFU"
    assert item in newer[0]["supersedes"]
    ops = [json.loads(line)["op"] for line in history_file(b, tid).read_text().splitlines()]
    assert "accept" in ops and "revise" in ops and "merge" in ops
    ledgit(b, "verify")
