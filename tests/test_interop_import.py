"""``ledgit import beads``: the bulk import loop on real Beads lines, in real Git repos."""

from __future__ import annotations

import json
import marshal
import os
import sqlite3
import stat
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from gitutil import CliRun
from shareddata import BEADS_ISSUE_LINES, BEADS_ISSUES

from ledgit.core.history import event_line, parse_events
from ledgit.core.historycheck import verify
from ledgit.core.render import render_record
from ledgit.interop import genesis, historywriter, incoming
from ledgit.interop import staging as staging_files
from ledgit.interop.beads import STATUS_MAP, beads_to_record
from ledgit.interop.summary import Progress
from ledgit.storage.board import Board
from ledgit.storage.boardcheck import verify_board
from ledgit.storage.index import Index
from ledgit.storage.taskfiles import file_stat
from ledgit.storage.writepath import create_task

DATA = BEADS_ISSUES



def real_lines(n: int) -> list[dict[str, Any]]:
    """The first ``n`` lines of the real snapshot with at least one of each status there."""
    picked: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line in DATA.open(encoding="utf-8"):
        obj = json.loads(line)
        if len(picked) < n or obj["status"] not in seen:
            picked.append(obj)
            seen.add(obj["status"])
    return picked


def write_jsonl(path: Path, objs: list[Any], extra: list[str] = ()) -> Path:  # type: ignore[assignment]
    lines = [json.dumps(o) for o in objs] + list(extra)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_import_then_reimport_is_idempotent_and_changes_become_events(lg: CliRun,
                                                                      tmp_path: Path) -> None:
    objs = real_lines(30)
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    code, out, err = lg("import", "beads", str(src), "--by", "importer")
    assert code == 0, err
    assert out.strip() == (f"import beads: imported {len(objs)}, updated 0, merged 0, "
                           f"conflicts 0, unchanged 0, skipped 0")
    board = lg.board()
    assert sorted(board.list_ids()) == sorted(o["id"] for o in objs)
    assert verify_board(board) == []
    first = objs[0]["id"]
    task_bytes = board.task_path(first).read_bytes()
    assert task_bytes == render_record(beads_to_record(objs[0])).encode()
    root, imported = parse_events(board.read_history_text(first) or "", first)
    assert (root["op"], root["actor"], root["parents"]) == ("create", "ledgit", [])
    assert "meta" not in root  # the import root: the task's id and created alone
    assert imported["op"] == "import" and imported["actor"] == "importer"
    assert imported["parents"] == [root["id"]]
    assert imported["meta"] == {"source": "beads", "source_id": first}
    snapshot = {tid: (board.task_path(tid).read_bytes(), board.history_path(tid).read_bytes())
                for tid in board.list_ids()}

    code, out, _ = lg("import", "beads", str(src), "--by", "importer")
    assert code == 0
    assert out.strip().endswith(f"updated 0, merged 0, conflicts 0, unchanged {len(objs)}, "
                                f"skipped 0")
    assert snapshot == {tid: (board.task_path(tid).read_bytes(),
                              board.history_path(tid).read_bytes()) for tid in board.list_ids()}

    changed = dict(objs[0], title="A new title", updated_at="2026-02-01T00:00:00Z")
    tomb = next(o for o in objs if o["status"] == "open")
    deleted = dict(tomb, status="tombstone", deleted_at="2026-02-02T00:00:00Z",
                   deleted_by="batch delete", updated_at="2026-02-02T00:00:00Z")
    rest = [o for o in objs if o["id"] not in (first, tomb["id"])]
    write_jsonl(src, [changed, deleted, *rest])
    code, out, _ = lg("import", "beads", str(src), "--by", "importer")
    assert code == 0
    assert "updated 2," in out
    assert board.read(first).fields["title"] == "A new title"
    assert board.read(tomb["id"]).fields["status"] == "archived"
    events = parse_events(board.read_history_text(tomb["id"]) or "", tomb["id"])
    assert [e["op"] for e in events] == ["create", "import", "import"]
    assert events[2]["at"] == "2026-02-02T00:00:00.000000Z"
    assert verify_board(board) == []


def test_malformed_lines_are_reported_with_their_numbers(lg: CliRun, tmp_path: Path) -> None:
    objs = real_lines(3)
    src = write_jsonl(tmp_path / "issues.jsonl", objs[:2],
                      ["{not json", json.dumps({"title": "no id", "status": "open"}),
                       json.dumps(objs[0])])
    code, out, err = lg("import", "beads", str(src))
    assert code == 1  # imported what it could, said what it skipped
    assert "imported 2" in out and "skipped 3" in out
    assert "issues.jsonl:3: not JSON" in err
    assert "issues.jsonl:4: id: missing" in err
    assert f"issues.jsonl:5: duplicate id {objs[0]['id']} (first at issues.jsonl:1)" in err
    assert len(lg.board().list_ids()) == 2


def test_strict_refuses_the_whole_import(lg: CliRun, tmp_path: Path) -> None:
    objs = real_lines(5)
    src = write_jsonl(tmp_path / "issues.jsonl", objs, ["[1, 2]"])
    code, out, err = lg("import", "beads", str(src), "--strict")
    assert code == 2
    assert "nothing imported" in err
    assert f"issues.jsonl:{len(objs) + 1}: expected a JSON object" in err
    assert lg.board().list_ids() == []
    assert os.listdir(lg.root / ".ledgit" / "history") == []


def test_an_existing_task_of_another_origin_is_not_overwritten(lg: CliRun, tmp_path: Path) -> None:
    obj = real_lines(1)[0]
    board = lg.board()
    create_task(board, {"title": "mine"}, "", "me", task_id=obj["id"])
    src = write_jsonl(tmp_path / "issues.jsonl", [obj])
    code, _, err = lg("import", "beads", str(src))
    assert code == 1
    assert f"id taken: {obj['id']} exists and was not imported from beads" in err
    assert board.read(obj["id"]).fields["title"] == "mine"


def test_a_crash_mid_import_is_completed_by_importing_again(lg: CliRun, tmp_path: Path) -> None:
    objs = real_lines(4)
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    assert lg("import", "beads", str(src))[0] == 0
    board = lg.board()
    a, b, c = (o["id"] for o in objs[:3])
    board.history_path(a).unlink()  # history lost, task file kept
    board.task_path(b).unlink()  # task file never written
    board.task_path(c).write_bytes(b"")  # task file written but not flushed
    code, out, err = lg("import", "beads", str(src))
    assert code == 0, err
    assert "imported 3" in out
    assert verify_board(board) == []


def test_progress_bar_only_on_a_terminal() -> None:
    class Term:
        def __init__(self, tty: bool) -> None:
            self.text, self.tty = "", tty

        def isatty(self) -> bool:
            return self.tty

        def write(self, s: str) -> int:
            self.text += s
            return len(s)

        def flush(self) -> None:
            pass

    for tty in (True, False):
        term = Term(tty)
        bar = Progress("import beads", 3, term)  # type: ignore[arg-type]
        for _ in range(3):
            bar.advance()
        bar.close()
        assert ("3/3" in term.text) is tty


def test_the_real_snapshot(lg: CliRun) -> None:
    code, out, err = lg("import", "beads", str(DATA), "--by", "importer")
    assert code == 0, err
    assert out.strip() == (f"import beads: imported {BEADS_ISSUE_LINES}, updated 0, merged 0, "
                           f"conflicts 0, unchanged 0, skipped 0")
    board = lg.board()
    assert len(board.list_ids()) == BEADS_ISSUE_LINES
    assert verify_board(board) == []
    source = Counter(json.loads(line)["status"] for line in DATA.open(encoding="utf-8"))
    expected: Counter[str] = Counter()
    for status, n in source.items():
        expected[STATUS_MAP.get(status, "open")] += n
    got = Counter(board.read(tid).fields["status"] for tid in board.list_ids())
    assert got == expected
    assert got == Counter({"archived": 201, "done": 155, "open": 131, "in_progress": 13})
    code, out, _ = lg("import", "beads", str(DATA))
    assert out.strip().endswith(f"unchanged {BEADS_ISSUE_LINES}, skipped 0")


def _staging_left(root: Path) -> list[str]:
    return [n for n in os.listdir(root / ".ledgit") if n.startswith(staging_files.STAGING_PREFIX)]


def test_a_first_import_moves_whole_directories_in(lg: CliRun, tmp_path: Path) -> None:
    objs = real_lines(6)
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    tasks = lg.root / ".ledgit" / "tasks"
    tasks.chmod(0o750)
    swaps: list[str] = []
    real = staging_files.swap_in

    def spy(staged: str, target: str) -> bool:
        done = real(staged, target)
        swaps.append(f"{os.path.basename(target)}:{done}")
        return done

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(staging_files, "swap_in", spy)
        assert lg("import", "beads", str(src))[0] == 0
    assert swaps == ["history:True", "tasks:True"]  # histories first (write-ahead)
    assert stat.S_IMODE(tasks.stat().st_mode) == 0o750  # the directory's mode is kept
    assert _staging_left(lg.root) == []
    assert sorted(os.listdir(tasks)) == sorted(f"{o['id']}.md" for o in objs)
    assert verify_board(lg.board()) == []


def test_an_import_into_a_board_with_tasks_moves_file_by_file(lg: CliRun,
                                                              tmp_path: Path) -> None:
    objs = real_lines(5)
    board = lg.board()
    mine = create_task(board, {"title": "mine"}, "", "me").id
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    code, out, err = lg("import", "beads", str(src))
    assert code == 0, err
    assert f"imported {len(objs)}" in out
    assert sorted(board.list_ids()) == sorted([mine, *(o["id"] for o in objs)])
    assert _staging_left(lg.root) == []
    assert verify_board(board) == []


def test_a_crash_while_staging_leaves_the_board_untouched(lg: CliRun, tmp_path: Path) -> None:
    objs = real_lines(6)
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    calls = 0
    real = staging_files._create

    def dying(path: str, data: bytes, want_stat: bool = False,
              owner: tuple[int, int] | None = None) -> Any:
        nonlocal calls
        calls += 1
        if calls == 7:  # every history written, then the first task file half-way
            with open(path, "wb") as fh:
                fh.write(data[:len(data) // 2])
            raise KeyboardInterrupt
        return real(path, data, want_stat, owner)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(staging_files, "_create", dying)
        code, _, _ = lg("import", "beads", str(src))
    assert code != 0 and calls == 7
    board = lg.board()
    assert board.list_ids() == [] and os.listdir(board.history_dir) == []
    assert _staging_left(lg.root) == []
    code, out, err = lg("import", "beads", str(src))
    assert code == 0, err
    assert f"imported {len(objs)}" in out
    assert verify_board(board) == []


def test_a_killed_import_is_completed_and_its_staging_removed(lg: CliRun,
                                                              tmp_path: Path) -> None:
    objs = real_lines(4)
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    # What SIGKILL between the two directory renames leaves: every history in the board,
    # no task file, and the staging directory of a process that is gone.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    board = lg.board()
    staging = lg.root / ".ledgit" / f"{staging_files.STAGING_PREFIX}{dead}-0badf00d"
    (staging / "tasks-0badf00d").mkdir(parents=True)
    (staging / "tasks-0badf00d" / f"{objs[0]['id']}.md").write_bytes(b"---\n")
    young = lg.root / ".ledgit" / f"{staging_files.STAGING_PREFIX}{dead}-00000001"
    young.mkdir()  # changed a moment ago: maybe an import of another PID namespace
    old = time.time() - staging_files.STALE_AFTER - 60
    os.utime(staging, (old, old))
    for obj in objs:
        item = incoming.Incoming(beads_to_record(obj), "x", obj["id"])
        board.history_path(obj["id"]).write_bytes(genesis.history_bytes(item, "me", "beads"))
    code, out, err = lg("import", "beads", str(src), "--by", "me")
    assert code == 0, err
    assert f"imported {len(objs)}" in out
    assert verify_board(board) == []
    assert _staging_left(lg.root) == [young.name]


def test_history_bytes_are_the_genesis_events(tmp_path: Path) -> None:
    for obj in real_lines(40):
        item = incoming.Incoming(beads_to_record(obj), "x", obj["id"])
        slow = "".join(event_line(e) for e in genesis.genesis_events(item, "Ölga", "beads"))
        assert genesis.history_bytes(item, "Ölga", "beads") == slow.encode("utf-8")
        root, event = parse_events(slow, obj["id"])
        assert event["after"] == item.record.revision and event["parents"] == [root["id"]]
        assert verify(obj["id"], slow, item.record) == []


def test_what_a_power_loss_leaves_is_completed(lg: CliRun, tmp_path: Path) -> None:
    objs = real_lines(4)
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    assert lg("import", "beads", str(src), "--by", "me")[0] == 0
    board = lg.board()
    a, b = (o["id"] for o in objs[:2])
    data = board.task_path(a).read_bytes()
    board.task_path(a).write_bytes(data[:len(data) // 2])  # a task file cut short
    history = board.history_path(b).read_bytes()
    board.history_path(b).write_bytes(history[:40])  # a torn genesis line
    board.task_path(b).unlink()
    code, out, err = lg("import", "beads", str(src), "--by", "me")
    assert code == 0, err
    assert "imported 2," in out
    assert verify_board(board) == []


def _index_rows(root: Path) -> dict[str, list[Any]]:
    """The index's rows (tasks without checked_ns; docs with the front matter unmarshalled:
    marshal's bytes depend on string interning, not on the value)."""
    db = sqlite3.connect(os.path.join(Board(root).private_str, "index.sqlite3"))
    try:
        return {
            "tasks": [r[:5] + r[6:] for r in db.execute("SELECT * FROM tasks ORDER BY id")],
            "docs": [r[:10] + (marshal.loads(r[10]),)
                     for r in db.execute("SELECT * FROM docs ORDER BY id")],
            "deps": db.execute("SELECT * FROM deps ORDER BY id, dep").fetchall(),
        }
    finally:
        db.close()


def _rebuilt_rows(lg: CliRun) -> dict[str, list[Any]]:
    index = Index.open(lg.board())
    try:
        index.rebuild()
    finally:
        index.close()
    return _index_rows(lg.root)


def test_the_index_an_import_builds_is_the_one_a_rebuild_builds(lg: CliRun,
                                                                 tmp_path: Path) -> None:
    # Index.rebuild_written takes each new file's stat and revision from the writer; a
    # task that was already there (and one written through the ordinary path) is read.
    objs = real_lines(12)
    board = lg.board()
    mine = create_task(board, {"title": "mine", "labels": ["a", "b"]}, "body\n", "me").id
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    assert lg("import", "beads", str(src), "--by", "me")[0] == 0
    imported = _index_rows(lg.root)
    assert len(imported["tasks"]) == len(objs) + 1
    assert imported == _rebuilt_rows(lg)
    changed = dict(objs[0], title="retitled at the source")
    write_jsonl(src, [changed, *objs[1:]])
    code, out, err = lg("import", "beads", str(src), "--by", "me")
    assert code == 0 and "updated 1" in out, err
    assert _index_rows(lg.root) == _rebuilt_rows(lg)
    assert mine in {r[0] for r in _index_rows(lg.root)["tasks"]}


def test_rebuild_written_trusts_the_given_stat_and_revision(lg: CliRun) -> None:
    board = lg.board()
    tid = create_task(board, {"title": "one"}, "", "me").id
    record = board.read(tid)
    data = render_record(record).encode("utf-8")
    st = file_stat(os.stat(board.task_file(tid)))  # what the importer passes (ctime included)
    stats = Index.rebuild_written(board, {tid: (record, data, st, record.revision)})
    assert stats.files == 1 and stats.errors == 0
    assert _index_rows(lg.root) == _rebuilt_rows(lg)
    # A wrong stat is only a stat: the next refresh re-checks the file and keeps the row.
    Index.rebuild_written(board, {tid: (record, data, (1, 2, 3), record.revision)})
    with Index.open(board) as index:
        index.refresh()
        assert index.get(tid)["title"] == "one"  # type: ignore[index]
        assert index.stale_tasks() == []


def test_the_history_writer_process_writes_the_same_bytes(lg: CliRun, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    objs = real_lines(8)
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    spawned: list[historywriter.HistoryWriter] = []
    real = historywriter.HistoryWriter.spawn.__func__  # type: ignore[attr-defined]

    def spawn(cls: type[historywriter.HistoryWriter]) -> historywriter.HistoryWriter | None:
        writer = real(cls)
        if writer is not None:
            spawned.append(writer)
        return writer

    monkeypatch.setattr(historywriter, "FORK_MIN", 1)
    monkeypatch.setattr(historywriter, "HELPER_MIN_BYTES", 0)
    monkeypatch.setattr(historywriter, "_can_fork", lambda: hasattr(os, "fork"))
    monkeypatch.setattr(historywriter.HistoryWriter, "spawn", classmethod(spawn))
    code, out, err = lg("import", "beads", str(src), "--by", "me")
    assert code == 0, err
    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    assert len(spawned) == 1 and spawned[0].closed
    with pytest.raises(ChildProcessError):
        os.waitpid(spawned[0].pid, os.WNOHANG)  # reaped
    board = lg.board()
    assert verify_board(board) == []
    for obj in objs:
        item = incoming.Incoming(beads_to_record(obj), "x", obj["id"])
        assert board.history_path(obj["id"]).read_bytes() == genesis.history_bytes(item, "me",
                                                                                  "beads")
        assert board.task_path(obj["id"]).read_bytes() == render_record(item.record).encode()
    assert _staging_left(lg.root) == []
    assert _index_rows(lg.root) == _rebuilt_rows(lg)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_the_history_writer_reports_its_errors(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(historywriter, "_can_fork", lambda: True)
    writer = historywriter.HistoryWriter.spawn()
    assert writer is not None
    try:
        writer.send(str(tmp_path), str(tmp_path / "missing"), [("a.jsonl", b"x\n")])
        with pytest.raises(FileNotFoundError):
            writer.join()
    finally:
        writer.close()
    idle = historywriter.HistoryWriter.spawn()  # closed without a request: exits quietly
    assert idle is not None
    idle.close()
    assert os.listdir(tmp_path) == []


def test_a_slow_staged_directory_is_left_for_another(lg: CliRun, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Every chunk "slow": the files made so far move to a new directory, at most MOVES
    # times per directory; the import is the same.
    objs = real_lines(9)
    src = write_jsonl(tmp_path / "issues.jsonl", objs)
    monkeypatch.setattr(staging_files, "CHUNK", 2)
    monkeypatch.setattr(staging_files, "SLOW_CREATE", -1.0)
    made: list[str] = []
    real = staging_files._staged_dir

    def staged_dir(staging: str, base: str) -> str:
        made.append(base)
        return real(staging, base)

    monkeypatch.setattr(staging_files, "_staged_dir", staged_dir)
    assert lg("import", "beads", str(src), "--by", "me")[0] == 0
    assert Counter(made) == {"history": 1 + staging_files.MOVES, "tasks": 1 + staging_files.MOVES}
    board = lg.board()
    assert sorted(board.list_ids()) == sorted(o["id"] for o in objs)
    assert verify_board(board) == []
    assert _staging_left(lg.root) == []
    assert _index_rows(lg.root) == _rebuilt_rows(lg)
    with pytest.MonkeyPatch.context(), Index.open(board) as index:
        assert index.stale_tasks() == []  # the stats taken before the moves still hold


def test_lines_decode_as_json_loads_decodes_them(lg: CliRun, tmp_path: Path) -> None:
    objs = real_lines(3)
    src = write_jsonl(tmp_path / "issues.jsonl", [],
                      ["  " + json.dumps(objs[0]) + " \t", json.dumps(objs[1]) + " x",
                       json.dumps(objs[2]) + "\x0b", "[1, 2]"])
    code, out, err = lg("import", "beads", str(src))
    assert code == 1
    assert "imported 1" in out and "skipped 3" in out
    assert "issues.jsonl:2: not JSON: Extra data: line 1 column" in err
    assert "issues.jsonl:3: not JSON: Extra data: line 1 column" in err
    assert "issues.jsonl:4: expected a JSON object" in err
