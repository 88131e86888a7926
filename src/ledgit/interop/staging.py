"""The files of a bulk import, staged and swapped in (docs/interop.md, "Crash safety"): each
created whole in ``.ledgit/.import-<pid>-<rand>/`` (:func:`create_all`), then moved into the
board by renaming whole directories (:func:`swap_in`) or file by file (:func:`move_each`),
histories first; one ``os.sync()`` (:class:`Flush`) as the durability point; the staging of
an import that died removed by the next (:func:`remove_stale_staging`)."""

from __future__ import annotations

import fcntl
import os
import shutil
import stat
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ledgit.storage.board import refuse_link
from ledgit.storage.locate import TASKS_DIR
from ledgit.storage.ownership import adopt_path, heir, make_dirs
from ledgit.storage.taskfiles import (
    HISTORY_DIR,
    HISTORY_SUFFIX,
    TASK_SUFFIX,
    file_mode,
    file_stat,
    write_all,
)

if TYPE_CHECKING:
    from ledgit.interop.summary import Progress
    from ledgit.storage.board import Board


Stat = tuple[int, int, int]  # (mtime_ns, size, inode), as the index keeps it


STAGING_PREFIX = ".import-"  # .ledgit/.import-<pid>-<random>/{history,tasks}


class Flush:
    """The one durability point of a bulk import: ``os.sync()`` in a background thread (it
    waits on the disk, not the CPU, so the index is built meanwhile); :meth:`wait` returns
    once everything written before it started is on disk."""

    def __init__(self, start: bool) -> None:
        self._thread = None
        if start:
            self._thread = threading.Thread(target=_sync, name="ledgit-import-flush",
                                            daemon=True)
            self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()


def _sync() -> None:
    """Flush every written file to disk in one call (the bulk replacement for per-file
    fsync); a no-op where the platform has none."""
    sync: Callable[[], None] | None = getattr(os, "sync", None)
    if sync is not None:
        sync()


#: Files are created in chunks of CHUNK; a chunk that took more than SLOW_CREATE seconds of
#: CPU time a file (the kernel's, mostly; ~20 us is usual) moves the work to a new staged
#: directory, at most MOVES times per directory (see create_all).
CHUNK, SLOW_CREATE, MOVES = 64, 40e-6, 4


def create_all(staging: str, directory: str,
                files: Sequence[tuple[str, bytes | memoryview]],
                progress: Progress | None, stats: list[Stat] | None) -> str:
    """Create ``files`` ((name, bytes) pairs) in ``directory`` (:func:`_create`), appending
    each one's stat to ``stats`` when given; each counts as half a task on ``progress``.
    Returns the directory that holds them all.

    When a chunk of :data:`CHUNK` files costs more than :data:`SLOW_CREATE` of CPU time a
    file, the files created so far are renamed into a new directory (:func:`_staged_dir`,
    which the file system places elsewhere) and the rest are created there; the old one
    stays, empty, until the staging directory is removed. Why: ext4 without a journal skips
    every inode freed in the last minutes when it allocates one, scanning them all from the
    start of the block group on each file it creates (docs/interop.md, "Speed"): in a group
    emptied by a recent mass deletion a creation costs 250-700 us instead of 20, from the
    first file or only once the group's other free inodes are used up. A rename allocates
    no inode."""
    moves = 0
    want = stats is not None
    prefix = f"{directory}{os.sep}"
    owner = heir(directory)  # root importing into another user's board: theirs (issue 36)
    started = time.process_time()
    for i, (name, data) in enumerate(files, 1):
        st = _create(prefix + name, data, want, owner)
        if stats is not None and st is not None:
            stats.append(st)
        if progress is not None:
            progress.advance(0.5)
        if not i % CHUNK:
            now = time.process_time()
            if now - started > CHUNK * SLOW_CREATE and moves < MOVES:
                moves += 1
                directory = _move_files(staging, directory, [n for n, _ in files[:i]])
                prefix = f"{directory}{os.sep}"
                if stats is not None:  # a rename changes the ctime
                    stats[:] = [file_stat(os.stat(prefix + n)) for n, _ in files[:i]]
                now = time.process_time()
            started = now
    return directory


def _move_files(staging: str, directory: str, names: Sequence[str]) -> str:
    """A new staged directory beside ``directory`` (same base name) holding ``names``,
    renamed from ``directory``."""
    new = _staged_dir(staging, os.path.basename(directory).rsplit("-", 1)[0])
    src, dst = f"{directory}{os.sep}", f"{new}{os.sep}"
    for name in names:
        os.rename(src + name, dst + name)
    return new


def _create(path: str, data: bytes | memoryview, want_stat: bool = False,
            owner: tuple[int, int] | None = None) -> Stat | None:
    """Create ``path`` (it must not exist: never through a link) holding ``data``, given to
    ``owner`` (uid, gid) when given. With ``want_stat``: its stat as the index keeps it
    (``taskfiles.file_stat``) once written."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o666)
    try:
        if owner is not None:
            os.fchown(fd, *owner)
        done = os.write(fd, data)
        if done != len(data):  # os.write may write less than asked
            write_all(fd, bytes(data[done:]))
        return file_stat(os.fstat(fd)) if want_stat else None
    finally:
        os.close(fd)


_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def make_staging(board: Board) -> tuple[str, str, str]:
    """A new, empty ``.ledgit/.import-<pid>-<rand>/`` holding empty ``history-<rand>/`` and
    ``tasks-<rand>/`` (inside ``.ledgit`` so that they are on the same file system and get
    the same group and mode as the directories they replace; random names because the
    file system places a directory under a :func:`_spread_hint` parent by a hash of its
    name, and two imports in a row should not pick the same place). Returns the three."""
    make_dirs(board.dir_str)
    staging = os.path.join(board.dir_str,
                           f"{STAGING_PREFIX}{os.getpid()}-{os.urandom(4).hex()}")
    os.mkdir(staging)
    adopt_path(staging)  # root in another user's board: the staging is theirs (issue 36)
    _spread_hint(staging)
    return staging, _staged_dir(staging, HISTORY_DIR), _staged_dir(staging, TASKS_DIR)


def _staged_dir(staging: str, base: str) -> str:
    """A new, empty ``<staging>/<base>-<rand>/``."""
    path = os.path.join(staging, f"{base}-{os.urandom(4).hex()}")
    os.mkdir(path)
    adopt_path(path)
    return path


#: Linux ``FS_IOC_GETFLAGS`` / ``FS_IOC_SETFLAGS`` and ``FS_TOPDIR_FL`` (``chattr +T``).
_GETFLAGS, _SETFLAGS, _TOPDIR_FL = 0x80086601, 0x40086602, 0x00020000


def _spread_hint(directory: str) -> None:
    """Mark ``directory`` as the top of a hierarchy (``chattr +T``; ext2/3/4, best effort,
    Linux only) so that the file system places its subdirectories -- the staged
    ``history/`` and ``tasks/``, and so the inodes of every file created in them -- in a
    block group with room to spare (the Orlov allocator's spreading), not next to
    ``.ledgit``. Why: ext4 without a journal avoids reusing an inode freed in the last
    minute(s) and scans past each of them on every file it creates in that group; after a
    mass deletion near the repository (``rm -rf`` of a build tree, of a previous checkout,
    or a neighbour's test run) creating the 11,444 files of a 5,722-task import cost
    250 us a file instead of 20 (measured: docs/interop.md, "Speed"). The flag stays on the
    staging directory only, which is removed at the end; the moved directories do not
    inherit it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        buf = bytearray(4)
        fcntl.ioctl(fd, _GETFLAGS, buf, True)
        flags = struct.unpack("i", buf)[0]
        if not flags & _TOPDIR_FL:
            fcntl.ioctl(fd, _SETFLAGS, struct.pack("i", flags | _TOPDIR_FL))
    except OSError:
        pass  # not ext2/3/4 (tmpfs, btrfs, xfs, NFS ...): no such hint, nothing lost
    finally:
        os.close(fd)


def swap_in(staged: str, target: str) -> bool:
    """Rename the directory ``staged`` over ``target`` when ``target`` is missing or an empty
    directory of ours (rename(2) replaces an empty directory atomically); ``staged`` takes
    ``target``'s permission bits and group. False when it cannot: ``target`` holds a file
    (``ENOTEMPTY``), is not a plain directory, belongs to another user than ``staged``
    (root's staging in another user's board is that user's: :func:`make_staging`), or the
    platform does not replace directories."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    except OSError:
        return False
    try:
        if st is not None:
            mine = os.lstat(staged)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != mine.st_uid:
                return False
            if mine.st_gid != st.st_gid:
                os.chown(staged, -1, st.st_gid)
            if stat.S_IMODE(mine.st_mode) != stat.S_IMODE(st.st_mode):
                os.chmod(staged, stat.S_IMODE(st.st_mode))
        os.replace(staged, target)
    except OSError:
        return False
    return True


def move_each(board: Board, ids: Sequence[str], staged_history: str,
               staged_tasks: str) -> None:
    """Move the staged files into the board one by one: every history, then every task file
    (the write-ahead order of DESIGN §6 per batch). A history already moved by
    :func:`swap_in` is no longer staged and is left alone. Refuses (LedgitError, exit 2)
    to replace a symbolic link."""
    for src_dir, dst_dir, suffix in ((staged_history, board.history_str, HISTORY_SUFFIX),
                                     (staged_tasks, board.tasks_str, TASK_SUFFIX)):
        if not os.path.isdir(src_dir):
            continue  # swapped in whole
        make_dirs(dst_dir)
        for tid in ids:
            dst = os.path.join(dst_dir, f"{tid}{suffix}")
            refuse_link(board, dst)
            src = os.path.join(src_dir, f"{tid}{suffix}")
            mode = file_mode(dst)  # an updated task keeps its file's mode (issue 13)
            if mode is not None:
                os.chmod(src, mode)
            os.replace(src, dst)


def remove_tree(path: str) -> None:
    """Remove a staging directory and whatever is left in it (nothing after a success)."""

    shutil.rmtree(path, ignore_errors=True)


STALE_AFTER = 600.0  # seconds: a staging directory this old whose process is gone is removed


def remove_stale_staging(board: Board) -> None:
    """Remove the staging directories of imports that died: what a crash in the middle of
    :func:`ledgit.interop.bulkimport.import_records` leaves. One is stale when its process is gone
    (POSIX: asked with signal 0) and it was last changed more than :data:`STALE_AFTER` ago -- a
    process of another PID namespace (a container sharing the repository) looks gone from here,
    and its import takes seconds, not minutes."""
    if os.name != "posix":
        return
    try:
        names = os.listdir(board.dir_str)
    except OSError:
        return
    now = time.time()
    for name in names:
        if not name.startswith(STAGING_PREFIX):
            continue
        pid = name[len(STAGING_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        path = os.path.join(board.dir_str, name)
        try:
            if now - os.lstat(path).st_mtime < STALE_AFTER:
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            remove_tree(path)
        except OSError:
            continue  # alive (another user's), or cannot tell
