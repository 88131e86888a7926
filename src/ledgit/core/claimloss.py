"""How someone's claim ended, read from a task's history (DESIGN §4, issue 24 item 3). Pure.

The loser of a claim is told who ended it and how at every refusal that follows, not left
with "no claim to renew": :func:`claim_loss` finds the event after the actor's last claim or
heartbeat by which someone else took the task over or ended it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

# An op by someone else that ends an actor's claim -> how the loser is told.
ENDED_BY = {"claim": "taken over", "complete": "completed", "drop": "dropped",
            "park": "parked", "archive": "archived", "release": "released",
            "wait": "put on wait", "monitor": "put on monitoring"}
_OWN_END = ("release", "complete", "drop", "park", "archive", "wait", "monitor")


def claim_loss(events: Sequence[Mapping[str, Any]], by: str) -> str | None:
    """``"taken over by bob at <time>"`` (or completed, dropped, parked, archived, released,
    put on wait or on monitoring) when, after ``by``'s last ``claim`` or ``heartbeat`` event,
    someone else's event ended that claim before ``by`` ended it; None when ``by`` never
    claimed, ended its claim itself, or still holds it. ``events``: the task's history
    (DESIGN §6) in file order (appends are in time order; a merge appends the other side's
    events)."""
    last = None
    for n, event in enumerate(events):
        if event.get("actor") == by and event.get("op") in ("claim", "heartbeat"):
            last = n
    if last is None:
        return None
    for event in events[last + 1:]:
        op, actor = event.get("op"), event.get("actor")
        if actor == by and op in _OWN_END:
            return None
        if actor != by and op in ENDED_BY:
            return f"{ENDED_BY[str(op)]} by {actor} at {event.get('at')}"
    return None
