"""Writing one task with a pure transition, for every face (DESIGN §6): the board's write path
(lock, read the truth, check ``--expect``, append the event, replace the file) applied to
``op(record, actor, now, ttl)``, the loser of a claim told who ended it, and the writer told
who holds the task when someone else does (:class:`TaskWrite`'s ``held_by``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NamedTuple

from ledgit.core.change import Change
from ledgit.core.claimloss import claim_loss
from ledgit.core.errors import CLAIM, LedgitError
from ledgit.core.history import HistoryError, parse_events
from ledgit.core.readout import now_timestamp
from ledgit.core.record import Record
from ledgit.operations import claims
from ledgit.operations.leasestep import LEASE_DONE, LeaseStep
from ledgit.storage.actor import actor_or_warn
from ledgit.storage.board import Board
from ledgit.storage.writepath import mutate_task

# A pure transition: (the record as read under the lock, actor, now, claim TTL in
# seconds) -> the change to write.
Op = Callable[[Record, str, str, int], Change]


class TaskWrite(NamedTuple):
    """What :func:`write_task` did: whether it ``written`` anything, the ``record`` now on
    disk, the ``change``, the ``actor``, and ``held_by`` -- ``{"by", "since", "until"}`` when
    the write landed on a task someone else holds a live claim on
    (:func:`ledgit.operations.claims.held_by_other`), else None."""

    written: bool
    record: Record
    change: Change
    actor: str
    held_by: dict[str, str] | None


def write_task(task: str, by: str | None, expect: str | None,
               op: Op, board: Board, *, take_over: bool = False,
               offline: bool = False, lease_op: str | None = None) -> TaskWrite:
    """Apply ``op(record, actor, now, ttl)`` to one task through the board's write path
    (lock, read the truth, check --expect, write); returns a :class:`TaskWrite`. A change
    that alters nothing writes nothing (written = False, held_by None).
    ``board``: the board to write. Raises what ``op`` raises (prefixed, for a claim that a
    merge ended, with who ended it), exit 3 for a stale ``expect``, 4 for an unknown id.
    A claim, heartbeat, release or lifecycle end also takes, renews or ends the task's
    lease on the board's remote first (:class:`ledgit.operations.leasestep.LeaseStep`;
    ``take_over``, ``offline``: ``claim --take-over``, ``--offline``): exit 6 or 69 there
    writes nothing. ``lease_op`` ``"release"`` or ``"heartbeat"``: where ``op`` refuses
    with exit 6 because the task here shows no claim of the actor (a rewrite, reset or
    checkout dropped it) but the actor holds the task's lease on the remote, that lease is
    released or renewed all the same and nothing is written here (written = False, the
    change's meta ``{"lease": "released"|"renewed"}``; one ``ledgit: note:`` line on
    stderr says so; :meth:`LeaseStep.without_claim`)."""
    tid = board.resolve_id(task)
    actor = actor_or_warn(by, board.root_str)
    ttl = int(board.config.claim_ttl)
    done: list[tuple[Record, Change]] = []
    held: list[dict[str, str] | None] = [None]

    ended: list[str] = []
    notes: list[str] = []
    lease = LeaseStep(board, take_over=take_over, offline=offline)

    def change(record: Record) -> Change:
        ended[:] = _claim_ended(board, record, actor)
        now = now_timestamp()
        try:
            result = op(record, actor, now, ttl)
        except LedgitError as exc:
            if ended:  # the loser of a claim learns who ended it (docs/merge.md)
                raise LedgitError(f"{record.id}: {ended[0]}; {exc.message}", exc.code) from None
            lost = _claim_lost(board, record, actor) if exc.code == CLAIM else None
            if lost:  # ... and so does the loser of a takeover or an end (issue 24)
                raise LedgitError(f"{record.id}: {lost}; {exc.message}", exc.code) from None
            unclaimed = (_claim_of(record) != actor and exc.code == CLAIM
                         and lease_op is not None)
            said = lease.without_claim(record.id, record.revision, lease_op or "", actor,
                                       ttl) if unclaimed else None
            if said is None:
                raise
            notes.append(said)  # leases follow the claims they guard (issue 36)
            result = Change(record, lease_op or "", None, {"lease": LEASE_DONE[lease_op or ""]})
            done.append((record, result))
            return result
        lease.apply(record, result, actor, ttl)
        done.append((record, result))
        held[0] = claims.held_by_other(record, actor, now, ttl)
        return result

    try:
        record = mutate_task(board, tid, change, actor, expect=expect)
    except BaseException:
        lease.undo()
        raise
    if ended:
        sys.stderr.write(f"ledgit: note: {tid}: {ended[0]}\n")
    for line in notes:
        sys.stderr.write(f"ledgit: note: {line}\n")
    before, result = done[-1]
    written = record.revision != before.revision
    return TaskWrite(written, record, result, actor, held[0] if written else None)


def _claim_lost(board: Board, record: Record, actor: str) -> str | None:
    """``"alice's claim was taken over by bob at T"`` (or completed, dropped...) when someone
    else ended ``actor``'s last claim (:func:`ledgit.core.claimloss.claim_loss`); None
    otherwise."""
    try:
        how = claim_loss(parse_events(board.read_history_text(record.id) or "", record.id),
                         actor)
    except HistoryError:
        return None
    return f"{actor}'s claim was {how}" if how else None


def _claim_ended(board: Board, record: Record, actor: str) -> list[str]:
    """``["completed by B at T; a merge ended A's claim"]`` when ``actor`` lost a claim to
    someone else's completion (or drop, park, archive) in a merge and has not heard of it
    (:func:`ledgit.operations.transitions.claim_ended_by`); [] otherwise. Reads the history only
    for an ended
    task the actor holds no claim on."""
    claim = record.fields.get("claim")
    if record.fields["status"] not in ("done", "dropped", "parked", "archived") or (
            claim and claim.get("by") == actor):
        return []
    text = board.read_history_text(record.id)
    try:
        what = claims.claim_ended_by(parse_events(text or "", record.id), actor)
    except HistoryError:
        return []
    return [f"{what}; a merge ended {actor}'s claim"] if what else []


def _claim_of(record: Record) -> str | None:
    claim = record.fields.get("claim")
    return str(claim["by"]) if claim else None
