"""``ledgit mcp --print-config [--client NAME]``: the JSON an MCP client needs to start this
installation's server from anywhere (issue 34), as the hooks do (docs/git.md): the absolute
Python of this installation with :data:`ledgit.integration.hookblock.ENTRY_CODE`, never a
bare ``ledgit`` that only a shell with the virtual environment on its ``PATH`` finds.

The entry's ``env`` pins the board (``LEDGIT_ROOT``: the board of the working directory) and
gives the server a ``PATH`` of its own (the directory of the ``git`` found now, then the
system's default directories), because a client may start it with an empty or short one
(a desktop app's) and the server runs ``git``.

Clients (:data:`CLIENTS`) differ only in the wrapping:

- ``generic``: ``{"mcpServers": {"ledgit": ENTRY}}``, what Claude Desktop, Cursor, Windsurf
  and most clients read;
- ``claude``: Claude Code's project file ``.mcp.json``, the same with ``"type": "stdio"``;
- ``cursor``: ``.cursor/mcp.json``, the generic shape;
- ``vscode``: VS Code's ``.vscode/mcp.json``, ``{"servers": {"ledgit": ENTRY}}`` with
  ``"type": "stdio"``;
- ``entry``: the entry alone, for ``claude mcp add-json ledgit "$(ledgit mcp --print-config
  --client entry)"`` or to paste into a file that lists other servers.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from ledgit.core.errors import USAGE, LedgitError
from ledgit.integration.hookblock import ENTRY_CODE
from ledgit.operations.extrahint import install_hint
from ledgit.storage.actor import checked_actor
from ledgit.storage.board import find_board

SERVER_NAME = "ledgit"
CLIENTS = ("generic", "claude", "cursor", "vscode", "entry")
TYPED = ("claude", "vscode", "entry")  # clients whose entry says "type": "stdio"


def server_path() -> str:
    """The ``PATH`` the server is given: the directory of the ``git`` on this ``PATH``, then
    :data:`os.defpath`'s directories, each once."""
    dirs: list[str] = []
    git = shutil.which("git")
    if git:
        dirs.append(os.path.dirname(os.path.abspath(git)))
    dirs += [d for d in os.defpath.split(os.pathsep) if d]
    return os.pathsep.join(dict.fromkeys(d for d in dirs if d))


def server_entry(root: Path, typed: bool = False, actor: str | None = None) -> dict[str, Any]:
    """One server's entry: ``{"type"?, "command", "args", "env": {"LEDGIT_ROOT", "PATH",
    "LEDGIT_ACTOR"?}}`` starting this installation's ``ledgit mcp`` on the board at ``root``;
    ``actor``: the agent's name, for writes that name nobody (``by``)."""
    entry: dict[str, Any] = {"type": "stdio"} if typed else {}
    env = {"LEDGIT_ROOT": str(root), "PATH": server_path()}
    if actor is not None:
        env["LEDGIT_ACTOR"] = actor
    entry.update(command=sys.executable, args=["-c", ENTRY_CODE, "mcp"], env=env)
    return entry


def client_config(client: str, cwd: Path | None = None,
                  actor: str | None = None) -> dict[str, Any]:
    """The JSON for ``client`` (one of :data:`CLIENTS`) serving the board of ``cwd`` (default:
    the working directory; ``LEDGIT_ROOT`` pins it), as ``actor`` when given (its
    ``LEDGIT_ACTOR``: each agent needs its own name, docs/leases.md). Raises LedgitError exit
    2 for an unknown client, a name that is not one line, or without the MCP SDK (the ``mcp``
    extra: a config that cannot start is no config), exit 4 when there is no board."""
    if actor is not None:
        actor = checked_actor(actor.strip())
    if client not in CLIENTS:
        raise LedgitError(f"--client {client!r}: one of {', '.join(CLIENTS)}", USAGE)
    if importlib.util.find_spec("mcp") is None:
        raise LedgitError(f"ledgit mcp needs the MCP SDK: {install_hint('mcp')}", USAGE)
    root = find_board(cwd).root.resolve()
    entry = server_entry(root, typed=client in TYPED, actor=actor)
    if client == "entry":
        return entry
    key = "servers" if client == "vscode" else "mcpServers"
    return {key: {SERVER_NAME: entry}}
