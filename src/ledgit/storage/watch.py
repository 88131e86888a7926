"""In-process file-change watching of ledgit's flat directories (docs/watch.md).

Git avoids stat-ing every tracked file with an fsmonitor (``core.fsmonitor``). A ledgit
process that a user started on purpose and that lives on -- ``ledgit mcp``, the board server
(:mod:`ledgit.storage.live`) -- does the same for ``.ledgit/tasks`` with a Linux inotify(7) watch
held
in its own process: the index then re-checks only the names reported as changed since the
token of its last refresh instead of stat-ing every task file. There is no daemon and no
socket: a short CLI command never watches and never leaves a process behind (DESIGN §1).

A token is ``"<instance>:<seq>"``: the watcher's state when it answered. Completeness: inotify
queues an event inside the syscall that makes the change (write, truncate, utime, chmod,
rename, unlink, create), so a change whose syscall returned before :meth:`Watcher.changes`
drains the queue is in its answer; a change racing with it has a later ``seq`` and is in the
next answer. A queue overflow (``IN_Q_OVERFLOW``) makes every earlier token unknown (one full
scan). inotify is reached through ctypes: the standard library has no binding.
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
from collections.abc import Callable, Sequence

ENV_VAR = "LEDGIT_WATCH"  # "0" (or false/no/off) disables watching
MAX_NAMES = 100_000  # more remembered names than this: forget them all (a reset)

# inotify(7) / <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000

DIR_MASK = (IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM
            | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then the name
_OFF_VALUES = ("0", "false", "no", "off")


def available() -> bool:
    """True when watching may be used here: Linux with inotify, and ``LEDGIT_WATCH`` not set
    to ``0`` (or ``false``/``no``/``off``, any case). Never raises."""
    value = os.environ.get(ENV_VAR)
    if value is not None and value.strip().lower() in _OFF_VALUES:
        return False
    return os.uname().sysname == "Linux" and os.path.isdir("/proc/sys/fs/inotify")


class Watcher:
    """inotify watches on ``primary`` and ``others`` (flat directories, no recursion), in
    this process. :meth:`changes` answers for ``primary`` (which names changed since a
    token); :meth:`drain` counts the events of every directory (for waiters).

    Raises OSError when a directory cannot be watched (missing, not a directory, inotify
    limits such as ``max_user_instances``). Thread-safe. ``on_events``: called (with the
    watcher's lock held) after a drain that applied events."""

    def __init__(self, primary: str, others: Sequence[str] = (), *,
                 on_events: Callable[[], None] | None = None) -> None:
        self.primary = os.path.abspath(primary)
        self.on_events = on_events
        self.instance = os.urandom(8).hex()
        self.seq = 0
        self.reset = 0  # tokens with a seq below this are unknown (a queue overflow)
        self.changed: dict[bytes, int] = {}  # name -> seq of its last change, ascending
        self.gone: str | None = None  # why answers are "cannot say" for good
        self._lock = threading.RLock()
        libc = ctypes.CDLL(None, use_errno=True)
        init1 = libc.inotify_init1
        init1.argtypes = [ctypes.c_int]
        init1.restype = ctypes.c_int
        add = libc.inotify_add_watch
        add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        add.restype = ctypes.c_int
        fd = int(init1(os.O_NONBLOCK | os.O_CLOEXEC))  # IN_NONBLOCK | IN_CLOEXEC
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self.fd = fd
        try:
            # The identity checked on every answer: the same path still names this
            # directory (a parent renamed and the board recreated leaves the watch on the
            # old one). Taken before the watch is added: the safe side.
            st = os.stat(self.primary)
            self._primary_id = (st.st_dev, st.st_ino)
            self._wds: dict[int, str] = {}
            for path in (self.primary, *others):
                wd = int(add(fd, os.fsencode(path), DIR_MASK))
                if wd < 0:
                    err = ctypes.get_errno()
                    raise OSError(err, os.strerror(err), path)
                self._wds[wd] = os.path.abspath(path)
            self._primary_wd = next(iter(self._wds))
        except BaseException:
            os.close(fd)
            raise

    def fileno(self) -> int:
        """The inotify descriptor: readable when events are queued (for poll/select)."""
        return self.fd

    def drain(self) -> int:
        """Read and apply every queued event until the descriptor would block; returns the
        number of events of any watched directory (0: nothing happened)."""
        count = 0
        with self._lock:
            if self.fd < 0:
                return 0
            while True:
                try:
                    buf = os.read(self.fd, 65536)
                except BlockingIOError:
                    if count and self.on_events is not None:
                        self.on_events()
                    return count
                off, end = 0, len(buf)
                while off + 16 <= end:
                    wd, mask, _cookie, length = _EVENT.unpack_from(buf, off)
                    name = buf[off + 16:off + 16 + length].split(b"\0", 1)[0]
                    off += 16 + length
                    count += 1
                    self._apply(wd, mask, name)
                if not buf:  # pragma: no cover - an inotify read never returns 0 bytes
                    return count

    def _apply(self, wd: int, mask: int, name: bytes) -> None:
        if mask & IN_Q_OVERFLOW:  # events were lost: every earlier token is unknown
            self._forget()
        elif wd == self._primary_wd:
            if mask & _GONE:
                self.gone = "watched directory gone"
            elif name:
                self.seq += 1
                self.changed.pop(name, None)
                self.changed[name] = self.seq
                if len(self.changed) > MAX_NAMES:
                    self._forget()
        elif mask & _GONE and wd in self._wds:
            self.gone = f"{self._wds[wd]} gone"

    def _forget(self) -> None:
        self.seq += 1
        self.reset = self.seq
        self.changed.clear()

    def changes(self, token: str | None) -> tuple[str, list[str] | None]:
        """What changed in ``primary`` since ``token`` (a token from an earlier answer of
        any watcher, or None): ``(new_token, [name, ...])`` -- exactly these entries were
        created, written, truncated, had their attributes changed, were renamed away or over,
        or deleted since (each once, newest first, any entry not only ``*.md``, names as
        :func:`os.listdir` gives them); or ``(new_token, None)`` -- cannot say (no token,
        another instance's, older than an overflow, or the directory gone or replaced):
        scan everything, then store ``new_token``."""
        with self._lock:
            self.drain()
            new = f"{self.instance}:{self.seq}"
            if token is None or not self._still_there():
                return new, None
            instance, _, seq_text = token.partition(":")
            if instance != self.instance or not (seq_text.isdigit() and seq_text.isascii()):
                return new, None
            seq = int(seq_text)
            if not self.reset <= seq <= self.seq:
                return new, None
            names = []
            for name, at in reversed(self.changed.items()):
                if at <= seq:
                    break
                names.append(os.fsdecode(name))
            return new, names

    def _still_there(self) -> bool:
        if self.gone is not None:
            return False
        try:
            st = os.stat(self.primary)
        except OSError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self._primary_id:
            self.gone = "watched directory replaced"
            return False
        return True

    def close(self) -> None:
        """Drop the watches (idempotent)."""
        with self._lock:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1
