"""``ledgit import backlog``: fixtures made by the real Backlog.md CLI in the test.

The CLI is looked up, never downloaded: ``$BACKLOG_BIN``, ``backlog`` on PATH or the global
npm prefix (``npm prefix -g``/bin); no fixed path is searched. It is a 101 MB prebuilt binary,
too big to fetch in a test run: without it the CLI-backed tests skip, saying how to get it
(``npm install backlog.md``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from gitutil import CliRun

from ledgit.interop.backlog import backlog_date, read_task_file, task_to_record
from ledgit.storage.board import Board
from ledgit.storage.boardcheck import verify_board


def backlog_binary() -> str | None:
    candidates = [os.environ.get("BACKLOG_BIN"), shutil.which("backlog")]
    npm = shutil.which("npm")
    if npm:
        try:
            # at collection, before the session's hermetic environment (conftest.py): no
            # debug log in the developer's ~/.npm/_logs
            prefix = subprocess.run([npm, "prefix", "-g"], capture_output=True, text=True,
                                    env={**os.environ, "npm_config_logs_max": "0",
                                         "npm_config_update_notifier": "false"},
                                    timeout=30, check=False).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            prefix = ""
        if prefix:
            candidates.append(os.path.join(prefix, "bin", "backlog"))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


BACKLOG = backlog_binary()
needs_backlog = pytest.mark.skipif(
    BACKLOG is None, reason="Backlog.md CLI not found ($BACKLOG_BIN, PATH, npm prefix -g); "
                            "install it with: npm install backlog.md")


class Backlog:
    """The real Backlog.md CLI in ``root`` (a fresh Git repository)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_",
                                                                             "BACKLOG_"))}

    def __call__(self, *args: str) -> str:
        assert BACKLOG is not None
        proc = subprocess.run([BACKLOG, *args], cwd=self.root, env=self.env,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              check=False, timeout=120)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        return proc.stdout

    def view(self, tid: str) -> dict[str, Any]:
        task: dict[str, Any] = json.loads(self("task", "view", tid, "--json"))["task"]
        return task


@pytest.fixture
def backlog(tmp_path: Path) -> Backlog:
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    b = Backlog(root)
    b("init", "Demo", "--defaults", "--agent-instructions", "none")
    assert (root / "backlog" / "config.yml").exists(), "backlog init wrote nothing"
    b("config", "set", "remoteOperations", "false")
    return b



def test_dates() -> None:
    assert backlog_date("2026-11-29 18:55") == "2026-11-29T18:55:00.000000Z"
    assert backlog_date("2026-11-29") == "2026-11-29T00:00:00.000000Z"
    with pytest.raises(ValueError):
        backlog_date("yesterday")


def test_mapping(tmp_path: Path) -> None:
    path = tmp_path / "task-3 - Deploy.md"
    path.write_text("---\nid: TASK-3\ntitle: Deploy\nstatus: In Progress\nassignee:\n"
                    "  - '@alice'\n  - '@bob'\ncreated_date: '2026-11-29 18:55'\nlabels: []\n"
                    "dependencies:\n  - TASK-1\npriority: low\nordinal: 3000\n---\n\n"
                    "## Description\n\n<!-- SECTION:DESCRIPTION:BEGIN -->\nShip\n"
                    "<!-- SECTION:DESCRIPTION:END -->\n", encoding="utf-8")
    front, body = read_task_file(path)
    rec = task_to_record(front, body, "tasks")
    f = rec.fields
    assert (f["id"], f["status"], f["priority"], f["worker"]) == ("TASK-3", "in_progress", 3,
                                                                  "@alice")
    assert f["depends_on"] == ["TASK-1"]
    assert f["x"]["backlog"]["assignee"] == ["@alice", "@bob"]
    assert f["x"]["backlog"]["ordinal"] == "3000"  # as written: YAML without implicit typing
    assert rec.body.startswith("## Description\n")


@needs_backlog
def test_import_a_project_made_by_the_real_cli(backlog: Backlog, lg: CliRun) -> None:
    b = backlog
    b("task", "create", "Set up CI", "-d", "Add a CI pipeline", "-l", "infra,ci",
      "--priority", "high", "--ac", "Pipeline runs on push", "--ac", "Tests are green",
      "--plain")
    b("task", "create", "Write tests", "-d", "Write unit tests\nfor the core module", "-l",
      "tests", "--priority", "medium", "--plain")
    b("task", "create", "Deploy", "-d", "Deploy to prod", "-l", "infra", "--priority", "low",
      "--dep", "task-1,task-2", "-a", "@alice", "--type", "feature", "--plain")
    b("task", "create", "Subtask of CI", "-p", "task-1", "-d", "child", "--plain")
    b("task", "create", "Obsolete idea", "-d", "drop me", "--plain")
    b("task", "create", "Draft thing", "--draft", "--plain")
    b("task", "edit", "task-1", "-s", "In Progress", "-a", "@bob", "--plan",
      "1. add workflow\n2. run", "--plain")
    b("task", "edit", "task-1", "--check-ac", "1", "--check-ac", "2", "--notes",
      "Added .github/workflows/ci.yml", "--comment", "Looks good", "--comment-author",
      "@carol", "--plain")
    b("task", "edit", "task-1", "-s", "Done", "--final-summary", "CI is green at abc1234",
      "--plain")
    b("task", "edit", "task-2", "-s", "Done", "--plain")
    b("task", "complete", "task-2")
    b("task", "archive", "task-4")
    b("task", "create", "Reuses the archived id", "-d", "new", "--plain")

    code, out, err = lg("import", "backlog", str(b.root), "--by", "importer")
    assert code == 0, err
    board = Board(lg.root)
    ids = set(board.list_ids())
    assert ids == {"TASK-1", "TASK-1.1", "TASK-2", "TASK-3", "TASK-4", "TASK-4-archived",
                   "DRAFT-1"}
    assert verify_board(board) == []
    for tid in ("TASK-1", "TASK-1.1", "TASK-2", "TASK-3"):
        shown = b.view(tid)  # the tool's own view
        rec = board.read(tid).fields
        assert rec["title"] == shown["title"]
        assert rec.get("labels", []) == shown["labels"]
        assert rec.get("depends_on", []) == shown["dependencies"]
        assert rec.get("worker") == (shown["assignees"] or [None])[0]
        assert {1: "high", 2: "medium", 3: "low", None: None}[rec.get("priority")] == \
            shown["priority"]
        assert shown["description"] in board.read(tid).body
    one = board.read("TASK-1")
    assert (one.fields["status"], one.fields["response"]) == ("done", "CI is green at abc1234")
    assert "- [x] #1 Pipeline runs on push" in one.body and "Looks good" in one.body
    two = board.read("TASK-2")
    assert two.fields["status"] == "done" and two.fields["x"]["backlog"]["folder"] == "completed"
    assert board.read("TASK-1.1").fields["x"]["backlog"]["parent_task_id"] == "TASK-1"
    assert board.read("TASK-4-archived").fields["status"] == "archived"
    assert board.read("TASK-4").fields["title"] == "Reuses the archived id"
    draft = board.read("DRAFT-1").fields
    assert draft["status"] == "parked" and draft["outcome"]["reason"] == "draft in Backlog.md"

    b("task", "edit", "task-3", "-s", "In Progress", "--plain")
    code, out, _ = lg("import", "backlog", str(b.root), "--by", "importer")
    assert code == 0 and "updated 1" in out and "unchanged 6" in out
    assert board.read("TASK-3").fields["status"] == "in_progress"
    assert verify_board(board) == []
