"""Reads run by the watcher daemon (ledgit.readserver, docs/watch.md "Read server").

Real daemons (``python -m ledgit.watch serve ... --serve-reads``), real CLI processes. Every
read answered by the daemon must be byte for byte what the same command prints when it runs
in its own process (``LEDGIT_WATCH=0``): stdout, stderr and exit code; the daemon's
``reads`` counter shows it really ran them. The daemon records the read's writes and the
client replays them, so the client's pipes and terminal are never the daemon's business.
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
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_watch
from test_watch import Daemons, alive, ask, pids_with, wait_for

from ledgit import readserver, watch
from ledgit.board import Board, init_board

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: Linux")
base = test_watch.base  # the fixtures: a short temp dir, daemons killed afterwards
daemons = test_watch.daemons
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture
def board(base: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Board]:
    """A board outside Git with a few tasks, one claimed, one done, one malformed."""
    for name in ("LEDGIT_ROOT", "LEDGIT_ACTOR", "LEDGIT_WATCH"):
        monkeypatch.delenv(name, raising=False)
    b = init_board(Path(base) / "b")
    a = b.create({"title": "Fix the dialer", "labels": ["net"]}, "## Goal\nDial out.\n", "ann")
    b.create({"title": "Write docs", "priority": 1}, "Docs for the DIALER too.\n", "bob")
    c = b.create({"title": "Ünïcode title"}, "body\n", "ann")
    assert a.id and c.id
    os.makedirs(Path(b.tasks_str) / "sub")
    Path(b.tasks_str, "T-broken.md").write_text("---\ntitle: [unclosed\n---\n",
                                                encoding="utf-8")
    yield b


def bulk(board: Board, count: int) -> None:
    """``count`` more valid task files with long titles (enough output to fill a pipe)."""
    for i in range(count):
        Path(board.task_file(f"T-bulk{i:05d}")).write_text(
            f"---\nid: T-bulk{i:05d}\ntitle: bulk {i} {'x' * 300}\nstatus: open\n"
            "created: 2026-01-01T00:00:00.000000Z\n"
            "last_modified: 2026-01-01T00:00:00.000000Z\n---\n", encoding="utf-8")


def env(watching: bool, **extra: str) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("LEDGIT_")}
    e.update(LEDGIT_WATCH="1" if watching else "0", LEDGIT_ACTOR="tester", **extra)
    return e


def ledgit(args: list[str], cwd: str, watching: bool,
           **extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "ledgit", *args], cwd=cwd,
                          env=env(watching, **extra), capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)


def probe(board: Board, code: str) -> subprocess.CompletedProcess[bytes]:
    """``python -c code`` in the board's root, watching on."""
    return subprocess.run([sys.executable, "-c", code], cwd=board.root_str, env=env(True),
                          capture_output=True, timeout=60, check=False)


def start(daemons: Daemons, board: Board, **env_extra: str) -> str:
    sock = watch.socket_path(board.private_str)
    assert sock is not None
    os.makedirs(board.private_str, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledgit.watch", "serve", board.tasks_str, sock, "--idle", "60",
         "--serve-reads"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True, env={**os.environ, **env_extra})
    daemons.procs.append(proc)
    daemons.ready(sock)
    return sock


def reads(sock: str) -> int:
    return int(ask(sock, None)["reads"])


def reads_or_none(sock: str) -> int | None:
    try:
        return reads(sock)
    except OSError:
        return None


def ids(board: Board) -> list[str]:
    return sorted(name[:-3] for name in os.listdir(board.tasks_str)
                  if name.endswith(".md") and name != "T-broken.md")


def served(lines: list[list[str]]) -> int:
    """How many of these command lines the daemon runs: those ledgit.argspec reads (help
    and usage errors are click's, in the client)."""
    from ledgit.argspec import find, parse
    from ledgit.commands import FAST

    return sum(1 for args in lines
               if (found := find(FAST, args)) is not None and parse(*found) is not None)


def command_lines(board: Board) -> list[list[str]]:
    first = ids(board)[0]
    return [
        ["list"], ["list", "--json"], ["list", "--limit", "1"], ["list", "--status", "open"],
        ["list", "--label", "net", "--sort", "asc"], ["list", "--all", "--json"],
        ["search", "dialer"], ["search", "DIALER", "--json"], ["search", "nothing-here"],
        ["search", "dialer", "--field", "title"], ["search", "ünï"],
        ["get", first], ["get", first, "--json"], ["get", first[:6]], ["get", "T-nope"],
        ["get", "T-broken"], ["ready"], ["ready", "--json"],
        ["list", "--limit", "0"], ["list", "--bogus"], ["search"], ["get", "--help"],
    ]


def test_reads_by_the_daemon_equal_reads_in_their_own_process(board: Board,
                                                              daemons: Daemons) -> None:
    sock = start(daemons, board)
    lines = command_lines(board)
    for cwd in (board.root_str, os.path.join(board.tasks_str, "sub")):
        before = reads(sock)
        for args in lines:
            local = ledgit(args, cwd, watching=False)
            remote = ledgit(args, cwd, watching=True)
            assert (remote.returncode, remote.stdout, remote.stderr) == \
                (local.returncode, local.stdout, local.stderr), args
        assert reads(sock) - before == served(lines)  # the daemon ran every one it may run
    codes = {ledgit(a, board.root_str, watching=True).returncode for a in lines}
    assert {0, 2, 4} <= codes  # found, usage errors, not found: all carried over


def test_a_change_right_before_a_read_is_seen(board: Board, daemons: Daemons) -> None:
    sock = start(daemons, board)
    tid = next(t for t in ids(board) if "Fix the dialer" in Path(board.task_file(t)).read_text(
        encoding="utf-8"))
    assert ledgit(["list"], board.root_str, watching=True).returncode == 0
    path = Path(board.task_file(tid))
    path.write_text(path.read_text(encoding="utf-8").replace("Fix the dialer", "Fix the modem"),
                    encoding="utf-8")
    out = ledgit(["search", "modem"], board.root_str, watching=True)
    assert tid.encode() in out.stdout and out.returncode == 0
    assert ledgit(["get", tid], board.root_str, watching=True).stdout.count(b"Fix the modem") == 1
    assert reads(sock) == 3


def test_the_clients_environment_directory_and_umask_are_used(board: Board, base: str,
                                                             daemons: Daemons) -> None:
    sock = start(daemons, board, LEDGIT_ROOT="/nonexistent")  # the daemon's own env differs
    elsewhere = Path(base) / "elsewhere"
    elsewhere.mkdir()
    # The client's LEDGIT_ROOT pins the board although its directory holds none.
    pinned = ledgit(["list", "--json"], str(elsewhere), watching=True, LEDGIT_ROOT=board.root_str)
    assert pinned.returncode == 0 and b"Fix the dialer" in pinned.stdout
    # Without it the client's directory decides: no board there (exit 4, not the daemon's).
    none = ledgit(["list"], str(elsewhere), watching=True)
    assert none.returncode == 4 and b"no ledgit board in" in none.stderr
    assert reads(sock) == 1  # no board found by the client: it never asked the daemon
    # The index is re-created by a read the daemon runs, with the client's umask.
    for suffix in ("", "-wal", "-shm"):
        Path(board.private_str, "index.sqlite3" + suffix).unlink(missing_ok=True)
    run = subprocess.run(
        ["sh", "-c", f'umask 027 && exec "{sys.executable}" -m ledgit list'],
        cwd=board.root_str, env=env(True), capture_output=True, timeout=60, check=False)
    assert run.returncode == 0 and b"Fix the dialer" in run.stdout
    assert reads(sock) == 2
    mode = os.stat(os.path.join(board.private_str, "index.sqlite3")).st_mode & 0o777
    assert mode == 0o640  # 0666 & ~027, not the daemon's umask 0177


def test_a_reader_that_goes_away_early_ends_the_read_quietly(board: Board, base: str,
                                                            daemons: Daemons) -> None:
    bulk(board, 300)
    sock = start(daemons, board)
    run = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -m ledgit list --json | head -c 10'],
        cwd=board.root_str, env=env(True), capture_output=True, timeout=60, check=False)
    local = ledgit(["list", "--json"], board.root_str, watching=False)
    assert run.stdout == local.stdout[:10] and run.stderr == local.stderr
    assert reads(sock) == 1
    assert alive(int(ask(sock, None)["pid"]))  # the daemon lives on


def test_a_closed_stdout_or_a_stopped_daemon_means_a_local_read(board: Board,
                                                                daemons: Daemons) -> None:
    sock = start(daemons, board)
    expected = ledgit(["list"], board.root_str, watching=False)
    # stdin closed: the daemon does not need it.
    closed_in = subprocess.run([sys.executable, "-m", "ledgit", "list"], cwd=board.root_str,
                               env=env(True), capture_output=True, timeout=60, check=False,
                               preexec_fn=lambda: os.close(0))  # noqa: PLW1509
    assert (closed_in.returncode, closed_in.stdout, closed_in.stderr) == \
        (0, expected.stdout, expected.stderr)
    assert reads(sock) == 1
    # stdout closed at startup (sys.stdout is None): read in-process, as without a daemon.
    script = f'"{sys.executable}" -m ledgit list >&-; echo "rc=$?"'
    runs = [subprocess.run(["sh", "-c", script], cwd=board.root_str, env=env(w),
                           capture_output=True, timeout=60, check=False) for w in (True, False)]
    assert runs[0].stdout == runs[1].stdout and runs[0].stderr == runs[1].stderr
    assert reads(sock) == 1
    # A stopped daemon: the client waits CONNECT_TIMEOUT for its "+", then reads itself;
    # the daemon, resumed, finds the client gone and runs nothing.
    pid = int(ask(sock, None)["pid"])
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        stalled = ledgit(["list"], board.root_str, watching=True)
        assert time.monotonic() - started >= readserver.CONNECT_TIMEOUT
    finally:
        os.kill(pid, signal.SIGCONT)
    assert (stalled.returncode, stalled.stdout, stalled.stderr) == \
        (0, expected.stdout, expected.stderr)
    wait_for(lambda: ask(sock, None), "the daemon to answer again")
    assert reads(sock) == 1


def test_a_slow_reader_of_one_read_does_not_hold_up_the_others(board: Board, base: str,
                                                              daemons: Daemons) -> None:
    bulk(board, 400)
    sock = start(daemons, board)
    slow = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -m ledgit list --json | '
                                         '(sleep 3; wc -c)'],
                            cwd=board.root_str, env=env(True), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        wait_for(lambda: reads(sock) == 1, "the slow reader's read to be run")
        quick = ledgit(["list", "--limit", "1"], board.root_str, watching=True)
        assert quick.returncode == 0 and quick.stdout.count(b"\n") == 1
        assert reads(sock) == 2  # the daemon ran it while the first reader still sleeps
        assert slow.poll() is None
    finally:
        out, _err = slow.communicate(timeout=60)
    local = ledgit(["list", "--json"], board.root_str, watching=False)
    assert int(out.split()[0]) == len(local.stdout)


def test_descriptors_do_not_pile_up_in_the_daemon(board: Board, daemons: Daemons) -> None:
    bulk(board, 300)
    sock = start(daemons, board)
    pid = int(ask(sock, None)["pid"])
    ledgit(["list"], board.root_str, watching=True)
    before = len(os.listdir(f"/proc/{pid}/fd"))
    for _ in range(20):
        subprocess.run(["sh", "-c", f'"{sys.executable}" -m ledgit list | head -c 1'],
                       cwd=board.root_str, env=env(True), capture_output=True, timeout=60,
                       check=False)
        ledgit(["search", "bulk", "--json"], board.root_str, watching=True)
    assert reads(sock) == 41
    assert len(os.listdir(f"/proc/{pid}/fd")) <= before + 2


def test_another_spelling_of_the_board_path_is_served_by_the_same_daemon(
        board: Board, base: str, daemons: Daemons) -> None:
    sock = start(daemons, board)
    link = Path(base) / "link"
    link.symlink_to(board.root_str)
    local = ledgit(["list"], board.root_str, watching=False, LEDGIT_ROOT=str(link))
    for _ in range(3):
        remote = ledgit(["list"], board.root_str, watching=True, LEDGIT_ROOT=str(link))
        assert (remote.returncode, remote.stdout, remote.stderr) == \
            (local.returncode, local.stdout, local.stderr)
    assert reads(sock) == 3
    assert pids_with(base) == [int(ask(sock, None)["pid"])]  # no second daemon was started
    # The reads' index refresh asked the daemon's own state (not its socket, which it could
    # not answer while running the read): the index holds a token of this daemon.
    import sqlite3

    with contextlib.closing(sqlite3.connect(os.path.join(board.private_str,
                                                         "index.sqlite3"))) as db:
        token = db.execute("SELECT value FROM meta WHERE key = 'watch'").fetchone()[0]
    assert isinstance(token, str)
    assert token.split(":")[0] == str(ask(sock, None)["token"]).split(":")[0]


def test_a_directory_that_is_not_the_clients_is_refused(board: Board, daemons: Daemons) -> None:
    """The daemon checks the client's directory and board root by device and inode (another
    mount namespace can show another directory at the same path): a mismatch is refused."""
    sock = start(daemons, board)
    request = json.loads(probe(board, "import sys; from ledgit import readserver; "
                                      "sys.stdout.write(readserver._request(['list'], "
                                      f"{board.root_str!r}).decode())").stdout)
    for key in ("cwd_id", "root_id", "tasks_id"):
        wrong = json.loads(json.dumps(request))
        wrong[key][1] += 1
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(sock)
            conn.sendall(json.dumps(wrong).encode() + b"\n")
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = conn.recv(4096)
                assert chunk
                reply += chunk
        assert reply == b'+{"refused": "another directory"}\n', key
    assert reads(sock) == 0


def test_odd_environments_are_served_as_they_are_read_in_process(board: Board,
                                                                 daemons: Daemons) -> None:
    sock = start(daemons, board)
    for pre in ("env '=odd' ", "env 'A B=1' TZ=Asia/Kolkata ", "PYTHONIOENCODING=ascii "):
        runs = [subprocess.run(["sh", "-c", f'{pre}"{sys.executable}" -m ledgit {args}'],
                               cwd=board.root_str, env=env(w), capture_output=True,
                               timeout=60, check=False)
                for args in ("list", "get " + ids(board)[0]) for w in (True, False)]
        for remote, local in zip(runs[::2], runs[1::2], strict=True):
            assert (remote.returncode, remote.stdout, remote.stderr) == \
                (local.returncode, local.stdout, local.stderr), pre
    assert reads(sock) == 6


def test_another_ledgit_is_refused_and_changed_code_ends_the_daemon(
        board: Board, base: str, daemons: Daemons) -> None:
    copy = Path(base) / "copy"
    shutil.copytree(Path(SRC) / "ledgit", copy / "ledgit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    sock = start(daemons, board, PYTHONPATH=str(copy))  # a daemon of the copied ledgit
    pid = int(ask(sock, None)["pid"])
    assert ledgit(["list"], board.root_str, watching=True).returncode == 0
    assert reads(sock) == 0  # this test's ledgit is another package: refused, run here
    served = ledgit(["list"], board.root_str, watching=True, PYTHONPATH=str(copy))
    assert served.returncode == 0 and b"Fix the dialer" in served.stdout
    assert reads(sock) == 1
    module = copy / "ledgit" / "readout.py"
    module.write_text(module.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    again = ledgit(["list"], board.root_str, watching=True, PYTHONPATH=str(copy))
    assert (again.returncode, again.stdout) == (0, served.stdout)  # run by the client itself
    wait_for(lambda: not alive(pid), "the daemon of the old code to end")


def test_a_changed_third_party_module_ends_the_daemon(board: Board, base: str,
                                                      daemons: Daemons) -> None:
    import yaml

    copy = Path(base) / "deps"
    shutil.copytree(Path(yaml.__file__).parent, copy / "yaml",
                    ignore=shutil.ignore_patterns("__pycache__"))
    sock = start(daemons, board, PYTHONPATH=str(copy))  # a daemon that loaded this PyYAML
    pid = int(ask(sock, None)["pid"])
    assert ledgit(["list"], board.root_str, watching=True, PYTHONPATH=str(copy)).returncode == 0
    assert reads(sock) == 1
    module = copy / "yaml" / "__init__.py"
    module.write_text(module.read_text(encoding="utf-8") + "\n# upgraded\n", encoding="utf-8")
    again = ledgit(["list"], board.root_str, watching=True, PYTHONPATH=str(copy))
    assert again.returncode == 0 and b"Fix the dialer" in again.stdout
    wait_for(lambda: not alive(pid), "the daemon of the old PyYAML to end")


def test_readers_of_other_settings_replace_the_daemon(board: Board, daemons: Daemons) -> None:
    """A daemon started by a reader with PYTHONWARNINGS set refuses ordinary readers; after
    REFUSALS_BEFORE_EXIT of them it ends (their next read starts one of theirs). And spawn
    does not pass such per-invocation settings on."""
    sock = start(daemons, board, PYTHONWARNINGS="ignore")
    pid = int(ask(sock, None)["pid"])
    for _ in range(readserver.REFUSALS_BEFORE_EXIT):
        assert ledgit(["list"], board.root_str, watching=True).returncode == 0
    wait_for(lambda: not alive(pid), "the daemon of other settings to end")
    assert reads_or_none(sock) is None
    # A reader with PYTHONWARNINGS set starts a daemon that serves ordinary readers (the
    # fixture kills it: its command line holds the test's directory).
    spawned = subprocess.run(
        [sys.executable, "-c", "from ledgit import watch; "
                               f"watch.spawn({board.tasks_str!r}, {sock!r})"],
        cwd=board.root_str, env=env(True, PYTHONWARNINGS="ignore"), capture_output=True,
        timeout=60, check=False)
    wait_for(lambda: reads_or_none(sock) is not None, "the spawned daemon")
    assert ledgit(["list"], board.root_str, watching=True).returncode == 0
    assert reads(sock) == 1
    assert spawned.returncode == 0


def test_reads_list_matches_the_entry_point() -> None:
    import ledgit.__main__ as entry

    assert frozenset(entry._REMOTE_READS) == readserver.READS


def test_a_remote_read_keeps_sqlite_and_the_board_out_of_the_client(board: Board,
                                                                    daemons: Daemons) -> None:
    sock = start(daemons, board)
    out = probe(board, "import sys; from ledgit.__main__ import run; code = run(['list']); "
                       "print(code, '_sqlite3' in sys.modules, 'ledgit.board' in sys.modules, "
                       "'ledgit.index' in sys.modules, file=sys.stderr)")
    assert out.stderr.splitlines()[-1].split() == [b"0", b"False", b"False", b"False"]
    assert b"Fix the dialer" in out.stdout
    assert reads(sock) == 1


def test_a_minimal_stream_object_of_a_caller_is_enough(board: Board, daemons: Daemons) -> None:
    sock = start(daemons, board)
    out = probe(board, "import sys\nclass Tee:\n    def __init__(self): self.text = []\n"
                       "    def write(self, t): self.text.append(t); return len(t)\n"
                       "    def flush(self): pass\n"
                       "tee = Tee(); sys.stdout = tee\nfrom ledgit.__main__ import run\n"
                       "code = run(['list'])\nsys.stdout = sys.__stdout__\n"
                       "print(code, ''.join(tee.text).count('Fix the dialer'))")
    assert out.stdout.split() == [b"0", b"1"]
    assert reads(sock) == 1


def test_output_captured_inside_the_process_stays_there(board: Board, daemons: Daemons) -> None:
    """A caller that runs the CLI in-process with sys.stdout replaced gets the output in its
    stream, and in order with what it printed itself (the client replays the read's writes
    through its own sys.stdout)."""
    sock = start(daemons, board)
    out = probe(board, "import io, sys; from ledgit.__main__ import run; buf = io.StringIO(); "
                       "sys.stdout = buf; code = run(['list']); sys.stdout = sys.__stdout__; "
                       "print(code, repr(buf.getvalue().count('Fix the dialer')))")
    assert out.stdout.split() == [b"0", b"1"]
    ordered = probe(board, "import sys; print('HEADER'); from ledgit.__main__ import run; "
                           "code = run(['list']); print('FOOTER')")
    lines = ordered.stdout.splitlines()
    assert lines[0] == b"HEADER" and lines[-1] == b"FOOTER" and len(lines) == 5
    assert reads(sock) == 2


def test_starting_a_daemon_prints_nothing_even_with_warnings_on(board: Board,
                                                                daemons: Daemons) -> None:
    """spawn leaves no Popen behind to warn about a running child at exit (a read's stderr
    under -W error or -X dev would otherwise differ from the in-process read's)."""
    sock = watch.socket_path(board.private_str)
    assert sock is not None
    os.makedirs(board.private_str, exist_ok=True)
    out = subprocess.run([sys.executable, "-W", "error", "-X", "dev", "-c",
                          "from ledgit import watch; "
                          f"watch.spawn({board.tasks_str!r}, {sock!r})"],
                         cwd=board.root_str, env=env(True), capture_output=True, timeout=60,
                         check=False)
    assert (out.returncode, out.stderr) == (0, b"")
    wait_for(lambda: reads_or_none(sock) is not None, "the spawned daemon")


def test_readers_a_daemon_could_never_serve_do_not_replace_it(board: Board,
                                                              daemons: Daemons) -> None:
    """python -O readers are refused (another interpreter setting) and read in-process; a
    daemon they started could not serve them either, so they do not end this one."""
    sock = start(daemons, board)
    pid = int(ask(sock, None)["pid"])
    local = ledgit(["list"], board.root_str, watching=False)
    for _ in range(readserver.REFUSALS_BEFORE_EXIT + 2):
        flagged = subprocess.run([sys.executable, "-O", "-m", "ledgit", "list"],
                                 cwd=board.root_str, env=env(True), capture_output=True,
                                 timeout=60, check=False)
        assert (flagged.returncode, flagged.stdout, flagged.stderr) == \
            (local.returncode, local.stdout, local.stderr)
    assert int(ask(sock, None)["pid"]) == pid and reads(sock) == 0
    assert ledgit(["list"], board.root_str, watching=True).stdout == local.stdout
    assert reads(sock) == 1
