"""Advisory file locks: an exclusive ``flock`` on a file kept in place (DESIGN §2: the
per-worktree ``locks/``). Used by the board's write path and by the index's rebuild."""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

from ledgit.core.errors import BUSY, LedgitError
from ledgit.storage.oserrors import os_refusal
from ledgit.storage.ownership import adopt_fd, make_dirs

if sys.platform == "win32":  # pragma: no cover - no fcntl: filelock's lock on the same path
    import filelock
else:
    import fcntl

if TYPE_CHECKING:
    from pathlib import Path


class FileLock:
    """An exclusive flock on ``path`` (created, never removed), held by ``with``: entering
    polls up to ``timeout`` seconds, then raises LedgitError exit 5 with ``busy`` as its
    message. Where fcntl is missing (Windows), ``filelock.FileLock`` on the same path.
    (A class, not contextlib: every write holds one, and contextlib costs an import.)"""

    def __init__(self, path: Path | str, timeout: float, busy: str) -> None:
        self.path, self.timeout, self.busy = os.fspath(path), timeout, busy
        self._fd: int | None = None
        self._fallback: Any = None

    def __enter__(self) -> None:
        path, timeout = self.path, self.timeout
        try:
            make_dirs(os.path.dirname(path))  # as root in another's repo: theirs (issue 26)
        except OSError as exc:
            raise os_refusal(exc, os.path.dirname(path)) from None
        if sys.platform == "win32":  # pragma: no cover
            lock = filelock.FileLock(path)
            try:
                lock.acquire(timeout=timeout)
            except filelock.Timeout:
                raise self._timed_out() from None
            self._fallback = lock
            return
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            adopt_fd(fd, os.path.dirname(path))
        except PermissionError as exc:
            # A lock file another user created (sudo, a container's root): flock needs no
            # write access, so a readable one still serialises the writers (issue 13).
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                raise os_refusal(exc, path) from None
        except OSError as exc:
            raise os_refusal(exc, path) from None
        try:
            deadline = time.monotonic() + timeout
            delay = 0.0005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise self._timed_out() from None
                    time.sleep(min(delay, left))
                    delay = min(delay * 2, 0.01)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing releases the flock
        elif self._fallback is not None:  # pragma: no cover - Windows
            lock, self._fallback = self._fallback, None
            lock.release()

    def _timed_out(self) -> LedgitError:
        return LedgitError(f"{self.busy}: lock {self.path} held for more than "
                           f"{self.timeout:g}s; retry later", BUSY)


def file_lock(path: Path | str, timeout: float, busy: str) -> FileLock:
    """:class:`FileLock` (``with file_lock(path, timeout, busy): ...``)."""
    return FileLock(path, timeout, busy)
