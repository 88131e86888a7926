"""``ledgit cache rebuild|status``: the worktree's derived index (DESIGN §1; docs/watch.md):
rebuilt from the task files, or where it is and what it holds.
"""

from __future__ import annotations

from ledgit.cli.commands.output import err, out, out_json
from ledgit.cli.commands.running import command_board
from ledgit.core.errors import IO_ERROR, OK, USAGE, LedgitError
from ledgit.storage.index import Index
from ledgit.storage.indexfiles import private_dir_refusal
from ledgit.storage.locate import user_cache_dir


def cache_rebuild_cmd(as_json: bool) -> int:
    """``ledgit cache rebuild``: the index rebuilt from the task files (a warning for each
    file it skips); prints its status. Returns 0; LedgitError exit 2 (the private dir is
    refused) or 74 (it could not take the index) when the index could only be built in
    memory."""
    board = command_board()
    index = Index.open(board)
    index.rebuild()
    status = index.status()
    for path, message in index.errors():
        err(f"ledgit: warning: skipped {path}: {message}")
    if status.get("path") == ":memory:":
        why = private_dir_refusal(board)
        code = USAGE
        if why is None:
            why, code = (f"{board.private_str} could not take it (no space left on device, "
                         f"or an I/O error)"), IO_ERROR
        cache = user_cache_dir(board.private_str)
        other = ("there is no user cache (HOME and XDG_CACHE_HOME are unset)" if cache is None
                 else f"neither could {cache}")
        raise LedgitError(f"could not keep the index: {why}; {other}; reads build it in "
                          f"memory", code)
    if as_json:
        out_json(status)
    else:
        out(f"rebuilt index: {status.get('tasks', '?')} task(s) in {status.get('path')}")
    return OK


def cache_status_cmd(as_json: bool) -> int:
    """``ledgit cache status``: the index's status (path, tasks, ...), one ``key: value``
    line each, or JSON. Returns 0."""
    status = Index.open(command_board()).status()
    if as_json:
        out_json(status)
    else:
        for key, value in status.items():
            out(f"{key}: {value}")
    return OK
