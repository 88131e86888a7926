"""A file-change watcher for one flat directory: ledgit's fsmonitor (docs/watch.md).

Git avoids stat-ing every tracked file with an fsmonitor daemon (``core.fsmonitor``); this is
the same idea for ``.ledgit/tasks``. A daemon (``python -m ledgit.watch serve TASKS_DIR
SOCKET_PATH``) holds a Linux inotify watch on the directory and answers, over a Unix socket,
"which file names changed since TOKEN?". A reader that stored the token of its last scan then
re-checks only those names instead of stat-ing every file.

Two halves live here:

* the **client** (:func:`available`, :func:`socket_path`, :func:`query`, :func:`spawn`) runs
  inside every ``ledgit list`` (``os``, ``json``, ``socket``); :func:`spawn` imports
  :mod:`subprocess` when called;
* the **daemon** (:func:`serve`, :func:`main`) imports ctypes, fcntl, select, signal, struct
  and the like only when it starts.

Protocol: one request per connection, one JSON line each way. Request ``{"since": TOKEN or
null}``; reply ``{"token": "<instance>:<seq>", "changed": [names] or null, "pid": N}``
(``null``: "cannot say, scan everything"). Before answering, the daemon drains the inotify
queue to EAGAIN; inotify(7) events are queued inside the write/rename/unlink/utime syscall
itself, so every change whose syscall returned before the client sent its request is counted.
A daemon started with ``--serve-reads`` (as :func:`spawn` starts it) also takes requests
``{"run": ...}``: ledgit's read commands, run for the client (:mod:`ledgit.readserver`).
"""

import json
import os
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

SOCKET_NAME = "watch.sock"  # the socket's file name inside the private dir
SUN_PATH_MAX = 107  # usable bytes of sockaddr_un.sun_path (108 with the NUL), unix(7)
SPAWN_MIN_FILES = 1_000  # boards below this many task files never start a daemon (caller's rule)
DEFAULT_IDLE = 600.0  # seconds without a request after which the daemon exits
ENV_VAR = "LEDGIT_WATCH"  # "0" (or false/no/off) disables the watcher

_MAX_REPLY_CHUNK = 65536
_OFF_VALUES = ("0", "false", "no", "off")
_platform_ok: "bool | None" = None
_local: "_Daemon | None" = None  # the daemon of this process, when it serves reads


# --------------------------------------------------------------------------- client


def available() -> bool:
    """True when a watcher may be used here: Linux with inotify and AF_UNIX sockets, and
    ``LEDGIT_WATCH`` not set to ``0`` (or ``false``/``no``/``off``, any case).

    Cost: a dict lookup after the first call (which reads ``os.uname()`` and stats
    ``/proc/sys/fs/inotify``). The environment is read on every call. Never raises.
    """
    global _platform_ok
    value = os.environ.get(ENV_VAR)
    if value is not None and value.strip().lower() in _OFF_VALUES:
        return False
    if _platform_ok is None:
        _platform_ok = (os.uname().sysname == "Linux" and hasattr(socket, "AF_UNIX")
                        and os.path.isdir("/proc/sys/fs/inotify"))
    return _platform_ok


def socket_path(private_dir: "str | os.PathLike[str]") -> "str | None":
    """The daemon's socket for a worktree: ``<private_dir>/watch.sock``, made absolute (the
    daemon runs in ``/``), or None when that path is longer than the 107 bytes a Unix socket
    address can hold (unix(7), ``sun_path``): then no watcher is used. There is deliberately no
    fallback to the abstract namespace, where any local user could bind the name and answer.

    ``private_dir`` is the per-worktree private directory
    (``git rev-parse --git-path ledgit``); it need not exist. Never raises for a long path.
    """
    path = os.path.join(os.path.abspath(private_dir), SOCKET_NAME)
    if len(os.fsencode(path)) > SUN_PATH_MAX:
        return None
    return path


def query(socket_path: str, token: "str | None",
          timeout: float = 1.0) -> "tuple[str, list[str] | None] | None":
    """Ask the daemon at ``socket_path`` what changed since ``token``.

    ``token``: a token from an earlier reply, or None (asking only for a current token).
    ``timeout``: seconds allowed for each socket operation (connect, send, each receive).

    Returns:

    * ``(new_token, [name, ...])``: exactly these entries of the watched directory were
      created, written, truncated, had their attributes (mtime, mode) changed, were renamed
      away or over, or deleted since ``token`` was issued (each name once, newest first; any
      entry, not only ``*.md``; names are ``str`` as :func:`os.fsdecode` gives them, so bytes
      that are not UTF-8 come back as surrogate escapes, as :func:`os.listdir` gives them).
      ``[]``: nothing changed;
    * ``(new_token, None)``: the daemon cannot say (token None, malformed, of another daemon
      instance, older than a queue overflow, or the watched directory is gone): scan
      everything. ``new_token`` is still valid: store it after a full scan that starts after
      this call returned, and changes made during the scan are reported on the next query;
    * ``None``: no daemon answered (no socket file, connection refused, timeout, a reply that
      is not the protocol's). Never raises for those.

    Cost: one connect/send/receive round trip to the daemon, ~0.1 ms (docs/watch.md). Inside
    the daemon itself (a read it runs for a client, :mod:`ledgit.readserver`) the daemon's
    state answers directly.
    """
    if _local is not None and _local.serving and _local.is_own_socket(socket_path):
        return _parse_reply(_local.answer(_request(token)))
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    chunks = []
    try:
        sock.settimeout(timeout)
        sock.connect(socket_path)
        sock.sendall(_request(token))
        while True:
            data = sock.recv(_MAX_REPLY_CHUNK)
            if not data:
                break
            chunks.append(data)
            if data[-1:] == b"\n":  # the only raw newline in a reply is the last byte
                break
    except (OSError, ValueError, TypeError):  # TypeError/ValueError: a bad path or token
        return None
    finally:
        sock.close()
    return _parse_reply(b"".join(chunks))


def _parse_reply(data: bytes) -> "tuple[str, list[str] | None] | None":
    """:func:`query`'s result from a reply line; None when it is not the protocol's."""
    try:
        reply = _decode(data)
    except (ValueError, StopIteration):  # not JSON (StopIteration: the C scanner's "no")
        return None
    if not isinstance(reply, dict):
        return None
    new_token = reply.get("token")
    changed = reply.get("changed")
    if not isinstance(new_token, str):
        return None
    if changed is None:
        return new_token, None
    if not isinstance(changed, list):
        return None
    for name in changed:
        if not isinstance(name, str):
            return None
    return new_token, changed


_TOKEN_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ:-_")


def _request(token: "str | None") -> bytes:
    """The request line ``{"since": TOKEN}\\n``. A token holds only the characters daemons
    issue (hex, digits, ``:``); anything else is sent as null (a full scan), so the line is
    JSON without the json module (reads do not import it: ~1 ms)."""
    if token is None or not token or not set(token) <= _TOKEN_CHARS:
        return b'{"since": null}\n'
    return b'{"since": "' + token.encode("ascii") + b'"}\n'


def _decode(data: bytes) -> "Any":
    """``json.loads(data)`` for one reply line. Raises ValueError when ``data`` is not one
    JSON value (surrounding whitespace allowed)."""
    return json.loads(data.decode("utf-8"))


_spawned: "list[int]" = []  # pids of daemons started here, reaped at the next start


def spawn(tasks_dir: "str | os.PathLike[str]", socket_path: "str | os.PathLike[str]", *,
          idle: "float | None" = None) -> None:
    """Start a daemon watching ``tasks_dir`` and listening at ``socket_path``, in the
    background, without waiting for it.

    The daemon runs ``sys.executable -m ledgit.watch serve`` in a new session (no controlling
    terminal, not in the caller's process group), stdin/stdout/stderr on ``/dev/null``, no
    inherited file descriptors (Python's are not inheritable), started by ``posix_spawn``
    (the daemon moves to ``/`` itself; both paths are made absolute first).
    If a daemon already serves ``socket_path`` the new one exits at once; at most one daemon
    per socket remains (docs/watch.md). ``idle``: seconds without a request before it exits
    (default :data:`DEFAULT_IDLE`). It answers a few tens of milliseconds later (Python start
    up); queries before that return None.

    Nothing is started when ``socket_path`` is another user's (their daemon: ours could not
    bind it), or when another start for it began less than :data:`SPAWN_GRACE` seconds ago
    (a marker file ``<socket>.spawn``: many readers at once start one daemon, not one
    each). The daemon gets the caller's environment without the variables that set Python's
    warnings, dev mode, optimisation or safe path (``PYTHONWARNINGS``...): they belong to
    the caller's invocation, and would make the daemon refuse every ordinary reader
    (:mod:`ledgit.readserver` serves only clients of its own interpreter settings).

    Never raises OSError (a watcher is an optimisation): a failed start is silently dropped.
    A caller that lives on reaps its finished daemons at its next start.
    """
    import contextlib
    import site
    import sys

    if _local is not None:
        return  # a read run inside a daemon never starts another one
    sock = os.path.abspath(socket_path)
    try:
        if os.lstat(sock).st_uid != os.geteuid():
            return
    except OSError:
        pass
    if not _claim_spawn(sock + ".spawn"):
        return
    _spawned[:] = [pid for pid in _spawned if not _reaped(pid)]
    args = [sys.executable, "-m", "ledgit.watch", "serve",
            os.path.abspath(tasks_dir), os.path.abspath(socket_path), "--serve-reads"]
    if idle is not None:
        args += ["--idle", repr(float(idle))]
    env = {k: v for k, v in os.environ.items() if k not in _INVOCATION_VARIABLES}
    # The daemon imports this same ledgit even when it was found through the working
    # directory or a relative PYTHONPATH entry (the daemon runs in "/"). A site-packages
    # directory is never put on PYTHONPATH (it would come before the standard library).
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    site_dirs = [*site.getsitepackages(), site.getusersitepackages()]
    if package_parent not in site_dirs \
            and package_parent not in env.get("PYTHONPATH", "").split(os.pathsep):
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
    with contextlib.suppress(OSError):
        if hasattr(os, "posix_spawn"):
            # No Popen object: one still running at the caller's exit would print a
            # ResourceWarning where warnings are shown (the read's stderr would differ).
            devnull = os.devnull
            _spawned.append(os.posix_spawn(args[0], args, env, setsid=True, file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_OPEN, 2, devnull, os.O_WRONLY, 0)]))
        else:  # pragma: no cover - no posix_spawn
            import subprocess

            subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, cwd="/", env=env, close_fds=True,
                             start_new_session=True)


def _reaped(pid: int) -> bool:
    """Whether the daemon ``pid`` started here has ended (and is now reaped)."""
    try:
        done, _status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return done != 0


SPAWN_GRACE = 5.0  # seconds a start marker keeps other starts away
# Python settings of one invocation, not passed on to a daemon (see spawn).
_INVOCATION_VARIABLES = frozenset(("PYTHONWARNINGS", "PYTHONDEVMODE", "PYTHONOPTIMIZE",
                                   "PYTHONSAFEPATH", "PYTHONINSPECT", "PYTHONVERBOSE",
                                   "PYTHONDEBUG", "PYTHONBREAKPOINT", "PYTHONPROFILEIMPORTTIME",
                                   "PYTHONTRACEMALLOC", "PYTHONFAULTHANDLER"))


def _claim_spawn(marker: str) -> bool:
    """True for the one caller that may start a daemon now: it creates ``marker`` (or
    finds one older than :data:`SPAWN_GRACE` seconds and renews it)."""
    import time

    now = time.time()
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        try:
            if now - os.stat(marker).st_mtime < SPAWN_GRACE:
                return False
            os.utime(marker)
            return True
        except OSError:
            return False
    except OSError:
        return True  # no marker possible (a read-only directory): start anyway


# --------------------------------------------------------------------------- daemon

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
IN_MASK_ADD = 0x20000000

TASKS_MASK = (IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM
              | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
# The socket's directory: only entries appearing/disappearing (the socket removed or
# replaced), and the directory itself going away.
SOCKET_DIR_MASK = (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF
                   | IN_MOVE_SELF | IN_ONLYDIR | IN_MASK_ADD)
_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED

MAX_NAMES = 100_000  # more remembered names than this: forget them all (a reset)
_REQUEST_TIMEOUT = 2.0  # seconds a client may take to send its request
_MAX_REQUEST = 1 << 20  # bytes (a read request carries the client's environment)
_LOCK_WAIT = 5.0  # seconds to wait for the start/stop lock before giving up


def read_request(conn: "Any") -> bytes:
    """One request line from ``conn`` (without its newline; at most :data:`_MAX_REQUEST`
    bytes are read; descriptors a client might pass along are dropped by the kernel, no
    ancillary buffer being offered). Raises OSError (e.g. a timeout)."""
    data = b""
    while b"\n" not in data and len(data) <= _MAX_REQUEST:
        chunk = conn.recv(_MAX_REPLY_CHUNK)
        if not chunk:
            break
        data += chunk
    return data.split(b"\n", 1)[0]


_EVENT: "Any" = None  # struct.Struct of the inotify_event header, made when a daemon starts


class _Stop(BaseException):  # not Exception: a read run in the daemon must not catch it
    """Raised by the signal handler (SIGTERM/SIGINT/SIGHUP): leave the loop, clean up."""


class _Daemon:
    """The state of one daemon instance: the inotify fd, the listening socket and, per
    name, the last ``seq`` at which it changed (a dict kept in ascending seq order)."""

    def __init__(self, tasks_dir: str, sock_path: str, idle: float,
                 serve_reads: bool = False) -> None:
        self.tasks_dir = tasks_dir
        self.serve_reads = serve_reads  # also run ledgit's reads (ledgit.readserver)
        self.reads = 0  # reads run so far
        self.serving = False  # a read is running in this process now
        self.sock_path = sock_path
        self.lock_path = sock_path + ".lock"
        self.idle = idle
        self.instance = os.urandom(8).hex()
        self.seq = 0
        self.reset = 0  # tokens with a seq below this are unknown (a queue overflow)
        self.changed: dict[bytes, int] = {}
        self.stop: str | None = None
        self.ifd = -1
        self.tasks_wd = -1
        self.sock_wd = -1
        self.tasks_id: tuple[int, int] = (0, 0)
        self.sock_id: tuple[int, int] | None = None
        self.listener: Any = None
        self.sock_name = os.fsencode(os.path.basename(sock_path))

    # -- inotify ---------------------------------------------------------------------

    def open_inotify(self) -> None:
        global _EVENT
        import ctypes
        import struct

        _EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; name

        libc = ctypes.CDLL(None, use_errno=True)
        init1 = libc.inotify_init1
        init1.argtypes = [ctypes.c_int]
        init1.restype = ctypes.c_int
        add = libc.inotify_add_watch
        add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        add.restype = ctypes.c_int

        def add_watch(path: str, mask: int) -> int:
            wd = int(add(self.ifd, os.fsencode(path), mask))
            if wd < 0:
                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), path)
            return wd

        self._add_watch = add_watch
        fd = int(init1(os.O_NONBLOCK | os.O_CLOEXEC))  # IN_NONBLOCK | IN_CLOEXEC
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self.ifd = fd
        # The identity checked on every request: the same path still names this directory
        # (a parent renamed and the board recreated leaves the watch on the old one). Taken
        # before the watch is added: if the path is replaced in between, the first request
        # sees a mismatch (the safe side).
        st = os.stat(self.tasks_dir)
        self.tasks_id = (st.st_dev, st.st_ino)
        self.tasks_wd = add_watch(self.tasks_dir, TASKS_MASK)

    def drain(self) -> None:
        """Read and apply every queued event until the fd would block (EAGAIN)."""
        unpack = _EVENT.unpack_from
        while True:
            try:
                buf = os.read(self.ifd, 65536)
            except BlockingIOError:
                return
            except InterruptedError:  # pragma: no cover - PEP 475 retries
                continue
            off = 0
            end = len(buf)
            while off + 16 <= end:
                wd, mask, _cookie, length = unpack(buf, off)
                name = buf[off + 16:off + 16 + length].split(b"\0", 1)[0]
                off += 16 + length
                self.apply(wd, mask, name)
            if not buf:  # pragma: no cover - an inotify read never returns 0 bytes
                return

    def apply(self, wd: int, mask: int, name: bytes) -> None:
        if mask & IN_Q_OVERFLOW:  # events were lost: every earlier token is unknown
            self.forget()
            return
        if wd == self.tasks_wd:
            if mask & _GONE:
                self.stop = "watched directory gone"
            elif name:
                self.seq += 1
                self.changed.pop(name, None)
                self.changed[name] = self.seq
                if len(self.changed) > MAX_NAMES:
                    self.forget()
        if wd == self.sock_wd:
            if mask & _GONE:
                self.stop = "socket directory gone"
            elif name == self.sock_name:
                self.check_socket()

    def forget(self) -> None:
        self.seq += 1
        self.reset = self.seq
        self.changed.clear()

    # -- identity checks -------------------------------------------------------------

    def check_tasks_dir(self) -> bool:
        try:
            st = os.stat(self.tasks_dir)
        except OSError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self.tasks_id:
            self.stop = "watched directory replaced"
            return False
        return True

    def socket_is_ours(self) -> bool:
        try:
            st = os.lstat(self.sock_path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.sock_id

    def check_socket(self) -> None:
        if not self.socket_is_ours():
            self.stop = "socket removed or replaced"

    # -- the socket ------------------------------------------------------------------

    def locked(self) -> "Any":
        """A context manager holding an exclusive flock on ``<socket>.lock``: binding (with
        its stale-socket check) and the final unlink happen under it, so two starting
        daemons cannot both decide the socket is stale."""
        import contextlib
        import fcntl
        import time

        @contextlib.contextmanager
        def hold() -> "Any":
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                deadline = time.monotonic() + _LOCK_WAIT
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.005)
                yield
            finally:
                os.close(fd)  # releases the lock

        return hold()

    def bind(self) -> bool:
        """Bind and listen at the socket path. False when another live daemon serves it.
        Raises OSError when the path cannot be used."""
        import errno
        import socket
        import stat

        with self.locked():
            for _ in range(3):
                lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    lsock.bind(self.sock_path)
                except OSError as exc:
                    lsock.close()
                    if exc.errno != errno.EADDRINUSE:
                        raise
                else:
                    os.chmod(self.sock_path, 0o600)
                    lsock.listen(64)
                    lsock.setblocking(False)
                    st = os.lstat(self.sock_path)
                    self.sock_id = (st.st_dev, st.st_ino)
                    self.listener = lsock
                    return True
                # The path exists: a live daemon (exit quietly) or a dead socket file.
                probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                probe.settimeout(1.0)
                try:
                    probe.connect(self.sock_path)
                except (ConnectionRefusedError, FileNotFoundError):
                    pass  # dead (or just gone): replace it
                except OSError:
                    return False  # e.g. a timeout: someone is there, but busy
                else:
                    return False
                finally:
                    probe.close()
                try:
                    if not stat.S_ISSOCK(os.lstat(self.sock_path).st_mode):
                        raise OSError(errno.EEXIST, "not a socket", self.sock_path)
                    os.unlink(self.sock_path)
                except FileNotFoundError:
                    pass
            return False

    def unbind(self) -> None:
        """Remove the socket file if it is still ours, then close the listener."""
        try:
            with self.locked():
                if self.socket_is_ours():
                    os.unlink(self.sock_path)
        except OSError:
            pass
        if self.listener is not None:
            self.listener.close()

    # -- requests --------------------------------------------------------------------

    def answer(self, request: bytes) -> bytes:
        try:
            import json

            message = json.loads(request)
        except ValueError:
            message = None
        if not isinstance(message, dict) or "since" not in message:
            return b'{"error": "bad request"}\n'
        self.drain()  # after reading the request: every change made before it is queued
        since = message["since"]
        token = f"{self.instance}:{self.seq}"
        changed: list[str] | None = None
        if self.check_tasks_dir() and self.stop is None and isinstance(since, str):
            instance, _, seq_text = since.partition(":")
            if instance == self.instance and seq_text.isdigit() and seq_text.isascii():
                seq = int(seq_text)
                if self.reset <= seq <= self.seq:
                    changed = []
                    for name, at in reversed(self.changed.items()):
                        if at <= seq:
                            break
                        changed.append(os.fsdecode(name))
        reply = {"token": token, "changed": changed, "pid": os.getpid(), "reads": self.reads}
        import json

        return json.dumps(reply).encode() + b"\n"

    def is_own_socket(self, path: str) -> bool:
        """``path`` names this daemon's socket file (by device and inode: another spelling
        of the same path, through a symbolic link, is the same socket)."""
        try:
            st = os.stat(path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.sock_id

    def serve_connection(self, conn: "Any") -> None:
        try:
            conn.settimeout(_REQUEST_TIMEOUT)
            line = read_request(conn)
            if line.startswith(b'{"run"') and self.serve_reads:
                from ledgit.readserver import serve_run

                serve_run(self, conn, line)
            else:
                conn.sendall(self.answer(line))
        except OSError:
            pass
        finally:
            conn.close()

    def loop(self) -> None:
        import select
        import time

        poller = select.poll()
        poller.register(self.ifd, select.POLLIN)
        poller.register(self.listener.fileno(), select.POLLIN)
        last = time.monotonic()
        while self.stop is None:
            wait = last + self.idle - time.monotonic()
            if wait <= 0:
                self.stop = "idle"
                break
            for fd, _events in poller.poll(int(wait * 1000) + 1):
                if fd == self.ifd:
                    self.drain()
                    continue
                while self.stop is None:
                    try:
                        conn, _addr = self.listener.accept()
                    except (BlockingIOError, InterruptedError):
                        break
                    except OSError:
                        break
                    self.serve_connection(conn)
                    last = time.monotonic()
                    if self.stop is None:
                        self.check_socket()

    def run(self) -> int:
        import contextlib
        import signal

        def on_signal(signum: int, frame: object) -> None:
            raise _Stop(signum)

        stops = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
        for signum in stops:
            signal.signal(signum, on_signal)
        try:
            try:
                self.open_inotify()
                bound = self.bind()
                with contextlib.suppress(OSError):  # starting is over: let others start
                    os.unlink(self.sock_path + ".spawn")
                if not bound:
                    return 0  # another daemon serves this socket
                # Watch the socket's directory too: the socket file removed or replaced
                # (e.g. by a daemon that found it dead) ends this daemon promptly.
                self.sock_wd = self._add_watch(os.path.dirname(self.sock_path),
                                               SOCKET_DIR_MASK)
                self.check_socket()
            except OSError:
                return 1
            if self.serve_reads:
                from ledgit import watch as module  # this file may also run as __main__
                from ledgit.readserver import prepare

                module._local = self
                prepare()
            self.loop()
            return 0
        except _Stop:
            return 0
        finally:
            signal.pthread_sigmask(signal.SIG_BLOCK, stops)
            if self.sock_id is not None:
                self.unbind()
            if self.ifd >= 0:
                os.close(self.ifd)


def serve(tasks_dir: str, sock_path: str, idle: float = DEFAULT_IDLE,
          serve_reads: bool = False) -> int:
    """Run a daemon in this process until it should exit; return the exit status.

    ``tasks_dir``: the flat directory to watch (no recursion). ``sock_path``: where to listen
    (AF_UNIX, SOCK_STREAM, mode 0600). ``idle``: seconds without a request before exiting.

    Exits (status 0) after ``idle`` seconds without a request; when the watched directory is
    deleted, moved or unmounted (IN_DELETE_SELF/IN_MOVE_SELF/IN_UNMOUNT/IN_IGNORED, inotify(7))
    or its path names another directory; when its socket file is removed or replaced, or its
    directory removed; on SIGTERM/SIGINT/SIGHUP; at once when another live daemon already
    listens at ``sock_path``. Status 1: the directory cannot be watched or the socket path
    cannot be bound. Changes the process's working directory to ``/`` and its umask to 0177.
    ``serve_reads``: also run ledgit's read commands for clients (:mod:`ledgit.readserver`;
    ledgit's own :func:`spawn` asks for it).
    """
    tasks_dir = os.path.abspath(tasks_dir)
    sock_path = os.path.abspath(sock_path)
    os.chdir("/")
    os.umask(0o177)
    return _Daemon(tasks_dir, sock_path, idle, serve_reads).run()


def main(argv: "Sequence[str] | None" = None) -> int:
    """``python -m ledgit.watch serve TASKS_DIR SOCKET_PATH [--idle SECONDS]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m ledgit.watch",
                                     description="ledgit's file-change watcher daemon")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="watch TASKS_DIR, answer at SOCKET_PATH")
    p_serve.add_argument("tasks_dir")
    p_serve.add_argument("socket_path")
    p_serve.add_argument("--idle", type=float, default=DEFAULT_IDLE,
                         help="exit after this many seconds without a request (default 600)")
    p_serve.add_argument("--serve-reads", action="store_true",
                         help="also run ledgit's read commands for clients "
                              "(ledgit.readserver)")
    args = parser.parse_args(argv)
    if args.idle <= 0:
        parser.error("--idle must be positive")
    # Descriptors the starting process let us inherit are not ours (spawn uses posix_spawn,
    # which closes none): a pipe held open here would keep its reader waiting.
    os.closerange(3, 1 << 20)
    return serve(args.tasks_dir, args.socket_path, args.idle, args.serve_reads)


if __name__ == "__main__":
    import sys

    sys.exit(main())
