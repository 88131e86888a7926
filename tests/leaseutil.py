"""Clones of one bare remote holding a ledgit board, for the remote-lease tests (issue 24):
``ledgit`` run as a subprocess in each clone, as agents run it; ``git daemon`` on 127.0.0.1.

No ``assert`` here (PYTEST_DONT_REWRITE, as tests/gitutil.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from gitutil import git

from ledgit.storage.board import Board
from ledgit.storage.boardinit import init_board
from ledgit.storage.writepath import create_task

# The source tree under test, for ledgit subprocesses (the venv may hold another one).
SRC = str(Path(__file__).resolve().parents[1] / "src")


def ledgit_env(**extra: str) -> dict[str, str]:
    """The environment of a ledgit subprocess: this one, this source tree first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGIT_")}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["LEDGIT_WATCH"] = "0"
    env.update(extra)
    return env


def lg(cwd: Path, *args: str, check: int | None = 0) -> subprocess.CompletedProcess[str]:
    """``ledgit ARGS`` in ``cwd`` as a subprocess; ``check``: the exit code it must give
    (None: any). Raises AssertionError with its output otherwise."""
    proc = subprocess.run([sys.executable, "-m", "ledgit", *args], cwd=cwd, env=ledgit_env(),
                          capture_output=True, text=True, timeout=120)
    if check is not None and proc.returncode != check:
        raise AssertionError(f"ledgit {' '.join(args)} in {cwd}: exit {proc.returncode}, "
                             f"wanted {check}\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


def make_remote(base: Path, *, tasks: int = 1, ttl: str = "30m", config: str = ""
                ) -> tuple[Path, Path, list[str]]:
    """A bare remote ``base/remote.git`` with a board of ``tasks`` open tasks (claim TTL
    ``ttl``, ``config`` lines added to config.yaml) pushed on main from a seed clone.
    Returns (remote, seed clone, task ids)."""
    remote = base / "remote.git"
    git("init", "-q", "--bare", str(remote), cwd=base)
    seed = base / "seed"
    git("clone", "-q", str(remote), str(seed), cwd=base)
    init_board(seed)
    cfg = seed / ".ledgit" / "config.yaml"
    cfg.write_text(cfg.read_text().replace("claim_ttl: 30m", f"claim_ttl: {ttl}") + config)
    board = Board(seed)
    ids = [create_task(board, {"title": f"task {n}", "status": "open"}, "", "seed").id
           for n in range(tasks)]
    git("add", "-A", cwd=seed)
    git("commit", "-q", "-m", "board", cwd=seed)
    git("push", "-q", "-u", "origin", "main", cwd=seed)
    return remote, seed, ids


def clone(remote: str | Path, where: Path) -> Path:
    """A clone of ``remote`` (a path or URL) at ``where``, tracking main."""
    git("clone", "-q", str(remote), str(where), cwd=where.parent)
    return where


def lease_refs(remote: Path) -> dict[str, str]:
    """task -> commit of every lease ref in the bare ``remote``."""
    out = git("for-each-ref", "--format=%(refname) %(objectname)", "refs/ledgit/leases/",
              cwd=remote)
    return {line.split()[0].rsplit("/", 1)[1]: line.split()[1] for line in out.splitlines()}


def lease_record(remote: Path, task: str) -> str:
    """The lease commit's message of ``task`` in the bare ``remote``."""
    return git("log", "-1", "--format=%B", f"refs/ledgit/leases/{task}", cwd=remote)


def free_port() -> int:
    """A TCP port on 127.0.0.1 free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def git_daemon(base: Path) -> Iterator[str]:
    """``git daemon`` serving the repositories under ``base`` on 127.0.0.1 with push
    enabled; yields its URL prefix ``git://127.0.0.1:PORT/``. Killed on exit, whatever
    happened: ``git daemon`` runs ``git-daemon`` as a child, so the whole process group is
    killed (killing ``git`` alone left ``git-daemon`` listening after the test)."""
    port = free_port()
    proc = subprocess.Popen(["git", "daemon", "--reuseaddr", "--listen=127.0.0.1",
                             f"--port={port}", f"--base-path={base}", "--export-all",
                             "--enable=receive-pack", "--informative-errors", str(base)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("git daemon did not start") from None
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/"
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        _port_closed(port)


def _port_closed(port: int) -> None:
    """Raise when something still listens on ``port`` 5 s after the daemon was killed:
    a test never leaves a server behind."""
    deadline = time.monotonic() + 5
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
        except OSError:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"git daemon still listening on 127.0.0.1:{port}")
        time.sleep(0.05)
