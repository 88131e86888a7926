"""Reads answered by the worktree's watcher daemon (docs/watch.md, "Read server").

A read command (``get``, ``list``, ``search``, ``ready``) spends most of its time starting:
the interpreter, then ~5 ms of imports (SQLite's C library alone ~1 ms), then opening the
index for the first time in the process. The watcher daemon of a big board
(:mod:`ledgit.watch`, boards of >= 1,000 tasks) is a long-lived process of the same
interpreter and the same ledgit, so it keeps those modules imported and runs the read for
the client -- the design of dmypy and nailgun. The client sends its command line, working
directory, environment and umask; the daemon runs :func:`ledgit.__main__.run` exactly as the
client would, with ``sys.stdout``/``sys.stderr`` recording every write in order, and sends
back the exit code and the writes. The client then *replays* them through its own
``sys.stdout``/``sys.stderr`` under the same error handling as an in-process read
(:func:`ledgit.commands.guarded`): its own encoding, buffering, pipes and terminal.

What keeps an answer the client's own:

* the daemon never writes to the client's terminal or pipes and holds none of its
  descriptors: a slow reader of the output (``ledgit list | less``), a reader that goes
  away, Ctrl-C or a full disk act on the client alone, as for an in-process read, and never
  stall the daemon; nothing is written until the whole answer has arrived, so a daemon that
  dies, hangs or refuses at any point leaves the client free to read in-process instead;
* for the read, ``os.environ``, the working directory (checked to be the client's very
  directory, by device and inode, and so is the board root), the umask and ``sys.argv`` are
  the client's, restored afterwards. Nothing else is kept from one read to the next: every
  read opens the board and the index afresh and closes them, and its index refresh asks the
  daemon's own watcher state directly;
* only command lines that :mod:`ledgit.argspec` reads are run (help and usage errors are
  click's, in the client);
* the daemon serves only a client of the same code: the same interpreter (``sys.executable``,
  version, flags, file-system encoding) and the same ledgit (its package path,
  :func:`code_identity`; the daemon checks the name, size and mtime of every module of the
  package against what it loaded, so the client stats none). A different interpreter or ledgit is
  refused (the client runs the read itself); the same path with changed files (an upgrade, an
  edit) is refused *and* ends the daemon, so the next read starts a daemon of the new code.
  The daemon also ends when a file of a third-party module it loaded (PyYAML...) changes.

Protocol (one connection per read): the client sends one JSON line ``{"run": [args...],
"code": IDENTITY, "cwd": ..., "cwd_id": [dev, ino], "root": ..., "root_id": [dev, ino],
"env": {...}, "umask": N, "argv0": ..., "streams": [[encoding, errors, isatty], x2]}``;
the daemon answers ``+`` at once (it is there and free), then either ``{"refused":
REASON}\\n`` or ``{"exit": N, "writes": [stream, bytes, ...]}\\n`` followed by the
written text (UTF-8, lone surrogates passed through), the writes one after the other.

The client half (:func:`run_remote`) imports ``_socket`` and ``_json`` (C modules),
:mod:`ledgit.locate`, :mod:`ledgit.watch` and, to replay, :mod:`ledgit.commands`; the daemon
half (:func:`prepare`, :func:`serve_run`) runs in the daemon. A read run by the daemon
blocks its other requests for as long as the read runs (not the client's output): a client
kept waiting more than :data:`CONNECT_TIMEOUT` for the daemon's ``+`` runs its read itself.
"""

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

READS = frozenset(("get", "list", "search", "ready"))  # commands the daemon may run
CONNECT_TIMEOUT = 0.5  # seconds for connect, send and the daemon's "+" (it is free)
RESULT_TIMEOUT = 10.0  # seconds for the answer after the "+" (then: read in-process)
_OFFER = b"+"
_CHUNK = 65536
_serving = False  # True while the daemon runs a read: that read never goes remote again


# --------------------------------------------------------------------------- client


def code_identity() -> str:
    """What a daemon and a client must share to answer for each other: the interpreter
    (:func:`_interpreter`) and ledgit's package directory. That the files in it are still
    those the daemon loaded, the daemon checks itself (:func:`_package_files`): the client
    pays no stat for it."""
    return _interpreter() + "\n" + os.path.dirname(os.path.abspath(__file__))


def _package_files(package: str) -> "list[str]":
    """Name, size and mtime (ns) of every ``*.py`` file directly in ``package``: one
    ``os.scandir`` and a stat per module (~0.1 ms)."""
    files = []
    try:
        with os.scandir(package) as entries:
            for entry in entries:
                if entry.name.endswith(".py"):
                    st = entry.stat()
                    files.append(f"{entry.name}:{st.st_size}:{st.st_mtime_ns}")
    except OSError:
        files.append("?")
    files.sort()
    return files


def _interpreter() -> str:
    """The interpreter's part of :func:`code_identity`: its binary (symlinks resolved),
    version, the flags that change what code does or which modules load, warning options
    and file-system encoding (not, e.g., ``dont_write_bytecode``)."""
    f = sys.flags
    flags = (f.optimize, f.dev_mode, f.utf8_mode, f.bytes_warning, f.int_max_str_digits,
             f.isolated, f.ignore_environment, f.no_site, f.no_user_site,
             getattr(f, "safe_path", False))  # 3.11+
    return "|".join((os.path.realpath(sys.executable), sys.version, repr(flags),
                     repr(sys.warnoptions), sys.getfilesystemencoding(),
                     sys.getfilesystemencodeerrors()))


def run_remote(args: "list[str]") -> "int | None":
    """Run the read command line ``args`` (``args[0]`` in :data:`READS`) in this worktree's
    watcher daemon and replay its output here; the exit code, or None when no daemon
    answered it (then the caller runs it itself: nothing has been written).

    None when: ``LEDGIT_WATCH`` is off or the platform has no watcher, there is no board (the
    caller reports that), no daemon socket, ``sys.stdout`` or ``sys.stderr`` is None (a
    descriptor closed at startup), the daemon does not answer within
    :data:`CONNECT_TIMEOUT` (busy, stopped) or does not finish within
    :data:`RESULT_TIMEOUT`, refuses (another interpreter or ledgit, a command line for
    click, another directory behind the same path) or the connection fails. Never raises
    for those. An error while the output is replayed (a closed pipe, an unencodable
    character, a full disk) goes to :func:`ledgit.commands.guarded`, as the command's own
    would in-process (:func:`_replay`)."""
    if _serving or not args or args[0] not in READS:
        return None
    if sys.stdout is None or sys.stderr is None:
        return None
    from ledgit import watch

    if not watch.available():
        return None
    from ledgit.locate import find_root, git_dir_for, private_dir

    try:
        root, _pinned = find_root()
        if root is None:
            return None  # the caller reports it
        sock_path = watch.socket_path(private_dir(root, git_dir_for(root)))
    except OSError:
        return None
    if sock_path is None:
        return None
    import _socket

    try:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        answer = _exchange(sock, sock_path, args, root)
    except KeyboardInterrupt as exc:
        return _as_in_process(exc)  # "ledgit: interrupted", 130
    finally:
        sock.close()
    if answer is None:
        return None
    code, writes = answer
    return _replay(writes, code)


def _as_in_process(exc: BaseException) -> int:
    """The exit code (and stderr line) :func:`ledgit.commands.guarded` gives when a command
    raises ``exc``."""
    from ledgit.commands import guarded

    def again() -> int:
        raise exc

    return guarded(again)


def _exchange(sock: "Any", sock_path: str, args: "list[str]",
              root: str) -> "tuple[int, list[Any]] | None":
    """Connect, send the request, read the answer: (exit code, [(stream, text), ...]), or
    None (no daemon, a refusal, a timeout, a broken answer). Raises KeyboardInterrupt."""
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(sock_path)  # first: a board without a daemon pays no more than this
        if os.stat(sock_path).st_uid != os.geteuid():
            return None  # another user's daemon (root's, say): never theirs to answer
        sock.sendall(_request(args, root))
        if sock.recv(1) != _OFFER:
            return None
        sock.settimeout(RESULT_TIMEOUT)
        data = b""
        while b"\n" not in data:
            chunk = sock.recv(_CHUNK)
            if not chunk:
                return None
            data += chunk
        head, _, rest = data.partition(b"\n")
        from ledgit.watch import _decode

        header = _decode(head)
        if not isinstance(header, dict) or not isinstance(header.get("exit"), int):
            return None  # a refusal, or not the protocol
        sizes = header.get("writes")
        if not isinstance(sizes, list) or len(sizes) % 2 \
                or not all(isinstance(n, int) and n >= 0 for n in sizes):
            return None
        total = sum(sizes[1::2])
        body = [rest]
        have = len(rest)
        while have < total:
            chunk = sock.recv(max(_CHUNK, total - have))
            if not chunk:
                return None
            body.append(chunk)
            have += len(chunk)
    except (OSError, ValueError, TypeError, StopIteration):
        return None  # nothing written yet: the caller reads in-process
    text = b"".join(body)
    writes = []
    at = 0
    for i in range(0, len(sizes), 2):
        size = sizes[i + 1]
        writes.append((sizes[i], text[at:at + size].decode("utf-8", "surrogatepass")))
        at += size
    return header["exit"], writes


def _replay(writes: "list[Any]", code: int) -> int:
    """Write what the daemon's read wrote, in order, through this process's streams, and
    return the read's exit code: stdout as :func:`ledgit.commands.out` writes, stderr as
    :func:`ledgit.commands.err` does (flushed, a closed stderr ignored), stdout flushed at
    the end as :func:`ledgit.commands.guarded` does. An exception on the way (a closed
    pipe, an unencodable character, a full disk, Ctrl-C) is handed to ``guarded``, which
    ends the command as it would have ended in-process."""
    try:
        for stream, text in writes:
            if stream == 1:
                sys.stdout.write(text)
            else:
                try:
                    sys.stderr.write(text)
                    sys.stderr.flush()
                except (OSError, ValueError):  # = commands.err: a closed or full stderr
                    pass
        sys.stdout.flush()
    except BaseException as exc:  # noqa: BLE001 - guarded decides, as for the command
        return _as_in_process(exc)
    return int(code)


def _request(args: "list[str]", root: str) -> bytes:
    """The request line (JSON, built with the C string encoder of ``_json``: reads do not
    import the json package). Raises OSError when the working directory is gone."""
    from _json import encode_basestring_ascii as enc

    umask = os.umask(0o022)
    os.umask(umask)
    env = ",".join(enc(k) + ":" + enc(v) for k, v in os.environ.items())
    streams = ",".join(f"[{enc(getattr(s, 'encoding', None) or 'utf-8')},"
                       f"{enc(getattr(s, 'errors', None) or 'strict')},"
                       f"{'true' if _isatty(s) else 'false'}]"
                       for s in (sys.stdout, sys.stderr))
    argv0 = sys.argv[0] if sys.argv else "ledgit"
    cwd = os.getcwd()
    here, top = os.stat(cwd), os.stat(root)
    tasks = os.stat(os.path.join(root, ".ledgit", "tasks"))
    text = (f'{{"run":[{",".join(enc(a) for a in args)}],"code":{enc(code_identity())},'
            f'"cwd":{enc(cwd)},"cwd_id":[{here.st_dev},{here.st_ino}],'
            f'"root":{enc(root)},"root_id":[{top.st_dev},{top.st_ino}],'
            f'"tasks_id":[{tasks.st_dev},{tasks.st_ino}],'
            f'"umask":{umask},"argv0":{enc(argv0)},'
            f'"spawnable":{"true" if _spawnable() else "false"},'
            f'"streams":[{streams}],"env":{{{env}}}}}\n')
    return text.encode("ascii")


def _spawnable() -> bool:
    """Whether a daemon this client starts (``watch.spawn``: the same interpreter, no
    command-line flags, no per-invocation Python variables) would have its interpreter
    settings: no ``-O``, ``-X dev``, ``-W``, ``-I``/``-E``/``-s``/``-S``/``-P``, ``-b``."""
    f = sys.flags
    return not (f.optimize or f.dev_mode or sys.warnoptions or f.isolated
                or f.ignore_environment or f.no_site or f.no_user_site or f.bytes_warning
                or getattr(f, "safe_path", False) or f.int_max_str_digits != -1)


def _isatty(stream: "Any") -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


# --------------------------------------------------------------------------- daemon

_identity: "str | None" = None  # this daemon's code_identity()
_files_at_start: "list[str]" = []  # _package_files() before the daemon's imports
_package: "str | None" = None
_dependencies: "dict[str, tuple[int, int]]" = {}  # module file -> (size, mtime ns) first seen
_module_count = [0]  # len(sys.modules) when _dependencies was last extended
_refused = [0]  # clients of other code refused in a row
REFUSALS_BEFORE_EXIT = 3
_baseline: "list[int]" = []  # open descriptors after the preload
_LEAK_LIMIT = 16  # more descriptors open after a read than that: the daemon ends

# What a read imports, loaded once in the daemon.
PRELOAD = ("ledgit.__main__", "ledgit.argspec", "ledgit.commands", "ledgit.board",
           "ledgit.index", "ledgit.readout", "ledgit.lifecycle", "ledgit.config",
           "ledgit.errors", "ledgit.watch", "ledgit.record", "ledgit.canonjson", "yaml",
           "_sqlite3", "_json", "encodings.ascii", "json")


def prepare() -> None:
    """In the daemon, once, before serving: note the code identity, then import what the
    reads import (:data:`PRELOAD`; a module that fails to import is left to the read,
    which reports it), then note the files of the third-party modules now loaded and the
    number of open descriptors (both are checked at every read)."""
    global _identity, _package
    import importlib

    _identity = code_identity()
    _package = os.path.dirname(os.path.abspath(__file__))
    _files_at_start[:] = _package_files(_package)
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001,S112 - the read will import (and report) it
            continue
    _dependencies.clear()
    _dependencies.update((path, (size, mtime)) for path, size, mtime in _third_party_files())
    _module_count[0] = len(sys.modules)
    _baseline[:] = [_open_descriptors()]


def serve_run(daemon: "Any", conn: "Any", line: bytes) -> None:
    """Answer one run request (``line``) on ``conn``: ``+``, then a refusal or the exit code
    and the writes of the read run as the client (:func:`_as_client`). A request of the same
    interpreter and package path but other files, or a changed third-party module file, sets
    ``daemon.stop`` (stale code: the daemon ends and the next read starts one of the new
    code), and so does a read that leaves descriptors open. Raises OSError when the
    connection fails."""
    import json

    conn.sendall(_OFFER)  # fails (EPIPE) for a client that has given up waiting: run nothing
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        message = None
    refusal = _refusal(daemon, conn, message)
    writes: list[tuple[int, str]] = []
    code = None if refusal else _as_client(daemon, message, writes)
    if code is None:
        conn.sendall(b'{"refused": "%s"}\n' % (refusal or "another directory").encode())
        return
    daemon.reads += 1
    _refused[0] = 0
    if _open_descriptors() > _baseline[0] + _LEAK_LIMIT:
        daemon.stop = "descriptor leak"
    payload = [text.encode("utf-8", "surrogatepass") for _stream, text in writes]
    sizes = ",".join(f"{stream},{len(data)}" for (stream, _t), data in zip(writes, payload,
                                                                              strict=True))
    conn.sendall(b'{"exit": %d, "writes": [%s]}\n' % (code, sizes.encode()) + b"".join(payload))


def _refusal(daemon: "Any", conn: "Any", message: "Any") -> "str | None":
    """Why the daemon will not run this request, or None. A daemon that has refused
    :data:`REFUSALS_BEFORE_EXIT` clients of other code in a row, serving none, ends: the
    readers of this worktree run another interpreter or ledgit than the one that happened
    to start it, and the next read starts one of theirs. Only clients whose own start
    would give a daemon of their settings count (``spawnable``: not ``python -O``, say,
    which no daemon started by ``spawn`` could serve)."""
    if not isinstance(message, dict) or not _valid(message):
        return "bad request"
    if not _same_user(conn):
        return "another user"
    if message["code"] == _identity and _package_files(_package or "") != _files_at_start:
        daemon.stop = "stale code"  # same interpreter and package path, files changed
        return "other code"
    if message["code"] != _identity:
        if message.get("spawnable") is True:  # a daemon of its own would serve it
            _refused[0] += 1
            if _refused[0] >= REFUSALS_BEFORE_EXIT:
                daemon.stop = "clients of other code"
        return "other code"
    if not _dependencies_unchanged():
        daemon.stop = "stale code"
        return "other code"
    from ledgit.argspec import find, parse
    from ledgit.commands import FAST

    found = find(FAST, message["run"])
    if found is None or parse(found[0], found[1]) is None:
        return "click's"  # help, a usage error: the client's click answers
    return None


def _valid(message: "dict[str, Any]") -> bool:
    run, env, streams = message.get("run"), message.get("env"), message.get("streams")
    ids = (message.get("cwd_id"), message.get("root_id"), message.get("tasks_id"))
    return (isinstance(run, list) and bool(run) and all(isinstance(a, str) for a in run)
            and run[0] in READS
            and isinstance(message.get("code"), str) and isinstance(message.get("cwd"), str)
            and isinstance(message.get("root"), str) and isinstance(message.get("argv0"), str)
            and isinstance(message.get("umask"), int)
            and all(isinstance(i, list) and len(i) == 2
                    and all(isinstance(n, int) for n in i) for i in ids)
            and isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
            and isinstance(streams, list) and len(streams) == 2
            and all(isinstance(s, list) and len(s) == 3 and isinstance(s[0], str)
                    and isinstance(s[1], str) and isinstance(s[2], bool) for s in streams))


def _as_client(daemon: "Any", message: "dict[str, Any]",
               writes: "list[tuple[int, str]]") -> "int | None":
    """Run ``message["run"]`` through :func:`ledgit.__main__.run` with the client's
    environment, working directory, umask and argv, and streams that record into
    ``writes``; put the daemon's own back afterwards. The exit code, or None when the
    client's directory or board root is not the same directory here, or its tasks directory
    is not the one this daemon watches (another mount namespace, a path changed in
    between)."""
    import contextlib
    import time

    global _serving
    saved_env = dict(os.environ)
    saved_umask = os.umask(message["umask"])
    saved_argv = sys.argv
    saved_streams = (sys.stdout, sys.stderr)
    # Variables that cannot be set are left out: a read never looks at them.
    env = {key: value for key, value in message["env"].items()
           if key and "=" not in key and "\0" not in key and "\0" not in value}
    other_env = env != saved_env  # usually the same: the daemon has its starter's
    try:
        if other_env:
            os.environ.clear()
            os.environ.update(env)
            time.tzset()
        try:
            os.chdir(message["cwd"])
            here, top = os.stat("."), os.stat(message["root"])
        except OSError:
            return None
        if [here.st_dev, here.st_ino] != message["cwd_id"] \
                or [top.st_dev, top.st_ino] != message["root_id"] \
                or tuple(message["tasks_id"]) != tuple(daemon.tasks_id):
            return None  # not the directories, or not the tasks, this daemon watches
        sys.argv = [message["argv0"], *message["run"]]
        (out_enc, out_err, out_tty), (err_enc, err_err, err_tty) = message["streams"]
        sys.stdout = _Recorder(1, writes, out_enc, out_err, out_tty)
        sys.stderr = _Recorder(2, writes, err_enc, err_err, err_tty)
        _serving = True
        daemon.serving = True
        from ledgit.__main__ import run

        try:
            return run(list(message["run"]))
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        _serving = False
        daemon.serving = False
        sys.stdout, sys.stderr = saved_streams
        if other_env or dict(os.environ) != saved_env:  # (a read that set one)
            os.environ.clear()
            os.environ.update(saved_env)
            time.tzset()
        with contextlib.suppress(OSError):
            os.chdir("/")
        os.umask(saved_umask)
        sys.argv = saved_argv


class _Recorder:
    """A text stream that keeps each write as ``(stream, text)`` in a shared list (stdout 1,
    stderr 2), answering ``encoding``, ``errors`` and ``isatty()`` as the client's does."""

    def __init__(self, stream: int, writes: "list[tuple[int, str]]", encoding: str,
                 errors: str, tty: bool) -> None:
        self._stream = stream
        self._writes = writes
        self.encoding = encoding
        self.errors = errors
        self._tty = tty

    def write(self, text: str) -> int:
        self._writes.append((self._stream, str(text)))
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return self._tty

    def writable(self) -> bool:
        return True


def _dependencies_unchanged() -> bool:
    """Whether every module file noted so far is as it was when first noted (modules loaded
    since the last call are noted now, as they are)."""
    if len(sys.modules) != _module_count[0]:
        _module_count[0] = len(sys.modules)
        for path, size, mtime in _third_party_files():
            _dependencies.setdefault(path, (size, mtime))
    for path, (size, mtime) in _dependencies.items():
        try:
            st = os.stat(path)
            now = (st.st_size, st.st_mtime_ns)
        except OSError:
            now = (-1, -1)
        if now != (size, mtime):
            return False
    return True


def _third_party_files() -> "list[tuple[str, int, int]]":
    """(path, size, mtime ns) of the file of every loaded module outside the standard
    library and outside ledgit's package (which :func:`code_identity` covers): PyYAML's,
    wherever it was found (a site-packages directory, ``PYTHONPATH``, a checkout); a file
    that cannot be stat-ed counts as (-1, -1)."""
    import sysconfig

    std = tuple(os.path.join(sysconfig.get_paths()[k], "")
                for k in ("stdlib", "platstdlib"))
    own = os.path.join(_package or "", "")  # ledgit's own files: the code identity's
    found = []
    for path in sorted({path for module in list(sys.modules.values())
                        if isinstance(path := getattr(module, "__file__", None), str)
                        and (not path.startswith(std) or "site-packages" in path)
                        and not path.startswith(own)}):
        try:
            st = os.stat(path)
            found.append((path, st.st_size, st.st_mtime_ns))
        except OSError:
            found.append((path, -1, -1))
    return found


def _same_user(conn: "Any") -> bool:
    """The connected client runs as this daemon's user and group (SO_PEERCRED, unix(7));
    True where the credentials cannot be read (then the socket's 0600 mode decides)."""
    import socket
    import struct

    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    try:
        _pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, option,
                                                             struct.calcsize("3i")))
    except OSError:
        return True
    return bool(uid == os.geteuid() and gid == os.getegid())


def _open_descriptors() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0
