"""``ledgit init``: a board (``.ledgit/``) in a directory (DESIGN §2)."""

from __future__ import annotations

import os
from pathlib import Path

from ledgit.cli.commands.output import out, out_json
from ledgit.core.errors import OK
from ledgit.git import repository
from ledgit.storage.boardinit import init_board


def init_cmd(path: str | None, id_prefix: str, as_json: bool) -> int:
    """``ledgit init``: create a board in ``path`` (default: the top of the Git work tree,
    else the current directory; :func:`ledgit.storage.boardinit.init_board`, idempotent) with task
    ids
    ``ID_PREFIX-...``; prints where (JSON: ``{root, dir}``). Returns 0."""
    if path is None:
        top = repository.toplevel(Path.cwd())
        path = str(top) if top is not None else os.getcwd()
    board = init_board(Path(path), id_prefix=id_prefix)
    if as_json:
        out_json({"root": str(board.root), "dir": str(board.dir)})
    else:
        out(f"initialised ledgit board in {board.dir}")
    return OK
