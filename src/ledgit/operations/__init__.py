"""A task's life (DESIGN §4, §5): the transitions (claims, lifecycle, items, writeback,
revert), notes, remote leases, boards across projects, and the rows and arguments the faces
share. Each takes a board. How the board's work moves through Git is one floor up, in
:mod:`ledgit.integration`.

May import: ledgit.core, ledgit.git, ledgit.storage.
"""
