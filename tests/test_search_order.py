"""Index.search with a limit, sorted by last_modified: the windows of the newest (oldest)
tasks (Index._search_window) give exactly the answer of the full scan -- the same rows, in
the same order, with the same ``matches`` -- for any needle, limit, sort and filter, with
last_modified ties (every window bound falls inside a run of equal times), malformed files
and tasks without a last_modified (NULL in the index)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

import ledgit.storage.indexsearch as indexsearch
from ledgit.core.errors import LedgitError
from ledgit.storage.board import Board
from ledgit.storage.boardinit import init_board
from ledgit.storage.index import Index
from ledgit.storage.writepath import create_task

# 24 times for ~400 tasks: runs of equal last_modified, so window bounds fall inside runs.
STAMPS = [f"2026-01-{d:02d}T{h:02d}:00:00Z" for d in range(1, 7) for h in (0, 6, 12, 18)]
NEEDLES = ["common", "COMMON", "medium", "rare", "fresh", "stale", "zzqqxx", "e", "mon m"]
FIELDS: list[list[str] | None] = [None, ["title"], ["body"], ["response"], ["title", "body"]]
FILTERS: list[dict[str, Any]] = [
    {}, {"status": ["open"]}, {"status": "done"}, {"include_archived": True},
    {"label": "x"}, {"label": ["x", "y"]}, {"owner": "ann"}, {"ready": True},
    {"status": ["archived"]}, {"worker": "nobody"},
]
LIMITS = [1, 2, 3, 5, 8, 13, 21, 40, 100, 1000]


def _text(rng: random.Random, stamp: str) -> str:
    words = ["common"] * (rng.random() < 0.5) + ["medium"] * (rng.random() < 0.1)
    if stamp >= STAMPS[-2] and rng.random() < 0.4:
        words.append("fresh")  # only among the newest: a clustered needle
    if stamp <= STAMPS[1] and rng.random() < 0.4:
        words.append("stale")  # only among the oldest
    rng.shuffle(words)
    return " ".join(w.upper() if rng.random() < 0.2 else w for w in words)


def _fill(board: Board, n: int, seed: int) -> list[str]:
    """``n`` tasks: skewed times (more old than new), statuses, labels, owners, words of
    every frequency in title, body and response; ``rare`` in 5 of them; a few dependencies;
    two malformed files."""
    rng = random.Random(seed)
    made: list[str] = []
    rare = set(rng.sample(range(n), 5))
    for i in range(n):
        stamp = STAMPS[min(int(rng.random() ** 1.5 * len(STAMPS)), len(STAMPS) - 1)]
        fields: dict[str, Any] = {"title": f"t{i} {_text(rng, stamp)}".strip()}
        status = rng.choices(["open", "done", "archived", "waiting"], [6, 3, 1, 1])[0]
        fields["status"] = status
        if status == "done":
            fields["response"] = f"did {_text(rng, stamp)}"
        if status == "waiting":
            fields["waiting_on"] = "review"
        labels = [lab for lab in ("x", "y") if rng.random() < 0.4]
        if labels:
            fields["labels"] = labels
        owner = rng.choice([None, "ann", "bob"])
        if owner:
            fields["owner"] = owner
        if made and rng.random() < 0.1:
            fields["depends_on"] = [rng.choice(made)]
        body = _text(rng, stamp) + (" rare" if i in rare else "")
        made.append(create_task(board, fields, body + "\n", "ada", at=stamp).id)
    board.tasks_dir.joinpath("T-broken.md").write_text("---\nid: T-broken\ntitle: [\n---\n")
    board.tasks_dir.joinpath("T-empty.md").write_text("")
    return made


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Board:
    board = init_board(Path(tmp_path_factory.mktemp("order")) / "board")
    _fill(board, 400, seed=11)
    with Index.open(board) as index:
        index.refresh()
    return board


@contextmanager
def windows(part: int, probe: int, min_tasks: int = 0) -> Iterator[None]:
    """The window sizes 1/part (first 1/probe) of the tasks, on boards of >= min_tasks."""
    with mock.patch.object(indexsearch, "SEARCH_WINDOW_PART", part), \
            mock.patch.object(indexsearch, "SEARCH_PROBE_PART", probe), \
            mock.patch.object(indexsearch, "SEARCH_WINDOW_MIN_TASKS", min_tasks):
        yield


class Spy:
    """Counts how searches were answered: by the first window, by the second, or by the
    full scan after the windows (so that a test can tell that it covered each path)."""

    def __init__(self) -> None:
        self.outcomes: dict[str, int] = {"first": 0, "second": 0, "fell back": 0}
        self._windows = 0

    @contextmanager
    def watching(self) -> Iterator[None]:
        search_window, fetch = indexsearch._search_window, indexsearch.fetch_rows

        def spy_window(db: sqlite3.Connection, *args: Any) -> Any:
            self._windows = 0
            found = search_window(db, *args)
            if self._windows:
                key = "fell back" if found is None else ("first", "second")[self._windows - 1]
                self.outcomes[key] += 1
            return found

        def spy_fetch(db: sqlite3.Connection, sql: str, *args: Any) -> Any:
            if "FROM tasks k" in sql:
                self._windows += 1
            return fetch(db, sql, *args)

        with mock.patch.object(indexsearch, "_search_window", spy_window), \
                mock.patch.object(indexsearch, "fetch_rows", spy_fetch):
            yield


def _check(index: Index, needle: str, fields: list[str] | None, sort: str, limit: int,
           filters: dict[str, Any]) -> list[dict[str, Any]]:
    """The windowed answer equals the full scan's (no limit, then cut) and the answer with
    the windows off; returns it."""
    got = index.search(needle, fields, sort=sort, limit=limit, **filters)
    with windows(20, 80, min_tasks=10**9):
        whole = index.search(needle, fields, sort=sort, **filters)
        plain = index.search(needle, fields, sort=sort, limit=limit, **filters)
    assert got == plain, (needle, fields, sort, limit, filters)
    if limit >= 0:
        assert got == whole[:limit], (needle, fields, sort, limit, filters)
    return got


def test_windows_give_the_full_answer_on_a_sweep(big: Board) -> None:
    spy = Spy()
    with Index.open(big) as index, spy.watching():
        assert index.status()["errors"] == 2
        for part, probe in ((2, 2), (3, 12), (8, 32), (20, 80), (40, 40)):
            with windows(part, probe):
                for needle in NEEDLES:
                    for sort in ("desc", "asc"):
                        for limit in LIMITS:
                            _check(index, needle, None, sort, limit, {})
                        for filters in FILTERS:
                            _check(index, needle, None, sort, 5, filters)
                for fields in FIELDS:
                    _check(index, "common", fields, "desc", 10, {})
                    _check(index, "did", fields, "asc", 3, {})
    # every path was taken: answered by the first window, by the second, and neither
    assert all(spy.outcomes.values()), spy.outcomes
    with Index.open(big) as index, spy.watching(), windows(8, 32):
        before = spy.outcomes["first"]
        index.search("common", sort="asc", limit=1)  # malformed files (NULL times) or not
        assert spy.outcomes["first"] == before + 1


def test_other_sorts_and_odd_limits_are_unchanged(big: Board) -> None:
    with Index.open(big) as index, windows(2, 4):
        for sort in ("priority", "created"):
            for limit in (1, 7, 50):
                _check(index, "common", None, sort, limit, {})
        for limit in (0, -1, 10**30):
            _check(index, "common", None, "desc", limit, {})
            _check(index, "common", None, "asc", limit, {})
        with pytest.raises(LedgitError):
            index.search("common", sort="sideways", limit=3)


@settings(max_examples=examples(150), deadline=None)
@given(needle=st.sampled_from(NEEDLES), fields=st.sampled_from(FIELDS),
       sort=st.sampled_from(["desc", "asc"]), limit=st.integers(1, 120),
       filters=st.sampled_from(FILTERS), part=st.integers(1, 60), ratio=st.integers(1, 8))
def test_windows_give_the_full_answer(big: Board, needle: str, fields: list[str] | None,
                                      sort: str, limit: int, filters: dict[str, Any],
                                      part: int, ratio: int) -> None:
    with Index.open(big) as index, windows(part, part * ratio):
        _check(index, needle, fields, sort, limit, filters)


def test_tasks_without_last_modified_are_found_as_by_the_full_scan(
        tmp_path: Path, clean_env: None) -> None:
    """A valid row whose last_modified is NULL (a record always has one; the index row is
    edited here): NULL sorts last in desc, first in asc, in both answers."""
    board = init_board(tmp_path / "board")
    made = _fill(board, 120, seed=5)
    rng = random.Random(3)
    nulls = rng.sample(made, 6)
    spy = Spy()
    with Index.open(board) as index:
        index.refresh()
        index.db.execute(f"UPDATE tasks SET last_modified = NULL WHERE id IN "
                         f"({', '.join('?' * len(nulls))})", nulls)
        with spy.watching(), windows(4, 8):
            for needle in NEEDLES:
                for sort in ("desc", "asc"):
                    for limit in LIMITS:
                        _check(index, needle, None, sort, limit, {})
                    _check(index, needle, None, sort, 4, {"include_archived": True})
            # every title holds "t": the NULLs come first in asc, last in desc
            first = _check(index, "t", None, "asc", 1, {"include_archived": True})
            assert first[0]["id"] in nulls
            last = index.search("t", sort="desc", include_archived=True)[-1]
            assert last["id"] in nulls
        # desc still answers from the windows; asc does not while a valid row has no time
        assert spy.outcomes["first"] + spy.outcomes["second"] > 0
        with spy.watching(), windows(4, 8):
            before = dict(spy.outcomes)
            index.search("common", sort="asc", limit=1)
            assert spy.outcomes == before  # no window was read
