"""What the faces run (DESIGN §4, §5, §8, §12): the task transitions (claims, lifecycle,
items, writeback, revert), the CI gate and the growth rule, ``resolve``, ``install`` (with
``hookblock``) and ``doctor``, boards across projects, and the pre-commit checks. Each takes a
board.

May import: ledgit.core, ledgit.git, ledgit.storage.
"""
