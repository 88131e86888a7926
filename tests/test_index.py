"""ledgit.storage.index: a derived SQLite index over real task files."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from gitutil import git

import ledgit.storage.indexrefresh
from ledgit.core.change import Change
from ledgit.core.errors import BUSY, USAGE, LedgitError
from ledgit.core.record import Record
from ledgit.core.render import render_record
from ledgit.core.schema import FIELD_ORDER
from ledgit.operations.stateitems import item_add
from ledgit.storage.board import Board, find_board
from ledgit.storage.boardinit import init_board
from ledgit.storage.index import Index
from ledgit.storage.indexsearch import MAX_SEARCH_CHARS
from ledgit.storage.indextables import ROW_FIELDS, SCHEMA_VERSION
from ledgit.storage.writepath import create_task, mutate_task

pytest_plugins = ["gitutil"]


def add(board: Board, title: str, **fields: Any) -> Record:
    body = fields.pop("body", "")
    at = fields.pop("at", None)
    return create_task(board, {"title": title, **fields}, body, "ada", at=at)


def setter(**changes: Any) -> Any:
    def change(record: Record) -> Change:
        return Change(Record({**record.fields, **changes}, record.body), "update")
    return change


def ids(rows: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in rows]


def fresh(board: Board) -> Index:
    """A new Index instance, as a new command would open it."""
    return Index.open(board)


def test_row_fields_cover_the_schema() -> None:
    assert [k for k, _ in ROW_FIELDS] == list(FIELD_ORDER)


def test_rows_hold_the_record(board: Board) -> None:
    record = add(board, "Fix the Dialer", labels=["net"], priority=1, body="## Goal\nDial.\n")
    [row] = fresh(board).rows()
    assert row["id"] == record.id and row["title"] == "Fix the Dialer"
    assert (row["status"], row["priority"], row["labels"], row["depends_on"]) == (
        "open", 1, ["net"], [])
    assert row["claim"] is None and row["outcome"] is None and row["response"] is None
    assert row["path"] == f".ledgit/tasks/{record.id}.md"
    assert row["revision"] == record.revision
    assert Record(row["fields"], row["body"]) == record
    assert list(row["fields"]) == [k for k in FIELD_ORDER if k in record.fields]
    assert fresh(board).get(record.id) == row


def test_filters_and_sorting(board: Board) -> None:
    a = add(board, "a", owner="ann", labels=["x", "y"], at="2026-01-01T00:00:00Z")
    b = add(board, "b", worker="wes", labels=["x"], at="2026-01-02T00:00:00Z")
    c = add(board, "c", status="waiting", waiting_on="review", at="2026-01-03T00:00:00Z")
    d = add(board, "d", status="archived", at="2026-01-04T00:00:00Z")
    e = add(board, "e", status="dropped", outcome={"kind": "drop", "reason": "dup"},
            at="2026-01-05T00:00:00Z")
    idx = fresh(board)
    assert ids(idx.rows()) == [e.id, c.id, b.id, a.id]
    assert ids(idx.rows(sort="asc")) == [a.id, b.id, c.id, e.id]
    assert ids(idx.rows(limit=2)) == [e.id, c.id]
    assert ids(idx.rows(include_archived=True)) == [e.id, d.id, c.id, b.id, a.id]
    assert ids(idx.rows(status=["archived"])) == [d.id]
    assert ids(idx.rows(status="waiting")) == [c.id]
    assert ids(idx.rows(owner="ann")) == [a.id]
    assert ids(idx.rows(worker="wes")) == [b.id]
    assert ids(idx.rows(label="x")) == [b.id, a.id]
    assert ids(idx.rows(label=["x", "y"])) == [a.id]
    assert ids(idx.rows(outcome="drop")) == [e.id]
    with pytest.raises(LedgitError) as exc:
        idx.rows(sort="sideways")
    assert exc.value.code == USAGE


def test_ready(board: Board) -> None:
    done = add(board, "done", status="done", response="did it")
    archived = add(board, "archived", status="archived")
    todo = add(board, "todo")
    ok = add(board, "ready", depends_on=[done.id])
    after_archived = add(board, "archived is not done", depends_on=[archived.id])
    blocked = add(board, "blocked", depends_on=[todo.id])
    missing = add(board, "missing dep", depends_on=["T-nosuchtask"])
    claimed = add(board, "claimed", status="in_progress",
                  claim={"by": "x", "at": "2026-01-01T00:00:00Z"})
    dropped = add(board, "no change", outcome={"kind": "no_change", "reason": "none"})
    ready = set(ids(fresh(board).rows(ready=True)))
    assert ready == {todo.id, ok.id}
    assert not ready & {blocked.id, missing.id, claimed.id, dropped.id, after_archived.id}
    mutate_task(board, todo.id, setter(status="done", response="ok"), "bob")
    assert blocked.id in ids(fresh(board).rows(ready=True))


def test_search_is_exact_case_insensitive_substring(board: Board) -> None:
    dialer = add(board, "Fix the Dialer", body="## Goal\nReconnect the network.\n")
    resp = add(board, "other", response="Measured 100% of calls; a_b stays in C:\\tmp")
    item = add(board, "items", items=[{"id": "i1", "kind": "fact", "text": "Straße closed",
                                       "trust": "locked", "by": "ada",
                                       "at": "2026-01-01T00:00:00Z"}])
    nxt = add(board, "next", next_action="ping the dialer team")
    umlaut = add(board, "Prüfung", body="Die Überprüfung der STRASSE ist fertig.\n")
    idx = fresh(board)
    assert ids(idx.search("dialer")) == [dialer.id]
    assert ids(idx.search("DIALER")) == [dialer.id]
    assert idx.search("dialer")[0]["matches"] == ["title"]
    assert ids(idx.search("network")) == [dialer.id]
    assert idx.search("networking") == []
    assert ids(idx.search("100%")) == [resp.id]
    assert ids(idx.search("a_b")) == [resp.id]
    assert idx.search("a%b") == [] and idx.search("1_0") == []
    assert ids(idx.search("c:\\tmp")) == [resp.id] and idx.search("c:\\%") == []
    assert ids(idx.search("STRASSE", fields=["items"])) == [item.id]
    assert ids(idx.search("straße")) == [umlaut.id, item.id]
    assert ids(idx.search("ÜBERPRÜFUNG")) == [umlaut.id]
    assert idx.search("überprüfung")[0]["matches"] == ["body"]
    assert fresh(board).get(umlaut.id)["revision"] == umlaut.revision  # type: ignore[index]
    assert ids(idx.search("straße closed")) == [item.id]
    assert ids(idx.search("reconnect", fields=["title"])) == []
    assert ids(idx.search("reconnect", fields=["body"])) == [dialer.id]
    assert ids(idx.search("dialer", fields=["next_action"])) == [nxt.id]
    assert ids(idx.search("dialer", fields=["title", "next_action"])) == [nxt.id, dialer.id]
    assert ids(idx.search("calls", fields=["response"], status=["open"], limit=1)) == [resp.id]
    assert idx.search("calls", status=["done"]) == []
    for bad in ("", ):
        with pytest.raises(LedgitError):
            idx.search(bad)
    with pytest.raises(LedgitError):
        idx.search("x", fields=["nope"])


def test_deleting_the_private_dir_rebuilds(board: Board) -> None:
    records = [add(board, f"task {i}") for i in range(5)]
    fresh(board).close()
    shutil.rmtree(board.private_dir)
    idx = fresh(board)
    assert sorted(idx.ids()) == sorted(r.id for r in records)
    assert (board.private_dir / "index.sqlite3").is_file()


def test_a_hand_edit_is_seen_at_once_even_with_the_same_stat(board: Board) -> None:
    record = add(board, "alpha")
    path = board.task_path(record.id)
    idx = fresh(board)
    assert ids(idx.search("alpha")) == [record.id]
    st = path.stat()
    # Same size, same inode, same mtime: only the racily-clean rule can notice this one.
    text = path.read_text().replace("alpha", "omega")
    with open(path, "r+") as fh:
        fh.write(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_ino) == (st.st_size, st.st_ino)
    stats = idx.refresh()
    assert stats.parsed == 1
    assert ids(idx.search("omega")) == [record.id] and idx.search("alpha") == []
    assert fresh(board).get(record.id)["title"] == "omega"  # type: ignore[index]


def test_old_files_are_not_reread(board: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    # "Old" by the change time, which utime cannot set back (the index trusts ctime, as Git
    # does): a short racy window and a short wait instead.

    monkeypatch.setattr(ledgit.storage.indexrefresh, "RACY_WINDOW_NS", 50_000_000)
    [add(board, f"task {i}") for i in range(3)]
    time.sleep(0.1)
    idx = fresh(board)
    idx.refresh()
    stats = idx.refresh()
    assert (stats.files, stats.rechecked, stats.parsed) == (3, 0, 0)


def test_a_write_updates_the_row_without_a_reparse(board: Board) -> None:
    record = add(board, "t")
    fresh(board).refresh()
    mutate_task(board, record.id, setter(title="renamed"), "bob")
    idx = fresh(board)
    stats = idx.refresh()
    assert stats.parsed == 0  # the row written by update_one matched the file's bytes
    assert idx.get(record.id)["title"] == "renamed"  # type: ignore[index]


def test_removed_and_added_files(board: Board) -> None:
    a = add(board, "a")
    b = add(board, "b")
    idx = fresh(board)
    assert sorted(idx.ids()) == sorted([a.id, b.id])
    board.task_path(a.id).unlink()
    c = add(board, "c")
    assert sorted(fresh(board).ids()) == sorted([b.id, c.id])
    assert fresh(board).get(a.id) is None


def test_get_checks_its_one_file(board: Board) -> None:
    record = add(board, "t")
    idx = fresh(board)
    idx.refresh()
    text = board.task_path(record.id).read_text().replace("title: t", "title: changed")
    board.task_path(record.id).write_text(text)
    assert idx.get(record.id)["title"] == "changed"  # type: ignore[index]
    board.task_path(record.id).unlink()
    assert idx.get(record.id) is None
    assert idx.get("../../etc/passwd") is None


def test_a_corrupt_index_is_rebuilt(board: Board) -> None:
    record = add(board, "t")
    fresh(board).close()
    db = board.private_dir / "index.sqlite3"
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    assert fresh(board).ids() == [record.id]
    assert fresh(board).status()["tasks"] == 1


def test_an_old_schema_is_rebuilt(board: Board) -> None:
    record = add(board, "t")
    fresh(board).close()
    db = sqlite3.connect(board.private_dir / "index.sqlite3")
    db.execute("DROP TABLE docs")
    db.execute("PRAGMA user_version = 0")
    db.commit()
    db.close()
    idx = fresh(board)
    assert idx.ids() == [record.id]
    assert idx.status()["schema"] == SCHEMA_VERSION


def test_a_damaged_table_is_rebuilt_on_query(board: Board) -> None:
    record = add(board, "t")
    idx = fresh(board)
    idx.db.execute("DROP TABLE docs")  # a query now fails with a DatabaseError
    assert ids(idx.rows()) == [record.id]


def test_malformed_files_are_listed_separately(board: Board) -> None:
    good = add(board, "good")
    board.tasks_dir.joinpath("T-broken.md").write_text("---\nid: T-broken\ntitle: [\n---\n")
    board.tasks_dir.joinpath("T-wrongid.md").write_text(render_record(good))
    idx = fresh(board)
    assert idx.ids() == [good.id]
    assert ids(idx.rows()) == [good.id]
    errors = dict(idx.errors())
    assert set(errors) == {".ledgit/tasks/T-broken.md", ".ledgit/tasks/T-wrongid.md"}
    assert errors[".ledgit/tasks/T-broken.md"].startswith(".ledgit/tasks/T-broken.md:")
    assert "does not match the file name" in errors[".ledgit/tasks/T-wrongid.md"]
    broken = idx.get("T-broken")
    assert broken is not None and broken["error"] and broken["title"] is None
    assert idx.status()["errors"] == 2


def test_a_busy_index_is_waited_for_not_deleted(board: Board) -> None:
    record = add(board, "t")
    fresh(board).close()
    holder = sqlite3.connect(board.private_dir / "index.sqlite3", isolation_level=None,
                             check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    board.task_path(record.id).write_text(
        board.task_path(record.id).read_text().replace("title: t", "title: u"))
    with pytest.raises(LedgitError) as exc:
        Index.open(board, busy_timeout=0.2).rows()
    assert exc.value.code == BUSY
    timer = threading.Timer(0.3, holder.execute, args=("ROLLBACK",))
    timer.start()
    assert fresh(board).rows()[0]["title"] == "u"  # waited for the writer
    timer.join()
    holder.close()


def test_an_index_failure_never_fails_a_write(board: Board) -> None:
    record = add(board, "t")
    fresh(board).close()
    db = board.private_dir / "index.sqlite3"
    db.write_bytes(b"garbage" * 1000)
    after = mutate_task(board, record.id, setter(title="still written"), "bob")
    assert board.read(record.id) == after
    assert fresh(board).get(record.id)["title"] == "still written"  # type: ignore[index]


def test_status(board: Board) -> None:
    add(board, "t")
    idx = fresh(board)
    idx.rows()
    status = idx.status()
    assert status["path"] == str(board.private_dir / "index.sqlite3")
    assert (status["tasks"], status["errors"], status["rows"]) == (1, 0, 1)
    assert status["last_scan"].endswith("Z") and status["size"] > 0
    assert idx.rebuild().rebuilt


def test_linked_worktrees_have_their_own_index(git_repo: Path, clean_env: None) -> None:
    main = init_board(git_repo)
    record = add(main, "shared")
    git("add", ".ledgit", cwd=git_repo)
    git("commit", "-qm", "board", cwd=git_repo)
    wt = git_repo.parent / "wt"
    git("worktree", "add", "-q", str(wt), cwd=git_repo)
    other = find_board(wt)
    assert fresh(main).ids() == [record.id] and fresh(other).ids() == [record.id]
    assert (main.private_dir / "index.sqlite3").is_file()
    assert (other.private_dir / "index.sqlite3").is_file()
    assert other.private_dir != main.private_dir
    only_here = add(other, "only in the worktree")
    assert sorted(fresh(other).ids()) == sorted([record.id, only_here.id])
    assert fresh(main).ids() == [record.id]
    git("worktree", "remove", "--force", str(wt), cwd=git_repo)
    assert not other.private_dir.exists()  # removed with the worktree (DESIGN §2)


def test_reads_do_not_import_yaml(board: Board) -> None:
    for i in range(3):
        add(board, f"task {i}", body="searchable\n")
    old = time.time_ns() - 60 * 10**9
    for tid in board.list_ids():
        os.utime(board.task_path(tid), ns=(old, old))
    fresh(board).refresh()
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from ledgit.storage.board import find_board\n"
        "from ledgit.storage.index import Index\n"
        f"b = find_board(Path({str(board.root)!r}))\n"
        "idx = Index.open(b)\n"
        "assert len(idx.rows(limit=20)) == 3 and len(idx.search('searchable')) == 3\n"
        "assert idx.get(b.list_ids()[0]) is not None and b.config.claim_ttl == 1800\n"
        "print(sorted(m for m in ('yaml', 'jsonpatch', 'ledgit.core.history')"
        " if m in sys.modules))\n"
    )
    before = fresh(board).status()["last_scan"]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
    # ... and another process found the board unchanged by the byte-compare fast path,
    # which writes nothing (any other path would have stored a new scan).
    assert fresh(board).status()["last_scan"] == before
    # Right after a write the file is racy (re-checked by content): still no YAML.
    mutate_task(board, board.list_ids()[0], setter(title="changed just now"), "bob")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_an_index_from_an_earlier_boot_is_rebuilt(board: Board) -> None:
    record = add(board, "t")
    fresh(board).close()
    db = sqlite3.connect(board.private_dir / "index.sqlite3")
    db.execute("UPDATE meta SET value = 'an-earlier-boot' WHERE key = 'boot'")
    db.execute("DELETE FROM tasks")  # what a power loss could leave behind
    db.commit()
    db.close()
    assert fresh(board).ids() == [record.id]  # the blob alone would have said "unchanged"


def test_an_unreadable_entry_is_an_error_not_a_crash(board: Board) -> None:
    good = add(board, "good")
    (board.tasks_dir / "T-dir.md").mkdir()  # as unreadable as a file gets when run as root
    fresh(board).close()
    shutil.rmtree(board.private_dir)
    for idx in (fresh(board), fresh(board)):  # the cold build, then a refresh
        assert idx.ids() == [good.id]
        [(path, message)] = idx.errors()
        assert path == ".ledgit/tasks/T-dir.md" and "cannot read" in message
        assert idx.get("T-dir")["error"] == message  # type: ignore[index]
    (board.tasks_dir / "T-dir.md").rmdir()
    assert fresh(board).errors() == []


ALPHABET = "aAbß ẞéE\u0301İi\"'%_\\-.\nx"


def _folded(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def test_search_is_the_substring_rule_on_odd_text(board: Board) -> None:
    """search gives exactly the tasks whose title/body/response/item text contains the
    needle (NFC + casefold), for odd text: quotes, %, _, backslashes, ß/ẞ, combining accents
    (LIKE's escapes and its ASCII-only folding must change nothing)."""
    rng = random.Random(7)
    texts: dict[str, dict[str, str]] = {}
    for i in range(60):
        parts = {k: "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))
                 for k in ("title", "body", "response", "item")}
        parts["title"] = parts["title"].strip().replace("\n", " ") or f"t{i}"
        fields: dict[str, Any] = {"title": parts["title"]}
        if parts["response"].strip():
            fields["response"] = parts["response"]
        rec = create_task(board, fields, parts["body"], "t")
        if parts["item"].strip():
            mutate_task(board, rec.id, lambda r, p=parts: item_add(  # type: ignore[misc]
                r, kind="fact", text=p["item"].strip(), by="t",
                now="2026-01-01T00:00:00.000000Z"), "t")
        texts[rec.id] = {k: board.read(rec.id).fields.get(k) or "" for k in ("title",
                                                                          "response")}
        texts[rec.id]["body"] = board.read(rec.id).body
        texts[rec.id]["items"] = "\n".join(i["text"] for i in board.read(rec.id).fields.get(
            "items", []))
    needles = ["ß", "ss", "SS", "é", "e\u0301", "İ", '"', "%", "_", "\\", "aab", "SSE",
               '"a', "%_\\", "e\u0301e", "ab ", "xx", "a.-"]
    for _ in range(80):
        tid = rng.choice(list(texts))
        source = rng.choice(list(texts[tid].values()))
        if len(source) >= 3:
            start = rng.randrange(len(source) - 2)
            needles.append(source[start:start + rng.randint(3, 6)])
    with Index.open(board) as index:
        for needle in needles:
            if not needle.strip():
                continue
            want = {tid for tid, t in texts.items()
                    if any(_folded(needle) in _folded(v) for v in t.values())}
            got = {r["id"] for r in index.search(needle)}
            assert got == want, (needle, got ^ want)


def test_search_text_too_long_and_huge_limits_are_usage_errors_or_fine(board: Board) -> None:
    """Found by a new-user trial: a 50,000-character needle made SQLite refuse the LIKE
    pattern (internal error 70), a limit beyond 64 bits overflowed."""
    rec = create_task(board, {"title": "needle in here"}, "", "t")
    with Index.open(board) as index:
        with pytest.raises(LedgitError) as err:
            index.search("ß" * (MAX_SEARCH_CHARS // 2 + 1))  # casefolds to "ss": too long
        assert err.value.code == USAGE and "too long" in str(err.value)
        assert [r["id"] for r in index.search("x" * MAX_SEARCH_CHARS)] == []
        assert [r["id"] for r in index.rows(limit=10**30)] == [rec.id]
        assert [r["id"] for r in index.search("needle", limit=2**64)] == [rec.id]


def test_a_rewrite_that_restores_the_mtime_is_seen_without_a_watcher(board: Board) -> None:
    """Found by a new-user trial: same size, same inode, mtime put back (touch -r): the
    ctime still moves (Git's core.trustctime), so the index re-checks the file."""
    rec = create_task(board, {"title": "CCCC title"}, "", "t")
    path = board.task_file(rec.id)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10**10))  # not racy
    time.sleep(0.01)
    with Index.open(board) as index:
        assert index.rows()[0]["title"] == "CCCC title"
    before = os.stat(path)
    data = Path(path).read_bytes().replace(b"CCCC", b"DDDD")
    with open(path, "r+b") as fh:
        fh.write(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == \
        (before.st_mtime_ns, before.st_size, before.st_ino)
    with Index.open(board) as index:
        assert index.rows()[0]["title"] == "DDDD title"
        assert [r["id"] for r in index.search("dddd")] == [rec.id]
        assert index.get(rec.id)["title"] == "DDDD title"  # type: ignore[index]


def test_the_stat_scan_is_file_stat_of_every_task_name(tmp_path: Path) -> None:
    """stat_scan is is_task_name and file_stat over the directory: it gives exactly
    {stem: file_stat(os.stat(file))} for the names is_task_name accepts -- dot-files, a bare
    '.md', other suffixes and undecodable names left out, a later mtime or a later ctime
    taken, a directory named like a task listed as the scan documents."""
    from ledgit.storage.taskfiles import file_stat, is_task_name, stat_scan

    names = ["T-a.md", "T-past.md", "T-future.md", ".hidden.md", ".md", "notes.txt",
             "T-é.md", "T-b.md.tmp-1-x"]
    for name in names:
        (tmp_path / name).write_text(name, encoding="utf-8")
    (tmp_path / "T-dir.md").mkdir()
    odd = os.fsdecode(b"T-\xff.md")
    if sys.platform == "linux":
        (tmp_path / odd).write_text("odd", encoding="utf-8")
    now = time.time_ns()
    os.utime(tmp_path / "T-past.md", ns=(now, now - 10**11))  # ctime is the later
    os.utime(tmp_path / "T-future.md", ns=(now, now + 10**11))  # mtime is the later
    want = {n[:-3]: file_stat(os.stat(tmp_path / n))
            for n in os.listdir(tmp_path) if is_task_name(n)}
    assert set(want) == {"T-a", "T-past", "T-future", "T-é", "T-dir"}
    assert want["T-future"][0] > want["T-past"][0] + 10**10
    assert stat_scan(tmp_path) == want
    assert stat_scan(tmp_path / "missing") == {}
