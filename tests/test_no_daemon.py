"""No CLI command leaves a process behind (DESIGN §1): after a sequence of reads on a
5,000-task board -- where ledgit used to start a watcher daemon -- no process of ours whose
command line names ledgit is running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ledgit.core.record import make_record
from ledgit.core.render import render_record
from ledgit.storage.boardinit import init_board
from ledgit.storage.writepath import create_task

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")


def ours(marker: str) -> list[tuple[int, str]]:
    """(pid, command line) of every process whose environment holds ``marker`` and whose
    command line contains "ledgit", other than this one."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                environ = fh.read()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone, or another user's
            continue
        if marker.encode() in environ and "ledgit" in cmdline:
            found.append((int(entry), cmdline))
    return found


def test_reads_on_a_big_board_leave_no_process(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("LEDGIT_"):
            monkeypatch.delenv(name)  # LEDGIT_WATCH unset: as for a user
    board = init_board(tmp_path / "big")
    made = create_task(board, {"title": "made through the write path"}, "", "ann")
    for i in range(5_000):
        tid = f"T-{i:010d}"
        rec = make_record({"id": tid, "title": f"task {i} daemon" if i % 20 == 0 else
                           f"task {i}", "status": "open",
                           "created": "2026-01-01T00:00:00.000000Z",
                           "last_modified": "2026-01-01T00:00:00.000000Z"}, "")
        with open(board.task_file(tid), "w", encoding="utf-8") as fh:
            fh.write(render_record(rec))
    marker = f"LEDGIT_TEST_MARKER={uuid.uuid4().hex}"
    env = {**os.environ, "LEDGIT_TEST_MARKER": marker.partition("=")[2]}

    # The check can fail: a process of ours naming ledgit is found.
    probe = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)",
                              "ledgit-probe"], env=env)
    try:
        deadline = time.monotonic() + 10
        while not ours(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [pid for pid, _ in ours(marker)] == [probe.pid]
    finally:
        probe.kill()
        probe.wait()

    reads = [["list"], ["list"], ["list", "--limit", "20"], ["search", "daemon", "--limit",
             "20"], ["get", made.id], ["get", "T-0000000007"], ["ready", "--limit", "5"],
             ["handoff", made.id], ["history", made.id], ["item", "list", made.id],
             ["cache", "status"], ["list", "--json"], ["search", "task 49"],
             ["verify", made.id]]
    for args in reads:
        proc = subprocess.run([sys.executable, "-m", "ledgit", *args], cwd=board.root,
                              env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (args, proc.stderr)
    time.sleep(1.0)  # a process started in the background would be running by now
    assert ours(marker) == []
    assert not os.path.exists(os.path.join(board.private_str, "watch.sock"))
