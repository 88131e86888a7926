"""What a fresh user ran into: conflict markers verify missed, doctor silent on unrecorded
edits, ``ledgit check [--fix]``, and a few messages. Real repositories, real processes."""

from __future__ import annotations

import json
import os
import re
import time
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

from ledgit.core.change import Change
from ledgit.core.errors import CLAIM, LedgitError
from ledgit.core.markers import marker_lines
from ledgit.core.record import Record, make_record
from ledgit.operations import claims, stateitems, transitions
from ledgit.storage import boardcheck, indexrefresh
from ledgit.storage.board import Board
from ledgit.storage.boardcheck import verify_board
from ledgit.storage.boardinit import init_board
from ledgit.storage.index import Index
from ledgit.storage.writepath import create_task, mutate_task

pytest_plugins = ["gitutil"]

MARKED_BODY = "## Goal\nkeep\n<<<<<<< ours\nmine\n=======\nyours\n>>>>>>> theirs\n"


def _first_marker(path: Path) -> int:
    return marker_lines(path.read_bytes())[0]


# --------------------------------------------------------------------------- 1. markers


def test_verify_and_check_report_a_committed_driver_body_conflict(
        tmp_path: Path, git_env: Path) -> None:
    a = new_repo(tmp_path / "a")
    tid = create(a, "Shared", "--body", BODY, "--by", "lead")
    commit_all(a, "task")
    git("worktree", "add", "-q", "-b", "feature", str(tmp_path / "b"), cwd=a)
    b = tmp_path / "b"
    edit_body(a, tid, "Middle paragraph that separates the two.", "Middle: upstream.")
    commit_all(a, "a")
    edit_body(b, tid, "Middle paragraph that separates the two.", "Middle: feature.")
    commit_all(b, "b")
    assert git_rc(b, "merge", "--no-edit", "main").returncode == 1
    git("add", "-A", cwd=b)
    git("commit", "-q", "--no-verify", "--no-edit", cwd=b)  # the markers are committed
    assert has_markers(task_file(b, tid).read_text())
    line = _first_marker(task_file(b, tid))
    for args in (("verify",), ("verify", "--all"), ("verify", tid), ("check",)):
        r = ledgit(b, *args, code=1)
        assert r.out.splitlines() == [r.out.splitlines()[0]]
        assert r.out.startswith(f"{tid}: line {line}: conflict-markers: ")
        assert f"ledgit resolve .ledgit/tasks/{tid}.md" in r.out
    problems = json.loads(ledgit(b, "verify", "--json", code=1).out)["problems"]
    assert [(p["rule"], p["line"]) for p in problems] == [("conflict-markers", line)]
    assert "conflict-markers" in ledgit(b, "verify", "--rev", "HEAD", code=1).out  # the same rule
    for args in (("get", tid), ("list",), ("list", "--json")):
        err = [x for x in ledgit(b, *args).err.splitlines() if x]
        assert len(err) == 1 and "conflict markers" in err[0] and tid in err[0]
    assert ledgit(a, "get", tid).err == ""  # a clean task: no warning


def test_a_line_merge_in_a_clone_without_the_driver_is_conflict_markers_at_the_marker(
        tmp_path: Path, git_env: Path) -> None:
    origin = new_repo(tmp_path / "origin")
    tid = create(origin, "Shared", "--body", BODY, "--by", "lead")
    commit_all(origin, "task")
    clone = tmp_path / "clone"
    git("clone", "-q", str(origin), str(clone), cwd=tmp_path)
    git("checkout", "-q", "-b", "side", cwd=clone)
    ledgit(clone, "update", tid, "--priority", "1", "--by", "s")
    commit_all(clone, "side")
    git("checkout", "-q", "main", cwd=clone)
    ledgit(clone, "update", tid, "--priority", "3", "--by", "m")
    commit_all(clone, "main")
    assert git_rc(clone, "merge", "--no-edit", "side").returncode == 1
    commit_all(clone, "markers committed")
    r = ledgit(clone, "verify", code=1)
    lines = r.out.splitlines()
    want = {f".ledgit/tasks/{tid}.md": _first_marker(task_file(clone, tid)),
            f".ledgit/history/{tid}.jsonl": _first_marker(history_file(clone, tid))}
    assert len(lines) == 2
    for out, (path, line) in zip(lines, want.items(), strict=True):
        assert out.startswith(f"{tid}: line {line}: conflict-markers: ") and path in out
        assert f"(run: ledgit resolve {path})" in out
    assert "schema" not in r.out and "parse" not in r.out


def test_board_verify_sees_markers_in_a_body_its_index_row_trusts(
        board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(boardcheck, "TRUST_INDEX_FROM", 1)
    ids = [create_task(board, {"title": f"t{i}"}, "## Goal\nx\n", "lead").id for i in range(3)]

    def marked(r: Record) -> Change:
        return Change(make_record(r.fields, MARKED_BODY), "merge")

    mutate_task(board, ids[1], marked, "ledgit")  # what the driver leaves: file == history head

    # the index trusts ctime: wait out a short racy window
    monkeypatch.setattr(indexrefresh, "RACY_WINDOW_NS", 50_000_000)
    time.sleep(0.1)
    with Index.open(board) as index:
        index.refresh()
    assert ids[1] in boardcheck.fresh_revisions(board)  # the fast path would trust this row
    line = marker_lines(board.task_path(ids[1]).read_bytes())[0]
    for trust in (True, False):
        found = verify_board(board, trust_index=trust)
        assert [(p.task, p.rule, p.line) for p in found] == [(ids[1], "conflict-markers", line)]


# --------------------------------------------------------------------------- 2. doctor


def test_doctor_reports_a_file_that_differs_from_its_history_head_and_a_write_says_so(
        tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    tid = create(repo, "Task", "--by", "lead")
    commit_all(repo, "task")
    ledgit(repo, "doctor")
    ledgit(repo, "update", tid, "--priority", "1", "--by", "lead")
    git("checkout", "--", f".ledgit/tasks/{tid}.md", cwd=repo)  # the file alone goes back
    r = ledgit(repo, "doctor", code=1)
    assert f"{tid}: the task file differs from its history head" in r.out
    assert f"(fix: ledgit record {tid})" in r.out
    before = event_ids(history_file(repo, tid).read_text())
    r = ledgit(repo, "update", tid, "--label", "x", "--by", "bob")
    notes = [x for x in r.err.splitlines() if "note:" in x]
    assert len(notes) == 1 and tid in notes[0] and "edit event" in notes[0]
    after = [json.loads(x)["op"] for x in history_file(repo, tid).read_text().splitlines()]
    assert len(after) == len(before) + 2 and after[-2:] == ["edit", "update"]
    ledgit(repo, "doctor")
    r = ledgit(repo, "update", tid, "--label", "y", "--by", "bob")
    assert "note:" not in r.err  # nothing unrecorded: no note


# --------------------------------------------------------------------------- 3. check


def test_check_and_check_fix(tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    t1 = create(repo, "One", "--body", BODY, "--by", "lead")
    t2 = create(repo, "Two", "--by", "lead")
    commit_all(repo, "tasks")
    assert "checked 2 task(s): ok" in ledgit(repo, "check").err
    # a hand edit, an interrupted write and a hand-made task file
    path = task_file(repo, t1)
    path.write_text(path.read_text().replace("Ship the thing.", "Ship it by hand."))
    old = task_file(repo, t2).read_bytes()
    ledgit(repo, "update", t2, "--priority", "2", "--by", "lead")
    task_file(repo, t2).write_bytes(old)  # as if the write stopped before the rename
    hist = history_file(repo, t2).stat()
    os.utime(task_file(repo, t2), ns=(hist.st_atime_ns, hist.st_mtime_ns - 10**9))
    made = task_file(repo, "T-handmade")
    made.write_text(path.read_text().replace(f"id: {t1}", "id: T-handmade"))
    r = ledgit(repo, "check", code=1)
    rules = {(x.split(":")[0], x.split(": ")[2]) for x in r.out.splitlines()}
    assert rules == {(t1, "record-head"), (t2, "record-head"), ("T-handmade", "missing")}
    assert ledgit(repo, "check", t1, code=1).out.startswith(f"{t1}: ")
    r = ledgit(repo, "check", "--fix", "--by", "fixer")
    assert f"recorded: {t1}: edit event" in r.out and "by fixer" in r.out
    assert "recorded: T-handmade: create event" in r.out
    assert "repaired: " in r.out and t2 in r.out
    assert fields(repo, t2)["priority"] == 2  # rolled forward, not recorded backwards
    assert "checked 3 task(s): ok" in r.err
    ledgit(repo, "check")
    ledgit(repo, "verify")
    data = json.loads(ledgit(repo, "check", "--fix", "--json").out)
    assert data == {"ok": True, "actions": [], "problems": []}


def test_check_fix_leaves_what_it_cannot_fix(tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    tid = create(repo, "One", "--by", "lead")
    path = task_file(repo, tid)
    path.write_text(path.read_text().replace("status: open", "status: nonsense"))
    r = ledgit(repo, "check", "--fix", code=1)
    assert r.out.startswith(f"{tid}: history: schema: ") and "recorded" not in r.out
    assert len(event_ids(history_file(repo, tid).read_text())) == 1


# --------------------------------------------------------------------------- 5. messages


def test_record_of_a_hand_made_file_names_the_create(tmp_path: Path, git_env: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    tid = create(repo, "One", "--by", "lead")
    made = task_file(repo, "T-new")
    made.write_text(task_file(repo, tid).read_text().replace(f"id: {tid}", "id: T-new"))
    assert re.fullmatch(r"T-new: recorded create event [0-9a-f]{12}\n",
                        ledgit(repo, "record", "T-new").out)
    path = task_file(repo, tid)
    path.write_text(path.read_text() + "more\n")
    assert "recorded edit event" in ledgit(repo, "record", tid).out


@pytest.mark.parametrize("command", ["doctor", "resolve", "uninstall"])
def test_outside_git_the_message_names_the_command(tmp_path: Path, git_env: Path,
                                                    command: str) -> None:
    plain = tmp_path / "plain"
    init_board(plain)
    r = ledgit(plain, command, env={"GIT_CEILING_DIRECTORIES": str(tmp_path)}, code=2)
    assert f"not inside a Git work tree (ledgit {command} needs one)" in r.err
    assert "install" not in r.err or command == "uninstall"


def test_heartbeat_after_a_takeover_names_who_took_it() -> None:
    fields_, body = transitions.create_fields(task_id="T-a", title="t")
    fields_.update(id="T-a", created="2026-08-29T10:00:00.000000Z",
                   last_modified="2026-08-29T10:00:00.000000Z")
    r = claims.claim(Record(fields_, body), by="a", now="2026-08-29T10:00:00.000000Z",
                  ttl=60).record
    r = claims.claim(r, by="b", now="2026-08-29T11:00:00.000000Z", ttl=60, take_over=True).record
    with pytest.raises(LedgitError) as exc:
        claims.heartbeat(r, by="a", now="2026-08-29T11:00:01.000000Z", ttl=60)
    assert exc.value.code == CLAIM
    assert "claimed by b at 2026-08-29T11:00:00.000000Z" in exc.value.message
    assert "a does not hold it" in exc.value.message
    assert "holds no claim" not in exc.value.message


def test_a_deprecated_item_without_a_successor_is_just_deprecated() -> None:
    fields_, body = transitions.create_fields(task_id="T-a", title="t", owner="olga")
    fields_.update(id="T-a", created="2026-08-29T10:00:00.000000Z",
                   last_modified="2026-08-29T10:00:00.000000Z")
    item = {"id": "I-1", "kind": "fact", "text": "old", "trust": "deprecated", "by": "olga",
            "at": "2026-08-29T10:00:00.000000Z"}
    r = Record({**fields_, "items": [item]}, body)
    for call in (lambda: stateitems.revise(r, supersedes=["I-1"], text="n", by="olga", now="x"),
                 lambda: stateitems.accept(r, items=["I-1"], by="olga", now="x")):
        with pytest.raises(LedgitError) as exc:
            call()
        assert "deprecated" in exc.value.message and "nothing" not in exc.value.message
        assert "superseded by" not in exc.value.message
    item2 = dict(item, superseded_by=["I-2"])
    r2 = Record({**fields_, "items": [item2]}, body)
    with pytest.raises(LedgitError, match=r"superseded by I-2\); revise the newer item"):
        stateitems.revise(r2, supersedes=["I-1"], text="n", by="olga", now="x")
