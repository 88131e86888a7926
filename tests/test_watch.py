"""ledgit.watch: real daemons on real directories (no mocks). Linux only.

Every daemon a test starts is killed by the ``daemons`` fixture's finalizer: those started
through :class:`Daemons` by their Popen, and any other (``watch.spawn``) found by its command
line, which holds the test's own unique temporary directory. Daemons run with short idle
timeouts as a second line of defence. Waits poll with generous deadlines; nothing asserts on
timing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ledgit import watch

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not os.path.isdir("/proc/sys/fs/inotify"),
    reason="the watcher needs Linux inotify")

DEADLINE = 15.0  # seconds: generous, for a loaded machine under pytest -n


def wait_for(predicate: Callable[[], Any], what: str, deadline: float = DEADLINE) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``deadline`` s."""
    end = time.monotonic() + deadline
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def raw(sock: str, request: bytes) -> dict[str, Any]:
    """Send one raw request line, return the decoded reply (the protocol, with its pid)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5.0)
        s.connect(sock)
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    reply = json.loads(data)
    assert isinstance(reply, dict)
    return reply


def ask(sock: str, since: str | None) -> dict[str, Any]:
    return raw(sock, json.dumps({"since": since}).encode() + b"\n")


def pids_with(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (this test's unique dir)."""
    found = []
    needle = text.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if needle in cmdline and b"ledgit.watch" in cmdline:
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


class Daemons:
    """Starts daemons for one test and kills them all afterwards."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, tasks: str, sock: str, idle: float = 30.0) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ledgit.watch", "serve", tasks, sock, "--idle", str(idle)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        self.procs.append(proc)
        return proc

    def ready(self, sock: str) -> dict[str, Any]:
        """Wait until a daemon answers at ``sock``; its reply to ``since: null``."""
        def answer() -> dict[str, Any] | None:
            try:
                return ask(sock, None)
            except OSError:
                return None
        reply: dict[str, Any] = wait_for(answer, f"a daemon at {sock}")
        return reply

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
            if proc.stderr is not None:
                proc.stderr.close()
        for pid in pids_with(self.base):  # started by watch.spawn()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not [p for p in pids_with(self.base) if alive(p)],
                 "the test's daemons to be gone")


@pytest.fixture
def base() -> Iterator[str]:
    """A short private directory (socket paths must stay under 108 bytes)."""
    root = "/tmp" if os.path.isdir("/tmp") else None
    path = tempfile.mkdtemp(prefix="lgw-", dir=root)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def daemons(base: str) -> Iterator[Daemons]:
    d = Daemons(base)
    yield d
    d.cleanup()


@pytest.fixture
def board(base: str) -> tuple[str, str]:
    """(tasks dir, socket path) inside ``base``; the tasks dir exists."""
    tasks = os.path.join(base, "tasks")
    os.mkdir(tasks)
    sock = watch.socket_path(os.path.join(base, "priv"))
    assert sock is not None
    os.mkdir(os.path.dirname(sock))
    return tasks, sock


@pytest.fixture
def running(board: tuple[str, str], daemons: Daemons) -> tuple[str, str, str]:
    """A live daemon on ``board``: (tasks dir, socket path, its current token)."""
    tasks, sock = board
    daemons.start(tasks, sock)
    reply = daemons.ready(sock)
    return tasks, sock, reply["token"]


def write(path: str | bytes, data: bytes = b"x\n") -> None:
    with open(path, "wb") as f:
        f.write(data)


def changes(sock: str, token: str) -> tuple[str, list[str]]:
    answer = watch.query(sock, token, timeout=5.0)
    assert answer is not None
    new, names = answer
    assert names is not None
    return new, names


# --------------------------------------------------------------------------- changes


def _modify_in_place(p: str) -> None:
    with open(p, "r+b") as f:
        f.write(b"Y")


def _append(p: str) -> None:
    with open(p, "ab") as f:  # the shell's >>
        f.write(b"more\n")


def _truncate(p: str) -> None:
    os.truncate(p, 1)


def _utime(p: str) -> None:
    os.utime(p, ns=(1_000_000_000, 1_000_000_000))


def _chmod(p: str) -> None:
    os.chmod(p, 0o600)


def _delete(p: str) -> None:
    os.unlink(p)


def _rename_over(p: str) -> None:
    tmp = p + ".tmp"
    write(tmp, b"new\n")
    os.replace(tmp, p)


def _rename_away(p: str) -> None:
    os.rename(p, p + ".gone")


@pytest.mark.parametrize("change", [
    _modify_in_place, _append, _truncate, _utime, _chmod, _delete, _rename_over, _rename_away,
])
def test_each_kind_of_change_is_reported_by_name(
        running: tuple[str, str, str], change: Callable[[str], None]) -> None:
    tasks, sock, _ = running
    path = os.path.join(tasks, "t-1.md")
    write(path, b"hello\n")
    write(os.path.join(tasks, "other.md"))
    token, _names = changes(sock, running[2])
    change(path)
    token2, names = changes(sock, token)
    assert "t-1.md" in names
    assert "other.md" not in names
    assert changes(sock, token2) == (token2, [])  # reported once


def test_create_is_reported(running: tuple[str, str, str]) -> None:
    tasks, sock, token = running
    write(os.path.join(tasks, "new.md"))
    token2, names = changes(sock, token)
    assert names == ["new.md"]
    assert changes(sock, token2) == (token2, [])


def test_changes_are_reported_once_and_newest_first(running: tuple[str, str, str]) -> None:
    tasks, sock, token = running
    assert changes(sock, token) == (token, [])
    for name in ("a.md", "b.md", "a.md", "c.md"):
        write(os.path.join(tasks, name))
    token2, names = changes(sock, token)
    assert names == ["c.md", "a.md", "b.md"]  # each name once, by its last change
    token3, names = changes(sock, token2)
    assert (token3, names) == (token2, [])
    write(os.path.join(tasks, "b.md"))
    token4, names = changes(sock, token3)
    assert names == ["b.md"]
    # An older token still covers everything since it was issued.
    assert sorted(changes(sock, token)[1]) == ["a.md", "b.md", "c.md"]


def test_a_change_right_before_the_query_is_reported(running: tuple[str, str, str]) -> None:
    """The drain argument: the event is queued inside the syscall, before the request."""
    tasks, sock, token = running
    ops: list[Callable[[str], None]] = [_modify_in_place, _append, _utime, _rename_over]
    path = os.path.join(tasks, "hot.md")
    write(path)
    token, _ = changes(sock, token)
    for i in range(300):
        ops[i % len(ops)](path)
        token, names = changes(sock, token)
        assert names[:1] == ["hot.md"], (i, ops[i % len(ops)].__name__)  # + the temp name


def test_subdirectory_contents_are_not_watched(running: tuple[str, str, str]) -> None:
    tasks, sock, token = running
    os.mkdir(os.path.join(tasks, "sub"))
    token, names = changes(sock, token)
    assert names == ["sub"]
    write(os.path.join(tasks, "sub", "deep.md"))
    assert changes(sock, token) == (token, [])


ODD_NAMES = [
    "tâche-ü.md".encode(), "日本語.md".encode(), "emoji-🙂.md".encode(), b"with space.md",
    b"new\nline.md", b'quote".md', b"back\\slash.md", b"tab\t.md", b"-dash.md",
    b":colon:0.md", b"\xff\xfe-not-utf8-\xe9.md", b"\x01\x7f.md", b"{}[],.md",
]


def test_odd_names_round_trip(running: tuple[str, str, str]) -> None:
    tasks, sock, token = running
    for name in ODD_NAMES:
        write(os.path.join(os.fsencode(tasks), name))
    token, names = changes(sock, token)
    assert sorted(names) == sorted(os.fsdecode(n) for n in ODD_NAMES)
    assert sorted(names) == sorted(os.listdir(tasks))
    for decoded in names:  # usable as they come back
        assert os.stat(os.path.join(tasks, decoded)).st_size == 2
        assert os.fsencode(decoded) in ODD_NAMES


# --------------------------------------------------------------------------- tokens


def test_unknown_tokens_get_null_and_a_usable_token(
        running: tuple[str, str, str], daemons: Daemons, base: str) -> None:
    tasks, sock, token = running
    instance, _, seq = token.partition(":")
    bad = [None, "", "garbage", instance, f"{instance}:", f"{instance}:x", f"{instance}:-1",
           f"{instance}:{int(seq) + 5}", f"{instance}:١", "0" * 16 + ":0", f"{token}:0"]
    for since in bad:
        answer = watch.query(sock, since, timeout=5.0)
        assert answer is not None and answer[1] is None, since
        assert answer[0] == token  # nothing changed: the current token
    # A token of another daemon instance (another directory's daemon) is unknown here.
    other_tasks = os.path.join(base, "other")
    os.mkdir(other_tasks)
    other_sock = os.path.join(base, "o.sock")
    daemons.start(other_tasks, other_sock)
    other_token = daemons.ready(other_sock)["token"]
    assert other_token.partition(":")[0] != instance
    assert watch.query(sock, other_token, timeout=5.0) == (token, None)
    # The token of a null reply is valid: changes after it are reported.
    new, names = watch.query(sock, None, timeout=5.0) or ("", [])
    assert names is None
    write(os.path.join(tasks, "later.md"))
    assert changes(sock, new)[1] == ["later.md"]


def test_a_restarted_daemon_does_not_know_old_tokens(
        board: tuple[str, str], daemons: Daemons) -> None:
    tasks, sock = board
    first = daemons.start(tasks, sock)
    token = daemons.ready(sock)["token"]
    first.terminate()
    assert first.wait(DEADLINE) == 0
    daemons.start(tasks, sock)
    daemons.ready(sock)
    answer = watch.query(sock, token, timeout=5.0)
    assert answer is not None and answer[1] is None and answer[0] != token


def test_queue_overflow_makes_older_tokens_unknown(running: tuple[str, str, str]) -> None:
    tasks, sock, token = running
    with open("/proc/sys/fs/inotify/max_queued_events") as f:
        limit = int(f.read())
    if limit > 200_000:
        pytest.skip("max_queued_events too large to overflow quickly")
    pid = ask(sock, token)["pid"]
    a, b = os.path.join(tasks, "a.md"), os.path.join(tasks, "b.md")
    write(a)
    write(b)
    token, _ = changes(sock, token)
    os.kill(pid, signal.SIGSTOP)  # nobody drains: the kernel queue fills up
    try:
        for i in range(limit + 100):  # alternating, so that no two events coalesce
            os.utime(a if i % 2 else b, ns=(i, i))
    finally:
        os.kill(pid, signal.SIGCONT)
    answer = watch.query(sock, token, timeout=5.0)
    assert answer is not None and answer[1] is None
    new = answer[0]
    assert changes(sock, new) == (new, [])
    write(a)
    assert changes(sock, new)[1] == ["a.md"]


def test_a_bad_request_is_answered_and_the_daemon_lives_on(
        running: tuple[str, str, str]) -> None:
    _, sock, token = running
    for request in (b"not json\n", b"[1, 2]\n", b'{"x": 1}\n', b"\xff\xfe\n", b"\n"):
        assert "error" in raw(sock, request)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:  # connect, say nothing
        s.connect(sock)
    assert changes(sock, token) == (token, [])


# --------------------------------------------------------------------------- lifetime


def test_idle_timeout_exits_and_removes_the_socket(
        board: tuple[str, str], daemons: Daemons) -> None:
    tasks, sock = board
    proc = daemons.start(tasks, sock, idle=0.3)
    assert proc.wait(DEADLINE) == 0
    assert not os.path.exists(sock)
    assert watch.query(sock, None) is None


def test_deleting_the_watched_dir_ends_the_daemon(
        running: tuple[str, str, str], daemons: Daemons) -> None:
    tasks, sock, _ = running
    shutil.rmtree(tasks)
    assert daemons.procs[0].wait(DEADLINE) == 0
    assert not os.path.exists(sock)


def test_moving_the_watched_dir_ends_the_daemon(
        running: tuple[str, str, str], daemons: Daemons) -> None:
    tasks, sock, _ = running
    os.rename(tasks, tasks + ".moved")
    assert daemons.procs[0].wait(DEADLINE) == 0
    assert not os.path.exists(sock)


def test_a_replaced_parent_gets_null_and_ends_the_daemon(
        base: str, daemons: Daemons) -> None:
    """``.ledgit`` renamed and recreated: the watch still sits on the old tasks dir."""
    tasks = os.path.join(base, "board", "tasks")
    os.makedirs(tasks)
    sock = os.path.join(base, "w.sock")
    proc = daemons.start(tasks, sock)
    token = daemons.ready(sock)["token"]
    os.rename(os.path.join(base, "board"), os.path.join(base, "board.old"))
    os.makedirs(tasks)
    write(os.path.join(tasks, "new.md"))
    answer = watch.query(sock, token, timeout=5.0)
    assert answer is None or answer[1] is None
    assert proc.wait(DEADLINE) == 0


def test_removing_the_socket_ends_the_daemon(
        running: tuple[str, str, str], daemons: Daemons) -> None:
    _, sock, _ = running
    os.unlink(sock)
    assert daemons.procs[0].wait(DEADLINE) == 0


def test_replacing_the_socket_ends_the_daemon_and_keeps_the_new_one(
        running: tuple[str, str, str], daemons: Daemons) -> None:
    _, sock, _ = running
    other = sock + ".other"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(other)
        ino = os.stat(other).st_ino
        os.replace(other, sock)  # atomically: no IN_DELETE, only IN_MOVED_TO
        assert daemons.procs[0].wait(DEADLINE) == 0
    assert os.stat(sock).st_ino == ino  # not unlinked by the exiting daemon


def test_sigterm_exits_cleanly(running: tuple[str, str, str], daemons: Daemons) -> None:
    _, sock, _ = running
    proc = daemons.procs[0]
    proc.terminate()
    assert proc.wait(DEADLINE) == 0
    assert not os.path.exists(sock)
    assert proc.stderr is not None and proc.stderr.read() == b""


@pytest.mark.parametrize("round_", range(3))
def test_two_concurrent_starts_leave_one_daemon(
        board: tuple[str, str], daemons: Daemons, round_: int) -> None:
    tasks, sock = board
    first = daemons.start(tasks, sock)
    second = daemons.start(tasks, sock)
    pid = daemons.ready(sock)["pid"]
    assert pid in (first.pid, second.pid)
    loser = second if pid == first.pid else first
    assert loser.wait(DEADLINE) == 0
    assert loser.stderr is not None and loser.stderr.read() == b""
    winner = first if loser is second else second
    assert winner.poll() is None
    assert ask(sock, None)["pid"] == pid


def test_concurrent_spawns_leave_one_daemon(board: tuple[str, str], base: str,
                                            daemons: Daemons) -> None:
    tasks, sock = board
    for _ in range(3):
        watch.spawn(tasks, sock, idle=30)
    pid = daemons.ready(sock)["pid"]
    wait_for(lambda: [p for p in pids_with(base) if alive(p)] == [pid], "one daemon left")
    assert ask(sock, None)["pid"] == pid


def test_a_stale_socket_file_is_replaced(board: tuple[str, str], daemons: Daemons) -> None:
    tasks, sock = board
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(sock)  # closed without unlinking: a dead daemon's socket file
    assert watch.query(sock, None) is None  # refused
    daemons.start(tasks, sock)
    daemons.ready(sock)
    assert oct(os.stat(sock).st_mode & 0o777) == oct(0o600)


def test_a_non_socket_at_the_socket_path_is_left_alone(
        board: tuple[str, str], daemons: Daemons) -> None:
    tasks, sock = board
    write(sock, b"mine\n")
    proc = daemons.start(tasks, sock)
    assert proc.wait(DEADLINE) == 1
    with open(sock, "rb") as f:
        assert f.read() == b"mine\n"


def test_a_missing_tasks_dir_is_an_error(base: str, daemons: Daemons) -> None:
    sock = os.path.join(base, "w.sock")
    proc = daemons.start(os.path.join(base, "nope"), sock)
    assert proc.wait(DEADLINE) == 1
    assert not os.path.exists(sock)


def test_spawn_detaches(board: tuple[str, str], daemons: Daemons,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    tasks, sock = board
    read_fd, write_fd = os.pipe()
    os.set_inheritable(write_fd, True)  # a descriptor the daemon must not inherit
    try:
        monkeypatch.chdir(os.path.dirname(tasks))
        watch.spawn(os.path.basename(tasks), os.path.relpath(sock), idle=30)  # relative
        pid = daemons.ready(sock)["pid"]
    finally:
        os.close(write_fd)
        os.close(read_fd)
    assert pid != os.getpid()
    assert os.getsid(pid) == pid  # a session leader: no controlling terminal
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    fds = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    assert fds[0] == fds[1] == fds[2] == "/dev/null"
    others = sorted(target for fd, target in fds.items() if fd > 2)
    assert all(t.startswith(("socket:", "anon_inode:inotify")) for t in others), others
    assert oct(os.stat(sock).st_mode & 0o777) == oct(0o600)


# --------------------------------------------------------------------------- client


def test_query_without_a_daemon_is_none(base: str) -> None:
    assert watch.query(os.path.join(base, "missing.sock"), None) is None
    plain = os.path.join(base, "plain")
    write(plain)
    assert watch.query(plain, "x:1") is None
    assert watch.query(base, None) is None  # a directory
    assert watch.query("", None) is None
    assert watch.query("a\0b", None) is None


def _fake_server(sock: str, reply: bytes | None) -> threading.Thread:
    """Answer one connection with ``reply`` (None: accept, read, never answer, hold)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(sock)
    server.listen(1)

    def run() -> None:
        with server:
            conn, _ = server.accept()
            with conn:
                conn.recv(4096)
                if reply is None:
                    conn.settimeout(5.0)
                    with contextlib.suppress(OSError):
                        conn.recv(1)  # until the client gives up and closes
                else:
                    conn.sendall(reply)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("reply", [
    b"", b"garbage\n", b"\xff\n", b"[]\n", b'{"changed": []}\n', b'{"token": 1, "changed": []}\n',
    b'{"token": "a:1", "changed": "x"}\n', b'{"token": "a:1", "changed": [1]}\n',
    b'{"token": "a:1", "changed": [], \n', None,
])
def test_query_rejects_what_is_not_the_protocol(base: str, reply: bytes | None) -> None:
    sock = os.path.join(base, "fake.sock")
    thread = _fake_server(sock, reply)
    assert watch.query(sock, "a:0", timeout=0.5) is None
    thread.join(DEADLINE)


def test_query_accepts_the_protocol(base: str) -> None:
    sock = os.path.join(base, "fake.sock")
    thread = _fake_server(sock, b'{"token": "a:2", "changed": ["x\\udcff", "y"], "pid": 1}\n')
    assert watch.query(sock, "a:0") == ("a:2", ["x\udcff", "y"])
    thread.join(DEADLINE)


def test_socket_path_length_limit(base: str) -> None:
    assert watch.socket_path(base) == os.path.join(base, "watch.sock")
    rel = watch.socket_path(".")
    assert rel == os.path.join(os.getcwd(), "watch.sock")
    room = watch.SUN_PATH_MAX - len("/watch.sock")
    fits = "/" + "d" * (room - 1)
    assert watch.socket_path(fits) == fits + "/watch.sock"
    assert len((fits + "/watch.sock").encode()) == 107
    assert watch.socket_path(fits + "d") is None
    # bytes count, not characters
    assert watch.socket_path("/" + "é" * (room // 2)) is None


def test_available_and_the_off_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LEDGIT_WATCH", raising=False)
    assert watch.available()
    for value in ("1", "yes", ""):
        monkeypatch.setenv("LEDGIT_WATCH", value)
        assert watch.available()
    for value in ("0", "false", "OFF", " no "):
        monkeypatch.setenv("LEDGIT_WATCH", value)
        assert not watch.available()


def test_client_import_is_light() -> None:
    """The client path (import, then a query) imports none of the daemon's modules."""
    code = ("import sys, os; before = set(sys.modules); import ledgit.watch\n"
            "ledgit.watch.query('/nonexistent/watch.sock', None)\n"
            "ledgit.watch._decode(b'{\"token\": \"a:1\", \"changed\": []}')\n"
            "print(' '.join(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert "ledgit.watch" in out and "socket" in out
    assert not {"ctypes", "fcntl", "signal", "subprocess", "ledgit.readserver"} & set(out)


@pytest.mark.parametrize("text", [
    '{"token": "ab:1", "changed": ["a\\u00e9", "x\\udcff", "q\\"uote"], "pid": 3}',
    '{"token": "ab:1", "changed": null}', ' [1, -2, 2.5e3, null, true, false, "NaN"] \n', "{}",
])
def test_reply_decoder_is_json_loads(text: str) -> None:
    assert watch._decode(text.encode()) == json.loads(text)


@pytest.mark.parametrize("data", [b"{", b"{} x", b"", b"\xff", b'{"a": NaN'])
def test_reply_decoder_refuses_what_json_refuses(data: bytes) -> None:
    with pytest.raises(ValueError):
        watch._decode(data)


@pytest.mark.parametrize("token", [None, "", "0f3a:12", 'a"b', "a\nb", "é:1"])
def test_request_is_json(token: str | None) -> None:
    sent = json.loads(watch._request(token))
    plain = token is not None and token and all(c.isascii() and (c.isalnum() or c in ":-_")
                                                 for c in token)
    assert sent == {"since": token if plain else None}
