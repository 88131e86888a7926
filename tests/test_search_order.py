"""Paging a search or a list to the end (DESIGN §14: a cursor is a position in a stable
order, not an offset) gives exactly the whole answer -- the same rows, in the same order,
with the same ``matches`` -- and ``total`` its length, for any needle, fields, sort, filter
and page size, with runs of equal last_modified (a page boundary inside a run) and malformed
files; the whole answer is in the order of its sort keys, then the id."""

from __future__ import annotations

import functools
import random
from pathlib import Path
from typing import Any

import pytest
from examples import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from ledgit.core.errors import LedgitError
from ledgit.operations import paging
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
SIZES = [1, 3, 8, 40, 1000]  # rows a page


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


def _in_order(rows: list[dict[str, Any]], sort: str) -> list[str]:
    """The ids of ``rows`` in the order ``sort`` names, worked out here (not by SQLite)."""
    ordered = sorted(rows, key=lambda r: r["id"])
    if sort in ("desc", "asc"):
        ordered.sort(key=lambda r: r["last_modified"], reverse=sort == "desc")
    elif sort == "created":
        ordered.sort(key=lambda r: r["created"], reverse=True)
    else:
        ordered.sort(key=lambda r: (5 if r["priority"] is None else r["priority"],
                                    r["created"]))
    return [r["id"] for r in ordered]


def _paged(listing_of: Any, query: dict[str, Any], sort: str, size: int
           ) -> tuple[list[dict[str, Any]], list[int]]:
    """Every page of ``listing_of(after)`` to the end, each cursor through its text (as a
    face hands it over); the rows and each answer's total."""
    rows: list[dict[str, Any]] = []
    totals: list[int] = []
    cursor: str | None = None
    while True:
        after = paging.decode_cursor(cursor, query, "cursor", paging.cursor_fits(sort))
        listing = listing_of(after=after)
        page, position = paging.take(listing, size)
        rows += page
        totals.append(listing.total)
        assert len(page) == size or position is None  # a short page is the last one
        if position is None:
            return rows, totals
        cursor = paging.encode_cursor(query, position)


def _check(index: Index, needle: str, fields: list[str] | None, sort: str, size: int,
           filters: dict[str, Any]) -> list[dict[str, Any]]:
    """Search pages of ``size`` to the end give the whole answer, which is in the order of
    its sort; returns it."""
    whole = index.search(needle, fields, sort=sort, **filters)
    query = {"needle": needle, "fields": fields, "sort": sort, **filters}
    rows, totals = _paged(functools.partial(paging.found_rows, index, needle, fields,
                                            sort=sort, chunk=size + 1, **filters),
                          query, sort, size)
    assert rows == whole, (needle, fields, sort, size, filters)
    assert set(totals) == {len(whole)}
    assert [r["id"] for r in whole] == _in_order(whole, sort)
    assert {r["id"] for r in whole} <= {r["id"] for r in index.rows(sort=sort, **filters)}
    return whole


def test_search_pages_give_the_whole_answer_on_a_sweep(big: Board) -> None:
    with Index.open(big) as index:
        assert index.status()["errors"] == 2
        for needle in NEEDLES:
            for sort in ("desc", "asc", "priority", "created"):
                for size in SIZES if needle not in ("e", "mon m") else (40,):
                    _check(index, needle, None, sort, size, {})
                for filters in FILTERS:
                    _check(index, needle, None, sort, 25, filters)
        for fields in FIELDS:
            _check(index, "common", fields, "desc", 10, {})
            _check(index, "did", fields, "asc", 3, {})
        assert len(_check(index, "common", None, "desc", 7, {})) > 100  # many pages
        with pytest.raises(LedgitError):
            index.search("common", sort="sideways", limit=3)


def test_list_pages_give_the_whole_answer(big: Board) -> None:
    with Index.open(big) as index:
        for sort in ("desc", "asc", "priority", "created"):
            for filters in FILTERS:
                whole = index.rows(sort=sort, **filters)
                assert [r["id"] for r in whole] == _in_order(whole, sort)
                for size in (3, 50, 1000):
                    rows, totals = _paged(functools.partial(
                        paging.task_rows, index, sort=sort, chunk=size + 1, **filters),
                        {"sort": sort, **filters}, sort, size)
                    assert rows == whole and set(totals) == {len(whole)}, (sort, filters)


@settings(max_examples=examples(60), deadline=None)
@given(needle=st.sampled_from(NEEDLES), fields=st.sampled_from(FIELDS),
       sort=st.sampled_from(["desc", "asc", "priority", "created"]),
       size=st.integers(5, 120), filters=st.sampled_from(FILTERS))
def test_search_pages_give_the_whole_answer(big: Board, needle: str,
                                            fields: list[str] | None, sort: str, size: int,
                                            filters: dict[str, Any]) -> None:
    with Index.open(big) as index:
        _check(index, needle, fields, sort, size, filters)


def test_a_cursor_continues_only_its_own_query(big: Board) -> None:
    """A cursor of another query, a damaged one, or one of another sort's shape is an
    argument error naming the argument; none is read as a position."""
    with Index.open(big) as index:
        listing = paging.found_rows(index, "common", None, sort="desc", after=None, chunk=4)
        _page, position = paging.take(listing, 3)
        assert position is not None
        cursor = paging.encode_cursor({"needle": "common"}, position)
    fits = paging.cursor_fits("desc")
    assert paging.decode_cursor(cursor, {"needle": "common"}, "cursor", fits) == position
    for text, query, check in ((cursor, {"needle": "rare"}, fits),
                               (cursor[:-3], {"needle": "common"}, fits),
                               (cursor + "x", {"needle": "common"}, fits),
                               ("", {"needle": "common"}, fits),
                               ("%%%", {"needle": "common"}, fits),
                               (cursor, {"needle": "common"}, paging.cursor_fits("priority")),
                               ("x" * 5000, {"needle": "common"}, fits)):
        with pytest.raises(LedgitError) as err:
            paging.decode_cursor(text, query, "--cursor", check)
        assert err.value.code == 2 and str(err.value).startswith("--cursor: ")


def test_a_seed_of_ties_pages_by_id_within_a_run(tmp_path: Path, clean_env: None) -> None:
    """Many tasks of one last_modified: a page boundary inside the run continues by id."""
    board = init_board(tmp_path / "board")
    made = [create_task(board, {"title": f"same {i}"}, "", "ada", at=STAMPS[0]).id
            for i in range(30)]
    rng = random.Random(1)
    with Index.open(board) as index:
        for size in (1, 2, 7, 29, 30, 31):
            rows, totals = _paged(functools.partial(paging.task_rows, index, sort="desc",
                                                    chunk=rng.randint(1, 9)), {}, "desc", size)
            assert [r["id"] for r in rows] == sorted(made) and set(totals) == {30}
