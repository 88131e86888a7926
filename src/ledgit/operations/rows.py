"""The rows of ``list``, ``search`` and ``ready``, for every face (the CLI and ``ledgit
mcp``'s list tools): the filters they ask the index with, and a row's documented shape
(docs/cli.md) with its claim's freshness.

Standard library and :mod:`ledgit.core.readout` only: no YAML, no record parsing on a list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledgit.core.readout import NOT_READY_OUTCOMES, epoch_seconds, format_duration, format_ttl
from ledgit.operations.arguments import split_list

ROW_KEYS = ("id", "title", "status", "priority", "owner", "worker", "claim", "labels",
            "depends_on", "outcome", "next_action", "gate", "created", "last_modified",
            "path", "revision")


def filters_of(status: Sequence[str], owner: str | None, worker: str | None,
               label: Sequence[str], include_all: bool, outcome: str | None
               ) -> dict[str, Any]:
    """The keywords of :meth:`ledgit.storage.index.Index.rows` / ``search`` for the list filters
    (only those given; ``label`` split at commas; archived tasks only with ``include_all``
    or ``--status archived``)."""
    filters: dict[str, Any] = {}
    if status:
        filters["status"] = list(status)
    if owner:
        filters["owner"] = owner
    if worker:
        filters["worker"] = worker
    if label:
        filters["label"] = split_list(label)
    if outcome:
        filters["outcome"] = outcome
    filters["include_archived"] = include_all or "archived" in status
    return filters


def is_negative(row: dict[str, Any]) -> bool:
    """Whether an index row's outcome keeps the task off ``ready`` (drop, no_change:
    DESIGN §4)."""
    return (row.get("outcome") or {}).get("kind") in NOT_READY_OUTCOMES


def row_view(row: dict[str, Any], now: float, ttl: int) -> dict[str, Any]:
    """A list/search/ready row in the documented shape (docs/cli.md): :data:`ROW_KEYS` and
    ``freshness`` ({state: fresh/stale/contested/none, reason}) of the claim, from ``now``
    (epoch seconds) and ``ttl`` (seconds)."""
    view = {k: row.get(k) for k in ROW_KEYS}
    for k in ("labels", "depends_on"):
        view[k] = list(view[k] or [])
    claim = view["claim"]
    if claim:
        last = claim.get("heartbeat") or claim.get("at")
        age = max(now - epoch_seconds(last), 0.0)
        state = "stale" if age > ttl else "fresh"
        if row.get("contested"):
            state = "contested"
        beat = "last heartbeat" if claim.get("heartbeat") else "claimed"
        view["freshness"] = {"state": state,
                             "reason": f"claim by {claim.get('by')} {beat} "
                                       f"{format_duration(age)} ago, TTL {format_ttl(ttl)}"}
    else:
        view["freshness"] = {"state": "none", "reason": "nobody holds a claim"}
    return view
