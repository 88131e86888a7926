"""A history only grows (DESIGN §8): which events of a parent commit's history a child
commit's history lost, on parsed events or on the files' texts, and how such an event is
named to a person. Pure and lenient: damage is the continuity check's to name
(:mod:`ledgit.core.historycheck`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

    from ledgit.core.history import Event


def lost_events(parent: Iterable[Mapping[str, Any]],
                child: Iterable[Mapping[str, Any]]) -> list[Event]:
    """The events of ``parent`` whose id is not in ``child``, in ``parent``'s order: what a
    commit would lose of its parent's history ("a history only grows", DESIGN §8). Empty
    when ``child`` keeps every parent event; extra child events are the growth allowed."""
    kept = {e.get("id") for e in child}
    return [{k: v for k, v in e.items() if k != "_line"} for e in parent
            if e.get("id") not in kept]


def lost_in_text(parent: str | bytes | None, child: str | bytes | None,
                 base: str | bytes | None = None) -> list[Event]:
    """:func:`lost_events` on two history files' texts (None: no file). Pure and lenient.

    ``base``: only the events ``parent`` adds to ``base`` must be kept -- what a cherry-pick
    or a rebase step takes from the picked commit (``parent``) and its parent (``base``).

    Fast path: every non-blank line of ``parent`` appears verbatim in ``child`` (events are
    canonical JSON, one per line), so no JSON is decoded. Otherwise the parent's missing lines
    are decoded (a line that is no event object is skipped: continuity reports it) and an
    event is lost unless some line of ``child`` that decodes carries its id. A damaged child
    line keeps nothing: damage is the continuity check's to name.
    """
    if not parent:
        return []
    wanted = [line for line in _as_bytes(parent).split(b"\n") if line.strip()]
    if base:
        had = _as_bytes(base).split(b"\n")
        had_set = set(had)
        wanted = [line for line in wanted if line not in had_set]
        if wanted:
            known = {e["id"] for e in map(_lenient_event, had) if e is not None}
            wanted = [line for line in wanted
                      if (_lenient_event(line) or {}).get("id") not in known]
    child_lines = _as_bytes(child).split(b"\n") if child else []
    present = set(child_lines)
    missing = [line for line in wanted if line not in present]
    if not missing:
        return []
    candidates = [e for e in map(_lenient_event, missing) if e is not None]
    if not candidates:
        return []
    kept = (_lenient_event(line) for line in child_lines if line.strip())
    return lost_events(candidates, [e for e in kept if e is not None])


def _as_bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")


def _lenient_event(line: bytes) -> Event | None:
    """The JSON object on one history line with a str ``id``, else None."""
    try:
        event = json.loads(line.decode("utf-8").strip())
    except (ValueError, RecursionError):
        return None
    if event.__class__ is not dict or event.get("id").__class__ is not str:
        return None
    return event


def describe_event(event: Mapping[str, Any]) -> str:
    """``op by actor at time (id12)``: how a lost or removed event is named to a person."""
    return (f"{event.get('op', '?')} by {event.get('actor', '?')} at {event.get('at', '?')} "
            f"({str(event.get('id', ''))[:12]})")
