"""The task commands of the ``ledgit`` CLI (DESIGN §9), without click.

Each command is a :class:`ledgit.argspec.Spec` row in :data:`ledgit.commands.table.SPECS`
(its parameters and help, declared once) and a function that takes the parsed keywords,
calls the board (writes), the index (reads) or the pure transitions in :mod:`ledgit.ops`,
prints, and returns an exit code. :mod:`ledgit.cli` builds the click commands from the same
table; ``python -m ledgit`` runs a row directly through :func:`ledgit.argspec.parse` when the
command line is a plain one, which keeps click (~20 ms) out of every read and write
(DESIGN §10).

The modules, one idea each:

* :mod:`~ledgit.commands.table`: the command table, its shared parameters and choices;
* :mod:`~ledgit.commands.running`: running one row (its function, its board, its exit code);
* :mod:`~ledgit.commands.output`: stdout and stderr, and a validator's findings;
* :mod:`~ledgit.commands.arguments`: what the arguments name (task ids, lists, the actor);
* :mod:`~ledgit.commands.rows`: the rows of list/search/ready (filters, shape, text line);
* :mod:`~ledgit.commands.reads`: get, list, search, ready, handoff (from the index);
* :mod:`~ledgit.commands.file_reads`: item list, history (from one task's files);
* :mod:`~ledgit.commands.writes`: the write path of one task; create, update, revert;
* :mod:`~ledgit.commands.lifecycle`: claim, heartbeat, release and the status changes;
* :mod:`~ledgit.commands.items`: state items: item add, accept, revise, writeback;
* :mod:`~ledgit.commands.audit`: verify, and record a hand edit;
* :mod:`~ledgit.commands.init`, :mod:`~ledgit.commands.project`,
  :mod:`~ledgit.commands.cache`: ``init``, ``project ...``, ``cache ...``.

A command's module is imported only when the command runs (the row names it as
``"module:function"``), so each module imports at its top what its commands need: a read
imports no write-path code (tests/test_cli.py checks it).
"""
