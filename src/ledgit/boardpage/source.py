"""The page's data from one board: index rows, histories, the extras cache, the model.

:class:`PageSource` turns an open :class:`ledgit.storage.index.Index` into the page model
(:func:`ledgit.boardpage.model.build_model`) and keeps the per-task extras (rendered body,
timeline, plot points) between calls, so a live page pays only for what changed.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

from ledgit.boardpage.model import ExtrasCache, build_model, detail_of
from ledgit.boardpage.render import markdown_renderer, page_json
from ledgit.core.readout import now_timestamp
from ledgit.storage.board import Board
from ledgit.storage.index import Index


class PageSource:
    """The page model of ``board``; ``archived``: show the archived column too."""

    def __init__(self, board: Board, *, archived: bool = False) -> None:
        self.board = board
        self.archived = archived
        self.cache = ExtrasCache(markdown_renderer())
        self._rows: dict[str, dict[str, Any]] = {}
        self._cards: dict[str, dict[str, Any]] = {}
        self._extras: dict[str, dict[str, Any]] = {}
        self._card_cache: dict[str, tuple[Any, dict[str, Any]]] = {}

    def model(self, index: Index, *, details: bool, fork: bool = True) -> dict[str, Any]:
        """The page model from ``index`` (refreshed by the caller or by its first query):
        every valid task, archived included (the page shows them only when asked, and always
        says how many there are); ``details``: embed every shown task's detail (a file
        page); ``fork``: compute missing extras in forked workers (not from a threaded
        server). Raises LedgitError as the index does (busy: exit 5)."""
        rows = self._current_rows(index)
        errors = index.errors()
        now, ttl = now_timestamp(), int(self.board.config.claim_ttl)
        extras = self.cache.fill(rows, self.board.history_str, now=now, ttl=ttl, fork=fork,
                                 encode_detail=page_json if details else None)
        model = build_model(rows, errors, extras, now=now, ttl=ttl, archived=self.archived,
                            board_name=self.board.root.name, details=details,
                            card_cache=self._card_cache)
        self._rows = {str(r["id"]): r for r in rows}
        self._cards = {str(c["id"]): c for c in model["cards"]}
        self._extras = extras
        return model

    def _current_rows(self, index: Index) -> list[dict[str, Any]]:
        """Every valid task's index row, in priority order (as ``index.rows(sort=
        "priority")``): the first time all of them, later only those whose revision moved
        (:meth:`ledgit.storage.index.Index.revisions`, then one
        :meth:`~ledgit.storage.index.Index.get`
        each) when few did."""
        if not self._rows:
            return index.rows(include_archived=True, sort="priority")
        revisions = index.revisions()
        moved = [t for t, rev in revisions.items()
                 if t not in self._rows or self._rows[t]["revision"] != rev]
        if len(moved) > max(50, len(revisions) // 10):
            return index.rows(include_archived=True, sort="priority")
        rows = {t: self._rows[t] for t in revisions if t not in moved}
        for tid in moved:
            row = index.get(tid)
            if row is not None and row.get("error") is None:
                rows[tid] = row
        return sorted(rows.values(), key=_priority_order)

    def detail(self, task_id: str) -> dict[str, Any] | None:
        """The detail of a task of the last :meth:`model`, None when it had no such card
        (or when that model was a file page's, whose details it holds encoded)."""
        card = self._cards.get(task_id)
        if card is None or task_id not in self._extras:
            return None
        if "body_html" not in self._extras[task_id]:  # a file page's: encoded already
            return None
        return detail_of(self._rows[task_id], self._extras[task_id])


def _priority_order(row: dict[str, Any]) -> tuple[int, str, str]:
    """The index's ``priority`` sort: priority (none = 5), then oldest created, then id."""
    priority = row.get("priority")
    return (5 if priority is None else int(priority), str(row.get("created") or ""),
            str(row["id"]))


@contextlib.contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a whole page build (as ``ledgit import`` does):
    the build makes ~100 containers a task and none of them is garbage before the page is
    written, so every collection only walks live objects, ever more of them -- ~0.35 s of
    the ~0.55 s that building the model of a 10,000-task board takes (bench/board_bench.py's
    board, at load ~9 on 2 CPUs). Forked workers inherit the setting."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
