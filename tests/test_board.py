"""ledgit.storage.board and ledgit.storage.config on real files (and real Git repositories where
Git matters)."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gitutil import git

import ledgit.storage.indexrefresh
from ledgit.core.change import Change
from ledgit.core.errors import BUSY, CHECK_FAILED, NOT_FOUND, STALE, USAGE, LedgitError
from ledgit.core.history import event_line, new_event, parse_events
from ledgit.core.record import Record, make_record, parse_record
from ledgit.core.render import render_record
from ledgit.core.schema import is_valid_id
from ledgit.storage import boardcheck, taskfiles
from ledgit.storage.actor import actor_name
from ledgit.storage.board import Board, find_board
from ledgit.storage.boardcheck import verify_board
from ledgit.storage.boardinit import init_board
from ledgit.storage.boardrepair import repair_board
from ledgit.storage.config import BoardConfig, load_config, parse_duration
from ledgit.storage.index import Index
from ledgit.storage.writepath import create_task, mutate_task, record_edit

pytest_plugins = ["gitutil"]

ID_RE = re.compile(r"T-[a-z2-7]{10}")


def setter(**changes: Any) -> Callable[[Record], Change]:
    """A mutation callback that sets (or, with None, removes) front-matter fields."""

    def change(record: Record) -> Change:
        fields = dict(record.fields)
        for key, value in changes.items():
            if value is None:
                fields.pop(key, None)
            else:
                fields[key] = value
        return Change(Record(fields, record.body), "update", "set " + ", ".join(changes))

    return change


def snapshot(board: Board, task_id: str) -> tuple[bytes, bytes]:
    return board.task_path(task_id).read_bytes(), board.history_path(task_id).read_bytes()


def hand_edit(board: Board, task_id: str, **changes: Any) -> None:
    """Edit the task file the way a person would: change fields, write the file in place."""
    record = board.read(task_id)
    fields = {**record.fields, **changes}
    board.task_path(task_id).write_text(render_record(Record(fields, record.body)))


def codes(excinfo: pytest.ExceptionInfo[LedgitError]) -> int:
    return excinfo.value.code


# --------------------------------------------------------------------------- create / read


def test_create_writes_file_and_genesis(board: Board) -> None:
    record = create_task(board, {"title": "Fix the dialer"}, "## Goal\nDial.\n", "ada",
                          note="from a test")
    assert ID_RE.fullmatch(record.id)
    assert record.fields["status"] == "open"
    assert record.fields["created"] == record.fields["last_modified"]
    assert board.read(record.id) == record
    assert board.list_ids() == [record.id]
    events = parse_events(board.read_history_text(record.id) or "", record.id)
    assert [(e["op"], e["actor"], e["parents"], e.get("note")) for e in events] == [
        ("create", "ada", [], "from a test")]
    assert events[0]["after"] == record.revision
    assert verify_board(board) == []


def test_create_with_id_and_time(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada", task_id="T-fixed",
                          at="2026-01-02T03:04:05+01:00")
    assert record.id == "T-fixed"
    assert record.fields["created"] == "2026-01-02T02:04:05.000000Z"
    with pytest.raises(LedgitError) as exc:
        create_task(board, {"title": "again"}, "", "ada", task_id="T-fixed")
    assert codes(exc) == USAGE and "already exists" in str(exc.value)


def test_create_refuses_invalid_fields_and_writes_nothing(board: Board) -> None:
    with pytest.raises(LedgitError) as exc:
        create_task(board, {"status": "open"}, "", "ada")
    assert codes(exc) == USAGE and "title" in str(exc.value)
    with pytest.raises(LedgitError) as exc:
        create_task(board, {"title": "t", "status": "done"}, "", "ada")  # done needs a response
    assert codes(exc) == USAGE and "response" in str(exc.value)
    assert board.list_ids() == []
    assert os.listdir(board.history_dir) == []


def test_create_uses_the_configured_prefix(tmp_path: Path, clean_env: None) -> None:
    b = init_board(tmp_path / "b", id_prefix="BUG")
    assert re.fullmatch(r"BUG-[a-z2-7]{10}", create_task(b, {"title": "t"}, "", "ada").id)


def test_read_errors(board: Board) -> None:
    with pytest.raises(LedgitError) as exc:
        board.read("T-nothere")
    assert codes(exc) == NOT_FOUND
    board.tasks_dir.joinpath("T-bad.md").write_text("---\nid: T-bad\ntitle: t\n"
                                                      "status: nope\n---\n")
    with pytest.raises(LedgitError) as exc:
        board.read("T-bad")
    assert codes(exc) == USAGE
    assert str(exc.value).startswith(".ledgit/tasks/T-bad.md:4: status:")
    record = create_task(board, {"title": "t"}, "", "ada")
    board.tasks_dir.joinpath("T-other.md").write_text(render_record(record))
    with pytest.raises(LedgitError) as exc:
        board.read("T-other")
    assert codes(exc) == USAGE and "does not match the file name" in str(exc.value)
    with pytest.raises(LedgitError) as exc:
        board.read("../escape")
    assert codes(exc) == USAGE


def test_ids_agree_with_record() -> None:
    for text in ("T-abc", "a", "x..y", "../x", "a/b", "-a", "T_1.2", "", "é", "a" * 129):
        assert taskfiles.is_valid_id(text) == is_valid_id(text), text


# --------------------------------------------------------------------------- mutate


def test_mutate_appends_one_event_and_bumps_last_modified(board: Board) -> None:
    first = create_task(board, {"title": "t"}, "", "ada")
    second = mutate_task(board, first.id, setter(priority=1), "bob")
    assert second.fields["priority"] == 1
    assert second.fields["last_modified"] > first.fields["last_modified"]
    assert board.read(first.id) == second
    events = parse_events(board.read_history_text(first.id) or "", first.id)
    assert len(events) == 2
    assert events[1]["parents"] == [events[0]["id"]]
    assert (events[1]["op"], events[1]["actor"], events[1]["note"]) == ("update", "bob",
                                                                         "set priority")
    assert (events[1]["before"], events[1]["after"]) == (first.revision, second.revision)
    assert verify_board(board) == []


def test_mutate_without_change_writes_nothing(board: Board) -> None:
    record = create_task(board, {"title": "t", "priority": 2}, "", "ada")
    before = snapshot(board, record.id)
    assert mutate_task(board, record.id, setter(priority=2), "bob") == record
    assert snapshot(board, record.id) == before


def test_last_modified_strictly_increases_even_when_the_clock_is_behind(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada", at="2999-01-01T00:00:00Z")
    after = mutate_task(board, record.id, setter(priority=1), "bob")
    assert after.fields["last_modified"] == "2999-01-01T00:00:00.000001Z"


def test_expect(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    moved = mutate_task(board, record.id, setter(priority=1), "bob", expect=record.revision)
    before = snapshot(board, record.id)
    with pytest.raises(LedgitError) as exc:  # stale: the task moved on
        mutate_task(board, record.id, setter(priority=3), "bob", expect=record.revision)
    assert codes(exc) == STALE and moved.revision in str(exc.value)
    with pytest.raises(LedgitError) as exc:  # a short prefix is not enough
        mutate_task(board, record.id, setter(priority=3), "bob", expect=moved.revision[:11])
    assert codes(exc) == USAGE
    with pytest.raises(LedgitError) as exc:
        mutate_task(board, record.id, setter(priority=3), "bob", expect="not-a-revision")
    assert codes(exc) == USAGE
    assert snapshot(board, record.id) == before
    done = mutate_task(board, record.id, setter(priority=3), "bob",
                        expect=moved.revision[:12].upper())
    assert done.fields["priority"] == 3


def test_mutate_refuses_bad_changes(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    before = snapshot(board, record.id)
    with pytest.raises(LedgitError) as exc:
        mutate_task(board, record.id, setter(id="T-other"), "bob")
    assert codes(exc) == USAGE
    with pytest.raises(LedgitError) as exc:
        mutate_task(board, record.id, setter(priority=9), "bob")
    assert codes(exc) == USAGE and "priority" in str(exc.value)
    with pytest.raises(LedgitError) as exc:  # done without an account (DESIGN §4)
        mutate_task(board, record.id, setter(status="done"), "bob")
    assert codes(exc) == USAGE and "response" in str(exc.value)
    with pytest.raises(LedgitError) as exc:
        mutate_task(board, record.id, setter(priority=1), "two\nlines")
    assert codes(exc) == USAGE
    with pytest.raises(LedgitError) as exc:
        mutate_task(board, "T-nothere", setter(priority=1), "bob")
    assert codes(exc) == NOT_FOUND
    assert snapshot(board, record.id) == before
    forced = mutate_task(board, record.id, setter(status="done"), "bob", check_lifecycle=False)
    assert forced.fields["status"] == "done"
    assert [p.rule for p in verify_board(board)] == ["lifecycle"]


def test_lock_timeout_is_busy(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    with board.lock(record.id), pytest.raises(LedgitError) as exc:
        mutate_task(board, record.id, setter(priority=1), "bob", lock_timeout=0.1)
    assert codes(exc) == BUSY and record.id in str(exc.value)
    assert board.read(record.id) == record


def _hammer(root: str, task_id: str, worker: int, count: int) -> None:
    b = Board(Path(root))
    for i in range(count):
        def note(record: Record, i: int = i) -> Change:
            fields = {**record.fields, "response": f"w{worker}-{i}"}
            return Change(Record(fields, record.body), "update", f"w{worker}-{i}")
        mutate_task(b, task_id, note, f"worker-{worker}")


def test_eight_processes_fifty_mutations_each_all_land(board: Board) -> None:
    record = create_task(board, {"title": "contended"}, "", "ada")
    Index.open(board).close()  # so that every write also updates the index under contention
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    procs = [ctx.Process(target=_hammer, args=(str(board.root), record.id, w, 50))
             for w in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 8
    events = parse_events(board.read_history_text(record.id) or "", record.id)
    assert len(events) == 401
    assert sorted(e.get("note") for e in events[1:]) == sorted(
        f"w{w}-{i}" for w in range(8) for i in range(50))
    stamps = [e["at"] for e in events]
    assert stamps == sorted(stamps) and len(set(stamps)) == 401
    assert verify_board(board) == []
    row = Index.open(board).get(record.id)
    assert row is not None and row["revision"] == board.read(record.id).revision


# --------------------------------------------------------------------------- resolve / find


def test_resolve_id(board: Board) -> None:
    a = create_task(board, {"title": "a"}, "", "ada", task_id="T-k3v9q2mz7a")
    b = create_task(board, {"title": "b"}, "", "ada", task_id="T-k3xxq2mz7a")
    c = create_task(board, {"title": "c"}, "", "ada", task_id="T-zzzzzzzzzz")
    assert board.resolve_id(a.id) == a.id
    assert board.resolve_id("T-k3v") == a.id
    assert board.resolve_id("k3v9") == a.id  # a prefix of the random part
    assert board.resolve_id("K3V9") == a.id  # prefixes ignore case
    assert board.resolve_id("zz") == c.id
    with pytest.raises(LedgitError) as exc:
        board.resolve_id("k3")
    assert codes(exc) == NOT_FOUND
    assert a.id in str(exc.value) and b.id in str(exc.value) and "ambiguous" in str(exc.value)
    for text in ("nothing", "../etc", "T-k3v9q2mz7a-more"):
        with pytest.raises(LedgitError) as exc:
            board.resolve_id(text)
        assert codes(exc) == NOT_FOUND


def test_find_board_searches_upward(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = board.root / "a" / "b" / "c"
    deep.mkdir(parents=True)
    assert find_board(deep).root == board.root
    monkeypatch.chdir(deep)
    assert find_board().root == board.root


def test_ledgit_root_pins_the_board(board: Board, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("LEDGIT_ROOT", str(board.root))
    assert find_board(elsewhere).root == board.root
    monkeypatch.setenv("LEDGIT_ROOT", str(board.dir))  # the .ledgit dir itself also works
    assert find_board(elsewhere).root == board.root
    monkeypatch.setenv("LEDGIT_ROOT", str(elsewhere))
    with pytest.raises(LedgitError) as exc:
        find_board(board.root)
    assert codes(exc) == NOT_FOUND


def test_no_board_is_not_found_and_creates_nothing(tmp_path: Path, clean_env: None) -> None:
    empty = tmp_path / "empty" / "deeper"
    empty.mkdir(parents=True)
    before = sorted(p for p in tmp_path.rglob("*"))
    with pytest.raises(LedgitError) as exc:
        find_board(empty)
    assert codes(exc) == NOT_FOUND and "ledgit init" in str(exc.value)
    assert sorted(p for p in tmp_path.rglob("*")) == before


def test_reads_create_nothing(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    before = sorted(p for p in board.root.rglob("*") if "locks" not in p.parts)
    fresh = find_board(board.root)
    fresh.read(record.id)
    fresh.resolve_id(record.id[:5])
    fresh.list_ids()
    assert verify_board(fresh) == []
    assert sorted(p for p in board.root.rglob("*") if "locks" not in p.parts) == before


# --------------------------------------------------------------------------- hand edits


def test_hand_edit_is_detected_until_recorded(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    hand_edit(board, record.id, title="edited by hand")
    problems = verify_board(board)
    assert [(p.task, p.rule) for p in problems] == [(record.id, "record-head")]
    assert "record differs from its history head" in problems[0].message
    event = record_edit(board, record.id, "carol")
    assert event is not None and (event["op"], event["actor"]) == ("edit", "carol")
    assert verify_board(board) == []
    assert record_edit(board, record.id, "carol") is None


def test_mutate_records_a_hand_edit_first(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    hand_edit(board, record.id, title="edited by hand")
    after = mutate_task(board, record.id, setter(priority=1), "bob")
    assert after.fields["title"] == "edited by hand"
    events = parse_events(board.read_history_text(record.id) or "", record.id)
    assert [(e["op"], e["actor"]) for e in events] == [("create", "ada"), ("edit", "bob"),
                                                      ("update", "bob")]
    assert verify_board(board) == []


def test_a_hand_revert_is_an_edit_not_a_roll_forward(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    old = board.task_path(record.id).read_bytes()
    mutate_task(board, record.id, setter(priority=1), "bob")
    hist = board.history_path(record.id)
    os.utime(hist, ns=(hist.stat().st_mtime_ns - 10**9, hist.stat().st_mtime_ns - 10**9))
    board.task_path(record.id).write_bytes(old)  # e.g. git checkout HEAD~ -- the file
    assert repair_board(board) == []
    event = record_edit(board, record.id, "carol")
    assert event is not None and event["op"] == "edit"
    now = board.read(record.id)  # the old content, stamped like every write (issue 24)
    assert {**now.fields, "last_modified": ""} == {**record.fields, "last_modified": ""}
    assert now.body == record.body
    assert now.fields["last_modified"] > record.fields["last_modified"]


def test_a_task_without_history_gets_one(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    board.history_path(record.id).unlink()
    assert [p.rule for p in verify_board(board)] == ["missing"]
    event = record_edit(board, record.id, "carol")
    assert event is not None and event["op"] == "create" and event["parents"] == []
    assert verify_board(board) == []


# --------------------------------------------------------------------------- verify


def test_a_flipped_byte_in_the_history_is_named(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    mutate_task(board, record.id, setter(priority=1), "bob")
    mutate_task(board, record.id, setter(priority=2), "bob")
    path = board.history_path(record.id)
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"actor":"bob"', b'"actor":"bib"')
    path.write_bytes(b"\n".join(lines))
    problems = verify_board(board)
    assert problems and all(p.task == record.id for p in problems)
    assert (problems[0].line, problems[0].rule) == (2, "hash")
    assert f"{record.id}: line 2: hash:" in str(problems[0])


def test_verify_reports_schema_errors_orphans_and_lifecycle(board: Board) -> None:
    good = create_task(board, {"title": "good"}, "", "ada")
    bad = create_task(board, {"title": "bad"}, "", "ada")
    board.task_path(bad.id).write_text("---\ntitle: x\n---\n")
    orphan = create_task(board, {"title": "orphan"}, "", "ada")
    board.task_path(orphan.id).unlink()
    problems = {(p.task, p.rule) for p in verify_board(board)}
    assert problems == {(bad.id, "schema"), (orphan.id, "orphan")}
    assert verify_board(board, [good.id]) == []
    assert [p.rule for p in verify_board(board, ["T-nothere"])] == ["missing"]
    assert [p.rule for p in verify_board(board, [orphan.id])] == ["orphan"]


def _aged_index(board: Board, ids: list[str]) -> None:
    """Let the task files become older than the racy window, then index them (as a read
    would). The window is made short by the caller (:func:`short_racy_window`): the index
    trusts the change time, which utime cannot set back (Git's core.trustctime)."""
    time.sleep(0.1)
    with Index.open(board) as index:
        index.refresh()


@pytest.fixture
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 50 ms racy window (ledgit.storage.indexrefresh.RACY_WINDOW_NS), so a test can wait it
    out."""
    monkeypatch.setattr(ledgit.storage.indexrefresh, "RACY_WINDOW_NS", 50_000_000)


def write_done_without_account(board: Board) -> Record:
    """Write T-donedonedo directly: a valid task and history, but done without an account
    (against a lifecycle rule, which only verify reports)."""
    done = make_record({"id": "T-donedonedo", "title": "d", "status": "done",
                        "created": "2026-01-01T00:00:00.000000Z",
                        "last_modified": "2026-01-01T00:00:00.000000Z"})
    board.task_path(done.id).write_text(render_record(done))
    board.history_path(done.id).write_text(event_line(new_event(
        parents=[], at="2026-01-01T00:00:00.000000Z", actor="ada", op="create",
        before_state={}, after_state=done.state())))
    return done


def test_verify_takes_fresh_revisions_from_the_index(board: Board,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     short_racy_window: None) -> None:
    monkeypatch.setattr(boardcheck, "TRUST_INDEX_FROM", 1)
    ids = [create_task(board, {"title": f"t{i}"}, "", "ada").id for i in range(3)]
    # Valid, but against a lifecycle rule (done without an account): written directly.
    done = write_done_without_account(board)
    ids.append(done.id)

    # just written: racily clean, not trusted (a 60 s window here, so that a slow machine
    # cannot let the short window of the rest of the test pass before the refresh)
    monkeypatch.setattr(ledgit.storage.indexrefresh, "RACY_WINDOW_NS", 60_000_000_000)
    with Index.open(board) as index:
        index.refresh()
        assert index.fresh_revisions() == {}
    monkeypatch.setattr(ledgit.storage.indexrefresh, "RACY_WINDOW_NS", 50_000_000)
    _aged_index(board, ids)
    with Index.open(board) as index:
        assert index.fresh_revisions() == {tid: board.read(tid).revision for tid in ids}
    reads: list[str] = []
    real_parse = Board.parse  # what Board.read and the full check of one task parse with

    def counting_parse(self: Board, task_id: str, data: bytes, rel: str) -> Record:
        reads.append(task_id)
        return real_parse(self, task_id, data, rel)

    monkeypatch.setattr(Board, "parse", counting_parse)
    expected = [(done.id, "lifecycle")]
    assert [(p.task, p.rule) for p in verify_board(board)] == expected
    assert reads == []  # every revision came from the index; lifecycle from the head state
    assert verify_board(board) == verify_board(board, trust_index=False)
    # A hand edit changes the file's stat: that task is parsed, and the edit reported.
    hand_edit(board, ids[0], title="edited")
    reads.clear()
    problems = verify_board(board)
    assert sorted((p.task, p.rule) for p in problems) == sorted([(ids[0], "record-head"),
                                                                 *expected])
    assert reads == [ids[0]]
    assert verify_board(board, trust_index=False) == problems
    # A damaged history of a trusted task: re-checked by parsing, reported the same way.
    path = board.history_path(ids[1])
    path.write_bytes(path.read_bytes().replace(b'"actor":"ada"', b'"actor":"bob"'))
    problems = verify_board(board)
    assert (ids[1], 1, "hash") in [(p.task, p.line, p.rule) for p in problems]
    assert verify_board(board, trust_index=False) == problems
    # A row written through update_one (dirty) is not trusted until a scan re-reads it.
    mutate_task(board, ids[2], setter(priority=1), "ada")
    with Index.open_existing(board) as index:  # type: ignore[union-attr]
        assert ids[2] not in index.fresh_revisions()


def test_verify_trusts_the_stat_like_git(board: Board, monkeypatch: pytest.MonkeyPatch,
                                         short_racy_window: None) -> None:
    """The index rule is Git's, ctime included (core.trustctime): an edit that keeps size,
    inode and mtime (set back by hand) still moves the ctime, so the fresh row is not
    trusted and the edit is seen either way."""
    monkeypatch.setattr(boardcheck, "TRUST_INDEX_FROM", 1)
    task = create_task(board, {"title": "abc"}, "", "ada")
    _aged_index(board, [task.id])
    path = board.task_path(task.id)
    st = os.stat(path)
    with open(path, "r+b") as fh:  # same length, same inode
        data = fh.read()
        fh.seek(0)
        fh.write(data.replace(b"title: abc", b"title: xyz"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert [p.rule for p in verify_board(board)] == ["record-head"]
    assert [p.rule for p in verify_board(board, trust_index=False)] == ["record-head"]


def test_more_than_one_head_refuses_writes(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    mutate_task(board, record.id, setter(priority=1), "bob")
    genesis = parse_events(board.read_history_text(record.id) or "", record.id)[0]
    branch = new_event(parents=[genesis["id"]], at="2030-01-01T00:00:00.000000Z",
                       actor="x", op="update", before_state=record.state(),
                       after_state={**record.state(), "body": "other\n"})
    with open(board.history_path(record.id), "a") as fh:  # a line merge of two branches
        fh.write(event_line(branch))
    with pytest.raises(LedgitError) as exc:
        mutate_task(board, record.id, setter(priority=2), "bob")
    assert codes(exc) == CHECK_FAILED and "2 heads" in str(exc.value)


def test_damaged_history_refuses_writes(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    board.history_path(record.id).write_text("not json\n")
    with pytest.raises(LedgitError) as exc:
        mutate_task(board, record.id, setter(priority=1), "bob")
    assert codes(exc) == CHECK_FAILED and "damaged" in str(exc.value)


# --------------------------------------------------------------------------- repair


def _crash_after_append(board: Board, task_id: str, **changes: Any) -> Record:
    """Do the first half of a write: append the event, never replace the file."""
    current = board.read(task_id)
    events = parse_events(board.read_history_text(task_id) or "", task_id)
    target = Record({**current.fields, **changes,
                     "last_modified": "2030-01-01T00:00:00.000000Z"}, current.body)
    event = new_event(parents=[events[-1]["id"]], at="2030-01-01T00:00:00.000000Z",
                      actor="crashy", op="update", before_state=current.state(),
                      after_state=target.state())
    with open(board.history_path(task_id), "a") as fh:
        fh.write(event_line(event))
    return target


def test_repair_rolls_an_interrupted_write_forward(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    target = _crash_after_append(board, record.id, title="after the crash")
    (board.tasks_dir / f".{record.id}.md.tmp-99999-abcd").write_text("half")
    assert [p.rule for p in verify_board(board)] == ["record-head", "temp-file"]  # issue 13
    done = repair_board(board)
    assert len(done) == 2 and any("rolled" in line for line in done)
    assert board.read(record.id) == target
    assert verify_board(board) == []
    assert not list(board.tasks_dir.glob(".*"))
    assert repair_board(board) == []


def test_the_next_write_rolls_an_interrupted_write_forward(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    _crash_after_append(board, record.id, title="after the crash")
    after = mutate_task(board, record.id, setter(priority=1), "bob")
    assert after.fields["title"] == "after the crash"
    ops = [e["op"] for e in parse_events(board.read_history_text(record.id) or "", record.id)]
    assert ops == ["create", "update", "update"]
    assert verify_board(board) == []


def test_repair_cuts_a_torn_last_line(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    with open(board.history_path(record.id), "a") as fh:
        fh.write('{"actor":"half a li')
    assert [p.rule for p in verify_board(board)] == ["parse"]
    assert any("torn" in line for line in repair_board(board))
    assert verify_board(board) == []


def test_repair_recreates_an_interrupted_create(board: Board) -> None:
    record = create_task(board, {"title": "t"}, "", "ada")
    board.task_path(record.id).unlink()
    assert any("recreated" in line for line in repair_board(board))
    assert board.read(record.id) == record
    assert verify_board(board) == []


# --------------------------------------------------------------------------- git, init, actor


def test_private_dir_is_gits_per_worktree_path(git_repo: Path, clean_env: None) -> None:
    b = init_board(git_repo)
    assert not (git_repo / ".gitignore").exists()
    expected = git("rev-parse", "--path-format=absolute", "--git-path", "ledgit", cwd=git_repo)
    assert b.private_dir == Path(expected)
    (git_repo / "README").write_text("x\n")
    git("add", "README", ".ledgit", cwd=git_repo)
    git("commit", "-qm", "init", cwd=git_repo)
    wt = git_repo.parent / "wt"
    git("worktree", "add", "-q", str(wt), cwd=git_repo)
    other = find_board(wt)
    expected_wt = git("rev-parse", "--path-format=absolute", "--git-path", "ledgit", cwd=wt)
    assert other.root == wt and other.private_dir == Path(expected_wt)
    assert other.private_dir != b.private_dir


def test_outside_git_the_private_dir_is_ignored(board: Board) -> None:
    assert board.private_dir == board.dir / ".local"
    assert (board.root / ".gitignore").read_text() == ".ledgit/.local/\n"
    init_board(board.root)  # idempotent
    assert (board.root / ".gitignore").read_text() == ".ledgit/.local/\n"


def test_init_keeps_an_existing_config(board: Board) -> None:
    (board.dir / "config.yaml").write_text("id_prefix: OPS\nclaim_ttl: 2h\n")
    again = init_board(board.root, id_prefix="T")
    assert again.config == BoardConfig(id_prefix="OPS", claim_ttl=7200)
    with pytest.raises(LedgitError):
        init_board(board.root, id_prefix="not-valid")


def test_actor_name_precedence(git_repo: Path, clean_env: None, tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    assert actor_name("  cli-user ", git_repo) == "cli-user"
    monkeypatch.setenv("LEDGIT_ACTOR", "env-user")
    assert actor_name(None, git_repo) == "env-user"
    assert actor_name("cli-user", git_repo) == "cli-user"
    monkeypatch.delenv("LEDGIT_ACTOR")
    assert actor_name(None, git_repo) == "Ada Tester"
    empty = tmp_path / "empty.gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    assert actor_name(None, git_repo) == "unknown"
    with pytest.raises(LedgitError):
        actor_name("two\nlines", git_repo)


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize(("text", "seconds"), [
    ("1800", 1800), ("90s", 90), ("30m", 1800), ("2h", 7200), ("1d", 86400),
    ("1h30m", 5400), (" 45M ", 2700), ("0", 0),
])
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "m", "30 minutes", "1.5h", "-5", "h1", "30m1"])
def test_parse_duration_refuses(text: str) -> None:
    with pytest.raises(LedgitError) as exc:
        parse_duration(text)
    assert codes(exc) == USAGE


def test_load_config(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    assert load_config(path) == BoardConfig()
    path.write_text("# settings\nid_prefix: 'BUG'  # bugs\nclaim_ttl: 90s\n")
    assert load_config(path) == BoardConfig(id_prefix="BUG", claim_ttl=90)
    path.write_text("claim_ttl: 1h\nx:\n  team: [a, b]\n")
    assert load_config(tmp_path).x == {"team": ["a", "b"]}
    path.write_text("id_prefix: NO\n")  # no Norway problem
    assert load_config(path).id_prefix == "NO"


@pytest.mark.parametrize(("text", "where"), [
    ("id_prefix: T\nclaim_ttl: soon\n", ":2: claim_ttl:"),
    ("claim_ttl: 0\n", ":1: claim_ttl:"),
    ("id_prefix: a-b\n", ":1: id_prefix:"),
    ("\n\nclaim-ttl: 5m\n", ":3: claim-ttl: unknown setting"),
    ("claim_ttl: 5m\nclaim_ttl: 6m\n", ":2: claim_ttl: duplicate key"),
    ("claim_ttl: !!int 5\n", ":1: claim_ttl:"),
    ("claim_ttl: [5m]\n", ":1: claim_ttl:"),
    ("claim_ttl: {a\n", ":"),
])
def test_load_config_names_file_line_field(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(LedgitError) as exc:
        load_config(path)
    assert codes(exc) == USAGE
    assert str(exc.value).startswith(str(path) + where), str(exc.value)


def test_a_bad_config_is_reported_when_needed(board: Board) -> None:
    (board.dir / "config.yaml").write_text("claim_ttl: soon\n")
    fresh = Board(board.root)
    fresh.list_ids()  # reading tasks does not need the config
    with pytest.raises(LedgitError) as exc:
        create_task(fresh, {"title": "t"}, "", "ada")
    assert codes(exc) == USAGE and "config.yaml:1: claim_ttl" in str(exc.value)


def test_written_files_parse_and_history_lines_are_canonical(board: Board) -> None:
    record = create_task(board, {"title": "yes", "labels": ["on", "0123"]}, "body\n", "ada")
    mutate_task(board, record.id, setter(priority=0), "bob")
    text = board.task_path(record.id).read_text()
    assert parse_record(text).fields["labels"] == ["on", "0123"]
    for line in (board.read_history_text(record.id) or "").splitlines():
        assert json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False) == line


def test_init_where_it_cannot_is_one_clear_error(tmp_path: Path, clean_env: None) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / ".ledgit").write_text("a file, not a directory")
    with pytest.raises(LedgitError) as exc:
        init_board(tmp_path / "x")
    assert codes(exc) == USAGE and "cannot create a board" in str(exc.value)


# The modules a verb of Board or Index imports when it is called (docs/design.md §11): a read
# that finds nothing changed imports none of them. (ledgit.storage.actor, standard library only, is
# imported by the command layer's shared argument helpers, reads included.)
# The write path, checking, repair and init are modules of their own that a read never names
# (issue 23: by the layout, not by imports inside functions; the lock, the record parser and
# the index's builders are now imported at the top of the modules a read uses).
WRITE_PATH_MODULES = {"ledgit.storage.writepath", "ledgit.storage.boardcheck",
                      "ledgit.storage.boardrepair", "ledgit.storage.boardinit",
                      "ledgit.operations.writing"}


def test_a_read_imports_no_write_path_module(board: Board) -> None:
    tid = create_task(board, {"title": "t"}, "", "ada").id
    mutate_task(board, tid, setter(title="u"), "ada")
    os.utime(board.task_file(tid), ns=(1, 1))  # past the racy window: a read re-checks nothing
    with Index.open(board) as index:
        index.refresh()
    code = ("import io, sys, contextlib\nfrom ledgit.__main__ import run\n"
            "for argv in sys.argv[1:]:\n"
            "    with contextlib.redirect_stdout(io.StringIO()):\n"
            "        assert run(argv.split()) == 0, argv\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith('ledgit'))))")
    proc = subprocess.run([sys.executable, "-c", code, f"get {tid}", "list --limit 20",
                           "ready"], capture_output=True, text=True, check=True,
                          cwd=board.root_str)
    loaded = set(proc.stdout.strip().splitlines()[-1].split(","))
    assert "ledgit.storage.index" in loaded and "ledgit.storage.board" in loaded
    assert loaded & WRITE_PATH_MODULES == set()
