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

if TYPE_CHECKING:
    from collections.abc import Sequence


def lines_after_rewrite(cwd: str, old: str, new: str,
                        tasks: Sequence[tuple[str, str]]) -> list[str]:
    """Lines to print after ``old`` (the ref's tip before) gave way to ``new`` and events of
    ``tasks`` (``(board prefix, task id)`` pairs, the prefix ``""`` or ``"sub/"``) left the
    ref; ``cwd`` is where Git runs the hook. Each line is printed as it is, prefixed
    ``ledgit reference-transaction: note: ``. None yet: the leases' part is issue 36 item 2's."""
    del cwd, old, new, tasks
    return []
