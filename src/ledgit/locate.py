"""Where the board is, from the file system alone (DESIGN §2): no Git process, no pathlib.

Shared by :mod:`ledgit.board` (``find_board``, ``Board.private_str``) and the pre-commit
hook (:mod:`ledgit.hooks`), which must find the board before importing anything else
(import cost is a budget, DESIGN §10).
"""

import os
import stat

LEDGIT_DIR = ".ledgit"
TASKS_DIR = "tasks"
CONFIG_NAME = "config.yaml"
LOCAL_DIR = ".local"  # the private dir outside Git
ROOT_ENV = "LEDGIT_ROOT"


def find_root(cwd: "str | None" = None) -> "tuple[str | None, str | None]":
    """``(root, pinned)``: the board root for ``cwd`` (default: the working directory) or
    None, and the ``LEDGIT_ROOT`` value when it is set (it pins the root: a path to the
    root or to its ``.ledgit``; None when it names no board). Otherwise the root is the
    nearest directory upward holding ``.ledgit/`` with ``tasks/`` or ``config.yaml``.
    Raises OSError when the working directory is gone."""
    pinned = os.environ.get(ROOT_ENV)
    if pinned:
        path = os.path.abspath(pinned)
        if os.path.basename(path) == LEDGIT_DIR and is_board_dir(path):
            path = os.path.dirname(path)
        if not is_board_dir(os.path.join(path, LEDGIT_DIR)):
            return None, pinned
        return path, pinned
    for directory in upward(os.path.abspath(cwd if cwd is not None else os.getcwd())):
        if is_board_dir(os.path.join(directory, LEDGIT_DIR)):
            return directory, None
    return None, None


def is_board_dir(path: str) -> bool:
    """``path`` (a ``.ledgit`` directory) holds ``tasks/`` or ``config.yaml``."""
    return os.path.isdir(os.path.join(path, TASKS_DIR)) \
        or os.path.isfile(os.path.join(path, CONFIG_NAME))


def upward(start: str) -> "list[str]":
    """``start`` (absolute) and each parent up to the file system root."""
    found = [start]
    while True:
        parent = os.path.dirname(found[-1])
        if parent == found[-1]:
            return found
        found.append(parent)


def git_dir_for(root: str) -> "str | None":
    """The per-worktree git dir of the repository containing ``root``, from the file system:
    ``<dir>/.git`` as a directory, or a ``gitdir:`` file (linked worktree, submodule)."""
    for directory in upward(os.path.abspath(root)):
        dotgit = os.path.join(directory, ".git")
        try:
            mode = os.stat(dotgit).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            return dotgit
        try:
            with open(dotgit, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            continue
        if head.startswith(b"gitdir:"):
            target = os.fsdecode(head[7:].strip())
            return os.path.normpath(os.path.join(directory, target))
    return None


def private_dir(root: str, git_dir: "str | None") -> str:
    """The board's private directory: ``<git dir>/ledgit`` (= ``git rev-parse --git-path
    ledgit``, per worktree, never committed), or ``<root>/.ledgit/.local`` outside Git
    (``git_dir`` None)."""
    return os.path.join(git_dir, "ledgit") if git_dir is not None \
        else os.path.join(root, LEDGIT_DIR, LOCAL_DIR)
