"""The lease step of one task write (DESIGN §4 "Remote leases", docs/leases.md).

:func:`ledgit.operations.writing.write_task` (the CLI and ``ledgit mcp`` alike) runs it under the
task's lock, after the pure transition said yes and before anything is written: ``claim``
takes the remote lease, ``heartbeat`` renews it, ``release`` deletes it and the other
lifecycle ends leave an end marker (:mod:`ledgit.operations.leases`). A refusal there writes
nothing; a local write that fails after the remote changed puts the remote back
(:meth:`LeaseStep.undo`).

Leases follow the claims they guard (issue 36): where the pure ``release`` or ``heartbeat``
refused because the task here no longer shows the actor's claim (a rewrite, a reset, a
checkout dropped it), the actor's own lease on the remote is still released or renewed
(:meth:`LeaseStep.without_claim`, :func:`lease_without_task` for a task whose file is gone).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ledgit.core.errors import NOT_FOUND, REMOTE, LedgitError
from ledgit.operations import leases
from ledgit.operations.leaserecord import LEASE_OPS, end_known
from ledgit.storage.cloneid import clone_id
from ledgit.storage.taskfiles import is_valid_id

if TYPE_CHECKING:
    from ledgit.core.change import Change
    from ledgit.core.record import Record
    from ledgit.operations.leaserecord import Lease
    from ledgit.operations.leases import Site
    from ledgit.storage.board import Board

# The ops that act on the actor's own lease even when no claim here guards it, and what
# they did to it (a change's meta "lease").
LEASE_DONE = {"release": "released", "heartbeat": "renewed"}


class LeaseStep:
    """The remote side of one write on ``board``. ``take_over``: ``claim --take-over`` (an
    expired lease may be replaced); ``offline``: ``claim/heartbeat --offline`` (local only,
    the claim stays unconfirmed until a heartbeat takes the lease)."""

    def __init__(self, board: Board, *, take_over: bool = False, offline: bool = False) -> None:
        self.board, self.take_over, self.offline = board, take_over, offline
        self._undo: tuple[Site, str, Lease | None, str | None] | None = None

    def apply(self, before: Record, change: Change, actor: str, ttl: int) -> None:
        """The remote half of ``change`` (of the task as read, ``before``) by ``actor``.
        Raises what :mod:`ledgit.operations.leases` raises (exit 6 held or lost, 69 remote, 5 busy);
        for the lifecycle ends an unreachable or refusing remote is a warning instead (the
        work happened; the lease runs out by itself)."""
        op = change.op
        if op not in LEASE_OPS:
            return
        site = leases.site_of(self.board)
        if site is None:
            return
        task = before.id
        if self.offline:
            if op == "claim":
                sys.stderr.write(f"ledgit: note: {task}: claimed offline: no lease on "
                                 f"{site.remote} (unconfirmed; ledgit heartbeat {task} takes "
                                 f"it)\n")
            return

        def known(lease: Lease) -> bool:
            return end_known(lease, self.board.read_history_text(task))

        clone = clone_id(self.board.git_dir_str)
        if op == "claim":
            written, _, old = leases.acquire(site, task, actor, ttl, before.revision,
                                             take_over=self.take_over, known=known,
                                             clone=clone)
            self._undo = (site, task, written, old)
        elif op == "heartbeat":
            leases.renew(site, task, actor, ttl, before.revision, clone=clone)
        else:
            try:
                ended, _, old = leases.finish(site, task, actor, op, before.revision, ttl,
                                              known=known)
            except LedgitError as exc:
                if exc.code != REMOTE:
                    raise
                sys.stderr.write(f"ledgit: warning: {exc.message.replace('; nothing written', '')}"
                                 f"; the {op} is written here, the lease runs out by itself\n")
                return
            self._undo = (site, task, ended, old)

    def without_claim(self, task: str, revision: str, op: str, actor: str,
                      ttl: int) -> str | None:
        """``release`` or ``heartbeat`` (``op``) of ``actor``'s own lease on ``task`` when
        the task here shows no claim of ``actor`` (the pure transition refused): the lease
        is deleted, or renewed (never taken anew), by compare-and-swap. ``revision``: the
        task's revision here (the renewed record's). Returns the line that says what was
        done (``T: no claim of alice here; her lease on origin released``), None when the
        board keeps no leases, ``offline``, or ``actor`` holds no lease there (the caller
        then raises the transition's refusal). Raises what :mod:`ledgit.operations.leases`
        raises (69 remote, 6 lost meanwhile, 5 busy)."""
        return _act_unguarded(self.board, task, revision, op, actor, ttl,
                              offline=self.offline)

    def undo(self) -> None:
        """Put the remote back as it was (best effort) after the local write failed."""
        if self._undo is not None:
            site, task, written, old = self._undo
            self._undo = None
            leases.restore(site, task, written, old)


def _act_unguarded(board: Board, task: str, revision: str | None, op: str, actor: str,
                   ttl: int, *, offline: bool = False) -> str | None:
    if op not in LEASE_DONE or offline:
        return None
    site = leases.site_of(board)
    try:
        if site is None or not leases.holds(site, task, actor):
            return None
    except LedgitError as exc:  # the remote cannot say: the transition's own refusal stands
        if exc.code != REMOTE:
            raise
        return None
    clone = clone_id(board.git_dir_str)
    where = f"{actor}'s lease on {site.remote}"
    if op == "release":
        leases.finish(site, task, actor, "release", revision or "", ttl,
                      known=lambda _lease: False)
        return f"{task}: no claim of {actor} here (a rewrite, reset or checkout dropped it); " \
               f"{where} released"
    lease = leases.renew(site, task, actor, ttl, revision or "", clone=clone, only_held=True)
    by = shlex.quote(actor)
    return (f"{task}: no claim of {actor} here (a rewrite, reset or checkout dropped it); "
            f"{where} renewed until {lease.expires} (ledgit claim {task} --by {by} claims "
            f"it here again; ledgit release {task} --by {by} ends the lease)")


def lease_without_task(board: Board, text: str, op: str, actor: str) -> str | None:
    """``release`` or ``heartbeat`` (``op``) of ``actor``'s own lease on the task ``text``
    names when no task file here holds it (a checkout of a branch without it): ``text``
    must be the full id. Returns the line that says what was done, None when there is
    nothing to act on (the caller raises its "no task" error). Raises as
    :meth:`LeaseStep.without_claim`."""
    if not is_valid_id(text):
        return None
    return _act_unguarded(board, text, None, op, actor, int(board.config.claim_ttl))


def lease_instead(board: Board, text: str, op: str | None, offline: bool, exc: LedgitError,
                  actor_of: Callable[[], str]) -> tuple[str, str, str]:
    """For a ``release`` or ``heartbeat`` (``op``) of the task ``text`` that failed with
    ``exc`` because no task file here holds it: the actor's own remote lease is released or
    renewed all the same (:func:`lease_without_task`; the CLI and the MCP claim tool alike).
    ``actor_of`` names the actor (called only then). Returns (op, actor, the line that says
    what was done); raises ``exc`` where it stands: another error, another op, ``offline``,
    or no lease of the actor's."""
    if exc.code != NOT_FOUND or op is None or offline:
        raise exc
    actor = actor_of()
    said = lease_without_task(board, text.strip(), op, actor)
    if said is None:
        raise exc
    return op, actor, said
