"""Importers and exporters for foreign task formats, one module per format.

``beads`` (Beads ``issues.jsonl``), ``stateframe`` (``task.ledger.json``), ``yylo`` (YYLO
Ledger ``.juno_task``), ``backlog`` (Backlog.md ``backlog/``); ``common`` holds the bulk
import loop, its summary and progress bar; ``cli`` the click commands. Mappings: docs/interop.md.
"""
