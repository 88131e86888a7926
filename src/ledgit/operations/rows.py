"""The rows of ``list``, ``search`` and ``ready``, for every face (the CLI and ``ledgit
mcp``'s list tools): the filters they ask the index with, a row's documented shape
(docs/cli.md) with its claim's freshness, and the brief row of a first look (DESIGN §14).

Standard library and :mod:`ledgit.core.readout` only: no YAML, no record parsing on a list.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from ledgit.core.readout import NOT_READY_OUTCOMES, epoch_seconds, format_duration, format_ttl
from ledgit.operations.arguments import split_list

ROW_KEYS = ("id", "title", "status", "priority", "owner", "worker", "claim", "labels",
            "depends_on", "outcome", "next_action", "gate", "created", "last_modified",
            "path", "revision")
# A brief row (``ledgit mcp``'s default): who holds the task and until when only when someone
# does -- ~20 tokens a row (bytes/4) for the titles of a real board.
BRIEF_KEYS = ("id", "title", "status", "priority", "holder", "until")


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


def holder_of(row: Mapping[str, Any], ttl: int, lease: Mapping[str, Any] | None = None
              ) -> tuple[str | None, str | None]:
    """(who holds the task of index ``row``, until when: RFC 3339 UTC to the second), or
    (None, None): its claim's holder until its last heartbeat plus ``ttl`` seconds (then the
    claim is stale), else the holder of a live remote ``lease`` (the view of
    :func:`ledgit.operations.leaserecord.lease_view`) until it expires."""
    claim = row.get("claim")
    if claim:
        last = claim.get("heartbeat") or claim.get("at")
        until = utc_second(epoch_seconds(last) + ttl) if isinstance(last, str) else None
        return claim.get("by"), until
    if lease and lease.get("state") == "held" and lease.get("live"):
        return lease.get("by"), lease.get("expires")
    return None, None


def brief_view(row: Mapping[str, Any], ttl: int, lease: Mapping[str, Any] | None = None
               ) -> dict[str, Any]:
    """A brief row (:data:`BRIEF_KEYS`): id, title, status, priority, and ``holder`` and
    ``until`` (:func:`holder_of`) only while someone holds the task."""
    view = {"id": row.get("id"), "title": row.get("title"), "status": row.get("status"),
            "priority": row.get("priority")}
    who, until = holder_of(row, ttl, lease)
    if who is not None:
        view["holder"], view["until"] = who, until
    return view


def utc_second(epoch: float) -> str:
    """RFC 3339 UTC to the second (``2026-08-29T10:30:00Z``) of ``epoch`` seconds."""
    t = time.gmtime(int(epoch))
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:"
            f"{t.tm_sec:02d}Z")
