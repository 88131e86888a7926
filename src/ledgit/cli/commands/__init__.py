"""The task commands of the ``ledgit`` CLI (DESIGN §9), without click.

Each command is a :class:`ledgit.cli.argspec.Spec` row in :data:`ledgit.cli.commands.table.SPECS`
(its parameters and help, declared once) and a function that takes the parsed keywords,
calls the board (writes), the index (reads) or the pure transitions in
:mod:`ledgit.operations.transitions`,
prints, and returns an exit code. :mod:`ledgit.cli.main` builds the click commands from the same
table; ``python -m ledgit`` runs a row directly through :func:`ledgit.cli.argspec.parse` when the
command line is a plain one, which keeps click (~20 ms) out of every read and write
(DESIGN §10).

The modules, one idea each:

* :mod:`~ledgit.cli.commands.table`: the command table, its shared parameters and choices;
* :mod:`~ledgit.cli.commands.running`: running one row (its function, its board, its exit code);
* :mod:`~ledgit.cli.commands.output`: stdout and stderr, and a validator's findings;
* :mod:`~ledgit.operations.arguments`: what the arguments name (task ids, lists, the actor);
* :mod:`~ledgit.cli.commands.rows`: the rows of list/search/ready (filters, shape, text line);
* :mod:`~ledgit.cli.commands.reads`: get, list, search, ready, handoff (from the index);
* :mod:`~ledgit.cli.commands.file_reads`: item list, history (from one task's files);
* :mod:`~ledgit.cli.commands.writes`: the write path of one task; create, update, revert;
* :mod:`~ledgit.cli.commands.lifecycle`: claim, heartbeat, release and the status changes;
* :mod:`~ledgit.cli.commands.items`: state items: item add, accept, revise, writeback;
* :mod:`~ledgit.cli.commands.audit`: verify, and record a hand edit;
* :mod:`~ledgit.cli.commands.init`, :mod:`~ledgit.cli.commands.project`,
  :mod:`~ledgit.cli.commands.cache`: ``init``, ``project ...``, ``cache ...``.

A command's module is imported only when the command runs (the row names it as
``"module:function"``), so each module imports at its top what its commands need: a read
imports no write-path code (tests/test_cli.py checks it).
"""
