"""The index with an in-process watcher (ledgit.storage.watch, docs/watch.md): real files.

With a watcher attached (as :mod:`ledgit.storage.live` attaches one), a refresh re-checks only the
names it reports (and the racy and dirty ones) instead of stat-ing every task file: a change
that keeps the file's stat exactly as it was -- invisible to a stat scan -- is still seen,
because the watcher saw the write. A plain process has no watcher and does the stat scan.
"""

from __future__ import annotations

import marshal
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgit.core.record import make_record
from ledgit.core.render import render_record
from ledgit.storage import indexrefresh, watch
from ledgit.storage.board import Board
from ledgit.storage.boardinit import init_board
from ledgit.storage.index import Index
from ledgit.storage.indexrefresh import RACY_WINDOW_NS, meta
from ledgit.storage.writepath import create_task

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not os.path.isdir("/proc/sys/fs/inotify"),
    reason="the watcher needs Linux inotify")


@pytest.fixture
def watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Board]:
    """A board outside Git."""
    for name in ("LEDGIT_ROOT", "LEDGIT_ACTOR"):
        monkeypatch.delenv(name, raising=False)
    yield init_board(tmp_path / "b")


class Reader:
    """One long-lived index with a watcher attached (what ledgit.storage.live holds)."""

    def __init__(self, board: Board) -> None:
        self.watcher = watch.Watcher(board.tasks_str)
        self.index = Index.open(board)
        self.index.watcher = self.watcher

    def titles(self) -> dict[str, str]:
        self.index.refresh()
        return {r["id"]: r["title"] for r in self.index.rows()}

    def close(self) -> None:
        self.index.close()
        self.watcher.close()


def titles(board: Board) -> dict[str, str]:
    with Index.open(board) as index:
        return {r["id"]: r["title"] for r in index.rows()}


def stored_token(board: Board) -> object:
    with Index.open(board) as index:
        return meta(index.db, "watch")


def stored_tokens(board: Board) -> dict[str, str]:
    """meta.watch: {watcher instance: token}, one per long-lived reader."""
    blob = stored_token(board)
    assert isinstance(blob, bytes), blob
    tokens = marshal.loads(blob)
    assert isinstance(tokens, dict)
    return tokens


def rewrite_keeping_stat(path: str, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) in place, then put the mtime back: a stat scan
    cannot see the write."""
    assert len(old) == len(new)
    before = os.stat(path)
    data = Path(path).read_bytes()
    with open(path, "r+b") as fh:
        fh.write(data.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


def age(board: Board, *ids: str) -> None:
    """Old mtimes: no file is racy (re-checked by content anyway)."""
    for tid in ids:
        st = os.stat(board.task_file(tid))
        os.utime(board.task_file(tid), ns=(st.st_atime_ns, st.st_mtime_ns - 10**10))


def test_a_refresh_uses_the_watchers_answer_not_the_stat_scan(watched: Board) -> None:
    a = create_task(watched, {"title": "alpha"}, "", "t")
    b = create_task(watched, {"title": "beta"}, "", "t")
    age(watched, a.id, b.id)
    reader = Reader(watched)
    try:
        assert reader.titles() == {a.id: "alpha", b.id: "beta"}
        reader.titles()  # the token is stored
        assert reader.watcher.instance in stored_tokens(watched)
        rewrite_keeping_stat(watched.task_file(a.id), b"title: alpha", b"title: gamma")
        assert reader.titles()[a.id] == "gamma"
        # New, removed and renamed-over files are reported too.
        c = create_task(watched, {"title": "delta"}, "", "t")
        os.unlink(watched.task_file(b.id))
        assert reader.titles() == {a.id: "gamma", c.id: "delta"}
        tmp = watched.task_file(c.id) + ".new"
        with open(tmp, "wb") as fh:
            fh.write(render_record(make_record({**watched.read(c.id).fields, "title": "eps"})
                                   ).encode())
        os.rename(tmp, watched.task_file(c.id))
        assert reader.titles() == {a.id: "gamma", c.id: "eps"}
    finally:
        reader.close()


def test_a_plain_process_has_no_watcher_and_stores_no_token(watched: Board) -> None:
    a = create_task(watched, {"title": "alpha"}, "", "t")
    assert titles(watched) == {a.id: "alpha"}
    assert stored_token(watched) is None
    with Index.open(watched) as index:
        assert index.watcher is None


def test_a_plain_reader_after_a_watched_one_is_right_and_cheap(watched: Board) -> None:
    """A watched refresh keeps the stored stat scan true (the re-checked files' new stats,
    the racy ones kept racy): a reader without a watcher then re-checks only those, not
    every file, and sees what the watched reader saw."""
    ids = [create_task(watched, {"title": f"task {i:02d}"}, "", "t").id for i in range(20)]
    age(watched, *ids)
    time.sleep(RACY_WINDOW_NS / 1e9 + 0.2)  # every file's ctime out of the racy window
    assert len(titles(watched)) == 20
    reader = Reader(watched)
    try:
        reader.titles()
        reader.titles()
        rewrite_keeping_stat(watched.task_file(ids[0]), b"task 00", b"task ZZ")
        assert reader.titles()[ids[0]] == "task ZZ"
    finally:
        reader.close()
    with Index.open(watched) as index:
        stats = index.refresh()
        assert stats.rechecked <= 1, stats  # only the racy one; not all 20 files
        assert {r["id"]: r["title"] for r in index.rows()}[ids[0]] == "task ZZ"
    path = watched.task_file(ids[1])
    Path(path).write_bytes(Path(path).read_bytes().replace(b"task 01", b"task 01-b"))
    assert titles(watched)[ids[1]] == "task 01-b"


def test_two_watched_readers_on_one_index_both_stay_right(watched: Board) -> None:
    """Each reader re-checks the names its own watcher saw since its own token, so a write
    that keeps the stat is still seen by both."""
    a = create_task(watched, {"title": "alpha"}, "", "t")
    age(watched, a.id)
    one, two = Reader(watched), Reader(watched)
    try:
        for title in (b"gamma", b"delta", b"omega"):
            before = one.titles()[a.id].encode()
            one.titles()
            assert two.titles()[a.id] == before.decode()  # two's token is stored last
            rewrite_keeping_stat(watched.task_file(a.id), b"title: " + before,
                                 b"title: " + title)
            assert one.titles()[a.id] == title.decode()
            assert two.titles()[a.id] == title.decode()
    finally:
        one.close()
        two.close()


def test_two_watched_readers_keep_their_own_tokens_and_stat_no_file(watched: Board) -> None:
    """Two long-lived readers (two ``ledgit mcp`` on one board) each keep a token in the
    index: neither replaces the other's, so a read re-checks only the names its watcher
    reported -- never a stat of every file -- and both still see each change."""
    ids = [create_task(watched, {"title": f"task {i:02d}"}, "", "t").id for i in range(30)]
    age(watched, *ids)
    time.sleep(RACY_WINDOW_NS / 1e9 + 0.2)  # no file racy: an idle refresh re-checks none
    one, two = Reader(watched), Reader(watched)
    try:
        one.titles()
        two.titles()
        assert set(stored_tokens(watched)) == {one.watcher.instance, two.watcher.instance}
        for reader in (one, two, one, two):
            stats = reader.index.refresh()
            assert (stats.files, stats.rechecked) == (0, 0), stats  # not 30: no stat scan
        # A plain read (a CLI command) that finds nothing to write leaves both tokens.
        assert len(titles(watched)) == 30
        assert set(stored_tokens(watched)) == {one.watcher.instance, two.watcher.instance}
        rewrite_keeping_stat(watched.task_file(ids[3]), b"task 03", b"task ZZ")
        for reader in (one, two):
            stats = reader.index.refresh()
            assert (stats.files, stats.rechecked) == (1, 1), stats  # the one reported name
            assert {r["id"]: r["title"] for r in reader.index.rows()}[ids[3]] == "task ZZ"
        assert set(stored_tokens(watched)) == {one.watcher.instance, two.watcher.instance}
    finally:
        one.close()
        two.close()


def test_a_token_stored_while_a_refresh_read_the_files_is_dropped(
        watched: Board, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refresh that writes rows keeps another reader's token only if it was stored before
    this refresh read any file; one stored meanwhile may vouch for newer files than the rows
    written, so it goes and that reader stat-scans once (and stays right)."""
    a = create_task(watched, {"title": "alpha"}, "", "t")
    others = [create_task(watched, {"title": f"other {i}"}, "", "t").id for i in range(2)]
    age(watched, a.id, *others)
    one, two = Reader(watched), Reader(watched)
    try:
        one.titles()
        two.titles()
        rewrite_keeping_stat(watched.task_file(a.id), b"title: alpha", b"title: gamma")
        real = indexrefresh.examine

        def examine_then_let_one_refresh(db: object, *args: object, **kwargs: object) -> object:
            found = real(db, *args, **kwargs)  # type: ignore[arg-type]
            if db is two.index.db:  # two has read the file ...
                assert one.titles()[a.id] == "gamma"  # ... then one stores a newer token
            return found

        monkeypatch.setattr(indexrefresh, "examine", examine_then_let_one_refresh)
        assert two.titles()[a.id] == "gamma"
        # two's own token is not stored either: another connection committed meanwhile.
        assert stored_token(watched) is None
        stats = one.index.refresh()
        assert stats.files == 3, stats  # the stat scan of every file
        assert {r["id"]: r["title"] for r in one.index.rows()}[a.id] == "gamma"
        assert set(stored_tokens(watched)) == {one.watcher.instance}
    finally:
        one.close()
        two.close()
