"""Reads run by the watcher daemon (ledgit.readserver, docs/watch.md "Read server").

Real daemons (``python -m ledgit.watch serve ... --serve-reads``), real CLI processes. Every
read answered by the daemon must be byte for byte what the same command prints when it runs
in its own process (``LEDGIT_WATCH=0``): stdout, stderr and exit code; the daemon's
``reads`` counter shows it really ran them.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_watch
from test_watch import Daemons, alive, ask, wait_for

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


def ids(board: Board) -> list[str]:
    return sorted(name[:-3] for name in os.listdir(board.tasks_str)
                  if name.endswith(".md") and name != "T-broken.md")


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
        assert reads(sock) - before == len(lines)  # the daemon ran every one of them
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
    for i in range(300):  # enough output to fill a pipe
        Path(board.task_file(f"T-bulk{i:05d}")).write_text(
            f"---\nid: T-bulk{i:05d}\ntitle: bulk {i} {'x' * 300}\nstatus: open\n"
            "created: 2026-01-01T00:00:00.000000Z\n"
            "last_modified: 2026-01-01T00:00:00.000000Z\n---\n", encoding="utf-8")
    sock = start(daemons, board)
    run = subprocess.run(
        ["sh", "-c", f'"{sys.executable}" -m ledgit list --json | head -c 10'],
        cwd=board.root_str, env=env(True), capture_output=True, timeout=60, check=False)
    local = ledgit(["list", "--json"], board.root_str, watching=False)
    assert run.stdout == local.stdout[:10] and run.stderr == local.stderr
    assert reads(sock) == 1
    assert alive(int(ask(sock, None)["pid"]))  # the daemon lives on


def test_a_closed_descriptor_or_a_busy_daemon_means_a_local_read(board: Board,
                                                                 daemons: Daemons) -> None:
    sock = start(daemons, board)
    expected = ledgit(["list"], board.root_str, watching=False)
    # stdin closed: it cannot be passed, the client reads itself.
    closed = subprocess.run([sys.executable, "-m", "ledgit", "list"], cwd=board.root_str,
                            env=env(True), capture_output=True, timeout=60, check=False,
                            preexec_fn=lambda: os.close(0))  # noqa: PLW1509
    assert (closed.returncode, closed.stdout) == (0, expected.stdout)
    assert reads(sock) == 0
    # A stopped daemon: the client waits CONNECT_TIMEOUT for the offer, then reads itself;
    # the daemon, resumed, finds the client gone and runs nothing (the output is not doubled).
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
    assert reads(sock) == 0


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


def test_output_captured_inside_the_process_stays_there(board: Board, daemons: Daemons) -> None:
    """A caller that runs the CLI in-process with sys.stdout replaced gets the output in its
    stream: such a read is not sent to the daemon (which would write to descriptor 1)."""
    sock = start(daemons, board)
    out = probe(board, "import io, sys; from ledgit.__main__ import run; buf = io.StringIO(); "
                       "sys.stdout = buf; code = run(['list']); sys.stdout = sys.__stdout__; "
                       "print(code, repr(buf.getvalue().count('Fix the dialer')))")
    assert out.stdout.split() == [b"0", b"1"]
    assert reads(sock) == 0
