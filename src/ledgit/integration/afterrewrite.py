"""What to say after a branch move lets events leave it, beyond the events themselves (issue
36 item 2: a rewrite that drops a claim says the remote lease is still held, and how to end
it).

The ref guard (:mod:`ledgit.integration.refguard`) calls :func:`lines_after_rewrite` wherever
it lets such a move stand: a deliberate rewrite (``LEDGIT_ALLOW_REWRITE=1``), and a move Git
made after rewriting the index and work tree (``reset --hard``, ``checkout -B``...), which a
refusal would leave half-done. It runs in the ``reference-transaction`` hook, before the
transaction commits: whatever it imports beyond this module belongs inside the function (the
hook's start-up is budgeted, docs/git.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledgit.core.errors import LedgitError

if TYPE_CHECKING:
    from collections.abc import Sequence


def lines_after_rewrite(cwd: str, old: str, new: str,
                        tasks: Sequence[tuple[str, str]]) -> list[str]:
    """Lines to print after ``old`` (the ref's tip before) gave way to ``new`` and events of
    ``tasks`` (``(board prefix, task id)`` pairs, the prefix ``""`` or ``"sub/"``) left the
    ref; ``cwd`` is where Git runs the hook (the work tree's top). Each line is printed as it
    is, prefixed ``ledgit reference-transaction: note: ``: for each such task whose claim
    the move dropped while this clone still holds its lease on the remote, that the lease is
    held and the command that ends it (:func:`ledgit.operations.leases.held_leases_note`;
    no network: the clone's mirror of its leases)."""
    del old, new
    if not tasks:
        return []
    # Loaded only when events left a branch and the move stands, which a commit, a pull or
    # a checkout never meets.
    from ledgit.operations import leases  # lazy: 23 ms (-X importtime, load 10) the guard skips

    try:
        return leases.held_leases_after_move(cwd, tasks)
    except (LedgitError, OSError) as exc:  # a note must never fail the Git command
        return [f"the claims' leases could not be read ({exc})"]
