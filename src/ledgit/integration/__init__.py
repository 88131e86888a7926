"""Git's paths (DESIGN §8, §12, §13): how the board's work moves through Git -- the checks of
a task's bytes (``taskcheck``, ``links``) that the pre-commit hook (``precommit``), the ref
guard (``refguard``) and the CI gate (``gate``) apply; ``resolve`` and ``restore`` after a
merge Git made without ledgit; ``install``, its hook blocks (``hookblock``) and ``doctor``;
``forge`` (a pull request brought up to date with the driver); and the hint about task
files Git left unmerged (``unmerged``).

One floor above :mod:`ledgit.operations` (a task's life: claims, leases, notes, items,
transitions): these import it, it never imports them.

May import: ledgit.core, ledgit.git, ledgit.storage, ledgit.operations.
"""
