"""The index with a watcher daemon (ledgit.watch, docs/watch.md): real daemons, real files.

With a daemon answering, a read re-checks only the names the daemon reports (and the racy
and dirty ones) instead of stat-ing every task file: a change that keeps the file's stat
exactly as it was -- invisible to a stat scan -- is still seen, because the daemon saw the
write. Boards of >= watch.SPAWN_MIN_FILES task files start a daemon on their first full scan
unless ``LEDGIT_WATCH=0``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_watch
from test_watch import Daemons, alive, pids_with, wait_for

from ledgit import watch
from ledgit.board import Board, init_board
from ledgit.index import Index
from ledgit.record import make_record, render_record

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux")
base = test_watch.base  # the fixtures: a short temp dir, daemons killed afterwards
daemons = test_watch.daemons


@pytest.fixture
def watched(base: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Board]:
    """A board outside Git under a short temp dir (its socket path fits), watching on."""
    for name in ("LEDGIT_ROOT", "LEDGIT_ACTOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LEDGIT_WATCH", "1")
    yield init_board(Path(base) / "b")


def sock_of(board: Board) -> str:
    sock = watch.socket_path(board.private_str)
    assert sock is not None
    return sock


def titles(board: Board) -> dict[str, str]:
    with Index.open(board) as index:
        return {r["id"]: r["title"] for r in index.rows()}


def stored_token(board: Board) -> object:
    with Index.open(board) as index:
        return index._meta("watch")


def test_a_read_uses_the_daemons_answer_not_the_stat_scan(watched: Board,
                                                         daemons: Daemons) -> None:
    a = watched.create({"title": "alpha"}, "", "t")
    b = watched.create({"title": "beta"}, "", "t")
    assert titles(watched) == {a.id: "alpha", b.id: "beta"}
    os.makedirs(watched.private_str, exist_ok=True)
    daemons.start(watched.tasks_str, sock_of(watched))
    daemons.ready(sock_of(watched))
    assert titles(watched) == {a.id: "alpha", b.id: "beta"}  # full scan, token stored
    assert isinstance(stored_token(watched), str)

    # An in-place edit that keeps size and mtime: a stat scan cannot see it (the file is
    # not racy: its mtime is made old), the daemon saw the write.
    path = watched.task_file(a.id)
    old = os.stat(path)
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns - 10**10))
    assert titles(watched)[a.id] == "alpha"
    before = os.stat(path)
    data = Path(path).read_bytes()
    with open(path, "r+b") as fh:
        fh.write(data.replace(b"title: alpha", b"title: gamma"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path)[6:9] == before[6:9] and os.stat(path).st_size == before.st_size
    assert titles(watched)[a.id] == "gamma"

    # New, removed and renamed-over files are reported too.
    c = watched.create({"title": "delta"}, "", "t")
    os.unlink(watched.task_file(b.id))
    assert titles(watched) == {a.id: "gamma", c.id: "delta"}
    tmp = watched.task_file(c.id) + ".new"
    with open(tmp, "wb") as fh:
        fh.write(render_record(make_record({**watched.read(c.id).fields, "title": "eps"})
                               ).encode())
    os.rename(tmp, watched.task_file(c.id))
    assert titles(watched) == {a.id: "gamma", c.id: "eps"}


def test_without_a_daemon_a_read_is_the_full_scan(watched: Board) -> None:
    a = watched.create({"title": "alpha"}, "", "t")
    assert titles(watched) == {a.id: "alpha"}
    assert stored_token(watched) is None  # no daemon answered; small boards start none
    assert not os.path.exists(sock_of(watched))


def fill(board: Board, n: int) -> None:
    """``n`` valid task files written directly (fast)."""
    for i in range(n):
        tid = f"T-{i:010d}"
        rec = make_record({"id": tid, "title": f"task {i}", "status": "open",
                           "created": "2026-01-01T00:00:00.000000Z",
                           "last_modified": "2026-01-01T00:00:00.000000Z"}, "")
        with open(board.task_file(tid), "w", encoding="utf-8") as fh:
            fh.write(render_record(rec))


def test_a_big_board_starts_a_daemon_and_later_reads_use_it(watched: Board, base: str,
                                                            daemons: Daemons) -> None:
    fill(watched, watch.SPAWN_MIN_FILES)
    assert len(titles(watched)) == watch.SPAWN_MIN_FILES  # built: no refresh, no daemon yet
    assert len(titles(watched)) == watch.SPAWN_MIN_FILES  # a full scan: starts one
    reply = daemons.ready(sock_of(watched))
    assert alive(int(reply["pid"]))
    titles(watched)  # stores a token
    token = stored_token(watched)
    assert isinstance(token, str)
    path = watched.task_file("T-0000000007")
    text = Path(path).read_text(encoding="utf-8")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace("task 7", "seventh"))
    assert titles(watched)["T-0000000007"] == "seventh"
    assert stored_token(watched) != token


def test_watch_off_starts_no_daemon(watched: Board, base: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEDGIT_WATCH", "0")
    fill(watched, watch.SPAWN_MIN_FILES)
    titles(watched)
    titles(watched)
    assert not os.path.exists(sock_of(watched))
    wait_for(lambda: not pids_with(base), "no daemon", deadline=2.0)


def rewrite_keeping_stat(path: str, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) in place, then put the mtime back: a stat scan
    cannot see the write."""
    assert len(old) == len(new)
    before = os.stat(path)
    data = Path(path).read_bytes()
    with open(path, "r+b") as fh:
        fh.write(data.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def test_after_the_daemon_is_gone_every_file_is_checked_again(watched: Board,
                                                             daemons: Daemons) -> None:
    """Rows changed while watched make the stored stat scan obsolete: when the daemon is
    gone, the next refresh re-checks every file by content once, so a write that kept the
    stat is still found."""
    a = watched.create({"title": "alpha"}, "", "t")
    b = watched.create({"title": "bravo"}, "", "t")
    for tid in (a.id, b.id):  # old mtimes: no file is racy
        st = os.stat(watched.task_file(tid))
        os.utime(watched.task_file(tid), ns=(st.st_atime_ns, st.st_mtime_ns - 10**10))
    titles(watched)
    os.makedirs(watched.private_str, exist_ok=True)
    proc = daemons.start(watched.tasks_str, sock_of(watched))
    daemons.ready(sock_of(watched))
    titles(watched)  # token stored
    rewrite_keeping_stat(watched.task_file(a.id), b"title: alpha", b"title: gamma")
    assert titles(watched)[a.id] == "gamma"  # watched: seen
    proc.terminate()
    proc.wait(10)
    wait_for(lambda: not os.path.exists(sock_of(watched)), "the socket to go")
    rewrite_keeping_stat(watched.task_file(b.id), b"title: bravo", b"title: delta")
    assert titles(watched) == {a.id: "gamma", b.id: "delta"}  # unwatched: every file re-read
