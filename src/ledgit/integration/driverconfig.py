"""How Git is told to merge task files with ledgit's driver (gitattributes(5)): the driver's
name in the config (``merge.ledgit.*``), the attribute lines that route task files and
histories to it, and the command line Git runs for it. ``ledgit install`` writes them into a
clone; ``ledgit forge update`` and ``ledgit sync`` give them to one git command with ``-c``
(:func:`ledgit.git.forge.driver_settings`). Kept apart from :mod:`ledgit.integration.install`
so that a sync does not load the installer (and the gate and the index it needs).
"""

from __future__ import annotations

from ledgit.integration.hookblock import ledgit_command

DRIVER = "ledgit"
DRIVER_NAME = "ledgit task merge"
ATTRIBUTE_LINES = (".ledgit/tasks/*.md merge=ledgit", ".ledgit/history/*.jsonl merge=ledgit")


def driver_command(command: str | None = None) -> str:
    """The ``merge.ledgit.driver`` value (gitattributes(5): Git substitutes %O %A %B %L %P)."""
    return f"{command or ledgit_command()} merge-driver %O %A %B %L %P"
