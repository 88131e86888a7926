"""Claims (DESIGN §4): taking one (readiness, a stale claim taken over), renewing it by
heartbeat, releasing it; its freshness; and who ended a claim that a merge lost. Pure:
``Record (+ arguments) -> Change``; a refusal caused by someone else's claim exits 6.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ledgit.core.change import Change
from ledgit.core.errors import CLAIM
from ledgit.core.history import ancestors
from ledgit.core.readout import (
    Freshness,
    claim_expiry,
    freshness_of,
)
from ledgit.core.record import Record

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
from ledgit.operations.changes import CLAIMABLE, copy_fields, fail, finish, need_text, with_article

# --------------------------------------------------------------------------- claims


def claim_freshness(record: Record, now: str, ttl: int) -> Freshness:
    """Freshness of the task's claim (DESIGN §4): see :func:`ledgit.core.readout.freshness_of`."""
    return freshness_of(record.fields, now, ttl)


def lost_to(record: Record, by: str) -> str | None:
    """The current holder when ``by`` lost a contested claim in a merge, else None."""
    claim = record.fields.get("claim")
    for c in record.fields.get("contested") or []:
        if c.get("by") == by and (not claim or claim.get("by") != by):
            return str(claim["by"]) if claim else "nobody (the claim has since ended)"
    return None


_ENDED_BY = {"complete": "completed", "drop": "dropped", "park": "parked",
             "archive": "archived"}


def claim_ended_by(events: Sequence[Mapping[str, Any]], by: str) -> str | None:
    """``"completed by bob at <time>"`` when a merge ended ``by``'s claim: ``by``'s last claim
    or heartbeat is concurrent with someone else's ``complete`` (or drop, park, archive) --
    neither is an ancestor of the other -- and ``by`` has written nothing after that end.
    None otherwise. ``events``: the task's history (DESIGN §6), in file order."""
    mine = [e for e in events if e.get("actor") == by and e.get("op") in ("claim",
                                                                         "heartbeat")]
    ends = [e for e in events if e.get("op") in _ENDED_BY and e.get("actor") != by]
    if not mine or not ends:
        return None
    claim_event = max(mine, key=lambda e: (e["at"], e["id"]))
    end = max(ends, key=lambda e: (e["at"], e["id"]))
    if claim_event["id"] in ancestors(events, end["id"]):
        return None  # the end came after the claim: nothing was lost in a merge
    if end["id"] in ancestors(events, claim_event["id"]):
        return None
    for e in events:
        if e.get("actor") == by and end["id"] in ancestors(events, e["id"]) \
                and e["id"] != end["id"]:
            return None  # by has written since: this was said already
    return f"{_ENDED_BY[end['op']]} by {end['actor']} at {end['at']}"


def held_by_other(record: Record, by: str, now: str, ttl: int) -> dict[str, str] | None:
    """``{"by": holder, "since": claim time, "until": when it goes stale}`` when someone other
    than ``by`` holds a live (not stale) claim on the task -- what a write by ``by`` that still
    lands (update, note, item, writeback: owners and people edit claimed tasks) tells its
    writer (issue 34); None otherwise. ``now``: RFC 3339 UTC; ``ttl``: seconds."""
    claim = record.fields.get("claim")
    if not claim or claim["by"] == by or claim_freshness(record, now, ttl).stale:
        return None
    return {"by": str(claim["by"]), "since": str(claim["at"]),
            "until": claim_expiry(claim, ttl)}


def held_line(task: str, held: Mapping[str, str]) -> str:
    """The one line for :func:`held_by_other`'s answer: ``T-x: held by agent-a until
    2026-...Z (claimed 2026-...Z); written anyway``."""
    return (f"{task}: held by {held['by']} until {held['until']} (claimed {held['since']}); "
            f"written anyway")


def guard_holder(record: Record, by: str, now: str, ttl: int, action: str) -> None:
    """Refuse (exit 6) when ``by`` lost a contested claim or someone else holds the claim."""
    winner = lost_to(record, by)
    if winner is not None:
        raise fail(f"{record.id}: claim lost to {winner} (contested in a merge); "
                   f"cannot {action}", CLAIM)
    claim = record.fields.get("claim")
    if claim and claim["by"] != by:
        fr = claim_freshness(record, now, ttl)
        hint = (" (stale: take it with claim --take-over)" if fr.state == "stale"
                else "")
        raise fail(f"{record.id}: claimed by {claim['by']} ({fr.state}: {fr.reason}); "
                   f"only the holder may {action} it{hint}", CLAIM)


def claim(record: Record, *, by: str, now: str, ttl: int, note: str | None = None,
          take_over: bool = False, force: bool = False,
          dependency_status: Mapping[str, str | None] | None = None) -> Change:
    """Claim the task for ``by``: status in_progress, ``claim {by, at, heartbeat, note}``.

    Refused: an ended status or waiting/monitoring/parked (exit 2, reopen first); a
    dependency not done unless ``force`` (exit 2; ``dependency_status`` maps each id in
    depends_on to its status, None when missing); held by someone else (exit 6, fresh or
    stale) unless stale and ``take_over`` (meta ``took_over_from``); a claim ``by`` lost in a
    merge (exit 6). Re-claiming one's own claim refreshes it and keeps ``at``.
    """
    by = need_text(by, "claim needs an actor (--by)")
    f = copy_fields(record)
    status = f["status"]
    if status not in CLAIMABLE:
        raise fail(f"{record.id}: cannot claim {with_article(status)} task "
                   f"(ledgit reopen {record.id} "
                   f"first)")
    meta: dict[str, Any] = {}
    held = f.get("claim")
    if held and held["by"] != by:
        fr = claim_freshness(record, now, ttl)
        stale = fr.stale
        winner = lost_to(record, by)
        if winner is not None and not stale:
            raise fail(f"{record.id}: claim lost to {winner} (contested in a merge)", CLAIM)
        if not stale:
            # the task file as this clone has it: a release made in another clone arrives
            # with the next sync (the remote lease, where there is one, already knows)
            raise fail(f"{record.id}: claimed by {held['by']} ({fr.state}: {fr.reason}) in "
                       f"this clone's copy (a release made elsewhere arrives with ledgit sync)",
                       CLAIM)
        if not take_over:
            raise fail(f"{record.id}: claimed by {held['by']} (stale: {fr.reason}); take it "
                       f"over with --take-over", CLAIM)
        meta["took_over_from"] = dict(held)
    if not force:
        deps = list(f.get("depends_on") or [])
        statuses = dependency_status or {}
        pending = [f"{d} ({statuses.get(d) or 'missing'})" for d in deps
                   if statuses.get(d) != "done"]
        if pending:
            raise fail(f"{record.id}: not ready: dependencies not done: {', '.join(pending)} "
                       f"(--force to claim anyway)")
    if held and held["by"] == by:
        new_claim = {"by": by, "at": held["at"], "heartbeat": now}
        if note is not None:
            if note.strip():
                new_claim["note"] = note
        elif held.get("note"):
            new_claim["note"] = held["note"]
    else:
        new_claim = {"by": by, "at": now, "heartbeat": now}
        if note and note.strip():
            new_claim["note"] = note
        f.pop("contested", None)
    f["claim"] = new_claim
    f["status"] = "in_progress"
    op_note = note
    if "took_over_from" in meta:
        prev = meta["took_over_from"]
        fr = claim_freshness(record, now, ttl)
        took = f"took over from {prev['by']} ({fr.state}: {fr.reason})"
        op_note = f"{took}: {note}" if note else took
    if force and f.get("depends_on"):
        meta["forced"] = True
    return finish(record, f, "claim", op_note, meta)


def heartbeat(record: Record, *, by: str, now: str, ttl: int) -> Change:
    """Renew ``by``'s claim (``claim.heartbeat = now``).

    Refused with exit 6 when ``by`` lost the claim in a merge ("claim lost to X (contested in a
    merge)"), when someone else holds it, or when nobody does.
    """
    winner = lost_to(record, by)
    if winner is not None:
        raise fail(f"{record.id}: claim lost to {winner} (contested in a merge)", CLAIM)
    held = record.fields.get("claim")
    if not held:
        raise fail(f"{record.id}: no claim to renew: nobody holds one (status "
                   f"{record.fields['status']})", CLAIM)
    if held["by"] != by:
        fr = claim_freshness(record, now, ttl)
        # The record does not say whether `by` held it before (taken over) or never did:
        # the message is true either way.
        raise fail(f"{record.id}: claimed by {held['by']} at {held.get('at', '?')} "
                   f"({fr.state}: {fr.reason}); only the holder renews a claim, and {by} "
                   f"does not hold it", CLAIM)
    f = copy_fields(record)
    f["claim"] = dict(held, heartbeat=now)
    return finish(record, f, "heartbeat")


def release(record: Record, *, by: str, now: str, ttl: int, note: str | None = None) -> Change:
    """Give up ``by``'s claim: claim and contested cleared; in_progress goes back to open.

    Refused with exit 6 when nobody or someone else holds it.
    """
    held = record.fields.get("claim")
    if not held:
        winner = lost_to(record, by)
        if winner is not None:
            raise fail(f"{record.id}: claim lost to {winner} (contested in a merge)", CLAIM)
        raise fail(f"{record.id}: no claim to release", CLAIM)
    guard_holder(record, by, now, ttl, "release")
    f = copy_fields(record)
    f.pop("claim", None)
    f.pop("contested", None)
    if f["status"] == "in_progress":
        f["status"] = "open"
    return finish(record, f, "release", note)
