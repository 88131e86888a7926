"""Where the board is, from the file system alone (DESIGN §2): no Git process, no pathlib.

Shared by :mod:`ledgit.storage.board` (``find_board``, ``Board.private_str``) and the pre-commit
hook (:mod:`ledgit.hooks.dispatch`), which must find the board before importing anything else
(import cost is a budget, DESIGN §10).
"""

import os
import stat

from ledgit.core.revision import sha256_hex

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
    found = git_location(root)
    return None if found is None else found[1]


def git_location(root: str) -> "tuple[str, str] | None":
    """``(work tree top, git dir)`` for ``root``: the nearest directory upward holding a
    ``.git`` (directory, or ``gitdir:`` file) and the git dir it names; None outside Git."""
    for directory in upward(os.path.abspath(root)):
        dotgit = os.path.join(directory, ".git")
        try:
            mode = os.stat(dotgit).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode):
            return directory, dotgit
        try:
            with open(dotgit, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            continue
        if head.startswith(b"gitdir:"):
            target = os.fsdecode(head[7:].strip())
            return directory, os.path.normpath(os.path.join(directory, target))
    return None


BOARDS_DIR = "boards"  # the private dirs of boards below the work tree top


def private_dir(root: str, git_dir: "str | None") -> str:
    """The board's private directory: ``<git dir>/ledgit`` (= ``git rev-parse --git-path
    ledgit``, per worktree, never committed) for the board at the work tree top, and
    ``<git dir>/ledgit/boards/<path>`` for a board in a subdirectory (``ledgit init sub``:
    ``boards/sub``; ``/`` in the path as ``%2F``, ``%`` as ``%25``), so that each board
    has its own index; ``<root>/.ledgit/.local`` outside Git (``git_dir`` None)."""
    if git_dir is None:
        return os.path.join(root, LEDGIT_DIR, LOCAL_DIR)
    base = os.path.join(git_dir, "ledgit")
    found = git_location(root)
    if found is None:
        return base
    rel = os.path.relpath(os.path.abspath(root), found[0])
    if rel == os.curdir or rel.startswith(os.pardir):
        return base
    key = rel.replace(os.sep, "/").replace("%", "%25").replace("/", "%2F")
    return os.path.join(base, BOARDS_DIR, key)


CACHE_ENV = "XDG_CACHE_HOME"


def user_cache_dir(private: str) -> "str | None":
    """Where this user keeps the index of a worktree whose private dir ``private`` it may
    not write (a read-only board, a private dir another user owns; issue 13):
    ``$XDG_CACHE_HOME/ledgit/<key>`` (default ``~/.cache``), the key a hash of the private
    dir's path, so each worktree has its own. None without a home (``HOME`` unset)."""
    base = os.environ.get(CACHE_ENV)
    if not base or not os.path.isabs(base):
        home = os.environ.get("HOME")  # not the password database: no HOME, no cache
        if not home or not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    key = sha256_hex(os.fsencode(os.path.abspath(private)))[:20]
    return os.path.join(base, "ledgit", key)
