"""Making a board (``ledgit init``, DESIGN §2): ``.ledgit/{config.yaml,tasks/,history/}`` and
the ``.gitignore`` lines for what a board holds that is never committed."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ledgit.core.errors import USAGE, LedgitError
from ledgit.storage.board import Board
from ledgit.storage.config import BoardConfig, render_config, valid_prefix
from ledgit.storage.locate import CONFIG_NAME, LEDGIT_DIR, LOCAL_DIR
from ledgit.storage.ownership import adopt_fd, make_dirs
from ledgit.storage.taskfiles import write_new

if TYPE_CHECKING:
    from pathlib import Path

BOARD_IGNORE = ("tasks/.*.md.tmp-*", f"{LOCAL_DIR}/")  # .ledgit/.gitignore (issue 13)


def init_board(path: Path, id_prefix: str = "T") -> Board:
    """Create ``.ledgit/{config.yaml,tasks/,history/}`` under ``path``; idempotent (an
    existing config is kept), and ``.ledgit/.gitignore`` (temp files, ``.local/``). Outside
    Git, ``.ledgit/.local/`` is also added to ``.gitignore``.
    Raises LedgitError exit 2 for an invalid prefix.
    """
    if not valid_prefix(id_prefix):
        raise LedgitError(f"invalid id prefix {id_prefix!r} (a letter, then up to 15 letters "
                          f"or digits)", USAGE)
    board = Board(path)
    config_path = board.dir / CONFIG_NAME
    try:
        # root in another user's repository: what it makes is theirs (issue 36)
        make_dirs(board.tasks_str)
        make_dirs(board.history_str)
        if not config_path.exists():
            write_new(config_path, render_config(BoardConfig(id_prefix=id_prefix)))
        write_board_ignore(board)
    except OSError as exc:
        raise LedgitError(f"cannot create a board in {board.root}: {exc.strerror or exc}",
                          USAGE) from None
    if board.git_dir is None:
        ignore = board.root / ".gitignore"
        entry = f"{LEDGIT_DIR}/{LOCAL_DIR}/"
        try:
            text = ignore.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        if entry not in text.splitlines():
            _append(str(ignore), text, f"{entry}\n")
    return Board(board.root)


def _append(path: str, text: str, lines: str) -> None:
    """Append ``lines`` to the file ``path`` whose text is ``text`` ("" when it does not
    exist: it is made, and given to the directory's owner when root makes it)."""
    sep = "" if not text or text.endswith("\n") else "\n"
    with open(path, "a", encoding="utf-8") as fh:
        if not text:
            adopt_fd(fh.fileno(), os.path.dirname(os.path.abspath(path)))
        fh.write(sep + lines)


def write_board_ignore(board: Board) -> bool:
    """Make ``.ledgit/.gitignore`` ignore what a board holds that is never committed: the
    temp files of interrupted writes and ``.local/``. True when it was changed."""
    path = os.path.join(board.dir_str, ".gitignore")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        text = ""
    missing = [line for line in BOARD_IGNORE if line not in text.splitlines()]
    if not missing:
        return False
    _append(path, text, "".join(f"{line}\n" for line in missing))
    return True
