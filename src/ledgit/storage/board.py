"""A board on disk (DESIGN §2): finding it, its places and task ids, reading its tasks.

Layout (DESIGN §2)::

    <root>/.ledgit/config.yaml          settings (ledgit.storage.config)
    <root>/.ledgit/tasks/<ID>.md        canonical records (ledgit.core.record)
    <root>/.ledgit/history/<ID>.jsonl   hash-linked events (ledgit.core.history)
    <git dir>/ledgit/                   per worktree: index.sqlite3, locks/
    <root>/.ledgit/.local/              the same, outside a Git repository (git-ignored)

:class:`Board` is the place every command holds: it knows where things are and reads them.
What is done to a board is done by the modules of one idea each, which take it as their first
argument: the write path (:mod:`ledgit.storage.writepath`, under the task's lock from
:meth:`Board.lock`), checking (:mod:`ledgit.storage.boardcheck`), repair
(:mod:`ledgit.storage.boardrepair`), the index (:mod:`ledgit.storage.index`). The files' names,
the stat scan and atomic replacement are :mod:`ledgit.storage.taskfiles`; making a board is
:mod:`ledgit.storage.boardinit`.
"""

from __future__ import annotations

import os
import stat
import sys
from functools import cached_property
from pathlib import Path

from ledgit.core.errors import NOT_FOUND, USAGE, LedgitError, located
from ledgit.core.record import Record, parse_record
from ledgit.storage.boardlinks import refuse_escaping_link
from ledgit.storage.config import BoardConfig, load_config
from ledgit.storage.locate import (
    CONFIG_NAME,
    LEDGIT_DIR,
    ROOT_ENV,
    TASKS_DIR,
    find_root,
    git_dir_for,
    private_dir,
)
from ledgit.storage.safefiles import BOARD_FILE_LIMIT, read_board_file
from ledgit.storage.taskfiles import (
    HISTORY_DIR,
    HISTORY_SUFFIX,
    TASK_SUFFIX,
    checked_id,
    is_valid_id,
    stems,
)
from ledgit.storage.tasklock import TaskLock

DEFAULT_LOCK_TIMEOUT = 30.0  # seconds; 8 writers x 50 writes on one task wait < 3 s here
# CONFIG_NAME (from ledgit.storage.locate) = config.CONFIG_NAME: finding a board (the pre-commit
# hook, the merge driver) does not import ledgit.storage.config (its dataclass costs ~5 ms of
# imports); tests check that they agree.


class Board:
    """A ledgit board rooted at ``root`` (the directory that contains ``.ledgit/``).

    Cheap to construct: the config and the private dir are computed on first use. The
    directories are :class:`pathlib.Path` values (``root``, ``dir``, ``tasks_dir``,
    ``history_dir``, ``private_dir``, ``git_dir``), made on first use; the commands' hot paths
    use the same places as strings (``root_str``, ``tasks_str``, ``history_str``,
    ``private_str``, :meth:`task_file`, :meth:`history_file`), so that a read or a write does
    not import pathlib (~2.5 ms, DESIGN §10).
    """

    # Why this board refuses writes (exit 2), e.g. a snapshot of another board at a Git ref
    # (ledgit.operations.projects); None: writable.
    read_only: str | None = None

    def __init__(self, root: Path | str, config: BoardConfig | None = None) -> None:
        self.root_str = os.path.abspath(root)
        refuse_escaping_link(self.root_str)  # issue 26: a cloned link never leads out
        self.dir_str = os.path.join(self.root_str, LEDGIT_DIR)
        self.tasks_str = os.path.join(self.dir_str, TASKS_DIR)
        self.history_str = os.path.join(self.dir_str, HISTORY_DIR)
        self.last_locks: dict[str, TaskLock] = {}  # the last lock made per task (temp notes)
        if config is not None:
            self.__dict__["config"] = config

    def __repr__(self) -> str:
        return f"Board({self.root_str!r})"

    @cached_property
    def root(self) -> Path:
        """The directory holding ``.ledgit/``."""
        return Path(self.root_str)

    @cached_property
    def dir(self) -> Path:
        """``<root>/.ledgit``."""
        return self.root / LEDGIT_DIR

    @cached_property
    def tasks_dir(self) -> Path:
        """``<root>/.ledgit/tasks``."""
        return self.dir / TASKS_DIR

    @cached_property
    def history_dir(self) -> Path:
        """``<root>/.ledgit/history``."""
        return self.dir / HISTORY_DIR

    @cached_property
    def config(self) -> BoardConfig:
        """The board's settings (``.ledgit/config.yaml``; defaults when missing)."""
        return load_config(os.path.join(self.dir_str, CONFIG_NAME))

    @cached_property
    def git_dir(self) -> Path | None:
        """The per-worktree Git directory holding ``root``; None outside Git."""
        found = self.git_dir_str
        return None if found is None else Path(found)

    @cached_property
    def git_dir_str(self) -> str | None:
        """:attr:`git_dir` as a string."""
        return git_dir_for(self.root_str)

    @cached_property
    def private_dir(self) -> Path:
        """``$(git rev-parse --git-path ledgit)``: per worktree, never committed (DESIGN §2).

        Outside a Git repository: ``.ledgit/.local/``. Not created here.
        """
        return Path(self.private_str)

    @cached_property
    def private_str(self) -> str:
        """:attr:`private_dir` as a string."""
        return private_dir(self.root_str, self.git_dir_str)

    # ------------------------------------------------------------------ paths and ids

    def task_path(self, task_id: str) -> Path:
        """``.ledgit/tasks/<id>.md``. Raises LedgitError (exit 2) for an invalid id."""
        return self.tasks_dir / (checked_id(task_id) + TASK_SUFFIX)

    def history_path(self, task_id: str) -> Path:
        """``.ledgit/history/<id>.jsonl``. Raises LedgitError (exit 2) for an invalid id."""
        return self.history_dir / (checked_id(task_id) + HISTORY_SUFFIX)

    def task_file(self, task_id: str) -> str:
        """:meth:`task_path` as a string."""
        return os.path.join(self.tasks_str, checked_id(task_id) + TASK_SUFFIX)

    def history_file(self, task_id: str) -> str:
        """:meth:`history_path` as a string."""
        return os.path.join(self.history_str, checked_id(task_id) + HISTORY_SUFFIX)

    def rel(self, path: Path | str) -> str:
        """``path`` relative to the board root, POSIX style (for messages and the index);
        a path outside the root as it is."""
        text = os.fspath(path)
        root = self.root_str.rstrip(os.sep) + os.sep
        if text.startswith(root) and ".." not in text[len(root):].split(os.sep):
            rest = os.path.normpath(text[len(root):])
            return "." if rest == "." else rest.replace(os.sep, "/")
        return "." if text == self.root_str else text

    def list_ids(self) -> list[str]:
        """Ids of every task file (stems of ``tasks/*.md``, dot-files excluded), sorted."""
        return sorted(stems(self.tasks_str, TASK_SUFFIX))

    def exists(self, task_id: str) -> bool:
        """True when the task file exists (case-exact, also on case-insensitive systems)."""
        if not is_valid_id(task_id) or not os.path.isfile(self.task_file(task_id)):
            return False
        if sys.platform in ("darwin", "win32"):
            return task_id + TASK_SUFFIX in os.listdir(self.tasks_str)
        return True

    def resolve_id(self, text: str) -> str:
        """The task id ``text`` names: the exact id, or a unique prefix of an id or of its
        random part (``k3v9`` finds ``T-k3v9q2mz7a``; prefixes ignore case), like short Git
        hashes (DESIGN §2).

        Raises LedgitError exit 4: no match, or ambiguous (the message lists the candidates).
        """
        text = text.strip()
        if not text:
            raise LedgitError("no task id given", USAGE)
        found = self.matching_ids(text)
        if len(found) == 1:
            return found[0]
        if not found:
            raise LedgitError(f"no task matches {text!r}", NOT_FOUND)
        shown = ", ".join(found[:10]) + (f", ... ({len(found)} in all)" if len(found) > 10
                                         else "")
        raise LedgitError(f"{text!r} is ambiguous: {shown}", NOT_FOUND)

    def matching_ids(self, text: str) -> list[str]:
        """The ids ``text`` could name (:meth:`resolve_id`'s rule): ``[text]`` when it is a
        task's id, else every id it is a prefix of (or of its random part), in listing
        order; empty when no task here matches."""
        if self.exists(text):
            return [text]
        want = text.lower()
        return [tid for tid in self.list_ids()
                if tid.lower().startswith(want) or tid.lower().partition("-")[2].startswith(want)]

    # ------------------------------------------------------------------ reading

    def read(self, task_id: str) -> Record:
        """Parse the task file (the truth, never the index).

        Raises LedgitError: missing → exit 4; malformed, or its ``id`` differs from the file
        name → exit 2 with ``path:line: field: message``.
        """
        path = self.task_file(task_id)
        rel = self.rel(path)
        try:
            data = read_board_file(path, BOARD_FILE_LIMIT)
        except FileNotFoundError:
            raise LedgitError(f"no task {task_id} ({rel})", NOT_FOUND) from None
        except OSError as exc:
            raise LedgitError(located(f"cannot read: {exc.strerror}", rel), USAGE) from None
        return self.parse(task_id, data, rel)

    def parse(self, task_id: str, data: bytes, rel: str) -> Record:
        """:meth:`read` of bytes already read from the file at ``rel`` (raises as it does)."""
        record = parse_record(data, rel)
        if record.id != task_id:
            raise LedgitError(located(f"id {record.id!r} does not match the file name", rel,
                                      _line_of_key(data, "id"), "id"), USAGE)
        return record

    def read_history_text(self, task_id: str) -> str | None:
        """The history file's text, or None when it does not exist."""
        try:
            data = read_board_file(self.history_file(task_id), BOARD_FILE_LIMIT)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise LedgitError(located(f"cannot read: {exc.strerror}",
                                      self.rel(self.history_file(task_id))), USAGE) from None
        return data.decode("utf-8", errors="replace")

    # ------------------------------------------------------------------ locking

    def lock(self, task_id: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> TaskLock:
        """The task's advisory lock (``<private dir>/locks/<id>.lock``, flock), to hold with
        ``with``.

        Waits up to ``timeout`` seconds; then raises LedgitError exit 5 (busy). Compatible
        with ``filelock.FileLock`` on the same path (both use flock on a file kept in place).
        Raises LedgitError exit 2 on a read-only board (every write takes this lock first).
        """
        if self.read_only is not None:
            raise LedgitError(self.read_only, USAGE)
        path = os.path.join(self.private_str, "locks", f"{checked_id(task_id)}.lock")
        lock = TaskLock(path, timeout, f"{task_id} is busy", self.tasks_str)
        self.last_locks[task_id] = lock
        return lock


# ---------------------------------------------------------------------- finding a board


def find_board(cwd: Path | None = None) -> Board:
    """The board for ``cwd`` (default: the working directory): ``LEDGIT_ROOT`` pins it;
    otherwise the nearest directory upward holding ``.ledgit/`` with ``tasks/`` or
    ``config.yaml`` (DESIGN §2). Creates nothing.

    Raises LedgitError exit 4 when there is none.
    """
    try:
        root, pinned = find_root(None if cwd is None else str(cwd))
    except FileNotFoundError:  # os.getcwd() of a removed directory
        raise LedgitError("the working directory no longer exists (cd to a board)",
                          NOT_FOUND) from None
    if root is not None:
        return Board(root)
    if pinned:
        raise LedgitError(f"{ROOT_ENV}={pinned}: no ledgit board there (run: ledgit init)",
                          NOT_FOUND)
    start = os.path.abspath(cwd if cwd is not None else os.getcwd())
    raise LedgitError(f"no ledgit board in {start} or any parent (run: ledgit init)",
                      NOT_FOUND)


def _line_of_key(data: bytes, key: str) -> int | None:
    for n, line in enumerate(data.split(b"\n"), start=1):
        if line.startswith(key.encode() + b":"):
            return n
    return None


def refuse_link(board: Board, path: Path | str) -> None:
    """Writes never go through a symbolic link (issue 7): a task file or history that is
    one -- wherever it points -- is refused with exit 2 before anything is written, and the
    link is left as it is."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return
    if stat.S_ISLNK(mode):
        raise LedgitError(located("is a symbolic link; ledgit does not write through links "
                                  "(replace it with the file itself)", board.rel(path)), USAGE)
