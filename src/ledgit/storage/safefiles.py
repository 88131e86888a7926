"""Reading and writing files a user or a board names, whatever is there (issue 26).

* An **input** (a file on the command line, ``--body-file``, an importer's source) is read
  with a bound that does not trust ``st_size`` (0 for ``/dev/zero``, a FIFO or ``/proc``
  files): at most ``limit + 1`` bytes, so that a device or a pipe that never ends is refused
  as too large instead of eating memory (:func:`read_input`).
* A file **found in the board** (a task file, a history) must be a regular file: it is
  opened with ``O_NONBLOCK`` (a FIFO or a device does not block the open) and ``O_NOFOLLOW``
  (a link does not lead out of the board), then checked with ``fstat``
  (:func:`read_board_file`).
* An **output** that exists and is not a regular file is written in place (a character
  device such as ``/dev/null`` or ``/dev/full``, a FIFO with a reader), never replaced by a
  rename; a directory, or a FIFO nobody reads, is refused (:func:`write_output`).

Standard library only.
"""

from __future__ import annotations

import errno
import os
import stat
from contextlib import suppress

from ledgit.core.errors import IO_ERROR, USAGE, LedgitError, located, os_failure
from ledgit.storage.ownership import adopt_fd

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
CHUNK = 1 << 16
BOARD_FILE_LIMIT = 1 << 30  # bytes read of one file found in a board, at most


class NotRegularFile(OSError):
    """A board file that is a FIFO, socket, device, directory or link: never read."""


def kind_of(mode: int) -> str:
    """What a ``st_mode`` is, in words (for messages)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def read_bounded(fd: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes from ``fd`` (to its end when shorter): a caller that gets
    more than ``limit`` knows the source is too large without reading it all."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, CHUNK if left > CHUNK else left))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_input(path: str, limit: int, *, what: str) -> bytes:
    """The bytes of the input file ``path`` (a user named it: FIFOs, process substitution
    and devices are read too, blocking as ``cat`` would), at most ``limit + 1`` of them: a
    result longer than ``limit`` means the source is too large (the caller says so).

    Raises LedgitError: a directory or an unreadable file (exit 2; an I/O error exit 74)."""
    try:
        fd = os.open(path, os.O_RDONLY | CLOEXEC)
    except OSError as exc:
        raise _read_refusal(exc, path) from None
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise LedgitError(located(f"{what}: is a directory", path), USAGE)
        return read_bounded(fd, limit)
    except OSError as exc:
        raise _read_refusal(exc, path) from None
    finally:
        os.close(fd)


MAX_SOURCE_BYTES = 256 * 1048576  # an importer's one source file (a beads JSON lines file)


def read_source(path: str, *, found: bool = False, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """An importer's source file: one named on the command line (``found`` False:
    :func:`read_input`), or one found in a source directory (``found``: a regular file only,
    :func:`read_board_file`). Raises LedgitError (exit 2) past ``limit`` bytes or when it
    cannot be read, naming the path."""
    if found:
        try:
            data = read_board_file(path, limit)
        except OSError as exc:
            raise LedgitError(f"{path}: cannot read: {exc.strerror or exc}", USAGE) from None
    else:
        data = read_input(path, limit, what="source")
    if len(data) > limit:
        raise LedgitError(located(f"larger than {limit // 1048576} MiB, the limit of one "
                                  f"source file (read stopped there)", path), USAGE)
    return data


def _read_refusal(exc: OSError, path: str) -> LedgitError:
    found = os_failure(exc, path)
    if found is not None:
        return found
    return LedgitError(f"{path}: cannot read: {exc.strerror or exc}", USAGE)


def open_board_file(path: str, *, dir_fd: int | None = None) -> tuple[int, os.stat_result]:
    """``(fd, its fstat)``: ``path``, a regular file found in a board (``dir_fd``: relative
    to that directory), open for reading: never through a link, never blocking on a FIFO or
    a device. Raises FileNotFoundError, :class:`NotRegularFile`, or the open's OSError."""
    try:
        fd = os.open(path, os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile(errno.ELOOP, "is a symbolic link (ledgit does not follow "
                                 "links in a board)", path) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(errno.EINVAL, f"is {kind_of(st.st_mode)}, not a regular file",
                                 path)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_board_file(path: str, limit: int, *, dir_fd: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` in a board (:func:`open_board_file`); more
    than ``limit`` of them raise OSError (``EFBIG``) after reading ``limit + 1``."""
    fd, _ = open_board_file(path, dir_fd=dir_fd)
    try:
        data = read_bounded(fd, limit)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", path)
    return data


def write_output(path: str, data: bytes, *, what: str) -> None:
    """Write ``data`` to the output ``path`` a user named (``what``: the option, for
    messages). A regular file or a new one: a temp file in the same directory renamed over
    it (a reader never sees half of it). Anything else that exists is written in place,
    never replaced: a character device (``/dev/null``; ``/dev/full`` fails with exit 74), a
    FIFO that has a reader. Refused (exit 2): a directory, a FIFO nobody reads, a missing
    directory. A failed write is exit 74 (I/O, full disk) or 2."""
    target = os.path.abspath(path)
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _write_refusal(exc, path, what) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_in_place(target, path, st.st_mode, data, what)
        return
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise LedgitError(f"{what} {path}: no such directory {folder}", USAGE)
    if os.path.islink(target):  # write where the link points, keep the link
        target = os.path.realpath(target)
        folder = os.path.dirname(target)
    tmp = os.path.join(folder, f".{os.path.basename(target)}.tmp-{os.getpid()}-"
                               f"{os.urandom(4).hex()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | CLOEXEC, 0o666)
        try:
            adopt_fd(fd, folder)  # root writing in another user's directory: theirs (issue 36)
            if st is not None:
                with suppress(OSError):
                    os.fchmod(fd, stat.S_IMODE(st.st_mode))
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError as exc:
        with suppress(OSError):
            os.unlink(tmp)
        raise _write_refusal(exc, path, what) from None


def _write_in_place(target: str, path: str, mode: int, data: bytes, what: str) -> None:
    if stat.S_ISDIR(mode):
        raise LedgitError(f"{what} {path}: is a directory", USAGE)
    try:
        fd = os.open(target, os.O_WRONLY | NONBLOCK | CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO with no reader (open(2))
            raise LedgitError(f"{what} {path}: is a FIFO that nobody reads; nothing written",
                              USAGE) from None
        raise _write_refusal(exc, path, what) from None
    try:
        os.set_blocking(fd, True)
        _write_all(fd, data)
    except OSError as exc:
        raise _write_refusal(exc, path, what) from None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _write_refusal(exc: OSError, path: str, what: str) -> LedgitError:
    found = os_failure(exc, path)
    if found is not None:
        return found
    code = IO_ERROR if exc.errno in (errno.EIO, errno.ENOSPC, errno.EPIPE) else USAGE
    return LedgitError(f"{what} {path}: cannot write: {exc.strerror or exc}", code)
