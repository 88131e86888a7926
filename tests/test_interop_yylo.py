"""``ledgit import yylo``: fixtures made by the real ``yylo-ledger`` CLI in the test.

The CLI is looked up, never downloaded: ``$YYLO_LEDGER`` or ``yylo-ledger`` on PATH (no fixed
path is searched). Without it the CLI-backed tests skip, saying how to get it
(``pip install yylo-ledger``: a 231 kB pure-Python wheel plus ruamel.yaml).
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

from ledgit.core.history import parse_events
from ledgit.interop.yylo import split_title, task_to_record
from ledgit.storage.board import Board
from ledgit.storage.boardcheck import verify_board


def yylo_binary() -> str | None:
    for candidate in (os.environ.get("YYLO_LEDGER"), shutil.which("yylo-ledger")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


YYLO = yylo_binary()
needs_yylo = pytest.mark.skipif(
    YYLO is None, reason="yylo-ledger not found ($YYLO_LEDGER, PATH); "
                         "install it with: pip install yylo-ledger")


class Yylo:
    """The real yylo-ledger CLI on a board in ``root`` (a fresh Git repository)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "JUNO"))}
        self.env["JUNO_TASK_ROOT"] = str(root)  # the directory that holds .juno_task

    def __call__(self, *args: str) -> str:
        assert YYLO is not None
        proc = subprocess.run([YYLO, *args], cwd=self.root, env=self.env, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, check=False, timeout=120)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
        return proc.stdout

    def create(self, *args: str) -> dict[str, Any]:
        [task] = json.loads(self("--raw", "create", *args))
        return dict(task)

    def get(self, tid: str) -> dict[str, Any]:
        [task] = json.loads(self("--raw", "get", tid))
        return dict(task)


@pytest.fixture
def yylo(tmp_path: Path) -> Yylo:
    root = tmp_path / "yylo"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return Yylo(root)



def test_title_line() -> None:
    assert split_title("title:Set up CI\n\nAdd a pipeline") == ("Set up CI", "Add a pipeline")
    assert split_title("title:Only") == ("Only", "")
    assert split_title("No marker\nsecond") == ("No marker", "No marker\nsecond")


def test_mapping_of_a_task_dict() -> None:
    rec = task_to_record({
        "id": "task_Zr9BwM", "status": "todo", "body": "title:T\n\nB",
        "created_date": "2026-11-29T18:53:25.595186Z",
        "last_modified": "2026-11-29T18:53:35.751592Z", "commit_hash": "def5678",
        "agent_response": "", "feature_tags": ["a"], "related_tasks": ["task_Ai1nBG"],
        "blocked_by": ["task_mOgxY1"], "schema_version": 1,
        "fields": {"priority": 2, "team": "core", "points": 3}})
    f = rec.fields
    assert (f["title"], f["status"], f["priority"], f["commits"]) == ("T", "open", 2, ["def5678"])
    assert (f["labels"], f["depends_on"]) == (["a"], ["task_mOgxY1"])
    assert f["x"]["yylo"] == {"status": "todo", "related_tasks": ["task_Ai1nBG"],
                              "json": {"schema_version": "1"},
                              "fields": {"team": "core", "json": {"points": "3"}}}
    assert rec.body == "B\n"


@needs_yylo
def test_import_a_board_made_by_the_real_cli(yylo: Yylo, lg: CliRun) -> None:
    ci = yylo.create("--title", "Set up CI", "--body", "Add a CI pipeline", "--tags", "infra,ci",
                     "--field", "priority=2")["id"]
    tests = yylo.create("--title", "Write tests", "--body", "Unit tests", "--tags",
                        "tests")["id"]
    deploy = yylo.create("--title", "Deploy", "--body", "Deploy to prod", "--tags", "infra",
                         "--blocked-by", f"{ci},{tests}")["id"]
    yylo("update", ci, "--status", "in_progress")
    yylo("update", ci, "--response", "Added ci.yml", "--commit", "abc1234")
    yylo("mark", "done", ci, "--response", "CI green", "--commit", "def5678")
    yylo("mark", "done", tests, "--response", "tests written")
    yylo("archive", tests)
    # a hand edit that YYLO records with reconcile, then one it never records
    path = next((yylo.root / ".juno_task" / "tasks").glob(f"*/{deploy}.md"))
    path.write_text(path.read_text().replace("Deploy to prod", "Deploy to production"))
    yylo("reconcile")
    yylo("mark", "done", deploy, "--response", "deployed", "--commit", "1234abc")

    code, out, err = lg("import", "yylo", str(yylo.root / ".juno_task"), "--by", "importer")
    assert code == 0, err
    board = Board(lg.root)
    ids = board.list_ids()
    assert set(ids) == {ci, tests, deploy}
    assert verify_board(board) == []
    for tid in ids:
        shown = yylo.get(tid)  # the tool's own view of the task
        stored = {k: v for k, v in shown.items() if not k.startswith("_")}  # computed on read
        assert board.read(tid) == task_to_record(stored)
    rec = board.read(ci)
    assert (rec.fields["title"], rec.fields["status"], rec.fields["response"]) == (
        "Set up CI", "done", "CI green")
    assert rec.fields["commits"] == ["def5678"] and rec.fields["priority"] == 2
    assert rec.fields["labels"] == ["infra", "ci"] and rec.body == "Add a CI pipeline\n"
    assert board.read(tests).fields["status"] == "archived"
    assert board.read(deploy).fields["depends_on"] == [ci, tests]
    assert board.read(deploy).body == "Deploy to production\n"
    events = parse_events(board.read_history_text(ci) or "", ci)
    # the import root (a genesis by ledgit, docs/merge.md "One task added twice"), then the
    # source's own events as import events, each naming the op it was in the source
    assert [e["op"] for e in events] == ["create", "import", "import", "import", "import"]
    assert events[0]["actor"] == "ledgit" and "meta" not in events[0]
    assert [e["meta"].get("source_op") for e in events[1:]] == ["create", "update", "update",
                                                                 "mark"]
    assert all(e["actor"] == "yylo:cli" for e in events[1:])
    dep_events = parse_events(board.read_history_text(deploy) or "", deploy)
    assert [e["meta"].get("source_op") for e in dep_events[1:]] == ["create", "reconcile", "mark"]
    assert dep_events[2]["actor"] == "yylo:external-edit"

    # an edit YYLO never recorded: one more import event on top of the ledger's
    path.write_text(path.read_text().replace("deployed", "deployed to prod"))
    code, out, _ = lg("import", "yylo", str(yylo.root), "--by", "importer")
    assert "updated 1" in out and "unchanged 2" in out
    assert board.read(deploy).fields["response"] == "deployed to prod"
    assert verify_board(board) == []
    code, out, _ = lg("import", "yylo", str(yylo.root), "--by", "importer")
    assert out.strip().endswith("updated 0, merged 0, conflicts 0, unchanged 3, skipped 0")


@needs_yylo
def test_a_tampered_ledger_is_skipped_with_its_line(yylo: Yylo, lg: CliRun) -> None:
    tid = yylo.create("--title", "T", "--body", "B")["id"]
    yylo("update", tid, "--status", "todo")
    ledger = next((yylo.root / ".juno_task" / "ledger").glob(f"*/{tid}/000001.ndjson"))
    lines = ledger.read_text().splitlines()
    lines[1] = lines[1].replace('"todo"', '"done"')
    ledger.write_text("\n".join(lines) + "\n")
    code, out, err = lg("import", "yylo", str(yylo.root))
    assert code == 1 and "skipped 1" in out
    assert f"{tid}/000001.ndjson:2: event_sha256 does not match" in err
    code, _, err = lg("import", "yylo", str(yylo.root), "--strict")
    assert code == 2 and "nothing imported" in err
