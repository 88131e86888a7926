"""Reads answered by the worktree's watcher daemon (docs/watch.md, "Read server").

A read command (``get``, ``list``, ``search``, ``ready``) spends most of its time starting:
the interpreter, then ~5 ms of imports (SQLite's C library alone ~1 ms), then opening the
index for the first time in the process. The watcher daemon of a big board
(:mod:`ledgit.watch`, boards of >= 1,000 tasks) is a long-lived process of the same
interpreter and the same ledgit, so it keeps those modules imported and runs the read for
the client -- the design of dmypy and nailgun. The client sends its command line, working
directory, environment and umask, and its stdin/stdout/stderr themselves (``SCM_RIGHTS``,
unix(7)); the daemon takes them over for the length of the read, runs
:func:`ledgit.__main__.run` exactly as the client would, writing straight to the client's
stdout/stderr, sends back only the exit code and then puts its own state back.

What keeps an answer the client's own:

* for the read, file descriptors 0, 1 and 2, ``os.environ``, the working directory, the
  umask, ``sys.argv`` and ``sys.stdin/stdout/stderr`` (with the client's encodings and
  buffering) are the client's; a terminal stays a terminal, a pipe closed early is the
  client's pipe. All are restored afterwards. Nothing else is kept from one read to the
  next: every read opens the board and the index afresh (the daemon holds no connection),
  and the read's index refresh asks the daemon's own watcher state directly;
* the daemon serves only a client of the same code: the same interpreter (``sys.executable``,
  version, flags, file-system encoding) and the same ledgit files (path, size and mtime of
  every module of the package, :func:`code_identity`). A different interpreter or ledgit is
  refused (the client runs the read itself); the same path with changed files (an upgrade, an
  edit) is refused *and* ends the daemon, so the next read starts a daemon of the new code;
* anything that goes wrong before the daemon has started the read (no daemon, a refusal,
  a closed descriptor, a daemon busy with another read for :data:`CONNECT_TIMEOUT`) makes
  :func:`run_remote` return None and the client runs the read itself. A two-step start
  makes that safe: the daemon offers (``+``), the client commits (``!``) or gives up, and
  the daemon runs nothing for a client that gave up -- a read never runs twice. After
  committing the client waits for the exit code; a connection lost without one is an
  internal error (exit 70).

Protocol (one connection per read): the client sends one JSON line ``{"run": [args...],
"code": IDENTITY, "cwd": ..., "env": {...}, "umask": N, "argv0": ..., "streams": [[encoding,
errors, line_buffering], x2]}``; the daemon answers either ``{"refused": REASON}\\n`` or
``+``; the client's ``!`` carries its fds 0, 1, 2 (only then: a daemon that never gets to
the connection holds none of the client's descriptors); the read runs and the daemon sends
``{"exit": N}\\n``.

The client half (:func:`run_remote`) imports only ``os``, ``sys``, ``_socket`` and ``_json``
(C modules) besides :mod:`ledgit.locate` and :mod:`ledgit.watch`; the daemon half
(:func:`prepare`, :func:`serve_run`) runs in the daemon. A read served by the daemon blocks
its other requests for as long as it runs; reads are short, and a client kept waiting more
than :data:`CONNECT_TIMEOUT` runs its read itself.
"""

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

READS = frozenset(("get", "list", "search", "ready"))  # commands the daemon may run
CONNECT_TIMEOUT = 0.5  # seconds for connect, send and the daemon's offer
_FD_BYTES = 4  # sizeof(int) of an SCM_RIGHTS descriptor (unix(7))
_OFFER = b"+"
_COMMIT = b"!"
_serving = False  # True while the daemon runs a read: that read never goes remote again


# --------------------------------------------------------------------------- client


def code_identity() -> str:
    """What a daemon and a client must share to answer for each other: the interpreter
    (:func:`_interpreter`), ledgit's package directory and the name, size and mtime (ns) of every
    ``*.py`` file directly in it. One ``os.scandir`` and a stat per module (~0.2 ms)."""
    package = os.path.dirname(os.path.abspath(__file__))
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
    return "\n".join([_interpreter(), package, *files])


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
    watcher daemon; its exit code, or None when no daemon took it (then the caller runs it
    itself: nothing has been written to stdout or stderr).

    None when: ``LEDGIT_WATCH`` is off or the platform has no watcher, there is no board (the
    caller reports that), no daemon socket, descriptor 0, 1 or 2 was closed when Python
    started, ``sys.stdout``/``sys.stderr`` are not the process's own (a caller capturing
    output), the connection or the send fails or takes longer than :data:`CONNECT_TIMEOUT`,
    or the daemon refuses (another interpreter or ledgit). Never raises for those. After the
    client committed, a connection lost without an exit code gives 70 and one stderr line
    (the command's output may be partly written; it is not run twice)."""
    if _serving or not args or args[0] not in READS:
        return None
    if sys.stdin is None or sys.stdout is None or sys.stderr is None:
        return None  # a descriptor 0-2 was closed at startup: another file may hold it now
    if sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__:
        return None  # output redirected inside this process (a caller capturing it)
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
        return _exchange(sock, sock_path, args)
    finally:
        sock.close()


def _exchange(sock: "Any", sock_path: str, args: "list[str]") -> "int | None":
    import _socket

    fds = b"".join(fd.to_bytes(_FD_BYTES, sys.byteorder) for fd in (0, 1, 2))
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(sock_path)
        sock.sendall(_request(args))
        if sock.recv(1) != _OFFER:
            return None  # a refusal (or a daemon that went away): run the read here
        # The descriptors go with the commit, never before: a daemon that does not get to
        # this connection holds no reference to the client's stdout.
        sock.sendmsg([_COMMIT], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    except (OSError, ValueError, TypeError):
        return None  # nothing committed: the daemon runs nothing for this connection
    sock.settimeout(None)  # the read itself may take as long as it takes here
    data = b""
    try:
        while not data.endswith(b"\n"):
            chunk = sock.recv(64)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    except KeyboardInterrupt:
        sys.stderr.write("ledgit: interrupted\n")
        return 130
    code = _exit_code(data)
    if code is None:
        sys.stderr.write("ledgit: internal error: the watcher daemon ended the read without "
                         "an exit status (set LEDGIT_WATCH=0 to run reads in-process)\n")
        return 70
    return code


def _request(args: "list[str]") -> bytes:
    """The request line (JSON, built with the C string encoder of ``_json``: reads do not
    import the json package)."""
    from _json import encode_basestring_ascii as enc

    umask = os.umask(0o022)
    os.umask(umask)
    env = ",".join(enc(k) + ":" + enc(v) for k, v in os.environ.items())
    streams = ",".join(f"[{enc(s.encoding)},{enc(s.errors or 'strict')},"
                       f"{'true' if s.line_buffering else 'false'}]"
                       for s in (sys.stdout, sys.stderr))
    argv0 = sys.argv[0] if sys.argv else "ledgit"
    text = (f'{{"run":[{",".join(enc(a) for a in args)}],"code":{enc(code_identity())},'
            f'"cwd":{enc(os.getcwd())},"umask":{umask},"argv0":{enc(argv0)},'
            f'"streams":[{streams}],"env":{{{env}}}}}\n')
    return text.encode("ascii")


def _exit_code(data: bytes) -> "int | None":
    """N from ``{"exit": N}\\n``, else None."""
    text = data.strip()
    prefix, suffix = b'{"exit": ', b"}"
    if text.startswith(prefix) and text.endswith(suffix):
        digits = text[len(prefix):-len(suffix)]
        if digits.isdigit():
            return int(digits)
    return None


# --------------------------------------------------------------------------- daemon

_identity: "str | None" = None  # this daemon's code_identity(), taken before its imports
_interpreter_id: "str | None" = None
_package: "str | None" = None

# What a read imports, loaded once in the daemon.
PRELOAD = ("ledgit.__main__", "ledgit.argspec", "ledgit.commands", "ledgit.board",
           "ledgit.index", "ledgit.readout", "ledgit.lifecycle", "ledgit.config",
           "ledgit.errors", "ledgit.watch", "_sqlite3", "_json", "encodings.ascii", "json")


def prepare() -> None:
    """In the daemon, once, before serving: note the code identity, then import what the
    reads import (:data:`PRELOAD`; a module that fails to import is left to the read,
    which reports it)."""
    global _identity, _interpreter_id, _package
    import importlib

    _identity = code_identity()
    _interpreter_id = _interpreter()
    _package = os.path.dirname(os.path.abspath(__file__))
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001,S112 - the read will import (and report) it
            continue


def serve_run(daemon: "Any", conn: "Any", line: bytes) -> None:
    """Answer one run request (``line``) on ``conn``: refuse it, or offer, wait for the
    client's commit (which carries its descriptors 0, 1, 2) and run it as the client
    (:func:`_as_client`); the descriptors are closed afterwards. A request of the same
    interpreter and package path but other files sets ``daemon.stop`` (stale code: the
    daemon ends and the next read starts one of the new code). Raises OSError when the
    connection fails."""
    import json

    from ledgit.watch import read_commit

    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if not isinstance(message, dict) or not _valid(message):
        conn.sendall(b'{"refused": "bad request"}\n')
        return
    if message["code"] != _identity:
        conn.sendall(b'{"refused": "other code"}\n')
        if message["code"].split("\n", 2)[:2] == [_interpreter_id, _package]:
            daemon.stop = "stale code"  # same interpreter and path, files changed
        return
    conn.sendall(_OFFER)
    fds: list[int] = []
    try:
        commit = read_commit(conn, fds)
        if commit != _COMMIT or len(fds) != 3:
            return  # the client gave up (and runs the read itself)
        code = _as_client(daemon, message, fds)
    finally:
        for fd in fds:  # the daemon must not hold a client's pipe or terminal open
            os.close(fd)
    daemon.reads += 1
    conn.sendall(b'{"exit": %d}\n' % code)


def _valid(message: "dict[str, Any]") -> bool:
    run, env, streams = message.get("run"), message.get("env"), message.get("streams")
    return (isinstance(run, list) and bool(run) and all(isinstance(a, str) for a in run)
            and run[0] in READS
            and isinstance(message.get("code"), str) and isinstance(message.get("cwd"), str)
            and isinstance(message.get("argv0"), str)
            and isinstance(message.get("umask"), int)
            and isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
            and isinstance(streams, list) and len(streams) == 2
            and all(isinstance(s, list) and len(s) == 3 and isinstance(s[0], str)
                    and isinstance(s[1], str) and isinstance(s[2], bool) for s in streams))


def _as_client(daemon: "Any", message: "dict[str, Any]", fds: "list[int]") -> int:
    """Run ``message["run"]`` through :func:`ledgit.__main__.run` with the client's
    descriptors on 0/1/2, environment, working directory, umask, argv and stdio streams;
    put the daemon's own back afterwards. Returns the exit code."""
    import contextlib
    import io
    import time

    global _serving
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    saved_env = dict(os.environ)
    saved_umask = os.umask(message["umask"])
    saved_argv = sys.argv
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    code = 70
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.environ.clear()
        os.environ.update(message["env"])
        time.tzset()
        os.chdir(message["cwd"])
        sys.argv = [message["argv0"], *message["run"]]
        streams = []
        for fd, (encoding, errors, line_buffering) in zip((1, 2), message["streams"],
                                                      strict=True):
            raw = io.FileIO(fd, "w", closefd=False)
            streams.append(io.TextIOWrapper(io.BufferedWriter(raw), encoding=encoding,
                                            errors=errors, line_buffering=line_buffering))
        sys.stdout, sys.stderr = streams
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
        _serving = True
        daemon.serving = True
        from ledgit.__main__ import run

        code = run(list(message["run"]))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:  # noqa: BLE001 - run() guards; this is the last resort
        from ledgit.commands import err

        err(f"ledgit: internal error: {type(exc).__name__}: {exc}")
    finally:
        _serving = False
        daemon.serving = False
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for target, fd in enumerate(saved_fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(saved_env)
        time.tzset()
        os.chdir("/")
        os.umask(saved_umask)
        sys.argv = saved_argv
    return code
