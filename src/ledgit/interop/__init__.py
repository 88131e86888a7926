"""Importers and exporters for foreign task formats, one module per format.

``beads`` (Beads ``issues.jsonl``), ``stateframe`` (``task.ledger.json``), ``yylo`` (YYLO
Ledger ``.juno_task``), ``backlog`` (Backlog.md ``backlog/``). What they share: ``incoming``
(what an importer hands over), ``sources`` (readers of foreign files), ``bulkimport`` (the
import loop) with ``plan``, ``genesis``, ``staging``, ``historywriter`` and ``reimport``;
``summary`` (its summary and progress bar); ``cli`` the click commands. Mappings:
docs/interop.md.

May import: ledgit.core, ledgit.git, ledgit.storage, ledgit.operations,
ledgit.integration.
"""
