"""The lifecycle commands (DESIGN §4): the claim (``claim``, ``heartbeat``, ``release``) and
the status changes (``complete``, ``wait``, ``monitor``, ``park``, ``drop``, ``archive``,
``reopen``). Each is one pure transition of :mod:`ledgit.operations.transitions` written through
:func:`ledgit.cli.commands.writes.mutate`; each prints the mutation line or JSON (docs/cli.md) and
returns 0, or raises the transition's LedgitError (exit 2 invalid, 3 stale ``--expect``,
4 unknown id, 6 claim held or lost).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledgit.cli.commands.running import command_board
from ledgit.cli.commands.writes import mutate
from ledgit.operations import claims, transitions
from ledgit.operations.projects import dependency_statuses

if TYPE_CHECKING:
    from ledgit.core.change import Change
    from ledgit.core.record import Record


def claim_cmd(task: str, note: str | None, take_over: bool, force: bool, offline: bool,
              by: str | None, expect: str | None, as_json: bool) -> int:
    """``ledgit claim``: TASK in_progress with a lease for the actor
    (:func:`ledgit.operations.claims.claim`: its dependencies done unless ``force``; a stale
    claim or an expired remote lease only with ``take_over``; ``offline``: no remote lease,
    docs/leases.md)."""
    board = command_board()

    def op(r: Record, actor: str, now: str, ttl: int) -> Change:
        deps = dependency_statuses(board, r.fields.get("depends_on", []))
        return claims.claim(r, by=actor, now=now, ttl=ttl, note=note, take_over=take_over,
                         force=force, dependency_status=deps)

    def show(rec: Record, ch: Change) -> str:
        took = (ch.meta or {}).get("took_over_from")
        extra = f", took over from {took['by']}" if took else ""
        return (f"{rec.id}: claimed by {rec.fields['claim']['by']}{extra} "
                f"(rev {rec.revision[:12]})")

    return mutate(task, by, expect, op, as_json, show, take_over=take_over, offline=offline)


def heartbeat_cmd(task: str, offline: bool, by: str | None, expect: str | None,
                  as_json: bool) -> int:
    """``ledgit heartbeat``: renew the actor's claim on TASK
    (:func:`ledgit.operations.claims.heartbeat`) and its remote lease unless ``offline``; exit
    6 if it is held by someone else or was lost, naming who ended it and how."""
    return mutate(task, by, expect,
                  lambda r, actor, now, ttl: claims.heartbeat(r, by=actor, now=now, ttl=ttl),
                  as_json, offline=offline, lease_op="heartbeat")


def release_cmd(task: str, note: str | None, by: str | None, expect: str | None,
                as_json: bool) -> int:
    """``ledgit release``: give up the actor's claim on TASK
    (:func:`ledgit.operations.transitions.release`;
    in_progress goes back to open)."""
    return mutate(task, by, expect,
                  lambda r, actor, now, ttl: claims.release(r, by=actor, now=now, ttl=ttl,
                                                         note=note),
                  as_json, lease_op="release")


def complete_cmd(task: str, response: str | None, outcome: str | None, reason: str | None,
                 by: str | None, expect: str | None, as_json: bool) -> int:
    """``ledgit complete``: TASK done with ``response``, the account of the work
    (:func:`ledgit.operations.transitions.complete`; required), and optionally a terminal
    outcome."""
    return mutate(task, by, expect,
                  lambda r, actor, now, ttl: transitions.complete(
                      r, by=actor, response=response, now=now, ttl=ttl, outcome=outcome,
                      reason=reason),
                  as_json)


def wait_cmd(task: str, on: str | None, by: str | None, expect: str | None,
             as_json: bool) -> int:
    """``ledgit wait``: TASK waiting on ``on`` (:func:`ledgit.operations.transitions.wait`;
    required); its claim
    is released."""
    return mutate(task, by, expect,
                  lambda r, actor, now, ttl: transitions.wait(r, by=actor, on=on, now=now, ttl=ttl),
                  as_json)


def monitor_cmd(task: str, signal: str | None, by: str | None, expect: str | None,
                as_json: bool) -> int:
    """``ledgit monitor``: TASK monitoring ``signal``
    (:func:`ledgit.operations.transitions.monitor`;
    required; manufactures no work)."""
    return mutate(task, by, expect,
                  lambda r, actor, now, ttl: transitions.monitor(
                       r, by=actor, signal=signal, now=now,
                                                         ttl=ttl),
                  as_json)


def park_cmd(task: str, reason: str | None, reuse: str | None, by: str | None,
             expect: str | None, as_json: bool) -> int:
    """``ledgit park``: TASK parked with ``reason`` (:func:`ledgit.operations.transitions.park`;
    required) and
    what is worth reusing."""
    return mutate(task, by, expect,
                  lambda r, actor, now, ttl: transitions.park(r, by=actor, reason=reason, now=now,
                                                      ttl=ttl, reuse=reuse),
                  as_json)


def drop_cmd(task: str, reason: str | None, reuse: str | None, kind: str, by: str | None,
             expect: str | None, as_json: bool) -> int:
    """``ledgit drop``: TASK dropped with ``reason`` (:func:`ledgit.operations.transitions.drop`;
    required) as
    an outcome of ``kind`` (drop, no_change, ...): a first-class negative result."""
    return mutate(task, by, expect,
                  lambda r, actor, now, ttl: transitions.drop(r, by=actor, reason=reason, now=now,
                                                      ttl=ttl, reuse=reuse, kind=kind),
                  as_json)


def archive_cmd(task: str, note: str | None, by: str | None, expect: str | None,
                as_json: bool) -> int:
    """``ledgit archive``: TASK archived (:func:`ledgit.operations.transitions.archive`; clears
    claim,
    waiting_on and next_action; hidden from list)."""
    return mutate(task, by, expect,
                  lambda r, actor, now, ttl: transitions.archive(r, by=actor, now=now, ttl=ttl,
                                                         note=note),
                  as_json)


def reopen_cmd(task: str, note: str | None, by: str | None, expect: str | None,
               as_json: bool) -> int:
    """``ledgit reopen``: TASK open again (:func:`ledgit.operations.transitions.reopen`; its
    earlier outcome is
    kept as a candidate item)."""
    return mutate(task, by, expect,
                  lambda r, actor, now, ttl: transitions.reopen(r, by=actor, now=now, note=note),
                  as_json)
