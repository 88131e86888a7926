"""Writing one task with a pure transition, for every face (DESIGN §6): the board's write path
(lock, read the truth, check ``--expect``, append the event, replace the file) applied to
``op(record, actor, now, ttl)``, and the loser of a claim told who ended it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from ledgit.core.change import Change
from ledgit.core.errors import LedgitError
from ledgit.core.history import HistoryError, parse_events
from ledgit.core.readout import now_timestamp
from ledgit.core.record import Record
from ledgit.operations import claims
from ledgit.storage.actor import actor_or_warn
from ledgit.storage.board import Board
from ledgit.storage.writepath import mutate_task

# A pure transition: (the record as read under the lock, actor, now, claim TTL in
# seconds) -> the change to write.
Op = Callable[[Record, str, str, int], Change]


def write_task(task: str, by: str | None, expect: str | None,
               op: Op, board: Board) -> tuple[bool, Record, Change, str]:
    """Apply ``op(record, actor, now, ttl)`` to one task through the board's write path
    (lock, read the truth, check --expect, write); returns (written?, record now on disk,
    change, actor). A change that alters nothing writes nothing (written = False).
    ``board``: the board to write. Raises what ``op`` raises (prefixed, for a claim that a
    merge ended, with who ended it), exit 3 for a stale ``expect``, 4 for an unknown id."""
    tid = board.resolve_id(task)
    actor = actor_or_warn(by, board.root_str)
    ttl = int(board.config.claim_ttl)
    done: list[tuple[Record, Change]] = []

    ended: list[str] = []

    def change(record: Record) -> Change:
        ended[:] = _claim_ended(board, record, actor)
        try:
            result = op(record, actor, now_timestamp(), ttl)
        except LedgitError as exc:
            if ended:  # the loser of a claim learns who ended it (docs/merge.md)
                raise LedgitError(f"{record.id}: {ended[0]}; {exc.message}", exc.code) from None
            raise
        done.append((record, result))
        return result

    record = mutate_task(board, tid, change, actor, expect=expect)
    if ended:
        sys.stderr.write(f"ledgit: note: {tid}: {ended[0]}\n")
    before, result = done[-1]
    return record.revision != before.revision, record, result, actor


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
