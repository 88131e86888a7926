"""The page's data from one board: index rows, histories, the extras cache, the model.

:class:`PageSource` turns an open :class:`ledgit.index.Index` into the page model
(:func:`ledgit.boardpage.model.build_model`) and keeps the per-task extras (rendered body,
timeline, plot points) between calls, so a live page pays only for what changed.
"""

from __future__ import annotations

from typing import Any

from ledgit.board import Board
from ledgit.boardpage.model import ExtrasCache, build_model, detail_of
from ledgit.boardpage.render import markdown_renderer
from ledgit.index import Index


class PageSource:
    """The page model of ``board``; ``archived``: show the archived column too."""

    def __init__(self, board: Board, *, archived: bool = False) -> None:
        self.board = board
        self.archived = archived
        self.cache = ExtrasCache(markdown_renderer())
        self._rows: dict[str, dict[str, Any]] = {}
        self._cards: dict[str, dict[str, Any]] = {}
        self._extras: dict[str, dict[str, Any]] = {}

    def model(self, index: Index, *, details: bool, fork: bool = True) -> dict[str, Any]:
        """The page model from ``index`` (refreshed by the caller or by its first query):
        every valid task, archived included (the page shows them only when asked, and always
        says how many there are); ``details``: embed every shown task's detail (a file
        page); ``fork``: compute missing extras in forked workers (not from a threaded
        server). Raises LedgitError as the index does (busy: exit 5)."""
        from ledgit.readout import now_timestamp

        rows = index.rows(include_archived=True, sort="priority")
        errors = index.errors()
        extras = self.cache.fill(rows, self.board.history_str, fork=fork)
        model = build_model(rows, errors, extras, now=now_timestamp(),
                            ttl=int(self.board.config.claim_ttl), archived=self.archived,
                            board_name=self.board.root.name, details=details)
        self._rows = {str(r["id"]): r for r in rows}
        self._cards = {str(c["id"]): c for c in model["cards"]}
        self._extras = extras
        return model

    def detail(self, task_id: str) -> dict[str, Any] | None:
        """The detail of a task of the last :meth:`model`, None when it had no such card."""
        card = self._cards.get(task_id)
        if card is None or task_id not in self._extras:
            return None
        return detail_of(card, self._rows[task_id], self._extras[task_id])
