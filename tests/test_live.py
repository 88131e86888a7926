"""ledgit.storage.live: a board held open by a long-lived process, on real files and threads."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgit.operations.changes import finish
from ledgit.storage import live
from ledgit.storage.board import Board
from ledgit.storage.boardinit import init_board
from ledgit.storage.writepath import create_task, mutate_task

INOTIFY = sys.platform.startswith("linux") and os.path.isdir("/proc/sys/fs/inotify")


@pytest.fixture(params=["watched", "polled"])
def held(request: pytest.FixtureRequest, tmp_path: Path,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[live.LiveBoard]:
    """A LiveBoard on a fresh board, watching (inotify) or not (LEDGIT_WATCH=0)."""
    for name in ("LEDGIT_ROOT", "LEDGIT_ACTOR"):
        monkeypatch.delenv(name, raising=False)
    if request.param == "watched":
        if not INOTIFY:
            pytest.skip("inotify: Linux")
        monkeypatch.setenv("LEDGIT_WATCH", "1")
    else:
        monkeypatch.setenv("LEDGIT_WATCH", "0")
        monkeypatch.setattr(live, "POLL_INTERVAL", 0.05)
    board = init_board(tmp_path / "b")
    held = live.LiveBoard(board)
    assert held.watching == (request.param == "watched")
    yield held
    held.close()


def titles(held: live.LiveBoard) -> dict[str, str]:
    return {r["id"]: r["title"] for r in held.index().rows()}


def other_board(held: live.LiveBoard) -> Board:
    """The same board as another process would open it."""
    return Board(held.board.root)


def test_the_index_follows_writes(held: live.LiveBoard) -> None:
    assert titles(held) == {}
    writer = other_board(held)
    a = create_task(writer, {"title": "alpha"}, "", "w")
    assert titles(held) == {a.id: "alpha"}
    b = create_task(writer, {"title": "beta"}, "", "w")
    assert titles(held) == {a.id: "alpha", b.id: "beta"}
    os.unlink(writer.task_file(b.id))
    assert titles(held) == {a.id: "alpha"}
    assert held.index() is held.index()  # one open index per thread


@pytest.mark.skipif(not INOTIFY, reason="inotify: Linux")
def test_a_write_that_keeps_the_stat_is_seen_when_watched(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("LEDGIT_WATCH", "1")
    board = init_board(tmp_path / "b")
    a = create_task(board, {"title": "alpha"}, "", "w")
    path = board.task_file(a.id)
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10**10))  # not racy
    with live.LiveBoard(board) as held:
        assert titles(held) == {a.id: "alpha"}
        assert titles(held) == {a.id: "alpha"}
        before = os.stat(path)
        data = Path(path).read_bytes().replace(b"title: alpha", b"title: gamma")
        with open(path, "r+b") as fh:
            fh.write(data)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert titles(held) == {a.id: "gamma"}


def test_wait_changed_times_out_without_a_change(held: live.LiveBoard) -> None:
    started = time.monotonic()
    assert held.wait_changed(0.2) is False
    assert time.monotonic() - started >= 0.19


def test_wait_changed_wakes_every_waiter_on_a_task_write(held: live.LiveBoard) -> None:
    results: list[bool] = []
    since = held.generation
    waiters = [threading.Thread(target=lambda: results.append(held.wait_changed(20, since)))
               for _ in range(4)]
    for t in waiters:
        t.start()
    create_task(other_board(held), {"title": "alpha"}, "", "w")
    for t in waiters:
        t.join(30)
    assert results == [True] * 4


def test_a_history_change_alone_wakes_a_waiter_when_watched(held: live.LiveBoard) -> None:
    """Watched (inotify), an in-place append to a history wakes a waiter. Polled, only the
    two directories are looked at (no stat of any entry): the append is seen with the next
    change of a directory -- here a task file replaced by a ledgit write."""
    board = other_board(held)
    a = create_task(board, {"title": "alpha"}, "", "w")
    titles(held)
    time.sleep(0.6)  # the create's events are counted
    since = held.generation
    with open(board.history_file(a.id), "ab") as fh:
        fh.write(b"")
        os.utime(fh.fileno())
    if held.watching:
        assert held.wait_changed(20, since) is True
        return
    assert held.wait_changed(1.0, since) is False
    create_task(board, {"title": "beta"}, "", "w")
    assert held.wait_changed(20, since) is True


def test_an_in_place_edit_is_seen_by_index_at_once_and_by_waiters_when_watched(
        held: live.LiveBoard) -> None:
    """A task file rewritten in place (an editor that does not rename) keeps the tasks
    directory's stat: polled, a waiter sees it only with the next directory change, while
    index() sees it at once (its stat check looks at every task file)."""
    board = other_board(held)
    a = create_task(board, {"title": "alpha"}, "", "w")
    path = board.task_file(a.id)
    assert titles(held) == {a.id: "alpha"}
    time.sleep(0.6)  # the create's events are counted
    since = held.generation
    data = Path(path).read_bytes().replace(b"title: alpha", b"title: gamma")
    with open(path, "r+b") as fh:
        fh.write(data)
    if held.watching:
        assert held.wait_changed(20, since) is True
    else:
        assert held.wait_changed(1.0, since) is False
    assert titles(held) == {a.id: "gamma"}
    if not held.watching:
        create_task(board, {"title": "beta"}, "", "w")
        assert held.wait_changed(20, since) is True


def test_the_directories_state_reads_entries_only_while_racy(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a").write_text("x")
    now = time.time_ns()
    fresh = live.directory_state(str(folder), now)
    assert fresh.stat is not None
    assert fresh.entries == {("a", os.stat(folder / "a").st_ino)}
    later = live.directory_state(str(folder), now + 2 * live.RACY_WINDOW_NS)
    assert later.entries is None and later.stat == fresh.stat
    assert not live.changed_between(fresh, later)
    os.replace(_written(folder / "b", "y"), folder / "a")  # the same name, a new inode
    again = live.directory_state(str(folder), time.time_ns())
    assert live.changed_between(fresh, again)
    assert again.stat != fresh.stat or again.entries != fresh.entries
    # the same stat, other entries (a second rename within the clock's tick): a change
    assert live.changed_between(fresh, live.DirectoryState(fresh.stat, frozenset()))
    assert live.directory_state(str(tmp_path / "missing"), now) == (None, None)


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_change_between_reads_is_not_missed_with_since(held: live.LiveBoard) -> None:
    since = held.generation
    create_task(other_board(held), {"title": "alpha"}, "", "w")
    time.sleep(0.3)
    assert held.wait_changed(0.01, since) is True  # it happened before the wait began


def test_each_thread_gets_its_own_index(held: live.LiveBoard) -> None:
    a = create_task(other_board(held), {"title": "alpha"}, "", "w")
    seen: list[dict[str, str]] = []
    t = threading.Thread(target=lambda: seen.append(titles(held)))
    t.start()
    t.join(30)
    assert seen == [{a.id: "alpha"}]
    assert titles(held) == {a.id: "alpha"}


def test_close_stops_the_thread_and_ends_waits(held: live.LiveBoard) -> None:
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(held.wait_changed(60)))
    waiter.start()
    time.sleep(0.1)
    held.close()
    waiter.join(10)
    assert result == [False]
    assert not [t for t in threading.enumerate() if t.name == "ledgit-live"]
    held.close()  # idempotent


@pytest.mark.skipif(not INOTIFY, reason="inotify: Linux")
def test_a_replaced_tasks_directory_is_watched_again(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGIT_WATCH", "1")
    board = init_board(tmp_path / "b")
    a = create_task(board, {"title": "alpha"}, "", "w")
    with live.LiveBoard(board) as held:
        assert titles(held) == {a.id: "alpha"}
        tasks = board.tasks_str
        os.rename(tasks, tasks + ".old")
        os.mkdir(tasks)
        deadline = time.monotonic() + 20
        while titles(held) != {} and time.monotonic() < deadline:
            time.sleep(0.05)
        assert titles(held) == {}
        os.rename(os.path.join(tasks + ".old", a.id + ".md"), board.task_file(a.id))
        assert titles(held) == {a.id: "alpha"}


@pytest.mark.skipif(not INOTIFY, reason="inotify: Linux")
def test_two_live_boards_on_one_board_stat_no_file_per_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two long-lived processes (two ``ledgit mcp``) on one board keep a watcher token each
    in the index: reads in turn never run the stat scan of every task file (each used to
    replace the other's token, so every read stat-ed every file), and both see a write."""
    from ledgit.storage import indexrefresh

    monkeypatch.setenv("LEDGIT_WATCH", "1")
    board = init_board(tmp_path / "b")
    ids = [create_task(board, {"title": f"task {i}"}, "", "w").id for i in range(20)]
    for tid in ids:  # old mtimes: no file within the racy window
        st = os.stat(board.task_file(tid))
        os.utime(board.task_file(tid), ns=(st.st_atime_ns, st.st_mtime_ns - 10**10))
    time.sleep(2.2)  # the ctimes out of the index's racy window too
    scans: list[str] = []
    real = indexrefresh.stat_scan

    def counted(path: str) -> dict[str, object]:
        scans.append(path)
        return real(path)

    monkeypatch.setattr(indexrefresh, "stat_scan", counted)
    with live.LiveBoard(Board(board.root)) as one, live.LiveBoard(Board(board.root)) as two:
        assert one.watching and two.watching
        assert len(titles(one)) == len(titles(two)) == 20  # each stores its token
        scans.clear()
        for _ in range(5):
            assert len(titles(one)) == 20
            assert len(titles(two)) == 20
        assert scans == []
        mutate_task(other_board(one),
            ids[4], lambda r: finish(r, {**r.fields, "title": "new"}, "update"), "w")
        assert titles(one)[ids[4]] == "new"
        assert titles(two)[ids[4]] == "new"
        for _ in range(3):
            titles(one)
            titles(two)
        assert scans == []
