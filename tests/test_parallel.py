"""ledgit.storage.parallel: ordered work over slices in forked workers, and Board.verify through it.

The forking cases run in a fresh interpreter: a pytest-xdist worker runs threads, and
:func:`ledgit.storage.parallel.can_fork` refuses to fork a threaded process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from test_board import write_done_without_account

from ledgit.core.change import Change
from ledgit.core.history import event_id, event_line, parse_events
from ledgit.core.record import Record
from ledgit.storage import parallel
from ledgit.storage.board import Board
from ledgit.storage.boardcheck import verify_board
from ledgit.storage.boardinit import init_board
from ledgit.storage.index import Index
from ledgit.storage.writepath import create_task, mutate_task

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is unavailable")


def _python(code: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_slices_are_contiguous_nearly_equal_and_in_order() -> None:
    items = list(range(10))
    assert parallel.slices(items, 3) == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert parallel.slices(items, 1) == [items]
    assert parallel.slices([1, 2], 5) == [[1], [2]]
    assert parallel.slices([], 4) == [[]]
    for n in range(1, 30):
        for parts in range(1, 8):
            cut = parallel.slices(list(range(n)), parts)
            assert [x for part in cut for x in part] == list(range(n))
            assert max(map(len, cut)) - min(map(len, cut)) <= 1


def test_workers_for() -> None:
    assert parallel.workers_for(10, 250) == 1  # too few items
    n = parallel.workers_for(10**6, 1)
    assert 1 <= n <= min(parallel.cpu_count(), parallel.MAX_WORKERS)
    with pytest.raises(ValueError):
        parallel.workers_for(10, 0)


def test_one_worker_runs_here() -> None:
    calls: list[list[int]] = []

    def work(part: Sequence[int]) -> list[int]:
        calls.append(list(part))
        return [x * 2 for x in part]

    assert parallel.map_slices([1, 2, 3], work, 1) == [2, 4, 6]
    assert calls == [[1, 2, 3]]


@needs_fork
def test_children_do_the_other_slices_in_order() -> None:
    out = _python("""
        import json, os
        from ledgit.storage import parallel
        assert parallel.can_fork()
        me = os.getpid()
        got = parallel.map_slices(list(range(1000)), lambda part: [
            (x, "here" if os.getpid() == me else "child") for x in part], 4)
        print(json.dumps(got))
    """)
    got = json.loads(out)
    assert [x for x, _ in got] == list(range(1000))
    assert {where for x, where in got if x < 250} == {"here"}
    assert {where for x, where in got if x >= 250} == {"child"}


@needs_fork
def test_a_failing_child_has_its_slice_done_here() -> None:
    out = _python("""
        import json, os, signal
        from ledgit.storage import parallel
        me = os.getpid()

        def work(part):
            if os.getpid() != me and part[0] == 3:
                raise RuntimeError("boom")  # an exception in a child
            if os.getpid() != me and part[0] == 6:
                os.kill(os.getpid(), signal.SIGKILL)  # a child that dies
            if os.getpid() != me and part[0] == 9:
                return [object()]  # not marshal-able
            return [[x, os.getpid() == me] for x in part]

        print(json.dumps(parallel.map_slices(list(range(12)), work, 4)))
    """)
    got = json.loads(out)
    assert [x for x, _ in got] == list(range(12))
    assert all(here for _, here in got)  # every child failed: all done by the parent


@needs_fork
def test_an_exception_here_propagates_and_ends_the_children() -> None:
    out = _python("""
        import os, time
        from ledgit.storage import parallel
        me = os.getpid()

        def work(part):
            if os.getpid() == me:
                raise KeyError("here")
            time.sleep(60)  # a child: ended by the parent, not waited for
            return list(part)

        start = time.monotonic()
        try:
            parallel.map_slices(list(range(10)), work, 3)
        except KeyError:
            print("raised after", round(time.monotonic() - start), "s")
        try:
            os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            print("no child left")
    """)
    assert out.splitlines() == ["raised after 0 s", "no child left"]


# ----------------------------------------------------------------------- Board.verify


def _damaged_board(root: Path) -> list[str]:
    """A board of 40 tasks, several damaged in the ways verify must name; index aged so
    that its rows are trusted. Returns the ids."""
    board = init_board(root)
    ids = []
    for i in range(40):
        record = create_task(board, {"title": f"t{i}", "priority": i % 5}, f"body {i}\n", "ada")
        mutate_task(board, record.id, _setter(priority=(i + 1) % 5, labels=["x"]), "ada")
        ids.append(record.id)
    # One flipped byte (hash), a hand edit (record-head), a wrong after, a broken parent
    # link, a lifecycle problem, an orphan history.
    flip = board.history_path(ids[3])
    data = bytearray(flip.read_bytes())
    data[data.index(b'"actor":"ada"') + 10] ^= 1
    flip.write_bytes(bytes(data))
    edited = board.task_path(ids[11])
    edited.write_text(edited.read_text().replace("title: t11", "title: edited"))
    for tid, fix in ((ids[20], _wrong_after), (ids[29], _broken_parent)):
        path = board.history_path(tid)
        events = parse_events(path.read_text(), tid)
        path.write_text("".join(event_line(e) for e in fix(events)))
    write_done_without_account(board)
    board.history_path("T-orphanorph").write_text(board.history_path(ids[0]).read_text())
    old = time.time() - 3600
    for name in os.listdir(board.tasks_dir):
        os.utime(board.tasks_dir / name, (old, old))
    with Index.open(board) as index:
        index.refresh()
    return ids


def _setter(**changes: Any) -> Callable[[Record], Change]:
    def change(record: Record) -> Change:
        return Change(Record({**record.fields, **changes}, record.body), "update", "set")

    return change


def _strip(events: list[dict[str, object]]) -> list[dict[str, object]]:
    return [{k: v for k, v in e.items() if k != "_line"} for e in events]


def _wrong_after(events: list[dict[str, object]]) -> list[dict[str, object]]:
    events = _strip(events)
    last = dict(events[-1], after="0" * 64)
    last.pop("id")
    last["id"] = event_id(last)
    return [*events[:-1], last]


def _broken_parent(events: list[dict[str, object]]) -> list[dict[str, object]]:
    events = _strip(events)
    last = dict(events[-1], parents=["f" * 64])
    last.pop("id")
    last["id"] = event_id(last)
    return [*events[:-1], last]


@needs_fork
def test_board_verify_in_workers_reports_what_the_serial_check_does(tmp_path: Path) -> None:
    root = tmp_path / "board"
    ids = _damaged_board(root)
    code = """
        import json, os, sys
        from ledgit.storage import board as board_mod, boardcheck, parallel
        boardcheck.TRUST_INDEX_FROM = 1
        b = board_mod.Board(sys.argv[1])
        forks = []
        real_fork = os.fork
        def counting_fork():
            forks.append(1)
            return real_fork()
        os.fork = counting_fork
        def run(**kw):
            return [[p.task, p.line, p.rule, p.message] for p in boardcheck.verify_board(b, **kw)]
        boardcheck.PARALLEL_SLICE = 10**9
        serial = run(), run(trust_index=False), run(ids=sys.argv[2:])
        assert not forks
        boardcheck.PARALLEL_SLICE = 1
        parallel.cpu_count = lambda: 3
        par = run(), run(trust_index=False), run(ids=sys.argv[2:])
        assert len(forks) == 3 * 2, forks
        print(json.dumps([serial, par]))
    """
    subset = [ids[3], ids[0], ids[29], "T-nothere", ids[11], ids[20]]
    serial, par = json.loads(_python(code, str(root), *subset))
    assert par == serial
    everything, untrusted, some = serial
    assert everything == untrusted
    found = {(t, line, rule) for t, line, rule, _ in everything}
    assert {(ids[3], 1, "hash"), (ids[11], 0, "record-head"), (ids[20], 2, "after"),
            (ids[29], 2, "parent-order"), ("T-donedonedo", 0, "lifecycle"),
            ("T-orphanorph", 0, "orphan")} <= found
    tasks = [t for t, *_ in everything]
    assert tasks[-1] == "T-orphanorph" and tasks[:-1] == sorted(tasks[:-1])  # orphans last
    assert [t for t, *_ in some][:1] == [ids[3]]  # the order asked for
    assert [[p.task, p.line, p.rule, p.message] for p in verify_board(Board(root))] == everything
