"""The lease step of one task write (DESIGN §4 "Remote leases", docs/leases.md).

:func:`ledgit.operations.writing.write_task` (the CLI and ``ledgit mcp`` alike) runs it under the
task's lock, after the pure transition said yes and before anything is written: ``claim``
takes the remote lease, ``heartbeat`` renews it, ``release`` deletes it and the other
lifecycle ends leave an end marker (:mod:`ledgit.operations.leases`). A refusal there writes
nothing; a local write that fails after the remote changed puts the remote back
(:meth:`LeaseStep.undo`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ledgit.core.errors import REMOTE, LedgitError
from ledgit.operations import leases

if TYPE_CHECKING:
    from ledgit.core.change import Change
    from ledgit.core.record import Record
    from ledgit.operations.leases import Lease, Site
    from ledgit.storage.board import Board


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
        if op not in leases.LEASE_OPS:
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
            return leases.end_known(lease, self.board.read_history_text(task))

        if op == "claim":
            written, _, old = leases.acquire(site, task, actor, ttl, before.revision,
                                             take_over=self.take_over, known=known)
            self._undo = (site, task, written, old)
        elif op == "heartbeat":
            leases.renew(site, task, actor, ttl, before.revision)
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

    def undo(self) -> None:
        """Put the remote back as it was (best effort) after the local write failed."""
        if self._undo is not None:
            site, task, written, old = self._undo
            self._undo = None
            leases.restore(site, task, written, old)
