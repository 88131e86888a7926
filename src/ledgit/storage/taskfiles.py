"""The files of a board on disk (DESIGN §2): their names, the stat scan of ``tasks/*.md``,
reading them, and replacing a task file atomically.

Names: ``tasks/<ID>.md`` and ``history/<ID>.jsonl`` under ``.ledgit/``; a write's temp file is
``.<ID>.md.tmp-<pid>-<random>`` in the tasks dir (:data:`TMP_MARK`). The stat a freshness
check compares is :func:`file_stat` (Git's ``core.trustctime``). Only the standard library:
reads import this module (DESIGN §10).
"""

from __future__ import annotations

import os
import re
import stat
from contextlib import suppress
from typing import TYPE_CHECKING

from ledgit.core.errors import USAGE, LedgitError
from ledgit.storage.ownership import adopt_fd
from ledgit.storage.safefiles import (
    BOARD_FILE_LIMIT,
    NotRegularFile,
    open_board_file,
    read_board_file,
)
from ledgit.storage.tasklock import TMP_MARK, TaskLock

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

HISTORY_DIR = "history"
TASK_SUFFIX = ".md"
HISTORY_SUFFIX = ".jsonl"
_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # = record.ID_RE
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FCHMOD: Callable[[int, int], None] | None = getattr(os, "fchmod", None)  # not on Windows

Stat = tuple[int, int, int]  # (change time ns, size, inode): see file_stat
_TRUST_CTIME = os.name == "posix"  # on Windows st_ctime is the creation time


# ---------------------------------------------------------------------- names


def is_valid_id(text: str) -> bool:
    """``text`` is a task id (DESIGN §2: a letter or digit, then up to 127 of letters,
    digits, ``_.-``; no ``..``)."""
    # record.is_valid_id, repeated so that resolving an id does not import PyYAML
    # (tests/test_board.py checks that the two agree).
    return bool(_ID_RE.fullmatch(text)) and ".." not in text


def checked_id(task_id: str) -> str:
    """``task_id`` when it is a valid id (:func:`is_valid_id`); else LedgitError exit 2."""
    if not isinstance(task_id, str) or not is_valid_id(task_id):
        raise LedgitError(f"invalid task id {task_id!r}", USAGE)
    return task_id


def list_names(path: Path | str) -> list[str]:
    """``os.listdir(path)``; [] when the directory is missing (or is not one)."""
    try:
        return os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []


def stems(path: Path | str, suffix: str) -> set[str]:
    """Names in ``path`` ending in ``suffix``, without it (dot-files excluded)."""
    n = len(suffix)
    return {name[:-n] for name in list_names(path)
            if name.endswith(suffix) and not name.startswith(".") and len(name) > n}


def writer_alive(temp_name: str) -> bool:
    """The process named in a temp file's name (``.<id>.md.tmp-<pid>-<random>``) still runs
    on this machine: its write may be under way."""
    pid_text = temp_name.rpartition(TMP_MARK)[2].partition("-")[0]
    if not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True  # another user's process (EPERM): alive
    return True


# ---------------------------------------------------------------------- the stat scan


def file_stat(s: os.stat_result) -> Stat:
    """A task file's stat as the index keeps it: (time, size, inode), where the time is the
    later of mtime and ctime in ns (Git's ``core.trustctime``, on by default): restoring an
    mtime (``touch -r``, ``cp -p`` of a same-size file) still changes the ctime, so a
    rewrite that keeps size and mtime is re-checked by content. Windows: mtime only."""
    return (max(s.st_mtime_ns, s.st_ctime_ns) if _TRUST_CTIME else s.st_mtime_ns,
            s.st_size, s.st_ino)


def stat_one(tasks_dir: str, stem: str) -> Stat | None:
    """(mtime_ns, size, inode) of ``tasks/<stem>.md``; None when it is gone (or is no
    longer something a scan lists)."""
    try:
        s = os.stat(os.path.join(tasks_dir, stem + ".md"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    return file_stat(s)


def stat_scan(tasks_dir: Path | str) -> dict[str, Stat]:
    """{stem: (mtime_ns, size, inode)} of ``tasks/*.md`` (dot-files excluded): one stat per
    file and nothing else, the floor of a freshness check (DESIGN §10). A directory named
    ``x.md`` is listed too; reading it fails and it is skipped."""
    out: dict[str, Stat] = {}
    if os.stat in os.supports_dir_fd:
        try:
            fd = os.open(tasks_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except (FileNotFoundError, NotADirectoryError):
            return out
        except OSError as exc:
            raise unlisted(tasks_dir, exc) from None
        try:
            stat = os.stat
            for name in os.listdir(fd):
                if is_task_name(name):
                    try:
                        s = stat(name, dir_fd=fd)
                    except FileNotFoundError:
                        continue  # removed while we looked
                    out[name[:-3]] = file_stat(s)
        finally:
            os.close(fd)
        return out
    try:  # pragma: no cover - platforms without dir_fd
        entries = list(os.scandir(tasks_dir))
    except (FileNotFoundError, NotADirectoryError):  # pragma: no cover
        return out
    for entry in entries:  # pragma: no cover
        name = entry.name
        if is_task_name(name):
            s = entry.stat()
            out[name[:-3]] = file_stat(s)
    return out


def is_task_name(name: str) -> bool:
    """``name`` (as os.listdir gives it) is a task file's: ``*.md``, not a dot-file, and
    UTF-8 (a name with undecodable bytes, a surrogate escape here, is no task id and could
    not be stored in SQLite: the index ignores it; ``ledgit verify`` names it)."""
    if not name.endswith(".md") or name[0] == "." or len(name) <= 3:
        return False
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def read_all(tasks_dir: Path | str) -> Iterator[tuple[str, Stat, bytes | OSError]]:
    """(stem, stat, bytes or the OSError that prevented reading) of every ``tasks/*.md``, in
    name order: os-level reads through one directory descriptor, the stat taken by fstat on
    the open file (a cold build reads every file; a separate stat pass and the file-object
    layer are measurable)."""
    if os.open not in os.supports_dir_fd:  # pragma: no cover
        for name, st in sorted(stat_scan(tasks_dir).items()):
            try:
                with open(os.path.join(tasks_dir, f"{name}.md"), "rb") as fh:
                    yield name, st, fh.read()
            except FileNotFoundError:
                continue
            except OSError as exc:
                yield name, st, exc
        return
    try:
        dfd = os.open(tasks_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        raise unlisted(tasks_dir, exc) from None
    try:
        for entry in sorted(os.listdir(dfd)):
            if not is_task_name(entry):
                continue
            try:
                fd, s = open_board_file(entry, dir_fd=dfd)
            except FileNotFoundError:
                continue
            except NotRegularFile as exc:  # a link, FIFO, device: never followed or read
                try:
                    s = os.lstat(entry, dir_fd=dfd)
                except OSError:
                    continue
                yield entry[:-3], file_stat(s), exc
                continue
            except OSError as exc:  # no permission: a row that says so
                try:
                    s = os.stat(entry, dir_fd=dfd)
                except OSError:
                    continue
                yield entry[:-3], file_stat(s), exc
                continue
            data: bytes | OSError
            try:
                data = read_fd(fd, s.st_size)
            except OSError as exc:  # an I/O error: a row that says so
                data = exc
            finally:
                os.close(fd)
            yield entry[:-3], file_stat(s), data
    finally:
        os.close(dfd)


def read_fd(fd: int, size: int) -> bytes:
    """The rest of an open file expected to hold ``size`` bytes (one read when it does)."""
    data = os.read(fd, size)
    if len(data) != size:  # changing under us: read to the end
        chunks = [data]
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        data = b"".join(chunks)
    return data


def unlisted(tasks_dir: Path | str, exc: OSError) -> LedgitError:
    """The refusal (exit 2) for a tasks dir that exists but cannot be listed."""
    return LedgitError(f"cannot list {tasks_dir}: {exc.strerror or exc}", USAGE)


def read_task(tasks_dir: str, stem: str) -> bytes | OSError | None:
    """The bytes of ``tasks/<stem>.md``; None when it is gone; the OSError when it cannot be
    read (a directory named ``x.md``, no permission, ...)."""
    try:
        return read_board_file(os.path.join(tasks_dir, f"{stem}.md"), BOARD_FILE_LIMIT)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc


# ---------------------------------------------------------------------- writing


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (os.write may write less than asked)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def replace_task_file(path: Path | str, data: bytes, *, fsync: bool,
                      lock: TaskLock | None = None) -> None:
    """Replace the task file ``path`` (``<id>.md``) with ``data`` atomically: a temp file
    ``.<id>.md.tmp-<pid>-<random>`` in the same dir (see :data:`TMP_MARK`) with the mode of
    the file it replaces (issue 13: a private task stays private), fsync'ed when ``fsync``,
    then renamed over it. ``lock``, the task's lock when held, remembers the temp file while
    it exists. The caller checks links and fsyncs the dir. Raises OSError (the temp file is
    removed)."""
    # os.urandom, not secrets: the temp name only has to be unique (secrets imports
    # random, hmac and base64 on every write).
    directory, name = os.path.split(os.fspath(path))
    base = f".{name[:-len(TASK_SUFFIX)]}{TMP_MARK}{os.getpid()}-{os.urandom(4).hex()}"
    if lock is not None:
        lock.note(base)
    try:
        _replace(path, os.path.join(directory, base), data, fsync=fsync)
    finally:
        if lock is not None:
            lock.forget()


def replace_board_file(path: Path | str, data: bytes) -> None:
    """Replace the board file ``path`` (a task file or a history in Git's work tree) with
    ``data`` whole, as :func:`replace_task_file` does but without the task's lock or an
    fsync: what Git's paths write (a merge resolved, events restored, a killed sync
    finished). A temp file ``.<name>.tmp-<pid>-<random>`` in the same directory, with the
    mode of the file it replaces and handed to the directory's owner (issue 36), renamed
    over it. Raises OSError (the temp file is removed)."""
    directory, name = os.path.split(os.fspath(path))
    _replace(path, os.path.join(directory, f".{name}.tmp-{os.getpid()}-{os.urandom(4).hex()}"),
             data, fsync=False)


def _replace(path: Path | str, tmp: str, data: bytes, *, fsync: bool) -> None:
    """Write ``data`` to the new file ``tmp`` (the mode of ``path``, its directory's owner),
    fsync it when ``fsync``, rename it over ``path``; on any failure ``tmp`` is removed."""
    mode = file_mode(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        adopt_fd(fd, os.path.dirname(tmp))  # root in another user's board: the owner's file
        if mode is not None and _FCHMOD is not None:
            _FCHMOD(fd, mode)
        write_all(fd, data)
        if fsync:
            os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with suppress(OSError):
            os.unlink(tmp)
        raise


def file_mode(path: Path | str) -> int | None:
    """The permission bits of the file at ``path`` (not following a link), or None when
    there is none: what a rewrite of it keeps."""
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return None


def write_new(path: Path, text: str) -> None:
    """Create ``path`` holding ``text`` (UTF-8, LF); FileExistsError when it exists. Made by
    root in another user's directory, it is that user's (:func:`adopt_fd`)."""
    with open(path, "x", encoding="utf-8", newline="\n") as fh:
        adopt_fd(fh.fileno(), os.path.dirname(os.path.abspath(path)))
        fh.write(text)


def fsync_dir(path: Path | str) -> None:
    """fsync the directory ``path`` (a rename or a new file in it is durable); best effort."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows cannot open a directory
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse
        pass
    finally:
        os.close(fd)
