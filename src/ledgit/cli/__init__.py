"""The command line (DESIGN §9): the command table read by two parsers (click for help and
usage errors, :mod:`ledgit.cli.argspec` for the hot path), one module per group of commands
in :mod:`ledgit.cli.commands`, the Git-facing commands, ``check``, ``demo`` and ``help``.
It is the face the other faces are started from (``ledgit mcp``, ``ledgit board``,
``ledgit import``).

May import: ledgit.core, ledgit.git, ledgit.storage, ledgit.operations, ledgit.integration,
ledgit.interop,
ledgit.boardpage, ledgit.mcp, ledgit.hooks.
"""
